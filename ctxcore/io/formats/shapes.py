"""Which family a parsed file belongs to, and the entry points the loaders call. Adding a format
is one module with a ``FAMILY`` and one line in :data:`FAMILIES`."""

from __future__ import annotations

from typing import Optional

from ...errors import InputError
from ..loaded import Loaded
from ..reading import decode, parse_text, read_bytes, too_big
from . import bare, langfuse, langsmith, mlflow, openinference, otlp, parquet
from .family import Family

FAMILIES: tuple[Family, ...] = (  # tried in this order; the first whose shape matches reads the file
    langfuse.FAMILY,
    otlp.FAMILY,
    mlflow.FAMILY,
    langsmith.FAMILY,
    openinference.FAMILY,
    bare.FAMILY,
)


def _is_ctxcore(data) -> bool:
    return isinstance(data, dict) and ("candidates" in data or "format" in data)


def family_of(data, source: str = "input") -> Optional[Family]:
    """The family whose shape ``data`` has, or None (a ctxcore input or trace is never one)."""
    if _is_ctxcore(data):
        return None
    return next((f for f in FAMILIES if f.matches(data, source)), None)


def detect(data, source: str = "input") -> Optional[Loaded]:
    """A logged trace in a parsed JSON object, or None when the object is not one."""
    if not isinstance(data, dict):
        return None
    return detect_any(data, source)


def detect_any(data, source: str = "input") -> Optional[Loaded]:
    """Like :func:`detect`, for any parsed JSON value (lists of spans or observations too)."""
    family = family_of(data, source)
    return family.load(data, source, None) if family is not None else None


def detect_lines(items, source: str = "input") -> Optional[Loaded]:
    """A logged trace in the parsed objects of a JSONL file, or None."""
    return detect_any(list(items), source)


NOT_A_TRACE = ("not a logged trace: expected OpenInference spans (Arize Phoenix export), OTLP JSON, a Langfuse "
               "trace with observations, LangSmith runs or an MLflow trace")


def load_trace(data, source: str = "input", trace_id: Optional[str] = None, texts: Optional[dict] = None) -> Loaded:
    """Read a logged trace from parsed JSON or the objects of a JSONL file.

    ``trace_id`` picks one trace (run) when the file holds several; by default the first with both
    retrieval and an LLM call is shown. ``texts`` maps document ids to text, for logs that recorded
    document ids only.
    """
    if _is_ctxcore(data):
        raise InputError("this is a ctxcore input file, not a logged trace", source=source)
    family = family_of(data, source)
    if family is None:
        raise InputError(NOT_A_TRACE, source=source)
    return family.load(data, source, trace_id, texts)


def load_run(path, run: Optional[int] = None, trace_id: Optional[str] = None, texts: Optional[dict] = None,
             name: Optional[str] = None) -> Loaded:
    """A logged trace file's run: ``trace_id``, else the ``run``-th (1-based, as ``inspect`` lists
    them), else the default (the first with retrieval and an LLM call)."""
    raw, source = read_bytes(path, name)
    loaded = load_file(raw, trace_id=trace_id, name=source, texts=texts)
    if run is None or trace_id is not None:
        return loaded
    runs = loaded.logged.runs if loaded.logged is not None else ()
    if not 1 <= run <= len(runs):
        raise InputError(f"run {run} is not in the file; it holds {len(runs)} run{'s' if len(runs) != 1 else ''}"
                         f" (python -m ctxcore inspect lists them)", source=source, field="run")
    wanted = runs[run - 1]["id"]
    return loaded if wanted == loaded.logged.trace_id else load_file(raw, trace_id=wanted, name=source, texts=texts)


def load_file(path, trace_id: Optional[str] = None, name: Optional[str] = None,
              texts: Optional[dict] = None) -> Loaded:
    """Read a logged trace file (JSON, JSONL or a Phoenix parquet export; a path or its bytes),
    choosing ``trace_id`` when it holds several."""
    raw, source = read_bytes(path, name)
    if parquet.is_parquet(raw):
        too_big(len(raw), source)
        return parquet.load(raw, source, trace_id, texts)
    return load_trace(parse_text(decode(raw, source), source), source, trace_id, texts)
