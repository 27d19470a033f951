"""Reading a saved trace fast (issue #33): when a rebuild writes the stored JSON again, the rebuild is the stored
trace; the plain path (the schema walk, the records, the rebuild and its comparison) must give the same Loaded,
and every other trace goes the plain way."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from ctxcore import InputError, load
from ctxcore.io.loaders import _as_stored, _saved_trace
from ctxcore.io.tracefile import trace_from_dict

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = sorted((ROOT / "sample_data").glob("*.json"))
OLD_LOG = (ROOT / "sample_data/replay_log.jsonl").read_text(encoding="utf-8").splitlines()[:6]


def _fresh_log(runs: int = 12) -> list[str]:
    """A log as bench/replaylog.py writes it with this version (what a replay benchmark reads)."""
    import subprocess
    import sys
    import tempfile
    out = Path(tempfile.mkdtemp()) / "log.jsonl"
    subprocess.run([sys.executable, str(ROOT / "bench/replaylog.py"), "--runs", str(runs), str(out)], check=True,
                   capture_output=True)
    return out.read_text(encoding="utf-8").splitlines()


def _stored(path: Path) -> dict:
    loaded = load(str(path))
    return json.loads(loaded.build().to_json())


def _plain(data: dict):
    return _saved_trace(trace_from_dict(data, source="t"), "t")


CASES = [pytest.param(_stored(p), id=p.stem) for p in SAMPLES] + \
        [pytest.param(json.loads(line), id=f"log-{i}") for i, line in enumerate(_fresh_log())] + \
        [pytest.param(_stored(ROOT / "tests/fixtures/traces/phoenix_nested.json"), id="imported-with-logged")]


@pytest.mark.parametrize("data", CASES)
def test_the_fast_read_is_the_plain_read(data):
    fast = _as_stored(copy.deepcopy(data), "t")
    assert fast is not None  # every trace ctxcore wrote takes the fast path
    assert fast == _plain(data)


@pytest.mark.parametrize("line", OLD_LOG, ids=range(len(OLD_LOG)))
def test_a_trace_an_older_version_wrote_goes_the_plain_way(line):
    # the committed sample log predates settings and budget fields a rebuild now writes: not the same JSON
    data = json.loads(line)
    assert _as_stored(copy.deepcopy(data), "t") is None
    assert _plain(data).trace.decisions  # and it still reads, the plain way


def _tamper_fate(d):
    d["decisions"][-1]["fate"] = "kept" if d["decisions"][-1]["fate"] != "kept" else "over_budget"


def _tamper_prompt(d):
    d["prompt"]["text"] += " (edited)"


def _tamper_logged(d):
    d["logged"] = {"format": "ctxcore", "trace_id": 7}


def _tamper_config(d):
    d["config"]["budget"] = "lots"


def _tamper_history(d):
    d["inputs"]["history"] = "not a list of turns"


def _tamper_turn(d):
    d["inputs"]["history"] = ["a turn that is no object"]


@pytest.mark.parametrize("tamper", [_tamper_fate, _tamper_prompt, _tamper_logged, _tamper_config, _tamper_history,
                                    _tamper_turn])
def test_a_trace_a_rebuild_does_not_write_again_goes_the_plain_way(tamper):
    data = _stored(SAMPLES[0])
    tamper(data)
    assert _as_stored(copy.deepcopy(data), "t") is None
    try:  # the plain path then says what differs (a replay_differs warning) or what is wrong (one line)
        plain = _plain(data)
    except InputError as err:
        assert str(err).startswith("t, field '")
        assert tamper not in (_tamper_history, _tamper_turn) or "field 'inputs.history" in str(err)
    else:
        assert [w.kind for w in plain.warnings] == ["replay_differs"]
