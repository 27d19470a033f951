"""OpenInference spans as exported (Phoenix span JSON, pandas ``to_json`` in any orient, JSONL,
OTLP JSON) found in parsed JSON and read into one :class:`Span` shape, in time linear in the input."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from ...errors import InputError
from ..limits import MAX_KEYS, MAX_SPANS
from ..reading import NotJson, parse_json
from .genai import convention, step_documents, to_openinference
from .values import as_str, attribute_pairs, dig, finish, first, put


@dataclass
class Span:
    """One span as the mapping reads it, whatever shape it was exported in (``attrs`` fully nested)."""

    index: int
    trace_id: Optional[str]
    span_id: Optional[str]
    parent_id: Optional[str]
    name: str
    kind: str
    start: Any
    attrs: dict = field(default_factory=dict)
    end: Any = None
    convention: Optional[str] = None  # the attribute convention it was logged in (gen_ai, traceloop ...)

    def label(self) -> str:
        return f"{self.kind or 'span'} '{self.name}'"


_SPAN_FIELDS = ("span_kind", "spanKind", "context.span_id", "context.trace_id", "spanId", "parentSpanId")


def is_span(obj) -> bool:
    """An OpenInference span in any export shape (and never a ctxcore candidate)."""
    if not isinstance(obj, dict) or "text" in obj or "candidates" in obj:
        return False
    if any(k in obj for k in _SPAN_FIELDS):
        return True
    ctx = obj.get("context")
    if isinstance(ctx, dict) and {"span_id", "trace_id", "spanId", "traceId"} & set(ctx):
        return True
    if any(isinstance(k, str) and k.startswith("attributes.") for k in obj):
        return True
    attrs = obj.get("attributes")
    if isinstance(attrs, dict):
        return "openinference.span.kind" in attrs or isinstance(attrs.get("openinference"), dict)
    if isinstance(attrs, list):
        return any(isinstance(a, dict) and a.get("key") == "openinference.span.kind" for a in attrs)
    return False


# the top-level fields parse_spans reads (a dotted column such as ``context.span_id`` by its first part)
_READ = frozenset({"context", "trace_id", "traceId", "span_id", "spanId", "parent_id", "parentId", "parent_span_id",
                   "parentSpanId", "name", "span_kind", "spanKind", "start_time", "startTime", "startTimeUnixNano",
                   "start_time_unix_nano", "end_time", "endTime", "endTimeUnixNano", "end_time_unix_nano",
                   "attributes"})


def read_column(name: str) -> bool:
    """Whether a table column is one parse_spans reads (a table reader need not decode the others)."""
    return name.split(".", 1)[0] in _READ


_INDEX_FIELD = "context.span_id"  # the index of get_spans_dataframe()
_PANDAS_INDEX = "__index_level_"  # how pyarrow stores an unnamed (or clashing) pandas index


def _table_limits(columns: int, rows: int, source: str) -> None:
    if columns > MAX_KEYS:
        raise InputError(f"a table of {columns} columns; the limit is {MAX_KEYS}", source=source, field="columns")
    if rows > MAX_SPANS:
        raise InputError(f"a table of {rows} rows (spans); the limit is {MAX_SPANS}", source=source, field="index")


def _columns_to_records(data: dict, source: str) -> Optional[list]:
    """pandas ``to_json`` in ``columns`` or ``split`` orient, as records. Only the cells present are
    built: a sparse ``columns`` table (each column naming rows of its own) stays as small as its file."""
    if isinstance(data.get("columns"), list) and isinstance(data.get("data"), list) \
            and all(isinstance(r, list) for r in data["data"]):
        _table_limits(len(data["columns"]), len(data["data"]), source)
        cols = [str(c) for c in data["columns"]]
        index = data.get("index") if isinstance(data.get("index"), list) else None
        rows = []
        for i, row in enumerate(data["data"]):
            rec = dict(zip(cols, row))
            if index is not None and _INDEX_FIELD not in rec and i < len(index):
                rec[_INDEX_FIELD] = index[i]
            rows.append(rec)
        return rows if any(is_span(r) for r in rows) else None
    if data and all(isinstance(v, dict) for v in data.values()) and any(is_span(v) for v in data.values()):
        _table_limits(0, len(data), source)  # pandas ``index`` orient: {row index: {column: value}}
        rows = []
        for idx, row in data.items():
            rec = {k: v for k, v in row.items() if v is not None}
            rec.setdefault(_INDEX_FIELD, idx)
            rows.append(rec)
        return rows
    if data and all(isinstance(v, dict) for v in data.values()) \
            and any(k in data for k in ("span_kind", "context.trace_id", "context.span_id", "parent_id",
                                        "attributes.openinference.span.kind")):
        _table_limits(len(data), 0, source)
        rows: dict = {}  # row index -> its cells, rows in order of first appearance, cells in column order
        for col, values in data.items():
            for idx, value in values.items():
                rec = rows.get(idx)
                if rec is None:
                    _table_limits(0, len(rows) + 1, source)
                    rec = rows[idx] = {}
                if value is not None:  # pandas writes every absent cell as null; the reader skips nulls anyway
                    rec[col] = value
        if _INDEX_FIELD not in data:
            for idx, rec in rows.items():
                rec[_INDEX_FIELD] = idx
        return list(rows.values())
    return None


def span_records(data, source: str = "input") -> Optional[list]:
    """The span objects in parsed JSON (or JSONL objects), or None when it holds none."""
    if isinstance(data, list):
        if data and any(is_span(x) for x in data) and not any(isinstance(x, dict) and "text" in x for x in data):
            return data
        return None
    if not isinstance(data, dict) or "candidates" in data or "format" in data:
        return None
    if isinstance(data.get("resourceSpans"), list):  # OTLP JSON
        spans = []
        for rs in (x for x in data["resourceSpans"] if isinstance(x, dict)):
            scopes = rs.get("scopeSpans") or rs.get("instrumentationLibrarySpans")
            for ss in (x for x in scopes if isinstance(x, dict)) if isinstance(scopes, list) else ():
                spans.extend(ss["spans"] if isinstance(ss.get("spans"), list) else [])
        return spans or None
    for key in ("spans", "data"):
        if isinstance(data.get(key), list):
            found = span_records(data[key], source)
            if found is not None:
                return found
    rows = _columns_to_records(data, source)
    if rows is not None:
        return rows
    return [data] if is_span(data) else None


def _pairs(value, source: str, i: int) -> list:
    """The attribute pairs of one span; an ``attributes`` JSON string is checked like a file's JSON
    (a string nested 50,000 deep is one line, not a crash)."""
    if isinstance(value, str) and value.strip()[:1] in ("{", "["):
        try:
            value = parse_json(value, source)
        except NotJson:
            return []
        except InputError as err:
            inner = err.field or ""
            field = f"spans[{i}].attributes" + ("." + inner if inner and not inner.startswith("[") else inner)
            raise InputError(f"its JSON string: {err.message}", source=source, field=_short(field)) from None
    return attribute_pairs(value)


def _short(field: str) -> str:
    return field if len(field) <= 80 else field[:77] + "..."


def _put(node: dict, key: str, value, source: str, where: str) -> None:
    """One attribute put in place; too deep a nest is refused naming the span and the key."""
    try:
        put(node, key.split("."), value)
    except InputError as err:
        raise InputError(err.message, source=source, field=_short(where + key)) from None


def parse_spans(records: list, source: str) -> list[Span]:
    """Every span record in one shape; each record is read once, so the time is linear in the file."""
    if len(records) > MAX_SPANS:
        raise InputError(f"{len(records)} spans; the limit is {MAX_SPANS}", source=source, field="spans")
    spans = []
    for i, raw in enumerate(records):
        if not isinstance(raw, dict):
            raise InputError(f"span {i + 1} is a {type(raw).__name__}, not an object", source=source,
                             field=f"spans[{i}]")
        top: dict = {}
        attrs: dict = {}
        pairs = _pairs(raw.get("attributes"), source, i) if "attributes" in raw else []
        if len(raw) + len(pairs) > MAX_KEYS:
            raise InputError(f"span {i + 1} has {len(raw) + len(pairs)} keys and attributes; the limit is {MAX_KEYS}",
                             source=source, field=f"spans[{i}]")
        for key, value in raw.items():
            key = str(key)
            if key.startswith(_PANDAS_INDEX):
                continue
            if key == "attributes":
                for k, v in pairs:
                    _put(attrs, str(k), v, source, f"spans[{i}].attributes.")
            elif key.startswith("attributes."):
                _put(attrs, key[len("attributes."):], value, source, f"spans[{i}].attributes.")
            else:
                _put(top, key, value, source, f"spans[{i}].")
        top, attrs = finish(top), finish(attrs)
        top = top if isinstance(top, dict) else {}
        attrs = attrs if isinstance(attrs, dict) else {}
        conv = convention(attrs) if not dig(attrs, "openinference", "span", "kind") else None
        if conv is not None:
            attrs = to_openinference(attrs)
        attrs = step_documents(attrs)
        ctx = top.get("context") if isinstance(top.get("context"), dict) else {}
        kind = first(*(k for k in (top.get("span_kind"), top.get("spanKind")) if k != "UNKNOWN"),
                     dig(attrs, "openinference", "span", "kind"), top.get("span_kind"))
        kind = str(kind).upper() if kind is not None else ""
        spans.append(Span(
            index=i,
            trace_id=as_str(first(ctx.get("trace_id"), ctx.get("traceId"), top.get("trace_id"), top.get("traceId"))),
            span_id=as_str(first(ctx.get("span_id"), ctx.get("spanId"), top.get("span_id"), top.get("spanId"))),
            parent_id=as_str(first(top.get("parent_id"), top.get("parentId"), top.get("parent_span_id"),
                                   top.get("parentSpanId"))),
            name=str(first(top.get("name"), kind.lower(), f"span {i + 1}")),
            kind=kind,
            start=first(top.get("start_time"), top.get("startTime"), top.get("startTimeUnixNano"),
                        top.get("start_time_unix_nano")),
            end=first(top.get("end_time"), top.get("endTime"), top.get("endTimeUnixNano"),
                      top.get("end_time_unix_nano")),
            attrs=attrs, convention=conv or ("openinference" if attrs else None)))
    return spans
