"""Saved cases in the app: "Save this case", reopening one (``?case=ID``), the list's frame, export and import.

The store is :mod:`ctxui.casestore`; this module moves a case between it and the session. A case open in the
session is ``ctx.case`` = {id, key, controls}; the link writer (``state.link_params``) then writes ``case=ID`` and
only the settings changed since the case was opened.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Optional
from urllib.parse import urlsplit, urlunsplit

import pandas as pd
import streamlit as st

from ctxcore import Config, InputError, Loaded
from ctxcore.analysis import vocabulary

from . import casestore
from .casestore import CaseError
from .diagnosis import _RESULTS
from .inputs import _use
from .loading import _load_trace, content_key, load_bytes, sample_path
from .settings import clamp_controls, config_from_controls
from .state import apply_controls, current_config, store, sync_url
from .text import md_escape, one_line

INPUT_KEY = "ctx.input_bytes"   # (loaded key, file name, bytes) of the current input, for saving
PAGE_PATHS = {"debugger": "", "diagnose": "diagnose"}


def remember_input() -> None:
    """Called by app.py on every run: keep the bytes of the uploaded input (the uploader forgets them on
    another page), so the case can be saved from any page."""
    ss = st.session_state
    upload = ss.get("dbg.upload")
    if upload is None or upload.file_id != ss.get("ctx.upload_id") or ss.get("ctx.sample"):
        return
    held = ss.get(INPUT_KEY)
    if held is None or held[0] != ss.get("ctx.key"):
        ss[INPUT_KEY] = (ss.get("ctx.key"), upload.name, upload.getvalue())


def current_input() -> Optional[tuple[str, bytes]]:
    """(file name, bytes) of the current input: the sample file, the upload, or the opened case's input."""
    ss = st.session_state
    sample = ss.get("ctx.sample")
    if sample:
        path = sample_path(sample)
        return (path.name, path.read_bytes()) if path is not None else None
    held = ss.get(INPUT_KEY)
    if held is not None and held[0] == ss.get("ctx.key"):
        return held[1], held[2]
    return None


def answer_key(key: Optional[str]) -> str:
    """The Diagnose page's answer box for this input (its key follows the input)."""
    return f"dx.answer.{(key or '')[:16]}"


def case_fields(loaded: Loaded, page: str) -> dict:
    """What a saved case holds besides its input: the settings and the view of the session now."""
    ss = st.session_state
    logged = loaded.logged
    s = store()
    return {
        "name": loaded.source, "sample": ss.get("ctx.sample"), "settings": dict(s), "query": s.get("query", ""),
        "trace_id": logged.trace_id if logged is not None and len(logged.traces) > 1 else None,
        "candidate": ss.get("dbg.detail"), "search": ss.get("dx.find") or "",
        "answer": ss.get(answer_key(ss.get("ctx.key"))) or "", "page": page, "view": ss.get("dbg.view") or "",
    }


# the app's page paths: Streamlit names each page of app.py's navigation after its file in pages/
APP_PAGES = tuple(sorted(p.stem for p in (Path(__file__).resolve().parents[1] / "pages").glob("*.py")))


def case_url(current: str, case_id: str, page: str = "debugger") -> str:
    """The permalink of a case, made from the address of the page the user is on (which ends in that page's
    path, after any base path the server is run under).

    >>> case_url("http://host:8501/diagnose", "abc", "diagnose")
    'http://host:8501/diagnose?case=abc'
    >>> case_url("https://x.org/tools/ctx/cases", "abc", "debugger")
    'https://x.org/tools/ctx/?case=abc'
    >>> case_url("http://host:8501/", "abc", "diagnose")
    'http://host:8501/diagnose?case=abc'
    """
    parts = urlsplit(current)
    segments = parts.path.rstrip("/").split("/")
    if segments[-1] in APP_PAGES:
        segments = segments[:-1]
    path = "/".join(segments) + "/" + PAGE_PATHS.get(page, "")
    return urlunsplit((parts.scheme, parts.netloc, path, f"case={case_id}", ""))


