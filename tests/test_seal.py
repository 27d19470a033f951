"""A trace's seal (ctxcore.seal): what it covers, what breaks it, and the replay that trusts it.

A sealed trace's stored fates are believed by the replay instead of being decided again (#33), so the seal
must fail on any change a rebuild would catch: a fate, a reason, a text, a score, a setting, an engine whose
code or libraries differ; and the replay of a sealed log must say exactly what the replay of the same log
unsealed says."""

from __future__ import annotations

import dataclasses
import importlib.metadata
import json
import os
import sys
from pathlib import Path

import pytest

from ctxcore import Candidate, Config, build, load
from ctxcore import seal as seal_module
from ctxcore.io.loaders import from_object
from ctxcore.replay.read import Item, items, sealed_item
from ctxcore.replay.run import compare, compare_sealed, replay_one
from ctxcore.seal import ENGINE_FILES, engine, is_sealed, seal_of

from conftest import ROOT
from test_layers import imports, modules

sys.path.insert(0, os.path.join(ROOT, "bench"))
import replaylog  # noqa: E402

SETTINGS = ({}, {"budget": 700}, {"budget": 1600}, {"max_passages": 3}, {"order": "rank"}, {"near_dup": 0.95},
            {"near_dup": None}, {"prefer_newest": False}, {"min_score": 0.5}, {"select": "density"})


@pytest.fixture(scope="module")
def lines(tmp_path_factory):
    """A generated log of ctxcore traces (a fifth of the answers cite their weakest passage), each line sealed."""
    path = str(tmp_path_factory.mktemp("seal") / "traces.jsonl")
    replaylog.generate(path, 14, seed=5, candidates=(10, 30), sentences=(1, 3))
    with open(path, encoding="utf-8") as f:
        return f.read().splitlines()


def _item(text: str, n: int = 1) -> Item:
    return Item(n - 1, f"log.jsonl:{n}", "line", text)


def _unsealed(text: str) -> str:
    data = json.loads(text)
    data.pop("seal")
    return json.dumps(data, ensure_ascii=False)


# ------------------------------------------------------------------------------------------- what it covers

def test_the_fingerprint_reads_every_module_a_build_imports():
    """A module ``ctxcore.pipeline`` reaches by import, and not in the fingerprint, could change a build's
    decisions without changing the seal: a trace another engine decided would be believed."""
    mods = modules()
    known = set(mods)
    reached, todo = set(), ["ctxcore.pipeline"]
    while todo:
        module = todo.pop()
        if module in reached:
            continue
        reached.add(module)
        todo += [target for _, target in imports(module, mods[module], known)]
    reached.discard("ctxcore")  # the package's own __init__ re-exports the API; it decides nothing
    covered = {m for m in reached if m.split(".")[1] + ".py" in ENGINE_FILES
               or (m.split(".")[1] in ENGINE_FILES and len(m.split(".")) >= 2)}
    assert len(reached) >= 20 and sorted(reached - covered) == []


def test_the_fingerprint_names_the_installed_libraries_and_changes_with_the_source(tmp_path, monkeypatch):
    for module, dist in seal_module.LIBRARIES:
        assert seal_module._version(module, dist) == importlib.metadata.version(dist.replace("_", "-"))
    assert seal_module._version("no_such_module_here", "no_such") == "absent"
    mine = engine()
    assert len(mine) == 64
    # the same sources elsewhere are the same engine; one byte changed in a stage is another
    copy = tmp_path / "ctxcore"
    for name in ENGINE_FILES:
        src = Path(seal_module.__file__).parent / name
        if src.is_dir():
            (copy / name).mkdir(parents=True)
            for f in src.glob("*.py"):
                (copy / name / f.name).write_bytes(f.read_bytes())
        else:
            copy.mkdir(exist_ok=True)
            (copy / name).write_bytes(src.read_bytes())
    monkeypatch.setattr(seal_module, "_HERE", str(copy))
    monkeypatch.setattr(seal_module, "_engine", [])
    assert engine() == mine
    stage = copy / "stages" / "dedup.py"
    stage.write_bytes(stage.read_bytes() + b"\n")
    monkeypatch.setattr(seal_module, "_engine", [])
    assert engine() not in (None, mine)


