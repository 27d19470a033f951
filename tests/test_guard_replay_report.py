"""The replay's outputs field by field (issue #29): the summary's counts against the rows they summarise, the
report's keys, the Parquet schema column by column, rows written a row group at a time, every file that cannot
be written named in one line while the others are still written; the meter's lines, and the loop with Ctrl-C.
Values are worked out by hand."""

from __future__ import annotations

import io
import json
import os
import re
import sys
import tempfile
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from conftest import ROOT
from ctxcore import Candidate, Config, build, load
from ctxcore.analysis import policy as policy_module
from ctxcore.analysis import sent as sent_module
from ctxcore.analysis.sent import reconstruct
from ctxcore.errors import InputError
from ctxcore.io.formats import load_file
from ctxcore.io.loaded import Loaded
from ctxcore.replay.read import Item, items, load_item
from ctxcore.replay.report import (COLUMNS, LISTED, Summary, Writer, _cell, _code, _reason, interrupted_line,
                                   markdown, percentiles)
from ctxcore.records import Logged
from ctxcore.replay.run import (Progress, _batches, _duration, _interrupted, _present, compare, policy_settings,
                                replay, replay_batch, replay_one)

sys.path.insert(0, os.path.join(ROOT, "bench"))
import replaylog  # noqa: E402

SAMPLE = str(Path(ROOT) / "sample_data" / "replay_log.jsonl")


def _move(cid, before, after):
    return {"id": cid, "before_fate": before, "before_stage": "select", "before_reason": "r1",
            "after_fate": after, "after_stage": "select", "after_reason": "r2"}


def _row(**over) -> dict:
    row = {"index": 0, "source": "log.jsonl:1", "run_id": "r", "time": None, "query": "q", "baseline": "trace",
           "candidates": 3, "changed": False, "reordered": False, "kept_before": 2, "kept_after": 2,
           "newly_dropped": [], "newly_kept": [], "moved": [],
           "evidence_tokens_before": 100, "evidence_tokens_after": 100,
           "prompt_tokens_before": 300, "prompt_tokens_after": 300, "tokens_saved": 0,
           "cited_labels": [], "cited_ids": [], "lost_labels": [], "lost_ids": [], "regression": False,
           "findings_checked": False, "findings_before": [], "findings_after": [], "findings_gone": [],
           "findings_new": []}
    row.update(over)
    return row


def _ok(row):
    return {"index": row["index"], "source": row["source"], "ok": True, "row": row}


ROWS = [
    _row(index=0, run_id="a", changed=True, reordered=True, baseline="policy", tokens_saved=40,
         prompt_tokens_before=500, prompt_tokens_after=460, evidence_tokens_before=200, evidence_tokens_after=170,
         moved=[_move("x", "kept", "over_budget"), _move("y", "kept", "over_budget")],
         newly_dropped=[_move("x", "kept", "over_budget"), _move("y", "kept", "over_budget")],
         regression=True, lost_ids=["x"], lost_labels=["S2"], query="refund?", time="2026-01-01",
         findings_checked=True, findings_gone=["buried"], findings_new=["crowded", "budget"]),
    _row(index=1, run_id="b", changed=True, baseline="trace", tokens_saved=-10, prompt_tokens_before=300,
         prompt_tokens_after=310, evidence_tokens_before=90, evidence_tokens_after=100,
         moved=[_move("z", "over_budget", "kept"), _move("w", "kept", "over_budget")],
         newly_kept=[_move("z", "over_budget", "kept")], newly_dropped=[_move("w", "kept", "over_budget")],
         findings_checked=True, findings_gone=["buried"]),
    _row(index=2, run_id="c", baseline="trace"),
]


