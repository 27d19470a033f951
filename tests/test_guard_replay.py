"""Replay's counts held by hand-valued tables and by relations over a generated log (issue #29).

Each test names the bug it was checked against (planted by hand in a scratch copy)."""

import json
import operator
import os
import sys
from collections import Counter
from pathlib import Path

import pytest

from ctxcore.errors import InputError
from ctxcore.io.formats.spans import parse_spans
from ctxcore.io.limits import MAX_BYTES
from ctxcore.io.live.store import Store
from ctxcore.replay import engines, read
from ctxcore.replay import run as replay_run
from ctxcore.replay.read import items, load_item, total_bytes
from ctxcore.replay.report import Summary, percentiles
from ctxcore.replay.run import replay

FIXTURES = Path(__file__).parent / "fixtures" / "traces"


def _row(run_id, *, changed=False, reordered=False, lost=(), moved=(), saved=0, evidence=(100, 100),
         findings=(False, [], [])):
    checked, gone, new = findings
    return {"ok": True, "row": {
        "run_id": run_id, "source": f"{run_id}.json", "time": None, "query": "q", "baseline": "trace",
        "changed": changed, "reordered": reordered, "findings_checked": checked, "tokens_saved": saved,
        "evidence_tokens_before": evidence[0], "evidence_tokens_after": evidence[1],
        "prompt_tokens_before": 500, "prompt_tokens_after": 500 - saved,
        "moved": [{"id": i, "before_fate": a, "after_fate": b} for i, a, b in moved],
        "newly_dropped": [i for i, a, b in moved if a == "kept" and b != "kept"],
        "newly_kept": [i for i, a, b in moved if a != "kept" and b == "kept"],
        "findings_gone": gone, "findings_new": new,
        "lost_ids": list(lost), "lost_labels": [f"S{n}" for n, _ in enumerate(lost, 1)], "regression": bool(lost)}}


def _report(results):
    s = Summary()
    for r in results:
        s.add(r)
    return s.report(new={"budget": 100})


def test_regressions_are_counted_per_run_not_per_lost_passage():
    """Run a loses three cited passages, run b one: two regressions. Plant: ``regression_count +=
    len(row["lost_ids"])`` (four)."""
    rep = _report([_row("a", changed=True, lost=("p1", "p2", "p3")), _row("b", changed=True, lost=("p9",)),
                   _row("c")])
    assert rep["regression_count"] == 2
    assert [(g["run_id"], g["lost_ids"], g["cited_labels"]) for g in rep["regressions"]] == [
        ("a", ["p1", "p2", "p3"], ["S1", "S2", "S3"]), ("b", ["p9"], ["S1"])]
    assert (rep["runs"], rep["changed"], rep["unchanged"]) == (3, 2, 1)


def test_unreadable_runs_are_counted_and_listed_but_not_replayed():
    """Plant: an unreadable result counted as a run too (``runs`` 3)."""
    bad = {"ok": False, "source": "x.jsonl", "reason": "x.jsonl: not UTF-8 text", "run_id": None}
    rep = _report([_row("a"), bad, _row("b")])
    assert (rep["runs"], rep["unreadable_count"]) == (2, 1)
    assert rep["unreadable"] == [{"source": "x.jsonl", "reason": "x.jsonl: not UTF-8 text"}]


def test_fate_moves_count_candidates_and_runs():
    """Two runs move kept->dropped (3 candidates), one moves dropped->kept. Plant: ``move_runs.update(pairs)``
    (runs counted per candidate: 3, not 2)."""
    rep = _report([_row("a", changed=True, moved=[("x", "kept", "dropped"), ("y", "kept", "dropped")]),
                   _row("b", changed=True, moved=[("x", "kept", "dropped"), ("z", "dropped", "kept")])])
    assert rep["fate_moves"] == [{"from": "kept", "to": "dropped", "candidates": 3, "runs": 2},
                                 {"from": "dropped", "to": "kept", "candidates": 1, "runs": 1}]
    assert (rep["newly_dropped"], rep["newly_kept"]) == (3, 1)


def test_tokens_saved_and_evidence_totals():
    rep = _report([_row("a", saved=40, evidence=(100, 70)), _row("b", saved=-10, evidence=(50, 60)), _row("c")])
    t = rep["tokens"]
    assert (t["prompt_before"], t["prompt_after"], t["saved_total"]) == (1500, 1470, 30)
    assert (t["evidence_before"], t["evidence_after"], t["evidence_saved_total"]) == (250, 230, 20)
    assert t["saved_per_run"] == {"p0": -10, "p10": -10, "p25": -10, "p50": 0, "p75": 40, "p90": 40, "p100": 40}
    assert t["evidence_saved_per_run"]["p50"] == 0 and t["evidence_saved_per_run"]["p100"] == 30


