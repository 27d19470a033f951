"""The trace's JSON Schema, generated from the record types so it cannot drift."""

from __future__ import annotations

import dataclasses
import math
import re
import typing
from typing import Any, Literal, Union

from ..records import FATE_MEANINGS, FORMAT, Block, Budget, Candidate, Config, Decision, Inputs, Logged, Prompt, \
    Sent, SentPassage, TokenizerInfo, Trace, TraceWarning, WARNING_KINDS

ENCODING_NAME = "^[A-Za-z0-9_.-]{1,64}$"  # what a tiktoken encoding name can look like (no markup, no paths)

# Logged.policy (ctxcore.analysis.policy.Policy.to_dict): the rules a logged pipeline appears to follow
POLICY = {
    "type": "object", "required": ["rules", "config", "cannot"],
    "description": "the rules the logged pipeline appears to follow, the ctxcore settings that reproduce them "
                   "(only those that differ from the defaults), and what those settings cannot express",
    "properties": {
        "rules": {"type": "array", "items": {
            "type": "object", "required": ["kind", "value", "evidence", "confidence"],
            "properties": {"kind": {"type": "string"}, "value": {},
                           "evidence": {"type": "string", "description": "one plain sentence with the numbers"},
                           "confidence": {"enum": ["stated", "certain", "likely", "guess"]}}}},
        "config": {"type": "object", "description": "settings of Config, by name"},
        "cannot": {"type": "array", "items": {"type": "string"}}}}

_PRIMITIVES = {str: {"type": "string"}, int: {"type": "integer"}, float: {"type": "number"},
               bool: {"type": "boolean"}, type(None): {"type": "null"}, Any: {}}


def _schema(tp) -> dict:
    if tp in _PRIMITIVES:
        return dict(_PRIMITIVES[tp])
    if tp is TraceWarning:
        return {"$ref": "#/$defs/TraceWarning"}
    if dataclasses.is_dataclass(tp):
        return {"$ref": f"#/$defs/{tp.__name__}"}
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is Literal:
        return {"enum": list(args)}
    if origin is Union:
        return {"anyOf": [_schema(a) for a in args]}
    if origin in (tuple, list):
        return {"type": "array", "items": _schema(args[0]) if args else {}}
    if origin is dict:
        return {"type": "object", "additionalProperties": _schema(args[1]) if args else {}}
    return {}


def _object(cls, required=None) -> dict:
    hints = typing.get_type_hints(cls)
    props = {f.name: _schema(hints[f.name]) for f in dataclasses.fields(cls)}
    if required is None:
        required = [f.name for f in dataclasses.fields(cls)
                    if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]
    out = {"type": "object", "properties": props, "required": required}
    if cls.__doc__:
        out["description"] = " ".join(cls.__doc__.split())
    return out


def trace_schema() -> dict:
    """JSON Schema (2020-12) of the ``ctxcore.trace/1`` format."""
    defs = {cls.__name__: _object(cls) for cls in (Candidate, Decision, Config, Budget, Inputs, TokenizerInfo,
                                                    Prompt, Logged, Sent, SentPassage)}
    block = _object(Block)
    block["properties"]["tokens"] = {"type": "integer", "description": "end_token - start_token"}
    defs["Block"] = block
    defs["Decision"]["properties"]["fate"]["description"] = "; ".join(
        f"{fate}: {meaning}" for fate, meaning in FATE_MEANINGS.items())
    defs["TraceWarning"] = {
        "type": "object", "required": ["kind", "ids", "message"],
        "description": "a warning: what kind it is, which candidates it is about, and a sentence",
        "properties": {"kind": {"type": "string", "description": "; ".join(f"{k}: {v}" for k, v in WARNING_KINDS.items())},
                       "ids": {"type": "array", "items": {"type": "string"}}, "message": {"type": "string"}}}
    defs["TokenizerInfo"]["properties"]["encoding"]["pattern"] = ENCODING_NAME
    defs["Logged"]["properties"]["policy"] = {"anyOf": [POLICY, {"type": "null"}]}
    defs["Config"]["properties"]["encoding"]["pattern"] = ENCODING_NAME
    root = _object(Trace)
    root["properties"]["warnings"]["items"] = {"anyOf": [{"$ref": "#/$defs/TraceWarning"}, {"type": "string"}],
                                               "description": "structured; plain messages in older traces"}
    root["properties"]["format"] = {"const": FORMAT}
    root["properties"]["seal"] = {
        "type": "string",
        "description": "the engine's seal (ctxcore.seal): a SHA-256 over the engine that wrote the trace and every "
                       "field but logged and warnings; a replay trusts the stored fates of a trace this engine sealed, "
                       "and rebuilds any other"}
    root["required"] = ["format", "query", "config", "tokenizer", "budget", "candidates", "decisions", "blocks",
                        "prompt", "warnings"]
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": "ctxcore.trace/1",
            "title": "ctxcore trace", **root, "$defs": defs}


