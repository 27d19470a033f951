"""The seam every logged-trace format plugs into: a :class:`Family` says whether parsed JSON is
its shape, which traces it holds, and reads one; the helpers here are what every family ends with."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional

from ..errors import InputError
from ..loaded import Loaded
from ..records import Inputs, Logged
from .documents import to_candidates
from .values import listing


@dataclass(frozen=True)
class Family:
    """One logged-trace format, as the dispatch sees it (all three take parsed JSON or JSONL objects)."""

    name: str
    matches: Callable[[Any, str], bool]  # (data, source): is this the family's shape?
    load: Callable[[Any, str, Optional[str]], Loaded]  # (data, source, trace_id): one trace as ctxcore input
    traces: Callable[[Any], list[str]]  # (data): the trace ids it holds, in file order


def select_trace(groups: dict, trace_id: Optional[str], has_docs, what: str, source: str):
    """The trace to show: the one asked for, else the first that retrieved documents."""
    ids = [t for t in groups if t is not None]
    if trace_id is not None:
        if str(trace_id) not in groups:
            raise InputError(f"{what} {trace_id!r} is not in the file; it holds: {listing(ids) or 'no trace ids'}",
                             source=source, field="trace_id")
        return str(trace_id)
    for tid, members in groups.items():
        if has_docs(members):
            return tid
    return next(iter(groups))


def to_loaded(fmt: str, source: str, docs: list[dict], query: Optional[str], inputs: Inputs, config: dict,
              logged: dict, warnings: list[str]) -> Loaded:
    """What every family returns: candidates from its ranked documents, and what it could not map."""
    cands = to_candidates(docs, source)
    if not query:
        warnings.append("the trace holds no question: give one before building")
    if logged["unmapped"]:
        warnings.append(f"not mapped from the {fmt} trace: {listing(logged['unmapped'], 5)}")
    record = Logged(format=fmt, **{k: tuple(v) if isinstance(v, list) else v for k, v in logged.items()})
    return Loaded(cands, query or "", inputs, config, fmt, source, None, {}, tuple(warnings), record)