def test_the_summary_counts_what_its_rows_say():
    s = Summary()
    for row in ROWS:
        s.add(_ok(row))
    s.add({"index": 3, "source": "log.jsonl:4", "ok": False, "run_id": "d", "reason": "not JSON"})
    s.add({"index": 4, "source": "log.jsonl:5", "ok": False, "reason": "too big"})
    got = s.report({"budget": 900}, {"budget": 1500}, with_findings=True)
    assert got == {
        "runs": 3, "changed": 2, "unchanged": 1, "reordered": 1,
        "regression_count": 1,
        "regressions": [{"run_id": "a", "lost_ids": ["x"], "cited_labels": ["S2"], "source": "log.jsonl:1",
                         "time": "2026-01-01", "query": "refund?"}],
        "unreadable_count": 2,
        "unreadable": [{"source": "log.jsonl:4", "reason": "not JSON", "run_id": "d"},
                       {"source": "log.jsonl:5", "reason": "too big"}],
        "listed_at_most": 1000,
        "tokens": {"prompt_before": 1100, "prompt_after": 1070, "saved_total": 30,
                   "saved_per_run": {"p0": -10, "p10": -10, "p25": -10, "p50": 0, "p75": 40, "p90": 40, "p100": 40},
                   "evidence_before": 390, "evidence_after": 370, "evidence_saved_total": 20,
                   "evidence_saved_per_run": {"p0": -10, "p10": -10, "p25": -10, "p50": 0, "p75": 30, "p90": 30,
                                              "p100": 30}},
        "newly_dropped": 3, "newly_kept": 1,
        # three kept -> over_budget moves in two runs before one over_budget -> kept in one run
        "fate_moves": [{"from": "kept", "to": "over_budget", "candidates": 3, "runs": 2},
                       {"from": "over_budget", "to": "kept", "candidates": 1, "runs": 1}],
        "findings": {"gone": {"buried": 2}, "new": {"budget": 1, "crowded": 1}, "runs_checked": 2, "compared": True},
        "baselines": {"policy": 1, "trace": 2},
        "settings": {"new": {"budget": 900}, "baseline": {"budget": 1500}},
    }


def test_fate_moves_of_equal_counts_are_listed_by_their_fates():
    s = Summary()
    s.add(_ok(_row(moved=[_move("p", "stale", "kept"), _move("q", "kept", "merged")])))
    assert [(m["from"], m["to"]) for m in s.report({})["fate_moves"]] == [("kept", "merged"), ("stale", "kept")]


def test_the_summary_lists_at_most_a_thousand_but_counts_every_one():
    s = Summary()
    for i in range(LISTED + 2):
        s.add({"index": i, "source": f"l:{i}", "ok": False, "reason": "bad"})
        s.add(_ok(_row(index=i, run_id=str(i), regression=True, lost_ids=["x"], lost_labels=["S1"])))
    got = s.report({})
    assert (got["unreadable_count"], len(got["unreadable"])) == (1002, 1000)
    assert (got["regression_count"], len(got["regressions"])) == (1002, 1000)
    assert got["regressions"][-1]["run_id"] == "999" and got["unreadable"][-1]["source"] == "l:999"
    assert "(first 1000 of 1,002; all are in runs.jsonl)" in markdown(got)


def test_percentiles_are_nearest_rank_on_both_sides_of_a_rank():
    # ten values 1..10: p10 is rank 1, p25 rank 3 (2.5 up), p90 rank 9, p50 rank 5
    hist = Counter(range(1, 11))
    assert percentiles(hist) == {"p0": 1, "p10": 1, "p25": 3, "p50": 5, "p75": 8, "p90": 9, "p100": 10}
    # 101 values: p99 is rank ceil(99.99) = 100 (a divisor of 101 would make it rank 99)
    assert percentiles(Counter(range(101)), (99,)) == {"p99": 99}
    assert percentiles(Counter(), (0, 50)) == {"p0": None, "p50": None}


