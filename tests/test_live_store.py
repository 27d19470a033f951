"""The live store's fast acknowledgement path and its replay (issue #32): spans kept as protobuf per trace and
turned into OTLP JSON only when read, held equal to the plain JSON definition on what the real OpenTelemetry SDK
exporters send; a store written with JSON rows still reads; ``replay store:PATH`` replays every stored run as
``build store:PATH#ID`` reads it."""

from __future__ import annotations

import io
import json
import sqlite3
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2 as ts

import live_pipeline as lp
from test_live import data_dir, endpoint  # noqa: F401 - the endpoint's fixtures, shared with test_live
from ctxcore import serve
from ctxcore.cli import main, run
from ctxcore.io.live import otlp, store as live_store
from ctxcore.io.live.store import Store
from ctxcore.replay.read import items, total_bytes



class _Recorder(BaseHTTPRequestHandler):
    """A collector that keeps each request's body as sent (what the SDK exporter puts on the wire)."""
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        kind = self.headers["Content-Type"]
        self.server.bodies.append((kind, self.rfile.read(int(self.headers["Content-Length"]))))
        reply = otlp.response(otlp.JSON if otlp.is_json(kind) else otlp.PROTOBUF)
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, *args):
        pass


def _sdk_requests(protocol: str) -> list:
    """The ExportTraceServiceRequests the real SDK exporter sends for two pipeline runs (two services)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    server.bodies = []
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/v1/traces"
        lp.send(url, protocol)
        lp.send(url, protocol, service="billing", query="Where is my invoice?")
    finally:
        server.shutdown()
        server.server_close()
    return [otlp.decode(body, kind) for kind, body in server.bodies]


def _per_run(requests: list) -> list:
    """The SDK's requests (one span each, as SimpleSpanProcessor sends) merged into one request per service."""
    merged: dict = {}
    for req in requests:
        service = otlp.service_of(req.resource_spans[0].resource)
        merged.setdefault(service, ts.ExportTraceServiceRequest()).MergeFrom(req)
    return list(merged.values())


def _merged(requests: list):
    """One request holding every resource of ``requests`` (several traces, resources and scopes), and a span the
    endpoint refuses (a zero trace id)."""
    out = ts.ExportTraceServiceRequest()
    for req in requests:
        out.MergeFrom(req)
    out.resource_spans[0].scope_spans[0].spans.add(trace_id=b"\0" * 16, span_id=b"\1" * 8, name="refused")
    return out


def _as_read(batch: otlp.Batch) -> dict:
    return {tid: {**t, "body": otlp.to_json(t["body"]) if isinstance(t["body"], bytes) else t["body"]}
            for tid, t in batch.traces.items()}


@pytest.mark.parametrize("protocol", ["protobuf", "json"])
def test_the_fast_split_reads_back_as_the_plain_json_split_on_sdk_spans(protocol):
    requests = _sdk_requests(protocol)
    assert sum(len(ss.spans) for r in requests for rs in r.resource_spans for ss in rs.scope_spans) == 18
    for request in [*requests, *_per_run(requests), _merged(requests)]:
        fast, plain = otlp.split(request), otlp.split_json(request)
        assert all(isinstance(t["body"], bytes) for t in fast.traces.values())
        assert _as_read(fast) == plain.traces
        assert (fast.rejected, fast.reasons) == (plain.rejected, plain.reasons)
    merged = otlp.split(_merged(requests))
    assert sorted((t["service"], t["spans"]) for t in merged.traces.values()) == [("billing", 9), ("support-bot", 9)]
    assert merged.rejected == 1


def test_the_fast_split_keeps_each_span_once_under_its_own_resource_and_scope():
    req = ts.ExportTraceServiceRequest()
    for service in ("a", "b"):
        rs = req.resource_spans.add(schema_url=f"https://schema/{service}")
        rs.resource.attributes.add(key="service.name").value.string_value = service
        for scope_name in ("s1", "s2"):
            ss = rs.scope_spans.add(schema_url="https://scope")
            ss.scope.name = f"{service}-{scope_name}"
            for t in (1, 2):
                ss.spans.add(trace_id=t.to_bytes(16, "big"), span_id=(len(ss.spans) + 1).to_bytes(8, "big"),
                             name=f"{service}/{scope_name}/{t}", kind=2)
    fast = otlp.split(req)
    assert _as_read(fast) == otlp.split_json(req).traces
    one = ts.ExportTraceServiceRequest.FromString(fast.traces[f"{1:032x}"]["body"])
    assert [(rs.schema_url, [(ss.scope.name, [s.name for s in ss.spans]) for ss in rs.scope_spans])
            for rs in one.resource_spans] == [
        ("https://schema/a", [("a-s1", ["a/s1/1"])]), ("https://schema/a", [("a-s2", ["a/s2/1"])]),
        ("https://schema/b", [("b-s1", ["b/s1/1"])]), ("https://schema/b", [("b-s2", ["b/s2/1"])])]
    assert fast.traces[f"{2:032x}"]["service"] == "a" and fast.traces[f"{2:032x}"]["spans"] == 4


