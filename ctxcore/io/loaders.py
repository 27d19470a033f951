"""Read candidates from JSON, JSONL, CSV, a saved trace or a logged trace, and say exactly where
input is wrong.

This is the dispatch: the parsing and the candidate checks are :mod:`ctxcore.io.reading`, saved
traces :mod:`ctxcore.io.tracefile`, logged traces from other tools :mod:`ctxcore.io.formats`. Every
problem becomes an :class:`InputError` naming the file, the line or row, and the field.
Normalisations (generated ids, metadata columns) are reported as warnings so nothing changes
silently.
"""

from __future__ import annotations

import dataclasses
import json
import os
from typing import Any, Optional, Union

from ..errors import BuildError, InputError
from .formats import detect, detect_any, detect_lines, load_file
from .formats.parquet import is_parquet
from .limits import MAX_BYTES, MAX_CANDIDATES, MAX_KEYS
from .loaded import Loaded
from .reading import (KNOWN, NotJson, candidates, csv_rows, decode, json_type, looks_like_jsonl, parse_json,
                      parse_jsonl, read_bytes)
from ..pipeline import build
from ..serialize import trace_to_dict
from ..records import FORMAT, Candidate, Config, Inputs, Logged, Trace, TraceWarning
from .schema import field_problems
from .tracefile import inputs_of, logged_of, trace_from_dict, warnings_of

__all__ = ["Loaded", "MAX_BYTES", "MAX_CANDIDATES", "load", "loads", "from_object", "request_from_object",
           "inputs_from_object", "candidates_from_objects", "decode", "parse_json", "parse_jsonl"]


def load(path_or_bytes: Union[str, os.PathLike, bytes], name: Optional[str] = None) -> Loaded:
    """Read a candidates file or a trace, detecting the format from its content.

    ``name`` (a file name) is used in messages, and its extension helps tell CSV.
    """
    data, source = read_bytes(path_or_bytes, name)
    if is_parquet(data):  # a Phoenix span dataframe saved with to_parquet(): binary, read before any decoding
        return load_file(data, name=source)
    text = decode(data, source)
    if not text.strip():
        raise InputError("the file is empty", source=source)
    return loads(text, source)


def loads(text: str, source: str = "input") -> Loaded:
    stripped = text.lstrip()
    name = source.lower()
    if name.endswith(".jsonl") and stripped.startswith("{"):
        return _from_jsonl(text, source)
    if name.endswith(".csv") or not (stripped.startswith(("[", "{")) or name.endswith((".json", ".jsonl"))):
        return _from_csv(text, source)
    try:
        data = parse_json(text, source)
    except NotJson:
        if looks_like_jsonl(text):
            return _from_jsonl(text, source)
        raise
    return from_object(data, source)


def from_object(data: Any, source: str = "input") -> Loaded:
    """Interpret parsed JSON: a list of candidates, a request object, or a trace."""
    if isinstance(data, list):
        imported = detect_any(data, source)
        if imported is not None:
            return imported
        cands, notes = _candidates(data, source, "candidates", lines=None)
        return Loaded(cands, format="json", source=source, warnings=notes)
    if not isinstance(data, dict):
        raise InputError(f"expected a list of candidates or an object with 'candidates', found "
                         f"{json_type(data)}", source=source)
    if "format" in data:
        if data["format"] != FORMAT:
            raise InputError(f"unsupported trace format {data['format']!r}; this version reads {FORMAT!r}",
                             source=source, field="format")
        return _as_stored(data, source) or _saved_trace(trace_from_dict(data, source=source), source)
    imported = detect(data, source)
    if imported is not None:
        return imported
    if "candidates" not in data:
        raise InputError("an object needs a 'candidates' list (or use a list of candidates); formats tried: "
                         "ctxcore trace (no 'format'), candidates object (no 'candidates'), OpenInference/Phoenix "
                         "spans (no span_kind or context), OTLP JSON (no 'resourceSpans'), Langfuse trace (no "
                         "'observations'), MLflow trace (no 'info' and 'data.spans'), LangSmith run (no 'run_type')", source=source,
                         field="candidates")
    return request_from_object(data, source)


