"""A trace opened from where it lives (issue #31, item 2): Phoenix and MLflow are real servers started here
(marked slow); Langfuse and LangSmith cannot run here, so their official clients talk to a local server that
replays their public API's answers (tests/fixtures/api/README.md says where each comes from).

Every fetch is checked the way a user sees it: the export imports as the downloaded file would (same fates,
labels, prompt), the trace's URL as copied from the tool's UI works where a source does, and each failure is
one line on stderr with exit status 2."""

from __future__ import annotations

import base64
import io
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from conftest import free_port, rerun
from ctxcore.cli import main, run
from ctxcore.io import remote
from ctxcore.io.limits import FETCH_TIMEOUT
from ctxcore.io.sources import Source, parse
from ctxui.open_from import credentials_of, source_of

ROOT = Path(__file__).resolve().parents[1]
TRACES = ROOT / "tests/fixtures/traces"
API = ROOT / "tests/fixtures/api"
LANGFUSE = json.loads((API / "langfuse_trace.json").read_text())  # langfuse_trace.json as the full API answers
LANGFUSE_ID = LANGFUSE["id"]
LANGSMITH_TRACE = "1f0e5c3a-7b2d-4c11-9a8e-3d2f1c0b9a87"
LANGSMITH_CHILD = "3b8e6d5f-2c4a-4e33-9f7b-6d5c4b3a2918"  # the ChatOpenAI run inside that trace
KEYS = {"LANGFUSE_PUBLIC_KEY": "pk-lf-test", "LANGFUSE_SECRET_KEY": "sk-lf-test", "LANGSMITH_API_KEY": "lsv2_test"}


def fails(argv: list[str], capsys) -> str:
    """The CLI's stderr for ``argv``, which must exit 2 with one line and write nothing on stdout."""
    assert main(argv) == 2
    got = capsys.readouterr()
    assert got.out == "" and got.err.count("\n") == 1, got
    return got.err.rstrip("\n")


def built(path_or_source: str) -> str:
    out = io.StringIO()
    assert run(["build", path_or_source], out=out) == 0
    return out.getvalue()


# ----------------------------------------------------------------------- the URLs users copy, and the form

@pytest.mark.parametrize("text, expected", [
    ("http://127.0.0.1:6006/projects/UHJvamVjdDox/traces/0af7651916cd43dd8448eb211c80319c",
     Source("phoenix", "http://127.0.0.1:6006/projects/UHJvamVjdDox", "0af7651916cd43dd8448eb211c80319c")),
    ("https://px.example.com/phoenix/projects/UHJvamVjdDoy/traces/0af7651916cd43dd8448eb211c80319c?selectedSpanNodeId=U3Bhbjox",
     Source("phoenix", "https://px.example.com/phoenix/projects/UHJvamVjdDoy", "0af7651916cd43dd8448eb211c80319c")),
    ("http://127.0.0.1:5000/#/experiments/1/traces?selectedEvaluationId=tr-9f2c&traceId=tr-9f2c",
     Source("mlflow", "http://127.0.0.1:5000", "tr-9f2c")),
    ("http://127.0.0.1:5000/#/experiments/1/traces/tr-77", Source("mlflow", "http://127.0.0.1:5000", "tr-77")),
    ("https://cloud.langfuse.com/project/cm1x/traces/4f2a9c", Source("langfuse", "https://cloud.langfuse.com", "4f2a9c")),
    ("https://cloud.langfuse.com/project/cm1x/traces?peek=4f2a9c&timestamp=2025-05-14",
     Source("langfuse", "https://cloud.langfuse.com", "4f2a9c")),
    ("https://smith.langchain.com/o/9a1/projects/p/5c2/r/1f0e5c3a-7b2d-4c11-9a8e-3d2f1c0b9a87?poll=true",
     Source("langsmith", "https://api.smith.langchain.com", "1f0e5c3a-7b2d-4c11-9a8e-3d2f1c0b9a87")),
    ("https://eu.smith.langchain.com/o/9a1/projects/p/5c2/r/3b8e6d5f-2c4a-4e33-9f7b-6d5c4b3a2918"
     "?trace_id=1f0e5c3a-7b2d-4c11-9a8e-3d2f1c0b9a87",
     Source("langsmith", "https://eu.api.smith.langchain.com", "1f0e5c3a-7b2d-4c11-9a8e-3d2f1c0b9a87")),
    ("http://127.0.0.1:6006/projects/p/traces", None),        # the list of traces, not one
    ("http://127.0.0.1:5000/#/experiments/1/traces", None),
    ("https://cloud.langfuse.com/project/cm1x/traces", None),
    ("https://smith.langchain.com/o/9a1/projects/p/5c2/r/not-a-run-id", None),
    ("logs/projects/p/traces/abc.json", None),                 # a path is never a URL
])
def test_the_url_a_user_copies_from_the_tool_is_a_source(text, expected):
    assert parse(text) == expected


