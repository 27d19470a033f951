"""The case store held by hand-valued tests (issue #29): its field checks at their edges, and the store itself
(exact rows back, filters, delete, export/import, schema, WAL retries, the read-only store), which mutmut's map
otherwise lacks: tests/test_cases.py exercises it but is left out of the mutation run."""

import base64
import dataclasses
import hashlib
import json
import math
import os
import sqlite3
import time
from pathlib import Path

import pytest

from ctxui import casestore
from ctxui.casestore import CREATED_RANGE, CaseError, TEXT_LIMITS, _created, _text


@pytest.mark.parametrize("value, ok", [
    (0, True), (0.0, True), (-0.001, False), (4_102_444_799.9, True), (4_102_444_800, False),
    (1_700_000_000, True), (True, False), ("1700000000", False), (float("nan"), False), (None, False)])
def test_created_is_a_time_from_1970_up_to_but_not_including_2100(value, ok):
    """Plant: ``value <= hi`` (2100-01-01 itself accepted) and ``lo < value`` (0 refused)."""
    assert CREATED_RANGE == (0.0, 4_102_444_800.0)
    if ok:
        assert _created(value) == float(value) and type(_created(value)) is float
    else:
        with pytest.raises(CaseError) as err:
            _created(value)
        assert str(err.value).startswith("field 'created': must be a time in seconds since 1970, between 0 (1970) "
                                         "and 4,102,444,800 (2100) (got ")


@pytest.mark.parametrize("name", ["title", "tag", "note"])
def test_a_text_field_at_its_limit_is_kept_one_over_is_refused(name):
    """Plant: ``len(value) >= limit`` (a title of exactly 200 characters refused)."""
    limit = TEXT_LIMITS[name]
    assert _text({name: "t" * limit}, name) == "t" * limit
    with pytest.raises(CaseError) as err:
        _text({name: "t" * (limit + 1)}, name)
    assert str(err.value) == f"field '{name}': the {name} is longer than {limit:,} characters"


def test_limits_of_the_text_fields():
    assert (TEXT_LIMITS["title"], TEXT_LIMITS["note"], TEXT_LIMITS["tag"]) == (200, 20_000, 60)


def test_a_text_field_that_is_not_text_names_what_it_got():
    assert _text({}, "title") == "" and _text({"title": None}, "title") == ""
    with pytest.raises(CaseError) as err:
        _text({"title": ["x" * 50]}, "title")
    assert str(err.value) == "field 'title': must be text (got ['" + "x" * 35 + "...)"  # repr cut at 37


def test_choice_falls_back_to_its_default_and_names_the_allowed_values():
    assert casestore._choice({}, "tag", ("", "duplicates")) == ""
    assert casestore._choice({"tag": "duplicates"}, "tag", ("", "duplicates")) == "duplicates"
    with pytest.raises(CaseError) as err:
        casestore._choice({"tag": "nope"}, "tag", ("", "duplicates"))
    assert str(err.value) == "field 'tag': must be one of '', 'duplicates' (got 'nope')"


# --------------------------------------------------------------------------- the store itself, with exact values
# (issue #29: mutmut's map of covering tests held only the field checks above; the store's own functions are
# covered by tests/test_cases.py, which the mutation run leaves out for its parallel writers and app sessions)

from ctxui.casestore import Case

DATA = b'[{"id": "a", "text": "refunds take five days", "score": 0.9}]'
SHA = hashlib.sha256(DATA).hexdigest()


@pytest.fixture
def store(tmp_path, monkeypatch):
    """A fresh data folder of its own, named by the environment as the app names it."""
    folder = tmp_path / "data"
    monkeypatch.setenv(casestore.DATA_DIR_ENV, str(folder))
    return folder


def _case(cid, **over):
    base = dict(id=cid, created=1000.0, title="", note="", tag="", name="a.json", sha256=SHA, sample=None,
                trace_id=None, settings={}, query="", candidate=None, search="", answer="", page="debugger", view="",
                size=len(DATA), problem="")
    return Case(**{**base, **over})


def test_the_data_folder_comes_from_the_environment_or_the_default(monkeypatch, tmp_path):
    monkeypatch.delenv(casestore.DATA_DIR_ENV, raising=False)
    assert casestore.data_dir() == Path(".ctxcore-data")
    monkeypatch.setenv(casestore.DATA_DIR_ENV, "")
    assert casestore.data_dir() == Path(".ctxcore-data")
    monkeypatch.setenv(casestore.DATA_DIR_ENV, "~/cases-here")
    assert casestore.data_dir() == Path.home() / "cases-here"
    assert casestore.db_path() == Path.home() / "cases-here" / "cases.db"
    assert casestore.db_path(tmp_path) == tmp_path / "cases.db"
    assert (casestore.DATA_DIR_ENV, casestore.DB_NAME) == ("CTXCORE_DATA_DIR", "cases.db")


def _deny_writes_under(monkeypatch, folder):
    """This machine runs the tests as root, whom the file modes never stop: deny writing under ``folder`` the way
    a server account without rights would see it (``os.access``), everything else as it is."""
    real = casestore.os.access

    def access(path, mode):
        inside = Path(path).resolve() == folder.resolve() or folder.resolve() in Path(path).resolve().parents
        return False if inside and mode & os.W_OK else real(path, mode)

    monkeypatch.setattr(casestore.os, "access", access)