def _as_stored(data: dict, source: str) -> Optional[Loaded]:
    """:func:`_saved_trace` of :func:`trace_from_dict`, fast, for a trace a rebuild writes again exactly: when the
    rebuild of its candidates and settings is the stored JSON (its ``logged`` block and warnings aside), the
    rebuild *is* the stored trace (with the log it came from and the loader's notes, checked on their own), and
    the whole-trace schema walk and record reading (two thirds of reading a replay log's run) are not needed.
    None otherwise, and the plain path decides and says what differs; a test holds the two paths equal."""
    query, inputs, logged = data.get("query"), data.get("inputs"), data.get("logged")
    if not isinstance(query, str) or not isinstance(data.get("candidates"), list) or \
            not isinstance(inputs, dict) or not isinstance(data.get("config"), dict) or \
            field_problems(inputs, "inputs", most=1):  # a history that is no list of turns fails the build
        return None
    try:
        cands = candidates(data["candidates"], source, "candidates", None, Candidate)[0]
        config = Config.from_dict(data["config"], source=source)
        rebuilt = build(cands, query, config, inputs_of(data))
    except (InputError, BuildError, TypeError, ValueError):
        return None
    mine = trace_to_dict(rebuilt, sealed=False)  # the data's own seal, if any, is not compared: it is no decision
    if any(key not in data or (key not in _OWN and data[key] != value) for key, value in mine.items()):
        return None
    if any(field_problems(data[key], key, most=1) for key in _OWN if data.get(key) is not None):
        return None
    stored = dataclasses.replace(rebuilt, logged=logged_of(logged, source),
                                 warnings=warnings_of(data.get("warnings", []), source))
    return Loaded(cands, query, rebuilt.inputs, config.to_dict(), "trace", source, stored)


_OWN = ("logged", "warnings")  # what a stored trace adds to its rebuild: the log it came from, the loader's notes


def _saved_trace(stored: Trace, source: str) -> Loaded:
    """A saved trace, rebuilt from its candidates and settings: a stored trace is not trusted for what it
    says was decided. When the stored prompt or fates differ from the rebuild, the rebuild is the trace
    and the stored prompt is kept as the logged one (what was sent), with a ``replay_differs`` warning."""
    rebuilt = build(stored.candidates, stored.query, stored.config, stored.inputs)
    fates = [(d.id, d.fate, d.label) for d in stored.decisions]
    if rebuilt.prompt.text == stored.prompt.text and fates == [(d.id, d.fate, d.label) for d in rebuilt.decisions]:
        return Loaded(stored.candidates, stored.query, stored.inputs, stored.config.to_dict(), "trace", source, stored)
    moved = [a[0] for a, b in zip(fates, [(d.id, d.fate, d.label) for d in rebuilt.decisions]) if a != b]
    note = TraceWarning(
        f"the stored trace differs from a rebuild of its candidates and settings ("
        + (f"{len(moved)} fates or labels differ" if moved else "the prompt text differs")
        + "); the rebuild is shown, and the stored prompt is kept as the logged one", "replay_differs", moved[:50])
    logged = stored.logged or Logged("ctxcore", prompt_text=stored.prompt.text, prompt_tokens=stored.prompt.tokens)
    trace = dataclasses.replace(rebuilt, warnings=(note,) + rebuilt.warnings, logged=logged)
    return Loaded(stored.candidates, stored.query, stored.inputs, stored.config.to_dict(), "trace", source, trace,
                  warnings=(note,), logged=logged)


def request_from_object(data: dict, source: str, fmt: str = "json") -> Loaded:
    cands, notes = _candidates(data["candidates"], source, "candidates", lines=None)
    query = data.get("query", "")
    if query is None:
        query = ""
    if not isinstance(query, str):
        raise InputError("the query must be a string", source=source, field="query")
    config = data.get("config") or {}
    Config.from_dict(config, source=source)  # report bad settings now, naming the file
    extra = {k: v for k, v in data.items()
             if k not in ("query", "candidates", "config", "system", "instructions", "schema", "tools", "history")}
    return Loaded(cands, query, inputs_from_object(data, source), dict(config), fmt, source, extra=extra,
                  warnings=notes)