@pytest.mark.parametrize("where, tool, trace_id, expected", [
    ("http://127.0.0.1:5000/#/experiments/1/traces/tr-77", None, "", Source("mlflow", "http://127.0.0.1:5000", "tr-77")),
    ("http://127.0.0.1:5000/", "mlflow", " tr-78 ", Source("mlflow", "http://127.0.0.1:5000/", "tr-78")),
    ("phoenix:http://h:6006#abc", None, "", Source("phoenix", "http://h:6006", "abc")),
    ("phoenix:http://h:6006#abc", None, "def", Source("phoenix", "http://h:6006", "def")),  # the typed id wins
])
def test_the_open_from_form_names_a_source(where, tool, trace_id, expected):
    assert source_of(where, tool, trace_id) == expected


@pytest.mark.parametrize("where, tool, trace_id, line", [
    ("", "phoenix", "abc", "Open from: give the trace's URL as the tool shows it, or the server's URL and a trace id"),
    ("http://h:6006", None, "abc", "http://h:6006: pick the tool (Phoenix, MLflow, Langfuse, LangSmith), or paste the "
                                   "trace's own URL"),
    ("http://h:6006", "phoenix", " ", "http://h:6006: give the trace id, or paste the trace's own URL"),
])
def test_an_incomplete_open_from_form_is_one_line(where, tool, trace_id, line):
    with pytest.raises(Exception) as err:
        source_of(where, tool, trace_id)
    assert str(err.value) == line


def test_typed_credentials_become_the_variables_each_reader_reads():
    assert credentials_of("langfuse", " pk-1 ", "sk-1") == {"LANGFUSE_PUBLIC_KEY": "pk-1", "LANGFUSE_SECRET_KEY": "sk-1"}
    assert credentials_of("langsmith", "lsv2_x", "ignored") == {"LANGSMITH_API_KEY": "lsv2_x"}
    assert credentials_of("mlflow", "tok", "") == {"MLFLOW_TRACKING_TOKEN": "tok"}
    assert credentials_of("phoenix", "", "") == {}


# ----------------------------------------------------------------------- Langfuse and LangSmith, replayed