def test_the_markdown_lists_what_the_report_holds():
    s = Summary()
    for row in ROWS:
        s.add(_ok(row))
    md = markdown(s.report({"order": "rank", "budget": 900}, {"min_score": 0.2, "budget": 1500}))
    assert md.splitlines()[:9] == [
        "# Replay report", "",
        'New settings: `{"budget": 900, "order": "rank"}`; baseline: `{"budget": 1500, "min_score": 0.2}`', "",
        "- runs replayed: 3; changed: 2; unchanged: 1",
        "- likely regressions (a passage the logged answer cited would no longer be in the prompt): 1",
        "- unreadable: 0",
        "- prompt tokens: 1,100 before, 1,070 after, 30 saved",
        "- saved per run: p0 -10, p10 -10, p25 -10, p50 0, p75 40, p90 40, p100 40",
    ]
    assert "| a | x | S2 | refund? |" in md and "first 1" not in md  # every regression listed: no "first N of"
    assert "- gone under the new settings: buried (2 runs)" in md
    assert "- new under the new settings: budget (1 runs), crowded (1 runs)" in md
    assert "| kept | over_budget | 3 | 2 |" in md


@pytest.mark.parametrize("info, line", [
    ({"runs": 1234, "of": 20000, "of_exact": True}, "interrupted after 1,234 of 20,000 runs"),
    ({"runs": 0, "of": 5, "of_exact": False}, "interrupted after 0 of at least 5 runs"),
])
def test_an_interrupted_replay_says_how_far_it_got(info, line):
    assert interrupted_line(info) == line


@pytest.mark.parametrize("text, code", [
    ("plain", "`plain`"), ("a`b", "``a`b``"), ("`lead", "`` `lead ``"), ("trail`", "`` trail` ``"),
    ("x``y", "```x``y```"),
])
def test_a_setting_is_one_code_span_whatever_backticks_it_holds(text, code):
    assert _code(text) == code


def test_a_cell_shows_nothing_for_a_missing_value_and_lists_joined():
    assert _cell(None) == "" and _cell(["a", "b"]) == "a, b" and _cell(0) == "0"


def test_why_a_write_failed_is_the_systems_words_else_the_errors():
    assert _reason(OSError(28, "No space left on device")) == "No space left on device"
    assert _reason(OSError("quota")) == "quota"
    assert _reason(OSError()) == "OSError"


def test_the_parquet_file_has_one_typed_column_per_field(tmp_path):
    w = Writer(str(tmp_path / "out"))
    w.write(_row(**ROWS[0]))
    w.close()
    schema = pq.read_schema(tmp_path / "out" / "runs.parquet")
    move = ("list<element: struct<id: string, before_fate: string, before_stage: string, before_reason: string, "
            "after_fate: string, after_stage: string, after_reason: string>>")
    strings = "list<element: string>"
    expected = {"index": "int64", "source": "string", "run_id": "string", "time": "string", "query": "string",
                "baseline": "string", "candidates": "int64", "changed": "bool", "reordered": "bool",
                "kept_before": "int64", "kept_after": "int64", "newly_dropped": move, "newly_kept": move,
                "moved": move, "evidence_tokens_before": "int64", "evidence_tokens_after": "int64",
                "prompt_tokens_before": "int64", "prompt_tokens_after": "int64", "tokens_saved": "int64",
                "cited_labels": strings, "cited_ids": strings, "lost_labels": strings, "lost_ids": strings,
                "regression": "bool", "findings_checked": "bool", "findings_before": strings,
                "findings_after": strings, "findings_gone": strings, "findings_new": strings}
    assert [(f.name, str(f.type)) for f in schema] == list(expected.items())
    assert tuple(schema.names) == COLUMNS


class _Small(Writer):
    GROUP = 2


def test_rows_are_written_a_row_group_at_a_time_and_both_files_hold_every_row(tmp_path):
    out = tmp_path / "out"
    w = _Small(str(out))
    rows = [_row(index=i, query=f"café {i}") for i in range(5)]
    held = []
    for row in rows:
        w.write(row)
        held.append(len(w.rows))
    assert held == [1, 0, 1, 0, 1]  # a group is written as soon as it is full
    w.close()
    w.close()  # closing twice is harmless
    f = pq.ParquetFile(out / "runs.parquet")
    assert f.metadata.num_row_groups == 3 and f.metadata.num_rows == 5
    assert f.read().column("query").to_pylist() == [f"café {i}" for i in range(5)]
    text = (out / "runs.jsonl").read_text(encoding="utf-8")
    assert "café 0" in text  # written as the text it is, not \u-escaped
    assert [json.loads(line) for line in text.splitlines()] == rows


