"""#30: every page names the input its results belong to (a saved case with its title, note, cause, author scope
and date), a failed upload never passes the previous file's results off as the new one's, the Save form proposes
the page's own root cause in the page's words (one vocabulary of causes, old tags still shown), and the
Debugger's mode switch agrees with the note under it. Real AppTest runs of the app; each case in its own store."""

from __future__ import annotations

import datetime as dt
import random
from pathlib import Path

import pytest

from ctxcore.analysis.diagnosis import KINDS, ORDER
from ctxcore.analysis.vocabulary import OLD_TAGS, PLAIN, TAGS, plain, tag_kind, tags_for
from ctxui import casestore
from conftest import app, rerun  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
STALE = ROOT / "sample_data" / "04_stale_policy.json"
STALE_SHOWN = "sample scenario “A retired approval threshold outranks the current one” (04_stale_policy.json)"


@pytest.fixture(autouse=True)
def data_dir(tmp_path, monkeypatch):
    monkeypatch.setenv(casestore.DATA_DIR_ENV, str(tmp_path / "data"))


def text(value: str) -> str:
    """An element's text as the reader sees it (markdown escapes removed)."""
    return value.replace("\\", "")


def captions(at) -> list[str]:
    return [text(c.value) for c in at.caption]


def on_diagnose(sample: str = "04_stale_policy.json"):
    at = rerun(app())
    at.selectbox(key="dbg.sample").set_value(sample)
    rerun(at)
    at.switch_page("pages/diagnose.py")
    return rerun(at)


# --------------------------------------------------------------------------- one vocabulary of causes

def test_every_diagnosis_kind_has_a_plain_name_and_the_tags_are_the_kinds_then_other():
    assert TAGS == ORDER + ("other",) and set(PLAIN) == set(KINDS) | {"other"}
    assert casestore.TAGS == TAGS


@pytest.mark.parametrize("stored, kind, shown", [
    ("stale_version", "outdated_version_sent", "outdated version sent"),
    ("duplicates", "duplicates_crowd_out", "duplicates crowd out"),
    ("dropped_for_budget", "not_sent", "strongest passage not sent"),
    ("truncated_prompt", "prompt_cut_off", "prompt cut off"),
    ("not_retrieved", "nothing_relevant", "nothing relevant retrieved"),
    ("buried_in_middle", "buried_in_middle", "buried in the middle"),   # the same word then and now
    ("outdated_version_sent", "outdated_version_sent", "outdated version sent"),
    ("other", "other", "other"),
])
def test_old_and_new_tags_read_in_todays_words(stored, kind, shown):
    assert tag_kind(stored) == kind and plain(stored) == shown


def test_a_kind_is_found_under_its_old_tags_too():
    assert tags_for("not_sent") == ("not_sent", "below_threshold", "dropped_for_budget", "not_permitted")
    assert tags_for("other") == ("other",)
    assert set(OLD_TAGS.values()) <= set(TAGS)


def test_a_case_saved_with_an_old_tag_still_opens_lists_and_filters_in_the_new_words():
    old = casestore.save_case(STALE.read_bytes(), {"name": STALE.name, "sample": STALE.name, "settings": {},
                                                    "title": "Old approval limit", "tag": "stale_version"})
    at = rerun(app(case=old))
    assert any("root cause: outdated version sent" in text(i.value) for i in at.info)
    at.switch_page("pages/cases.py")
    rerun(at)
    assert list(at.dataframe[0].value["tag"]) == ["outdated version sent"]
    at.selectbox(key="cases.tag").set_value("outdated_version_sent")
    rerun(at)
    assert at.session_state["cases.shown"] == [old]
    at.selectbox(key="cases.tag").set_value("not_sent")
    rerun(at)
    assert at.session_state["cases.shown"] == []


def test_the_save_form_proposes_the_diagnosed_root_cause_in_the_pages_words():
    at = on_diagnose()
    tag = at.selectbox(key="case.tag")
    assert tag.value == "outdated_version_sent"
    assert tag.format_func(tag.value) == "outdated version sent"
    assert tag.options == ["(not decided yet)"] + [PLAIN[k] for k in TAGS]
    tag.set_value("buried_in_middle")  # the user's choice stays over reruns while the cause does not change
    rerun(at)
    assert at.selectbox(key="case.tag").value == "buried_in_middle"