def test_findings_gone_and_new_are_counted_per_run():
    rep = _report([_row("a", findings=(True, ["duplicates"], ["buried"])), _row("b", findings=(True, ["duplicates"], [])),
                   _row("c")])
    assert rep["findings"] == {"gone": {"duplicates": 2}, "new": {"buried": 1}, "runs_checked": 2, "compared": True}


@pytest.mark.parametrize("hist, want", [
    (Counter(), {"p0": None, "p50": None, "p100": None}),
    (Counter({7: 1}), {"p0": 7, "p50": 7, "p100": 7}),
    (Counter({1: 1, 2: 1}), {"p0": 1, "p50": 1, "p100": 2}),          # rank ceil(0.5*2)=1
    (Counter({1: 1, 2: 1, 3: 1}), {"p0": 1, "p50": 2, "p100": 3}),    # rank ceil(1.5)=2
    (Counter({-5: 1, 0: 2, 10: 1}), {"p0": -5, "p50": 0, "p100": 10}),
])
def test_nearest_rank_percentiles(hist, want):
    """Plant: ``math.floor`` for ``math.ceil`` in the rank (p50 of 1,2,3 would be 1)."""
    assert percentiles(hist, (0, 50, 100)) == want


# -- relations over a generated log -------------------------------------------------------------------------------
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import replaylog  # noqa: E402


@pytest.fixture(scope="module")
def log(tmp_path_factory):
    """24 generated runs (8-12 candidates), a file that is not UTF-8 and a file one byte over the size limit
    (sparse: nothing is written but its length)."""
    folder = tmp_path_factory.mktemp("guard-replay")
    path = folder / "log.jsonl"
    planted = replaylog.generate(str(path), 24, seed=3, candidates=(8, 12), sentences=(1, 2), regression_every=3)
    latin = folder / "latin.json"
    latin.write_bytes('{"query": "caf\u00e9", "candidates": []}'.encode("latin-1"))
    huge = folder / "huge.json"
    with open(huge, "wb") as f:
        f.truncate(MAX_BYTES + 1)
    return folder, path, planted, latin, huge


def _replayed(log, new, name):
    folder, path, _, latin, huge = log
    out = folder / name
    report = replay([str(path), str(latin), str(huge)], new, out=str(out), engine="inprocess", with_findings=False)
    rows = [json.loads(line) for line in (out / "runs.jsonl").read_text(encoding="utf-8").splitlines()]
    return report, rows


def test_a_replays_counts_equal_the_rows_they_summarise(log):
    """Relational: every count of report.json is the sum over runs.jsonl, and the two unreadable files are listed
    (the replay goes on past them). Plants: regressions counted per lost passage; an unreadable file stopping the
    replay or counted as a run."""
    report, rows = _replayed(log, {"max_passages": 3}, "cap")
    _, _, planted, latin, huge = log
    assert report["runs"] == len(rows) == 24
    assert report["changed"] == sum(r["changed"] for r in rows)
    assert report["unchanged"] == 24 - report["changed"]
    assert report["reordered"] == sum(r["reordered"] for r in rows)
    assert report["regression_count"] == sum(r["regression"] for r in rows) == len(report["regressions"])
    assert all(bool(r["lost_ids"]) == r["regression"] for r in rows)
    assert sorted(g["run_id"] for g in report["regressions"]) == sorted(planted)
    assert report["newly_dropped"] == sum(len(r["newly_dropped"]) for r in rows)
    assert report["newly_kept"] == sum(len(r["newly_kept"]) for r in rows)
    assert sum(m["candidates"] for m in report["fate_moves"]) == sum(len(r["moved"]) for r in rows)
    assert report["tokens"]["saved_total"] == sum(r["tokens_saved"] for r in rows)
    assert report["tokens"]["prompt_before"] == sum(r["prompt_tokens_before"] for r in rows)
    assert report["tokens"]["evidence_saved_total"] == sum(
        r["evidence_tokens_before"] - r["evidence_tokens_after"] for r in rows)
    assert report["unreadable_count"] == 2
    assert [u["source"] for u in report["unreadable"]] == [str(latin), str(huge)]
    assert [u["reason"] for u in report["unreadable"]] == [
        "line 1: not UTF-8 text (byte 0xe9 at offset 14); save the file as UTF-8",
        "the file is 67.1 MB; the limit is 64 MB"]


