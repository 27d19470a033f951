"""The lowest input layer: bytes to text, text to parsed JSON/JSONL/CSV rows, and one candidate
object checked field by field. Both the loaders and the logged-trace formats stand on it; it
imports nothing from records (it returns a candidate's fields), so reading a saved trace back
(:mod:`ctxcore.io.tracefile`) sits above records and closes no cycle."""

from __future__ import annotations

import csv
import io
import os
import json
import math
import re
from typing import Any, Callable, Optional, Union

from ..errors import InputError
from .limits import MAX_BYTES, MAX_CANDIDATES, MAX_DEPTH, MAX_FIELD_CHARS, MAX_VALUES

TRUST = ("system", "developer", "retrieved", "user", "tool")
KNOWN = ("id", "text", "score", "doc_id", "chunk_index", "title", "section", "date", "version",
         "source_type", "trust", "permissions", "embedding", "metadata")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_SURROGATE = re.compile(r"[\ud800-\udfff]")
_JSON_TYPES = {type(None): "null", bool: "a boolean", int: "a number", float: "a number", str: "a string",
               list: "a list", dict: "an object"}


class NotJson(InputError):
    """Text that is not one JSON value; the caller may still read it as JSONL."""


def json_type(value) -> str:
    return _JSON_TYPES.get(type(value), type(value).__name__)


def too_big(size: int, source: str) -> None:
    if size > MAX_BYTES:
        raise InputError(f"the file is {size / 1e6:.1f} MB; the limit is {MAX_BYTES // 2**20} MB", source=source)


def decode(data: bytes, source: str = "input") -> str:
    too_big(len(data), source)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line = data[: err.start].count(b"\n") + 1
        raise InputError(f"not UTF-8 text (byte 0x{data[err.start]:02x} at offset {err.start}); "
                         f"save the file as UTF-8", source=source, line=line) from None
    if "\x00" in text:
        raise InputError("binary data (NUL bytes), not a text file", source=source,
                         line=text[: text.index("\x00")].count("\n") + 1)
    too_dense(text, source)
    return text


def too_dense(text: str, source: str) -> None:
    """Refuse a text whose values would take many times its size once parsed (``[{},{},...]``: a
    3-byte object costs Python about 70 bytes). Values are counted before parsing, from the commas,
    opening brackets and line breaks (a count that can only be too high)."""
    if len(text) <= MAX_VALUES:
        return  # too short to hold more values than the limit
    count = text.count(",") + text.count("{") + text.count("[") + text.count("\n")
    if count > MAX_VALUES:
        raise InputError(f"{count:,} values (commas, brackets and lines); the limit is {MAX_VALUES:,} (a text this "
                         f"dense takes many times its size in memory once parsed)", source=source)


def _path_to(data, test) -> str:
    """Where the first node that ``test(node, depth)`` flags sits, as ``a.b[0].c`` (cut short when long).
    Only run once a limit is already broken, so it may be slow."""
    stack = [(data, 1, ())]
    while stack:
        node, depth, path = stack.pop()
        if test(node, depth):
            text = "".join(f"[{k}]" if isinstance(k, int) else f".{k}" for k in path).lstrip(".")
            return text if len(text) <= 80 else text[:77] + "..."
        if isinstance(node, (dict, list)):
            items = node.items() if isinstance(node, dict) else enumerate(node)
            stack.extend((v, depth + 1, path + (k,)) for k, v in reversed(list(items)))
    return ""


def check_shape(data, source: str, line: Optional[int] = None, size: Optional[int] = None) -> None:
    """Refuse a nest deeper than MAX_DEPTH or a string longer than MAX_FIELD_CHARS, before any
    recursive reader meets it (so a deep file fails the same way in the CLI and in the app's thread).
    ``size``, the length of the text parsed, skips the string check when no string can be that long."""
    def refuse(message, test):
        raise InputError(message, source=source, line=line, field=_path_to(data, test) or None)

    if size is not None and size < 2 * (MAX_DEPTH + 1):
        return  # too short to open MAX_DEPTH + 1 brackets, let alone hold a long string
    strings = size is None or size > MAX_FIELD_CHARS
    level, depth = [data], 1
    while level:
        below = []
        for node in level:
            kind = type(node)
            if kind is str:
                if strings and len(node) > MAX_FIELD_CHARS:
                    refuse(f"a value of {len(node):,} characters; the limit is {MAX_FIELD_CHARS:,}",
                           lambda n, d: type(n) is str and len(n) > MAX_FIELD_CHARS)
            elif kind is dict or kind is list:
                if depth > MAX_DEPTH:
                    refuse(f"JSON is nested too deeply to read (more than {MAX_DEPTH} levels)",
                           lambda n, d: d > MAX_DEPTH and isinstance(n, (dict, list)))
                below.extend(node.values() if kind is dict else node)
        level, depth = below, depth + 1


def read_bytes(path_or_bytes, name=None) -> tuple[bytes, str]:
    """(the bytes, the name messages use) of a path or of bytes already read; too big or unreadable is one line."""
    if isinstance(path_or_bytes, (bytes, bytearray)):
        return bytes(path_or_bytes), name or "input"
    source = name or os.fspath(path_or_bytes)
    try:
        too_big(os.path.getsize(path_or_bytes), source)
        with open(path_or_bytes, "rb") as f:
            return f.read(), source
    except OSError as err:
        raise InputError(f"cannot read the file ({err.strerror})", source=source) from None