class _Replay(BaseHTTPRequestHandler):
    """Langfuse's ``GET /api/public/traces/{id}`` and LangSmith's ``/info``, ``POST /runs/query`` and
    ``GET /runs/{id}`` (with or without the self-hosted ``/api/v1`` prefix), answered from the fixtures;
    ``/deny/...`` answers 401 to everything (what Phoenix and MLflow say to a missing key)."""

    def log_message(self, *args):  # quiet
        pass

    def _send(self, status: int, body) -> None:
        data = json.dumps(body).encode() if not isinstance(body, bytes) else body
        self.send_response(status)
        self.send_header("Content-Type", "application/json" if not isinstance(body, bytes) else "text/plain")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        self._route("GET")

    def do_POST(self):
        self._route("POST")

    def _route(self, method: str) -> None:
        path = self.path.split("?")[0]
        if path.startswith("/deny/"):
            return self._send(401, b"You are not authenticated. Please see the documentation.")
        if path == "/old/arize_phoenix_version":  # a Phoenix from before the trace filter of GET .../spans
            return self._send(200, b"13.0.0")
        if path == "/old/v1/projects":
            return self._send(200, {"data": [{"name": "default", "id": "UHJvamVjdDox", "description": None}],
                                    "next_cursor": None})
        if path.startswith("/api/public/traces/"):
            return self._langfuse(path.rsplit("/", 1)[1])
        return self._langsmith(method, path.removeprefix("/api/v1"))

    def _langfuse(self, trace_id: str) -> None:
        pair = base64.b64encode(b"pk-lf-test:sk-lf-test").decode()
        if self.headers.get("Authorization") != f"Basic {pair}":
            return self._send(401, {"message": "Invalid credentials. Confirm that you've configured the correct host."})
        if trace_id == LANGFUSE_ID:
            return self._send(200, LANGFUSE)
        if trace_id == "no-retrieval":
            return self._send(200, {**LANGFUSE, "id": trace_id,
                                    "observations": [o for o in LANGFUSE["observations"] if o["type"] == "GENERATION"]})
        self._send(404, {"message": "Trace not found within authorized project"})

    def _langsmith(self, method: str, path: str) -> None:
        key = self.headers.get("x-api-key")
        if path == "/info":
            return self._send(200, json.loads((API / "langsmith_info.json").read_text()))
        if key == "lsv2_forbidden":
            return self._send(403, {"detail": "Forbidden"})
        if key != "lsv2_test":
            return self._send(401, {"detail": "Invalid token"})
        runs = json.loads((API / "langsmith_runs_query.json").read_text())
        if method == "POST" and path == "/runs/query":
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
            return self._send(200, runs if body.get("trace") == LANGSMITH_TRACE else {"runs": [], "cursors": {}})
        one = [r for r in runs["runs"] if path == f"/runs/{r['id']}"]
        self._send(200, one[0]) if one else self._send(404, {"detail": "Run not found"})


@pytest.fixture(scope="module")
def replay():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Replay)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture
def keys(monkeypatch):
    for name, value in KEYS.items():
        monkeypatch.setenv(name, value)
    return monkeypatch


def test_a_langfuse_trace_fetched_imports_as_the_api_file_does(replay, keys, tmp_path):
    out = tmp_path / "lf.json"
    assert main(["fetch", f"langfuse:{replay}#{LANGFUSE_ID}", "--out", str(out)]) == 0
    assert out.read_bytes() == json.dumps(LANGFUSE).encode()  # the server's answer, byte for byte
    table = built(str(TRACES / "langfuse_trace.json"))
    assert "fates: kept 4" in table and "kb-207#1    kept  select  51      S4" in table
    assert built(str(out)) == table
    assert built(f"{replay}/project/cm1x/traces/{LANGFUSE_ID}") == table       # the URL from the Langfuse UI
    assert built(f"{replay}/project/cm1x/traces?peek={LANGFUSE_ID}") == table


def test_a_langsmith_trace_is_fetched_by_its_root_run_or_any_run_in_it(replay, keys, tmp_path):
    table = built(str(TRACES / "langsmith_runs.json"))
    assert "fates: kept 3" in table and "kb-102  kept  select  26      S3" in table
    assert built(f"langsmith:{replay}#{LANGSMITH_TRACE}") == table
    # the UI's URL of the chat model's run: its trace is found through the run (self-hosted: the API is /api/v1)
    assert built(f"{replay}/o/9a1/projects/p/5c2/r/{LANGSMITH_CHILD}") == table
    out = tmp_path / "ls.json"
    assert main(["fetch", f"langsmith:{replay}#{LANGSMITH_TRACE}", "--out", str(out)]) == 0
    runs = json.loads(out.read_bytes())
    assert [(r["id"], r["run_type"], r["parent_run_id"]) for r in runs] == [
        (LANGSMITH_TRACE, "chain", None), ("2a9d7c4e-1b3f-4d22-8e6a-5c4b3a291807", "retriever", LANGSMITH_TRACE),
        (LANGSMITH_CHILD, "llm", LANGSMITH_TRACE)]