def test_writable_asks_the_file_and_its_folder_or_the_nearest_existing_folder(tmp_path, monkeypatch):
    locked = tmp_path / "locked"
    locked.mkdir()
    (locked / "cases.db").write_bytes(b"")
    free = tmp_path / "free"
    free.mkdir()
    (free / "cases.db").write_bytes(b"")
    _deny_writes_under(monkeypatch, locked)
    assert casestore.writable(free / "cases.db") is True
    assert casestore.writable(locked / "cases.db") is False
    assert casestore.writable(tmp_path / "a" / "b" / "cases.db") is True       # nearest existing: tmp_path
    assert casestore.writable(locked / "a" / "b" / "cases.db") is False        # nearest existing: locked
    assert casestore.read_only_reason(free) is None
    assert casestore.read_only_reason(locked) == (f"the store {locked / 'cases.db'} is read-only for this server: "
                                                  f"saving is unavailable")


def test_writable_needs_the_folder_too_not_only_the_file(tmp_path, monkeypatch):
    """SQLite writes its journal beside the file: a writable file in a folder that is not is not writable."""
    folder = tmp_path / "ro"
    folder.mkdir()
    (folder / "cases.db").write_bytes(b"")
    real = casestore.os.access
    monkeypatch.setattr(casestore.os, "access",
                        lambda p, m: False if Path(p) == folder and m & os.W_OK else real(p, m))
    assert casestore.writable(folder / "cases.db") is False
    monkeypatch.setattr(casestore.os, "access",
                        lambda p, m: False if Path(p) == folder / "cases.db" and m & os.W_OK else real(p, m))
    assert casestore.writable(folder / "cases.db") is False


def test_a_new_store_is_made_in_wal_with_the_latest_schema_a_busy_wait_and_foreign_keys(store):
    with casestore.connection() as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 2 == casestore.SCHEMA_VERSION
        assert conn.execute("PRAGMA busy_timeout").fetchone()[0] == 30_000
        assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
        assert conn.in_transaction is False and conn.isolation_level is None
        cols = [r[1] for r in conn.execute("PRAGMA table_info(cases)")]
    assert cols[-1] == "view" and len(cols) == 16
    assert (store / "cases.db").exists()
    assert casestore.BUSY_SECONDS == 30


def test_migrate_brings_each_version_forward_once_and_reports_the_version(tmp_path):
    conn = sqlite3.connect(str(tmp_path / "m.db"), isolation_level=None)
    assert casestore.migrate(conn) == 2
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 2
    assert casestore.migrate(conn) == 2  # already there
    conn.close()
    old = sqlite3.connect(str(tmp_path / "old.db"), isolation_level=None)
    old.executescript(casestore.MIGRATIONS[0])
    old.execute("PRAGMA user_version = 1")
    assert casestore.migrate(old) == 2
    assert [r[1] for r in old.execute("PRAGMA table_info(cases)")][-1] == "view"
    assert old.in_transaction is False
    old.close()


