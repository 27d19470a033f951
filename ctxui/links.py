"""Shareable links: reading the opening link once per session, and the share box (the writer is ``state.sync_url``)."""

from __future__ import annotations

import logging
from typing import Optional
from urllib.parse import quote, urlencode, urlsplit

import streamlit as st

from ctxcore import Config, InputError

from .cases import open_case
from .firstpaint import start_headline_run
from .inputs import use_sample
from .linkparams import LINK_BY_KEY, LINK_PAGE_KEYS
from .loading import sample_path, sample_paths
from .settings import DEFAULT_CONTROLS, clamp_controls, config_from_controls
from .state import apply_config, apply_controls, init_state, link_params, store
from .text import md_escape


def start_run() -> None:
    """Called by app.py at the top of every run: state, and on the session's first run the opening link."""
    init_state()
    start_headline_run()
    ss = st.session_state
    if not ss.get("ctx.link_read"):
        ss["ctx.link_read"] = True
        read_link()


def read_link() -> None:
    """Apply the link the session was opened with: select its scenario, set its settings (defaults for bad ones)."""
    ss = st.session_state
    try:
        raw = {k: st.query_params.get(k) for k in st.query_params}
    except Exception:  # noqa: BLE001 - no query string to read
        raw = {}
    ss["ctx.opened_with_link"] = bool(raw)
    if not raw:
        return
    problems: list[str] = []
    scenario = raw.pop("scenario", None)
    case = raw.pop("case", None)
    found = False
    if case is not None:  # a saved case: its input and view; a scenario beside it is ignored
        problems += open_case(case)
        found = not problems
    elif scenario is not None:
        path = sample_path(scenario)
        if path is None:
            names = ", ".join(p.stem for p in sample_paths())
            problems.append(f"scenario={scenario!r} is not a sample scenario (known: {names})")
        else:
            found = use_sample(path)
            if found:  # a link's settings are written against the file's own settings, not its failure
                loaded = ss["ctx.loaded"]
                apply_config(loaded.settings().to_dict(), loaded.source)
    ss["ctx.link_page"] = {k: raw.pop(k) for k in list(raw) if k in LINK_PAGE_KEYS}
    unknown = sorted(k for k in raw if k not in LINK_BY_KEY)
    if unknown:
        problems.append("unknown " + ", ".join(f"{k}={raw[k]!r}" for k in unknown) + " (ignored)")
    used: dict[str, dict] = {}
    for key, text in raw.items():
        p = LINK_BY_KEY.get(key)
        if p is None:
            continue
        try:
            used[key] = p.decode(text)
        except ValueError as err:
            problems.append(f"{key}={text!r} {err}")
    # settings that are valid one by one but not together (e.g. win not above out): name them, drop them
    for _ in range(len(used) + 1):
        updates = {k: v for upd in used.values() for k, v in upd.items()}
        try:
            Config.from_dict(config_from_controls({**store(), **updates}), source="link")
            break
        except InputError as err:
            bad = [k for k in used if LINK_BY_KEY[k].config == err.field] or list(used)
            for k in bad:
                problems.append(f"{k}={raw[k]!r}: {err.message}")
                used.pop(k)
    updates, notes = clamp_controls({k: v for upd in used.values() for k, v in upd.items()})
    apply_controls(updates)
    if updates and not found:
        # No scenario: the settings are against the engine defaults and must survive the first load.
        keep = {k: store()[k] for k in DEFAULT_CONTROLS}
        if "query" in updates:
            keep["query"] = updates["query"]
        ss["ctx.link_pending"] = keep
    link_warning(problems)
    if notes:
        st.info(md_escape("This link's " + "; ".join(notes) + "."), icon=":material/tune:")


def link_warning(problems: list[str]) -> None:
    if problems:
        st.warning(md_escape("This link has " + ("a parameter" if len(problems) == 1 else "parameters")
                             + " that could not be used, so the default is shown instead: " + "; ".join(problems)
                             + "."), icon=":material/link_off:")


def link_text(params: Optional[dict] = None) -> tuple[str, bool]:
    """(the shareable link, whether it is absolute). Relative (``?…``) when the app's URL is unknown."""
    params = link_params() if params is None else params
    query = urlencode(params, quote_via=quote, safe=",")
    try:
        base = st.context.url
    except Exception:  # noqa: BLE001
        base = None
    if base:
        if not urlsplit(base).path:
            base += "/"
        return base + (f"?{query}" if query else ""), True
    return f"?{query}", False


def share_box(where) -> None:
    """The "copy link" affordance: the full link to this view in a copyable code box."""
    try:
        link, absolute = link_text()
    except Exception:  # noqa: BLE001 - never let the share box break a page
        logging.getLogger("ctxui").exception("share link failed")
        return
    ss = st.session_state
    upload = ss.get("ctx.loaded") is not None and not ss.get("ctx.sample")
    with where.expander("Share this view", icon=":material/link:"):
        st.code(link, language=None, wrap_lines=True)
        st.caption("Copy it with the button in the box. It opens this page with the same scenario and settings."
                   if absolute else "Add this to the app's address (its URL is not known here) to open this page "
                   "with the same scenario and settings.")
        if upload:
            st.caption("The input is an uploaded file, which cannot travel in a link: the link carries the "
                       "settings only; upload the same file after opening it.")