def _as_text(value, source, name) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False, indent=2)
    raise InputError("must be text or JSON", source=source, field=name)


def inputs_from_object(data: dict, source: str) -> Inputs:
    tools = data.get("tools") or []
    if not isinstance(tools, list):
        tools = [tools]
    history = data.get("history") or []
    if not isinstance(history, list):
        raise InputError("history must be a list of turns", source=source, field="history")
    turns = []
    for i, turn in enumerate(history):
        if isinstance(turn, str):
            turn = {"role": "user", "content": turn}
        if not isinstance(turn, dict) or not isinstance(turn.get("content", ""), str):
            raise InputError("each turn must be a string or {role, content}", source=source,
                             field=f"history[{i}]")
        turns.append({"role": str(turn.get("role", "user")), "content": turn.get("content", "")})
    return Inputs(system=_as_text(data.get("system"), source, "system"),
                  instructions=_as_text(data.get("instructions"), source, "instructions"),
                  schema=_as_text(data.get("schema"), source, "schema"),
                  tools=tuple(_as_text(t, source, f"tools[{i}]") for i, t in enumerate(tools)),
                  history=tuple(turns))


def candidates_from_objects(items, *, source: str = "input", field: str = "candidates") -> tuple[Candidate, ...]:
    return _candidates(items, source, field, lines=None)[0]


def _candidates(items, source, name, lines) -> tuple[tuple[Candidate, ...], tuple[str, ...]]:
    return candidates(items, source, name, lines, Candidate)


def _from_jsonl(text: str, source: str) -> Loaded:
    items, lines = parse_jsonl(text, source)
    imported = detect_lines(items, source)
    if imported is not None:
        return imported
    cands, notes = _candidates(items, source, "candidate", lines)
    return Loaded(cands, format="jsonl", source=source, warnings=notes)


_CSV_INT = ("chunk_index",)


def _from_csv(text: str, source: str) -> Loaded:
    rows = csv_rows(text, source)
    header = [h.strip() for h in rows[0][1]] if rows else []
    at = rows[0][0] if rows else 1  # the header's line: blank lines before it are skipped
    if len(header) > MAX_KEYS:
        raise InputError(f"the CSV header names {len(header)} columns; the limit is {MAX_KEYS}", source=source,
                         line=at)
    if not any(header):
        raise InputError("the CSV header is empty; the first line must name the columns (text at least)",
                         source=source, line=at)
    if "text" not in header:
        found = ", ".join(json.dumps(h, ensure_ascii=False) for h in header)[:200]
        raise InputError(f"the CSV header has no 'text' column (found: {found})", source=source, line=at,
                         field="text")
    twice = sorted({h for h in header if h and header.count(h) > 1})
    if twice:
        raise InputError("the column appears twice in the header", source=source, line=at, field=twice[0])
    items, lines = [], []
    for n, row in rows[1:]:
        if len(row) != len(header):
            raise InputError(f"has {len(row)} cells but the header has {len(header)}", source=source, row=n)
        item, metadata = {}, {}
        for key, cell in zip(header, row):
            if key in KNOWN and key not in ("metadata", "embedding"):
                if key == "score" and cell.strip():
                    try:
                        cell = float(cell)
                    except ValueError:
                        raise InputError(f"must be a number, found {cell[:40]!r}", source=source, row=n,
                                         field="score") from None
                elif key in _CSV_INT and cell.strip():
                    if not (cell.strip().isascii() and cell.strip().isdigit()):
                        raise InputError(f"must be a whole number, found {cell[:40]!r}", source=source, row=n,
                                         field=key)
                    cell = int(cell)
                item[key] = cell if cell != "" else None
            elif key:
                metadata[key] = cell
        item["metadata"] = metadata
        items.append(item)
        lines.append(n)
    try:
        cands, notes = _candidates(items, source, "row", lines)
    except InputError as err:
        err.row, err.line = err.line, None
        raise InputError(err.message, source=err.source, row=err.row, field=err.field) from None
    return Loaded(cands, format="csv", source=source, warnings=notes)
