"""Traces received live (issue #32): the OTLP/HTTP endpoint, the SQLite live store, the store: source, the Live
page. Spans come from the real OpenTelemetry SDK exporters over a real socket on 127.0.0.1."""

from __future__ import annotations

import gzip
import http.client
import io
import json
import logging
import socket
from pathlib import Path

import pytest
from google.rpc import status_pb2
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2 as ts
from streamlit.testing.v1 import AppTest

import live_pipeline as lp
from ctxcore import serve
from ctxcore.cli import _otlp_option, main, run
from ctxcore.io.live import otlp, store as live_store
from ctxcore.io.live.store import Store
from ctxui import casestore
from ctxui.text import md_escape

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def data_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("CTXCORE_DATA_DIR", str(tmp_path))
    return tmp_path


@pytest.fixture
def endpoint(data_dir):
    server = serve.start(0, Store(data_dir / "live.db"))
    yield server
    server.shutdown()
    server.server_close()
    server.store.close()


def _post(server, body: bytes, content_type: str = otlp.PROTOBUF, encoding: str = "") -> tuple[int, dict, bytes]:
    conn = http.client.HTTPConnection(*server.server_address[:2], timeout=10)
    headers = {"Content-Type": content_type, **({"Content-Encoding": encoding} if encoding else {})}
    conn.request("POST", serve.PATH, body=body, headers=headers)
    resp = conn.getresponse()
    out = resp.status, dict(resp.getheaders()), resp.read()
    conn.close()
    return out


def _request(spans: int = 1, trace: str = "0af7651916cd43dd8448eb211c80319c", attr: str = "x", depth: int = 0):
    """An ExportTraceServiceRequest built with the protobuf messages (spans of one trace; the first may carry a
    long attribute or a nested value)."""
    req = ts.ExportTraceServiceRequest()
    rs = req.resource_spans.add()
    rs.resource.attributes.add(key="service.name").value.string_value = "wire"
    scope = rs.scope_spans.add()
    for i in range(spans):
        span = scope.spans.add(trace_id=bytes.fromhex(trace), span_id=(i + 1).to_bytes(8, "big"), name=f"s{i}")
        value = span.attributes.add(key="input.value").value
        for _ in range(depth if i == 0 else 0):
            value = value.kvlist_value.values.add(key="a").value
        value.string_value = attr if i == 0 else "x"
    return req.SerializeToString()


# --- the real SDK exporters, end to end ------------------------------------------------------------------------

@pytest.mark.parametrize("protocol", ["protobuf", "json"])
def test_a_pipeline_traced_with_the_sdk_reads_from_the_store_exactly_as_from_its_file(endpoint, data_dir, protocol,
                                                                                       tmp_path):
    assert lp.send(serve.url(endpoint), protocol) == lp.ANSWER
    (stored,) = live_store.runs(data_dir / "live.db")
    assert (stored.service, stored.spans) == ("support-bot", 9)   # 9 spans: the chain's runnables, retriever, LLM
    out = io.StringIO()
    assert run(["inspect", "store:#latest", "--format", "json"], out=out) == 0
    rep = json.loads(out.getvalue())
    assert (rep["format"], rep["trace_id"], rep["query"], rep["answer"]) == ("otlp", stored.trace_id, lp.QUERY,
                                                                             lp.ANSWER)
    assert [(d["id"], d["score"], d["text"]) for d in rep["documents"]] == \
        [(f"doc-{i}", score, text) for i, (_, text, score) in enumerate(lp.DOCS, 1)]
    # the same bytes as a file: build gives the same trace, byte for byte
    _, data = live_store.export("latest", data_dir / "live.db")
    path = tmp_path / "run.jsonl"
    path.write_bytes(data)
    from_file, from_store = io.StringIO(), io.StringIO()
    assert run(["build", str(path), "--format", "json"], out=from_file) == 0
    assert run(["build", f"store:{data_dir / 'live.db'}#{stored.trace_id}", "--format", "json"], out=from_store) == 0
    assert from_store.getvalue() == from_file.getvalue().replace("run.jsonl", f"live-{stored.trace_id}.jsonl")


def test_explain_over_the_store_names_the_passage_never_sent(endpoint):
    lp.send(serve.url(endpoint), "protobuf")
    out = io.StringIO()
    assert run(["explain", "store:#latest", "--format", "json"], out=out) == 0
    findings = json.loads(out.getvalue())
    assert [(f["kind"], f["role"], f["title"], f["fix"], f["fix_verified"]) for f in findings] == [
        ("not_sent", "cause", "doc-3 (score 0.61) was retrieved but never sent: your pipeline appears to send the "
         "top 2 passages (sent 2 of the 3 passages retrieved).", {"max_passages": 3}, True)]