def test_the_form_credentials_are_used_and_never_written(replay, monkeypatch):
    for name in KEYS:
        monkeypatch.delenv(name, raising=False)
    name, data = remote.fetch_with(Source("langfuse", replay, LANGFUSE_ID),
                                   {"LANGFUSE_PUBLIC_KEY": "pk-lf-test", "LANGFUSE_SECRET_KEY": "sk-lf-test"})
    assert name == f"langfuse-{LANGFUSE_ID}.json" and b"sk-lf-test" not in data and b"pk-lf-test" not in data
    name, data = remote.fetch_with(Source("langsmith", replay, LANGSMITH_TRACE), {"LANGSMITH_API_KEY": "lsv2_test"})
    assert name == f"langsmith-{LANGSMITH_TRACE}.json" and b"lsv2_test" not in data
    assert "LANGFUSE_SECRET_KEY" not in os.environ and "LANGSMITH_API_KEY" not in os.environ


def _errors(replay: str, closed: str) -> list[tuple[str, dict, str]]:
    lf, ls = f"langfuse:{replay}#", f"langsmith:{replay}#"
    refused = "cannot reach the server at {0} within 10 s (Connection refused): is it running, and is the URL right?"
    return [
        (lf + LANGFUSE_ID, {"LANGFUSE_SECRET_KEY": "wrong"}, f"{lf}{LANGFUSE_ID}: the server refused the credentials "
         "(HTTP 401): check LANGFUSE_PUBLIC_KEY and LANGFUSE_SECRET_KEY"),
        (lf + "t-404", {}, f"{lf}t-404: no trace 't-404' on this server (HTTP 404): check the trace id and the URL"),
        (lf + LANGFUSE_ID, {"LANGFUSE_PUBLIC_KEY": ""}, f"{lf}{LANGFUSE_ID}: Langfuse needs an API key pair: set "
         "LANGFUSE_PUBLIC_KEY and LANGFUSE_SECRET_KEY (the project's settings page shows them)"),
        (lf + "no-retrieval", {}, "langfuse-no-retrieval.json, field 'observations': no RETRIEVER observation (or "
         "span named like 'retrieve…') with documents; found: GENERATION 'answer'"),
        (f"langfuse:{closed}#t1", {}, f"langfuse:{closed}#t1: " + refused.format(closed)),
        (ls + LANGSMITH_TRACE, {"LANGSMITH_API_KEY": "wrong"}, f"{ls}{LANGSMITH_TRACE}: the server refused the "
         "credentials (HTTP 401): check LANGSMITH_API_KEY"),
        (ls + LANGSMITH_TRACE, {"LANGSMITH_API_KEY": "lsv2_forbidden"}, f"{ls}{LANGSMITH_TRACE}: the server refused "
         "the credentials (HTTP 403): check LANGSMITH_API_KEY"),
        (ls + "00000000-0000-4000-8000-000000000000", {}, f"{ls}00000000-0000-4000-8000-000000000000: no trace "
         "'00000000-0000-4000-8000-000000000000' on this server (HTTP 404): check the trace id and the URL"),
        (f"langsmith:{closed}#{LANGSMITH_TRACE}", {}, f"langsmith:{closed}#{LANGSMITH_TRACE}: " + refused.format(closed)),
        (f"phoenix:{replay}/deny#abc", {}, f"phoenix:{replay}/deny#abc: the server refused the credentials (HTTP 401): "
         "check PHOENIX_API_KEY"),
        (f"{replay}/deny/projects/UHJvamVjdDox/traces/{'ab' * 16}", {}, f"phoenix:{replay}/deny/projects/UHJvamVjdDox#"
         f"{'ab' * 16}: the server refused the credentials (HTTP 401): check PHOENIX_API_KEY"),
        (f"phoenix:{replay}/old#abc", {}, f"phoenix:{replay}/old#abc: the Phoenix client cannot fetch from this server: "
         "The 'trace_id' query parameter on GET /v1/projects/{id}/spans requires Phoenix >= 13.9.0, but connected to "
         "server 13.0.0. Please upgrade your Phoenix server."),
        (f"mlflow:{replay}/deny#tr-1", {}, f"mlflow:{replay}/deny#tr-1: the server refused the credentials (HTTP 401): "
         "check MLFLOW_TRACKING_TOKEN, MLFLOW_TRACKING_USERNAME, MLFLOW_TRACKING_PASSWORD"),
        (f"phoenix:{closed}#abc", {}, f"phoenix:{closed}#abc: " + refused.format(closed)),
        (f"mlflow:{closed}#tr-1", {}, f"mlflow:{closed}#tr-1: " + refused.format(closed)),
        (f"phoenix:ftp://{closed[7:]}#abc", {}, f"phoenix:ftp://{closed[7:]}#abc: the server's URL must start with "
         "http:// or https://"),
    ]