def case_link(case_id: str, page: str = "debugger") -> str:
    """The permalink of a case on this server (relative when the app's address is unknown)."""
    try:
        base = st.context.url
    except Exception:  # noqa: BLE001
        base = None
    if base:
        return case_url(base, case_id, page)
    return f"/{PAGE_PATHS.get(page, '')}?case={case_id}"


def save_case_box(loaded: Loaded, page: str = "debugger") -> None:
    """The "Save this case" panel: title, note, root-cause tag; stores the input and this view."""
    ss = st.session_state
    remember_input()
    # keyed and tracked, so it stays open over the reruns that typing a title causes, even when elements above
    # it come and go (a progress bar on Diagnose)
    with st.expander("Save this case", icon=":material/bookmark_add:", expanded=bool(ss.get("case.saved")),
                     key=f"case.box.{page}", on_change="rerun"):
        held = current_input()
        read_only = casestore.read_only_reason()
        if read_only:
            st.caption(md_escape(f"Saving is unavailable: {read_only}."))
            return
        if held is None:
            st.caption("The input's bytes are not in this session any more (upload the file again to save it).")
            return
        st.text_input("Title", key="case.title", placeholder=loaded.source, max_chars=casestore.TEXT_LIMITS["title"])
        st.text_input("Note", key="case.note", placeholder="What the customer saw, what you found",
                      max_chars=casestore.TEXT_LIMITS["note"])
        propose_tag()
        st.selectbox("Root cause", ("",) + casestore.TAGS, key="case.tag", format_func=tag_label,
                     help="The causes the Diagnose page names; proposed from its root cause for this input "
                          "and these settings, when it has diagnosed them.")
        if st.button("Save this case", key="case.save", icon=":material/save:", type="primary"):
            fields = {**case_fields(loaded, page), "title": ss.get("case.title") or loaded.source,
                      "note": ss.get("case.note") or "", "tag": ss.get("case.tag") or ""}
            try:
                case_id = casestore.save_case(held[1], fields)
            except (CaseError, OSError, casestore.sqlite3.Error) as err:
                st.error(md_escape(f"The case was not saved: {err}"), icon=":material/error:")
                return
            ss["case.saved"] = case_id
            ss["ctx.case"] = {"id": case_id, "key": ss.get("ctx.key"), "controls": dict(store())}
            sync_url()
        saved = ss.get("case.saved")
        if saved:
            st.success("Saved. Anyone using this server opens exactly this view with:", icon=":material/check:")
            st.code(case_link(saved, page), language=None, wrap_lines=True)


def tag_label(tag: str) -> str:
    """A root-cause tag in the Diagnose page's words (an old tag in the words of the kind it maps to)."""
    return vocabulary.plain(tag) if tag else "(not decided yet)"


def diagnosed_kind() -> str:
    """The kind of the root cause the Diagnose page found for the current input, settings and question in this
    session ("" when it has not diagnosed them, or found no cause)."""
    ss = st.session_state
    try:
        config_json = json.dumps(current_config().to_dict(), sort_keys=True)
    except InputError:
        return ""
    found = [dx for wanted, dx in (ss.get(_RESULTS) or {}).items()
             if wanted[:3] == (ss.get("ctx.key"), config_json, store().get("query", ""))]
    root = found[-1].root if found else None
    return root.kind if root is not None and root.kind in casestore.TAGS else ""


def propose_tag() -> None:
    """Set the Save form's tag to the page's root cause whenever that cause changes; a tag the user picked
    stays while it does not."""
    ss = st.session_state
    kind = diagnosed_kind()
    if ss.get("case.tag_proposed") != (ss.get("ctx.key"), kind) or "case.tag" not in ss:
        ss["case.tag_proposed"] = (ss.get("ctx.key"), kind)
        ss["case.tag"] = kind


def _loaded_for(case: casestore.Case, data: bytes) -> tuple[str, Loaded]:
    if case.trace_id:
        return content_key(f"{case.name}#{case.trace_id}", data), _load_trace(case.name, data, case.trace_id)
    return load_bytes(case.name, data)