# --- bad input on the wire: the status the specification names, a log line, nothing stored lost -----------------

def _bomb() -> bytes:
    return gzip.compress(b"\0" * (otlp.MAX_DECODED_BYTES + 1), compresslevel=9)


WIRE = [  # (what, body, content type, content encoding, status, message start)
    ("truncated protobuf", _request(2)[:-7], otlp.PROTOBUF, "", 400, "the protobuf body is not an Export"),
    ("wrong content type", _request(1), "text/plain", "", 415, "Content-Type 'text/plain' is not OTLP"),
    ("no content type", _request(1), "", "", 415, "Content-Type '(none)' is not OTLP"),
    ("unknown encoding", _request(1), otlp.PROTOBUF, "br", 415, "Content-Encoding 'br' is not supported"),
    ("gzip bomb", _bomb(), otlp.PROTOBUF, "gzip", 413, "the body decompresses to more than 64 MiB"),
    ("not gzip", b"plain", otlp.PROTOBUF, "gzip", 400, "the gzip body cannot be decompressed"),
    ("deep value past protobuf's nesting limit", _request(1, depth=40), otlp.PROTOBUF, "", 400,
     "the protobuf body is not an Export"),
    ("broken JSON", b'{"resourceSpans": [', otlp.JSON, "", 400, "the JSON body cannot be read"),
    ("JSON of another shape", b'{"resourceSpans": 3}', otlp.JSON, "", 400, "the JSON body is not an Export"),
    ("JSON id not hex", b'{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"zz"}]}]}]}', otlp.JSON, "", 400,
     "span field 'traceId': 'zz' is not a hex id"),
    ("JSON nested past any limit", b"[" * 100_000, otlp.JSON, "", 400, "the JSON body cannot be read"),
]


@pytest.mark.parametrize("what, body, kind, encoding, status, message", WIRE, ids=[w[0] for w in WIRE])
def test_bad_input_gets_the_otlp_status_and_a_log_line_and_keeps_what_was_stored(endpoint, data_dir, caplog, what,
                                                                                body, kind, encoding, status, message):
    assert _post(endpoint, _request(3, trace="11" * 16))[0] == 200
    before = live_store.totals(data_dir / "live.db")
    with caplog.at_level(logging.WARNING, logger="ctxcore.serve"):
        got, headers, reply = _post(endpoint, body, kind, encoding)
    assert got == status
    said = status_pb2.Status.FromString(reply).message if headers["Content-Type"] == otlp.PROTOBUF \
        else json.loads(reply)["message"]
    assert said.startswith(message), said
    assert any(f"refused ({status}): {message}" in r.getMessage() for r in caplog.records)
    assert live_store.totals(data_dir / "live.db") == before == (1, 3, before[2])


def test_a_body_over_the_limit_is_refused_from_its_length_unread(endpoint):
    with socket.create_connection(endpoint.server_address[:2], timeout=10) as sock:
        sock.sendall(f"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-protobuf\r\n"
                     f"Content-Length: {otlp.MAX_REQUEST_BYTES + 1}\r\n\r\n".encode())
        head = sock.recv(4096).decode("latin-1")
    assert head.startswith("HTTP/1.1 413 ")


@pytest.mark.parametrize("attr_bytes, rejected", [(otlp.MAX_SPAN_BYTES - 1024, 0), (otlp.MAX_SPAN_BYTES + 1, 1)])
def test_a_span_with_a_huge_attribute_is_refused_alone_as_a_partial_success(endpoint, data_dir, attr_bytes,
                                                                            rejected):
    status, headers, reply = _post(endpoint, _request(2, attr="a" * attr_bytes))
    assert status == 200 and headers["Content-Type"] == otlp.PROTOBUF
    resp = ts.ExportTraceServiceResponse.FromString(reply)
    assert resp.HasField("partial_success") == bool(rejected)
    assert resp.partial_success.rejected_spans == rejected
    if rejected:
        assert resp.partial_success.error_message == "1 span rejected: 1 over 2 MiB encoded"
    assert live_store.totals(data_dir / "live.db")[1] == 2 - rejected


def test_a_nested_value_within_the_limit_is_stored(endpoint, data_dir):
    assert _post(endpoint, _request(1, depth=20))[0] == 200
    assert live_store.totals(data_dir / "live.db")[:2] == (1, 1)