def test_runs_whose_order_alone_changed_are_counted_changed(log):
    """The log was built with order "sandwich"; replayed with "rank" no fate moves, but passages change places.
    Plant: ``"changed": bool(moved)`` (an order-only change counted unchanged)."""
    report, rows = _replayed(log, {"order": "rank"}, "order")
    assert report["fate_moves"] == [] and report["newly_dropped"] == 0
    moved_only = [r for r in rows if r["reordered"]]
    assert moved_only and all(r["changed"] for r in moved_only)
    assert report["changed"] == report["reordered"] == len(moved_only)
    assert report["regression_count"] == 0


# --- report.md, line by line ---------------------------------------------------------------------------------------

from ctxcore.replay.report import markdown  # noqa: E402

FULL = {
    "settings": {"new": {"budget": 1000, "order": "rank"}, "baseline": {"budget": 1500}},
    "runs": 1200, "changed": 300, "unchanged": 900, "regression_count": 3, "unreadable_count": 2,
    "tokens": {"prompt_before": 1_500_000, "prompt_after": 1_600_000, "saved_total": -100_000,
               "saved_per_run": {"p50": -80, "p90": -10}},
    "regressions": [{"run_id": "run-7", "source": "log.jsonl:7", "lost_ids": ["a", "b"], "cited_labels": ["S1", "S2"],
                     "query": "How | long?"},
                    {"run_id": None, "source": "log.jsonl:9", "lost_ids": ["c"], "cited_labels": ["S3"],
                     "query": "x" * 205}],
    "fate_moves": [{"from": "kept", "to": "over_budget", "candidates": 1234, "runs": 300}],
    "findings": {"compared": True, "runs_checked": 1100, "gone": {"buried_in_middle": 1001}, "new": {}},
    "unreadable": [{"source": "log.jsonl:3", "reason": "not valid JSON"}],
}


def test_a_full_report_is_every_line_in_its_place():
    """Tokens added (not saved) when the new prompts are longer; the regressions listed are fewer than counted; a
    cell shows 200 characters at most and a '|' of its own escaped; thousands separated."""
    assert markdown(FULL) == "\n".join([
        "# Replay report", "",
        'New settings: `{"budget": 1000, "order": "rank"}`; baseline: `{"budget": 1500}`', "",
        "- runs replayed: 1,200; changed: 300; unchanged: 900",
        "- likely regressions (a passage the logged answer cited would no longer be in the prompt): 3",
        "- unreadable: 2",
        "- prompt tokens: 1,500,000 before, 1,600,000 after, 100,000 added",
        "- saved per run: p50 -80, p90 -10", "",
        "## Likely regressions", "",
        "| run | lost passages | cited as | query |", "|---|---|---|---|",
        "| run-7 | a, b | S1, S2 | How \\| long? |",
        "| log.jsonl:9 | c | S3 | " + "x" * 200 + " |",
        "", "(first 2 of 3; all are in runs.jsonl)",
        "", "## Fates moved", "",
        "| from | to | candidates | runs |", "|---|---|---|---|",
        "| kept | over_budget | 1,234 | 300 |",
        "", "## Findings", "",
        "Compared in 1,100 runs (the others built the same context under both settings).",
        "- gone under the new settings: buried_in_middle (1,001 runs)",
        "- new under the new settings: none",
        "", "## Unreadable", "", "| source | reason |", "|---|---|",
        "| log.jsonl:3 | not valid JSON |"]) + "\n"


def test_an_interrupted_report_with_nothing_moved_says_so_in_words():
    quiet = {**FULL, "settings": {"new": {"caller": "a`b"}, "baseline": None}, "regression_count": 0,
             "regressions": [], "fate_moves": [], "unreadable": [], "unreadable_count": 0,
             "tokens": {"prompt_before": 10, "prompt_after": 10, "saved_total": 0, "saved_per_run": {}},
             "findings": {"compared": False, "runs_checked": 0, "gone": {"x": 1}, "new": {}},
             "interrupted": {"runs": 48, "of": 112, "of_exact": False}}
    assert markdown(quiet) == "\n".join([
        "# Replay report", "",
        "**Interrupted after 48 of at least 112 runs** (Ctrl-C): every figure below covers only the runs done.", "",
        'New settings: ``{"caller": "a`b"}``; baseline: each run\'s logged prompt or own trace', "",
        "- runs replayed: 1,200; changed: 300; unchanged: 900",
        "- likely regressions (a passage the logged answer cited would no longer be in the prompt): 0",
        "- unreadable: 0",
        "- prompt tokens: 10 before, 10 after, 0 saved",
        "- saved per run: ", "",
        "## Likely regressions", "",
        "None: every passage a logged answer cited is still in its prompt.",
        "", "## Fates moved", "", "No candidate's fate moved.",
        "", "## Findings", "", "Not compared (replayed without findings).",
        "- gone under the new settings: none", "- new under the new settings: none"]) + "\n"


