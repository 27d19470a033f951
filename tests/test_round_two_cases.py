"""Issue #27, round two: the case store and the UI items. An imported or hand-written case can no longer break
Saved cases; one set of bounds (the settings registry) for Config, controls, links and import; a read-only store
is read; CSV downloads are spreadsheet-safe; uploaded replay logs are removed; Delete asks first."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

import pandas as pd
import pytest

from ctxcore.settings import MAX_TOKENS, SETTINGS
from ctxui import casestore
from ctxui.casestore import CaseError
from ctxui.controls import control_bounds
from ctxui.linkparams import LINK_BY_KEY
from ctxui.tables import spreadsheet_safe, table_csv
from conftest import app, rerun

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).resolve().parent / "fixtures"
SEED = (FIXTURES / "seed.json").read_bytes()


@pytest.fixture(autouse=True)
def data_dir(tmp_path, monkeypatch):
    folder = tmp_path / "data"
    monkeypatch.setenv(casestore.DATA_DIR_ENV, str(folder))
    return folder


def export(**changes) -> bytes:
    """An exported case (the format an export writes) with ``changes`` to its fields."""
    body = {"format": casestore.EXPORT_FORMAT, "id": "ext1", "created": 1_700_000_000.0, "title": "t", "note": "",
            "tag": "", "name": "seed.json", "sha256": hashlib.sha256(SEED).hexdigest(), "sample": None,
            "trace_id": None, "settings": {}, "query": "", "candidate": None, "search": "", "answer": "",
            "page": "debugger", "view": "",
            "input": {"name": "seed.json", "sha256": hashlib.sha256(SEED).hexdigest(), "size": len(SEED),
                      "base64": base64.b64encode(SEED).decode()}}
    body.update(changes)
    return json.dumps(body).encode()


def import_error(blob: bytes) -> str:
    with pytest.raises(CaseError) as err:
        casestore.import_case(blob)
    return str(err.value)


# --------------------------------------------------------------------------- 1. every field of an import

CREATED = "field 'created': must be a time in seconds since 1970, between 0 (1970) and 4,102,444,800 (2100) (got {})"


@pytest.mark.parametrize("changes,message", [
    ({"created": 1e300}, CREATED.format("1e+300")),
    ({"created": -1e13}, CREATED.format("-10000000000000.0")),
    ({"created": -0.5}, CREATED.format("-0.5")),
    ({"created": 4_102_444_800}, CREATED.format("4102444800")),
    ({"created": "inf"}, CREATED.format("'inf'")),
    ({"created": "2024-01-01"}, CREATED.format("'2024-01-01'")),
    ({"created": [1]}, CREATED.format("[1]")),
    ({"created": True}, CREATED.format("True")),
    ({"title": ["a"]}, "field 'title': must be text (got ['a'])"),
    ({"note": 5}, "field 'note': must be text (got 5)"),
    ({"title": "t" * 201}, "field 'title': the title is longer than 200 characters"),
    ({"tag": "nope"}, "field 'tag': must be one of '', 'instruction_followed', 'unsupported_answer', "
                      "'nothing_relevant', 'outdated_version_sent', 'conflicting_sources', 'reranker_cut', "
                      "'history_crowding', 'prompt_over_window', 'prompt_cut_off', 'duplicates_crowd_out', "
                      "'paraphrased_duplicates', 'threshold_cut', 'per_document_cap', 'buried_in_middle', "
                      "'fragmented_document', 'not_sent', 'instruction_in_content', 'other' (got 'nope')"),
    ({"page": "admin"}, "field 'page': must be one of 'debugger', 'diagnose' (got 'admin')"),
    ({"view": "html"}, "field 'view': must be one of '', 'replay', 'sent' (got 'html')"),
    ({"settings": "x"}, "field 'settings': must be an object (got 'x')"),
    ({"settings": {"a": {"b": 1}}}, "field 'settings.a': must be a number, text, true/false, null or a list of "
                                    "at most 100 words (got {'b': 1})"),
    ({"settings": {"a": "x" * 30_000_000}}, "field 'settings.a': is longer than 20,000 characters"),
    ({"settings": {f"k{i}": 1 for i in range(101)}}, "field 'settings': has 101 keys; a case's settings have at "
                                                     "most 100"),
    ({"settings": {"safety": 1.0}}, "field 'settings.safety': must be a fraction from 0 up to (not including) 1 "
                                    "(got 1.0)"),
    ({"settings": {"safety": -0.01}}, "field 'settings.safety': must be a fraction from 0 up to (not including) "
                                      "1 (got -0.01)"),
    ({"settings": {"window": 0}}, "field 'settings.window': must be a whole number of tokens, 1 or more (got 0)"),
    ({"settings": {"window": 100, "max_output": 200}}, "field 'settings.window': must be larger than max_output "
                                                       "(got 100)"),
    ({"settings": {"budget_on": "yes"}}, "field 'settings.budget_on': must be true or false (got 'yes')"),
    ({"settings": {"tokenizer": "gpt-99"}}, "field 'settings.tokenizer': must be an encoding (cl100k_base, "
                                            "o200k_base) or a known model name (got 'gpt-99')"),
])
def test_an_import_is_held_to_the_rules_of_a_saved_case(changes, message):
    assert import_error(export(**changes)) == message
    assert casestore.list_cases() == []  # nothing half-stored


def test_an_import_nested_too_deeply_is_refused_in_words():
    blob = export(settings="DEEP").replace(b'"DEEP"', b"[" * 100_000 + b"]" * 100_000)
    assert import_error(blob) == "not an exported case: its JSON is nested too deeply to read"


@pytest.mark.parametrize("changes,created,safety", [
    ({"created": 0}, 0.0, None),
    ({"created": 4_102_444_799.5}, 4_102_444_799.5, None),
    ({"settings": {"safety": 0.95}}, 1_700_000_000.0, 0.95),
    ({"settings": {"safety": 0.995}}, 1_700_000_000.0, 0.995),
    ({"settings": {"safety": 0}}, 1_700_000_000.0, 0),
])
def test_an_import_inside_the_rules_is_stored_as_it_is(changes, created, safety):
    case = casestore.get_case(casestore.import_case(export(**changes)))
    assert case.created == created and case.settings.get("safety") == safety and case.problem == ""


def _bad_row(folder: Path, case_id: str = "bad1", created=1e300, settings="{}", title="broken") -> None:
    """A row written straight into the store, past every check (by hand, or by an older version)."""
    casestore.list_cases()  # create the store
    conn = sqlite3.connect(folder / casestore.DB_NAME)
    conn.execute("INSERT OR IGNORE INTO inputs VALUES ('abc', 1, x'41', 0)")
    conn.execute("INSERT INTO cases (id, created, title, name, sha256, settings) VALUES (?, ?, ?, 'a.json', 'abc', ?)",
                 (case_id, created, title, settings))
    conn.commit()
    conn.close()


@pytest.mark.parametrize("created,settings,title,problem", [
    (1e300, "{}", "broken", CREATED.format("1e+300")),
    (-1e13, "{}", "broken", CREATED.format("-10000000000000.0")),
    ("inf", "{}", "broken", CREATED.format("'inf'")),
    (1_700_000_000, "not json", "broken", "field 'settings': must be an object (got None)"),
    (1_700_000_000, "[" * 5000 + "]" * 5000, "broken", "field 'settings': must be an object (got None)"),
    (1_700_000_000, "{}", b"\xff", "field 'title': must be text (got b'\\xff')"),  # TEXT affinity keeps a blob
])
def test_a_bad_stored_row_is_listed_with_its_problem_beside_the_others(data_dir, created, settings, title, problem):
    good = casestore.save_case(SEED, {"name": "seed.json", "settings": {}, "title": "fine"})
    _bad_row(data_dir, created=created, settings=settings, title=title)
    cases = {c.id: c for c in casestore.list_cases()}
    assert set(cases) == {good, "bad1"}
    assert cases["bad1"].problem == problem and cases[good].problem == ""
    frame = __import__("ctxui").cases_frame(list(cases.values()))
    assert frame.set_index("id").loc["bad1", "problem"] == problem
    assert pd.isna(frame.set_index("id").loc["bad1", "saved"]) or created == 1_700_000_000


def test_saved_cases_page_shows_a_bad_row_and_keeps_the_table_delete_and_import(data_dir):
    good = casestore.save_case(SEED, {"name": "seed.json", "settings": {}, "title": "fine"})
    _bad_row(data_dir)
    at = rerun(app())
    at.switch_page("pages/cases.py")
    rerun(at)
    assert at.session_state["cases.shown"] == ["bad1", good]  # 1e300 sorts first
    table = at.dataframe[0].value
    assert list(table["title"]) == ["broken", "fine"]
    assert list(table["problem"]) == [CREATED.format("1e+300"), ""]
    assert at.file_uploader(key="cases.import") is not None
    # the bad row can be picked, is named as such, and deleted (after the confirmation)
    at.session_state["cases.table"] = {"selection": {"rows": [0], "columns": []}}
    rerun(at)
    assert any("cannot be opened" in w.value for w in at.warning)
    at.button(key="cases.delete").click()
    rerun(at)
    at.button(key="cases.delete_yes").click()
    rerun(at)
    assert at.session_state["cases.shown"] == [good]


def test_importing_a_bad_case_in_the_app_names_the_file_and_field_and_keeps_the_page():
    at = rerun(app())
    at.switch_page("pages/cases.py")
    rerun(at)
    at.file_uploader(key="cases.import").set_value(("evil.case.json", export(created=1e300), "application/json"))
    at.run()
    assert not at.exception
    assert [e.value.replace("\\", "") for e in at.error] == [
        "evil.case.json: not imported — " + CREATED.format("1e+300")]
    assert at.session_state["cases.shown"] == [] and at.file_uploader(key="cases.import") is not None


def test_the_link_of_a_bad_stored_case_warns_and_the_debugger_still_runs(data_dir):
    _bad_row(data_dir)
    at = rerun(app(case="bad1"))
    warning = " ".join(w.value.replace("\\", "") for w in at.warning)
    assert "case='bad1' could not be opened: it breaks the rules of a saved case (field 'created'" in warning
    assert at.session_state["ctx.trace"] is not None  # the Debugger shows its default input


# --------------------------------------------------------------------------- 2. one set of bounds

# written by hand from the registry (ctxcore/settings.py): an open end moves in by one step; counts end at MAX_TOKENS
CONTROL_RANGES = {
    "window": (1, MAX_TOKENS), "max_output": (0, MAX_TOKENS), "safety": (0.0, 0.99), "history_share": (0.0, 1.0),
    "budget": (0, MAX_TOKENS), "min_score": (None, None), "near_dup": (0.01, 1.0), "mmr_lambda": (0.0, 1.0),
    "max_passages": (1, MAX_TOKENS), "label_overhead": (0, MAX_TOKENS), "max_chunk_tokens": (1, MAX_TOKENS),
}
NUMERIC = [s for s in SETTINGS if s.kind in ("int", "float", "share", "overhead")]


def test_every_numeric_setting_has_its_range_written_here():
    assert sorted(s.name for s in NUMERIC) == sorted(CONTROL_RANGES)


@pytest.mark.parametrize("name", sorted(CONTROL_RANGES))
def test_each_control_range_is_the_registry_bounds(name):
    lo, hi = CONTROL_RANGES[name]
    assert control_bounds(name) == {k: v for k, v in (("min_value", lo), ("max_value", hi)) if v is not None}
    s = next(s for s in SETTINGS if s.name == name)
    for value in (lo, hi):  # both ends of the control are values Config accepts
        if value is not None:
            assert s.problem(value) is None


def test_the_rendered_controls_have_the_registry_ranges():
    at = rerun(app())
    got = {}
    for w in list(at.slider) + list(at.number_input):
        field = w.key.split(".", 1)[1] if w.key and w.key.startswith("dbg.") else None
        if field in CONTROL_RANGES:
            p = w.proto
            got[field] = (p.min if (not hasattr(p, "has_min") or p.has_min) else None,
                          p.max if (not hasattr(p, "has_max") or p.has_max) else None)
    assert got == {k: v for k, v in CONTROL_RANGES.items()}


@pytest.mark.parametrize("key,text,ok", [
    ("safety", "0.95", True), ("safety", "0.999", True), ("safety", "1", False), ("safety", "-0.01", False),
    ("nd", "0", False), ("nd", "0.001", True), ("nd", "1", True), ("lam", "1", True), ("lam", "1.01", False),
    ("win", "0", False), ("win", "1", True), ("win", str(MAX_TOKENS), True), ("win", str(MAX_TOKENS + 1), False),
])
def test_link_values_follow_the_registry(key, text, ok):
    p = LINK_BY_KEY[key]
    if ok:
        p.decode(text)
    else:
        with pytest.raises(ValueError):
            p.decode(text)


def test_a_link_with_safety_095_opens_with_it():
    at = rerun(app(scenario="01_duplicates_crowd_out", safety="0.95", win="100000"))
    assert at.slider(key="dbg.safety").value == pytest.approx(0.95)
    assert at.session_state["ctx.trace"].config.safety == 0.95
    assert not [w.value for w in at.warning if "safety" in w.value]


def test_a_link_past_the_slider_step_is_clamped_with_a_note():
    at = rerun(app(scenario="01_duplicates_crowd_out", safety="0.995", win="100000"))
    assert at.slider(key="dbg.safety").value == pytest.approx(0.99)
    assert any("safety 0.995 is outside the control's range (0 to 0.99); using 0.99" in i.value.replace("\\", "")
               for i in at.info)


@pytest.mark.parametrize("safety,shown,note", [(0.95, 0.95, None), (0.995, 0.99, "using 0.99")])
def test_a_case_with_a_high_safety_opens(safety, shown, note):
    cid = casestore.import_case(export(settings={"safety": safety, "window": 100_000,
                                                 "query": "how long do refunds take"}))
    at = rerun(app(case=cid))
    assert at.slider(key="dbg.safety").value == pytest.approx(shown)
    notes = [i.value.replace("\\", "") for i in at.info if "outside the control" in i.value]
    assert (note is None and not notes) or (len(notes) == 1 and note in notes[0])


# --------------------------------------------------------------------------- 3. a read-only store

READ_ONLY_CHECK = """
import sys
from pathlib import Path
from ctxui import casestore
folder = Path(sys.argv[1])
print([c.title for c in casestore.list_cases(folder)])
print(casestore.read_only_reason(folder))
try:
    casestore.save_case(b"x", {"name": "a", "settings": {}}, folder)
