"""The Debugger's first screen: a session's first run of the page sends the headline alone, the rest follows.

The browser draws a batch of elements together, and each kind of element it has not drawn before costs it a
script to fetch and run first: the sidebar's controls, the Open-from form, the pickers and the query box bring
a dozen kinds, the plotly charts and the data grid the most. Sent with the headline, they hold it back (on a
busy machine, for seconds). So a session's first run of the page (the headline run) sends the title, the
scenario and its headline numbers only, with empty space where the controls above them go, and stops with an
invisible component (``ctxui/paint``) that sets its value once the page shows the numbers (at most 3 s later):
a widget change, so the full run that follows (every build cached) is an ordinary rerun and draws the same
page a user who waited would see. (A fragment on a timer did this before; a click landing as its timer fired
lost widget values such as the query, a known Streamlit problem with timed fragments.) Never under AppTest,
which has no browser to draw.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st
import streamlit.components.v1 as components
from streamlit import config

from .inputs import ensure_loaded

HEADLINE_RUN = "ctx.headline_run"  # True while the current run is a headline run (cleared as every run starts)
# heights (px) of the controls a headline run leaves out, at the app's usual width, so the headline does not
# jump when they arrive: the Open-from expander, the picker and uploader row, the query row
OPEN_FROM_GAP, INPUT_GAP, QUERY_GAP = 40, 96, 68

_CONTINUE = components.declare_component("ctx_paint_continue", path=str(Path(__file__).with_name("paint")))


def start_headline_run() -> None:
    """Called as every run starts: a run is a headline run only when the page says so."""
    st.session_state[HEADLINE_RUN] = False


def headline_run() -> bool:
    """Whether this run sends the headline only (app.py then leaves out the share box and the page style)."""
    return bool(st.session_state.get(HEADLINE_RUN))


def headline_first(page: str) -> bool:
    """Whether this run is ``page``'s headline run: the session's first run of it, in a browser, with a sample or
    case that loads (the first sample when nothing is loaded, as the input section would pick) and no logged
    prompt (whose view switch sits above the headline). Asked once per session and page: a run cut short by a
    click is followed by a full one."""
    ss = st.session_state
    flag = f"ctx.painted.{page}"
    if ss.get(flag) or config.get_option("global.appTest"):
        return False
    ss[flag] = True
    loaded = ensure_loaded()
    ss[HEADLINE_RUN] = loaded is not None and not ss.get("ctx.load_error") and loaded.logged is None
    return ss[HEADLINE_RUN]


def gap(height: int) -> None:
    """Empty space standing for a control the headline run leaves out (one slot, as the control takes)."""
    st.container(height=height, border=False)


def paint_headline_first(page: str) -> None:
    """In a headline run, end it right after the headline; the browser asks for the rest once it has drawn it."""
    if not headline_run():
        return
    _CONTINUE(key=f"ctx.painted.{page}.continue", default=False)
    st.caption("Drawing the prompt map, the fates table, the prompt and the controls…")
    st.stop()