# --- the engines: how many workers by default, and an engine nobody knows ---------------------------------------

@pytest.mark.parametrize("cores,expected", [({0}, 1), ({0, 1, 2}, 3), (set(), 1)])
def test_one_worker_per_core_this_process_may_use(monkeypatch, cores, expected):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: cores, raising=False)
    assert engines.default_workers() == expected


@pytest.mark.parametrize("count,expected", [(None, 1), (1, 1), (5, 5)])
def test_without_an_affinity_call_the_core_count_is_used(monkeypatch, count, expected):
    monkeypatch.delattr(os, "sched_getaffinity", raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: count)
    assert engines.default_workers() == expected


def test_an_unknown_engine_is_refused_naming_the_field_and_the_choices():
    with pytest.raises(InputError) as err:
        engines.run(len, [[1]], engine="threads")
    assert (err.value.message, err.value.field) == (
        "unknown engine 'threads'; choose one of local, inprocess, dask", "engine")


def test_the_default_engine_is_the_local_process_pool_and_hands_each_batch_the_arguments(monkeypatch):
    monkeypatch.setattr(engines, "_dask", lambda *a: pytest.fail("the Dask engine was started for the local one"))
    assert list(engines.run(operator.add, [[1], [2, 3], []], ([9],), workers=1)) == [[1, 9], [2, 3, 9], [9]]


@pytest.mark.parametrize("kw,message,field", [
    ({"workers": -1}, "needs at least one worker", "workers"),
    ({"engine": "local", "scheduler": "tcp://127.0.0.1:8786"},
     "--scheduler is for the dask engine (add --engine dask)", "scheduler"),
    ({"engine": "inprocess", "scheduler": "tcp://127.0.0.1:8786"},
     "--scheduler is for the dask engine (add --engine dask)", "scheduler")])
def test_settings_an_engine_cannot_take_are_refused_naming_the_field(kw, message, field):
    with pytest.raises(InputError) as err:
        engines.run(len, [[1]], **kw)
    assert (err.value.message, err.value.field) == (message, field)


def test_one_worker_is_enough():
    assert list(engines.run(len, [[1, 2]], engine="inprocess", workers=1)) == [2]


# --- the reading side: a span export's runs and times, a live store's runs ----------------------------------------

def _span(tid, sid, start, parent=None):
    return {"name": "retrieve", "context": {"trace_id": tid, "span_id": sid}, "parent_id": parent,
            "start_time": start, "end_time": start, "span_kind": "RETRIEVER",
            "attributes": {"openinference.span.kind": "RETRIEVER", "input.value": "When?",
                           "retrieval.documents": [{"document.id": "d", "document.content": "alpha text"}]}}


def test_a_span_export_of_two_traces_is_two_runs_each_at_its_earliest_span(tmp_path):
    path = tmp_path / "spans.json"
    path.write_text(json.dumps([_span("t1", "a", "2024-05-01T10:00:02Z"), _span("t2", "b", "2024-05-01T09:00:00Z"),
                                _span("t1", "c", "2024-05-01T10:00:01Z", "a")]))
    size = path.stat().st_size
    assert [(i.kind, i.source, i.run_id, i.time, i.done_bytes) for i in items([str(path)])] == [
        ("family", f"{path}#t1", "t1", "2024-05-01T10:00:01Z", size),
        ("family", f"{path}#t2", "t2", "2024-05-01T09:00:00Z", size)]
    first = next(iter(items([str(path)])))
    assert [s["context"]["span_id"] for s in first.payload[1]] == ["a", "c"]


