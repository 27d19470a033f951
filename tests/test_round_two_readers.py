"""Readers that held up under issue #19 and broke in round two (issue #27): a small file that decodes
to gigabytes, a replay line of gigabytes, nests made of dots or of a JSON string, cycles of parents,
symlink loops and FIFOs in a log folder, dates Python cannot hold. Each is one clear line (or a
warning and the data kept), exit 2 in the CLI, and the memory stays small.

The hostile inputs are generated here (too big, or too odd, to commit)."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from ctxcore import InputError, load
from ctxcore.io.formats import parquet
from ctxcore.io.limits import MAX_BYTES, MAX_DECODED_BYTES, MAX_DEPTH, MAX_VALUES
from ctxcore.io.reading import decode
from ctxcore.replay.read import _bounded_lines, expand

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
np = pytest.importorskip("numpy")

ROOT = Path(__file__).resolve().parents[1]
TRACES = ROOT / "tests" / "fixtures" / "traces"
RSS_MB = 300  # peak memory of a CLI run that refuses a bomb


def cli(*args: str, timeout: float = 120) -> tuple[int, str, str, float]:
    """(exit status, stdout, stderr, peak RSS in MB) of ``python -m ctxcore ARGS``, measured by
    /usr/bin/time: the child's own peak (a child forked straight from pytest would count pytest's pages)."""
    with tempfile.NamedTemporaryFile("r") as peak:
        child = subprocess.Popen(["/usr/bin/time", "-f", "%M", "-o", peak.name, sys.executable, "-m", "ctxcore", *args],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT, start_new_session=True)
        try:
            out, err = child.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(child.pid, signal.SIGKILL)
            child.communicate()
            pytest.fail(f"ctxcore {' '.join(args)} did not finish in {timeout}s")
        lines = peak.read().split()
        return child.returncode, out.decode(), err.decode(), int(lines[-1]) / 1024


# --------------------------------------------------------------------------- 1. decoded-size bombs

BIG = 20_000  # characters of the one value every row shares


def parquet_bomb(path: Path, rows: int = 100_000) -> Path:
    """A Phoenix-shaped table whose every row holds the same 20 KB text through one dictionary entry:
    about 160 KB on disk, 2 GB once each row's value is decoded. Written with no Arrow schema, so a
    reader gets plain text columns, as from any other parquet writer."""
    zeros = pa.array(np.zeros(rows, dtype=np.int32))
    table = pa.table({"context.span_id": pa.array([f"{i:016x}" for i in range(rows)]),
                      "span_kind": pa.DictionaryArray.from_arrays(zeros, pa.array(["RETRIEVER"])),
                      "attributes.input.value": pa.DictionaryArray.from_arrays(zeros, pa.array(["x" * BIG]))})
    pq.write_table(table, path, compression="zstd", store_schema=False)
    return path


def test_a_parquet_dictionary_bomb_is_one_line_in_small_memory(tmp_path):
    bomb = parquet_bomb(tmp_path / "spans.parquet")
    assert bomb.stat().st_size < 300_000
    code, out, err, rss = cli("inspect", str(bomb))
    # 100,000 rows x (20,000 + 8) + span ids 100,000 x (16 + 8) + kinds 100,000 x (9 + 8) bytes = 1,912 MB
    assert (code, out, err) == (2, f"{bomb}: the table would decode to 1,912 MB; the limit is 256 MB (a small "
                                   f"compressed file can repeat one value many times) (detected format: "
                                   f"phoenix-parquet)\n", "")
    assert rss < RSS_MB, rss
    code, out, err, rss = cli("build", str(bomb))
    assert (code, out) == (2, "") and err.count("\n") == 1 and "the limit is 256 MB" in err and rss < RSS_MB


def test_a_bomb_inside_a_list_of_documents_is_counted_too(tmp_path):
    """Each row's 50 documents all point at one 20 KB dictionary value: 2,000 rows decode to 2 GB."""
    rows, per = 2_000, 50
    content = pa.DictionaryArray.from_arrays(pa.array(np.zeros(rows * per, dtype=np.int32)), pa.array(["y" * BIG]))
    docs = pa.ListArray.from_arrays(pa.array(np.arange(0, rows * per + 1, per, dtype=np.int32)),
                                    pa.StructArray.from_arrays([content], ["document.content"]))
    table = pa.table({"context.span_id": pa.array([f"{i:016x}" for i in range(rows)]),
                      "span_kind": pa.array(["RETRIEVER"] * rows), "attributes.retrieval.documents": docs})
    pq.write_table(table, tmp_path / "docs.parquet", compression="zstd", store_schema=False)
    code, out, err, rss = cli("inspect", str(tmp_path / "docs.parquet"))
    assert code == 2 and out.count("\n") == 1 and "the table would decode to 1,9" in out and rss < RSS_MB, (out, rss)


