"""The live span store: the spans the OTLP endpoint acknowledged, in an embedded SQLite file, grouped into runs
by trace id.

The file is ``live.db`` in ``CTXCORE_DATA_DIR`` (default ``./.ctxcore-data``), beside the saved cases. Each
request's spans are written as one ``ExportTraceServiceRequest`` per trace and request, in binary protobuf (a
BLOB: the endpoint acknowledges without converting anything to JSON); a run read back is turned into the OTLP
JSONL an OpenTelemetry Collector's file exporter writes, and the file readers group its spans by parent links as
they would a file's. A store written before (its rows OTLP JSON text in the same ``body`` column) reads as it
did: SQLite keeps each value's own type, so the schema is unchanged and old and new rows mix. WAL journal
(readers never wait for the writer); one short transaction per request, which also drops the oldest runs past
the retention limits (:data:`MAX_RUNS`, :data:`MAX_BYTES`).

SQLite's automatic checkpoint (the WAL copied into the database and synced, every 4 MB) would run inside the
commit of whichever request crossed the mark, adding tens of milliseconds to its acknowledgement; it is off, and
a checkpoint runs on its own thread :data:`CHECKPOINT_AFTER` seconds after a write instead (a passive one: it
never blocks the writer). Writes are serialised by one lock; a request that would wait behind :data:`MAX_WAITING`
others, or longer than :data:`WRITE_WAIT` seconds, gets :class:`Busy` (the endpoint answers 503 with Retry-After) instead of a hang.

The ``store:PATH#TRACE_ID`` / ``store:#latest`` source reader is registered here (:mod:`ctxcore.io.sources`).
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from contextlib import closing as _closing
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from . import otlp
from ..sources import Reader, Source, parse, register
from ...errors import InputError

DATA_DIR_ENV = "CTXCORE_DATA_DIR"   # the same folder as the case store (ctxui/casestore.py)
DEFAULT_DATA_DIR = ".ctxcore-data"
DB_NAME = "live.db"
MAX_RUNS = 2_000                    # runs kept; the oldest (first received) go first
MAX_BYTES = 256 * 1024 * 1024       # spans kept as stored (protobuf; JSON rows of an older store), all runs together;
                                    # the oldest runs go first
MAX_WAITING = 16                    # requests waiting to write before the next is refused (503)
WRITE_WAIT = 2.0                    # seconds a request waits to write before it is refused (503)
RETRY_AFTER = 1                     # seconds, in the 503's Retry-After
BUSY_SECONDS = 5.0
CHECKPOINT_AFTER = 0.5              # seconds after a write that the WAL is copied into the database, on its own thread

SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (trace_id TEXT PRIMARY KEY, first_seen REAL NOT NULL, last_seen REAL NOT NULL,
    service TEXT NOT NULL, spans INTEGER NOT NULL, bytes INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS runs_first ON runs (first_seen);
CREATE TABLE IF NOT EXISTS batches (id INTEGER PRIMARY KEY AUTOINCREMENT, trace_id TEXT NOT NULL, body TEXT NOT NULL);
-- body: protobuf bytes (a BLOB; a TEXT column keeps a BLOB as it is), or OTLP JSON text in a store written before
CREATE INDEX IF NOT EXISTS batches_trace ON batches (trace_id, id);
"""


class Busy(Exception):
    """The store is over its write capacity now; try again after ``retry_after`` seconds."""

    def __init__(self, message: str, retry_after: int = RETRY_AFTER):
        super().__init__(message)
        self.retry_after = retry_after


@dataclass(frozen=True)
class Run:
    trace_id: str
    first_seen: float
    last_seen: float
    service: str
    spans: int
    bytes: int


def default_path() -> Path:
    return Path(os.environ.get(DATA_DIR_ENV) or DEFAULT_DATA_DIR) / DB_NAME


def path_of(location: str) -> Path:
    """The store file a source's location names: '' the default, a folder its live.db, else the file."""
    if not location:
        return default_path()
    path = Path(location).expanduser()
    return path / DB_NAME if path.is_dir() else path