def test_a_built_trace_is_sealed_in_any_layout_and_the_same_build_gives_the_same_bytes():
    cands = [Candidate("a", "Refunds take five business days.", 0.9),
             Candidate("b", "Shipping is free over 50 EUR.", 0.5)]
    t = build(cands, "How long do refunds take?", Config(budget=300))
    body = t.to_dict()
    assert list(body)[-1] == "seal" and body["seal"].startswith("sha256:")
    for text in (t.to_json(), json.dumps(body), json.dumps(body, sort_keys=True, indent=1),
                 json.dumps({**body, "time": "2026-12-05T10:00:00Z", "run_id": "r1"})):
        assert is_sealed(json.loads(text))
    assert build(cands, "How long do refunds take?", Config(budget=300)).to_json() == t.to_json()
    assert build(cands, "How long do refunds take?", Config(budget=301)).to_dict()["seal"] != body["seal"]


EDITS = {
    "a fate": lambda d: d["decisions"][-1].update(fate="kept"),
    "a reason": lambda d: d["decisions"][0].update(reason=d["decisions"][0]["reason"] + " "),
    "a candidate's text": lambda d: d["candidates"][0].update(text=d["candidates"][0]["text"] + "!"),
    "a score": lambda d: d["candidates"][1].update(score=0.51),
    "a setting": lambda d: d["config"].update(budget=299),
    "the prompt": lambda d: d["prompt"].update(text=d["prompt"]["text"].replace("Refunds", "Returns")),
    "the question": lambda d: d.update(query="How long?"),
    "a decided field removed": lambda d: d.pop("blocks"),
    "the seal itself": lambda d: d.update(seal=d["seal"][:-1] + ("0" if d["seal"][-1] != "0" else "1")),
    "a seal that is no string": lambda d: d.update(seal=7),
}


@pytest.mark.parametrize("what", EDITS)
def test_an_edit_to_anything_a_build_decides_breaks_the_seal(what):
    cands = [Candidate("a", "Refunds take five business days.", 0.9),
             Candidate("b", "Shipping is free over 50 EUR.", 0.5), Candidate("c", "Unrelated text.", 0.1)]
    data = json.loads(build(cands, "How long do refunds take?", Config(budget=300, min_score=0.3)).to_json())
    assert is_sealed(data)
    EDITS[what](data)
    assert not is_sealed(data)


def test_what_a_loader_adds_leaves_the_seal_whole(lines):
    data = json.loads(lines[0])
    data["logged"]["answer"] = "Something else entirely [S1]."
    data["warnings"] = data["warnings"] + [{"kind": "note", "ids": [], "message": "a loader's note"}]
    assert is_sealed(data)


def test_a_seal_another_engine_made_is_not_this_engines():
    data = json.loads(build([Candidate("a", "Refunds take five days.", 0.9)], "Refunds?").to_json())
    data["seal"] = seal_of(data, "f" * 64)
    assert not is_sealed(data)
    assert seal_of(data, engine()) == seal_of(data)


# ------------------------------------------------------------------------------------------- the replay

def test_a_sealed_runs_row_is_the_row_of_its_rebuild(lines):
    """The replay's rows off the stored fates equal the rows after the loader's rebuild, under every setting,
    with findings and without (the generated answers cite a passage; a fifth cite the weakest one)."""
    lost = 0
    for n, text in enumerate(lines, 1):
        stored, run_id, when = sealed_item(_item(text, n))
        loaded = from_object(json.loads(text), f"log.jsonl:{n}")
        assert (run_id, when) == (loaded.trace.logged.trace_id, json.loads(text)["time"])
        for new in SETTINGS:
            for with_findings in (False, True) if new in SETTINGS[:4] else (False,):
                fast = compare_sealed(stored, new, with_findings)
                assert fast == compare(loaded, new, None, with_findings), (n, new, with_findings)
                lost += fast["regression"]
    assert lost >= 5


