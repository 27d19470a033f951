"""Session state: our own store of control values (it survives page switches; widget keys do not), the widgets
bound to it, and the address bar that mirrors it.

The scenario and every setting travel in the URL's query string: read once when a session opens (see
``links.read_link``), rewritten whenever something changes (:func:`sync_url`). The scheme is in
:func:`link_params`' docstring. The URL writer lives here because every store change must update it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx

from ctxcore import Config, InputError

from .linkparams import LINK_PARAMS
from .pagesmode import _leave_pages_directory_mode
from .settings import DEFAULT_CONTROLS, DEFAULTS, PAGE_DEFAULTS, config_from_controls, controls_from_config


STORE = "ctx.controls"  # our own session key: survives page switches (widget keys do not)

# widget key -> store field. Widget keys are per page; Streamlit deletes them when their page is
# not shown, so every widget is re-seeded from the store (see ``bound``).
BINDINGS: dict[str, str] = {}


def init_state() -> None:
    """Called by app.py on every run: make sure our own keys exist."""
    _leave_pages_directory_mode()
    ss = st.session_state
    if STORE not in ss:
        ss[STORE] = {**DEFAULT_CONTROLS, **PAGE_DEFAULTS}
    for key, default in (("ctx.loaded", None), ("ctx.key", None), ("ctx.sample", None), ("ctx.upload_id", None),
                         ("ctx.load_error", None), ("ctx.notes", []), ("ctx.last_fixed", None)):
        ss.setdefault(key, default)


def store() -> dict:
    init_state()
    return st.session_state[STORE]


def _page_hash() -> Optional[str]:
    ctx = get_script_run_ctx()
    return ctx.page_script_hash if ctx is not None else None


def apply_controls(values: dict) -> None:
    """Set control values in the store (call before the bound widgets render, or from a callback)."""
    s = store()
    s.update(values)
    for wkey, field in BINDINGS.items():
        if field in values:
            # Forget the widget's own value (on every page); ``bound`` re-seeds it from the store.
            st.session_state.pop(wkey, None)
    sync_url()


def bound(widget, field: str, wkey: str, *args, **kwargs):
    """Render ``widget`` bound to store[field]: seeded from the store, written back to it."""
    BINDINGS[wkey] = field
    s = store()
    # A widget key used on several pages (the sidebar's) keeps the value of the page it was last shown on,
    # but Streamlit 1.67 gives the widget on another page its default instead: re-seed it from the store.
    where = st.session_state.setdefault("ctx.bound_page", {})
    page = _page_hash()
    if where.get(wkey) != page:
        st.session_state.pop(wkey, None)
        where[wkey] = page
    if wkey not in st.session_state:
        st.session_state[wkey] = s[field]
    value = widget(*args, key=wkey, **kwargs)
    if s.get(field) != value:
        s[field] = value
        sync_url()
    return value


def reset_defaults() -> None:
    apply_controls(dict(DEFAULT_CONTROLS))


def apply_config(cfg: dict, source: str = "settings") -> None:
    """Make a (partial) Config dict the control values: defaults, then ``cfg`` on top."""
    try:
        values, notes = controls_from_config({**DEFAULTS, **(cfg or {})})
    except InputError as err:
        err.source = source
        st.session_state["ctx.load_error"] = str(err)
        return
    apply_controls(values)
    st.session_state["ctx.notes"] = notes


def current_config() -> Config:
    """The Config the controls stand for; raises InputError for impossible combinations."""
    return Config.from_dict(config_from_controls(store()), source="settings")


def open_case_id() -> Optional[str]:
    """The saved case the session shows (its input is the current one), else None."""
    ss = st.session_state
    case = ss.get("ctx.case")
    return case["id"] if case and case.get("key") == ss.get("ctx.key") else None


def _link_base() -> tuple[dict, Optional[str]]:
    """The values a link is written against, and the scenario stem (None for an upload or nothing loaded).

    A sample's starting point is its file's own settings (the fix; picked in the app it opens with its
    failure instead, and the link then names the settings that make the failure); a saved case's is the
    view it was saved with."""
    ss = st.session_state
    loaded, sample = ss.get("ctx.loaded"), ss.get("ctx.sample")
    base = {**DEFAULT_CONTROLS, **PAGE_DEFAULTS}
    if open_case_id():
        return {**base, **ss["ctx.case"]["controls"]}, None
    if loaded is None or not sample:
        return base, None
    try:
        file_controls, _ = controls_from_config({**DEFAULTS, **loaded.settings().to_dict()})
    except InputError:
        file_controls = {}
    return {**base, **file_controls, "query": loaded.query}, Path(sample).stem


def link_params() -> dict[str, str]:
    """The query parameters that reproduce the current view: the scenario, the settings that differ from the
    starting point, and the shown page's own parameters.

    The keys of ``st.query_params`` are short to keep links short. The starting point is the scenario file's
    own settings when ``scenario`` is given (a sample picked in the app opens with its failure settings, so its
    link names them), the case's saved settings when ``case`` is, else the engine defaults. Booleans are 1/0; "off" switches an
    optional setting off. A bad value is named in one warning and its default is used.

      scenario  sample file, by stem: 01_duplicates_crowd_out (omitted for an uploaded file: the link then
                carries the settings only)
      case      a saved case on this server, by id (its input, settings and view; see ctxui.cases)
      tok       tokenizer: an encoding (cl100k_base, o200k_base) or a model name (gpt-4o, …)
      win       context window (tokens)              out     max output reserved for the answer (tokens)
      safety    safety margin, 0–0.99                hist    history share, 0–1, or auto
      budget    direct docs budget (tokens) or off   fixed   fixed-block tokens on the budget page
      min       minimum score, or off                nd      near-duplicate threshold 0.01–1, or off
      unsc      drop unscored candidates when min is set, 1/0
      sim       similarity: words | shingles | cosine
      newest    prefer the newest version (drop stale), 1/0
      sel       selection: score | density | mmr     lam     MMR λ, 0–1
      order     rank | sandwich | lost-in-the-middle | document | original
      maxp      max passages, or off                 label   label overhead per passage (tokens) or auto
      comp      compress, 1/0                        cap     max tokens per chunk, or off
      merge     merge adjacent chunks, 1/0           caller  caller name for permissions
      q         the question, when it was edited (scenario links only)
      fates     the debugger's fate filter, comma-separated
    Page parameters (only on their page): learn: step (1…n), lv (the step's control value);
    compare: a, b (naive | recommended | file | failure | sidebar | defaults).
    """
    s = store()
    base, scenario = _link_base()
    case = open_case_id()
    params = {"case": case} if case else {"scenario": scenario} if scenario else {}
    for p in LINK_PARAMS:
        if p.key == "q" and not (scenario or case):
            continue  # an uploaded file's question travels with the file, not the link
        value = p.encode(s)
        if value != p.encode(base):
            params[p.key] = value
    if st.session_state.get("ctx.page_params_page") == _page_hash():
        params.update(st.session_state.get("ctx.page_params") or {})
    return params


def set_page_params(params: dict) -> None:
    """A page's own link parameters (e.g. the learn step): in the link while that page is shown."""
    st.session_state["ctx.page_params"] = {k: str(v) for k, v in params.items() if v is not None}
    st.session_state["ctx.page_params_page"] = _page_hash()
    sync_url()


def link_page_param(key: str) -> Optional[str]:
    """A page parameter the opening link carried; returned once, then forgotten (the page keeps its own state)."""
    return (st.session_state.get("ctx.link_page") or {}).pop(key, None)


def sync_url() -> None:
    """Keep the address bar equal to the current view.

    Called whenever the store, the input or a page parameter changes, and by app.py after the page ran (AppTest
    in Streamlit 1.67 re-runs only the page file after the first run, so the calls here are what keep it
    updated there)."""
    params = link_params()
    try:
        if st.query_params.to_dict() != params:
            st.query_params.from_dict(params)
    except Exception:  # noqa: BLE001 - the page already rendered; a URL update must never break it
        pass