def _small_table(path: Path) -> Path:
    """100 rows: ids of 16 characters, the kind RETRIEVER, one 1,000-character text shared by all."""
    zeros = pa.array(np.zeros(100, dtype=np.int32))
    pq.write_table(pa.table({"context.span_id": pa.array([f"{i:016x}" for i in range(100)]),
                             "span_kind": pa.array(["RETRIEVER"] * 100),
                             "attributes.input.value": pa.DictionaryArray.from_arrays(zeros, pa.array(["q" * 1000])),
                             "status_message": pa.array(["s" * 5000] * 100)}),  # a column no span is read from
                   path, compression="zstd", store_schema=False)
    return path


# decoded: ids 100 x (16 + 8) = 2,400; kinds 100 x (9 + 8) = 1,700; text 100 x (1,000 + 8) = 100,800
SMALL_DECODED = 104_900


@pytest.mark.parametrize("limit, loads", [(SMALL_DECODED, True), (SMALL_DECODED - 1, False)])
def test_the_decoded_size_counts_each_row_of_a_shared_value(tmp_path, monkeypatch, limit, loads):
    raw = _small_table(tmp_path / "small.parquet").read_bytes()
    monkeypatch.setattr(parquet, "MAX_DECODED_BYTES", limit)
    if loads:
        rows, columns = parquet.records(raw, "small.parquet")
        assert len(rows) == 100 and rows[7] == {"context.span_id": f"{7:016x}", "span_kind": "RETRIEVER",
                                                "attributes.input.value": "q" * 1000}
        assert columns == ["context.span_id", "span_kind", "attributes.input.value", "status_message"]
    else:
        with pytest.raises(InputError) as err:
            parquet.records(raw, "small.parquet")
        assert str(err.value) == ("small.parquet: the table would decode to 0 MB; the limit is 0 MB (a small "
                                  "compressed file can repeat one value many times)")


def test_the_metadata_refuses_before_decoding_when_the_pages_alone_are_too_big(tmp_path, monkeypatch):
    raw = _small_table(tmp_path / "small.parquet").read_bytes()
    monkeypatch.setattr(parquet, "MAX_DECODED_BYTES", 1024)
    with pytest.raises(InputError) as err:
        parquet.records(raw, "small.parquet")
    assert "would decode to at least 0 MB; the limit is 0 MB" in str(err.value)


def test_the_new_limits_are_in_the_readme_table():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    table = readme[readme.index("## Limits"):readme.index("\n## ", readme.index("## Limits") + 5)]
    assert MAX_DECODED_BYTES == 256 * 2**20 and "| 256 MB | `ctxcore/io/limits.py` `MAX_DECODED_BYTES` |" in table
    assert f"| {MAX_VALUES:,} | `ctxcore/io/limits.py` `MAX_VALUES` |" in table
    assert "| one line of a replayed JSONL log | 64 MB (`MAX_BYTES`) |" in table and MAX_BYTES == 64 * 2**20


def test_a_json_text_of_empty_objects_is_refused_before_parsing(tmp_path):
    """60 MB of ``{},`` parsed into 21 million dicts took 1.8 GB."""
    bomb = tmp_path / "objects.json"
    n = (60 * 2**20) // 3
    bomb.write_bytes(b"[" + b"{}," * (n - 1) + b"{}]")
    code, out, err, rss = cli("build", str(bomb))
    assert (code, out) == (2, "")
    assert err == (f"error: {bomb}: {2 * n:,} values (commas, brackets and lines); the limit is 4,000,000 (a text "
                   f"this dense takes many times its size in memory once parsed)\n")
    assert rss < RSS_MB, rss


