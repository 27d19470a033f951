"""The debugger's input section: sample picker, uploader and trace picker; keeps the last good input in the session."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import streamlit as st

import ctxcore
from ctxcore import InputError, Loaded

from ctxcore.io.formats import load_run
from ctxcore.io.inspect import inspect_file, report

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
    ss["ctx.load_error"], ss["ctx.notes"], ss["ctx.load_failed"] = None, [], None
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
        upload = st.file_uploader("…or upload candidates (JSON, JSONL, CSV), a saved trace or a logged trace",
                                  type=["json", "jsonl", "csv", "parquet"], key="dbg.upload",
                                  help="A JSON array or {query, candidates, system, …, config} object, JSONL, "
                                       "CSV with id,text,score columns, a trace downloaded from this page, or a "
                                       "logged trace: Phoenix/OpenInference (JSON, JSONL, parquet), OTLP JSON, "
                                       "Langfuse, LangSmith, MLflow (see the README).")
    if upload is not None and upload.file_id != ss.get("ctx.upload_id"):
        ss["ctx.upload_id"] = upload.file_id
        try:
            key, loaded = load_bytes(upload.name, upload.getvalue())
        except InputError as err:
            ss["ctx.load_error"], ss["ctx.load_failed"] = str(err), upload.name
        except Exception as err:  # noqa: BLE001
            ss["ctx.load_error"] = f"{upload.name}: could not be read ({one_line(err)})"
            ss["ctx.load_failed"] = upload.name
        else:
            _use(key, loaded, sample=None)
            ss["dbg.sample"] = None
    elif upload is None and ss.get("ctx.upload_id") is not None:
        ss["ctx.upload_id"] = None
    with pick_col:
        if ss.pop("ctx.clear_sample", False):  # an upload completed by the companion uploader (about_panel)
            ss["dbg.sample"] = None
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
    if ss.get("ctx.load_error") and ss.get("ctx.loaded") is None:  # else the page's input_banner says it
        st.error(md_escape(ss["ctx.load_error"]), icon=":material/error:")
    for note in ss.get("ctx.notes") or ():
        st.info(md_escape(note))
    if not samples and ss.get("ctx.loaded") is None:
        st.info("No sample scenarios in sample_data/. Upload a candidates file to start.")


def _run_label(runs: dict, tid: str) -> str:
    r = runs.get(tid)
    if r is None:
        return tid
    what = ", ".join(w for w, on in (("retrieval", r.get("retrieval")), ("LLM call", r.get("llm"))) if on) or "neither"
    return f"run {r['n']} · {tid[:20]} · {what} · {r.get('documents', 0)} docs" + (f" · {r['start']}" if r.get("start") else "")


def trace_picker() -> None:
    """When an uploaded log holds several runs (traces), let the user choose the one to look at; any family."""
    ss = st.session_state
    loaded, upload = ss.get("ctx.loaded"), ss.get("dbg.upload")
    logged = loaded.logged if loaded is not None else None
    traces = [t for t in (logged.traces if logged else ()) if isinstance(t, str)]
    if len(traces) < 2 or upload is None:
        return
    runs = {r["id"]: {**r, "n": i} for i, r in enumerate(logged.runs, 1) if isinstance(r.get("id"), str)}
    current = logged.trace_id
    choice = st.selectbox(f"This file logged {len(traces)} traces; showing", traces,
                          index=traces.index(current) if current in traces else 0,
                          format_func=lambda t: _run_label(runs, t),
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


@st.cache_data(show_spinner=False, max_entries=8)
def _file_report(name: str, data: bytes) -> dict:
    return inspect_file(data, name=name)


def _texts_from(name: str, data: bytes) -> dict:
    texts: dict = {}
    for c in ctxcore.load(data, name=name).candidates:
        texts.setdefault(c.id, c.text)
        if c.doc_id:
            texts.setdefault(c.doc_id, c.text)
    return texts


def _companion_uploader(upload) -> None:
    """The second uploader: candidates giving the text of documents the log recorded by id only."""
    ss = st.session_state
    extra = st.file_uploader("Candidates with the documents' text (id, text)", type=["json", "jsonl", "csv"],
                             key="dbg.companion",
                             help="For logs that recorded documents by id and score only (e.g. the OpenTelemetry "
                                  "GenAI gen_ai.retrieval.documents): their text, matched by id or doc_id.")
    if extra is None or extra.file_id == ss.get("ctx.companion_id"):
        return
    ss["ctx.companion_id"] = extra.file_id
    data = upload.getvalue()
    try:
        loaded = load_run(data, texts=_texts_from(extra.name, extra.getvalue()), name=upload.name)
    except InputError as err:
        ss["ctx.load_error"] = str(err)
        return
    _use(content_key(f"{upload.name}+{extra.name}", data + extra.getvalue()), loaded, sample=None)
    ss["ctx.clear_sample"] = True
    st.rerun()


def _table(rows) -> None:
    import pandas as pd

    if rows:  # nested values (a reranker's settings) as text, so every column has one type
        st.dataframe(pd.DataFrame([{k: (json.dumps(v) if isinstance(v, (dict, list)) else v) for k, v in r.items()}
                                   for r in rows]), hide_index=True, width="stretch")


def about_panel() -> None:
    """"About this file", after an upload of a logged trace: the detected format, the runs found, and the
    shown run's query, model, logged prompt, answer and documents, with what was not found and why."""
    ss = st.session_state
    upload, loaded = ss.get("dbg.upload"), ss.get("ctx.loaded")
    if upload is None:
        return
    if ss.get("ctx.load_error"):
        rep = _file_report(upload.name, upload.getvalue())
        if not rep.get("format"):
            return
    elif loaded is not None and loaded.logged is not None and ss.get("ctx.sample") is None:
        rep = report(loaded)
    else:
        return
    with st.expander("About this file", expanded=bool(rep.get("error"))):
        st.markdown(md_escape(f"Format: {rep['format']}" + (f" (attributes: {', '.join(rep['conventions'])})"
                                                             if rep.get("conventions") else "")))
        if rep.get("error"):
            st.error(md_escape(rep["error"]), icon=":material/error:")
            if "--candidates" in rep["error"]:
                _companion_uploader(upload)
            return
        st.caption(f"{len(rep['runs'])} run(s) in the file; showing run {rep['run'] or '?'} ({rep['trace_id']})")
        _table(rep["runs"])
        st.markdown(md_escape(f"Query: {rep['query'] or '(none)'}"))
        st.markdown(md_escape(f"Model: {rep['model'] or '(none)'} · prompt tokens logged: "
                              f"{rep['prompt_tokens'] if rep['prompt_tokens'] is not None else '(none)'} · LLM span: "
                              f"{rep['llm_span'] or '(none)'}"))
        st.caption(f"Logged prompt, first lines of {rep['prompt_lines']}")
        st.code("\n".join(rep["prompt_head"]) or "(none)", language=None)
        st.caption("Answer")
        st.text(rep["answer"] or "(none)")
        st.caption("Documents")
        _table(rep["documents"])
        if rep["reranked"]:
            st.markdown(md_escape(f"Reranker kept, in order: {', '.join(rep['reranked'])}"
                                  + (f"; cut: {', '.join(rep['reranker_cut'])}" if rep["reranker_cut"] else "")))
        if rep["spans"]:
            st.caption("Spans")
            _table(rep["spans"])
        for title, items in (("Not found", rep["not_found"]), ("Not read", rep["unmapped"])):
            if items:
                st.markdown(md_escape(f"{title}:") + "\n" + "\n".join(f"- {md_escape(m)}" for m in items))


def loaded_input(about: bool = True) -> Loaded:
    """The input section, the trace picker and the sidebar; the loaded input (the page stops without one).
    ``about=False``: the page shows :func:`about_panel` itself, lower down (Diagnose leads with its root cause)."""
    input_section()
    trace_picker()
    if about or st.session_state.get("ctx.loaded") is None:
        about_panel()
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