def test_a_span_export_of_one_trace_is_read_whole_at_its_earliest_span(tmp_path):
    path = tmp_path / "spans.json"
    path.write_text(json.dumps([_span("t1", "a", 1714557602000), _span("t1", "c", 1714557601500, "a")]))
    (item,) = items([str(path)])
    assert (item.kind, item.source, item.run_id, item.time) == ("bytes", str(path), None, "1714557601500")
    assert item.payload == path.read_bytes()


@pytest.mark.parametrize("starts,earliest", [([10, 9.5], "9.5"), ([5, "2024"], "5"), (["b", "a"], "a"),
                                             ([None, 7], "7"), ([None], None), ([], None)])
def test_the_earliest_start_numbers_as_numbers_before_text(starts, earliest):
    spans = parse_spans([{"name": f"s{i}", **({} if s is None else {"start_time": s})} for i, s in enumerate(starts)],
                        "f.json")
    assert read._earliest(spans) == earliest


def _otlp(tid, start):
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [
        {"traceId": tid, "spanId": "a1", "name": "retrieve", "startTimeUnixNano": str(start),
         "endTimeUnixNano": str(start + 1000),
         "attributes": [{"key": "openinference.span.kind", "value": {"stringValue": "RETRIEVER"}},
                        {"key": "input.value", "value": {"stringValue": "When?"}},
                        {"key": "retrieval.documents.0.document.content", "value": {"stringValue": "alpha"}}]}]}]}]})


def test_a_live_stores_runs_oldest_first_with_their_times_and_a_damaged_one_named(tmp_path):
    db = tmp_path / "live.db"
    store = Store(db)
    a, b, c, t = "a" * 32, "b" * 32, "c" * 32, "d" * 32
    bodies = [_otlp(b, 1700000005000000000), _otlp(a, 1700000000000000000), b"\x08\xff\xff not protobuf", "not json"]
    for now, (tid, body) in enumerate(zip((b, a, c, t), bodies), 1):
        store.add({tid: {"body": body, "spans": 1, "service": "bot"}}, now=float(now))
    store.close()
    got = list(items([f"store:{db}"]))
    sizes = [len(body) for body in bodies]  # the stored bytes: the bodies are ASCII
    assert [(i.kind, i.source, i.run_id, i.time, i.done_bytes) for i in got] == [
        ("bytes", f"live-{b}.jsonl", b, "1700000005000000000", sizes[0]),
        ("bytes", f"live-{a}.jsonl", a, "1700000000000000000", sum(sizes[:2])),
        ("error", f"live-{c}.jsonl", c, None, sum(sizes[:3])),
        ("bytes", f"live-{t}.jsonl", t, None, sum(sizes))]
    assert got[0].payload == (bodies[0] + "\n").encode()
    assert got[2].payload.startswith(f"{db}: run {c}: a stored row cannot be read (")


# --- a Langfuse file of several traces, split into runs ----------------------------------------------------------

def _langfuse(tid: str, when: str) -> dict:
    trace = json.loads((FIXTURES / "langfuse_trace.json").read_text())
    trace["id"], trace["timestamp"] = tid, when
    for o in trace["observations"]:
        o["traceId"] = tid
    return trace


def _runs_of(path) -> list:
    out = []
    for i in items([str(path)]):
        records = i.payload[1]
        held = sorted(records) if isinstance(records, dict) else [r.get("trace", r).get("id") for r in records]
        out.append((i.kind, i.source.rsplit("/", 1)[-1], i.run_id, i.time, held))
    return out


def test_a_langfuse_list_of_traces_is_one_run_a_trace_each_at_its_timestamp(tmp_path):
    path = tmp_path / "lf.json"
    path.write_text(json.dumps([_langfuse("t-a", "2024-05-14T10:00:00.000Z"), _langfuse("t-b", "2024-05-14T09:00:00Z")]))
    assert _runs_of(path) == [("family", "lf.json#t-a", "t-a", "2024-05-14T10:00:00.000Z", ["t-a"]),
                              ("family", "lf.json#t-b", "t-b", "2024-05-14T09:00:00Z", ["t-b"])]


def test_langfuse_observations_of_two_traces_are_grouped_by_trace_id(tmp_path):
    a, b = _langfuse("t-a", "x"), _langfuse("t-b", "y")
    path = tmp_path / "obs.json"
    path.write_text(json.dumps({"data": a["observations"][:2] + b["observations"] + a["observations"][2:]}))
    got = list(items([str(path)]))
    assert [(i.source.rsplit("/", 1)[-1], i.run_id, i.time) for i in got] == [
        ("obs.json#t-a", "t-a", "2024-05-14T10:02:01.000Z"), ("obs.json#t-b", "t-b", "2024-05-14T10:02:01.000Z")]
    assert [[o["id"] for o in i.payload[1]] for i in got] == [[o["id"] for o in a["observations"]],
                                                            [o["id"] for o in b["observations"]]]
    assert {o["traceId"] for o in got[1].payload[1]} == {"t-b"}