def test_the_report_files_are_written_and_a_failed_one_is_named_while_the_other_is_written(tmp_path):
    out = tmp_path / "out"
    w = Writer(str(out))
    w.close()
    report = {"runs": 1, "query": "naïve"}
    assert w.finish(report, "# Replay report\n") == []
    assert (out / "report.json").read_text(encoding="utf-8") == '{\n  "runs": 1,\n  "query": "naïve"\n}\n'
    assert (out / "report.md").read_text(encoding="utf-8") == "# Replay report\n"
    os.remove(out / "report.json")
    os.mkdir(out / "report.json")  # cannot be written as a file
    failed = w.finish(report, "# again\n")
    assert failed == [f"{out / 'report.json'}: cannot write the file (Is a directory)"]
    assert (out / "report.md").read_text(encoding="utf-8") == "# again\n"


def test_an_out_that_cannot_be_a_folder_or_written_is_one_line_naming_it(tmp_path):
    a_file = tmp_path / "taken"
    a_file.write_text("x")
    with pytest.raises(InputError) as err:
        Writer(str(a_file))
    assert str(err.value) == f"{a_file}: is a file; --out needs a folder (it is made if missing)"
    with pytest.raises(InputError) as err:
        Writer(str(a_file / "below"))
    assert str(err.value) == f"{a_file / 'below'}: cannot make the output folder (Not a directory)"
    for name in ("runs.jsonl", "runs.parquet"):
        out = tmp_path / f"blocked-{name}"
        os.makedirs(out / name)
        with pytest.raises(InputError) as err:
            Writer(str(out))
        # (Arrow words its own reason, naming the file again)
        assert str(err.value).startswith(f"{out / name}: cannot write the file (") and "Is a directory" in str(err.value)


# --- the meter and the loop (ctxcore/replay/run.py) ------------------------------------------------------------


def _items(ends):
    return [Item(i, f"log.jsonl:{i + 1}", "line", "{}", done_bytes=b) for i, b in enumerate(ends)]


def test_the_meter_reports_runs_unreadable_and_the_share_of_the_input_read():
    states, stream = [], io.StringIO()
    meter = Progress(400, stream, states.append, every=0)
    assert [it.index for it in meter.read(_items((100, 200, 400)))] == [0, 1, 2]
    assert (meter.read_runs, meter.all_read, meter.ends) == (3, True, {0: 100, 1: 200, 2: 400})
    meter.step({"index": 1, "ok": False})
    meter.step({"index": 0, "ok": True})
    meter.step({"index": 7, "ok": True})  # a run the meter did not read: nothing known of how far it is
    meter.finish()
    assert [(s["runs"], s["unreadable"], s["fraction"]) for s in states] == [(1, 1, 0.5), (2, 1, 0.25), (3, 1, 0.0),
                                                                           (3, 1, 1.0)]
    assert states[0]["eta"] > 0 and states[1]["eta"] > states[0]["eta"] / 2 and states[2]["eta"] is None
    assert states[3]["eta"] == 0.0 and meter.ends == {2: 400}
    lines = stream.getvalue().splitlines()
    assert [re.sub(r"[\d.]+ runs/s", "R runs/s", line) for line in lines] == [
        "replay: 1 runs (1 unreadable), R runs/s, ETA 0s", "replay: 2 runs (1 unreadable), R runs/s, ETA 0s",
        "replay: 3 runs (1 unreadable), R runs/s", "replay: 3 runs (1 unreadable), R runs/s, ETA 0s — done"]


def test_the_meter_speaks_at_most_once_a_period_but_always_at_the_end():
    states = []
    meter = Progress(0, None, states.append, every=3600)  # an empty input counts as one byte: no division by 0
    meter.step({"index": 0, "ok": True})
    assert states == []
    meter.finish()
    assert [(s["runs"], s["fraction"], s["eta"]) for s in states] == [(1, 1.0, 0.0)]