def test_a_store_written_with_json_rows_reads_as_before_and_mixes_with_protobuf_rows(tmp_path):
    """A live.db from before (OTLP JSON text in ``body``) is opened, read and written on unchanged."""
    (support, _), (_, billing) = _per_run(_sdk_requests("protobuf")), _per_run(_sdk_requests("json"))
    old, new = tmp_path / "old.db", tmp_path / "new.db"
    Store(old).add(otlp.split_json(support).traces, now=1.0)     # what the endpoint wrote before
    Store(new).add(otlp.split(support).traces, now=1.0)
    (tid,) = otlp.split(support).traces
    assert live_store.export(tid, old) == live_store.export(tid, new)
    with sqlite3.connect(old) as conn:
        assert conn.execute("SELECT typeof(body) FROM batches").fetchall() == [("text",)]
    with sqlite3.connect(new) as conn:
        assert conn.execute("SELECT typeof(body) FROM batches").fetchall() == [("blob",)]
    Store(old).add(otlp.split(support).traces, now=2.0)          # the same trace again, now as protobuf
    _, both = live_store.export(tid, old)
    first, second = both.decode().splitlines()
    assert first == second == otlp.split_json(support).traces[tid]["body"]
    for path in (old, new):   # the text filter finds words in JSON rows and in protobuf rows alike
        Store(path).add(otlp.split(billing).traces, now=3.0)
        assert [r.service for r in live_store.runs(path, text="INVOICE")] == ["billing"]
        assert [r.service for r in live_store.runs(path, text="how long do REFUNDS")] == ["support-bot"]


def test_the_stored_size_is_the_protobuf_kept_and_under_the_json(endpoint, data_dir):
    lp.send(serve.url(endpoint), "protobuf")
    (r,) = live_store.runs(data_dir / "live.db")
    _, jsonl = live_store.export(r.trace_id, data_dir / "live.db")
    with sqlite3.connect(data_dir / "live.db") as conn:
        stored = sum(len(b) for (b,) in conn.execute("SELECT body FROM batches"))
        assert {t for (t,) in conn.execute("SELECT typeof(body) FROM batches")} == {"blob"}
    assert r.bytes == stored < 0.75 * len(jsonl)   # retention counts what is kept: protobuf, about 0.6 of the JSON


# --- replay over the store --------------------------------------------------------------------------------------

QUERIES = [("support-bot", lp.QUERY, "protobuf"), ("billing", "Where is my invoice?", "json"),
           ("support-bot", "Can I return a worn item?", "protobuf")]


@pytest.fixture
def filled(endpoint, data_dir):
    for service, query, protocol in QUERIES:
        lp.send(serve.url(endpoint), protocol, service=service, query=query)
    return data_dir / "live.db"


def _replayed(tmp_path, source: str, name: str) -> list:
    out_dir = tmp_path / name
    assert main(["replay", source, "--max-passages", "3", "--engine", "inprocess", "--out", str(out_dir),
                 "--format", "json"]) == 0
    return [json.loads(line) for line in (out_dir / "runs.jsonl").read_text().splitlines()]


def _built(source: str) -> dict:
    out = io.StringIO()
    assert run(["build", source, "--max-passages", "3", "--format", "json"], out=out) == 0
    return json.loads(out.getvalue())


