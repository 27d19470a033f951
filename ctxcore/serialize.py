"""Trace -> JSON, write-only. Field order is fixed and floats print the same everywhere, so the
same build gives the same bytes in any process. It imports nothing from records (it reads the
records' fields generically), so ``Trace.to_json`` calling it closes no cycle; reading a trace
back is :mod:`ctxcore.io.tracefile`."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from .seal import seal_of


def dumps(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, indent=2, allow_nan=False)


_ONE_LINE = json.JSONEncoder(ensure_ascii=False, allow_nan=False).encode  # the C encoder: no indent
_NESTED = json.JSONEncoder(ensure_ascii=False, indent=2, allow_nan=False).encode


def dumps_records(obj: dict) -> str:
    """:func:`dumps` for a trace-sized object, fast: one line per record in its lists of records.

    The same value as ``dumps(obj)`` (a test holds ``json.loads`` of both equal) and as readable: each
    candidate, decision or block on a line of its own, which greps and diffs well. ``json.dumps`` with an
    indent falls back to its pure-Python encoder; at 10k candidates (15 MB) that was a quarter of a CLI
    build.

    >>> print(dumps_records({"query": "q", "decisions": [{"id": "a", "fate": "kept"}], "abstain": False}))
    {
      "query": "q",
      "decisions": [
        {"id": "a", "fate": "kept"}
      ],
      "abstain": false
    }
    """
    lines = []
    for key, value in obj.items():
        head = f"  {_ONE_LINE(key)}: "
        if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            items = ",\n".join("    " + _ONE_LINE(v) for v in value)
            lines.append(f"{head}[\n{items}\n  ]")
        else:
            lines.append(head + _NESTED(value).replace("\n", "\n  "))
    return "{\n" + ",\n".join(lines) + "\n}" if lines else "{}"


_FIELDS: dict = {}  # record class -> its field names (dataclasses.fields is slow when called per record)
_SCALARS = (str, int, float, bool, type(None))


def _names(record) -> tuple:
    cls = type(record)
    names = _FIELDS.get(cls)
    if names is None:
        names = _FIELDS[cls] = tuple(f.name for f in dataclasses.fields(record))
    return names


def _compact(record, keep=()) -> dict:
    """Fields of a record without the empty optional ones."""
    out = {}
    for name in _names(record):
        v = getattr(record, name)
        if name in keep or not (v is None or v == {} or (name == "generated_id" and v is False)):
            if isinstance(v, _SCALARS):
                pass
            elif dataclasses.is_dataclass(v):  # a nested record (Logged.sent)
                v = _compact(v)
            elif isinstance(v, tuple):
                v = [_compact(x) if dataclasses.is_dataclass(x) else x for x in v]
            out[name] = v
    return out


def candidate_to_dict(c) -> dict:
    """A ``records.Candidate`` without its empty optional fields."""
    return _compact(c, keep=("id", "text", "score"))


def block_to_dict(b) -> dict:
    """A ``records.Block`` as a trace stores it (its tokens last)."""
    return {**_compact(b), "tokens": b.tokens}


def warning_to_dict(w) -> dict:
    """A warning as {kind, ids, message}; a plain message is kind ``note``."""
    return {"kind": getattr(w, "kind", "note"), "ids": list(getattr(w, "ids", ())), "message": str(w)}


def trace_to_dict(t, sealed: bool = True) -> dict:
    """A ``records.Trace`` as the JSON object of the trace contract, fields in contract order, with this engine's
    seal (:mod:`ctxcore.seal`) last unless ``sealed`` is False."""
    body = {
        "format": t.format,
        "query": t.query,
        "config": t.config.to_dict(),
        "tokenizer": dataclasses.asdict(t.tokenizer),
        "budget": dataclasses.asdict(t.budget),
        "candidates": [candidate_to_dict(c) for c in t.candidates],
        "decisions": [_compact(d) for d in t.decisions],
        "blocks": [block_to_dict(b) for b in t.blocks],
        "prompt": dataclasses.asdict(t.prompt),
        "warnings": [warning_to_dict(w) for w in t.warnings],
        "abstain": t.abstain,
        "inputs": {**dataclasses.asdict(t.inputs), "tools": list(t.inputs.tools),
                   "history": list(t.inputs.history)},
        **({"logged": _compact(t.logged, keep=("format",))} if t.logged is not None else {}),
    }
    seal = seal_of(body) if sealed else None
    return {**body, "seal": seal} if seal is not None else body