@pytest.mark.parametrize("seconds, text", [(0, "0s"), (59.4, "59s"), (59.6, "1m00s"), (60, "1m00s"), (125, "2m05s"),
                                           (3601, "60m01s")])
def test_time_left_reads_in_minutes_and_seconds(seconds, text):
    assert _duration(seconds) == text


def test_an_interruption_counts_the_runs_done_and_reads_on_for_the_runs_in_the_log():
    summary = Summary()
    summary.add(_ok(_row()))
    summary.add({"index": 1, "source": "s", "ok": False, "reason": "bad"})
    meter = Progress(1, None)
    rest = meter.read(_items((1, 2, 3, 4, 5)))
    next(rest), next(rest)
    assert _interrupted(summary, meter, rest) == {"runs": 2, "of": 5, "of_exact": True}

    def broken():
        yield from _items((1, 2, 3))
        raise KeyboardInterrupt  # a second Ctrl-C while the rest is read

    meter = Progress(1, None)
    assert _interrupted(summary, meter, meter.read(broken())) == {"runs": 2, "of": 3, "of_exact": False}


def test_a_replay_in_process_writes_every_row_in_order_and_its_report(tmp_path):
    seen, states = [], []
    report = replay([SAMPLE], {"budget": 250}, engine="inprocess", out=str(tmp_path / "out"), batch=7,
                    with_findings=False, on_row=seen.append, on_progress=states.append)
    assert [r["index"] for r in seen] == list(range(30)) and all(r["ok"] for r in seen)
    rows = [json.loads(line) for line in (tmp_path / "out" / "runs.jsonl").read_text(encoding="utf-8").splitlines()]
    assert rows == [r["row"] for r in seen]
    assert report["runs"] == 30 and report["changed"] == sum(r["changed"] for r in rows)
    assert report["tokens"]["saved_total"] == sum(r["tokens_saved"] for r in rows)
    assert json.loads((tmp_path / "out" / "report.json").read_text(encoding="utf-8")) == report
    assert pq.ParquetFile(tmp_path / "out" / "runs.parquet").metadata.num_rows == 30
    assert states[-1]["fraction"] == 1.0 and states[-1]["runs"] == 30 and "interrupted" not in report
    assert report["settings"] == {"new": {"budget": 250}, "baseline": None} and report["findings"]["compared"] is False


def test_a_replay_without_a_folder_keeps_its_rows_to_itself_and_a_report_file_not_written_is_named(tmp_path):
    stream, rows = io.StringIO(), []
    report = replay([SAMPLE], {"budget": 250}, {"budget": 400}, engine="inprocess", progress=stream,
                    on_row=rows.append)
    assert len(rows) == 30 and report["settings"]["baseline"] == {"budget": 400} and report["findings"]["compared"]
    assert stream.getvalue().splitlines()[-1].startswith("replay: 30 runs (0 unreadable), ")
    assert stream.getvalue().endswith(" — done\n") and "unwritten" not in report
    out = tmp_path / "out"
    os.makedirs(out / "report.md")  # a folder where the Markdown report goes
    report = replay([SAMPLE], {"budget": 250}, engine="inprocess", out=str(out), with_findings=False)
    assert report["unwritten"] == [f"{out / 'report.md'}: cannot write the file (Is a directory)"]
    assert json.loads((out / "report.json").read_text(encoding="utf-8"))["runs"] == 30