def test_each_way_a_fetch_fails_is_one_line_and_exit_2(replay, keys, capsys, tmp_path):
    closed = f"http://127.0.0.1:{free_port()}"
    out = tmp_path / "never.json"
    for source, env, line in _errors(replay, closed):
        for name, value in env.items():
            keys.setenv(name, value)
        try:
            assert fails(["fetch", source, "--out", str(out)], capsys) == f"error: {line}", source
        finally:
            for name in env:
                keys.setenv(name, KEYS.get(name, ""))
        assert not out.exists()  # nothing is written when the trace cannot be had


def test_the_readme_states_the_fetch_timeout():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert f"| {FETCH_TIMEOUT:g} s, no retry of a connection that failed | `ctxcore/io/limits.py` `FETCH_TIMEOUT` |" in readme
    assert f"within {FETCH_TIMEOUT:g} s (Connection refused)" in readme


def test_fetch_without_a_source_says_what_one_looks_like(capsys):
    assert fails(["fetch", "run.json"], capsys) == (
        "error: run.json: not a source: give SCHEME:URL#TRACE_ID (phoenix, mlflow, langfuse, langsmith, store) or a "
        "trace's URL copied from the tool")


@pytest.mark.parametrize("page, prefix", [("pages/debugger.py", "dbg"), ("pages/diagnose.py", "dx")])
def test_open_from_with_the_server_down_is_one_error_line_and_the_input_stays(page, prefix):
    from conftest import app

    closed = f"http://127.0.0.1:{free_port()}"
    at = rerun(app())
    at.switch_page(page)
    rerun(at)
    before = at.session_state["ctx.key"]
    at.text_input(key=f"{prefix}.of.where").set_value(f"{closed}/#/experiments/1/traces/tr-1")
    at.text_input(key=f"{prefix}.of.key").set_value("secret-token")
    at.button[[b.label for b in at.button].index("Open")].click()
    at.run()
    shown = [e.value.replace("\\", "").replace("\u2060", "") for e in at.error]
    assert shown == [f"mlflow:{closed}#tr-1: cannot reach the server at {closed} within 10 s (Connection refused): "
                     "is it running, and is the URL right?"]
    assert at.session_state["ctx.key"] == before                     # the sample is still the input
    assert f"{prefix}.of.key" not in at.session_state                   # the token was used once, not kept
    assert "secret-token" not in json.dumps(dict(at.query_params))


# ----------------------------------------------------------------------- real servers: Phoenix and MLflow

QUESTION = "How long does a refund take?"
DOCS = [("kb-1", "Refunds are processed within five business days.", 0.91),
        ("kb-2", "Returns need a photo of the damage and of the box.", 0.62)]
PROMPT = f"[1] {DOCS[0][1]}\n[2] {DOCS[1][1]}\n\nQuestion: {QUESTION}"
ANSWER = "Within five business days [1]."


