"""``python -m ctxcore serve``: an OTLP/HTTP endpoint (``POST /v1/traces``, port 4318) that stores the spans it
acknowledges in the live store (:mod:`ctxcore.io.live.store`), where ``store:#latest`` and the app's Live page
read them.

The standard library's ``ThreadingHTTPServer``, bounded everywhere: at most :data:`MAX_CONNECTIONS` requests are
handled at once (the next gets 503 at once), a body over the size limit is refused from its Content-Length
before it is read (413), a client that stops sending is dropped after :data:`SOCKET_TIMEOUT` seconds, and the
store refuses a write it cannot take soon (503 with Retry-After) instead of queueing it without end. Statuses
and bodies follow the OTLP specification (see :mod:`ctxcore.io.live.otlp`). Every refused request is one log
line (client, status, why); nothing stored before it is touched.

OTLP/gRPC (port 4317) is not served: grpcio is a large native dependency for a debugger, and every OpenTelemetry
SDK and the Collector can export OTLP/HTTP; a gRPC-only sender goes through a Collector (README, "Send traces
live").
"""

from __future__ import annotations

import logging
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Optional

from .io.live import otlp
from .io.live.store import Busy, Store

PATH = "/v1/traces"
DEFAULT_PORT = 4318
MAX_CONNECTIONS = 32      # requests handled at once; past it, 503 with Retry-After
SOCKET_TIMEOUT = 10.0     # seconds a client may pause while sending a request
log = logging.getLogger("ctxcore.serve")


def handle(store: Store, method: str, path: str, headers, raw: bytes) -> tuple[int, dict, bytes]:
    """One request as (status, response headers, body): the endpoint's whole decision, without a socket."""
    kind = otlp.JSON if otlp.is_json(headers.get("Content-Type")) else otlp.PROTOBUF
    if path.split("?", 1)[0] != PATH:
        return _failure(404, kind, f"no such path {path[:80]!r}: OTLP traces go to {PATH}")
    if method != "POST":
        return _failure(405, kind, f"{method} is not served: POST OTLP traces to {PATH}", {"Allow": "POST"})
    try:
        request = otlp.decode(raw, headers.get("Content-Type"), headers.get("Content-Encoding"))
        batch = otlp.split(request)
        store.add(batch.traces)
    except otlp.WireError as err:
        return _failure(err.status, kind, str(err))
    except Busy as err:
        return _failure(503, kind, str(err), {"Retry-After": str(err.retry_after)})
    message = otlp.refusal_message(batch) if batch.rejected else ""
    if batch.rejected:
        log.warning("partial success: %s", message)
    return 200, {"Content-Type": kind}, otlp.response(kind, batch.rejected, message)


def _failure(status: int, kind: str, message: str, extra: Optional[dict] = None) -> tuple[int, dict, bytes]:
    log.warning("refused (%d): %s", status, message)
    return status, {"Content-Type": kind, **(extra or {})}, otlp.status(kind, message)


class _Handler(BaseHTTPRequestHandler):
    server_version = "ctxcore-otlp"
    protocol_version = "HTTP/1.1"   # keep-alive, as the specification asks clients to
    timeout = SOCKET_TIMEOUT

    def do_POST(self):
        self._serve("POST")

    def do_GET(self):
        self._serve("GET")

    def _serve(self, method: str) -> None:
        kind = otlp.JSON if otlp.is_json(self.headers.get("Content-Type")) else otlp.PROTOBUF
        length = self.headers.get("Content-Length")
        if method == "POST" and (length is None or not length.strip().isdigit()):
            self.close_connection = True
            return self._send(*_failure(411, kind, "a Content-Length is required"))
        size = int(length or 0)
        if size > otlp.MAX_REQUEST_BYTES:
            self.close_connection = True   # the body is left unread: this connection ends after the answer
            return self._send(*_failure(413, kind, f"the body is {size:,} bytes; the limit is "
                                                   f"{otlp.MAX_REQUEST_BYTES:,}"))
        raw = self.rfile.read(size) if size else b""
        if len(raw) < size:
            self.close_connection = True
            return self._send(*_failure(400, kind, f"the body ended after {len(raw):,} of {size:,} bytes"))
        self._send(*handle(self.server.store, method, self.path, self.headers, raw))

    def _send(self, status: int, headers: dict, body: bytes) -> None:
        self.send_response(status)
        for key, value in headers.items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(body)))
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format, *args):  # noqa: A002 - the base class's name; one debug line per request
        log.debug("%s %s", self.address_string(), format % args)


class Endpoint(ThreadingHTTPServer):
    """The HTTP server with its store and a bound on the requests it handles at once."""
    daemon_threads = True
    block_on_close = False

    def __init__(self, address: tuple[str, int], store: Store, max_connections: int = MAX_CONNECTIONS):
        self.store = store
        self._slots = threading.BoundedSemaphore(max_connections)
        super().__init__(address, _Handler)

    def process_request(self, request, client_address):
        if not self._slots.acquire(blocking=False):
            log.warning("refused (503): %d requests are being handled already", MAX_CONNECTIONS)
            try:
                request.sendall(b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nContent-Length: 0\r\n"
                                b"Connection: close\r\n\r\n")
            except OSError:
                pass
            self.shutdown_request(request)
            return
        super().process_request(request, client_address)

    def process_request_thread(self, request, client_address):
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()


def start(port: int = DEFAULT_PORT, store: Optional[Store] = None, host: str = "127.0.0.1") -> Endpoint:
    """An endpoint serving on a daemon thread (the app's switch, the tests, the benchmark); port 0 picks one."""
    server = Endpoint((host, port), store or Store())
    threading.Thread(target=server.serve_forever, name="ctxcore-otlp", daemon=True).start()
    return server


def url(server: Endpoint) -> str:
    host, port = server.server_address[:2]
    return f"http://{host}:{port}{PATH}"