@pytest.mark.parametrize("commas, refused", [(MAX_VALUES, False), (MAX_VALUES + 1, True)])
def test_the_value_count_edge(commas, refused):
    text = b"," * commas
    if refused:
        with pytest.raises(InputError) as err:
            decode(text, "dense.csv")
        assert str(err.value).startswith(f"dense.csv: {MAX_VALUES + 1:,} values (commas, brackets and lines); "
                                         f"the limit is {MAX_VALUES:,}")
    else:
        assert len(decode(text, "dense.csv")) == MAX_VALUES


def test_the_app_shows_the_parquet_bomb_as_one_error_line(tmp_path):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.run()
    at.file_uploader(key="dbg.upload").set_value(("spans.parquet", parquet_bomb(tmp_path / "b.parquet").read_bytes(),
                                                  "application/octet-stream"))
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    errors = {str(e.value).replace("\\", "") for e in at.error}  # the load and the "About this file" panel say it
    assert errors == {"spans.parquet: the table would decode to 1,912 MB; the limit is 256 MB (a small compressed "
                      "file can repeat one value many times)"}


# --------------------------------------------------------------------------- 2. a replay line of gigabytes

RUN = {"query": "Who approves a refund?", "candidates": [{"id": "a", "text": "Refunds above $400 need a lead."}]}


def test_a_three_gigabyte_replay_line_is_unreadable_and_the_replay_goes_on(tmp_path):
    (tmp_path / "log").mkdir()
    log = tmp_path / "log" / "runs.jsonl"
    line = json.dumps(RUN).encode() + b"\n"
    with open(log, "wb") as f:
        f.write(line + b'{"query": "')
        f.truncate(f.tell() + 3 * 2**30)  # sparse: 3 GB of NUL bytes that take no disk
        f.seek(0, os.SEEK_END)
        f.write(b'"}\n' + line)
    huge = 3 * 2**30 + len(b'{"query": "') + len(b'"}\n')
    code, out, err, rss = cli("replay", str(log), "--budget", "500", "--engine", "inprocess", "--out",
                              str(tmp_path / "out"))
    assert code == 0, err
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["unreadable"] == [{"source": f"{log}:2", "reason": f"the line is {huge / 1e6:.1f} MB; the limit is "
                                     f"{MAX_BYTES // 2**20} MB a line", **{k: v for k, v in report["unreadable"][0].items()
                                                                         if k not in ("source", "reason")}}]
    assert report["unreadable"][0]["reason"] == "the line is 3221.2 MB; the limit is 64 MB a line"
    sources = [json.loads(r)["source"] for r in (tmp_path / "out" / "runs.jsonl").read_text().splitlines()]
    assert sources == [f"{log}:1", f"{log}:3"]
    assert rss < RSS_MB, rss


MB = 2**20


@pytest.mark.parametrize("limit", [5, 3 * MB], ids=["short", "past one chunk"])
def test_the_line_limit_edge(limit):
    """A line of ``limit`` bytes (its newline aside) is read whole, one byte more is measured and skipped,
    and the next line is read where it starts."""
    text = b"a" * limit + b"\n" + b"b" * (limit + 1) + b"\n" + b"c" * limit
    got = [(n, raw if raw is None else raw[:1] + str(len(raw)).encode(), size)
           for n, raw, size in _bounded_lines(io.BufferedReader(io.BytesIO(text)), limit)]
    assert got == [(1, b"a%d" % (limit + 1), limit + 1), (2, None, limit + 2), (3, b"c%d" % limit, limit)]


def test_a_log_file_not_utf8_or_too_big_is_one_unreadable_row(tmp_path):
    """Already so before round two; kept here beside the line case."""
    log = tmp_path / "log"
    log.mkdir()
    (log / "a.json").write_text(json.dumps(RUN))
    (log / "b.json").write_bytes(b'\xff\xfe{"a": 1}')
    with open(log / "c.json", "wb") as f:
        f.truncate(MAX_BYTES + 1)
    code, out, err, _ = cli("replay", str(log), "--budget", "500", "--engine", "inprocess", "--out",
                            str(tmp_path / "out"))
    assert code == 0, err
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert [(u["source"], u["reason"]) for u in report["unreadable"]] == [
        (str(log / "b.json"), "line 1: not UTF-8 text (byte 0xff at offset 0); save the file as UTF-8"),
        (str(log / "c.json"), "the file is 67.1 MB; the limit is 64 MB")]


# --------------------------------------------------------------------------- 3. nests of dots and of JSON strings

def _span(attributes) -> dict:
    return {"span_kind": "RETRIEVER", "context.span_id": "a", "context.trace_id": "t", "attributes": attributes}