class Store:
    """One store file, written by the endpoint's threads (one at a time) and read by anyone."""

    def __init__(self, path: Optional[Path] = None, max_runs: int = MAX_RUNS, max_bytes: int = MAX_BYTES):
        self.path = Path(path) if path else default_path()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.max_runs, self.max_bytes = max_runs, max_bytes
        self._lock = threading.Lock()
        self._waiting = 0
        self._count = threading.Lock()
        self._conn = sqlite3.connect(str(self.path), timeout=BUSY_SECONDS, isolation_level=None,
                                     check_same_thread=False)
        self._conn.execute("PRAGMA journal_mode = WAL")
        self._conn.execute("PRAGMA synchronous = NORMAL")   # WAL: durable across a crash of this process
        self._conn.execute("PRAGMA wal_autocheckpoint = 0")   # checkpoints run beside the writes: _checkpoint
        self._conn.executescript(SCHEMA)
        self._timer: Optional[threading.Timer] = None

    def close(self) -> None:
        with self._count:
            timer, self._timer = self._timer, None
        if timer is not None:
            timer.cancel()
        with self._lock:
            self._conn.close()   # the last connection to close checkpoints what is left

    def _later(self) -> None:
        """A checkpoint soon, unless one is already due."""
        with self._count:
            if self._timer is not None:
                return
            self._timer = threading.Timer(CHECKPOINT_AFTER, self._checkpoint)
            self._timer.daemon = True
            self._timer.start()

    def _checkpoint(self) -> None:
        """Copy the WAL into the database (passive: the writer goes on meanwhile); a write after this point asks
        for the next one. A failure leaves the WAL to the next checkpoint."""
        with self._count:
            self._timer = None
        try:
            with _closing(sqlite3.connect(str(self.path), timeout=BUSY_SECONDS)) as conn:
                conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
        except sqlite3.Error:
            pass

    def add(self, traces: dict, now: Optional[float] = None) -> int:
        """Store one request's traces (trace id -> {body: protobuf bytes or OTLP JSON text, spans, service}) in one
        transaction; the spans stored.
        :class:`Busy` when the writer is taken for too long or too many wait for it."""
        if not traces:
            return 0
        with self._count:
            if self._waiting >= MAX_WAITING:
                raise Busy(f"{self._waiting} requests are waiting to be stored; retry after {RETRY_AFTER} s")
            self._waiting += 1
        try:
            if not self._lock.acquire(timeout=WRITE_WAIT):
                raise Busy(f"the store did not take the spans within {WRITE_WAIT:g} s; retry after {RETRY_AFTER} s")
            try:
                stored = self._write(traces, time.time() if now is None else now)
            finally:
                self._lock.release()
        finally:
            with self._count:
                self._waiting -= 1
        self._later()
        return stored

    def _write(self, traces: dict, now: float) -> int:
        conn = self._conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            rows = sorted(traces.items())
            conn.executemany("INSERT INTO batches (trace_id, body) VALUES (?, ?)",
                             ((tid, t["body"]) for tid, t in rows))
            conn.executemany("INSERT INTO runs VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (trace_id) DO UPDATE SET "
                             "last_seen = excluded.last_seen, spans = spans + excluded.spans, "
                             "bytes = bytes + excluded.bytes, service = CASE WHEN service = '' THEN "
                             "excluded.service ELSE service END",
                             ((tid, now, now, t["service"], t["spans"], _size(t["body"])) for tid, t in rows))
            self._retain(conn)
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        return sum(t["spans"] for t in traces.values())

    def _retain(self, conn: sqlite3.Connection) -> None:
        """Drop the oldest runs (first received first) until both retention limits hold."""
        runs, size = conn.execute("SELECT COUNT(*), COALESCE(SUM(bytes), 0) FROM runs").fetchone()
        if runs <= self.max_runs and size <= self.max_bytes:
            return
        dropped = []
        for tid, nbytes in conn.execute("SELECT trace_id, bytes FROM runs ORDER BY first_seen, trace_id"):
            if runs <= self.max_runs and size <= self.max_bytes:
                break
            dropped.append((tid,))
            runs, size = runs - 1, size - nbytes
        conn.executemany("DELETE FROM batches WHERE trace_id = ?", dropped)
        conn.executemany("DELETE FROM runs WHERE trace_id = ?", dropped)


def _size(body) -> int:
    return len(body) if isinstance(body, bytes) else len(body.encode())


def _read(path: Path) -> sqlite3.Connection:
    """A read-only connection to an existing store; one line when there is none."""
    if not path.is_file():
        raise InputError("no live store here: start the endpoint (python -m ctxcore serve) and send traces to it",
                         source=str(path))
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=BUSY_SECONDS)
        conn.execute("SELECT 1 FROM runs LIMIT 1")
    except sqlite3.Error as err:
        raise InputError(f"not a live store ({err})", source=str(path)) from None
    return conn


def runs(path: Optional[Path] = None, service: str = "", text: str = "", limit: int = 200) -> list[Run]:
    """The stored runs, newest first; ``service`` exactly, ``text`` anywhere in the spans (case-insensitive)."""
    where, args = [], []
    if service:
        where.append("service = ?")
        args.append(service)
    if text:
        where.append("trace_id IN (SELECT trace_id FROM batches WHERE instr(lower(body), ?) > 0)")
        args.append(text.lower())
    sql = "SELECT * FROM runs" + (" WHERE " + " AND ".join(where) if where else "") + \
        " ORDER BY first_seen DESC, trace_id LIMIT ?"
    with _closing(_read(path or default_path())) as conn:
        return [Run(*row) for row in conn.execute(sql, (*args, limit))]


def services(path: Optional[Path] = None) -> list[str]:
    with _closing(_read(path or default_path())) as conn:
        return [s for (s,) in conn.execute("SELECT DISTINCT service FROM runs ORDER BY service")]


