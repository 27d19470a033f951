"""The trace's JSON Schema, generated from the record types so it cannot drift."""

from __future__ import annotations

import dataclasses
import typing
from typing import Any, Literal, Union

from .records import FATE_MEANINGS, FORMAT, Block, Budget, Candidate, Config, Decision, Inputs, Logged, Prompt, \
    Sent, SentPassage, TokenizerInfo, Trace, TraceWarning, WARNING_KINDS

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
    root = _object(Trace)
    root["properties"]["format"] = {"const": FORMAT}
    root["required"] = ["format", "query", "config", "tokenizer", "budget", "candidates", "decisions", "blocks",
                        "prompt", "warnings"]
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": "ctxcore.trace/1",
            "title": "ctxcore trace", **root, "$defs": defs}
