"""Attribute values as logged: every accepted shape (flattened keys, semantic-convention keys,
fully nested objects, OTLP key/value lists, JSON strings) becomes one nested shape, and small
readers turn loose values (numbers as strings, floats for ints) into what the mapping needs."""

from __future__ import annotations

import ast
import json
import math
import re
from datetime import datetime, timezone
from typing import Optional

from ...errors import InputError
from ..limits import MAX_DEPTH, MAX_FIELD_CHARS
from ..reading import check_shape


_OPAQUE = frozenset({"metadata", "invocation_parameters", "variables", "parameters", "json_schema",
                     "modelParameters", "usageDetails", "costDetails"})


class _Raw:
    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value


def _segment(part: str):
    return int(part) if part.isascii() and part.isdigit() else part


def _tree(value, name: Optional[str] = None, depth: int = 0):
    if name in _OPAQUE:
        return _Raw(value)
    if isinstance(value, dict):
        node: dict = {}
        for key, v in value.items():
            put(node, str(key).split("."), v, depth)
        return node
    if isinstance(value, list) and value:
        _deep_enough(depth + 1)
        return {i: _tree(v, None, depth + 1) for i, v in enumerate(value)}
    return value


def _deep_enough(depth: int) -> None:
    """Refuse a nest the recursive readers below could not walk: a key of thousands of dots is as deep
    as thousands of brackets. The caller names the file and the field."""
    if depth > MAX_DEPTH:
        raise InputError(f"attributes nested more than {MAX_DEPTH} levels deep (each part of a dotted key is a level)")