def test_a_trace_wrapped_with_its_observations_beside_a_plain_one(tmp_path):
    a, b = _langfuse("t-a", "2024-05-14T10:00:00.000Z"), _langfuse("t-b", "2024-05-14T09:00:00.000Z")
    head = {k: v for k, v in a.items() if k != "observations"}
    path = tmp_path / "wrapped.json"
    path.write_text(json.dumps({"data": [{"trace": head, "observations": a["observations"]}, b]}))
    assert _runs_of(path) == [("family", "wrapped.json#t-a", "t-a", "2024-05-14T10:00:00.000Z", ["t-a"]),
                              ("family", "wrapped.json#t-b", "t-b", "2024-05-14T09:00:00.000Z", ["t-b"])]


def test_a_trace_id_given_twice_is_two_runs_named_by_their_place_each_picked_from_the_whole_file_at_its_time(tmp_path):
    a, b = _langfuse("t-a", "2024-05-14T10:00:00.000Z"), _langfuse("t-b", "2024-05-14T09:00:00.000Z")
    path = tmp_path / "dup.json"
    path.write_text(json.dumps([a, b, a]))
    got = list(items([str(path)]))
    assert [(i.run_id, i.time) for i in got] == [("t-a#1", "2024-05-14T10:00:00.000Z"),
                                                 ("t-b", "2024-05-14T09:00:00.000Z"),
                                                 ("t-a#3", "2024-05-14T10:00:00.000Z")]
    assert [i.payload[1]["trace_id"] for i in (got[0], got[2])] == ["t-a#1", "t-a#3"]
    assert got[0].payload[1]["whole"] == got[2].payload[1]["whole"] == [a, b, a] and got[1].payload[1] == [b]
    assert [load_item(i)[0].logged.trace_id for i in got] == ["t-a#1", "t-b", "t-a#3"]


def test_a_trace_without_an_id_among_others_is_replayed_as_its_own_run_named_by_its_place(tmp_path):
    a, b = _langfuse("t-a", "2024-05-14T10:00:00.000Z"), _langfuse("t-b", "2024-05-14T09:00:00.000Z")
    del b["id"]
    for o in b["observations"]:
        del o["traceId"]
    path = tmp_path / "lost.json"
    path.write_text(json.dumps({"data": [a, b]}))
    got = list(items([str(path)]))
    assert [(i.run_id, i.source.rsplit("/", 1)[-1], i.time) for i in got] == [
        ("t-a", "lost.json#t-a", "2024-05-14T10:00:00.000Z"), ("#2", "lost.json##2", "2024-05-14T09:00:00.000Z")]
    assert [load_item(i)[0].logged.trace_id for i in got] == ["t-a", "#2"]


def test_a_jsonl_logs_lines_each_a_run_or_named_with_the_bytes_read_so_far(tmp_path):
    """A CRLF line, a blank line (no run), a line that is not UTF-8 and one 64 MiB + 2 bytes long (sparse: nothing
    is written but its length) are named by their line; the runs around them are read, and each item carries the
    bytes read up to its end, so progress reaches the file's size."""
    line = json.dumps({"query": "When?", "candidates": [{"id": "a", "text": "alpha text"}]}).encode()
    path = tmp_path / "log.jsonl"
    with open(path, "wb") as f:
        f.write(line + b"\r\n")
        f.write(b"\n")
        f.write(b'{"query": "caf\xe9", "candidates": []}\n')
        f.seek(f.tell() + MAX_BYTES + 1)
        f.write(b"\n")
        f.write(line + b"\n")
    size = path.stat().st_size
    assert size == 71 + 1 + 36 + MAX_BYTES + 2 + 70
    assert [(i.kind, i.source, i.payload, i.done_bytes) for i in items([str(path)])] == [
        ("line", f"{path}:1", line.decode(), 71),
        ("error", f"{path}:3", "not UTF-8 text (byte 0xe9 at offset 14); save the file as UTF-8", 108),
        ("error", f"{path}:4", "the line is 67.1 MB; the limit is 64 MB a line", 108 + MAX_BYTES + 2),
        ("line", f"{path}:5", line.decode(), size)]
    assert total_bytes([str(path), str(tmp_path / "missing.jsonl")]) == size
    other = tmp_path / "other.jsonl"
    other.write_bytes(line + b"\n")
    assert total_bytes([str(path), str(other)]) == size + 70


