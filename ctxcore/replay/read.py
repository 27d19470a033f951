"""A trace log read lazily, one run at a time, for :mod:`ctxcore.replay`.

A log is any mix of files, directories (walked, ``.json``/``.jsonl``/``.csv`` files in name order)
and globs. A file holds one run (a candidates file, a ctxcore trace, a logged trace of one run) or
many: a JSONL with one run a line (ctxcore traces, request objects or Langfuse traces) is streamed
line by line, so its length does not bound anything; a span export holding several runs
(OpenInference spans, Langfuse observations) is read whole (at most the loaders' file limit) and cut
into one group of records per run, so each run is mapped once instead of once per run in the file.

The reader only cuts; the mapping to candidates (:func:`load_item`) runs where the run is replayed,
in a worker process when there are workers. A file or line that cannot be read becomes an
:class:`Item` of kind ``error`` carrying its reason, in its place in the input order.
"""

from __future__ import annotations

import errno
import glob
import json
import os
import stat
from dataclasses import dataclass
from typing import Any, Iterable, Iterator, Optional

from ..errors import InputError
from ..io.formats import FAMILIES, family_of
from ..io.formats.langfuse import LANGFUSE, trace_keys
from ..io.formats.openinference import OPENINFERENCE, run_groups
from ..io.formats.spans import parse_spans, span_records
from ..io.limits import MAX_BYTES
from ..io.live import store as live_store
from ..io.loaded import Loaded
from ..io.loaders import from_object, load
from ..io.sealed import Stored, read_sealed
from ..io.reading import decode, parse_json, parse_text, too_big

SUFFIXES = (".json", ".jsonl", ".csv")
_CHUNK = 1 << 20  # how much of an over-long line is held at once while it is skipped
_BY_NAME = {f.name: f for f in FAMILIES}


@dataclass(frozen=True)
class Item:
    """One run as the reader cut it (picklable: it travels to the workers).

    ``kind``: ``bytes`` (a whole one-run file: ``payload`` is its bytes), ``line`` (one line of a
    JSONL log: its text), ``family`` (``payload`` is ``(family name, the run's records)``) or
    ``error`` (``payload`` is the reason it cannot be read)."""

    index: int
    source: str
    kind: str
    payload: Any
    run_id: Optional[str] = None
    time: Optional[str] = None
    done_bytes: int = 0  # input bytes read up to and including this run (for progress and ETA)


def expand(paths: Iterable[str]) -> Iterator[tuple[str, Optional[str]]]:
    """(file, None) for every file the arguments name, in order, each real file once however many
    links or loops reach it; (argument or file, reason) for one naming none, or naming what is not a
    regular file (a FIFO would block the read forever)."""
    seen: set = set()
    for p in map(os.fspath, paths):
        if live_store.replay_source(p) is not None:  # a live store's runs (store:PATH, store:PATH#ID): _file
            yield p, None
            continue
        if os.path.isdir(p):
            found = sorted(os.path.join(root, f) for root, _, files in os.walk(p) for f in files
                           if f.lower().endswith(SUFFIXES))
            if not found:
                yield p, "the directory holds no .json, .jsonl or .csv file"
        elif os.path.lexists(p):
            found = [p]
            yield from _once(found, seen, walked=False)
            continue
        elif glob.has_magic(p):
            found = sorted(f for f in glob.glob(p, recursive=True) if not os.path.isdir(f))
            if not found:
                yield p, "no file matches this pattern"
        else:
            yield p, "no such file or directory"
            continue
        yield from _once(found, seen, walked=True)


_LOOP = ("loop",)  # the identity of a path too deep in a symlink loop to open
_KINDS = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISDIR, "a directory"))


def _once(found: list[str], seen: set, walked: bool) -> list[tuple[str, Optional[str]]]:
    """Each real file of ``found`` not met before, once, by its shortest path, in name order, with
    why it is not read (None: a regular file). A ``walked`` path too deep in a symlink loop to open
    names a file the walk met by a shorter path, and is passed over."""
    picked: dict = {}
    for f in found:
        key, reason = _identity(f)
        if walked and key == _LOOP:
            continue
        if key not in seen and (key not in picked or len(f) < len(picked[key][0])):
            picked[key] = (f, reason)
    seen.update(picked)
    return sorted(picked.values())