def put(node: dict, parts: list, value, depth: int = 0) -> None:
    """``value`` at the dotted path ``parts`` under ``node``; ``depth``, how deep ``node`` already sits."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return  # pandas writes absent columns as null/NaN
    depth += len(parts)
    _deep_enough(depth)
    for part in parts[:-1]:
        key = _segment(part)
        nxt = node.get(key)
        if not isinstance(nxt, dict):
            nxt = node[key] = {}
        node = nxt
    key, new = _segment(parts[-1]), _tree(value, parts[-1], depth)
    if isinstance(node.get(key), dict) and isinstance(new, dict):
        _merge(node[key], new)
    else:
        node[key] = new


def _merge(a: dict, b: dict) -> None:
    for key, v in b.items():
        if isinstance(a.get(key), dict) and isinstance(v, dict):
            _merge(a[key], v)
        else:
            a[key] = v


def finish(node):
    if isinstance(node, _Raw):
        return node.value
    if isinstance(node, dict):
        if node and all(isinstance(k, int) for k in node):
            return [finish(node[k]) for k in sorted(node)]
        return {str(k): finish(v) for k, v in node.items()}
    return node


def unflatten(pairs) -> dict:
    """One nested shape for flattened, partly nested or nested attributes.

    Keys are split at dots, digit segments index lists, and nested objects are split too,
    except free-form values such as ``document.metadata``.

    >>> unflatten({"retrieval.documents.0.document.content": "A", "retrieval.documents.1.document.id": 7})
    {'retrieval': {'documents': [{'document': {'content': 'A'}}, {'document': {'id': 7}}]}}
    >>> unflatten({"retrieval.documents": [{"document.content": "A", "document.metadata": {"a.b": 1}}]})
    {'retrieval': {'documents': [{'document': {'content': 'A', 'metadata': {'a.b': 1}}}]}}
    """
    node: dict = {}
    for key, value in (pairs.items() if isinstance(pairs, dict) else pairs):
        put(node, str(key).split("."), value)
    out = finish(node)
    return out if isinstance(out, dict) else {}


def dig(obj, *path):
    for key in path:
        if isinstance(obj, dict):
            obj = obj.get(key)
        elif isinstance(obj, list) and isinstance(key, int) and -len(obj) <= key < len(obj):
            obj = obj[key]
        else:
            return None
    return obj


def _any_value(v):
    """An OTLP JSON AnyValue as a plain value: the protobuf JSON mapping's lowerCamelCase names
    (``stringValue``, ``intValue`` as a string, ``arrayValue``, ``kvlistValue``) or the proto field
    names (``string_value`` ..., as Phoenix's ``/v1/projects/{id}/spans/otlpv1`` writes them)."""
    if not isinstance(v, dict):
        return v
    for key in ("stringValue", "boolValue", "doubleValue", "bytesValue",
                "string_value", "bool_value", "double_value", "bytes_value"):
        if key in v and v[key] is not None:
            return v[key]
    for key in ("intValue", "int_value"):
        if key in v and v[key] is not None:
            try:
                return int(v[key])
            except (TypeError, ValueError):
                return v[key]
    for key in ("arrayValue", "array_value"):
        if key in v and v[key] is not None:
            return [_any_value(x) for x in (v[key] or {}).get("values") or []]
    for key in ("kvlistValue", "kvlist_value"):
        if key in v and v[key] is not None:
            return {kv.get("key"): _any_value(kv.get("value")) for kv in (v[key] or {}).get("values") or []}
    return None


def attribute_pairs(value) -> list:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return []
    if isinstance(value, dict):
        return list(value.items())
    if isinstance(value, list):
        return [(a["key"], _any_value(a.get("value"))) for a in value if isinstance(a, dict) and "key" in a]
    return []


def first(*values):
    for v in values:
        if v is not None and v != "":
            return v
    return None


def as_str(v) -> Optional[str]:
    if v is None or v == "" or isinstance(v, bool):
        return None
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    return str(v)


def as_number(v) -> Optional[float]:
    if isinstance(v, bool) or v is None:
        return None
    if isinstance(v, str):
        try:
            v = float(v)
        except ValueError:
            return None
    if isinstance(v, (int, float)) and math.isfinite(v):
        return float(v)
    return None


def as_int(v) -> Optional[int]:
    n = as_number(v)
    return int(n) if n is not None and n.is_integer() and n >= 0 else None


def _shallow(value, text: str) -> bool:
    """Nested no deeper than MAX_DEPTH: what a string parsed into ``value`` may hold and still be read
    as a value (its string lengths are bounded already, as parts of ``text``)."""
    try:
        check_shape(value, "value", size=min(len(text), MAX_FIELD_CHARS))
    except InputError:
        return False
    return True


def json_value(v, literal: bool = False):
    """A JSON string parsed (with ``literal``, a Python literal too); other values unchanged. A
    JSON-encoded string (``"\"What is ...?\""``, as SDKs write a string input twice encoded) is
    unquoted, and read again when it held an object. A string nested deeper than MAX_DEPTH stays text."""
    if isinstance(v, str) and len(v) >= 2 and v.lstrip()[:1] == '"' and v.rstrip()[-1:] == '"':
        try:
            inner = json.loads(v)
        except (ValueError, RecursionError):
            return v
        return json_value(inner, literal) if isinstance(inner, str) else inner if _shallow(inner, v) else v
    if isinstance(v, str) and v.strip()[:1] in ("{", "["):
        try:
            parsed = json.loads(v)
        except (ValueError, RecursionError):
            if literal and len(v) < 100_000:
                try:
                    parsed = ast.literal_eval(v)
                except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                    return v
                return parsed if _shallow(parsed, v) else v
            return v
        return parsed if _shallow(parsed, v) else v
    return v


def squash(text: str) -> str:
    return " ".join(text.split())


def snippet(text: str) -> str:
    return squash(text)[:80]


def _timestamp(v) -> Optional[float]:
    if isinstance(v, bool):
        return None
    if isinstance(v, (int, float)):
        return float(v)
    if isinstance(v, str):
        s = v.strip()
        if re.fullmatch(r"\d+(\.\d+)?", s):
            return float(s)
        try:  # RFC 3339 allows a lower-case "t" and "z" (Python reads "Z" itself from 3.11)
            dt = datetime.fromisoformat(s.upper().replace(" ", "T", 1))
        except ValueError:
            return None
        if dt.tzinfo is None:
            dt = dt.replace(tzinfo=timezone.utc)
        return dt.timestamp()
    return None


def epoch_seconds(v) -> Optional[float]:
    """A logged time as seconds since the epoch: ISO text, a datetime, or a number in seconds,
    milliseconds, microseconds or nanoseconds (told apart by size, as exporters use all four)."""
    if isinstance(v, datetime):
        return (v if v.tzinfo else v.replace(tzinfo=timezone.utc)).timestamp()
    t = _timestamp(v)
    if t is None:
        return None
    if abs(t) >= 1e17:  # nanoseconds (a count of seconds reaches 1e11 only in the year 5138)
        return t / 1e9
    if abs(t) >= 1e14:
        return t / 1e6
    if abs(t) >= 1e11:
        return t / 1e3
    return t


def iso_time(v) -> Optional[str]:
    """A logged time as ISO 8601 UTC text (milliseconds), or None when it is not a time."""
    t = epoch_seconds(v)
    if t is None:
        return None
    try:
        return datetime.fromtimestamp(t, tz=timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    except (OverflowError, OSError, ValueError):
        return None


def time_order(items: list, start, index) -> list:
    """``items`` by start time when every one has a readable time, else in file order."""
    times = [epoch_seconds(start(x)) for x in items]
    if all(t is not None for t in times):
        return [x for _, x in sorted(zip(times, items), key=lambda tx: (tx[0], index(tx[1])))]
    return sorted(items, key=index)


def listing(items: list[str], most: int = 8) -> str:
    return ", ".join(items[:most]) + (f" and {len(items) - most} more" if len(items) > most else "")


def cycle_cuts(items: list, by_id: dict, parent_of) -> list:
    """The items whose parent link closes a cycle of parents (A under B under A, or A under itself),
    one per cycle: read as roots, a cycle hides no span. Linear: each item is walked once."""
    done: set = set()
    cuts = []
    for item in items:
        path, on_path, node = [], set(), item
        while node is not None and id(node) not in done:
            if id(node) in on_path:
                cuts.append(path[-1])
                break
            on_path.add(id(node))
            path.append(node)
            node = by_id.get(parent_of(node))
        done.update(on_path)
    return cuts


def acyclic(items: list, by_id: dict, parent_of, what: str, warnings: list[str]):
    """``parent_of`` with every cycle of parents cut (the cut item is a root), and a warning for each cut."""
    cut = {id(x) for x in cycle_cuts(items, by_id, parent_of)}
    for x in items:
        if id(x) in cut:
            warnings.append(f"{what(x)}: its parent {parent_of(x)} closes a cycle of parents; read as a root")
    return lambda x: None if id(x) in cut else parent_of(x)


def outermost(members: list, by_id: dict, parent_of) -> list:
    """``members`` without those nested under another member. Linear: each ancestor chain is
    walked once and remembered, however many members sit below it."""
    member = {id(m) for m in members}
    above: dict = {}  # id(node) -> a member (or a parent cycle) sits above it
    out = []
    for m in members:
        path, seen, node = [], set(), by_id.get(parent_of(m))
        while True:
            if node is None:
                nested = False
                break
            if id(node) in member or id(node) in seen:  # a cycle never reaches a root: nested, as a member
                nested = True
                break
            if id(node) in above:
                nested = above[id(node)]
                break
            seen.add(id(node))
            path.append(node)
            node = by_id.get(parent_of(node))
        for n in path:
            above[id(n)] = nested
        if not nested:
            out.append(m)
    return out