def test_ctrl_c_keeps_the_runs_done_in_the_rows_and_the_report(tmp_path):
    def stop_at_the_third(result):
        if result["index"] == 2:
            raise KeyboardInterrupt

    states = []
    report = replay([SAMPLE], {"budget": 250}, engine="inprocess", out=str(tmp_path / "out"), batch=2,
                    with_findings=False, on_row=stop_at_the_third, on_progress=states.append)
    assert report["interrupted"] == {"runs": 3, "of": 30, "of_exact": True}
    assert report["runs"] == 3 and all(s["fraction"] < 1.0 for s in states)  # the meter never got to "done"
    rows = (tmp_path / "out" / "runs.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(rows) == 3  # counted and written together
    md = (tmp_path / "out" / "report.md").read_text(encoding="utf-8")
    assert "**Interrupted after 3 of 30 runs** (Ctrl-C)" in md


# --- one run's row (ctxcore/replay/run.py: compare, policy_settings, replay_one) ----------------------------------

_TEXTS = {"a": "Refunds take 14 days from the day the parcel is returned.",
          "b": "A receipt is needed for every refund of a card payment.",
          "e": "Shipping is free for orders over 50 EUR in the EU."}


def _set(e_score):
    return (Candidate("a", _TEXTS["a"], score=0.9, doc_id="d", chunk_index=0),
            Candidate("b", _TEXTS["b"], score=0.8, doc_id="d", chunk_index=1),
            Candidate("c", _TEXTS["a"], score=0.7),  # an exact copy of a
            Candidate("e", _TEXTS["e"], score=e_score))


def test_a_passage_is_in_the_prompt_when_kept_or_carried_by_the_kept_passage_it_joined_or_copies():
    shown = build(_set(0.6), "refund?", Config(merge_adjacent=True))
    assert [(d.id, d.fate, d.merged_into or d.duplicate_of) for d in shown.decisions] == [
        ("a", "kept", None), ("b", "merged", "a"), ("c", "exact_duplicate", "a"), ("e", "kept", None)]
    assert _present(shown) == {"a": True, "b": True, "c": True, "e": True}
    # e outranks the merged a+b and takes the one place: b and c go with their head
    cut = build(_set(0.95), "refund?", Config(merge_adjacent=True, max_passages=1))
    assert [(d.id, d.fate) for d in cut.decisions] == [("a", "over_limit"), ("b", "merged"),
                                                        ("c", "exact_duplicate"), ("e", "kept")]
    assert _present(cut) == {"a": False, "b": False, "c": False, "e": True}


def test_a_moved_fate_names_both_sides_stage_and_reason_and_a_changed_budget_compares_findings():
    loaded = Loaded(_set(0.6), "refund?", config={"merge_adjacent": True})
    row = compare(loaded, {"max_passages": 1})
    base, after = loaded.build(), loaded.build(loaded.settings(max_passages=1))
    assert row["baseline"] == "file" and [m["id"] for m in row["moved"]] == ["e"]
    b, a = base.decision("e"), after.decision("e")
    assert row["moved"] == row["newly_dropped"] == [
        {"id": "e", "before_fate": b.fate, "before_stage": b.stage, "before_reason": b.reason,
         "after_fate": a.fate, "after_stage": a.stage, "after_reason": a.reason}]
    assert (b.fate, a.fate) == ("kept", "over_limit") and b.reason != a.reason
    assert (row["changed"], row["reordered"]) == (True, False)  # a passage dropped; the rest kept their order
    same = compare(loaded, {})
    assert (same["changed"], same["findings_checked"], same["moved"]) == (False, False, [])
    roomier = compare(loaded, {"budget": base.budget.docs + 500})  # same fates, another budget
    assert (roomier["changed"], roomier["findings_checked"]) == (False, True)


def _span_run():
    folder = tempfile.mkdtemp(prefix="span-run-")
    path = os.path.join(folder, "spans.jsonl")
    replaylog.generate_spans(path, 10, seed=2, candidates=(12, 16), sentences=(1, 2))
    return [load_item(it)[0] for it in items([path])]


def test_a_span_runs_citations_are_read_against_the_prompt_that_was_sent():
    runs = _span_run()
    cited = [(loaded, compare(loaded, {"max_passages": 4}, with_findings=False)) for loaded in runs]
    assert all(row["baseline"] == "policy" for _, row in cited)
    numbered = [(loaded, row) for loaded, row in cited if row["cited_labels"]]
    assert numbered  # the logged answers cite the sent passages by their numbers, [1]..[6]
    for loaded, row in numbered:
        sent = reconstruct(loaded.build(), loaded.logged.prompt_text)
        number = {p.label.strip("[]"): p.id for p in sent.passages if p.label}
        assert row["cited_ids"] == [number[label] for label in row["cited_labels"]]
        assert all(label.isdigit() for label in row["cited_labels"])
    lost = [row["lost_labels"] for _, row in numbered if row["regression"]]
    assert lost and all(int(label) > 4 for labels in lost for label in labels)  # four places left: [5], [6] lost


def test_the_ground_of_a_saved_trace_is_its_stored_policy_else_one_inferred_else_none(tmp_path):
    fixture = Path(ROOT) / "tests" / "fixtures" / "policy" / "threshold_oi_nested.json"
    trace = sent_module.attach(load_file(fixture).build())
    inferred = dict(policy_module.infer(trace, reproduce=False).settings)
    assert inferred["max_passages"] == 4 and inferred["min_score"] == 0.5
    unstored = tmp_path / "unstored.json"
    unstored.write_text(trace.to_json(), encoding="utf-8")
    assert policy_settings(load(str(unstored))) == inferred
    stored = policy_module.attach(trace)
    data = json.loads(stored.to_json())
    data["logged"]["policy"]["config"] = {"max_passages": 2}  # what the saved trace says, whatever inference says
    kept = tmp_path / "stored.json"
    kept.write_text(json.dumps(data), encoding="utf-8")
    assert policy_settings(load(str(kept))) == {"max_passages": 2}
    plain = tmp_path / "plain.json"
    plain.write_text(build(_set(0.6), "refund?").to_json(), encoding="utf-8")
    assert policy_settings(load(str(plain))) == {}


def test_one_run_that_cannot_be_read_is_a_row_saying_why_and_a_baseline_given_is_the_baseline(tmp_path):
    bad = Item(4, "log.jsonl:5", "line", '{"candidates": [{"id": 1}]', run_id="r5")
    got = replay_one(bad, {"budget": 100})
    assert (got["index"], got["source"], got["ok"], got["run_id"]) == (4, "log.jsonl:5", False, "r5")
    assert got["reason"] and "log.jsonl:5" not in got["reason"]
    line = json.dumps({"query": "refund?", "candidates": [{"id": c.id, "text": c.text, "score": c.score}
                                                          for c in _set(0.6)]})
    good = Item(0, "log.jsonl:1", "line", line)
    row = replay_one(good, {"max_passages": 1}, {"max_passages": 2}, with_findings=False)["row"]
    assert (row["baseline"], row["kept_before"], row["kept_after"], row["findings_checked"]) == ("config", 2, 1, False)
    assert replay_batch([bad, good], {"max_passages": 1}, {"max_passages": 2}, False)[1]["row"] == row
    # findings are compared unless asked off, by the batch as by the run
    assert replay_one(good, {"max_passages": 1})["row"]["findings_checked"] is True
    assert replay_batch([good], {"max_passages": 1})[0]["row"]["findings_checked"] is True
    odd = replay_one(Item(9, "log.jsonl:10", "family", ("no such family", [])), {})
    assert (odd["ok"], odd["run_id"], odd["reason"]) == (False, None, "KeyError: 'no such family'")


def test_a_near_copy_is_not_in_the_prompt_though_its_twin_is():
    near = _set(0.6) + (Candidate("f", _TEXTS["e"].replace("EU.", "EU!") + " Always.", score=0.5),)
    trace = build(near, "refund?", Config(near_dup=0.5))
    assert (trace.decision("f").fate, trace.decision("f").duplicate_of) == ("near_duplicate", "e")
    assert _present(trace)["f"] is False and _present(trace)["e"] is True


def test_counts_of_one_value_add_up_in_the_percentiles():
    s = Summary()
    for saved in (0, 0, 0, 40):
        s.add(_ok(_row(tokens_saved=saved, evidence_tokens_before=100 + saved)))
    got = s.report({})["tokens"]
    assert got["saved_per_run"]["p75"] == 0 and got["saved_per_run"]["p90"] == 40
    assert got["evidence_saved_per_run"]["p75"] == 0 and got["evidence_saved_per_run"]["p100"] == 40


def test_the_time_left_is_the_time_so_far_scaled_by_what_is_left_to_read():
    states = []
    meter = Progress(400, None, states.append, every=0)
    list(meter.read(_items((100, 300, 800))))
    for i in range(3):
        meter.step({"index": i, "ok": True})
    for state, share in zip(states, (0.25, 0.75, 1.0)):
        elapsed = state["runs"] / state["rate"]
        assert state["fraction"] == share  # a run ending past the bytes counted at the start is all of it
        assert state["eta"] == pytest.approx(elapsed * (1 - share) / share, rel=1e-9, abs=1e-12)
    one = []
    meter = Progress(0, None, one.append, every=0)
    list(meter.read(_items((1,))))
    meter.step({"index": 0, "ok": True})
    assert one[0]["fraction"] == 1.0  # an empty input counts as one byte


def test_runs_go_to_the_workers_in_batches_of_the_size_asked():
    assert list(_batches(iter(range(5)), 2)) == [[0, 1], [2, 3], [4]] and list(_batches(iter([]), 3)) == []


def test_an_answer_beside_a_given_baseline_is_read_against_the_runs_own_build():
    loaded = Loaded(_set(0.6), "refund?", logged=Logged("ctxcore", answer="As [S2] says, and [S9]."))
    own = loaded.build()
    row = compare(loaded, {"min_score": 0.85}, {"max_passages": 1}, with_findings=False)
    assert row["baseline"] == "config" and row["kept_before"] == 1  # the baseline keeps a alone; own: a, b, e
    assert (row["cited_labels"], row["cited_ids"]) == (["S2"], [own.kept()[1].id])
    assert row["lost_ids"] == [own.kept()[1].id] and row["regression"] is True


def test_a_saved_trace_is_its_own_baseline_and_a_given_baseline_leaves_a_span_runs_policy_aside(tmp_path):
    plain = tmp_path / "plain.json"
    plain.write_text(build(_set(0.6), "refund?").to_json(), encoding="utf-8")
    assert compare(load(str(plain)), {"max_passages": 1}, with_findings=False)["baseline"] == "trace"
    run = _span_run()[0]
    policy_row = compare(run, {"max_passages": 4}, with_findings=False)
    sent = reconstruct(run.build(), run.logged.prompt_text).passages
    assert policy_row["kept_before"] == len(sent) < len(run.candidates)  # the inferred policy keeps what was sent
    # newly dropped: left the prompt; a passage moving between two fates outside it is a move, not a drop
    assert len(policy_row["newly_dropped"]) == policy_row["kept_before"] - policy_row["kept_after"] > 0
    assert any(m["before_fate"] != "kept" for m in policy_row["moved"]) and not policy_row["newly_kept"]
    given = compare(run, {"max_passages": 4}, {}, with_findings=False)
    plain_after = run.build(run.settings(max_passages=4))
    assert (given["baseline"], given["prompt_tokens_after"]) == ("config", plain_after.prompt.tokens)
    assert given["prompt_tokens_before"] == run.build().prompt.tokens


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full, a device every write to fails")
def test_rows_that_cannot_be_written_name_the_rows_file(tmp_path):
    """runs.jsonl on a device that is always full: a row too long for the write buffer fails as it is written,
    a short one when the file is closed; each is one line naming runs.jsonl."""
    for size, at in ((20_000, "write"), (10, "close")):
        out = tmp_path / f"full-{at}"
        out.mkdir()
        (out / "runs.jsonl").symlink_to("/dev/full")
        w = Writer(str(out))
        with pytest.raises(InputError) as err:
            w.write(_row(query="x" * size))
            w.close()
        assert str(err.value) == f"{out / 'runs.jsonl'}: cannot write the file (No space left on device)"