def test_a_sealed_log_replays_as_the_same_log_unsealed(lines):
    for n, text in enumerate(lines, 1):
        for new in SETTINGS[:3]:
            sealed = replay_one(_item(text, n), new)
            plain = replay_one(_item(_unsealed(text), n), new)
            assert sealed["ok"] and sealed == plain, (n, new)


def test_a_one_run_trace_file_is_read_by_its_seal_too(tmp_path, lines):
    path = tmp_path / "run.json"
    path.write_text(lines[2], encoding="utf-8")
    (item,) = list(items([str(path)]))
    assert item.kind == "bytes" and sealed_item(item) is not None
    assert replay_one(item, {"budget": 700}) == replay_one(
        dataclasses.replace(item, payload=_unsealed(lines[2]).encode()), {"budget": 700})


def test_an_edited_sealed_trace_is_rebuilt_and_its_stored_fates_are_not_believed(lines):
    """A kept passage hand-marked over budget: the seal breaks, so the baseline is the rebuild's (the passage
    kept), as for an unsealed trace, and the loader says the stored trace differs."""
    data = json.loads(lines[0])
    kept = next(d for d in data["decisions"] if d["fate"] == "kept")
    kept.update(fate="over_budget", label=None, position=None)
    edited = json.dumps(data, ensure_ascii=False)
    assert sealed_item(_item(edited)) is None
    row = replay_one(_item(edited), {})["row"]
    assert row["kept_before"] == row["kept_after"] and not row["changed"]
    assert "replay_differs" in [w.kind for w in load(edited.encode(), name="edited.json").trace.warnings]


def test_a_forged_seal_on_a_malformed_trace_is_refused_as_plainly_as_without_it(lines):
    """Anyone can compute a seal; one made for a malformed trace gets no further than the loader: the run is
    unreadable, naming the field, exactly as it is without the seal."""
    for field, edit in (("decisions[0].fate", lambda d: d["decisions"][0].update(fate="gone")),
                        ("candidates[1].text", lambda d: d["candidates"][1].update(text=7)),
                        ("inputs.history", lambda d: d["inputs"].update(history="not a list"))):
        data = json.loads(lines[1])
        edit(data)
        data["seal"] = seal_of(data)
        forged = json.dumps(data)
        assert sealed_item(_item(forged)) is None, field
        result = replay_one(_item(forged), {"budget": 700})
        data.pop("seal")
        assert not result["ok"] and result == replay_one(_item(json.dumps(data)), {"budget": 700}), field
        assert field.split("[")[0].split(".")[0] in result["reason"], result["reason"]


def test_a_seal_made_for_edited_fates_is_that_persons_word_until_findings_are_compared(lines):
    """A seal recomputed on purpose after an edit passes (the module says so): without findings the stored fates
    are the baseline. Comparing findings rebuilds the trace; fates that differ from the rebuild then send the run
    the loader's way, so the findings and the fates of one row never come from two different baselines."""
    data = json.loads(lines[0])
    kept = next(d for d in data["decisions"] if d["fate"] == "kept")
    kept.update(fate="over_budget", label=None, position=None)
    data["seal"] = seal_of(data)
    forged = json.dumps(data, ensure_ascii=False)
    stored = sealed_item(_item(forged))[0]
    assert compare_sealed(stored, {"budget": 700}, False)["kept_before"] == sum(
        d["fate"] == "kept" for d in data["decisions"])
    assert compare_sealed(stored, {"budget": 700}, True) is None
    data.pop("seal")
    assert replay_one(_item(forged), {"budget": 700}) == replay_one(_item(json.dumps(data, ensure_ascii=False)),
                                                                     {"budget": 700})