def _identity(path: str) -> tuple[tuple, Optional[str]]:
    """(what tells this file from every other: device and inode, why it is not read or None)."""
    try:
        st = os.stat(path)
    except OSError as err:
        return _LOOP if err.errno == errno.ELOOP else ("path", path), f"cannot read the file ({err.strerror})"
    if not stat.S_ISREG(st.st_mode):
        kind = next((name for test, name in _KINDS if test(st.st_mode)), "not a file")
        return (st.st_dev, st.st_ino), f"skipped: {kind}, not a regular file"
    return (st.st_dev, st.st_ino), None


def total_bytes(paths: Iterable[str]) -> int:
    """Bytes of every file the arguments name (what progress measures against)."""
    total = 0
    for f, reason in expand(paths):
        if reason is None:
            total += _size(f)
    return total


def items(paths: Iterable[str]) -> Iterator[Item]:
    """Every run of the log, lazily, in input order (file order, then the order inside each file)."""
    index, before = 0, 0
    for path, reason in expand(paths):
        if reason is not None:
            yield Item(index, path, "error", reason, done_bytes=before)
            index += 1
            continue
        size = _size(path)
        for kind, source, payload, run_id, time, at in _file(path):
            yield Item(index, source, kind, payload, run_id, time, before + min(at, size))
            index += 1
        before += size


def _size(path: str) -> int:
    if live_store.replay_source(path) is not None:
        return live_store.replay_bytes(path)  # one line, exit 2, when there is no such store or run
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def _per_line(obj) -> bool:
    """A JSONL whose lines are whole runs: ctxcore traces, request objects or Langfuse traces."""
    return isinstance(obj, dict) and ("format" in obj or "candidates" in obj or isinstance(obj.get("observations"),
                                                                                            list))


def _file(path: str):
    """(kind, source, payload, run_id, time, bytes read) for each run of one file."""
    if live_store.replay_source(path) is not None:
        yield from _stored(path)
        return
    try:
        with open(path, "rb") as f:
            head, looked, lines = None, 0, _bounded_lines(f)
            while head is None and looked < 5:  # a broken first line does not hide what the log holds
                _, line, _ = next(lines, (0, b"", 0))
                if line == b"":
                    break
                if line is None or line.strip():
                    head, looked = _parsed(line), looked + 1
                    if head is None and not path.lower().endswith(".jsonl"):
                        break
            if path.lower().endswith(".jsonl") or (head is not None and f.peek(1)):
                if _per_line(head):
                    f.seek(0)
                    yield from _lines(f, path)
                    return
    except OSError as err:
        yield "error", path, f"cannot read the file ({err.strerror})", None, None, 0
        return
    yield from _whole(path)


def _bounded_lines(f, limit: int = MAX_BYTES):
    """(line number, the line's bytes, its length) for each line of ``f``; a line longer than ``limit``
    comes as None. A long line is measured a chunk at a time before it is read, so one over the limit is
    never held, and one under it is held once."""
    n = 0
    while True:
        start = f.tell()
        raw = f.readline(_CHUNK)
        if not raw:
            return
        n += 1
        if raw.endswith(b"\n") or len(raw) < _CHUNK:
            yield (n, raw, len(raw)) if len(raw) <= limit + 1 else (n, None, len(raw))
            continue
        size = len(raw)
        del raw
        while True:
            chunk = f.read(_CHUNK)
            cut = chunk.find(b"\n")
            size += cut + 1 if cut >= 0 else len(chunk)
            if cut >= 0 or len(chunk) < _CHUNK:
                break
        del chunk
        f.seek(start + size)
        if size > limit + 1:  # its newline aside, longer than the limit
            yield n, None, size
            continue
        f.seek(start)
        yield n, f.read(size), size