except casestore.CaseError as err:
    print("refused:", err)
"""


def _as_nobody() -> list[str]:
    """Run as an unprivileged user: root writes through any chmod, so a read-only folder needs another user."""
    if os.geteuid() != 0:
        return []
    if shutil.which("setpriv") is None:
        pytest.skip("running as root without setpriv: a read-only folder cannot be made here")
    return ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]


def test_a_read_only_store_is_read_and_saving_says_it_is_unavailable():
    top = Path(tempfile.mkdtemp(prefix="ctxcore-ro-"))  # not under pytest's tmp (0700 when run as root)
    folder = top / "ro"
    casestore.save_case(SEED, {"name": "seed.json", "settings": {}, "title": "kept"}, folder)
    os.chmod(top, 0o755)
    os.chmod(folder, 0o555)
    os.chmod(folder / casestore.DB_NAME, 0o444)
    try:
        proc = subprocess.run([*_as_nobody(), sys.executable, "-c", READ_ONLY_CHECK, str(folder)], cwd=ROOT,
                              capture_output=True, text=True, timeout=120, env={**os.environ, "HOME": str(top)})
    finally:
        os.chmod(folder, 0o755)
        shutil.rmtree(top)
    path = folder / casestore.DB_NAME
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.splitlines() == [
        "['kept']", f"the store {path} is read-only for this server: saving is unavailable",
        f"refused: the store {path} is read-only for this server: saving is unavailable"]


def test_writable_is_the_check_that_picks_read_only(tmp_path):
    assert casestore.writable(tmp_path / "new" / "deeper" / "cases.db")  # created on first use
    assert casestore.read_only_reason(tmp_path) is None


# --------------------------------------------------------------------------- 4. CSV downloads

@pytest.mark.parametrize("cell,written", [
    ("=HYPERLINK(\"http://x\")", "'=HYPERLINK(\"http://x\")"), ("+1+cmd", "'+1+cmd"), ("-2+3", "'-2+3"),
    ("@SUM(A1)", "'@SUM(A1)"), ("\tx", "'\tx"), ("\rx", "'\rx"), ("-", "'-"),
    ("-3", "-3"), ("+4", "+4"), ("-2.5e3", "-2.5e3"), (".5", ".5"), ("refunds = 5 days", "refunds = 5 days"),
    ("", ""), (-3, -3), (2.5, 2.5), (None, None),
])
def test_a_cell_a_spreadsheet_would_run_gets_a_quote(cell, written):
    assert spreadsheet_safe(cell) == written


def test_a_table_downloads_as_safe_csv():
    frame = pd.DataFrame({"id": ["=1+1", "a"], "score": [-3, 0.5], "=col": ["@x", "-3"]})
    assert table_csv(frame) == ("\ufeffid,score,'=col\r\n'=1+1,-3.0,'@x\r\na,0.5,-3\r\n").encode("utf-8")


def test_the_tables_own_export_is_off_and_the_debugger_table_has_the_safe_one():
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert config["client"]["disableDataExport"] is True
    at = rerun(app())
    assert "dbg.table.csv" in [b.proto.id.rsplit("-", 1)[-1] for b in at.get("download_button")]


# --------------------------------------------------------------------------- 5. uploaded replay logs

def test_an_uploaded_log_is_removed_when_its_replay_ends(tmp_path, monkeypatch):
    from ctxui import replay as rp
    folder = tmp_path / "uploads"
    monkeypatch.setattr(rp, "_UPLOADS", str(folder))
    log = (ROOT / "sample_data" / "replay_log.jsonl").read_bytes()
    at = rerun(app())
    at.switch_page("pages/replay.py")
    rerun(at)
    at.radio(key="rp.source").set_value("Upload a log")
    rerun(at)
    at.file_uploader(key="rp.upload").set_value(("log.jsonl", log, "application/x-ndjson"))
    rerun(at)
    assert not folder.exists() or not any(folder.rglob("*"))
    at.button(key="rp.run").click()
    rerun(at)
    assert [m.value for m in at.metric if m.label == "Runs replayed"] == ["30"]
    assert folder.exists() and not any(folder.rglob("*"))  # the run's own folder is gone too
    at.button(key="rp.debugger").click()  # opening a run reads the log again, and removes it again
    rerun(at)
    assert at.session_state["ctx.trace"] is not None and not any(folder.rglob("*"))


def test_stale_upload_folders_are_swept_after_an_hour(tmp_path):
    from ctxui import replay as rp
    now = 1_000_000.0
    for name, age in (("run-old", 3601), ("run-hour", 3600), ("run-new", 5)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "log.jsonl").write_text("{}")
        os.utime(tmp_path / name, (now - age, now - age))
    (tmp_path / "stray.jsonl").write_text("{}")
    os.utime(tmp_path / "stray.jsonl", (now - 7200, now - 7200))
    assert rp.sweep_uploads(str(tmp_path), now) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run-hour", "run-new"]


# --------------------------------------------------------------------------- 6. delete asks first

def test_delete_needs_a_second_named_click():
    one = casestore.save_case(SEED, {"name": "seed.json", "settings": {}, "title": "first"})
    time.sleep(0.01)
    two = casestore.save_case(SEED, {"name": "seed.json", "settings": {}, "title": "second"})
    at = rerun(app())
    at.switch_page("pages/cases.py")
    rerun(at)
    at.session_state["cases.table"] = {"selection": {"rows": [0], "columns": []}}
    rerun(at)
    at.button(key="cases.delete").click()
    rerun(at)
    assert at.session_state["cases.shown"] == [two, one]  # one click deleted nothing
    assert at.button(key="cases.delete_yes").label.replace("\\", "") == "Yes, delete “second”"
    at.button(key="cases.delete_no").click()
    rerun(at)
    assert at.session_state["cases.shown"] == [two, one]
    at.button(key="cases.delete").click()
    rerun(at)
    at.button(key="cases.delete_yes").click()
    rerun(at)
    assert at.session_state["cases.shown"] == [one] and casestore.get_case(two) is None
