"""Read candidates from JSON, JSONL, CSV or a trace, and say exactly where input is wrong.

Every problem becomes an :class:`InputError` naming the file, the line or row,
and the field. Normalisations (generated ids, metadata columns) are reported as
warnings so nothing changes silently.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import math
import os
import re
from dataclasses import dataclass, field
from typing import Any, Optional, Union

from .errors import InputError
from .records import FORMAT, Candidate, Config, Inputs, Trace

MAX_BYTES = 64 * 1024 * 1024
MAX_CANDIDATES = 200_000
TRUST = ("system", "developer", "retrieved", "user", "tool")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_SURROGATE = re.compile(r"[\ud800-\udfff]")
_JSON_TYPES = {type(None): "null", bool: "a boolean", int: "a number", float: "a number", str: "a string",
               list: "a list", dict: "an object"}


def json_type(value) -> str:
    return _JSON_TYPES.get(type(value), type(value).__name__)
_KNOWN = ("id", "text", "score", "doc_id", "chunk_index", "title", "section", "date", "version",
          "source_type", "trust", "permissions", "embedding", "metadata")


@dataclass(frozen=True)
class Loaded:
    """What a file holds: candidates, the question, the fixed blocks, and any settings."""

    candidates: tuple[Candidate, ...]
    query: str = ""
    inputs: Inputs = Inputs()
    config: dict = field(default_factory=dict)
    format: str = "json"
    source: str = "input"
    trace: Optional[Trace] = None
    extra: dict = field(default_factory=dict)
    warnings: tuple[str, ...] = ()

    def settings(self, **overrides) -> Config:
        """The file's settings with ``overrides`` on top."""
        return Config.from_dict({**self.config, **overrides}, source=self.source)

    def build(self, config: Optional[Config] = None, query: Optional[str] = None) -> Trace:
        from .pipeline import build

        trace = build(self.candidates, self.query if query is None else query,
                      config or self.settings(), self.inputs)
        if self.warnings:
            trace = dataclasses.replace(trace, warnings=self.warnings + trace.warnings)
        return trace


def parse_json(text: Union[str, bytes], source: str = "input") -> Any:
    if isinstance(text, bytes):
        text = decode(text, source)
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise InputError(f"not valid JSON: {err.msg} (column {err.colno})", source=source, line=err.lineno) from None
    except RecursionError:
        raise InputError("JSON is nested too deeply to read", source=source) from None
    except ValueError as err:  # e.g. an integer with too many digits
        raise InputError(f"not valid JSON: {err}", source=source) from None


def decode(data: bytes, source: str = "input") -> str:
    if len(data) > MAX_BYTES:
        raise InputError(f"the file is {len(data) / 1e6:.1f} MB; the limit is {MAX_BYTES // 2**20} MB",
                         source=source)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line = data[: err.start].count(b"\n") + 1
        raise InputError(f"not UTF-8 text (byte 0x{data[err.start]:02x} at offset {err.start}); "
                         f"save the file as UTF-8", source=source, line=line) from None
    if "\x00" in text:
        raise InputError("binary data (NUL bytes), not a text file", source=source,
                         line=text[: text.index("\x00")].count("\n") + 1)
    return text


def load(path_or_bytes: Union[str, os.PathLike, bytes], name: Optional[str] = None) -> Loaded:
    """Read a candidates file or a trace, detecting the format from its content.

    ``name`` (a file name) is used in messages, and its extension helps tell CSV.
    """
    if isinstance(path_or_bytes, (bytes, bytearray)):
        data, source = bytes(path_or_bytes), name or "input"
    else:
        source = name or os.fspath(path_or_bytes)
        try:
            size = os.path.getsize(path_or_bytes)
            if size > MAX_BYTES:
                raise InputError(f"the file is {size / 1e6:.1f} MB; the limit is {MAX_BYTES // 2**20} MB",
                                 source=source)
            with open(path_or_bytes, "rb") as f:
                data = f.read()
        except OSError as err:
            raise InputError(f"cannot read the file ({err.strerror})", source=source) from None
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
        data = json.loads(text)
    except json.JSONDecodeError as err:
        lines = [ln for ln in text.splitlines() if ln.strip()]
        if stripped.startswith("{") and len(lines) > 1 and lines[0].strip().endswith("}"):
            return _from_jsonl(text, source)
        raise InputError(f"not valid JSON: {err.msg} (column {err.colno})", source=source,
                         line=err.lineno) from None
    except RecursionError:
        raise InputError("JSON is nested too deeply to read", source=source) from None
    except ValueError as err:
        raise InputError(f"not valid JSON: {err}", source=source) from None
    return from_object(data, source)


