"""Saved cases: an embedded SQLite store (no Streamlit here), so a case saved by one session opens in another.

A case is one view of one input: the input's bytes (stored once per SHA-256, at most ``MAX_INPUT_BYTES``), the
settings, the question, the selected candidate, the search text, the answer, and a title, a note and a
root-cause tag. The database lives in ``CTXCORE_DATA_DIR`` (default ``./.ctxcore-data``), file ``cases.db``,
created on first use. The schema carries its version in ``PRAGMA user_version`` and is brought forward by
``MIGRATIONS`` in order; the journal is in WAL mode, so readers never wait for a writer, and every write is one
short ``BEGIN IMMEDIATE`` transaction, so concurrent sessions (threads or processes) lose nothing.

Export is one JSON object (``ctxcore.case/1``) holding the case and its input (base64), for people on another
server; import checks the digest, the size and every field by the rules a saved case follows (:func:`case_row`),
and gives the case a new id when its own is taken. A row that breaks them anyway (written by hand, or by an older
version) is still listed, with its problem named (``Case.problem``), so one bad row never hides the others.
A store this process may not write is opened read-only: its cases are shown, saving is refused in words.
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
from urllib.parse import quote

from ctxcore import Config, InputError
from ctxcore.analysis import vocabulary
from ctxcore.io.reading import parse_json
from ctxcore.settings import _is_number

from .linkparams import control_problem
from .settings import DEFAULT_CONTROLS, PAGE_DEFAULTS, config_from_controls

DATA_DIR_ENV = "CTXCORE_DATA_DIR"
DEFAULT_DATA_DIR = ".ctxcore-data"
DB_NAME = "cases.db"
BUSY_SECONDS = 30          # how long a writer waits for another to finish
MAX_INPUT_BYTES = 64 * 1024 * 1024
EXPORT_FORMAT = "ctxcore.case/1"
TAGS = vocabulary.TAGS   # the diagnosis kinds, plus "other": one vocabulary of causes (ctxcore.analysis.vocabulary)
STORED_TAGS = ("",) + TAGS + tuple(vocabulary.OLD_TAGS)  # a case saved or exported with an older tag still loads
CREATED_RANGE = (0.0, 4_102_444_800.0)  # 1970-01-01 to 2100-01-01 UTC: when any real case was saved
MAX_SETTINGS_CHARS = 64 * 1024           # a case's settings as JSON; the controls take under 1 KB
MAX_SETTINGS_KEYS = 100                  # the controls are about 30
MAX_LIST_ITEMS = 100                     # a list in the settings (the fate filter has 8 fates)
PAGES = ("debugger", "diagnose")
VIEWS = ("", "replay", "sent")
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
    problem: str = ""         # why a stored row breaks the rules of a saved case ("" for a sound one)


def data_dir() -> Path:
    return Path(os.environ.get(DATA_DIR_ENV) or DEFAULT_DATA_DIR).expanduser()


def db_path(folder: Optional[Path] = None) -> Path:
    return Path(folder or data_dir()) / DB_NAME


def writable(path: Path) -> bool:
    """Whether this process may write the store at ``path``: the file and its folder (SQLite writes its journal
    beside the file), or the nearest existing folder when there is no store yet."""
    path = Path(path)
    if path.exists():
        return os.access(path, os.W_OK) and os.access(path.parent, os.W_OK)
    folder = path.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    return os.access(folder, os.W_OK)


def read_only_reason(folder: Optional[Path] = None) -> Optional[str]:
    """Why saving is unavailable (the store cannot be written by this server), or None when it is available."""
    path = db_path(folder)
    return None if writable(path) else f"the store {path} is read-only for this server: saving is unavailable"


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


def _connect_read_only(path: Path) -> sqlite3.Connection:
    """A read-only connection (URI mode=ro): no migration, no journal switch, nothing written. A WAL store whose
    shared-memory file is gone cannot be read that way from a folder nobody here may write (SQLite must create
    the file): it is then opened as immutable, which reads the file as it is, without locks."""
    uri = f"file:{quote(str(path.resolve()))}?mode=ro"
    for suffix in ("", "&immutable=1"):
        conn = sqlite3.connect(uri + suffix, uri=True, timeout=BUSY_SECONDS, isolation_level=None)
        try:
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            break
        except sqlite3.OperationalError:
            conn.close()
            if suffix:
                raise
    if version < SCHEMA_VERSION:
        conn.close()
        raise CaseError(f"the store {path} is read-only and older (schema {version}, this version reads "
                        f"{SCHEMA_VERSION}): open it once where it can be written")
    return conn


@contextlib.contextmanager
def connection(folder: Optional[Path] = None, write: bool = False) -> Iterator[sqlite3.Connection]:
    """A migrated connection to the store, closed afterwards; read-only when the store cannot be written
    (then ``write`` raises CaseError saying so)."""
    path = db_path(folder)
    if writable(path):
        conn = _connect(path)
        try:
            migrate(conn)
            yield conn
        finally:
            conn.close()
        return
    if write:
        raise CaseError(read_only_reason(folder))
    if not path.exists():
        conn = sqlite3.connect(":memory:", isolation_level=None)  # no store yet: no cases
        for statement in "".join(MIGRATIONS).split(";"):
            if statement.strip():
                conn.execute(statement)
    else:
        conn = _connect_read_only(path)
    try:
        yield conn
    finally:
        conn.close()


def _bad(field: str, why: str) -> CaseError:
    return CaseError(f"field '{field}': {why}")


def _shown(value) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _text(fields: dict, name: str) -> str:
    value = fields.get(name)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise _bad(name, f"must be text (got {_shown(value)})")
    limit = TEXT_LIMITS[name]
    if len(value) > limit:
        raise _bad(name, f"the {name} is longer than {limit:,} characters")
    return value


def _optional(fields: dict, name: str) -> Optional[str]:
    value = fields.get(name)
    return None if value in (None, "") else _text(fields, name)


def _choice(fields: dict, name: str, allowed: tuple, default: str = "", said: Optional[tuple] = None) -> str:
    """One of ``allowed``; the error lists ``said`` (the choices of today, when older ones are also accepted)."""
    value = _text(fields, name) or default
    if value not in allowed:
        raise _bad(name, "must be one of " + ", ".join(repr(a) for a in (said or allowed)) + f" (got {_shown(value)})")
    return value


def _created(value) -> float:
    """A save time: seconds since 1970, from 1970 to 2100 (a wider number is no time a case was saved, and
    breaks every date shown from it)."""
    lo, hi = CREATED_RANGE
    if not _is_number(value) or not lo <= value < hi:
        raise _bad("created", f"must be a time in seconds since 1970, between {lo:,.0f} (1970) and {hi:,.0f} "
                              f"(2100) (got {_shown(value)})")
    return float(value)


def _setting_shape(key, value) -> None:
    """One stored control value: a key of at most 60 characters holding null, true/false, a finite number,
    text, or a short list of short texts (the fate filter); no nesting."""
    if not isinstance(key, str) or len(key) > TEXT_LIMITS["tag"]:
        raise _bad("settings", f"has a key that is no setting name (got {_shown(key)})")
    if value is None or isinstance(value, bool) or _is_number(value):
        return
    if isinstance(value, str):
        if len(value) > TEXT_LIMITS["query"]:
            raise _bad(f"settings.{key}", f"is longer than {TEXT_LIMITS['query']:,} characters")
        return
    if isinstance(value, list) and len(value) <= MAX_LIST_ITEMS and all(
            isinstance(v, str) and len(v) <= TEXT_LIMITS["tag"] for v in value):
        return
    raise _bad(f"settings.{key}", f"must be a number, text, true/false, null or a list of at most "
                                  f"{MAX_LIST_ITEMS} words (got {_shown(value)})")


def _settings(value, registry: bool) -> str:
    """The settings as the JSON text a row holds. ``registry``: each control's value is also held to its
    setting's declared bounds (ctxcore.settings), and all of them to making one valid Config."""
    if not isinstance(value, dict):
        raise _bad("settings", f"must be an object (got {_shown(value)})")
    if len(value) > MAX_SETTINGS_KEYS:
        raise _bad("settings", f"has {len(value):,} keys; a case's settings have at most {MAX_SETTINGS_KEYS}")
    for key, item in value.items():
        _setting_shape(key, item)
    text = json.dumps(value, sort_keys=True)
    if len(text) > MAX_SETTINGS_CHARS:
        raise _bad("settings", f"is {len(text):,} characters of JSON; at most {MAX_SETTINGS_CHARS:,}")
    if registry:
        for key, item in value.items():
            why = None if key == "query" else control_problem(key, item)
            if why is not None:
                raise _bad(f"settings.{key}", f"{why} (got {_shown(item)})")
        known = {k: v for k, v in value.items() if k in DEFAULT_CONTROLS or k in PAGE_DEFAULTS}
        try:
            Config.from_dict(config_from_controls({**DEFAULT_CONTROLS, **PAGE_DEFAULTS, **known}), source="case")
        except InputError as err:
            raise _bad(f"settings.{err.field}", err.message) from None
    return text


