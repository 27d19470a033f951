"""A sample scenario's own block (title, story, naive settings): its header, its story and its settings buttons."""

from __future__ import annotations

from typing import Optional

import streamlit as st

from ctxcore import Config, InputError, Loaded

from .settings import DEFAULTS
from .state import apply_config, current_config
from .text import md_escape


def _scenario(loaded: Loaded) -> dict:
    scen = loaded.extra.get("scenario")
    return scen if isinstance(scen, dict) else {}


def _text(value) -> Optional[str]:
    return value if isinstance(value, str) and value.strip() else None


def scenario_header(loaded: Loaded) -> None:
    """The scenario's title (or the file name) and what is being shown."""
    title = _text(_scenario(loaded).get("title"))
    st.subheader(md_escape(title or loaded.source), anchor=False)
    st.caption(md_escape(f"{loaded.source} · {len(loaded.candidates)} candidates · {loaded.format.upper()}"
                         + (" (a saved trace)" if loaded.trace is not None else "")))


def scenario_story(loaded: Loaded) -> None:
    """What goes wrong and what fixes it, side by side, when the file tells."""
    scen = _scenario(loaded)
    wrong, fix = _text(scen.get("what_goes_wrong")), _text(scen.get("what_fixes_it"))
    if not (wrong or fix):
        return
    cols = st.columns(2) if wrong and fix else [st.container()]
    if wrong:
        cols[0].warning("**What goes wrong:** " + md_escape(wrong), icon=":material/report:")
    if fix:
        cols[-1].success("**What fixes it:** " + md_escape(fix), icon=":material/build:")


def settings_buttons(loaded: Loaded) -> None:
    """One click to the file's own settings or to its naive settings (the failure)."""
    naive = _scenario(loaded).get("naive_config")
    if not (loaded.config or isinstance(naive, dict)):
        return
    mode = _settings_mode(loaded, naive)
    with st.container(horizontal=True, vertical_alignment="center", gap="small"):
        st.button("The fix: file's settings" if isinstance(naive, dict) else "File's settings",
                  on_click=apply_config, args=(loaded.settings().to_dict(), loaded.source),
                  help="Set every control to the settings this file carries.", key="dbg.apply_file",
                  type="primary" if mode == "file" else "secondary")
        if isinstance(naive, dict):
            st.button("The failure: naive settings", on_click=apply_config, args=(naive, loaded.source),
                      help="Set the controls to the scenario's naive settings, which show what goes wrong.",
                      key="dbg.apply_naive", type="primary" if mode == "naive" else "secondary")
    st.caption({"file": "Showing the file's own settings" + (" (the fix)." if isinstance(naive, dict) else "."),
                "naive": "Showing the naive settings: this is the failure.",
                "custom": "Showing custom settings."}[mode])


def _settings_mode(loaded: Loaded, naive) -> str:
    try:
        now = current_config()
        if now == loaded.settings():
            return "file"
        if isinstance(naive, dict) and now == Config.from_dict({**DEFAULTS, **naive}):
            return "naive"
    except InputError:
        pass
    return "custom"


def scenario_info(loaded: Loaded) -> dict:
    """The scenario block of a sample file (title, what_goes_wrong, what_fixes_it, naive_config, expect)."""
    return _scenario(loaded)