@pytest.mark.parametrize("name, attributes, expected", [
    ("dots.json", {"a" + ".a" * 5000: 1},
     "field 'spans[0].attributes." + "a." * 28 + "a...': attributes nested more than 100 levels deep (each part of a "
     "dotted key is a level)"),
    ("string.json", "[" * 50_000 + "]" * 50_000,
     "field 'spans[0].attributes': its JSON string: JSON is nested too deeply to read"),
    ("deep.json", "[" * 150 + "]" * 150,
     "field 'spans[0].attributes" + "[0]" * 19 + "[...': its JSON string: JSON is nested too deeply to read (more "
     "than 100 levels)"),
])
def test_a_nest_of_dots_or_of_a_json_string_is_one_line(tmp_path, name, attributes, expected):
    path = tmp_path / name
    path.write_text(json.dumps([_span(attributes)]))
    code, out, err, _ = cli("build", str(path))
    assert (code, out) == (2, "")
    assert err.count("\n") == 1 and err.startswith(f"error: {path}, "), err
    assert err == f"error: {path}, {expected}\n"


@pytest.mark.parametrize("parts, refused", [(MAX_DEPTH, False), (MAX_DEPTH + 1, True)])
def test_the_dotted_key_depth_edge(parts, refused):
    key = ".".join(["k"] * parts)
    raw = json.dumps([_span({key: 1, "retrieval.documents.0.document.content": "Refunds need a lead."})]).encode()
    if refused:
        with pytest.raises(InputError, match="attributes nested more than 100 levels deep"):
            load(raw, name="keys.json")
    else:
        assert [c.text for c in load(raw, name="keys.json").candidates] == ["Refunds need a lead."]


# --------------------------------------------------------------------------- 4. cycles of parents