def test_json_and_gzip_are_answered_in_the_request_encoding(endpoint, data_dir):
    body = json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [
        {"traceId": "5b8efff798038103d269b633813fc60c", "spanId": "eee19b7ec3c1b174", "name": "a"},
        {"traceId": "00000000000000000000000000000000", "spanId": "eee19b7ec3c1b175", "name": "b"}]}]}]}).encode()
    status, headers, reply = _post(endpoint, gzip.compress(body), otlp.JSON + "; charset=utf-8", "gzip")
    assert (status, headers["Content-Type"]) == (200, otlp.JSON)
    assert json.loads(reply) == {"partialSuccess": {"rejectedSpans": "1", "errorMessage":
                                 "1 span rejected: 1 invalid trace or span id (16 and 8 non-zero bytes required)"}}
    assert [r.trace_id for r in live_store.runs(data_dir / "live.db")] == ["5b8efff798038103d269b633813fc60c"]


def test_an_empty_request_is_a_full_success(endpoint):
    status, _, reply = _post(endpoint, b"")
    assert status == 200 and not ts.ExportTraceServiceResponse.FromString(reply).HasField("partial_success")


def test_a_store_over_its_write_capacity_answers_503_with_retry_after(data_dir, monkeypatch):
    store = Store(data_dir / "live.db")
    monkeypatch.setattr(live_store, "WRITE_WAIT", 0.05)
    store._lock.acquire()   # another request is writing, and takes longer than a request may wait
    try:
        status, headers, body = serve.handle(store, "POST", "/v1/traces", {"Content-Type": otlp.PROTOBUF},
                                             _request(1))
    finally:
        store._lock.release()
    assert (status, headers["Retry-After"]) == (503, "1")
    assert status_pb2.Status.FromString(body).message == "the store did not take the spans within 0.05 s; retry " \
                                                         "after 1 s"
    assert serve.handle(store, "POST", "/v1/traces", {"Content-Type": otlp.PROTOBUF}, _request(1))[0] == 200


@pytest.mark.parametrize("method, path, status", [("GET", "/v1/traces", 405), ("POST", "/v1/metrics", 404)])
def test_other_paths_and_methods(data_dir, method, path, status):
    assert serve.handle(Store(data_dir / "live.db"), method, path, {}, b"")[0] == status


# --- retention: by runs and by bytes, the oldest first ---------------------------------------------------------

def _trace(i: int, size: int = 10) -> dict:
    return {f"{i:032x}": {"body": "x" * size, "spans": 1, "service": "s"}}


@pytest.mark.parametrize("max_runs, max_bytes, kept", [
    (3, 10**9, ["5", "4", "3"]),   # count: the 3 newest
    (5, 10**9, ["5", "4", "3", "2", "1"]),   # at the limit: all kept
    (10, 30, ["5", "4", "3"]),     # bytes: 3 runs of 10 bytes
    (10, 29, ["5", "4"]),          # one byte under: 2
])
def test_retention_drops_the_oldest_runs_first(data_dir, max_runs, max_bytes, kept):
    store = Store(data_dir / "live.db", max_runs=max_runs, max_bytes=max_bytes)
    for i in range(1, 6):
        store.add(_trace(i), now=float(i))
    assert [str(int(r.trace_id, 16)) for r in live_store.runs(data_dir / "live.db")] == kept


def test_spans_of_one_trace_in_two_requests_are_one_run(data_dir):
    store = Store(data_dir / "live.db")
    store.add(otlp.split(ts.ExportTraceServiceRequest.FromString(_request(2))).traces, now=1.0)
    store.add(otlp.split(ts.ExportTraceServiceRequest.FromString(_request(3))).traces, now=2.0)
    (r,) = live_store.runs(data_dir / "live.db")
    assert (r.spans, r.first_seen, r.last_seen) == (5, 1.0, 2.0)
    assert live_store.export(r.trace_id, data_dir / "live.db")[1].count(b"\n") == 2


# --- the store: source and the CLI ------------------------------------------------------------------------------

@pytest.mark.parametrize("source, line", [
    ("store:{d}/none.db#latest", "error: {d}/none.db: no live store here: start the endpoint (python -m ctxcore serve) "
                                 "and send traces to it\n"),
    ("store:{d}/live.db#abc", "error: {d}/live.db: no run with trace id 'abc' in the live store\n"),
])
def test_a_missing_store_or_run_is_one_line_and_exit_2(data_dir, capsys, source, line):
    Store(data_dir / "live.db")
    assert main(["inspect", source.format(d=data_dir)]) == 2
    assert capsys.readouterr().err == line.format(d=data_dir)


