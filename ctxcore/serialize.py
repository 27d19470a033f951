"""Trace -> JSON, write-only. Field order is fixed and floats print the same everywhere, so the
same build gives the same bytes in any process. It imports nothing from records (it reads the
records' fields generically), so ``Trace.to_json`` calling it closes no cycle; reading a trace
back is :mod:`ctxcore.tracefile`."""

from __future__ import annotations

import dataclasses
import json
from typing import Any


def dumps(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, indent=2, allow_nan=False)


def _compact(record, keep=()) -> dict:
    """Fields of a record without the empty optional ones."""
    out = {}
    for f in dataclasses.fields(record):
        v = getattr(record, f.name)
        if f.name in keep or not (v is None or v == {} or (f.name == "generated_id" and v is False)):
            if dataclasses.is_dataclass(v):  # a nested record (Logged.sent)
                v = _compact(v)
            elif isinstance(v, tuple):
                v = [_compact(x) if dataclasses.is_dataclass(x) else x for x in v]
            out[f.name] = v
    return out


def candidate_to_dict(c) -> dict:
    """A ``records.Candidate`` without its empty optional fields."""
    return _compact(c, keep=("id", "text", "score"))


def warning_to_dict(w) -> dict:
    """A warning as {kind, ids, message}; a plain message is kind ``note``."""
    return {"kind": getattr(w, "kind", "note"), "ids": list(getattr(w, "ids", ())), "message": str(w)}


def trace_to_dict(t) -> dict:
    """A ``records.Trace`` as the JSON object of the trace contract, fields in contract order."""
    return {
        "format": t.format,
        "query": t.query,
        "config": t.config.to_dict(),
        "tokenizer": dataclasses.asdict(t.tokenizer),
        "budget": dataclasses.asdict(t.budget),
        "candidates": [candidate_to_dict(c) for c in t.candidates],
        "decisions": [_compact(d) for d in t.decisions],
        "blocks": [{**_compact(b), "tokens": b.tokens} for b in t.blocks],
        "prompt": dataclasses.asdict(t.prompt),
        "warnings": [warning_to_dict(w) for w in t.warnings],
        "abstain": t.abstain,
        "inputs": {**dataclasses.asdict(t.inputs), "tools": list(t.inputs.tools),
                   "history": list(t.inputs.history)},
        **({"logged": _compact(t.logged, keep=("format",))} if t.logged is not None else {}),
    }
