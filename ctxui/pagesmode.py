"""The one private Streamlit patch, kept here alone so a Streamlit upgrade has one place to check.

Streamlit 1.67 offers no public switch for it: a server decides "pages/ directory mode" from the folder's
existence and only ``st.navigation`` turns it off, after the first run has already taken the old path.
``tests/test_pagesmode.py`` fails when the private attribute stops behaving as assumed here.
"""

from __future__ import annotations

import streamlit as st
from streamlit import config
from streamlit.runtime.pages_manager import PagesManager


def _leave_pages_directory_mode() -> None:
    """Make sure app.py (and its st.navigation) runs, also when the first visit is a deep link.

    A fresh server treats ``pages/`` as an old-style pages directory until st.navigation has run once, so
    the first session opened on ``/compare?…`` would run that file alone (no app.py: no link reading, no
    navigation titles). Switch that mode off and rerun: app.py then runs and picks the same page.
    (AppTest resets the mode before every run and keeps the page itself; it is left alone there.)"""
    # (config.get_option, not st.get_option: AppTest patches the former only)
    if PagesManager.uses_pages_directory and not config.get_option("global.appTest"):
        PagesManager.uses_pages_directory = False
        st.rerun()