def open_case(case_id: str) -> list[str]:
    """Make a saved case the session's input and view; the problems (for ``link_warning``), empty when none."""
    ss = st.session_state
    try:
        case = casestore.get_case(case_id)
        if case is None:
            return [f"case={case_id!r} is not a saved case on this server"]
        if case.problem:
            return [f"case={case_id!r} could not be opened: it breaks the rules of a saved case ({case.problem})"]
        data = casestore.case_input(case)
        key, loaded = _loaded_for(case, data)
    except (CaseError, InputError, OSError, casestore.sqlite3.Error) as err:
        return [f"case={case_id!r} could not be opened ({one_line(err)})"]
    path = sample_path(case.sample) if case.sample else None
    same_sample = path is not None and path.read_bytes() == data
    _use(key, loaded, sample=path.name if same_sample else None)
    if same_sample:
        ss["dbg.sample"] = path.name
    else:
        ss["dbg.sample"] = None
        ss[INPUT_KEY] = (key, case.name, data)
    problems = []
    controls = {k: v for k, v in case.settings.items() if k in store()}
    try:
        Config.from_dict(config_from_controls({**store(), **controls}))
    except (InputError, KeyError, TypeError, ValueError) as err:
        problems.append(f"case={case_id!r}: its settings no longer make a valid configuration ({err}); "
                        "the file's settings are shown")
        controls = {"query": case.query}
    controls, notes = clamp_controls(controls)
    apply_controls({**controls, "query": case.query})
    ss["ctx.notes"] = list(ss.get("ctx.notes") or ()) + [f"Saved case {case.id}: {n}." for n in notes]
    if case.candidate:
        ss["dbg.detail"] = case.candidate
    ss["dx.find"] = case.search
    if case.answer:
        ss[answer_key(key)] = case.answer
    if case.view:
        ss["dbg.view"] = case.view
    ss["ctx.case"] = {"id": case.id, "key": key, "controls": dict(store())}
    ss["case.opened"] = case
    sync_url()
    return problems


def open_case_page(case_id: str) -> None:
    """Open a case and go to the page it was saved from."""
    problems = open_case(case_id)
    if problems:
        st.session_state["case.problems"] = problems
        return
    case = st.session_state.get("case.opened")
    st.switch_page("pages/diagnose.py" if case is not None and case.page == "diagnose" else "pages/debugger.py")


def saved_at(created: float) -> Optional[dt.datetime]:
    """A case's save time in local time; None for a number no clock shows (a stored row can hold any)."""
    try:
        return dt.datetime.fromtimestamp(created)
    except (OverflowError, OSError, ValueError, TypeError):
        return None


CASE_COLUMNS = ["title", "tag", "saved", "input", "question", "note", "page", "id", "size", "problem"]


def cases_frame(cases: list) -> pd.DataFrame:
    """The Saved cases table: one row per case, blanks (not None) where a case has no value; a row that breaks
    the rules of a saved case names its problem (the column is there only when one does)."""
    rows = [{"title": c.title, "tag": vocabulary.plain(c.tag) if c.tag else "", "saved": saved_at(c.created),
             "input": c.name, "question": c.query, "note": c.note, "page": c.page, "id": c.id,
             "size": f"{c.size / 1024:,.1f} KB", "problem": c.problem} for c in cases]
    frame = pd.DataFrame(rows, columns=CASE_COLUMNS)
    frame["saved"] = pd.to_datetime(frame["saved"])
    return frame if any(c.problem for c in cases) else frame.drop(columns="problem")


def import_upload(upload) -> Optional[str]:
    """Store an uploaded export; the new case's id, or None after showing why not."""
    try:
        return casestore.import_case(upload.getvalue())
    except (CaseError, OSError, casestore.sqlite3.Error) as err:
        st.error(md_escape(f"{upload.name}: not imported — {err}"), icon=":material/error:")
        return None


def date_bounds(days: tuple) -> tuple[Optional[float], Optional[float]]:
    """A (from, to) pair of dates from st.date_input as [since, until) timestamps in local time."""
    since = until = None
    if len(days) >= 1 and days[0]:
        since = dt.datetime.combine(days[0], dt.time()).timestamp()
    if len(days) >= 2 and days[1]:
        until = dt.datetime.combine(days[1] + dt.timedelta(days=1), dt.time()).timestamp()
    return since, until