def totals(path: Optional[Path] = None) -> tuple[int, int, int]:
    """(runs, spans, bytes) stored."""
    with _closing(_read(path or default_path())) as conn:
        return conn.execute("SELECT COUNT(*), COALESCE(SUM(spans), 0), COALESCE(SUM(bytes), 0) FROM runs").fetchone()


def _latest(conn: sqlite3.Connection, path: Path) -> str:
    row = conn.execute("SELECT trace_id FROM runs ORDER BY first_seen DESC, trace_id LIMIT 1").fetchone()
    if row is None:
        raise InputError("the live store holds no run yet", source=str(path))
    return row[0]


def _jsonl(conn: sqlite3.Connection, trace_id: str, path: Path) -> bytes:
    """One run's rows as OTLP JSONL: protobuf rows converted here, JSON rows (an older store's) as they are."""
    lines = []
    for (body,) in conn.execute("SELECT body FROM batches WHERE trace_id = ? ORDER BY id", (trace_id,)):
        if isinstance(body, bytes):
            try:
                body = otlp.to_json(body)
            except otlp.WireError as err:
                raise InputError(str(err), source=str(path)) from None
            except Exception as err:   # noqa: BLE001 - a damaged row: protobuf's DecodeError and kin
                raise InputError(f"run {trace_id}: a stored row cannot be read ({str(err)[:120]})",
                                 source=str(path)) from None
        lines.append(body)
    if not lines:
        raise InputError(f"no run with trace id {trace_id!r} in the live store", source=str(path))
    return ("\n".join(lines) + "\n").encode()


def export(trace_id: str, path: Optional[Path] = None) -> tuple[str, bytes]:
    """(trace id, the run's spans as OTLP JSONL): ``latest`` is the run received last."""
    path = path or default_path()
    with _closing(_read(path)) as conn:
        tid = _latest(conn, path) if trace_id == "latest" else trace_id.lower()
        return tid, _jsonl(conn, tid, path)


def file_name(trace_id: str) -> str:
    """The name a stored run reads under, as if it were a file (the readers tell JSONL by the suffix)."""
    return f"live-{trace_id}.jsonl"


def fetch_source(src: Source) -> tuple[str, bytes]:
    """The ``store:`` reader: the run as the OTLP JSONL file it would be."""
    tid, data = export(src.trace, path_of(src.location))
    return file_name(tid), data


def replay_source(text: str) -> Optional[tuple[Path, Optional[str]]]:
    """(the store file, the trace id or ``latest``; None: every run) a replay argument names, or None when it
    names no store: ``store:PATH`` (every run; ``store:`` the default store), ``store:PATH#TRACE_ID``,
    ``store:#latest``."""
    text = str(text).strip()
    if not text.startswith("store:"):
        return None
    src = parse(text) if "#" in text else None
    if src is not None:
        return path_of(src.location), src.trace
    return path_of(text[len("store:"):]), None


def replay_bytes(text: str) -> int:
    """What a replay of ``text`` (a store source) reads, in stored bytes (progress and ETA count these); one
    line when the store or the run is not there."""
    path, trace = replay_source(text)
    with _closing(_read(path)) as conn:
        if trace is None:
            return conn.execute("SELECT COALESCE(SUM(bytes), 0) FROM runs").fetchone()[0]
        tid = _latest(conn, path) if trace == "latest" else trace.lower()
        row = conn.execute("SELECT bytes FROM runs WHERE trace_id = ?", (tid,)).fetchone()
        if row is None:
            raise InputError(f"no run with trace id {trace!r} in the live store", source=str(path))
        return row[0]


def replay_runs(text: str):
    """(file name, the run as OTLP JSONL or None, trace id, stored bytes read so far, why it cannot be read or
    None) for every run ``text`` names, oldest (first received) first, each read as ``store:PATH#ID`` reads it.
    The runs are listed once, at the start; one dropped by retention while the replay reads is passed over."""
    path, trace = replay_source(text)
    with _closing(_read(path)) as conn:
        if trace is None:
            ids = conn.execute("SELECT trace_id, bytes FROM runs ORDER BY first_seen, trace_id").fetchall()
        else:
            tid = _latest(conn, path) if trace == "latest" else trace.lower()
            ids = conn.execute("SELECT trace_id, bytes FROM runs WHERE trace_id = ?", (tid,)).fetchall()
            if not ids:
                raise InputError(f"no run with trace id {trace!r} in the live store", source=str(path))
        done = 0
        for tid, size in ids:
            done += size
            try:
                data, why = _jsonl(conn, tid, path), None
            except InputError as err:
                if not conn.execute("SELECT 1 FROM runs WHERE trace_id = ?", (tid,)).fetchone():
                    continue
                data, why = None, str(err)
            yield file_name(tid), data, tid, done, why


register(Reader("store", fetch_source, help="a run the live OTLP endpoint stored: store:PATH#TRACE_ID or "
                                             "store:#latest"))
