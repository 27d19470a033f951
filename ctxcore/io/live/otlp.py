"""OTLP/HTTP trace requests decoded with the ``opentelemetry-proto`` messages and cut into one request per trace
(binary protobuf, what the store keeps), turned into the OTLP JSON the file readers take
(:mod:`ctxcore.io.formats.otlp`) only when a run is read, so a stored run reads exactly like a file and the
acknowledgement never waits for a JSON conversion.

The rules followed, from the OTLP specification (open-telemetry/opentelemetry-specification
``specification/protocol/otlp.md``, "OTLP/HTTP"; the same text as opentelemetry-proto ``docs/specification.md``):

* requests are ``POST /v1/traces`` with an ``ExportTraceServiceRequest`` body, binary protobuf
  (``Content-Type: application/x-protobuf``) or its JSON mapping (``application/json``) on the same port; the
  client MAY gzip it and then MUST send ``Content-Encoding: gzip``;
* the response uses the request's Content-Type; full success is ``200`` with an ``ExportTraceServiceResponse``
  whose ``partial_success`` is left unset; when some spans are refused it is still ``200``, with
  ``partial_success.rejected_spans`` and a human-readable English ``error_message``;
* data that cannot be decoded is ``400 Bad Request`` (not retried); every 4xx/5xx body is a ``google.rpc.Status``
  with a developer-facing ``message``; an overloaded server answers ``429`` or ``503`` and MAY add
  ``Retry-After`` (seconds); 429, 502, 503 and 504 are the only statuses a client retries;
* JSON: trace and span ids are hex strings (not base64 as the plain protobuf JSON mapping would have them),
  enums are integers, field names lowerCamelCase (receivers also accept the proto names).

A wrong Content-Type is ``415 Unsupported Media Type`` and a body over the size limit ``413`` (plain HTTP: the
specification leaves "all other responses" to the HTTP specifications).
"""

from __future__ import annotations

import base64
import json
import zlib
from dataclasses import dataclass, field
from typing import Optional

from ..limits import MAX_KEYS

try:  # the live endpoint's own dependency (requirements-live.txt); the rest of ctxcore runs without it
    from google.protobuf import json_format
    from google.protobuf.message import DecodeError
    from google.rpc import status_pb2
    from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
except ImportError:  # pragma: no cover - exercised only where the package is absent
    trace_service_pb2 = None

MAX_REQUEST_BYTES = 16 * 1024 * 1024   # one request's body as sent (compressed or not): 413 above it
MAX_DECODED_BYTES = 64 * 1024 * 1024   # one body once gunzipped (a gzip bomb stops here): 413 above it
MAX_SPAN_BYTES = 2 * 1024 * 1024       # one span encoded (its attributes, events, links): refused above it
PROTOBUF = "application/x-protobuf"
JSON = "application/json"
_ID_FIELDS = ("traceId", "spanId", "parentSpanId")


class WireError(Exception):
    """A request the endpoint refuses whole: the HTTP status the OTLP specification names, and why."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


@dataclass
class Batch:
    """What one request holds: per trace id (hex), the trace's spans as one request (protobuf bytes from
    :func:`split`, OTLP JSON text from :func:`split_json`), their count, the service; and the spans refused, with
    why."""
    traces: dict = field(default_factory=dict)     # trace id -> {"body": bytes | str, "spans": int, "service": str}
    rejected: int = 0
    reasons: dict = field(default_factory=dict)    # reason -> count

    @property
    def spans(self) -> int:
        return sum(t["spans"] for t in self.traces.values())


def available() -> bool:
    return trace_service_pb2 is not None


def media_type(content_type: Optional[str]) -> str:
    """``application/x-protobuf`` or ``application/json`` from a Content-Type header (parameters dropped); 415
    for anything else."""
    kind = (content_type or "").split(";", 1)[0].strip().lower()
    if kind not in (PROTOBUF, JSON):
        raise WireError(415, f"Content-Type {kind or '(none)'!r} is not OTLP: send {PROTOBUF} or {JSON}")
    return kind


def gunzip(body: bytes, limit: int = MAX_DECODED_BYTES) -> bytes:
    """The gzip body decompressed, never past ``limit`` bytes (a small bomb cannot fill the memory)."""
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        out = inflater.decompress(body, limit + 1)
    except zlib.error as err:
        raise WireError(400, f"the gzip body cannot be decompressed ({err})") from None
    if len(out) > limit or inflater.unconsumed_tail:
        raise WireError(413, f"the body decompresses to more than {limit // 2**20} MiB; the limit is "
                             f"{limit // 2**20} MiB")
    if not inflater.eof:
        raise WireError(400, "the gzip body is truncated")
    return out


def body_of(raw: bytes, encoding: Optional[str]) -> bytes:
    enc = (encoding or "identity").strip().lower()
    if enc == "gzip":
        return gunzip(raw)
    if enc in ("identity", ""):
        return raw
    raise WireError(415, f"Content-Encoding {enc!r} is not supported: send gzip or none")


def _b64_ids(span: dict) -> None:
    """OTLP JSON's hex ids as the base64 the protobuf JSON mapping parses (in place)."""
    for key, snake in (("traceId", "trace_id"), ("spanId", "span_id"), ("parentSpanId", "parent_span_id")):
        for name in (key, snake):
            value = span.get(name)
            if isinstance(value, str) and value:
                try:
                    span[name] = base64.b64encode(bytes.fromhex(value)).decode()
                except ValueError:
                    raise WireError(400, f"span field {name!r}: {value[:40]!r} is not a hex id") from None