def from_object(data: Any, source: str = "input") -> Loaded:
    """Interpret parsed JSON: a list of candidates, a request object, or a trace."""
    if isinstance(data, list):
        from .importers import detect_any

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
        from .serialize import trace_from_dict

        trace = trace_from_dict(data, source=source)
        return Loaded(trace.candidates, trace.query, trace.inputs, trace.config.to_dict(), "trace", source, trace)
    from .importers import detect

    imported = detect(data, source)
    if imported is not None:
        return imported
    if "candidates" not in data:
        raise InputError("an object needs a 'candidates' list (or use a list of candidates); formats tried: "
                         "ctxcore trace (no 'format'), candidates object (no 'candidates'), OpenInference/Phoenix "
                         "spans (no span_kind or context), Langfuse trace (no 'observations')", source=source,
                         field="candidates")
    return request_from_object(data, source)


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
    if not isinstance(items, list):
        raise InputError("must be a list of candidate objects", source=source, field=name)
    if len(items) > MAX_CANDIDATES:
        raise InputError(f"{len(items)} candidates; the limit is {MAX_CANDIDATES}", source=source, field=name)
    out, generated, moved = [], 0, set()
    given = {str(it.get("id")) for it in items if isinstance(it, dict) and it.get("id") not in (None, "")}
    for i, item in enumerate(items):
        where = dict(source=source, line=lines[i] if lines else None)
        label = name if lines else f"{name}[{i}]"
        cand, was_generated, extra_keys = candidate(item, i, label, where, taken=given)
        out.append(cand)
        generated += was_generated
        moved.update(extra_keys)
    # a repeated id is not refused: the build keeps one copy or renames the others (pipeline.unique_ids)
    notes = []
    if moved:
        notes.append(f"fields {', '.join(sorted(moved))} are not candidate fields; they were kept as metadata")
    return tuple(out), tuple(notes)


def _number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _all_finite(value) -> bool:
    """No NaN or infinite number anywhere inside (the trace could not be written as JSON otherwise)."""
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, float) and not math.isfinite(v):
            return False
        if isinstance(v, dict):
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
    return True


def _finite(v) -> bool:
    """A number that fits a float and is not NaN or infinite (a 400-digit integer is not)."""
    try:
        return math.isfinite(float(v))
    except OverflowError:
        return False


def candidate(item, i: int, label: str, where: dict, taken=frozenset()) -> tuple[Candidate, bool, list[str]]:
    """One candidate from one object; ``label`` and ``where`` locate it in messages."""
    def bad(f, why):
        raise InputError(why, field=f"{label}.{f}" if where.get("line") is None else f, **where)

    if not isinstance(item, dict):
        raise InputError(f"a candidate must be an object, found {json_type(item)}", field=label, **where)
    if "text" not in item or item["text"] is None:
        bad("text", "missing: every candidate needs its text")
    text = item["text"]
    if not isinstance(text, str):
        bad("text", f"must be a string, found {json_type(text)}")
    if _SURROGATE.search(text):
        bad("text", "contains a lone surrogate (an escaped \\ud800-\\udfff), which is not valid Unicode")
    cid, generated = item.get("id"), False
    if cid is None or cid == "":
        cid, generated = f"c{i + 1}", True
        while cid in taken:  # never take an id the file gives another candidate
            cid += "~"
    elif isinstance(cid, bool) or not isinstance(cid, (str, int)):
        bad("id", f"must be a string, found {json_type(cid)}")
    cid = str(cid)
    if _CONTROL.search(cid):
        bad("id", "contains control characters")
    if _SURROGATE.search(cid):
        bad("id", "contains a lone surrogate (an escaped \\ud800-\\udfff), which is not valid Unicode")
    score = item.get("score")
    if score is not None:
        if not _number(score):
            bad("score", f"must be a number, found {json.dumps(score)[:40]}")
        if not _finite(score):
            bad("score", f"must be a finite number, found {str(score)[:40]}")
        score = float(score)
    chunk_index = item.get("chunk_index")
    if chunk_index is not None and (not isinstance(chunk_index, int) or isinstance(chunk_index, bool)
                                    or chunk_index < 0):
        bad("chunk_index", "must be a whole number, 0 or more")
    trust = item.get("trust") or "retrieved"
    if trust not in TRUST:
        bad("trust", f"must be one of {', '.join(TRUST)}")
    permissions = item.get("permissions")
    if isinstance(permissions, str):
        permissions = [p.strip() for p in re.split(r"[,;|]", permissions) if p.strip()]
    if permissions is not None and (not isinstance(permissions, list)
                                    or not all(isinstance(p, str) for p in permissions)):
        bad("permissions", "must be a list of strings")
    embedding = item.get("embedding")
    if embedding is not None and (not isinstance(embedding, list) or not all(
            _number(x) and _finite(x) for x in embedding)):
        bad("embedding", "must be a list of finite numbers")
    strings = {}
    for f in ("doc_id", "title", "section", "date", "version", "source_type"):
        v = item.get(f)
        if v is not None and not isinstance(v, str):
            if _number(v) and f in ("doc_id", "version", "date"):
                v = str(v)
            else:
                bad(f, f"must be a string, found {json_type(v)}")
        if isinstance(v, str) and _SURROGATE.search(v):
            bad(f, "contains a lone surrogate (an escaped \\ud800-\\udfff), which is not valid Unicode")
        strings[f] = v or None
    metadata = item.get("metadata") or {}
    if not isinstance(metadata, dict):
        bad("metadata", "must be an object")
    if not _all_finite(metadata):
        bad("metadata", "holds a number that is not finite (NaN, Infinity or too large)")
    extra = [k for k in item if k not in _KNOWN and k != "tokens"]
    if extra:
        metadata = {**metadata, **{k: item[k] for k in extra}}
        if not _all_finite(metadata):
            bad(next(k for k in extra if not _all_finite(item[k])),
                "holds a number that is not finite (NaN, Infinity or too large)")
    tokens = item.get("tokens")
    if not isinstance(tokens, int) or isinstance(tokens, bool):
        tokens = None  # recounted by the build anyway; kept so a trace reads back identical
    return Candidate(id=cid, text=text, score=score, chunk_index=chunk_index, trust=trust, tokens=tokens,
                     permissions=tuple(permissions) if permissions is not None else None,
                     embedding=tuple(float(x) for x in embedding) if embedding is not None else None,
                     metadata=metadata, generated_id=generated, **strings), generated, extra


