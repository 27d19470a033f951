"""OTLP JSON: what the OpenTelemetry Collector's ``file`` exporter and the SDKs' JSON exporters
write, one ``ExportTraceServiceRequest`` per line in the JSONL form (so a file holds several
batches), and Phoenix's ``GET /v1/projects/{id}/spans/otlpv1`` (the same spans under ``data``,
with the proto field names: ``span_id``, ``string_value``).

Shape sources: open-telemetry/opentelemetry-proto ``opentelemetry/proto/trace/v1/trace.proto`` and
``docs/specification.md`` (JSON: lowerCamelCase field names, hex trace and span ids, 64-bit integers
as strings, ``AnyValue`` with ``stringValue``/``intValue``/``arrayValue``/``kvlistValue``);
Arize-ai/phoenix ``src/phoenix/server/api/routers/v1/spans.py`` (``OtlpSpan``, ``OtlpAnyValue``,
``span_search_otlpv1``: attributes flattened, ``{"next_cursor", "data": [...]}``).

Every span's attributes are then read as OpenInference ones (GenAI and OpenLLMetry attributes are
translated first, :mod:`.genai`), so the mapping rules are the OpenInference family's."""

from __future__ import annotations

import base64

from typing import Optional

from ..loaded import Loaded
from .family import Family
from .openinference import load_spans, trace_ids as _oi_trace_ids
from .spans import parse_spans

OTLP = "otlp"
PHOENIX_OTLP = "phoenix-otlp"


def _requests(data) -> Optional[list]:
    """The export requests in parsed JSON (one object, or the objects of a JSONL file)."""
    def is_request(x):
        return isinstance(x, dict) and isinstance(x.get("resourceSpans", x.get("resource_spans")), list)
    if is_request(data):
        return [data]
    if isinstance(data, list) and data and all(is_request(x) for x in data):
        return data
    return None


def _is_phoenix_span(x) -> bool:
    return isinstance(x, dict) and "span_id" in x and "trace_id" in x and \
        ("start_time_unix_nano" in x or isinstance(x.get("attributes"), list))


def _phoenix_spans(data) -> Optional[list]:
    pages = data if isinstance(data, list) and data and all(isinstance(p, dict) and "data" in p for p in data) \
        else [data]
    spans = []
    for page in pages:
        items = page.get("data") if isinstance(page, dict) else None
        if not isinstance(items, list) or not items or not all(_is_phoenix_span(x) for x in items):
            return None
        spans.extend(items)
    return spans


def hex_id(value):
    """An OTLP trace or span id as hex, as OTLP JSON writes it: protobuf's plain JSON mapping (``MessageToJson``,
    what an SDK's in-memory spans give when encoded by hand) writes the same 16 or 8 bytes as base64.

    >>> hex_id("A+FMbN4IIqFYIhCinrEWQg=="), hex_id("ESIzRFVmd4g="), hex_id("0af7651916cd43dd8448eb211c80319c")
    ('03e14c6cde0822a1582210a29eb11642', '1122334455667788', '0af7651916cd43dd8448eb211c80319c')
    """
    if isinstance(value, str) and len(value) in (12, 24) and value.endswith("="):
        try:
            raw = base64.b64decode(value, validate=True)
        except ValueError:
            return value
        if len(raw) in (8, 16):
            return raw.hex()
    return value


def _record(span: dict) -> dict:
    """An OTLP span as a span record the span reader takes (ids, times, the key/value attributes)."""
    get = lambda *names: next((span[n] for n in names if span.get(n) not in (None, "")), None)  # noqa: E731
    return {"name": span.get("name"),
            "context": {"trace_id": hex_id(get("traceId", "trace_id")), "span_id": hex_id(get("spanId", "span_id"))},
            "parent_id": hex_id(get("parentSpanId", "parent_span_id")),
            "start_time": get("startTimeUnixNano", "start_time_unix_nano"),
            "end_time": get("endTimeUnixNano", "end_time_unix_nano"),
            "attributes": span.get("attributes") or []}


def _dicts(items) -> list:
    return [x for x in items if isinstance(x, dict)] if isinstance(items, list) else []


def _otlp_spans(data) -> Optional[tuple[str, list]]:
    requests = _requests(data)
    if requests is not None:
        spans = []
        for req in requests:
            for rs in _dicts(req.get("resourceSpans", req.get("resource_spans"))):
                scopes = rs.get("scopeSpans", rs.get("scope_spans")) or rs.get("instrumentationLibrarySpans")
                for ss in _dicts(scopes):
                    spans.extend(_dicts(ss.get("spans")))
        return (OTLP, spans) if spans else None
    spans = _phoenix_spans(data) if isinstance(data, (dict, list)) else None
    return (PHOENIX_OTLP, spans) if spans else None


def _parsed(data, source: str):
    fmt, spans = _otlp_spans(data)
    return fmt, parse_spans([_record(s) for s in spans], source)


def _read(data, source: str, trace_id: Optional[str], texts: Optional[dict] = None) -> Loaded:
    fmt, spans = _parsed(data, source)
    return load_spans(spans, source, trace_id, fmt, texts)


def trace_ids(data) -> list[str]:
    found = _otlp_spans(data)
    return _oi_trace_ids([_record(s) for s in found[1]]) if found else []


FAMILY = Family(OTLP, matches=lambda data, source: _otlp_spans(data) is not None, load=_read, traces=trace_ids)