def parse_json(text: Union[str, bytes], source: str = "input", line: Optional[int] = None) -> Any:
    """One JSON value, checked against the structural limits; ``line`` places it in a JSONL file."""
    if isinstance(text, bytes):
        text = decode(text, source)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise NotJson(f"not valid JSON: {err.msg} (column {err.colno})", source=source,
                      line=err.lineno if line is None else line) from None
    except RecursionError:
        raise InputError("JSON is nested too deeply to read", source=source, line=line) from None
    except ValueError as err:  # e.g. an integer with more digits than Python converts
        raise InputError(f"not valid JSON: {err}", source=source, line=line) from None
    check_shape(data, source, line, size=len(text))
    return data


def parse_jsonl(text: str, source: str) -> tuple[list, list[int]]:
    """The objects of a JSONL text and the line each came from (blank lines skipped)."""
    items, lines = [], []
    for n, line in enumerate(text.split("\n"), 1):  # not splitlines(): U+2028 may sit inside a string
        if line.strip():
            items.append(parse_json(line, source, line=n))
            lines.append(n)
    return items, lines


def looks_like_jsonl(text: str) -> bool:
    """Several lines, the first a whole object: JSONL even without the .jsonl name."""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    return text.lstrip().startswith("{") and len(lines) > 1 and lines[0].strip().endswith("}")


def csv_rows(text: str, source: str) -> list[tuple[int, list[str]]]:
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


def candidate(item, i: int, label: str, where: dict, taken, make: Callable) -> tuple[Any, bool, list]:
    """One candidate from one object, as ``make(**fields)``: the caller passes ``records.Candidate``, which
    this module does not import. ``label`` and ``where`` locate it in messages; ``taken`` are ids in use."""
    def bad(f, why):
        raise InputError(why, field=f"{label}.{f}" if where.get("line") is None else f, **where)

    if not isinstance(item, dict):
        raise InputError(f"a candidate must be an object, found {json_type(item)}", field=label, **where)
    if "text" not in item or item["text"] is None:
        bad("text", "missing: every candidate needs its text")
    text = item["text"]
    if not isinstance(text, str):
        bad("text", f"must be a string, found {json_type(text)}")
    if not text.isascii() and _SURROGATE.search(text):  # isascii reads a flag: no scan of an ASCII text
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
    if not cid.isascii() and _SURROGATE.search(cid):
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
        if isinstance(v, str) and not v.isascii() and _SURROGATE.search(v):
            bad(f, "contains a lone surrogate (an escaped \\ud800-\\udfff), which is not valid Unicode")
        strings[f] = v or None
    metadata = item.get("metadata") or {}
    if not isinstance(metadata, dict):
        bad("metadata", "must be an object")
    if not _all_finite(metadata):
        bad("metadata", "holds a number that is not finite (NaN, Infinity or too large)")
    extra = [k for k in item if k not in KNOWN and k != "tokens"]
    if extra:
        metadata = {**metadata, **{k: item[k] for k in extra}}
        if not _all_finite(metadata):
            bad(next(k for k in extra if not _all_finite(item[k])),
                "holds a number that is not finite (NaN, Infinity or too large)")
    tokens = item.get("tokens")
    if not isinstance(tokens, int) or isinstance(tokens, bool):
        tokens = None  # recounted by the build anyway; kept so a trace reads back identical
    return make(id=cid, text=text, score=score, chunk_index=chunk_index, trust=trust, tokens=tokens,
                permissions=tuple(permissions) if permissions is not None else None,
                embedding=tuple(float(x) for x in embedding) if embedding is not None else None,
                metadata=metadata, generated_id=generated, **strings), generated, extra


def candidates(items, source: str, name: str, lines, make: Callable) -> tuple[tuple, tuple[str, ...]]:
    """Every candidate in a list (as :func:`candidate` makes them), ids unique, and notes on what was normalised."""
    if not isinstance(items, list):
        raise InputError("must be a list of candidate objects", source=source, field=name)
    if len(items) > MAX_CANDIDATES:
        raise InputError(f"{len(items)} candidates; the limit is {MAX_CANDIDATES}", source=source, field=name)
    out, moved = [], set()
    given = {str(it.get("id")) for it in items if isinstance(it, dict) and it.get("id") not in (None, "")}
    for i, item in enumerate(items):
        where = dict(source=source, line=lines[i] if lines else None)
        label = name if lines else f"{name}[{i}]"
        made, _, extra_keys = candidate(item, i, label, where, given, make)
        out.append(made)
        moved.update(extra_keys)
    # a repeated id is not refused: the build keeps one copy or renames the others (pipeline.unique_ids)
    notes = []
    if moved:
        notes.append(f"fields {', '.join(sorted(moved))} are not candidate fields; they were kept as metadata")
    return tuple(out), tuple(notes)


def parse_text(text: str, source: str) -> Any:
    """One JSON value, or, when the text is not one, the objects of its lines (JSONL)."""
    try:
        return parse_json(text, source)
    except NotJson:
        return parse_jsonl(text, source)[0]