def test_serve_on_a_taken_port_is_one_line_and_exit_2(data_dir, capsys):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["serve", "--port", str(port)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: serve: cannot start the endpoint on 127.0.0.1:{port} (") and err.count("\n") == 1


def test_app_otlp_starts_the_endpoint_beside_the_app(monkeypatch):
    monkeypatch.setenv("CTXCORE_OTLP_PORT", "")   # recorded, so the variable is removed again afterwards
    assert _otlp_option(["--otlp=4400", "--server.port", "8502"]) == ["--server.port", "8502"]
    assert __import__("os").environ["CTXCORE_OTLP_PORT"] == "4400"
    assert _otlp_option(["--otlp"]) == [] and __import__("os").environ["CTXCORE_OTLP_PORT"] == "4318"


# --- the Live page (AppTest) ------------------------------------------------------------------------------------

def _page(at: AppTest) -> AppTest:
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert not [e.value for e in at.error], [e.value for e in at.error]
    return at


def test_the_live_page_lists_the_run_with_its_documents_prompt_answer_and_diagnosis(endpoint):
    lp.send(serve.url(endpoint), "protobuf", service="support-bot")
    lp.send(serve.url(endpoint), "json", service="billing", query="Where is my invoice?")
    at = _page(AppTest.from_file(str(ROOT / "app.py"), default_timeout=120))
    at.switch_page("pages/live.py")
    _page(at)
    table = at.dataframe[0].value
    assert list(table["service"]) == ["billing", "support-bot"]
    assert list(table["query"]) == ["Where is my invoice?", lp.QUERY]
    assert list(table["documents"]) == [3, 3] and list(table["sent"]) == [2, 2]
    at.selectbox(key="live.service").set_value("support-bot")
    _page(at)
    (row,) = at.dataframe[0].value.to_dict("records")
    assert (row["query"], row["verdict"]) == (lp.QUERY, "not_sent")
    assert {m.label: m.value for m in at.metric} == {"Verdict": "not_sent", "Documents": "3", "Passages sent": "2",
                                                    "Model": "(none logged)"}
    assert [t.value for t in at.text] == [f"Query: {lp.QUERY}", f"Answer: {lp.ANSWER}"]
    assert list(at.dataframe[1].value["text"]) == [text for _, text, _ in lp.DOCS]
    (prompt,) = at.code
    assert lp.DOCS[0][1] in prompt.value and lp.DOCS[2][1] not in prompt.value
    at.text_input(key="live.text").set_value("invoice")   # the text filter: only the other run has it
    at.selectbox(key="live.service").set_value("")
    _page(at)
    assert list(at.dataframe[0].value["service"]) == ["billing"]


def saved_title(at: AppTest) -> str:
    tid = at.session_state["live.pick"]
    return f"{tid[:8]} · {lp.QUERY}"


def test_a_live_run_opens_in_diagnose_and_saves_as_a_case(endpoint, data_dir):
    lp.send(serve.url(endpoint), "protobuf")
    at = _page(AppTest.from_file(str(ROOT / "app.py"), default_timeout=120))
    at.switch_page("pages/live.py")
    _page(at)
    at.button(key="live.save").click()
    _page(at)
    saved = at.session_state["live.saved"]
    assert [s.value for s in at.success] == [md_escape(f"Saved as case {saved}: open it from Saved cases.")]
    assert casestore.get_case(saved).title == f"live run {saved_title(at)}"
    at.button(key="live.diagnose").click()
    _page(at)
    assert at.session_state["ctx.loaded"].query == lp.QUERY
    assert at.subheader[0].value == "Root cause"   # the Diagnose page, on the live run
    shown = [m.value for m in at.markdown]
    assert any(m.startswith("**doc\\-3 \\(score 0\\.61\\) was retrieved but never sent\\: your pipeline appears to "
                            "send the top 2 passages") for m in shown), shown
    assert "**Verified fix**: send 3 passages instead of 2 \\(ctxcore\\: max\\_passages 3\\)" in shown


def test_serve_refuses_a_retention_limit_below_one(capsys):
    assert main(["serve", "--max-runs", "0"]) == 2
    assert capsys.readouterr().err == "error: serve: --max-runs and --max-mb must be at least 1\n"


def test_the_readme_states_the_live_limits_in_the_code():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    for row in (f"| {otlp.MAX_REQUEST_BYTES // 2**20} MiB / {otlp.MAX_DECODED_BYTES // 2**20} MiB |",
                f"| {otlp.MAX_SPAN_BYTES // 2**20} MiB (and 10,000 attributes) |",
                f"| {live_store.MAX_RUNS:,} runs, {live_store.MAX_BYTES // 2**20} MB",
                f"| {serve.MAX_CONNECTIONS} / {live_store.MAX_WAITING} ({live_store.WRITE_WAIT:g} s) |"):
        assert row in text, row
