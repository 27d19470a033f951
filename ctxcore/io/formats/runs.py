"""Runs in a logged file: which spans belong together (by trace id, or by time when the export
lost the links), which run to show by default, and the compact summaries the CLI's ``inspect``
and the app's "About this file" panel print (runs found, the chosen run's span tree)."""

from __future__ import annotations

from typing import Callable, Optional

from .values import as_int, dig, epoch_seconds, first, iso_time

GAP_SECONDS = 2.0  # spans further apart than this (after the previous one ended) start a new run


def links_lost(spans: list) -> bool:
    """Every span its own trace and no parent in the file: the export dropped the trace links."""
    if len(spans) < 2:
        return False
    ids = [s.trace_id for s in spans]
    if len(set(ids)) != len(ids):
        return False
    known = {s.span_id for s in spans if s.span_id is not None}
    return not any(s.parent_id in known for s in spans if s.parent_id is not None)


def by_time(spans: list, gap: float = GAP_SECONDS) -> Optional[dict]:
    """Spans grouped into runs by time: a span that starts more than ``gap`` seconds after every
    earlier span of the run has ended starts the next run. None when a span has no readable time."""
    timed = [(epoch_seconds(s.start), epoch_seconds(s.end), s) for s in spans]
    if any(t is None for t, _, _ in timed):
        return None
    timed.sort(key=lambda x: (x[0], x[2].index))
    groups: dict = {}
    current, reach = None, None
    for start, end, s in timed:
        if current is None or start > reach + gap:
            current = s.trace_id if s.trace_id is not None else f"run-{len(groups) + 1}"
            groups[current] = []
            reach = start
        groups[current].append(s)
        reach = max(reach, end if end is not None else start)
    return groups


def pick(groups: dict, has_docs: Callable, has_llm: Callable):
    """The run shown by default: the first with both retrieval and an LLM call, else the first
    with retrieval, else the first."""
    for test in (lambda m: has_docs(m) and has_llm(m), has_docs):
        for tid, members in groups.items():
            if test(members):
                return tid
    return next(iter(groups))


def run_rows(groups: dict, has_docs: Callable, has_llm: Callable, doc_count: Callable,
             start_of: Callable) -> tuple[dict, ...]:
    """One row per run, in file order: id, has retrieval, has an LLM call, documents, start
    (``start_of(members)``: the run's start, any logged time form)."""
    rows = []
    for tid, members in groups.items():
        rows.append({"id": tid if tid is None else str(tid), "retrieval": bool(has_docs(members)),
                     "llm": bool(has_llm(members)), "documents": doc_count(members),
                     "start": iso_time(start_of(members))})
    return tuple(rows)


def span_rows(spans: list) -> tuple[dict, ...]:
    """The chosen run's spans, in time order, as the span panel shows them."""
    rows = []
    for s in spans:
        start, end = epoch_seconds(s.start), epoch_seconds(s.end)
        llm = s.attrs.get("llm") if isinstance(s.attrs.get("llm"), dict) else {}
        rows.append({"name": s.name, "kind": s.kind or None, "id": s.span_id, "parent": s.parent_id,
                     "start": iso_time(start) if start is not None else None,
                     "duration_ms": round((end - start) * 1000, 3) if start is not None and end is not None else None,
                     "model": first(llm.get("model_name"), dig(llm, "response", "model_name")),
                     "prompt_tokens": as_int(dig(llm, "token_count", "prompt")),
                     "completion_tokens": as_int(dig(llm, "token_count", "completion"))})
    return tuple(rows)


def first_start(spans: list) -> Optional[float]:
    starts = [t for t in (epoch_seconds(s.start) for s in spans) if t is not None]
    return min(starts) if starts else None


def window(spans: list) -> Optional[tuple[float, float]]:
    """(first start, last end) of spans, in epoch seconds, or None without times."""
    starts = [t for t in (epoch_seconds(s.start) for s in spans) if t is not None]
    ends = [t for t in (epoch_seconds(s.end) for s in spans) if t is not None]
    if not starts:
        return None
    return min(starts), max(ends + starts)