def _parsed(line: Optional[bytes]):
    if line is None:
        return None
    try:
        value = json.loads(line)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _lines(f, path: str):
    at = 0
    for n, raw, size in _bounded_lines(f):
        at += size
        if raw is None:
            reason = f"the line is {size / 1e6:.1f} MB; the limit is {MAX_BYTES // 2**20} MB a line"
            yield "error", f"{path}:{n}", reason, None, None, at
        elif raw.strip():
            source = f"{path}:{n}"
            try:
                yield "line", source, decode(raw, source).rstrip("\r\n"), None, None, at
            except InputError as err:
                err.line = None  # the source names the log's line; the decoder saw a one-line text
                yield "error", source, why(err, source), None, None, at


def _whole(path: str):
    size = _size(path)
    try:
        too_big(size, path)
        with open(path, "rb") as f:
            raw = f.read()
        text = decode(raw, path)
        data = None if path.lower().endswith(".csv") or not text.lstrip().startswith(("[", "{")) \
            else parse_text(text, path)
    except (OSError, InputError) as err:
        reason = why(err, path) if isinstance(err, InputError) else f"cannot read the file ({err.strerror})"
        yield "error", path, reason, None, None, size
        return
    try:  # splitting parses every span: a malformed one makes the file unreadable, not the replay stop
        family = family_of(data, path) if data is not None else None
        if family is not None and family.name == OPENINFERENCE:
            runs, when = _span_runs(data, path)
        else:
            ids = family.traces(data) if family is not None else []
            runs = _split(family.name, data, ids) if len(ids) >= 2 else []
            when = None if runs else run_time(family.name if family else None, data)
    except InputError as err:
        yield "error", path, why(err, path), None, None, size
        return
    if len(runs) < 2:
        yield "bytes", path, raw, None, when, size
        return
    for tid, records, time in runs:
        yield "family", f"{path}#{tid}", (family.name, records), tid, time, size


def _span_runs(data, source: str) -> tuple[list, Optional[str]]:
    """(trace id, span records, time) of each run of a span export, and the time of the whole export when it
    holds one run: the spans parsed once (the ids, the groups and each run's time were three parses, on the
    replay's reading side), and grouped as loading groups them (by time, when the export lost its links)."""
    records = span_records(data, source)
    spans = parse_spans(records, source)
    runs = [(tid, [records[s.index] for s in members], _earliest(members))
            for tid, members in run_groups(spans).items() if tid is not None]
    return (runs, None) if len(runs) >= 2 else ([], _earliest(spans))


def _stored(source: str):
    """Each run of a live store, read as ``store:PATH#ID`` reads it (its time: the earliest span's start)."""
    for name, raw, tid, at, reason in live_store.replay_runs(source):
        if reason is not None:
            yield "error", name, reason, tid, None, at
            continue
        try:
            data = parse_text(raw.decode(), name)
            family = family_of(data, name)
        except InputError:
            data, family = None, None
        yield "bytes", name, raw, tid, run_time(family.name if family else None, data), at


def _split(name: str, data, ids: list[str]) -> list[tuple[str, Any, Optional[str]]]:
    """(run id, records, time) of each run: Langfuse traces one by one, or their observations by ``traceId``,
    named as the loader names them (:func:`ctxcore.io.formats.langfuse.trace_keys`); a trace known by its place
    only (no id, or one another trace shares) is handed the whole file with its name to pick, at its own time.
    Any other shape (span exports have :func:`_span_runs`) is handed whole with the run's id to pick."""
    if name == LANGFUSE:
        rows = data["data"] if isinstance(data, dict) and isinstance(data.get("data"), list) else data
        if isinstance(rows, list):
            units: dict = {}  # a trace row is a trace of its own; observation rows gather under their traceId
            for place, row in enumerate(rows):
                if not isinstance(row, dict):
                    continue
                if isinstance(row.get("observations"), list):
                    head = row["trace"] if isinstance(row.get("trace"), dict) else row
                    units[("row", place)] = (head.get("id"), [row])
                else:
                    tid = row.get("traceId")
                    units.setdefault(("obs", None if tid is None else str(tid)), (tid, []))[1].append(row)
            found = [(None if tid is None else str(tid), records) for tid, records in units.values()]
            keys = trace_keys([tid for tid, _ in found])
            if keys == ids:
                return [(key, records if key == tid else {"whole": data, "trace_id": key}, run_time(name, records))
                        for key, (tid, records) in zip(keys, found)]
    return [(tid, {"whole": data, "trace_id": tid}, None) for tid in ids]