def test_a_span_export_with_a_malformed_span_is_listed_unreadable_and_the_replay_reads_on(tmp_path):
    bad = _span("t2", "b", 2)
    bad["attributes"]["llm." + ".".join(["x"] * 300)] = 1
    path = tmp_path / "deep.json"
    path.write_text(json.dumps([_span("t1", "a", 1), bad]))
    after = tmp_path / "ok.jsonl"
    after.write_text(json.dumps({"query": "When?", "candidates": [{"id": "a", "text": "alpha text"}]}) + "\n")
    got = list(items([str(path), str(after)]))
    assert [(i.kind, i.source, i.done_bytes) for i in got] == [
        ("error", str(path), path.stat().st_size), ("line", f"{after}:1", path.stat().st_size + after.stat().st_size)]
    assert got[0].payload.startswith("field 'spans[1].attributes.llm.x.x.x") and got[0].payload.endswith(
        ": attributes nested more than 100 levels deep (each part of a dotted key is a level)")


@pytest.mark.parametrize("family, data, when", [
    (None, {"time": "2024-01-01T00:00:00Z", "timestamp": "later"}, "2024-01-01T00:00:00Z"),
    (None, {"timestamp": 1700000000}, "1700000000"),
    (None, {"time": None, "timestamp": "x"}, None),
    (None, {}, None), (None, [{"time": "t"}], None), (None, "t", None),
    ("langfuse", [{"timestamp": None, "observations": []}, {"timestamp": "T2"}, {"timestamp": "T3"}], "T2"),
    ("langfuse", {"trace": {"timestamp": "T"}, "observations": [], "timestamp": "outer"}, "T"),
    ("langfuse", {"id": "x", "observations": [{"startTime": "2024-05-02"}, {"startTime": "2024-05-01"},
                                              {"startTime": None}, 7]}, "2024-05-01"),
    ("langfuse", [{"type": "SPAN", "startTime": "B"}, {"type": "GENERATION", "startTime": "A"}, 7], "A"),
    ("langfuse", [{"observations": [{"startTime": None}]}], None),
    ("langfuse", [7, {"timestamp": 12}], "12"),
    ("langfuse", {"trace": "not a head", "timestamp": "own"}, "own"),
])
def test_when_a_run_happened_as_its_log_wrote_it(family, data, when):
    assert read.run_time(family, data) == when


def test_a_span_runs_time_is_its_earliest_start_and_none_when_its_spans_cannot_be_read():
    assert read.run_time("openinference", [_span("t1", "a", 5), _span("t1", "c", 3, "a")]) == "3"
    bad = _span("t1", "a", 5)
    bad["attributes"]["llm." + ".".join(["x"] * 300)] = 1
    assert read.run_time("openinference", [bad]) is None
    assert read.run_time("openinference", {"not": "spans"}) is None


@pytest.mark.parametrize("head", [{"format": "ctxcore-trace"}, {"candidates": []}, {"observations": []}])
def test_a_jsonl_whose_lines_are_whole_runs_is_read_a_line_a_run(tmp_path, head):
    path = tmp_path / "log.jsonl"
    path.write_text(json.dumps({**head, "n": 1}) + "\n" + json.dumps({**head, "n": 2}) + "\n")
    assert [(i.kind, i.source) for i in items([str(path)])] == [("line", f"{path}:1"), ("line", f"{path}:2")]


def test_a_jsonl_of_spans_is_read_as_one_export(tmp_path):
    path = tmp_path / "spans.jsonl"
    spans = (_span("t1", "a", 5), _span("t2", "b", 6), _span("t1", "c", 5, "a"))  # linked: grouped by trace id
    path.write_text("\n".join(json.dumps(s) for s in spans) + "\n")
    assert [(i.kind, i.source, i.run_id) for i in items([str(path)])] == [
        ("family", f"{path}#t1", "t1"), ("family", f"{path}#t2", "t2")]


