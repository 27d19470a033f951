"""Saved cases: an embedded SQLite store (no Streamlit here), so a case saved by one session opens in another.

A case is one view of one input: the input's bytes (stored once per SHA-256, at most ``MAX_INPUT_BYTES``), the
settings, the question, the selected candidate, the search text, the answer, and a title, a note and a
root-cause tag. The database lives in ``CTXCORE_DATA_DIR`` (default ``./.ctxcore-data``), file ``cases.db``,
created on first use. The schema carries its version in ``PRAGMA user_version`` and is brought forward by
``MIGRATIONS`` in order; the journal is in WAL mode, so readers never wait for a writer, and every write is one
short ``BEGIN IMMEDIATE`` transaction, so concurrent sessions (threads or processes) lose nothing.

Export is one JSON object (``ctxcore.case/1``) holding the case and its input (base64), for people on another
server; import checks the digest and the size and gives the case a new id when its own is taken.
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import hashlib
import json
import os
import secrets
import sqlite3
import time
from pathlib import Path
from typing import Any, Iterator, Optional

DATA_DIR_ENV = "CTXCORE_DATA_DIR"
DEFAULT_DATA_DIR = ".ctxcore-data"
DB_NAME = "cases.db"
BUSY_SECONDS = 30          # how long a writer waits for another to finish
MAX_INPUT_BYTES = 64 * 1024 * 1024
EXPORT_FORMAT = "ctxcore.case/1"
TAGS = ("dropped_for_budget", "duplicates", "buried_in_middle", "stale_version", "not_permitted",
        "below_threshold", "instruction_in_content", "not_retrieved", "truncated_prompt", "answer_error",
        "other")
TEXT_LIMITS = {"title": 200, "note": 20_000, "tag": 60, "query": 20_000, "search": 2_000, "answer": 200_000,
               "candidate": 1_000, "name": 500, "page": 40, "trace_id": 500, "sample": 200, "view": 40}

# Each entry brings the schema from version i to i + 1; never edit one that shipped, append a new one.
MIGRATIONS: tuple[str, ...] = (
    """
    CREATE TABLE inputs (
        sha256  TEXT PRIMARY KEY,
        size    INTEGER NOT NULL,
        data    BLOB NOT NULL,
        created REAL NOT NULL
    );
    CREATE TABLE cases (
        id        TEXT PRIMARY KEY,
        created   REAL NOT NULL,
        title     TEXT NOT NULL DEFAULT '',
        note      TEXT NOT NULL DEFAULT '',
        tag       TEXT NOT NULL DEFAULT '',
        name      TEXT NOT NULL,
        sha256    TEXT NOT NULL REFERENCES inputs(sha256),
        sample    TEXT,
        trace_id  TEXT,
        settings  TEXT NOT NULL,
        query     TEXT NOT NULL DEFAULT '',
        candidate TEXT,
        search    TEXT NOT NULL DEFAULT '',
        answer    TEXT NOT NULL DEFAULT '',
        page      TEXT NOT NULL DEFAULT 'debugger'
    );
    CREATE INDEX cases_created ON cases(created);
    CREATE INDEX cases_tag ON cases(tag);
    """,
    """
    ALTER TABLE cases ADD COLUMN view TEXT NOT NULL DEFAULT '';
    """,
)
SCHEMA_VERSION = len(MIGRATIONS)


class CaseError(ValueError):
    """A case that cannot be saved, found or imported; the message says why, in words."""


@dataclasses.dataclass(frozen=True)
class Case:
    id: str
    created: float
    title: str
    note: str
    tag: str
    name: str                 # the input's file name
    sha256: str
    sample: Optional[str]     # the sample file it came from, when it did
    trace_id: Optional[str]   # the run picked in a multi-run log
    settings: dict            # the controls (ctxui.settings), as saved
    query: str
    candidate: Optional[str]
    search: str
    answer: str
    page: str                 # debugger | diagnose
    view: str = ""            # the debugger's mode (replay | sent)
    size: int = 0


def data_dir() -> Path:
    return Path(os.environ.get(DATA_DIR_ENV) or DEFAULT_DATA_DIR).expanduser()


def db_path(folder: Optional[Path] = None) -> Path:
    return Path(folder or data_dir()) / DB_NAME


def _connect(path: Path) -> sqlite3.Connection:
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(str(path), timeout=BUSY_SECONDS, isolation_level=None)  # autocommit; transactions by hand
    conn.execute(f"PRAGMA busy_timeout = {BUSY_SECONDS * 1000}")
    conn.execute("PRAGMA foreign_keys = ON")
    return conn


def use_wal(conn: sqlite3.Connection, seconds: float = BUSY_SECONDS) -> None:
    """Switch the store to write-ahead logging. While other connections open the same new file, SQLite may refuse
    the switch with "database is locked" at once, without waiting its busy timeout; so wait and try again here."""
    deadline = time.monotonic() + seconds
    pause = 0.005
    while True:
        try:
            mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
            if mode.lower() != "wal":  # reading the mode takes no lock: the usual case, an existing store
                mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if mode.lower() == "wal":
                return
            refusal = sqlite3.OperationalError(f"the store stayed in {mode} journal mode")
        except sqlite3.OperationalError as error:
            if "locked" not in str(error) and "busy" not in str(error):
                raise
            refusal = error
        if time.monotonic() >= deadline:
            raise refusal
        time.sleep(pause)
        pause = min(pause * 2, 0.25)


def migrate(conn: sqlite3.Connection) -> int:
    """Bring the schema to SCHEMA_VERSION (each step in its own transaction); returns the version."""
    use_wal(conn)
    if conn.execute("PRAGMA user_version").fetchone()[0] >= SCHEMA_VERSION:  # the usual case: no lock taken
        return SCHEMA_VERSION
    while True:
        conn.execute("BEGIN IMMEDIATE")
        try:
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            if version >= SCHEMA_VERSION:
                conn.execute("COMMIT")
                return version
            for statement in MIGRATIONS[version].split(";"):
                if statement.strip():
                    conn.execute(statement)
            conn.execute(f"PRAGMA user_version = {version + 1}")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise


@contextlib.contextmanager
def connection(folder: Optional[Path] = None) -> Iterator[sqlite3.Connection]:
    """A migrated connection to the store, closed afterwards."""
    conn = _connect(db_path(folder))
    try:
        migrate(conn)
        yield conn
    finally:
        conn.close()


def _text(fields: dict, name: str) -> str:
    value = fields.get(name)
    value = "" if value is None else str(value)
    limit = TEXT_LIMITS[name]
    if len(value) > limit:
        raise CaseError(f"the {name} is longer than {limit:,} characters")
    return value


def _optional(fields: dict, name: str) -> Optional[str]:
    value = fields.get(name)
    return None if value in (None, "") else _text(fields, name)


def new_id() -> str:
    return secrets.token_urlsafe(9)  # 12 URL-safe characters, 72 random bits


def save_case(data: bytes, fields: dict, folder: Optional[Path] = None, case_id: Optional[str] = None) -> str:
    """Store a case and its input; returns its id. ``fields``: name, settings (dict), and optionally title,
    note, tag, sample, trace_id, query, candidate, search, answer, page, view, created."""
    if not isinstance(data, (bytes, bytearray)):
        raise CaseError("the input must be bytes")
    if len(data) > MAX_INPUT_BYTES:
        raise CaseError(f"the input is {len(data) / 2**20:,.1f} MB; a case holds at most "
                        f"{MAX_INPUT_BYTES // 2**20} MB")
    settings = fields.get("settings")
    if not isinstance(settings, dict):
        raise CaseError("the settings must be an object")
    name = _text(fields, "name") or "input"
    row = {
        "created": float(fields.get("created") or time.time()), "title": _text(fields, "title"),
        "note": _text(fields, "note"), "tag": _text(fields, "tag"), "name": name,
        "sample": _optional(fields, "sample"), "trace_id": _optional(fields, "trace_id"),
        "settings": json.dumps(settings, sort_keys=True), "query": _text(fields, "query"),
        "candidate": _optional(fields, "candidate"), "search": _text(fields, "search"),
        "answer": _text(fields, "answer"), "page": _text(fields, "page") or "debugger",
        "view": _text(fields, "view"),
    }
    digest = hashlib.sha256(data).hexdigest()
    with connection(folder) as conn:
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.execute("INSERT OR IGNORE INTO inputs (sha256, size, data, created) VALUES (?, ?, ?, ?)",
                         (digest, len(data), bytes(data), row["created"]))
            cid = case_id
            if cid is None or conn.execute("SELECT 1 FROM cases WHERE id = ?", (cid,)).fetchone():
                cid = new_id()
            conn.execute(f"INSERT INTO cases (id, sha256, {', '.join(row)}) VALUES (?, ?, {', '.join('?' * len(row))})",
                         (cid, digest, *row.values()))
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    return cid


_COLUMNS = ("c.id, c.created, c.title, c.note, c.tag, c.name, c.sha256, c.sample, c.trace_id, c.settings, "
            "c.query, c.candidate, c.search, c.answer, c.page, c.view, i.size")


def _case(row) -> Case:
    values = list(row)
    values[9] = json.loads(values[9])
    return Case(*values)


def get_case(case_id: str, folder: Optional[Path] = None) -> Optional[Case]:
    with connection(folder) as conn:
        row = conn.execute(f"SELECT {_COLUMNS} FROM cases c JOIN inputs i ON i.sha256 = c.sha256 WHERE c.id = ?",
                           (str(case_id),)).fetchone()
    return _case(row) if row else None


def case_input(case: Case, folder: Optional[Path] = None) -> bytes:
    with connection(folder) as conn:
        row = conn.execute("SELECT data FROM inputs WHERE sha256 = ?", (case.sha256,)).fetchone()
    if row is None:
        raise CaseError(f"the input of case {case.id} is missing from the store")
    return bytes(row[0])


def list_cases(folder: Optional[Path] = None, *, tag: Optional[str] = None, text: str = "",
               since: Optional[float] = None, until: Optional[float] = None, limit: int = 1000) -> list[Case]:
    """Cases, newest first; ``text`` matches title, note, file name and question (case-insensitive)."""
    where, args = [], []
    if tag:
        where.append("c.tag = ?")
        args.append(tag)
    if text.strip():
        pattern = "%" + text.strip().lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        where.append("(" + " OR ".join(f"lower(c.{f}) LIKE ? ESCAPE '\\'" for f in ("title", "note", "name", "query"))
                     + ")")
        args += [pattern] * 4
    if since is not None:
        where.append("c.created >= ?")
        args.append(since)
    if until is not None:
        where.append("c.created < ?")
        args.append(until)
    sql = (f"SELECT {_COLUMNS} FROM cases c JOIN inputs i ON i.sha256 = c.sha256"
           + (" WHERE " + " AND ".join(where) if where else "") + " ORDER BY c.created DESC, c.id LIMIT ?")
    with connection(folder) as conn:
        return [_case(r) for r in conn.execute(sql, (*args, int(limit))).fetchall()]


def count_inputs(folder: Optional[Path] = None) -> int:
    with connection(folder) as conn:
        return conn.execute("SELECT count(*) FROM inputs").fetchone()[0]


def delete_case(case_id: str, folder: Optional[Path] = None) -> bool:
    """Delete a case, and its input when no other case uses it; False when there was no such case."""
    with connection(folder) as conn:
        conn.execute("BEGIN IMMEDIATE")
        try:
            row = conn.execute("SELECT sha256 FROM cases WHERE id = ?", (str(case_id),)).fetchone()
            if row is None:
                conn.execute("ROLLBACK")
                return False
            conn.execute("DELETE FROM cases WHERE id = ?", (str(case_id),))
            conn.execute("DELETE FROM inputs WHERE sha256 = ? AND NOT EXISTS "
                         "(SELECT 1 FROM cases WHERE sha256 = ?)", (row[0], row[0]))
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    return True


def export_case(case_id: str, folder: Optional[Path] = None) -> bytes:
    """One JSON file holding the case and its input."""
    case = get_case(case_id, folder)
    if case is None:
        raise CaseError(f"there is no case {case_id!r}")
    data = case_input(case, folder)
    body: dict[str, Any] = {"format": EXPORT_FORMAT, **dataclasses.asdict(case)}
    body.pop("size")
    body["input"] = {"name": case.name, "sha256": case.sha256, "size": len(data),
                     "base64": base64.b64encode(data).decode("ascii")}
    return json.dumps(body, ensure_ascii=False, indent=1).encode("utf-8")


def import_case(blob: bytes, folder: Optional[Path] = None) -> str:
    """Store an exported case; returns its id here (its own id when that is free). Raises CaseError."""
    if len(blob) > MAX_INPUT_BYTES * 4 // 3 + 1_000_000:
        raise CaseError("the file is larger than any exported case can be")
    try:
        body = json.loads(blob)
    except (ValueError, UnicodeDecodeError) as err:
        raise CaseError(f"not a JSON file ({err})") from None
    if not isinstance(body, dict) or body.get("format") != EXPORT_FORMAT:
        raise CaseError(f"not an exported case (expected \"format\": \"{EXPORT_FORMAT}\")")
    src = body.get("input")
    if not isinstance(src, dict) or not isinstance(src.get("base64"), str):
        raise CaseError("the file holds no input")
    try:
        data = base64.b64decode(src["base64"], validate=True)
    except ValueError:
        raise CaseError("the input is not valid base64") from None
    if hashlib.sha256(data).hexdigest() != src.get("sha256"):
        raise CaseError("the input does not match its SHA-256: the file was changed or cut short")
    fields = {k: body.get(k) for k in ("title", "note", "tag", "sample", "trace_id", "settings", "query",
                                       "candidate", "search", "answer", "page", "view", "created")}
    fields["name"] = src.get("name") or body.get("name")
    case_id = body.get("id")
    valid_id = isinstance(case_id, str) and 1 <= len(case_id) <= 40 and all(
        ch.isalnum() or ch in "-_" for ch in case_id)
    return save_case(data, fields, folder, case_id=case_id if valid_id else None)
