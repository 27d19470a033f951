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
    """The scenario's title (or the file name), what is being shown, and where its settings came from."""
    title = _text(_scenario(loaded).get("title"))
    st.subheader(md_escape(title or loaded.source), anchor=False)
    st.caption(md_escape(f"{loaded.source} · {len(loaded.candidates)} candidates · {loaded.format.upper()}"
                         + (" (a saved trace)" if loaded.trace is not None else "")))
    if not _scenario(loaded):
        st.caption(settings_source(loaded))
    if not (loaded.query or "").strip():
        st.warning("This file has no question. Type the user's question in the query box: without one, the "
                   "prompt ends with an empty question and nothing is ranked against it.",
                   icon=":material/help:")


def settings_source(loaded: Loaded) -> str:
    """Where an input's starting settings come from, in words (an upload never keeps the previous budget)."""
    if loaded.trace is not None or loaded.format == "trace":
        return "Settings: the ones this trace was built with."
    if loaded.config:
        budget = loaded.config.get("budget")
        return ("Settings: this file's own config" + (f" (a direct docs budget of {budget:,} tokens)."
                                                        if isinstance(budget, int) else ", with the docs budget "
                                                        "from its window split."))
    return ("Settings: this file carries none, so the engine defaults apply and the docs budget comes from the "
            "window split (not from the previous input).")


def scenario_story(loaded: Loaded, mode: Optional[str] = None) -> None:
    """What goes wrong and what fixes it, side by side, when the file tells; the one on show is marked."""
    scen = _scenario(loaded)
    wrong, fix = _text(scen.get("what_goes_wrong")), _text(scen.get("what_fixes_it"))
    if not (wrong or fix):
        return
    if mode is None:
        mode = _settings_mode(loaded, scen.get("naive_config"))
    cols = st.columns(2) if wrong and fix else [st.container()]
    if wrong:
        lead = "**What goes wrong (shown now):** " if mode == "naive" else "**What goes wrong:** "
        cols[0].warning(lead + md_escape(wrong), icon=":material/report:")
    if fix:
        lead = "**What fixes it (shown now):** " if mode == "file" else "**What fixes it:** "
        cols[-1].success(lead + md_escape(fix), icon=":material/build:")


def has_failure(loaded: Loaded) -> bool:
    """Whether the scenario's failure settings differ from its fix (the file's settings)."""
    naive = _scenario(loaded).get("naive_config")
    if not isinstance(naive, dict):
        return False
    try:
        return Config.from_dict({**DEFAULTS, **naive}) != loaded.settings()
    except InputError:
        return False


def _toggle_fix(loaded: Loaded) -> None:
    naive = _scenario(loaded).get("naive_config")
    if st.session_state.get("dbg.fix"):
        apply_config(loaded.settings().to_dict(), loaded.source)
    else:
        apply_config(naive, loaded.source)


def settings_buttons(loaded: Loaded) -> None:
    """One toggle between the scenario's failure and its fix; for a file with settings, a button back to them."""
    naive = _scenario(loaded).get("naive_config")
    if not (loaded.config or isinstance(naive, dict)):
        return
    mode = _settings_mode(loaded, naive)
    if has_failure(loaded):
        st.session_state["dbg.fix"] = mode == "file"  # the toggle mirrors the controls, whatever set them
        st.toggle("Apply the fix", key="dbg.fix", on_change=_toggle_fix, args=(loaded,),
                  help="Off: the scenario's naive settings, which show what goes wrong. On: the file's own "
                       "settings, which fix it. Every number on the page follows.")
        st.caption({"file": "Showing the fix: the file's own settings.",
                    "naive": "Showing the failure: the scenario's naive settings.",
                    "custom": "Showing custom settings (neither the failure nor the fix)."}[mode])
        return
    st.button("File's settings", on_click=apply_config, args=(loaded.settings().to_dict(), loaded.source),
              help="Set every control to the settings this file carries.", key="dbg.apply_file",
              type="primary" if mode == "file" else "secondary")
    st.caption("Showing the file's own settings." if mode == "file" else "Showing custom settings.")


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
