"""The debugger's input section: sample picker, uploader and trace picker; keeps the last good input in the session."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import streamlit as st

import ctxcore
from ctxcore import InputError, Loaded

from .controls import sidebar_controls
from .loading import _load_trace, content_key, load_bytes, sample_paths
from .settings import opening_config
from .state import apply_config, apply_controls, init_state, sync_url
from .text import md_escape, one_line


@st.cache_data(show_spinner=False, max_entries=16)
def _sample_title(path: str, mtime: float) -> str:
    """The picker's label for a sample; keyed by the file's mtime so a rerun reads no file."""
    name = Path(path).name
    try:
        scen = ctxcore.load(path).extra.get("scenario")
    except InputError:
        return name
    title = scen.get("title") if isinstance(scen, dict) else None
    return f"{name[:2]} · {title}" if isinstance(title, str) and title.strip() else name


def _use(key: str, loaded: Loaded, *, sample: Optional[str]) -> None:
    init_state()  # first: it may rerun the script (see _leave_pages_directory_mode), so before any change
    ss = st.session_state
    ss["ctx.loaded"], ss["ctx.key"], ss["ctx.sample"] = loaded, key, sample
    ss["ctx.load_error"], ss["ctx.notes"] = None, []
    apply_config(opening_config(loaded), loaded.source)  # a scenario's failure, the file's, or the defaults
    apply_controls({"query": loaded.query})
    pending = ss.pop("ctx.link_pending", None)  # settings from a link that named no scenario (see read_link)
    if pending:
        apply_controls(pending)
    ss.pop("dbg.detail", None)
    sync_url()


def input_section() -> None:
    """Sample picker + uploader; keeps the last good Loaded in session state."""
    init_state()
    ss = st.session_state
    samples = {p.name: p for p in sample_paths()}
    pick_col, up_col = st.columns(2)
    with up_col:  # processed first, so a new upload can clear the picker before it renders
        upload = st.file_uploader("…or upload candidates (JSON, JSONL, CSV) or a saved trace",
                                  type=["json", "jsonl", "csv"], key="dbg.upload",
                                  help="A JSON array or {query, candidates, system, …, config} object, JSONL, "
                                       "CSV with id,text,score columns, or a trace downloaded from this page.")
    if upload is not None and upload.file_id != ss.get("ctx.upload_id"):
        ss["ctx.upload_id"] = upload.file_id
        try:
            key, loaded = load_bytes(upload.name, upload.getvalue())
        except InputError as err:
            ss["ctx.load_error"] = str(err)
        except Exception as err:  # noqa: BLE001
            ss["ctx.load_error"] = f"{upload.name}: could not be read ({one_line(err)})"
        else:
            _use(key, loaded, sample=None)
            ss["dbg.sample"] = None
    elif upload is None and ss.get("ctx.upload_id") is not None:
        ss["ctx.upload_id"] = None
    with pick_col:
        if "dbg.sample" not in ss:
            first = next(iter(samples), None)
            ss["dbg.sample"] = ss["ctx.sample"] if ss.get("ctx.loaded") is not None else first
        if ss["dbg.sample"] not in samples:
            ss["dbg.sample"] = None
        choice = st.selectbox("Sample scenario", list(samples), index=None, key="dbg.sample",
                              placeholder="Pick a sample scenario",
                              format_func=lambda n: _sample_title(str(samples[n]), samples[n].stat().st_mtime))
    if choice is not None and (choice != ss.get("ctx.sample") or ss.get("ctx.loaded") is None):
        try:
            key, loaded = load_bytes(choice, samples[choice].read_bytes())
        except InputError as err:
            ss["ctx.load_error"] = str(err)
        else:
            _use(key, loaded, sample=choice)
    if ss.get("ctx.load_error"):
        st.error(md_escape(ss["ctx.load_error"]), icon=":material/error:")
    for note in ss.get("ctx.notes") or ():
        st.info(md_escape(note))
    if not samples and ss.get("ctx.loaded") is None:
        st.info("No sample scenarios in sample_data/. Upload a candidates file to start.")


def trace_picker() -> None:
    """When an uploaded log holds several traces, let the user choose the one to look at."""
    ss = st.session_state
    loaded, upload = ss.get("ctx.loaded"), ss.get("dbg.upload")
    logged = loaded.logged if loaded is not None else None
    traces = [t for t in (logged.traces if logged else ()) if isinstance(t, str)]
    if len(traces) < 2 or upload is None:
        return
    current = logged.trace_id
    choice = st.selectbox(f"This file logged {len(traces)} traces; showing", traces,
                          index=traces.index(current) if current in traces else 0,
                          key=f"dbg.trace.{ss.get('ctx.upload_id')}")
    if choice == current:
        return
    data = upload.getvalue()
    try:
        picked = _load_trace(upload.name, data, choice)
    except InputError as err:
        ss["ctx.load_error"] = str(err)
        return
    _use(content_key(f"{upload.name}#{choice}", data), picked, sample=None)
    st.rerun()


def loaded_input() -> Loaded:
    """The input section, the trace picker and the sidebar; the loaded input (the page stops without one)."""
    input_section()
    trace_picker()
    loaded = st.session_state.get("ctx.loaded")
    sidebar_controls()
    if loaded is None:
        st.stop()
    return loaded


def use_sample(path: Path) -> bool:
    """Load a sample scenario as the current input (as the debugger's picker does); False on failure."""
    try:
        key, loaded = load_bytes(path.name, path.read_bytes())
    except InputError as err:
        st.session_state["ctx.load_error"] = str(err)
        return False
    _use(key, loaded, sample=path.name)
    return True


def ensure_loaded() -> Optional[Loaded]:
    """The current input; when nothing is loaded yet, the first sample scenario (as on the debugger)."""
    init_state()
    ss = st.session_state
    if ss.get("ctx.loaded") is None:
        paths = sample_paths()
        if paths:
            use_sample(paths[0])
    return ss.get("ctx.loaded")