def run_time(family: Optional[str], data) -> Optional[str]:
    """When a run happened, as the log wrote it: the ctxcore line's ``time``, the Langfuse trace's
    ``timestamp`` (else its first observation's ``startTime``), the earliest span's start."""
    if family is None:
        value = data.get("time", data.get("timestamp")) if isinstance(data, dict) else None
    elif family == LANGFUSE:
        rows = data if isinstance(data, list) else [data]
        heads = [r.get("trace") if isinstance(r.get("trace"), dict) else r for r in rows if isinstance(r, dict)]
        value = next((h.get("timestamp") for h in heads if h.get("timestamp") is not None), None)
        if value is None:
            obs = [o for h in rows if isinstance(h, dict) for o in (h.get("observations") or [h])
                   if isinstance(o, dict) and o.get("startTime") is not None]
            value = min((str(o["startTime"]) for o in obs), default=None)
    else:
        try:
            spans = parse_spans(span_records(data) or [], "input")
        except InputError:
            spans = []
        return _earliest(spans)
    return None if value is None else str(value)


def _earliest(spans) -> Optional[str]:
    """The earliest start of the spans (numbers, compared as numbers, before text), as text.

    >>> from ctxcore.io.formats.spans import parse_spans
    >>> _earliest(parse_spans([{"name": "a", "start_time": 10}, {"name": "b", "start_time": 9.5}], "f"))
    '9.5'
    """
    starts = [s.start for s in spans if s.start is not None]
    value = min(starts, key=lambda v: (0, v) if isinstance(v, (int, float)) else (1, str(v))) if starts else None
    return None if value is None else str(value)


def why(err: Exception, source: str) -> str:
    """What is wrong, without the source it is reported beside (its line, row and field stay)."""
    text = str(err)
    if isinstance(err, InputError) and text.startswith(source):
        return text[len(source):].lstrip(",: ") or text
    return text


def load_item(item: Item) -> tuple[Loaded, Optional[str], Optional[str]]:
    """(the run as ctxcore input, its run id, its time); raises InputError when it cannot be read."""
    if item.kind == "error":
        raise InputError(item.payload, source=item.source)
    if item.kind == "bytes":
        loaded = load(item.payload, name=item.source)
        return loaded, _run_id(loaded), item.time
    if item.kind == "line":
        try:
            data = parse_json(item.payload, item.source)
        except InputError as err:
            err.line = None  # the source names the line of the log; the parser saw a one-line text
            raise
        loaded = from_object(data, item.source)
        own = data.get("run_id") if isinstance(data, dict) else None
        return loaded, _run_id(loaded) or (str(own) if own is not None else None), run_time(None, data)
    name, records = item.payload
    family = _BY_NAME[name]
    if isinstance(records, dict) and "whole" in records:
        return family.load(records["whole"], item.source, records["trace_id"]), item.run_id, item.time
    return family.load(records, item.source, item.run_id), item.run_id, item.time


def sealed_item(item: Item) -> Optional[tuple[Stored, Optional[str], Optional[str]]]:
    """(the stored side, run id, time) of a run that is a trace this engine sealed (a log's line or a one-run
    file), read as :func:`load_item` would name it; None for any other run (read it with :func:`load_item`)."""
    if item.kind == "line" and '"seal"' in item.payload:
        text = item.payload
    elif item.kind == "bytes" and b'"seal"' in item.payload:
        try:
            text = decode(item.payload, item.source)
        except InputError:
            return None
    else:
        return None
    try:
        data = parse_json(text, item.source)
    except InputError:
        return None
    stored = read_sealed(data, item.source)
    if stored is None:
        return None
    own = stored.logged.trace_id if stored.logged is not None and stored.logged.trace_id else None
    if item.kind == "bytes":
        return stored, own, item.time
    line_id = data.get("run_id")
    return stored, own or (str(line_id) if line_id is not None else None), run_time(None, data)


def _run_id(loaded: Loaded) -> Optional[str]:
    logged = loaded.logged or (loaded.trace.logged if loaded.trace is not None else None)
    return logged.trace_id if logged is not None and logged.trace_id else None
