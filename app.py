"""Streamlit entry point: one navigation over the files in pages/.

Run with ``streamlit run app.py``. Every page imports :mod:`ctxui` for its
widgets and renderers; all packing decisions come from :mod:`ctxcore`.
"""

import logging
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import streamlit as st  # noqa: E402

import ctxui  # noqa: E402

st.set_page_config(page_title="Context construction debugger", page_icon=ctxui.favicon(), layout="wide")
ctxui.start_run()  # session state; on the first run, the link's scenario and settings (see ctxui.links)

PAGES = [
    st.Page("pages/debugger.py", title="Debugger", icon=":material/bug_report:", default=True),
    st.Page("pages/diagnose.py", title="Diagnose", icon=":material/troubleshoot:"),
    st.Page("pages/compare.py", title="Compare", icon=":material/compare:"),
    st.Page("pages/replay.py", title="Replay a log", icon=":material/replay:"),
    st.Page("pages/live.py", title="Live runs", icon=":material/sensors:"),
    st.Page("pages/cases.py", title="Saved cases", icon=":material/bookmarks:"),
    st.Page("pages/learn.py", title="Learn", icon=":material/school:"),
    st.Page("pages/budget.py", title="Budget calculator", icon=":material/calculate:"),
]

page = st.navigation(PAGES, position="sidebar")
share = st.sidebar.container()  # filled after the page ran, so the link shows its final settings
try:
    page.run()
except Exception as err:  # noqa: BLE001 - never a traceback on the page; the console keeps it
    logging.getLogger("ctxui").exception("page %s failed", page.title)
    st.error(ctxui.md_escape(f"Something went wrong on this page — {ctxui.one_line(err)}"),
             icon=":material/error:")
finally:  # also after st.stop(): the address bar and the share box follow every change
    ctxui.remember_input()  # the uploaded bytes, so the case can be saved from another page
    ctxui.sync_url()
    if not ctxui.headline_run():  # a headline run sends the headline alone (ctxui.firstpaint)
        ctxui.page_style()
        ctxui.share_box(share)