def test_a_symlink_loop_named_is_unreadable_and_one_met_in_a_walk_is_passed_over(tmp_path):
    folder = tmp_path / "logs"
    folder.mkdir()
    (folder / "a.jsonl").write_text(json.dumps({"query": "When?", "candidates": [{"id": "a", "text": "alpha"}]}) + "\n")
    os.symlink("loop.json", folder / "loop.json")  # a link to itself
    assert list(read.expand([str(folder)])) == [(str(folder / "a.jsonl"), None)]
    (named,) = read.expand([str(folder / "loop.json")])
    assert named == (str(folder / "loop.json"), "cannot read the file (Too many levels of symbolic links)")


@pytest.mark.parametrize("err, reason", [
    (InputError("X marks a field", source="f.json"), "X marks a field"),
    (InputError("bad value", source="f.json", field="budget"), "field 'budget': bad value"),
    (ValueError("f.json is not read"), "f.json is not read"),
    (InputError("elsewhere", source="g.json"), "g.json: elsewhere"),
])
def test_why_leaves_out_only_the_source_it_is_reported_beside(err, reason):
    assert read.why(err, "f.json") == reason


# --- one run's row: which settings each side is built on, what the answer cites -----------------------------------

from ctxcore.io.loaders import load  # noqa: E402
from ctxcore.replay.run import compare  # noqa: E402

FLAT = str(FIXTURES / "phoenix_flat.jsonl")  # its pipeline sent 3 of 5 passages: the policy is max_passages 3


def test_a_sent_run_replayed_against_given_settings_builds_both_sides_on_its_own_settings_not_its_policy():
    """With ``--baseline`` the inferred policy is not the ground: {} against {} keeps all 5 on both sides. Plants:
    the policy taken as ground whenever there is a sent prompt (the new side then keeps the policy's 3)."""
    row = compare(load(FLAT), {}, {}, False)
    assert (row["baseline"], row["kept_before"], row["kept_after"], row["changed"]) == ("config", 5, 5, False)


def test_newly_kept_lists_each_passage_the_new_settings_add_to_the_policys():
    """Raising the policy's limit of 3 to 5 keeps kb-118#0 and forum-5531, which the limit held back. Plant:
    ``newly_kept`` as the candidates kept on both sides (empty)."""
    row = compare(load(FLAT), {"max_passages": 5}, None, False)
    assert (row["baseline"], row["kept_before"], row["kept_after"]) == ("policy", 3, 5)
    assert [(m["id"], m["before_fate"], m["after_fate"]) for m in row["newly_kept"]] == [
        ("kb-118#0", "over_limit", "kept"), ("forum-5531", "over_limit", "kept")]
    assert row["newly_dropped"] == [] and row["changed"]


def test_only_the_answers_citations_count_as_cited_not_its_numbers_found_in_a_passage():
    """The answer cites [1] and [2] and says "$200", which kb-112#0 holds: the number check is ok, but it is not a
    citation. Plant: ``c.kind == "citation" or c.verdict == "ok"`` (the number counted as cited label "200")."""
    row = compare(load(FLAT), {}, None, False)
    assert (row["cited_labels"], row["cited_ids"]) == (["1", "2"], ["kb-112#0", "kb-207#1"])
    assert (row["lost_ids"], row["regression"]) == ([], False)


@pytest.mark.parametrize("kw,field", [({"workers": -1}, "workers"),
                                      ({"scheduler": "tcp://127.0.0.1:8786"}, "scheduler")])
def test_a_replay_hands_its_engine_settings_on_to_be_checked(kw, field):
    """Plants: replay() filling in its own worker count (so -1 passes) or dropping the scheduler on the way."""
    with pytest.raises(InputError) as err:
        replay([FLAT], {}, engine="inprocess", with_findings=False, **kw)
    assert err.value.field == field


def test_a_replay_runs_on_the_local_process_pool_by_default():
    """Plant: a default engine the engines do not know (the replay refused)."""
    report = replay([FLAT], {"max_passages": 5}, workers=1, with_findings=False)
    assert (report["runs"], report["changed"], report["newly_kept"], report["unreadable_count"]) == (1, 1, 2, 0)


def test_the_engine_asked_for_is_the_one_that_replays(monkeypatch):
    """Plant: replay() dropping its engine on the way (the default, worker processes, runs instead). A batch
    function replaced in this process is seen only by the in-process engine."""
    pids, real = [], replay_run.replay_batch
    monkeypatch.setattr(replay_run, "replay_batch", lambda batch, *rest: pids.append(os.getpid()) or real(batch, *rest))
    report = replay([FLAT], {"max_passages": 5}, engine="inprocess", with_findings=False)
    assert (pids, report["runs"], report["newly_kept"]) == ([os.getpid()], 1, 2)