def case_row(fields: dict, registry: bool = True) -> dict:
    """The columns of a case from its ``fields``, each checked by the rules every saved case follows (types,
    ranges, sizes); CaseError naming the first field that breaks one. ``created`` None means now."""
    created = fields.get("created")
    return {
        "created": time.time() if created is None else _created(created), "title": _text(fields, "title"),
        "note": _text(fields, "note"), "tag": _choice(fields, "tag", STORED_TAGS, said=("",) + TAGS), "name": _text(fields, "name"),
        "sample": _optional(fields, "sample"), "trace_id": _optional(fields, "trace_id"),
        "settings": _settings(fields.get("settings"), registry), "query": _text(fields, "query"),
        "candidate": _optional(fields, "candidate"), "search": _text(fields, "search"),
        "answer": _text(fields, "answer"), "page": _choice(fields, "page", PAGES, "debugger"),
        "view": _choice(fields, "view", VIEWS),
    }


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
    row = case_row(fields)
    row["name"] = row["name"] or "input"
    digest = hashlib.sha256(data).hexdigest()
    with connection(folder, write=True) as conn:
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


_NAMES = tuple(c.split(".")[1] for c in _COLUMNS.split(", "))


def _case(row) -> Case:
    """A stored row as a Case; a row that breaks the rules (``case_row``) comes with its problem and values that
    are safe to show, so one bad row never hides the others."""
    values = dict(zip(_NAMES, row))
    try:
        settings = parse_json(values["settings"], "settings") if isinstance(values["settings"], str) else None
    except InputError:
        settings = None
    try:
        case_row({**values, "settings": settings}, registry=False)
        problem = "" if isinstance(values["id"], str) else f"field 'id': must be text (got {_shown(values['id'])})"
    except CaseError as err:
        problem = str(err)
    if not problem:
        return Case(**{**values, "settings": settings, "created": float(values["created"])})
    safe = {k: v if isinstance(v, str) or v is None else str(v)[:TEXT_LIMITS.get(k, 200)] for k, v in values.items()}
    created = values["created"]
    return Case(**{**safe, "settings": settings if isinstance(settings, dict) else {},
                   "created": float(created) if _is_number(created) else float("nan"),
                   "size": values["size"] if isinstance(values["size"], int) else 0, "problem": problem})


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
    """Cases, newest first; ``text`` matches title, note, file name and question (case-insensitive, in every
    alphabet); ``tag``
    matches the cases tagged with that kind under its name today or an older one."""
    where, args = [], []
    if tag:
        same = vocabulary.tags_for(vocabulary.tag_kind(tag))
        where.append(f"c.tag IN ({', '.join('?' * len(same))})")
        args += same
    if text.strip():
        pattern = "%" + text.strip().casefold().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        where.append("(" + " OR ".join(f"fold(c.{f}) LIKE ? ESCAPE '\\'" for f in ("title", "note", "name", "query"))
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
        # SQLite's lower() folds ASCII letters only: "CAFÉ" would not match "café"
        conn.create_function("fold", 1, _fold, deterministic=True)
        return [_case(r) for r in conn.execute(sql, (*args, int(limit))).fetchall()]


def _fold(value):
    return value.casefold() if isinstance(value, str) else value


def count_inputs(folder: Optional[Path] = None) -> int:
    with connection(folder) as conn:
        return conn.execute("SELECT count(*) FROM inputs").fetchone()[0]


def delete_case(case_id: str, folder: Optional[Path] = None) -> bool:
    """Delete a case, and its input when no other case uses it; False when there was no such case."""
    with connection(folder, write=True) as conn:
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
    try:  # not parse_json: the input's base64 may be longer than any one field it reads
        body = json.loads(blob)
    except (ValueError, UnicodeDecodeError) as err:
        raise CaseError(f"not a JSON file ({err})") from None
    except RecursionError:
        raise CaseError("not an exported case: its JSON is nested too deeply to read") from None
    if not isinstance(body, dict) or body.get("format") != EXPORT_FORMAT:
        raise CaseError(f"not an exported case (expected \"format\": \"{EXPORT_FORMAT}\")")
    src = body.get("input")
    if not isinstance(src, dict) or not isinstance(src.get("base64"), str):
        raise _bad("input", "the file holds no input (an object with base64)")
    try:
        data = base64.b64decode(src["base64"], validate=True)
    except ValueError:
        raise CaseError("the input is not valid base64") from None
    if hashlib.sha256(data).hexdigest() != src.get("sha256"):
        raise CaseError("the input does not match its SHA-256: the file was changed or cut short")
    fields = {k: body.get(k) for k in ("title", "note", "tag", "sample", "trace_id", "settings", "query",
                                       "candidate", "search", "answer", "page", "view", "created")}
    fields["name"] = src.get("name") if src.get("name") is not None else body.get("name")
    case_id = body.get("id")
    valid_id = isinstance(case_id, str) and 1 <= len(case_id) <= 40 and all(
        ch.isalnum() or ch in "-_" for ch in case_id)
    return save_case(data, fields, folder, case_id=case_id if valid_id else None)