_SAID = {"string": "a string", "object": "an object", "array": "a list", "boolean": "true or false", "null": "null"}
_TYPES = {"string": str, "object": dict, "array": list, "boolean": bool, "null": type(None)}


def field_problems(value, key: str, *, most: int = 5) -> list[str]:
    """:func:`problems` of one top-level field of a trace, against its part of the schema.

    >>> field_problems({"format": "phoenix", "trace_id": 7}, "logged")
    ['logged: must be Logged or null']
    """
    if key not in _FIELDS:  # the schema is generated from the records: made once per field, not per call
        root = trace_schema()
        _FIELDS[key] = {**root, "required": [], "properties": {key: root["properties"][key]}}
    return problems({key: value}, _FIELDS[key], most=most)


_FIELDS: dict = {}


def problems(data, schema: dict | None = None, *, most: int = 5) -> list[str]:
    """Where ``data`` breaks the trace schema, as "field: what is wrong" lines (at most ``most``).

    A small validator of exactly what the generated schema uses (type, enum, const, anyOf, $ref,
    properties, required, items, pattern), with numbers finite: a saved trace is checked before
    anything reads it, so a tampered one is refused with its field named.

    >>> problems({"format": "ctxcore.trace/1"})[:1]
    ['query: missing']
    """
    root = schema or trace_schema()
    out: list[str] = []

    def _walk(value, node, where, sink):
        if "$ref" in node:
            node = root["$defs"][node["$ref"].rsplit("/", 1)[1]]
        if "anyOf" in node:
            if not any(not _errors(value, o, where) for o in node["anyOf"]):
                forms = [o.get("type") or o.get("$ref", "").rsplit("/", 1)[-1] or "value" for o in node["anyOf"]]
                forms = ["a finite number" if f == "number" else "null" if f == "null" else f for f in forms]
                sink.append(f"{where or 'trace'}: must be {' or '.join(forms)}")
            return
        name = where or "trace"
        if "const" in node and value != node["const"]:
            sink.append(f"{name}: must be {node['const']!r}")
            return
        if "enum" in node and value not in node["enum"]:
            shown = ", ".join(map(str, node["enum"][:12]))
            sink.append(f"{name}: must be one of {shown}")
            return
        kind = node.get("type")
        if kind in ("integer", "number"):
            ok = isinstance(value, (int, float)) and not isinstance(value, bool) and (
                isinstance(value, int) if kind == "integer" else _finite(value))
            if not ok:
                sink.append(f"{name}: must be {'a whole number' if kind == 'integer' else 'a finite number'}")
            return
        if kind in _TYPES and not isinstance(value, _TYPES[kind]):
            sink.append(f"{name}: must be {_SAID[kind]}")
            return
        if kind == "string" and "pattern" in node and not re.fullmatch(node["pattern"].strip("^$"), value):
            sink.append(f"{name}: not a valid name")
        if kind == "object":
            for key in node.get("required", []):
                if key not in value:
                    sink.append(f"{where + '.' if where else ''}{key}: missing")
            for key, sub in node.get("properties", {}).items():
                if key in value and len(sink) < most:
                    _walk(value[key], sub, f"{where + '.' if where else ''}{key}", sink)
            extra = node.get("additionalProperties")
            if isinstance(extra, dict) and extra:
                for key, item in value.items():
                    _walk(item, extra, f"{where}.{key}", sink)
        if kind == "array" and node.get("items"):
            for i, item in enumerate(value):
                if len(sink) >= most:
                    break
                _walk(item, node["items"], f"{where}[{i}]", sink)

    def _errors(value, node, where):
        sink: list[str] = []
        _walk(value, node, where, sink)
        return sink

    _walk(data, root, "", out)
    return out[:most]


def _finite(x) -> bool:
    try:
        return math.isfinite(x)
    except OverflowError:
        return False