def parse_jsonl(text: str, source: str) -> tuple[list, list[int]]:
    """The objects of a JSONL text and the line each came from (blank lines skipped)."""
    items, lines = [], []
    for n, line in enumerate(text.split("\n"), 1):  # not splitlines(): U+2028 may sit inside a string
        if not line.strip():
            continue
        try:
            items.append(json.loads(line))
        except json.JSONDecodeError as err:
            raise InputError(f"not valid JSON: {err.msg} (column {err.colno})", source=source, line=n) from None
        except RecursionError:
            raise InputError("JSON is nested too deeply to read", source=source, line=n) from None
        except ValueError as err:  # e.g. an integer with more digits than Python converts
            raise InputError(f"not valid JSON: {err}", source=source, line=n) from None
        lines.append(n)
    return items, lines


def _from_jsonl(text: str, source: str) -> Loaded:
    items, lines = parse_jsonl(text, source)
    from .importers import detect_lines

    imported = detect_lines(items, source)
    if imported is not None:
        return imported
    cands, notes = _candidates(items, source, "candidate", lines)
    return Loaded(cands, format="jsonl", source=source, warnings=notes)


_CSV_INT = ("chunk_index",)


def _csv_rows(text: str, source: str) -> list[tuple[int, list[str]]]:
    """Non-blank records with the line each starts on (a quoted cell may span lines)."""
    csv.field_size_limit(MAX_BYTES)  # one cell may hold a whole (large) chunk
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    out, start = [], 1
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return out
        except csv.Error as err:
            why = "a quoted cell is never closed (unclosed quote)" if "end of data" in str(err) else str(err)
            raise InputError(f"not valid CSV: {why}", source=source, row=start) from None
        if any(cell.strip() for cell in row):
            out.append((start, row))
        start = reader.line_num + 1


def _from_csv(text: str, source: str) -> Loaded:
    rows = _csv_rows(text, source)
    header = [h.strip() for h in rows[0][1]] if rows else []
    if not any(header):
        raise InputError("the CSV header is empty; the first line must name the columns (text at least)",
                         source=source, line=1)
    if "text" not in header:
        found = ", ".join(json.dumps(h, ensure_ascii=False) for h in header)[:200]
        raise InputError(f"the CSV header has no 'text' column (found: {found})", source=source, line=1,
                         field="text")
    twice = sorted({h for h in header if h and header.count(h) > 1})
    if twice:
        raise InputError("the column appears twice in the header", source=source, line=1, field=twice[0])
    items, lines = [], []
    for n, row in rows[1:]:
        if len(row) != len(header):
            raise InputError(f"has {len(row)} cells but the header has {len(header)}", source=source, row=n)
        item, metadata = {}, {}
        for key, cell in zip(header, row):
            if key in _KNOWN and key not in ("metadata", "embedding"):
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