def _from_json(body: bytes):
    try:
        data = json.loads(body)
    except (ValueError, RecursionError) as err:
        raise WireError(400, f"the JSON body cannot be read ({str(err)[:120]})") from None
    if not isinstance(data, dict):
        raise WireError(400, "the JSON body is not an ExportTraceServiceRequest object")
    for rs in _items(data, "resourceSpans", "resource_spans"):
        for ss in _items(rs, "scopeSpans", "scope_spans"):
            for span in _items(ss, "spans", "spans"):
                _b64_ids(span)
                for link in _items(span, "links", "links"):
                    _b64_ids(link)
    try:
        return json_format.ParseDict(data, trace_service_pb2.ExportTraceServiceRequest(), ignore_unknown_fields=True)
    except (json_format.ParseError, RecursionError, ValueError, TypeError) as err:
        raise WireError(400, f"the JSON body is not an ExportTraceServiceRequest ({str(err)[:160]})") from None


def _items(obj, camel: str, snake: str) -> list:
    items = obj.get(camel, obj.get(snake)) if isinstance(obj, dict) else None
    return [x for x in items if isinstance(x, dict)] if isinstance(items, list) else []


def decode(raw: bytes, content_type: Optional[str], encoding: Optional[str] = None):
    """The ``ExportTraceServiceRequest`` a request carries; :class:`WireError` (415, 413 or 400) when it
    carries none."""
    if trace_service_pb2 is None:
        raise WireError(503, "the endpoint needs opentelemetry-proto (pip install -r requirements-live.txt)")
    kind = media_type(content_type)
    if len(raw) > MAX_REQUEST_BYTES:
        raise WireError(413, f"the body is {len(raw):,} bytes; the limit is {MAX_REQUEST_BYTES:,}")
    body = body_of(raw, encoding)
    if kind == JSON:
        return _from_json(body)
    try:
        return trace_service_pb2.ExportTraceServiceRequest.FromString(body)
    except (DecodeError, RecursionError) as err:
        raise WireError(400, f"the protobuf body is not an ExportTraceServiceRequest ({str(err)[:160]})") from None


def _refusal(span) -> Optional[str]:
    """Why one span is not stored, or None."""
    if len(span.trace_id) != 16 or not any(span.trace_id) or len(span.span_id) != 8 or not any(span.span_id):
        return "invalid trace or span id (16 and 8 non-zero bytes required)"
    if len(span.attributes) > MAX_KEYS:
        return f"more than {MAX_KEYS:,} attributes"
    if span.ByteSize() > MAX_SPAN_BYTES:
        return f"over {MAX_SPAN_BYTES // 2**20} MiB encoded"
    return None


def _hex_ids(span: dict) -> dict:
    """The protobuf JSON mapping's base64 ids back to OTLP JSON's hex (in place)."""
    for key in _ID_FIELDS:
        if span.get(key):
            span[key] = base64.b64decode(span[key]).hex()
    for link in span.get("links") or ():
        for key in ("traceId", "spanId"):
            if link.get(key):
                link[key] = base64.b64decode(link[key]).hex()
    return span


def service_of(resource) -> str:
    for kv in resource.attributes:
        if kv.key == "service.name":
            return kv.value.string_value
    return ""


def _refused(batch: Batch, why: str) -> None:
    batch.rejected += 1
    batch.reasons[why] = batch.reasons.get(why, 0) + 1


