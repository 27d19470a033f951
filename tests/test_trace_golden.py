"""Every trace byte for byte as main's code made it before the engine's speed-ups of issue #33 (the
shingle bit sweep, the cold build's trims): the sample scenarios and the corpora under the settings whose
paths changed, in the app's rebuilds and the CLI's one-shot builds (tests/golden_traces.py says how the
golden was made)."""

import json
import os

import pytest

from conftest import ROOT
import golden_traces

GOLDEN = os.path.join(ROOT, "tests", "fixtures", "golden", "traces.json")


@pytest.mark.slow
def test_traces_are_byte_identical_to_the_golden_made_with_mains_code():
    with open(GOLDEN) as fh:
        golden = json.load(fh)
    got = dict(golden_traces.traces())
    assert sorted(got) == sorted(golden)
    assert [name for name in got if got[name] != golden[name]] == []
