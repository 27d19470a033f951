"""Replaying a whole trace log (issue #17): the same rows whichever engine runs them, unreadable runs
reported while the rest go on, planted regressions found, every run of a multi-run export, bounded
flight, and the CLI."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from ctxcore.replay import engines as replay_engines
from ctxcore.io.formats import load_file
from ctxcore.replay import replay
from ctxcore.replay.read import expand, items, load_item
from ctxcore.replay.report import percentiles

from conftest import ROOT, cli

sys.path.insert(0, os.path.join(ROOT, "bench"))
import replaylog  # noqa: E402

TRACES = Path(ROOT) / "tests" / "fixtures" / "traces"
SAMPLE = Path(ROOT) / "sample_data" / "replay_log.jsonl"
NEW = {"max_passages": 3}


@pytest.fixture(scope="module")
def log(tmp_path_factory):
    """A generated log of 240 runs (20–30 candidates each); the run ids whose answer cites the weakest passage."""
    path = tmp_path_factory.mktemp("replay") / "log.jsonl"
    planted = replaylog.generate(str(path), 240, seed=5, candidates=(20, 30), sentences=(1, 3))
    return path, planted


def _rows(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "runs.jsonl").read_text(encoding="utf-8").splitlines()]


@pytest.fixture(scope="module")
def inprocess(log, tmp_path_factory):
    out = tmp_path_factory.mktemp("inprocess")
    report = replay([str(log[0])], NEW, out=str(out), engine="inprocess")
    return out, report


def _dask_available() -> bool:
    try:
        import distributed  # noqa: F401
    except ImportError:
        if os.environ.get("CI") == "true":  # CI installs requirements.txt, which includes requirements-dask.txt
            pytest.fail("Dask distributed is not installed (pip install -r requirements-dask.txt)")
        return False
    return True


def test_the_local_pool_the_process_and_a_dask_cluster_give_the_same_rows(log, inprocess, tmp_path):
    if not _dask_available():
        pytest.skip("Dask distributed is not installed: pip install -r requirements-dask.txt")
    out_a, report_a = inprocess
    rows = _rows(out_a)
    assert len(rows) == 240 and [r["index"] for r in rows] == list(range(240))  # the input order
    for engine in ("local", "dask"):  # dask: LocalCluster(n_workers=2, threads_per_worker=1, processes=True)
        out = tmp_path / engine
        report = replay([str(log[0])], NEW, out=str(out), engine=engine, workers=2, batch=7)
        assert (out / "runs.jsonl").read_bytes() == (out_a / "runs.jsonl").read_bytes(), engine
        assert report == report_a, engine
        assert json.loads((out / "report.json").read_text()) == json.loads((out_a / "report.json").read_text())


def test_the_dask_engine_runs_the_same_code_on_a_running_cluster_by_its_scheduler_address(log, tmp_path):
    if not _dask_available():
        pytest.skip("Dask distributed is not installed: pip install -r requirements-dask.txt")
    from distributed import LocalCluster

    head = tmp_path / "head.jsonl"
    head.write_text("\n".join(log[0].read_text(encoding="utf-8").splitlines()[:20]) + "\n", encoding="utf-8")
    here = replay([str(head)], NEW, out=str(tmp_path / "here"), engine="inprocess")
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        there = replay([str(head)], NEW, out=str(tmp_path / "there"), engine="dask",
                       scheduler=cluster.scheduler_address)
    assert there == here and here["runs"] == 20
    assert (tmp_path / "there" / "runs.jsonl").read_bytes() == (tmp_path / "here" / "runs.jsonl").read_bytes()


def test_the_parquet_file_holds_the_same_rows_as_the_jsonl(inprocess):
    pq = pytest.importorskip("pyarrow.parquet")
    out, _ = inprocess
    table = pq.read_table(out / "runs.parquet")
    assert table.to_pylist() == _rows(out)


def test_the_planted_regressions_are_found_and_listed_first(log, inprocess):
    path, planted = log
    out, report = inprocess
    assert planted and len(planted) == 48  # every fifth run of 240 cites its weakest passage
    assert [g["run_id"] for g in report["regressions"]] == planted
    assert report["regression_count"] == len(planted)
    by_id = {r["run_id"]: r for r in _rows(out)}
    for run_id in planted:
        row = by_id[run_id]
        assert row["regression"] and len(row["lost_ids"]) == 1
        assert row["lost_ids"][0] in [m["id"] for m in row["newly_dropped"]]
        assert row["lost_labels"] == row["cited_labels"]
    for run_id, row in by_id.items():
        if run_id not in planted:
            assert not row["regression"] and row["cited_ids"] and not row["lost_ids"], run_id
    md = (out / "report.md").read_text()
    assert md.index("## Likely regressions") < md.index("## Fates moved")
    assert planted[0] in md


def test_every_row_records_the_run_tokens_and_fates(inprocess):
    out, report = inprocess
    row = _rows(out)[0]
    assert row["run_id"] == "run-00000" and row["time"] == "2026-11-02T08:00:00Z" and row["query"]
    assert row["baseline"] == "trace"
    assert row["tokens_saved"] == row["prompt_tokens_before"] - row["prompt_tokens_after"]
    assert row["kept_after"] <= 3
    for m in row["newly_dropped"]:
        assert m["before_fate"] == "kept" and m["after_fate"] == "over_limit"
        assert "max_passages 3" in m["after_reason"] and m["before_reason"].startswith("rank ")
    assert report["runs"] == 240 and report["unreadable"] == []
    moves = {(m["from"], m["to"]): m for m in report["fate_moves"]}
    assert moves[("kept", "over_limit")]["candidates"] == sum(len(r["newly_dropped"]) for r in _rows(out))
    assert report["tokens"]["saved_total"] == sum(r["tokens_saved"] for r in _rows(out))


def test_unreadable_runs_are_reported_with_their_reason_and_the_rest_go_on(log, tmp_path):
    lines = log[0].read_text(encoding="utf-8").splitlines()[:5]
    broken = dict(json.loads(lines[3]))
    del broken["decisions"]
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join([lines[0], lines[1][: len(lines[1]) // 2], lines[2], json.dumps(broken), "",
                              lines[4]]) + "\n", encoding="utf-8")
    report = replay([str(bad), str(tmp_path / "missing.jsonl"), str(TRACES / "phoenix_no_retriever.json")],
                    NEW, out=str(tmp_path / "out"), engine="inprocess")
    assert report["runs"] == 3
    assert report["unreadable_count"] == 4
    reasons = {u["source"]: u["reason"] for u in report["unreadable"]}
    assert reasons[f"{bad}:2"].startswith("not valid JSON")
    assert reasons[f"{bad}:4"] == "field 'decisions': missing from the trace"
    assert reasons[str(tmp_path / "missing.jsonl")] == "no such file or directory"
    assert "no RETRIEVER or RERANKER span" in reasons[str(TRACES / "phoenix_no_retriever.json")]
    assert [r["run_id"] for r in _rows(tmp_path / "out")] == ["run-00000", "run-00002", "run-00004"]


def test_every_run_of_a_multi_run_span_export_is_replayed_once_each(tmp_path):
    path = TRACES / "phoenix_multi.jsonl"
    whole = load_file(path)
    assert len(whole.logged.traces) == 2
    runs = list(items([str(path)]))
    assert [r.run_id for r in runs] == list(whole.logged.traces)
    for run in runs:
        alone, run_id, _ = load_item(run)
        picked = load_file(path, trace_id=run_id)
        assert (alone.candidates, alone.query, alone.logged.prompt_text, alone.logged.answer) == \
               (picked.candidates, picked.query, picked.logged.prompt_text, picked.logged.answer)


def test_an_imported_run_is_compared_with_a_build_under_its_own_pipelines_policy(tmp_path):
    # written by hand from the fixture: the logged pipeline sent 3 of 4 passages (one per document, kb-207#1 cut),
    # so its policy is max_passages 3 in retrieval order; under it the replica keeps kb-112#0, kb-207#1, kb-207#2
    # and drops kb-118#0 at the passage limit. A docs budget of 4000 lifts no cut the pipeline made: nothing moves.
    # (Before the policy baseline this compared ctxcore's defaults with the logged prompt and reported
    # kb-207#1 cut -> kept and kb-207#2 not_sent -> kept for a budget change that changes neither.)
    report = replay([str(TRACES / "phoenix_truncated_prompt.json")], {"budget": 4000}, out=str(tmp_path / "a"),
                    engine="inprocess")
    (row,) = _rows(tmp_path / "a")
    assert row["baseline"] == "policy" and report["baselines"] == {"policy": 1}
    assert row["moved"] == [] and not row["changed"] and row["tokens_saved"] == 0
    replay([str(TRACES / "phoenix_truncated_prompt.json")], {"max_passages": 4}, out=str(tmp_path / "b"),
           engine="inprocess")
    (row,) = _rows(tmp_path / "b")
    assert [(m["id"], m["before_fate"], m["after_fate"]) for m in row["moved"]] == [("kb-118#0", "over_limit",
                                                                                      "kept")]
    assert [m["id"] for m in row["newly_kept"]] == ["kb-118#0"]


def test_a_baseline_config_equal_to_the_new_one_changes_nothing(log, tmp_path):
    first = tmp_path / "first.jsonl"
    first.write_text("\n".join(log[0].read_text(encoding="utf-8").splitlines()[:12]) + "\n", encoding="utf-8")
    report = replay([str(first)], NEW, NEW, out=str(tmp_path / "out"), engine="inprocess")
    assert report["runs"] == 12 and report["changed"] == 0 and report["fate_moves"] == []
    assert report["tokens"]["saved_per_run"]["p0"] == report["tokens"]["saved_per_run"]["p100"] == 0
    assert {r["baseline"] for r in _rows(tmp_path / "out")} == {"config"}
    assert all(not r["findings_checked"] for r in _rows(tmp_path / "out"))


def test_directories_and_globs_expand_in_name_order(tmp_path):
    (tmp_path / "b.json").write_text("{}")
    (tmp_path / "a.jsonl").write_text("{}")
    (tmp_path / "notes.txt").write_text("x")
    assert [p for p, _ in expand([str(tmp_path)])] == [str(tmp_path / "a.jsonl"), str(tmp_path / "b.json")]
    assert [p for p, _ in expand([str(tmp_path / "*.json*")])] == [str(tmp_path / "a.jsonl"), str(tmp_path / "b.json")]
    assert list(expand([str(tmp_path / "*.csv")])) == [(str(tmp_path / "*.csv"), "no file matches this pattern")]


def test_only_a_bounded_number_of_batches_is_in_flight():
    pulled = []

    def batches():
        for i in range(100):
            pulled.append(i)
            yield [i]

    seen = []
    for result in replay_engines.run(_echo, batches(), engine="local", workers=2):
        seen.append(result)
        assert len(pulled) - len(seen) <= 2 * 2 + 1  # read ahead of what is done by at most the window
    assert seen == [[i] for i in range(100)]


def _echo(batch):
    return batch


def test_percentiles_are_nearest_rank_over_the_histogram():
    from collections import Counter

    assert percentiles(Counter({1: 1, 2: 1, 3: 1, 4: 1}), (0, 25, 50, 75, 100)) == \
        {"p0": 1, "p25": 1, "p50": 2, "p75": 3, "p100": 4}
    assert percentiles(Counter(), (50,)) == {"p50": None}


def test_the_cli_replays_the_sample_log(tmp_path):
    code, out, err = cli("replay", SAMPLE, "--budget", "250", "--out", tmp_path, "--workers", "2")
    assert code == 0, err
    assert {p.name for p in tmp_path.iterdir()} == {"runs.parquet", "runs.jsonl", "report.json", "report.md"}
    report = json.loads((tmp_path / "report.json").read_text())
    # the sample log's figures, as the README shows them
    assert (report["runs"], report["changed"], report["regression_count"]) == (30, 15, 3)
    assert [g["run_id"] for g in report["regressions"]] == ["run-00009", "run-00014", "run-00019"]
    assert report["tokens"]["saved_total"] == 1506
    assert "runs/s" in err and "done" in err
    assert out.startswith("# Replay report")


def test_the_cli_refuses_bad_replay_arguments(tmp_path):
    code, _, err = cli("replay", SAMPLE)
    assert code == 2 and "give the new settings" in err
    code, _, err = cli("replay", SAMPLE, "--budget", "250", "--scheduler", "tcp://127.0.0.1:1")
    assert code == 2 and "--scheduler is for the dask engine" in err
    code, _, err = cli("replay", SAMPLE, "--budget", "250", "--workers", "0")
    assert code == 2 and "--workers" in err
    bad = tmp_path / "new.json"
    bad.write_text('{"budgte": 3}')
    code, _, err = cli("replay", SAMPLE, "--config", bad)
    assert code == 2 and "budgte" in err


def test_the_sample_log_is_small():
    assert SAMPLE.stat().st_size < 200 * 1024
    assert len(SAMPLE.read_text(encoding="utf-8").splitlines()) == 30


def test_an_export_that_lost_its_trace_links_is_replayed_run_by_run_as_loading_groups_it(tmp_path):
    """Every span its own trace: the replay reads the runs loading finds by time (two, each with all its spans),
    not one run per span holding a single span, and each run reads as loading the file by that run's id."""
    rows = [json.loads(line) for line in (TRACES / "phoenix_multi.jsonl").read_text(encoding="utf-8").splitlines()]
    for r in rows:
        r["context"]["trace_id"] = r["context"]["span_id"] + "0" * 17
        r["parent_id"] = None
    lost = tmp_path / "lost.jsonl"
    lost.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    runs = list(items([str(lost)]))
    assert len(runs) == 2 and [it.kind for it in runs] == ["family", "family"]
    whole = load_file(lost)
    for it, logged_run in zip(runs, whole.logged.runs):
        loaded, run_id, when = load_item(it)
        alone = load_file(lost, trace_id=logged_run["id"])
        assert run_id == logged_run["id"]
        assert (loaded.query, [c.id for c in loaded.candidates]) == (alone.query, [c.id for c in alone.candidates])
        assert loaded.logged.prompt_text == alone.logged.prompt_text and loaded.logged.prompt_text
        assert when == min(r["start_time"] for r in it.payload[1])  # the run's earliest span
    assert sum(len(it.payload[1]) for it in runs) == len(rows)  # every span in one run or the other