def split(request) -> Batch:
    """The request's spans grouped by trace id, each trace's spans as one ``ExportTraceServiceRequest`` in binary
    protobuf (resource and scope kept), the refused spans counted by reason.

    The acknowledgement path: the messages are copied and serialised by the C protobuf runtime, so a 512-span
    request costs about a millisecond; the OTLP JSON a reader takes is made only when a run is read
    (:func:`to_json`), which gives what :func:`split_json` gives."""
    batch = Batch()
    grouped: dict = {}   # trace id (bytes) -> {"service", "parts": {(resource index, scope index): [spans]}}
    for i, rs in enumerate(request.resource_spans):
        service = None
        for j, ss in enumerate(rs.scope_spans):
            for span in ss.spans:
                why = _refusal(span)
                if why:
                    _refused(batch, why)
                    continue
                group = grouped.get(span.trace_id)
                if group is None:
                    service = service_of(rs.resource) if service is None else service
                    group = grouped[span.trace_id] = {"service": service, "parts": {}}
                group["parts"].setdefault((i, j), []).append(span)
    for tid, g in grouped.items():
        out = trace_service_pb2.ExportTraceServiceRequest()
        for (i, j), spans in g["parts"].items():
            rs, ss = request.resource_spans[i], request.resource_spans[i].scope_spans[j]
            part = out.resource_spans.add(schema_url=rs.schema_url)
            part.resource.CopyFrom(rs.resource)
            scope = part.scope_spans.add(schema_url=ss.schema_url)
            scope.scope.CopyFrom(ss.scope)
            scope.spans.extend(spans)
        batch.traces[tid.hex()] = {"body": out.SerializeToString(), "service": g["service"],
                                   "spans": sum(len(spans) for spans in g["parts"].values())}
    return batch


def to_json(body: bytes) -> str:
    """One stored trace (:func:`split`'s protobuf body) as the OTLP JSON request line the file readers take."""
    if trace_service_pb2 is None:
        raise WireError(503, "reading this store needs opentelemetry-proto (pip install -r requirements-live.txt)")
    request = trace_service_pb2.ExportTraceServiceRequest.FromString(body)
    return _json_line([(json_format.MessageToDict(rs.resource), json_format.MessageToDict(ss.scope),
                        [_span_json(span) for span in ss.spans])
                       for rs in request.resource_spans for ss in rs.scope_spans])


def split_json(request) -> Batch:
    """The plain definition :func:`split` and :func:`to_json` speed up (a test holds them equal): every span
    converted to OTLP JSON as it is grouped, about 0.15 ms a span."""
    batch = Batch()
    grouped: dict = {}   # trace id -> {"service", "parts": {(resource index, scope index): (resource, scope, spans)}}
    for i, rs in enumerate(request.resource_spans):
        resource = json_format.MessageToDict(rs.resource)
        service = service_of(rs.resource)
        for j, ss in enumerate(rs.scope_spans):
            scope = json_format.MessageToDict(ss.scope)
            for span in ss.spans:
                why = _refusal(span)
                if why:
                    _refused(batch, why)
                    continue
                group = grouped.setdefault(span.trace_id.hex(), {"service": service, "parts": {}})
                group["parts"].setdefault((i, j), (resource, scope, []))[2].append(_span_json(span))
    for tid, g in grouped.items():
        batch.traces[tid] = {"body": _json_line(list(g["parts"].values())), "service": g["service"],
                             "spans": sum(len(p[2]) for p in g["parts"].values())}
    return batch


def _span_json(span) -> dict:
    return _hex_ids(json_format.MessageToDict(span, use_integers_for_enums=True))


def _json_line(parts: list) -> str:
    """(resource, scope, spans) parts as one OTLP JSON ``ExportTraceServiceRequest`` line."""
    request = {"resourceSpans": [{"resource": res, "scopeSpans": [{"scope": scope, "spans": spans}]}
                                 for res, scope, spans in parts]}
    return json.dumps(request, ensure_ascii=False, separators=(",", ":"))


def refusal_message(batch: Batch) -> str:
    """The partial success's English message: how many spans were refused, and why."""
    why = "; ".join(f"{n} {reason}" for reason, n in sorted(batch.reasons.items()))
    return f"{batch.rejected} span{'s' if batch.rejected != 1 else ''} rejected: {why}"


def response(kind: str, rejected: int = 0, message: str = "") -> bytes:
    """An ``ExportTraceServiceResponse`` in the request's encoding; ``partial_success`` set only when a span was
    refused."""
    msg = trace_service_pb2.ExportTraceServiceResponse()
    if rejected:
        msg.partial_success.rejected_spans = rejected
        msg.partial_success.error_message = message
    return _encode(msg, kind)


def status(kind: str, message: str) -> bytes:
    """A failure's ``google.rpc.Status`` body in the request's encoding (protobuf when it named no encoding)."""
    return _encode(status_pb2.Status(message=message), kind)


def _encode(msg, kind: str) -> bytes:
    if kind == JSON:
        return json.dumps(json_format.MessageToDict(msg), separators=(",", ":")).encode()
    return msg.SerializeToString()


def is_json(content_type: Optional[str]) -> bool:
    return (content_type or "").split(";", 1)[0].strip().lower() == JSON