def _otlp(edit) -> bytes:
    lines = []
    for line in (TRACES / "otlp_openinference.jsonl").read_text().splitlines():
        data = json.loads(line)
        for rs in data["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                for s in ss["spans"]:
                    s["parentSpanId"] = edit.get(s["spanId"], s.get("parentSpanId"))
        lines.append(json.dumps(data))
    return ("\n".join(lines) + "\n").encode()


def _mlflow(edit) -> bytes:
    data = json.loads((TRACES / "mlflow_trace.json").read_text())
    for s in data["data"]["spans"]:
        s["parent_span_id"] = edit.get(s["span_id"], s["parent_span_id"])
    return json.dumps(data).encode()


def _langfuse(edit) -> bytes:
    data = json.loads((TRACES / "langfuse_trace.json").read_text())
    for o in data["observations"]:
        o["parentObservationId"] = edit.get(o["id"], o.get("parentObservationId"))
    return json.dumps(data).encode()


R_OTLP, ROOT_OTLP = "1111aaaa2222bbbb", "a0a0a0a0b1b1b1b1"
R_ML, ROOT_ML = "7a6b5c4d3e2f1a0b", "8f1e2d3c4b5a6978"

CYCLES = [
    ("otlp self", "x.jsonl", _otlp, {R_OTLP: R_OTLP}, "the RETRIEVER 'VectorStoreRetriever' span: its parent "
     f"{R_OTLP} closes a cycle of parents; read as a root"),
    ("otlp pair", "x.jsonl", _otlp, {ROOT_OTLP: R_OTLP}, "the RETRIEVER 'VectorStoreRetriever' span: its parent "
     f"{ROOT_OTLP} closes a cycle of parents; read as a root"),
    ("mlflow self", "x.json", _mlflow, {R_ML: R_ML}, "the RETRIEVER 'retrieve_docs' span: its parent "
     f"{R_ML} closes a cycle of parents; read as a root"),
    ("mlflow pair", "x.json", _mlflow, {ROOT_ML: R_ML}, "the RETRIEVER 'retrieve_docs' span: its parent "
     f"{ROOT_ML} closes a cycle of parents; read as a root"),
    ("langfuse self", "x.json", _langfuse, {"obs-2": "obs-2"},
     "RETRIEVER 'kb-search': its parent obs-2 closes a cycle of parents; read as a root"),
    ("langfuse pair", "x.json", _langfuse, {"obs-1": "obs-2"},
     "RETRIEVER 'kb-search': its parent obs-1 closes a cycle of parents; read as a root"),
]


@pytest.mark.parametrize("case, name, make, edit, warning", CYCLES, ids=[c[0] for c in CYCLES])
def test_a_cycle_of_parents_keeps_the_retriever_and_warns(case, name, make, edit, warning):
    plain = load(make({}), name=name)
    got = load(make(edit), name=name)
    assert [c.id for c in got.candidates] == [c.id for c in plain.candidates] and got.candidates
    assert warning in [str(w) for w in got.warnings]
    assert not any("cycle" in str(w) for w in plain.warnings)


# --------------------------------------------------------------------------- 5. symlink loops and FIFOs

def test_a_symlink_loop_counts_each_file_once(tmp_path):
    log = tmp_path / "log"
    (log / "sub").mkdir(parents=True)
    (log / "sub" / "a.json").write_text(json.dumps(RUN))
    (log / "sub" / "up").symlink_to("..")
    (log / "b.json").symlink_to(log / "sub" / "a.json")
    assert list(expand([f"{log}/**/*.json", str(log)])) == [(str(log / "b.json"), None)]
    code, out, err, _ = cli("replay", f"{log}/**/*.json", "--budget", "500", "--engine", "inprocess",
                            "--out", str(tmp_path / "out"))
    assert code == 0, err
    assert len((tmp_path / "out" / "runs.jsonl").read_text().splitlines()) == 1


def test_a_fifo_in_a_log_folder_is_listed_as_skipped_not_opened(tmp_path):
    log = tmp_path / "log"
    log.mkdir()
    (log / "a.json").write_text(json.dumps(RUN))
    os.mkfifo(log / "x.json")
    assert list(expand([str(log)])) == [(str(log / "a.json"), None),
                                        (str(log / "x.json"), "skipped: a FIFO, not a regular file")]
    code, out, err, _ = cli("replay", str(log), "--budget", "500", "--engine", "inprocess", "--out",
                            str(tmp_path / "out"), timeout=60)
    assert code == 0, err
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert [(u["source"], u["reason"]) for u in report["unreadable"]] == [
        (str(log / "x.json"), "skipped: a FIFO, not a regular file")]
    assert list(expand([str(log / "x.json")])) == [(str(log / "x.json"), "skipped: a FIFO, not a regular file")]


def test_an_argument_that_is_a_symlink_loop_says_so(tmp_path):
    (tmp_path / "a.json").symlink_to(tmp_path / "b.json")
    (tmp_path / "b.json").symlink_to(tmp_path / "a.json")
    assert list(expand([str(tmp_path / "a.json")])) == [
        (str(tmp_path / "a.json"), "cannot read the file (Too many levels of symbolic links)")]


# --------------------------------------------------------------------------- 6. dates Python cannot hold

@pytest.mark.parametrize("kind, value", [(pa.timestamp("s"), 298_000 * 365 * 86_400), (pa.date32(), 298_000 * 365)],
                         ids=["timestamp", "date32"])
def test_a_parquet_date_past_year_9999_is_one_line(tmp_path, kind, value):
    path = tmp_path / "dates.parquet"
    pq.write_table(pa.table({"context.span_id": ["a", "b"], "span_kind": ["RETRIEVER", "LLM"],
                             "start_time": pa.array([0, value], kind)}), path)
    code, out, err, _ = cli("build", str(path))
    assert (code, out, err) == (2, "", f"error: {path}, row 2, field 'start_time': a value Python cannot read "
                                       f"(date value out of range)\n")


@pytest.mark.parametrize("name, attributes, expected", [
    ("dots.json", {"a" + ".a" * 5000: 1}, "attributes nested more than 100 levels deep (each part of a dotted key "
                                          "is a level)"),
    ("string.json", "[" * 50_000 + "]" * 50_000, "its JSON string: JSON is nested too deeply to read"),
])
def test_the_app_shows_a_nest_as_one_error_line_and_keeps_the_previous_input(name, attributes, expected):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.run()
    before = at.session_state["ctx.trace"]
    at.file_uploader(key="dbg.upload").set_value((name, json.dumps([_span(attributes)]).encode(), "application/json"))
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    errors = {str(e.value).replace("\\", "") for e in at.error}
    assert len(errors) == 1 and next(iter(errors)).startswith(f"{name}, field 'spans[0].attributes")
    assert next(iter(errors)).endswith(expected)
    assert at.session_state["ctx.trace"] is before  # nothing already loaded is lost