def test_a_migration_that_fails_rolls_back_and_leaves_the_version(tmp_path):
    conn = sqlite3.connect(str(tmp_path / "bad.db"), isolation_level=None)
    conn.execute("CREATE TABLE inputs (x)")  # the first migration's CREATE TABLE inputs fails on it
    with pytest.raises(sqlite3.OperationalError, match="already exists"):
        casestore.migrate(conn)
    assert conn.in_transaction is False
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 0
    assert [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")] == ["inputs"]
    conn.close()


class _Clock:
    """A clock that only moves when the code under test sleeps: the retry schedule of ``use_wal``, exactly."""

    def __init__(self):
        self.now, self.sleeps = 100.0, []

    def monotonic(self):
        return self.now

    def sleep(self, s):
        self.sleeps.append(s)
        self.now += s


class _Refusing:
    """A real in-memory connection whose first ``n`` statements are refused with ``error``."""

    def __init__(self, error, n, mode=None):
        self.conn, self.error, self.n, self.mode, self.seen = sqlite3.connect(":memory:"), error, n, mode, []

    def execute(self, sql):
        self.seen.append(sql)
        if self.n:
            self.n -= 1
            raise sqlite3.OperationalError(self.error)
        if self.mode is not None:
            return self.conn.execute(f"SELECT '{self.mode}'")
        return self.conn.execute(sql)


def test_use_wal_retries_a_locked_store_with_doubling_pauses_up_to_a_quarter_second(monkeypatch, tmp_path):
    clock = _Clock()
    monkeypatch.setattr(casestore.time, "monotonic", clock.monotonic)
    monkeypatch.setattr(casestore.time, "sleep", clock.sleep)
    conn = _Refusing("database is locked", 9, mode="wal")
    casestore.use_wal(conn, seconds=30)
    assert clock.sleeps == [0.005, 0.01, 0.02, 0.04, 0.08, 0.16, 0.25, 0.25, 0.25]
    assert conn.seen[-1] == "PRAGMA journal_mode"  # the mode is read first; it is already WAL
    busy = _Refusing("database table is busy", 1, mode="WAL")
    casestore.use_wal(busy, seconds=30)
    assert clock.sleeps[-1] == 0.005 and busy.seen == ["PRAGMA journal_mode", "PRAGMA journal_mode"]


def test_use_wal_gives_up_at_its_deadline_and_raises_the_last_refusal(monkeypatch):
    clock = _Clock()
    monkeypatch.setattr(casestore.time, "monotonic", clock.monotonic)
    monkeypatch.setattr(casestore.time, "sleep", clock.sleep)
    conn = _Refusing("database is locked", 1000)
    with pytest.raises(sqlite3.OperationalError, match="^database is locked$"):
        casestore.use_wal(conn, seconds=1)
    assert clock.sleeps == [0.005, 0.01, 0.02, 0.04, 0.08, 0.16, 0.25, 0.25, 0.25]  # 1.065 s > 1 s: stop
    clock.sleeps.clear()
    with pytest.raises(sqlite3.OperationalError, match="^database is locked$"):
        casestore.use_wal(_Refusing("database is locked", 1000), seconds=0)
    assert clock.sleeps == []
    with pytest.raises(sqlite3.OperationalError, match="^disk I/O error$"):  # not a lock: at once
        casestore.use_wal(_Refusing("disk I/O error", 1), seconds=30)
    assert clock.sleeps == []


def test_use_wal_on_a_store_that_cannot_switch_says_which_mode_it_stayed_in(monkeypatch):
    clock = _Clock()
    monkeypatch.setattr(casestore.time, "monotonic", clock.monotonic)
    monkeypatch.setattr(casestore.time, "sleep", clock.sleep)
    conn = sqlite3.connect(":memory:")  # an in-memory database has no WAL: it stays "memory"
    with pytest.raises(sqlite3.OperationalError, match="^the store stayed in memory journal mode$"):
        casestore.use_wal(conn, seconds=0.02)
    assert clock.sleeps == [0.005, 0.01, 0.02]


def test_save_then_get_gives_back_every_field_exactly(store):
    cid = casestore.save_case(DATA, {"name": "a.json", "settings": {"budget": 60, "budget_on": True},
                                     "title": "T", "note": "N", "tag": "duplicates", "sample": "s.json",
                                     "trace_id": "t1", "query": "q", "candidate": "a", "search": "five",
                                     "answer": "ans", "page": "diagnose", "view": "sent", "created": 1000})
    assert len(cid) == 12
    assert casestore.get_case(cid) == _case(cid, title="T", note="N", tag="duplicates", sample="s.json",
                                            trace_id="t1", settings={"budget": 60, "budget_on": True}, query="q",
                                            candidate="a", search="five", answer="ans", page="diagnose",
                                            view="sent")
    assert casestore.case_input(casestore.get_case(cid)) == DATA
    assert casestore.get_case("nope") is None
    assert casestore.count_inputs() == 1


def test_save_defaults_the_name_and_keeps_a_free_id_or_makes_a_new_one(store):
    one = casestore.save_case(bytearray(DATA), {"settings": {}, "created": 1000}, case_id="mine")
    assert one == "mine"
    assert casestore.get_case("mine") == _case("mine", name="input")
    two = casestore.save_case(DATA, {"name": "a.json", "settings": {}, "created": 1000}, case_id="mine")
    assert two != "mine" and len(two) == 12 and casestore.get_case(two) == _case(two)
    assert casestore.count_inputs() == 1


def test_save_without_a_time_stamps_now(store):
    before = time.time()
    cid = casestore.save_case(DATA, {"name": "a.json", "settings": {}})
    assert before <= casestore.get_case(cid).created <= time.time()


def test_the_input_limit_at_its_edge_and_what_is_not_bytes(store, monkeypatch):
    monkeypatch.setattr(casestore, "MAX_INPUT_BYTES", 2**20)
    assert casestore.save_case(b"x" * 2**20, {"name": "big", "settings": {}, "created": 1000})
    with pytest.raises(CaseError) as err:
        casestore.save_case(b"x" * (2**20 + 1), {"name": "big", "settings": {}})
    assert str(err.value) == "the input is 1.0 MB; a case holds at most 1 MB"
    with pytest.raises(CaseError) as err:
        casestore.save_case("text", {"name": "t", "settings": {}})
    assert str(err.value) == "the input must be bytes"
    assert casestore.MAX_INPUT_BYTES == 2**20 and casestore.count_inputs() == 1


def test_a_failed_insert_rolls_back_the_whole_case(store):
    casestore.save_case(DATA, {"name": "a.json", "settings": {}, "created": 1000}, case_id="x")
    with casestore.connection() as conn:
        conn.execute("CREATE TRIGGER no_more BEFORE INSERT ON cases WHEN NEW.title = 'boom' "
                     "BEGIN SELECT RAISE(ABORT, 'refused'); END")
    with pytest.raises(sqlite3.IntegrityError, match="refused"):
        casestore.save_case(b"other input", {"name": "b", "settings": {}, "title": "boom"})
    assert casestore.count_inputs() == 1  # the new input went back out with the case
    with casestore.connection() as conn:
        assert conn.in_transaction is False


def test_the_stored_inputs_are_shared_and_freed_with_their_last_case(store):
    a = casestore.save_case(DATA, {"name": "a.json", "settings": {}, "created": 1000})
    b = casestore.save_case(DATA, {"name": "a.json", "settings": {}, "created": 1000})
    c = casestore.save_case(b"other", {"name": "b", "settings": {}, "created": 1000})
    assert casestore.count_inputs() == 2
    assert casestore.delete_case(a) is True and casestore.count_inputs() == 2
    assert casestore.get_case(a) is None and casestore.get_case(b) is not None
    assert casestore.delete_case(a) is False and casestore.count_inputs() == 2
    assert casestore.delete_case(b) is True and casestore.count_inputs() == 1
    assert casestore.get_case(c) is not None
    with casestore.connection() as conn:
        assert conn.in_transaction is False


def test_list_filters_at_their_edges_and_orders_newest_first_then_by_id(store):
    ids = {}
    for cid, created, title, note, tag, name, query in [
            ("b", 2000, "Refund", "", "duplicates", "x.json", ""),            # the old name of duplicates_crowd_out
            ("a", 2000, "", "50% off_sale", "duplicates_crowd_out", "y.json", ""),
            ("c", 1000, "", "back\\slash", "stale_version", "z.json", ""),
            ("d", 3000, "", "", "", "REFUND.json", ""),
            ("e", 500, "", "", "", "w.json", "When is the refund?")]:
        ids[cid] = casestore.save_case(DATA, {"name": name, "settings": {}, "title": title, "note": note,
                                              "tag": tag, "query": query, "created": created}, case_id=cid)
    got = lambda **kw: [c.id for c in casestore.list_cases(**kw)]  # noqa: E731
    assert got() == ["d", "a", "b", "c", "e"]
    assert got(tag="duplicates_crowd_out") == ["a", "b"] == got(tag="duplicates")
    assert got(tag="outdated_version_sent") == ["c"] and got(tag="") == got()
    assert got(text="  refund ") == ["d", "b", "e"]            # title, name, question; any case
    assert got(text="50% off_") == ["a"] and got(text="%") == ["a"] and got(text="_") == ["a"]
    assert got(text="\\") == ["c"] and got(text="   ") == got()
    assert got(since=2000) == ["d", "a", "b"] and got(since=2000.5) == ["d"]
    assert got(until=2000) == ["c", "e"] and got(until=2000.5) == ["a", "b", "c", "e"]
    assert got(since=1000, until=3000) == ["a", "b", "c"]
    assert got(limit=2) == ["d", "a"] and got(limit=0) == []
    assert got(tag="duplicates", text="refund", since=1500, until=2500) == ["b"]
    assert casestore.list_cases(tag="stale_version")[0] == _case("c", created=1000.0, note="back\\slash",
                                                                 tag="stale_version", name="z.json")


def test_an_empty_store_lists_nothing_and_counts_no_input(store):
    assert casestore.list_cases() == [] and casestore.count_inputs() == 0


def test_export_holds_the_case_and_its_input_and_imports_elsewhere_with_its_id(store, tmp_path):
    cid = casestore.save_case(DATA, {"name": "a.json", "settings": {"budget": 60}, "title": "T", "tag": "duplicates",
                                     "candidate": "a", "page": "diagnose", "view": "replay", "created": 1000},
                              case_id="abc-DEF_123")
    blob = casestore.export_case(cid)
    body = json.loads(blob)
    assert body == {"format": "ctxcore.case/1", "id": "abc-DEF_123", "created": 1000.0, "title": "T", "note": "",
                    "tag": "duplicates", "name": "a.json", "sha256": SHA, "sample": None, "trace_id": None,
                    "settings": {"budget": 60}, "query": "", "candidate": "a", "search": "", "answer": "",
                    "page": "diagnose", "view": "replay", "problem": "",
                    "input": {"name": "a.json", "sha256": SHA, "size": len(DATA),
                              "base64": base64.b64encode(DATA).decode("ascii")}}
    assert blob == json.dumps(body, ensure_ascii=False, indent=1).encode("utf-8")
    other = tmp_path / "other"
    assert casestore.import_case(blob, other) == "abc-DEF_123"
    assert casestore.get_case("abc-DEF_123", other) == casestore.get_case(cid)
    again = casestore.import_case(blob, other)
    assert again != cid and len(again) == 12
    with pytest.raises(CaseError) as err:
        casestore.export_case("gone")
    assert str(err.value) == "there is no case 'gone'"


def test_export_keeps_text_as_text_not_escapes(store):
    cid = casestore.save_case(DATA, {"name": "é.json", "settings": {}, "title": "café", "created": 1000})
    assert "café".encode("utf-8") in casestore.export_case(cid)


def _exported(**over):
    body = {"format": "ctxcore.case/1", "id": "abc", "created": 1000.0, "title": "T", "name": "body.json",
            "settings": {}, "input": {"name": "a.json", "sha256": SHA, "base64": base64.b64encode(DATA).decode()}}
    for k, v in over.items():
        if v is None:
            body.pop(k, None)
        else:
            body[k] = v
    return json.dumps(body).encode()


@pytest.mark.parametrize("blob, said", [
    (b"{", "not a JSON file (Expecting property name enclosed in double quotes: line 1 column 2 (char 1))"),
    (b"\xff", "not a JSON file ('utf-8' codec can't decode byte 0xff in position 0: invalid start byte)"),
    (b"[" * 100_000 + b"]" * 100_000, "not an exported case: its JSON is nested too deeply to read"),
    (b"[]", 'not an exported case (expected "format": "ctxcore.case/1")'),
    (_exported(format="ctxcore.case/2"), 'not an exported case (expected "format": "ctxcore.case/1")'),
    (_exported(input=None), "field 'input': the file holds no input (an object with base64)"),
    (_exported(input="x"), "field 'input': the file holds no input (an object with base64)"),
    (_exported(input={"base64": 5}), "field 'input': the file holds no input (an object with base64)"),
    (_exported(input={"base64": "!!!!", "sha256": SHA}), "the input is not valid base64"),
    (_exported(input={"base64": base64.b64encode(b"other").decode(), "sha256": SHA}),
     "the input does not match its SHA-256: the file was changed or cut short"),
    (_exported(title=5), "field 'title': must be text (got 5)"),
])
def test_import_refuses_in_words(store, blob, said):
    with pytest.raises(CaseError) as err:
        casestore.import_case(blob)
    assert str(err.value) == said
    assert casestore.list_cases() == []


def test_import_size_limit_at_its_edge(store, monkeypatch):
    monkeypatch.setattr(casestore, "MAX_INPUT_BYTES", 300)  # a file may be 300 * 4 // 3 + 1,000,000 = 1,000,400
    blob = _exported()
    pad = b" " * (1_000_400 - len(blob))
    assert casestore.import_case(blob + pad) == "abc"
    with pytest.raises(CaseError) as err:
        casestore.import_case(blob + pad + b" ")
    assert str(err.value) == "the file is larger than any exported case can be"


@pytest.mark.parametrize("case_id, kept", [
    ("a" * 40, True), ("a" * 41, False), ("", False), ("a-b_C9", True), ("a.b", False), ("a b", False),
    (5, False), (None, False), ("é", True)])
def test_import_keeps_an_id_of_1_to_40_letters_digits_dashes_and_underscores(store, case_id, kept):
    got = casestore.import_case(_exported(id=case_id) if case_id is not None else _exported(id=None))
    assert (got == case_id) is kept
    if not kept:
        assert len(got) == 12


def test_import_takes_the_input_name_then_the_case_name(store):
    cid = casestore.import_case(_exported())
    assert casestore.get_case(cid).name == "a.json"
    body = json.loads(_exported(id="b2"))
    del body["input"]["name"]
    assert casestore.get_case(casestore.import_case(json.dumps(body).encode())).name == "body.json"
    body["input"]["name"] = None
    body["id"] = "b3"
    assert casestore.get_case(casestore.import_case(json.dumps(body).encode())).name == "body.json"
    assert casestore.get_case(cid) == _case("abc", title="T")


def test_import_carries_every_field(store):
    body = json.loads(_exported())
    body.update(note="N", tag="stale_version", sample="s", trace_id="t", query="q", candidate="c", search="se",
                answer="an", page="diagnose", view="sent", settings={"budget": 5})
    cid = casestore.import_case(json.dumps(body).encode())
    assert casestore.get_case(cid) == _case("abc", title="T", note="N", tag="stale_version", sample="s",
                                            trace_id="t", query="q", candidate="c", search="se", answer="an",
                                            page="diagnose", view="sent", settings={"budget": 5})


def _raw_row(store, **values):
    """Write a row by hand, as an older version or a person might have, past the checks of ``save_case``."""
    casestore.save_case(DATA, {"name": "a.json", "settings": {}, "created": 1000}, case_id="ok")
    row = dict(id="bad", created=1000, title="", note="", tag="", name="a.json", sha256=SHA, settings="{}")
    row.update(values)
    conn = sqlite3.connect(str(store / "cases.db"))
    conn.execute(f"INSERT INTO cases ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})", tuple(row.values()))
    conn.commit()
    conn.close()


TAGS_SAID = ("'', 'instruction_followed', 'unsupported_answer', 'nothing_relevant', 'outdated_version_sent', "
             "'conflicting_sources', 'reranker_cut', 'history_crowding', 'prompt_over_window', 'prompt_cut_off', "
             "'duplicates_crowd_out', 'paraphrased_duplicates', 'threshold_cut', 'per_document_cap', "
             "'buried_in_middle', 'fragmented_document', 'not_sent', 'instruction_in_content', 'other'")


@pytest.mark.parametrize("values, shown", [
    ({"created": "yesterday"}, dict(created=math.nan, problem="field 'created': must be a time in seconds since "
                                    "1970, between 0 (1970) and 4,102,444,800 (2100) (got 'yesterday')")),
    ({"created": 5e9}, dict(created=5e9, problem="field 'created': must be a time in seconds since 1970, between 0 "
                            "(1970) and 4,102,444,800 (2100) (got 5000000000.0)")),
    ({"title": b"A"}, dict(title="b'A'", problem="field 'title': must be text (got b'A')")),
    ({"tag": "nonsense"}, dict(tag="nonsense", problem="field 'tag': must be one of '', 'instruction_followed', "
                               "'unsupported_answer', 'nothing_relevant', 'outdated_version_sent', "
                               "'conflicting_sources', 'reranker_cut', 'history_crowding', 'prompt_over_window', "
                               "'prompt_cut_off', 'duplicates_crowd_out', 'paraphrased_duplicates', 'threshold_cut', "
                               "'per_document_cap', 'buried_in_middle', 'fragmented_document', 'not_sent', "
                               "'instruction_in_content', 'other' (got 'nonsense')")),
    ({"settings": "not json"}, dict(problem="field 'settings': must be an object (got None)")),
    ({"settings": "[1]"}, dict(problem="field 'settings': must be an object (got [1])")),
    ({"settings": b"{}"}, dict(problem="field 'settings': must be an object (got None)")),
    ({"settings": '{"budget": -1}'}, dict(settings={"budget": -1})),  # stored rows are not held to the registry
    ({"id": b"99"}, dict(id="b'99'", problem="field 'id': must be text (got b'99')")),
    ({"note": "n" * 20_001}, dict(note="n" * 20_001, problem="field 'note': the note is longer than 20,000 "
                                  "characters")),
    ({"title": b"x" * 300}, dict(title="b'" + "x" * 198, problem="field 'title': must be text (got b'"
                                 + "x" * 35 + "...)")),
    # a bad row's other values are shown cut at their own field's limit (a name's is 500), 200 for the rest
    ({"name": b"n" * 300, "id": b"9" * 300},
     dict(name="b'" + "n" * 300 + "'", id="b'" + "9" * 198, problem="field 'name': must be text (got b'"
          + "n" * 35 + "...)")),
    # a bad row keeps settings that are sound; an input that is gone is size 0
    ({"tag": "x", "settings": '{"budget": 100}'},
     dict(tag="x", settings={"budget": 100}, problem="field 'tag': must be one of " + TAGS_SAID + " (got 'x')")),
])
def test_a_row_that_breaks_the_rules_is_listed_with_its_problem_beside_the_sound_ones(store, values, shown):
    _raw_row(store, **values)
    cases = casestore.list_cases()
    assert len(cases) == 2
    bad = [c for c in cases if c.id != "ok"][0]
    want = _case("bad", **shown)
    if math.isnan(want.created):
        assert math.isnan(bad.created)
        want = dataclasses_replace(want, created=bad.created)
    assert bad == want
    assert [c for c in cases if c.id == "ok"][0] == _case("ok")


def dataclasses_replace(case, **kw):
    return dataclasses.replace(case, **kw)


def test_a_case_whose_input_is_gone_says_so(store):
    cid = casestore.save_case(DATA, {"name": "a.json", "settings": {}, "created": 1000})
    case = casestore.get_case(cid)
    with pytest.raises(CaseError) as err:
        casestore.case_input(dataclasses_replace(case, sha256="0" * 64))
    assert str(err.value) == f"the input of case {cid} is missing from the store"


def test_read_only_store_is_read_without_writing_and_saving_is_refused_in_words(store, monkeypatch, tmp_path):
    cid = casestore.save_case(DATA, {"name": "a.json", "settings": {}, "created": 1000}, case_id="kept")
    _deny_writes_under(monkeypatch, store)
    assert casestore.get_case(cid) == _case("kept")
    assert [c.id for c in casestore.list_cases()] == ["kept"] and casestore.count_inputs() == 1
    for write in (lambda: casestore.save_case(DATA, {"name": "a", "settings": {}}), lambda: casestore.delete_case(cid),
                  lambda: casestore.import_case(_exported())):
        with pytest.raises(CaseError) as err:
            write()
        assert str(err.value) == (f"the store {store / 'cases.db'} is read-only for this server: saving is "
                                  f"unavailable")
    empty = tmp_path / "empty"
    _deny_writes_under(monkeypatch, tmp_path)
    assert casestore.list_cases(empty) == [] and casestore.count_inputs(empty) == 0
    assert not empty.exists()


def test_a_read_only_connection_writes_nothing_and_refuses_an_older_store(store, tmp_path):
    casestore.save_case(DATA, {"name": "a.json", "settings": {}, "created": 1000})
    path = store / "cases.db"
    conn = casestore._connect_read_only(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 2
    with pytest.raises(sqlite3.OperationalError, match="readonly"):
        conn.execute("DELETE FROM cases")
    conn.close()
    odd = tmp_path / "a dir %20#" / "cases.db"
    odd.parent.mkdir()
    old = sqlite3.connect(str(odd))
    old.executescript(casestore.MIGRATIONS[0])
    old.execute("PRAGMA user_version = 1")
    old.commit()
    old.close()
    with pytest.raises(CaseError) as err:
        casestore._connect_read_only(odd)
    assert str(err.value) == (f"the store {odd} is read-only and older (schema 1, this version reads 2): open it "
                              f"once where it can be written")


@pytest.mark.parametrize("value, why", [
    ([], "field 'settings': must be an object (got [])"),
    (None, "field 'settings': must be an object (got None)"),
    ({str(i): 1 for i in range(101)}, "field 'settings': has 101 keys; a case's settings have at most 100"),
    ({"a": "x" * 20_000, "b": "y" * 20_000, "c": "z" * 20_000, "d": "w" * 5_501},
     "field 'settings': is 65,537 characters of JSON; at most 65,536"),
    ({5: 1}, "field 'settings': has a key that is no setting name (got 5)"),
    ({"k" * 61: 1}, "field 'settings': has a key that is no setting name (got "
                    "'kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk...)"),
    ({"k": "v" * 20_001}, "field 'settings.k': is longer than 20,000 characters"),
    ({"k": ["a"] * 101}, "field 'settings.k': must be a number, text, true/false, null or a list of at most 100 "
                         "words (got ['a', 'a', 'a', 'a', 'a', 'a', 'a', '...)"),
    ({"k": ["a" * 61]}, "field 'settings.k': must be a number, text, true/false, null or a list of at most 100 "
                        "words (got ['aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa...)"),
    ({"k": [1]}, "field 'settings.k': must be a number, text, true/false, null or a list of at most 100 words "
                 "(got [1])"),
    ({"k": {"a": 1}}, "field 'settings.k': must be a number, text, true/false, null or a list of at most 100 words "
                      "(got {'a': 1})"),
    ({"k": float("nan")}, "field 'settings.k': must be a number, text, true/false, null or a list of at most 100 "
                          "words (got nan)"),
])
def test_settings_refused_at_each_limit(value, why):
    for registry in (False, True):
        with pytest.raises(CaseError) as err:
            casestore._settings(value, registry)
        assert str(err.value) == why


@pytest.mark.parametrize("value, text", [
    ({str(i): 1 for i in range(100)}, None),
    ({"a": "x" * 20_000, "b": "y" * 20_000, "c": "z" * 20_000, "d": "w" * 5_500}, None),
    ({"k" * 60: None, "b": True, "n": 1.5}, '{"b": true, "kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk": '
                                          'null, "n": 1.5}'),
    ({"k": "v" * 20_000}, None), ({"k": ["a" * 60] * 100}, None), ({"k": []}, '{"k": []}'),
    ({"z": 1, "a": 2}, '{"a": 2, "z": 1}'),
])
def test_settings_kept_at_each_limit_as_sorted_json(value, text):
    got = casestore._settings(value, False)
    assert got == (text if text is not None else json.dumps(value, sort_keys=True))
    assert len(json.dumps({"a": "x" * 20_000, "b": "y" * 20_000, "c": "z" * 20_000, "d": "w" * 5_500},
                          sort_keys=True)) == 65_536


@pytest.mark.parametrize("value, why", [
    ({"budget": -1}, "field 'settings.budget': must be a whole number of tokens, 0 or more (got -1)"),
    ({"budget_on": 1}, "field 'settings.budget_on': must be true or false (got 1)"),
    ({"window": 100, "max_output": 200}, "field 'settings.window': must be larger than max_output (got 100)"),
])
def test_settings_held_to_the_registry_only_when_asked(value, why):
    assert casestore._settings(value, False) == json.dumps(value, sort_keys=True)
    with pytest.raises(CaseError) as err:
        casestore._settings(value, True)
    assert str(err.value) == why


def test_settings_registry_leaves_the_question_and_unknown_keys_alone():
    assert casestore._settings({"query": 5, "zzz": [], "budget": 5}, True) == '{"budget": 5, "query": 5, "zzz": []}'


@pytest.mark.parametrize("fields, row", [
    ({"name": "a", "settings": {}, "created": 5, "tag": "duplicates", "sample": "", "trace_id": "t"},
     {"created": 5.0, "title": "", "note": "", "tag": "duplicates", "name": "a", "sample": None, "trace_id": "t",
      "settings": "{}", "query": "", "candidate": None, "search": "", "answer": "", "page": "debugger", "view": ""}),
    ({"settings": {"budget": 1}, "created": 0, "candidate": "c", "page": "diagnose", "view": "replay", "query": "q",
      "search": "s", "answer": "an", "title": "t", "note": "n", "sample": "smp"},
     {"created": 0.0, "title": "t", "note": "n", "tag": "", "name": "", "sample": "smp", "trace_id": None,
      "settings": '{"budget": 1}', "query": "q", "candidate": "c", "search": "s", "answer": "an",
      "page": "diagnose", "view": "replay"}),
])
def test_case_row_columns_exactly(fields, row):
    assert casestore.case_row(fields) == row


@pytest.mark.parametrize("fields, why", [
    ({"settings": {}, "page": "x"}, "field 'page': must be one of 'debugger', 'diagnose' (got 'x')"),
    ({"settings": {}, "view": "x"}, "field 'view': must be one of '', 'replay', 'sent' (got 'x')"),
    ({"settings": {}, "candidate": 5}, "field 'candidate': must be text (got 5)"),
    ({"settings": {}, "sample": "s" * 201}, "field 'sample': the sample is longer than 200 characters"),
    ({"settings": {}, "trace_id": "t" * 501}, "field 'trace_id': the trace_id is longer than 500 characters"),
    ({"settings": {}, "query": "q" * 20_001}, "field 'query': the query is longer than 20,000 characters"),
    ({"settings": {}, "search": "q" * 2_001}, "field 'search': the search is longer than 2,000 characters"),
    ({"settings": {}, "answer": "q" * 200_001}, "field 'answer': the answer is longer than 200,000 characters"),
    ({"settings": {}, "candidate": "q" * 1_001}, "field 'candidate': the candidate is longer than 1,000 characters"),
    ({"settings": {}, "name": "q" * 501}, "field 'name': the name is longer than 500 characters"),
    ({"settings": {}, "created": -1}, "field 'created': must be a time in seconds since 1970, between 0 (1970) and "
                                      "4,102,444,800 (2100) (got -1)"),
    ({"settings": {}, "tag": "duplicates", "title": 3}, "field 'title': must be text (got 3)"),
])
def test_case_row_names_the_field_that_breaks_a_rule(fields, why):
    with pytest.raises(CaseError) as err:
        casestore.case_row(fields)
    assert str(err.value) == why


def test_text_limits_of_every_field():
    assert TEXT_LIMITS == {"title": 200, "note": 20_000, "tag": 60, "query": 20_000, "search": 2_000,
                           "answer": 200_000, "candidate": 1_000, "name": 500, "page": 40, "trace_id": 500,
                           "sample": 200, "view": 40}


def test_optional_text_is_none_when_empty_or_missing():
    assert casestore._optional({}, "sample") is None and casestore._optional({"sample": ""}, "sample") is None
    assert casestore._optional({"sample": None}, "sample") is None
    assert casestore._optional({"sample": "s"}, "sample") == "s"
    with pytest.raises(CaseError):
        casestore._optional({"sample": 0}, "sample")


def test_choice_default_and_said_list():
    assert casestore._choice({"page": ""}, "page", ("debugger", "diagnose"), "debugger") == "debugger"
    assert casestore._choice({"tag": "old"}, "tag", ("", "old", "new"), said=("", "new")) == "old"
    with pytest.raises(CaseError) as err:
        casestore._choice({"tag": "x"}, "tag", ("", "old", "new"), said=("", "new"))
    assert str(err.value) == "field 'tag': must be one of '', 'new' (got 'x')"
    with pytest.raises(CaseError) as err:
        casestore._choice({"tag": "x"}, "tag", ("", "old"))
    assert str(err.value) == "field 'tag': must be one of '', 'old' (got 'x')"


def test_shown_cuts_a_long_repr_at_40():
    assert casestore._shown("a" * 38) == "'" + "a" * 38 + "'"          # 40 characters: whole
    assert casestore._shown("a" * 39) == "'" + "a" * 36 + "..."        # 41: cut to 37 and an ellipsis


def test_new_ids_are_twelve_url_safe_characters_and_differ():
    ids = {casestore.new_id() for _ in range(50)}
    assert len(ids) == 50 and all(len(i) == 12 and set(i) <= set(
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_") for i in ids)


def test_delete_works_on_the_folder_it_is_given_not_the_default(store, tmp_path):
    other = tmp_path / "other"
    mine = casestore.save_case(DATA, {"name": "a.json", "settings": {}, "created": 1000}, case_id="same")
    theirs = casestore.save_case(DATA, {"name": "a.json", "settings": {}, "created": 1000}, other, case_id="same")
    assert mine == theirs == "same"
    assert casestore.delete_case("same", other) is True
    assert casestore.get_case("same", other) is None and casestore.count_inputs(other) == 0
    assert casestore.get_case("same") == _case("same") and casestore.count_inputs() == 1
    assert casestore.delete_case("same", other) is False


def test_export_and_input_read_the_folder_they_are_given(store, tmp_path):
    other = tmp_path / "other"
    casestore.save_case(b"mine", {"name": "m", "settings": {}, "created": 1000}, case_id="same")
    casestore.save_case(DATA, {"name": "a.json", "settings": {}, "created": 1000, "title": "T"}, other, case_id="same")
    body = json.loads(casestore.export_case("same", other))
    assert (body["title"], body["input"]["base64"]) == ("T", base64.b64encode(DATA).decode("ascii"))
    assert casestore.case_input(casestore.get_case("same", other), other) == DATA
    with pytest.raises(CaseError) as err:
        casestore.export_case("only-there", store)
    assert str(err.value) == "there is no case 'only-there'"


def test_a_failed_delete_rolls_back_and_says_why(store):
    cid = casestore.save_case(DATA, {"name": "a.json", "settings": {}, "created": 1000})
    with casestore.connection() as conn:
        conn.execute("CREATE TRIGGER keep BEFORE DELETE ON cases BEGIN SELECT RAISE(ABORT, 'kept'); END")
    with pytest.raises(sqlite3.IntegrityError, match="^kept$"):
        casestore.delete_case(cid)
    assert casestore.get_case(cid) == _case(cid) and casestore.count_inputs() == 1
    assert casestore.save_case(b"next", {"name": "n", "settings": {}, "created": 1000}) != cid  # the store is free


def test_a_store_in_a_folder_that_does_not_exist_yet_is_made_with_its_parents(tmp_path):
    deep = tmp_path / "a" / "b" / "c"
    cid = casestore.save_case(DATA, {"name": "a.json", "settings": {}, "created": 1000}, deep, case_id="x")
    assert (deep / "cases.db").exists() and casestore.get_case(cid, deep) == _case("x")


def test_the_store_makes_every_missing_folder_above_it(tmp_path):
    deep = tmp_path / "a" / "b" / "c"
    cid = casestore.save_case(DATA, {"name": "a.json", "settings": {}, "created": 1000}, folder=deep, case_id="deep")
    assert (deep / "cases.db").is_file() and casestore.get_case(cid, deep) == _case("deep")


def test_a_bad_rows_size_that_is_no_whole_number_is_shown_as_0(store):
    odd = "1" * 64
    _raw_row(store, tag="x", sha256=odd)
    conn = sqlite3.connect(str(store / "cases.db"))
    conn.execute("INSERT INTO inputs (sha256, size, data, created) VALUES (?, ?, ?, ?)", (odd, "big", DATA, 1000))
    conn.commit()
    conn.close()
    bad = casestore.get_case("bad")
    assert (bad.size, bad.sha256, bad.problem) == (0, odd, "field 'tag': must be one of " + TAGS_SAID + " (got 'x')")


@pytest.mark.parametrize("title, text", [("Réglage CAFÉ", "café"), ("réglage café", "CAFÉ"), ("Straße", "STRASSE"),
                                         ("Refund", "REFUND")])
def test_a_search_ignores_letter_case_in_every_alphabet(store, title, text):
    casestore.save_case(DATA, {"name": "a.json", "settings": {}, "created": 1000, "title": title}, case_id="c")
    casestore.save_case(DATA, {"name": "b.json", "settings": {}, "created": 999, "title": "other"}, case_id="o")
    assert [c.id for c in casestore.list_cases(text=text)] == ["c"]


def test_a_list_holds_the_newest_thousand_unless_asked_for_more(store):
    casestore.save_case(DATA, {"name": "a.json", "settings": {}, "created": 1000}, case_id="first")
    conn = sqlite3.connect(str(store / "cases.db"))
    conn.executemany("INSERT INTO cases (id, created, title, note, tag, name, sha256, settings) VALUES "
                     "(?, ?, '', '', '', 'a.json', ?, '{}')", [(f"c{i:04d}", 2000 + i, SHA) for i in range(1000)])
    conn.commit()
    conn.close()
    listed = casestore.list_cases()
    assert (len(listed), listed[0].id, listed[-1].id) == (1000, "c0999", "c0000")
    assert len(casestore.list_cases(limit=1001)) == 1001


def test_a_case_row_holds_settings_to_the_registry_unless_told_not_to():
    with pytest.raises(CaseError) as err:
        casestore.case_row({"settings": {"budget": -5}})
    assert str(err.value) == "field 'settings.budget': must be a whole number of tokens, 0 or more (got -5)"
    assert casestore.case_row({"settings": {"budget": -5}}, registry=False)["settings"] == '{"budget": -5}'


def test_a_search_reads_past_a_bad_row_whose_title_is_not_text(store):
    _raw_row(store, title=b"Refund")
    casestore.save_case(DATA, {"name": "b.json", "settings": {}, "created": 999, "title": "refund policy"},
                        case_id="r")
    assert [c.id for c in casestore.list_cases(text="refund")] == ["r"]