def test_without_a_diagnosis_the_tag_is_not_decided():
    at = rerun(app())
    assert at.selectbox(key="case.tag").value == ""


# --------------------------------------------------------------------------- the banner

def test_every_page_of_a_sample_names_it():
    at = on_diagnose()
    assert f"Showing {STALE_SHOWN}" in captions(at)
    at.switch_page("pages/debugger.py")
    rerun(at)
    assert f"Showing {STALE_SHOWN}" in captions(at)
    at.switch_page("pages/compare.py")
    rerun(at)
    assert f"Showing {STALE_SHOWN}" in captions(at)


def test_a_logged_trace_is_named_with_its_format_and_trace():
    at = rerun(app())
    data = (ROOT / "tests" / "fixtures" / "traces" / "phoenix_nested.json").read_bytes()
    at.file_uploader(key="dbg.upload").set_value(("phoenix_nested.json", data, "application/json"))
    rerun(at)
    assert ("Showing phoenix_nested.json · format openinference · trace 9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b"
            in captions(at))


def test_a_bad_upload_names_itself_and_the_file_still_shown():
    at = on_diagnose()
    root = [text(m.value) for m in at.markdown if "older version of" in m.value]
    data = random.Random(30).randbytes(5 * 1024 * 1024)
    at.file_uploader(key="dbg.upload").set_value(("trace.json", data, "application/json"))
    at.run()
    assert not at.exception
    assert [text(w.value) for w in at.warning] == [
        f"Showing {STALE_SHOWN}; trace.json could not be read (see below), so nothing on this page comes from it."]
    assert [text(e.value) for e in at.error] == [
        "trace.json, line 1: not UTF-8 text (byte 0xda at offset 0); save the file as UTF-8"]
    assert at.session_state["ctx.loaded"].source == "04_stale_policy.json"  # nothing loaded is lost
    assert root and [text(m.value) for m in at.markdown if "older version of" in m.value] == root
    at.switch_page("pages/compare.py")  # the other pages say it too, until a file is read
    at.run()
    assert [text(w.value) for w in at.warning][0].startswith(f"Showing {STALE_SHOWN}; trace.json could not be read")
    assert [text(e.value) for e in at.error] == [
        "trace.json, line 1: not UTF-8 text (byte 0xda at offset 0); save the file as UTF-8"]


def test_a_case_link_shows_its_title_note_cause_scope_and_date_with_a_way_back():
    when = dt.datetime(2026, 3, 4, 9, 30).timestamp()
    cid = casestore.save_case(STALE.read_bytes(), {
        "name": STALE.name, "sample": STALE.name, "settings": {}, "title": "ACME: approval limit wrong",
        "note": "Customer was told 500 EUR; the current limit is 650 EUR.", "tag": "outdated_version_sent",
        "page": "diagnose", "created": when})
    at = rerun(app(case=cid))
    at.switch_page("pages/diagnose.py")
    rerun(at)
    assert [text(i.value) for i in at.info][:1] == [
        f"Saved case “ACME: approval limit wrong” ({cid}) · root cause: outdated version sent · "
        "saved 2026-03-04 09:30 · visible to anyone using this server"]
    assert "Customer was told 500 EUR; the current limit is 650 EUR." in [t.value for t in at.text]
    assert f"Input: {STALE_SHOWN}" in captions(at)
    assert [(link.proto.label, link.proto.page) for link in at.get("page_link")] == [("All saved cases", "cases")]


# --------------------------------------------------------------------------- the debugger's mode switch

def test_the_mode_switch_and_its_note_agree_on_a_reuploaded_trace():
    at = rerun(app())
    trace = at.session_state["ctx.trace"]
    at.file_uploader(key="dbg.upload").set_value(("scenario.trace.json", trace.to_json().encode(),
                                                  "application/json"))
    rerun(at)
    switch = at.radio(key="dbg.view")
    assert switch.options == ["The trace as recorded (the controls equal its settings)",
                              "As sent (the logged prompt)"]
    assert "Showing the logged trace as recorded; change a control or the query to replay it." in captions(at)
    at.text_input(key="dbg.query").set_value(trace.query + " today")
    rerun(at)
    assert at.radio(key="dbg.view").options == ["Replay (the current controls)", "As sent (the logged prompt)"]
    assert ("Replayed with the current settings (they or the query differ from the logged trace)."
            in captions(at))