def _serve(cmd: list[str], env: dict, url: str, log: Path) -> subprocess.Popen:
    """A server started in its own process group; waits (at most 240 s) until ``url`` answers 200."""
    with open(log, "wb") as f:
        proc = subprocess.Popen(cmd, env={**os.environ, **env}, stdout=f, stderr=subprocess.STDOUT,
                                start_new_session=True)
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{cmd[2]} exited {proc.returncode}: {log.read_text()[-2000:]}")
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    return proc
        except OSError:
            time.sleep(0.5)
    _stop(proc)
    raise RuntimeError(f"{cmd[2]} did not answer {url} within 240 s: {log.read_text()[-2000:]}")


def _stop(proc: subprocess.Popen) -> None:
    """Stop the server this test started (its process group: the server and its workers)."""
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    except ProcessLookupError:
        pass


def _feed_phoenix(url: str, project: str, with_retrieval: bool) -> str:
    """One OpenInference trace sent with the OpenTelemetry SDK over OTLP/HTTP; its trace id (hex)."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    provider = TracerProvider(resource=Resource.create({"openinference.project.name": project}))
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=f"{url}/v1/traces")))
    tracer = provider.get_tracer("ctxcore-tests")
    with tracer.start_as_current_span("support_query", attributes={"openinference.span.kind": "CHAIN",
                                                                   "input.value": QUESTION}) as root:
        if with_retrieval:
            docs = {}
            for i, (doc_id, text, score) in enumerate(DOCS):
                docs.update({f"retrieval.documents.{i}.document.id": doc_id,
                             f"retrieval.documents.{i}.document.content": text,
                             f"retrieval.documents.{i}.document.score": score})
            with tracer.start_as_current_span("retrieve", attributes={"openinference.span.kind": "RETRIEVER",
                                                                      "input.value": QUESTION, **docs}):
                pass
        with tracer.start_as_current_span("llm", attributes={
                "openinference.span.kind": "LLM", "llm.model_name": "gpt-4o-mini",
                "llm.input_messages.0.message.role": "user", "llm.input_messages.0.message.content": PROMPT,
                "llm.output_messages.0.message.role": "assistant", "llm.output_messages.0.message.content": ANSWER,
                "output.value": ANSWER}):
            pass
        trace_id = format(root.get_span_context().trace_id, "032x")
    provider.shutdown()
    return trace_id


def _phoenix_spans(url: str, project: str, trace_id: str) -> int:
    query = f"{url}/v1/projects/{project}/spans?trace_id={trace_id}&limit=10"
    try:
        with urllib.request.urlopen(query, timeout=5) as r:
            return len(json.load(r)["data"])
    except urllib.error.HTTPError as err:
        if err.code == 404:  # the project is made with its first span
            return 0
        raise


@pytest.fixture(scope="module")
def phoenix(tmp_path_factory):
    work = tmp_path_factory.mktemp("phoenix")
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    proc = _serve([sys.executable, "-m", "phoenix.server.main", "serve"],
                  {"PHOENIX_WORKING_DIR": str(work), "PHOENIX_HOST": "127.0.0.1", "PHOENIX_PORT": str(port),
                   "PHOENIX_GRPC_PORT": str(free_port()), "PHOENIX_TELEMETRY_ENABLED": "false"},
                  f"{url}/arize_phoenix_version", work / "server.log")
    try:
        rag, bare = (_feed_phoenix(url, "support-bot", True), _feed_phoenix(url, "support-bot", False))
        deadline = time.monotonic() + 60  # Phoenix writes the spans it received in the background
        while (_phoenix_spans(url, "support-bot", rag), _phoenix_spans(url, "support-bot", bare)) != (3, 2):
            assert time.monotonic() < deadline, "Phoenix did not store the spans within 60 s"
            time.sleep(0.5)
        with urllib.request.urlopen(f"{url}/v1/projects", timeout=5) as r:
            project = [p["id"] for p in json.load(r)["data"] if p["name"] == "support-bot"][0]
        yield {"url": url, "rag": rag, "bare": bare, "project": project}
    finally:
        _stop(proc)


FETCHED_TABLE = ("kb-1  kept  select  9       S1     rank 1, score 0.91",
                 "kb-2  kept  select  12      S2     rank 2, score 0.62")


@pytest.mark.slow
def test_a_trace_fetched_from_a_real_phoenix_imports_as_its_export(phoenix, tmp_path):
    url, rag = phoenix["url"], phoenix["rag"]
    out = tmp_path / "px.json"
    assert main(["fetch", f"phoenix:{url}#{rag}", "--out", str(out)]) == 0
    spans = json.loads(out.read_bytes())
    assert sorted(s["name"] for s in spans) == ["llm", "retrieve", "support_query"]
    assert {s["context"]["trace_id"] for s in spans} == {rag}
    table = built(str(out))
    assert "query: How long does a refund take?" in table and "fates: kept 2" in table
    for row in FETCHED_TABLE:
        assert row in table, table
    ui = f"{url}/projects/{phoenix['project']}/traces/{rag}"
    assert built(ui) == table                                  # the URL from the Phoenix UI, its project named
    same = io.StringIO()
    assert run(["fetch", ui], out=same) == 0
    assert same.getvalue() == out.read_text() + "\n"           # the same spans, byte for byte


@pytest.mark.slow
def test_a_real_phoenix_without_the_trace_or_its_retrieval_is_one_line(phoenix, capsys):
    url, bare = phoenix["url"], phoenix["bare"]
    missing = "0" * 31 + "1"
    assert fails(["build", f"phoenix:{url}#{missing}"], capsys) == (
        f"error: phoenix:{url}#{missing}: no trace '{missing}' in any of its 2 projects on this Phoenix server: "
        "check the trace id")
    assert fails(["fetch", f"{url}/projects/nope/traces/{bare}"], capsys) == (
        f"error: phoenix:{url}/projects/nope#{bare}: no project 'nope' on this Phoenix server (HTTP 404): check the URL")
    line = fails(["fetch", f"phoenix:{url}#{bare}"], capsys)
    assert line == (f"error: phoenix-{bare}.json: no RETRIEVER or RERANKER span with documents; found span kinds: "
                    "CHAIN, LLM (without a retriever step there are no candidates to replay)"), line


@pytest.mark.slow
def test_open_from_on_the_debugger_loads_a_phoenix_trace_and_keeps_the_input_on_a_bad_id(phoenix):
    from conftest import app

    at = rerun(app())
    at.switch_page("pages/debugger.py")
    rerun(at)
    before = at.dataframe[0].value["id"].tolist()
    at.text_input(key="dbg.of.where").set_value(f"{phoenix['url']}/projects/{phoenix['project']}/traces/0{'0' * 31}")
    at.button[[b.label for b in at.button].index("Open")].click()
    at.run()
    shown = [e.value.replace("\\", "").replace("\u2060", "") for e in at.error]  # as the page shows it (escaped)
    assert shown == [f"phoenix:{phoenix['url']}/projects/{phoenix['project']}#{'0' * 32}: no trace '{'0' * 32}' in "
                     f"project '{phoenix['project']}' on this Phoenix server: check the trace id"]
    assert at.dataframe[0].value["id"].tolist() == before       # the sample is still loaded
    at.text_input(key="dbg.of.where").set_value(f"{phoenix['url']}/projects/{phoenix['project']}/traces/{phoenix['rag']}")
    at.button[[b.label for b in at.button].index("Open")].click()
    rerun(at)
    fates = at.dataframe[0].value
    assert fates["id"].tolist() == ["kb-1", "kb-2"] and fates["fate"].tolist() == ["kept", "kept"]


def _feed_mlflow(url: str) -> tuple[str, str, str]:
    """Two traces logged with MLflow's tracing API (a RETRIEVER span's documents and a CHAT_MODEL span; and a
    chat alone); (experiment id, their trace ids)."""
    import mlflow
    from mlflow.entities import Document, SpanType

    mlflow.set_tracking_uri(url)
    try:
        experiment = mlflow.set_experiment("support-bot").experiment_id
        ids = []
        for with_retrieval in (True, False):
            with mlflow.start_span(name="support_query", span_type=SpanType.CHAIN) as root:
                root.set_inputs({"question": QUESTION})
                if with_retrieval:
                    with mlflow.start_span(name="retrieve", span_type=SpanType.RETRIEVER) as span:
                        span.set_inputs({"query": QUESTION})
                        span.set_outputs([Document(page_content=text, metadata={"doc_uri": doc_id}, id=doc_id).to_dict()
                                          for doc_id, text, _ in DOCS])
                with mlflow.start_span(name="chat", span_type=SpanType.CHAT_MODEL) as span:
                    span.set_inputs({"messages": [{"role": "user", "content": PROMPT}]})
                    span.set_outputs({"choices": [{"message": {"role": "assistant", "content": ANSWER}}]})
                root.set_outputs(ANSWER)
                ids.append(root.trace_id)
        return experiment, ids[0], ids[1]
    finally:
        mlflow.set_tracking_uri(None)


@pytest.fixture(scope="module")
def mlflow_server(tmp_path_factory):
    work = tmp_path_factory.mktemp("mlflow")
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    proc = _serve([sys.executable, "-m", "mlflow", "server", "--backend-store-uri", f"sqlite:///{work}/mlflow.db",
                   "--artifacts-destination", str(work / "artifacts"), "--host", "127.0.0.1", "--port", str(port),
                   "--workers", "1"], {"MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}, f"{url}/health",
                  work / "server.log")
    os.environ["MLFLOW_ENABLE_ASYNC_TRACE_LOGGING"] = "false"  # the traces are on the server when the span ends
    try:
        experiment, rag, bare = _feed_mlflow(url)
        yield {"url": url, "experiment": experiment, "rag": rag, "bare": bare}
    finally:
        os.environ.pop("MLFLOW_ENABLE_ASYNC_TRACE_LOGGING", None)
        _stop(proc)


@pytest.mark.slow
def test_a_trace_fetched_from_a_real_mlflow_imports_as_its_export(mlflow_server, tmp_path):
    url, rag = mlflow_server["url"], mlflow_server["rag"]
    out = tmp_path / "ml.json"
    assert main(["fetch", f"mlflow:{url}#{rag}", "--out", str(out)]) == 0
    trace = json.loads(out.read_bytes())
    assert trace["info"]["trace_id"] == rag
    assert sorted(s["name"] for s in trace["data"]["spans"]) == ["chat", "retrieve", "support_query"]
    table = built(str(out))
    assert "query: How long does a refund take?" in table and "fates: kept 2" in table
    assert re.search(r"kb-1  kept  select  9 +S1 +rank 1, score unscored", table), table
    assert re.search(r"kb-2  kept  select  12 +S2 +rank 2, score unscored", table), table
    ui = f"{url}/#/experiments/{mlflow_server['experiment']}/traces?selectedEvaluationId={rag}&traceId={rag}"
    assert built(ui) == table                                  # the URL from the MLflow UI


@pytest.mark.slow
def test_a_real_mlflow_without_the_trace_or_its_retrieval_is_one_line(mlflow_server, capsys):
    url, bare = mlflow_server["url"], mlflow_server["bare"]
    missing = "tr-" + "0" * 32
    assert fails(["fetch", f"mlflow:{url}#{missing}"], capsys) == (
        f"error: mlflow:{url}#{missing}: no trace '{missing}' on this server (HTTP 404): check the trace id and the URL")
    line = fails(["explain", f"mlflow:{url}#{bare}"], capsys)
    assert line.startswith(f"error: mlflow-{bare}.json") and "RETRIEVER" in line, line
