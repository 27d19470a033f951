"""The replay's speed-ups (#33) change no output: the rows and the report of six replays (ctxcore traces and a
Phoenix span export, with and without findings) are byte for byte what the code before them wrote
(``tests/fixtures/replay_golden/main.json``, made by ``tests/replay_golden.py`` from main's code)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from ctxcore.replay import replay

from conftest import ROOT

sys.path.insert(0, os.path.join(ROOT, "bench"))
sys.path.insert(0, os.path.join(ROOT, "tests"))
import replay_golden  # noqa: E402
import replaylog  # noqa: E402

GOLDEN = json.loads((Path(ROOT) / "tests" / "fixtures" / "replay_golden" / "main.json").read_text())


@pytest.fixture(scope="module")
def now(tmp_path_factory):
    folder = str(tmp_path_factory.mktemp("golden"))
    return replay_golden.outputs(replay, replay_golden.make_logs(folder, replaylog), folder,
                                 os.path.join(folder, "out"))


def test_the_generated_logs_are_the_golden_ones(now):
    assert now["logs"] == GOLDEN["logs"]


@pytest.mark.parametrize("case", sorted(replay_golden.CASES))
def test_every_row_and_the_report_are_what_main_wrote(now, case):
    assert now[case]["report"] == GOLDEN[case]["report"]
    changed = [i for i, (a, b) in enumerate(zip(now[case]["rows"], GOLDEN[case]["rows"])) if a != b]
    assert not changed and len(now[case]["rows"]) == len(GOLDEN[case]["rows"]), f"rows differ: {changed}"