def test_replay_over_the_store_is_every_run_oldest_first_as_build_reads_each(filled, tmp_path, capsys):
    rows = _replayed(tmp_path, f"store:{filled}", "all")
    stored = list(reversed(live_store.runs(filled)))    # runs() lists the newest first
    assert [(r["run_id"], r["query"]) for r in rows] == [(s.trace_id, q) for s, (_, q, _) in zip(stored, QUERIES)]
    for row in rows:
        built = _built(f"store:{filled}#{row['run_id']}")
        fates = {d["id"]: d for d in built["decisions"]}
        assert (row["source"], row["query"], row["candidates"], row["kept_after"]) == \
            (f"live-{row['run_id']}.jsonl", built["query"], len(built["candidates"]),
             sum(d["fate"] == "kept" for d in fates.values()))
        (moved,) = row["newly_kept"]   # the passage the logged pipeline never sent, kept under max_passages 3
        assert (moved["id"], moved["after_fate"], moved["after_reason"]) == \
            ("doc-3", fates["doc-3"]["fate"], fates["doc-3"]["reason"])
    # the same runs exported as files replay to the same rows, byte for byte but the folder in the source
    files = tmp_path / "files"
    files.mkdir()
    for s in stored:
        (files / f"live-{s.trace_id}.jsonl").write_bytes(live_store.export(s.trace_id, filled)[1])
    from_files = {r["run_id"]: {**r, "index": None, "source": r["source"].rsplit("/", 1)[-1]}
                  for r in _replayed(tmp_path, str(files), "files")}
    assert {r["run_id"]: {**r, "index": None} for r in rows} == from_files
    assert "3 runs (0 unreadable)" in capsys.readouterr().err


def test_replay_of_one_stored_run_by_id_or_latest(filled, tmp_path):
    oldest, latest = live_store.runs(filled)[-1], live_store.runs(filled)[0]
    assert [r["run_id"] for r in _replayed(tmp_path, f"store:{filled}#{oldest.trace_id}", "one")] == \
        [oldest.trace_id]
    assert [r["run_id"] for r in _replayed(tmp_path, "store:#latest", "latest")] == [latest.trace_id]


def test_replay_progress_counts_the_stored_bytes(filled):
    runs, _, size = live_store.totals(filled)
    assert total_bytes([f"store:{filled}"]) == size
    got = list(items([f"store:{filled}", f"store:{filled.parent}#latest"]))
    assert [i.kind for i in got] == ["bytes"] * (runs + 1)
    assert [i.done_bytes for i in got][runs - 1] == size
    assert got[-1].done_bytes == size + live_store.runs(filled)[0].bytes


@pytest.mark.parametrize("source, line", [
    ("store:{d}/none.db", "error: {d}/none.db: no live store here: start the endpoint (python -m ctxcore serve) "
                          "and send traces to it\n"),
    ("store:{d}/not-a-store.db", "error: {d}/not-a-store.db: not a live store (file is not a database)\n"),
    ("store:{d}/live.db#abc", "error: {d}/live.db: no run with trace id 'abc' in the live store\n"),
    ("store:{d}/empty.db#latest", "error: {d}/empty.db: the live store holds no run yet\n"),
])
def test_replay_of_a_missing_store_or_run_is_one_line_and_exit_2(data_dir, capsys, source, line):
    Store(data_dir / "live.db").add(otlp.split(_merged(_sdk_requests("protobuf"))).traces)
    Store(data_dir / "empty.db")
    (data_dir / "not-a-store.db").write_text("hello, not sqlite\n" * 100)
    capsys.readouterr()  # what the instrumented pipeline printed (a library's deprecation warning, once a run)
    assert main(["replay", source.format(d=data_dir), "--max-passages", "3", "--engine", "inprocess"]) == 2
    assert capsys.readouterr().err == line.format(d=data_dir)


def test_the_wal_is_checkpointed_beside_the_writes_never_inside_a_commit(tmp_path, monkeypatch):
    """SQLite's automatic checkpoint ran inside the commit of the request that crossed 4 MB of WAL (tens of ms
    on its acknowledgement); here no commit copies the WAL, and the checkpoint the store runs on its own thread
    copies all of it."""
    # the timer's thread stays out of this test
    monkeypatch.setattr(live_store, "CHECKPOINT_AFTER", 3600.0, raising=False)
    store = Store(tmp_path / "live.db", max_runs=10**6, max_bytes=2**40)
    wal = tmp_path / "live.db-wal"
    try:
        for i in range(48):   # 12 MB in 48 commits, three times the automatic checkpoint's mark
            store.add({f"{i + 1:032x}": {"body": bytes([i]) * 2**18, "spans": 1, "service": "s"}}, now=float(i))
        assert wal.stat().st_size > 12 * 2**20 > 3 * (tmp_path / "live.db").stat().st_size
        store._checkpoint()
        assert (tmp_path / "live.db").stat().st_size > 12 * 2**20
        with sqlite3.connect(tmp_path / "live.db") as conn:
            busy, frames, copied = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        assert (busy, frames) == (0, copied)
        assert live_store.totals(tmp_path / "live.db")[:2] == (48, 48)
    finally:
        store.close()
