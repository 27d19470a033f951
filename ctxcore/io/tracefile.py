"""A saved ctxcore trace read back: the same checks as any input, so an edited trace is refused
with a clear message instead of rendering half a trace."""

from __future__ import annotations

import dataclasses

from ..errors import InputError
from .reading import candidates as read_candidates
from .reading import parse_json
from .schema import problems, trace_schema
from ..records import (FORMAT, Block, Budget, Candidate, Config, Decision, Inputs, Prompt, TokenizerInfo, Trace,
                      TraceWarning, Logged)


_SCHEMA = trace_schema()


def _record(cls, data, source, where):
    if not isinstance(data, dict):
        raise InputError(f"{where} must be an object", source=source, field=where)
    names = {f.name for f in dataclasses.fields(cls)}
    try:
        return cls(**{k: (tuple(v) if isinstance(v, list) else v) for k, v in data.items() if k in names})
    except TypeError as err:
        raise InputError(f"{where} is incomplete or malformed ({err})", source=source, field=where) from None


def trace_from_dict(data: dict, *, source: str = "trace") -> Trace:
    """A saved trace, held to the trace schema first: types, fates, finite numbers, encoding names."""
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        found = data.get("format") if isinstance(data, dict) else None
        raise InputError(f"not a {FORMAT} trace (format is {found!r})", source=source, field="format")
    for key in ("query", "config", "budget", "candidates", "decisions", "prompt"):
        if key not in data:
            raise InputError("missing from the trace", source=source, field=key)
    found = problems(data, _SCHEMA, most=1)
    if found:
        where, why = found[0].split(": ", 1)
        raise InputError(f"{why} (the trace does not match the {FORMAT} schema)", source=source, field=where)
    for key in ("candidates", "decisions"):
        if not isinstance(data[key], list):
            raise InputError("must be a list", source=source, field=key)
    candidates = read_candidates(data["candidates"], source, "candidates", None, Candidate)[0]
    decisions = tuple(_record(Decision, d, source, f"decisions[{i}]") for i, d in enumerate(data["decisions"]))
    ids = [c.id for c in candidates]
    if sorted(ids) != sorted(d.id for d in decisions):
        raise InputError("the decisions do not name the same ids as the candidates", source=source,
                         field="decisions")
    return Trace(
        query=data["query"],
        config=Config.from_dict(data["config"], source=source),
        tokenizer=_record(TokenizerInfo, data.get("tokenizer", {"encoding": "?", "exact": False}), source, "tokenizer"),
        budget=_record(Budget, data["budget"], source, "budget"),
        candidates=candidates,
        decisions=decisions,
        blocks=tuple(_record(Block, {k: v for k, v in b.items() if k != "tokens"}, source, f"blocks[{i}]")
                     for i, b in enumerate(data.get("blocks", []))),
        prompt=_record(Prompt, data["prompt"], source, "prompt"),
        warnings=warnings_of(data.get("warnings", []), source),
        logged=logged_of(data.get("logged"), source),
        abstain=bool(data.get("abstain", False)),
        inputs=inputs_of(data),
    )


def inputs_of(data: dict) -> Inputs:
    """The fixed blocks and history a trace was built with."""
    inputs = data.get("inputs") or {}
    return Inputs(system=inputs.get("system", ""), instructions=inputs.get("instructions", ""),
                  schema=inputs.get("schema", ""), tools=tuple(inputs.get("tools", ())),
                  history=tuple(inputs.get("history", ())))


def logged_of(value, source: str):
    """A trace's ``logged`` block as the record (None when it has none)."""
    return None if value is None else _record(Logged, value, source, "logged")


def warning_from(value, source: str, where: str) -> TraceWarning:
    """A warning as a trace stores it: {kind, ids, message}, or a plain message (older traces)."""
    if isinstance(value, str):
        return TraceWarning(value)
    if (isinstance(value, dict) and isinstance(value.get("message"), str) and isinstance(value.get("kind", ""), str)
            and isinstance(value.get("ids", []), list) and all(isinstance(i, str) for i in value.get("ids", []))):
        return TraceWarning(value["message"], value.get("kind") or "note", value.get("ids", []))
    raise InputError("must be a warning: {kind, ids, message}", source=source, field=where)


def warnings_of(value, source: str) -> tuple[TraceWarning, ...]:
    if not isinstance(value, list):
        raise InputError("must be a list of warnings", source=source, field="warnings")
    return tuple(warning_from(w, source, f"warnings[{i}]") for i, w in enumerate(value))


def trace_from_json(text, *, source: str = "trace") -> Trace:
    return trace_from_dict(parse_json(text, source), source=source)
