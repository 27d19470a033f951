"""The line at the top of every page that shows a loaded input: what it is (a saved case, a sample scenario or
an uploaded file, its format and run), and, after an upload that could not be read, that the results below are
still the previous input's.

A support engineer reads this first: a root cause, a fates table or a prompt map means nothing until it is clear
which file it belongs to.
"""

from __future__ import annotations

from typing import Optional

import streamlit as st

from ctxcore import Loaded
from ctxcore.analysis import vocabulary

from .cases import saved_at
from .scenario import _scenario, _text
from .text import md_escape

FAILED = "ctx.load_failed"  # the name of the latest upload that could not be read (None once one is read)
AUDIENCE = "anyone using this server"


def run_words(loaded: Loaded) -> str:
    """Which run of a logged file is shown: "run 2 of 5 (trace 9e8d…)", or "" for a file of one run."""
    logged = loaded.logged
    if logged is None or not logged.trace_id:
        return ""
    ids = [r.get("id") for r in logged.runs]
    if len(ids) < 2:
        return f"trace {logged.trace_id}"
    n = ids.index(logged.trace_id) + 1 if logged.trace_id in ids else "?"
    return f"run {n} of {len(ids)} (trace {logged.trace_id})"


def input_words(loaded: Loaded, sample: Optional[str]) -> str:
    """The shown input in a few words: a sample's title and file, or an upload's file, format and run."""
    if sample:
        title = _text(_scenario(loaded).get("title"))
        return f"sample scenario “{title}” ({loaded.source})" if title else f"sample scenario {loaded.source}"
    saved = " (a saved trace)" if loaded.trace is not None else ""
    parts = [f"{loaded.source}{saved}", f"format {loaded.format}", run_words(loaded)]
    return " · ".join(p for p in parts if p)


def opened_case(key: Optional[str]):
    """The saved case whose input is shown, or None."""
    ss = st.session_state
    current, case = ss.get("ctx.case"), ss.get("case.opened")
    if not current or current.get("key") != key or case is None or case.id != current.get("id"):
        return None
    return case


def case_words(case) -> str:
    """A saved case's head line: its title, cause, when it was saved and who can open it."""
    saved = saved_at(case.created)
    when = saved.strftime("%Y-%m-%d %H:%M") if saved is not None else "at an unknown time"
    tag = f" · root cause: {vocabulary.plain(case.tag)}" if case.tag else ""
    return f"Saved case “{case.title}” ({case.id}){tag} · saved {when} · visible to {AUDIENCE}"


def failed_words(shown: str, bad: Optional[str]) -> str:
    """The line above a load's error: what is still shown, and that nothing on the page comes from the file that
    could not be read (the error itself, below it, is the CLI's one line naming the file, line and field)."""
    if not bad:
        return f"Still showing {shown}: the input was not changed."
    return f"Showing {shown}; {bad} could not be read (see below), so nothing on this page comes from it."


def input_banner() -> None:
    """Name the input every result on the page belongs to (call it right after the input is loaded)."""
    ss = st.session_state
    loaded = ss.get("ctx.loaded")
    if loaded is None:
        return
    shown = input_words(loaded, ss.get("ctx.sample"))
    case = opened_case(ss.get("ctx.key"))
    error, bad = ss.get("ctx.load_error"), ss.get(FAILED)
    if error:
        st.warning(md_escape(failed_words(shown, bad)), icon=":material/history:")
        st.error(md_escape(error), icon=":material/error:")
    if case is not None:
        st.info(md_escape(case_words(case)), icon=":material/bookmark:")
        if case.note:
            st.text(case.note)  # the note is the user's text: shown as text, never as markdown
        with st.container(horizontal=True, vertical_alignment="center", gap="medium"):
            st.caption(md_escape(f"Input: {shown}"))
            st.page_link("pages/cases.py", label="All saved cases", icon=":material/bookmarks:")
        return
    if not error:
        st.caption(md_escape(f"Showing {shown}"))
