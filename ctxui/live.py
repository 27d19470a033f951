"""The Live page's helpers: the runs the OTLP endpoint stored, each summed up as the Diagnose page would read it
(query, model, documents, passages sent, a one-word verdict), the endpoint started beside the app, and a run
opened in Diagnose or the Debugger or saved as a case."""

from __future__ import annotations

import datetime as dt
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import pandas as pd
import streamlit as st

from ctxcore import InputError
from ctxcore import serve as endpoint
from ctxcore.analysis import policy
from ctxcore.analysis.diagnosis import diagnose
from ctxcore.analysis.sent import attach
from ctxcore.io.live import otlp, store as live_store

from . import casestore
from .cases import INPUT_KEY, case_fields
from .inputs import _use
from .loading import _load_trace, content_key
from .text import one_line

PORT_ENV = "CTXCORE_OTLP_PORT"   # set by `ctxcore app --otlp`: the endpoint starts with the app
SHOWN = 50                       # runs listed (the newest that match the filters)
PAGES = {"Diagnose": "pages/diagnose.py", "Debugger": "pages/debugger.py"}


@dataclass(frozen=True)
class Summary:
    query: str
    model: str
    documents: int
    sent: int
    verdict: str      # ok, a root cause's kind, or "unreadable"
    answer: str
    note: str = ""    # why a run could not be read


def store_path() -> Path:
    return live_store.default_path()


def verdict(findings) -> str:
    """One word for the list: the root cause's kind, else ok."""
    cause = next((f for f in findings if f.role == "cause"), None)
    return cause.kind if cause is not None else "ok"


def summarise(name: str, data: bytes, trace_id: str) -> Summary:
    """What the Diagnose page would say of this run, in a line (a run still arriving reads as far as it got)."""
    try:
        loaded = _load_trace(name, data, trace_id)
        trace = policy.attach(attach(loaded.build(loaded.settings(**loaded.config))))
    except InputError as err:
        return Summary("", "", 0, 0, "unreadable", "", one_line(err))
    logged = loaded.logged
    findings = diagnose(trace, logged_prompt=logged.prompt_text if logged else None,
                        answer=logged.answer if logged else None).findings if logged and logged.prompt_text else ()
    sent = trace.logged.sent.passages if trace.logged is not None and trace.logged.sent is not None else ()
    return Summary(query=loaded.query or "", model=(logged.model if logged else "") or "",
                   documents=len(loaded.candidates), sent=len(sent), verdict=verdict(findings),
                   answer=(logged.answer if logged else "") or "")


@st.cache_data(show_spinner=False, max_entries=256)
def _summary(trace_id: str, spans: int, path: str) -> Summary:
    """Keyed by the run's span count too: a run that received more spans is read again."""
    name, data = run_bytes(trace_id, Path(path))
    return summarise(name, data, trace_id)


def run_bytes(trace_id: str, path: Optional[Path] = None) -> tuple[str, bytes]:
    tid, data = live_store.export(trace_id, path or store_path())
    return f"live-{tid}.jsonl", data


def frame(runs: list, path: Path) -> pd.DataFrame:
    """The list of runs: one row each, newest first; chunk text never shown here, only counts and one-liners."""
    rows = []
    for r in runs:
        s = _summary(r.trace_id, r.spans, str(path))
        rows.append({"received": dt.datetime.fromtimestamp(r.first_seen).strftime("%Y-%m-%d %H:%M:%S"),
                     "service": r.service, "query": s.query, "model": s.model, "documents": s.documents,
                     "sent": s.sent, "verdict": s.verdict, "spans": r.spans, "trace id": r.trace_id})
    return pd.DataFrame(rows, columns=["received", "service", "query", "model", "documents", "sent", "verdict",
                                       "spans", "trace id"])


@st.cache_resource(show_spinner=False)
def _endpoint(port: int, path: str):
    """One endpoint per server process and port (every session shares it)."""
    return endpoint.start(port, live_store.Store(Path(path)), host="127.0.0.1")


def start_endpoint(port: int) -> tuple[Optional[str], Optional[str]]:
    """(the endpoint's URL, None) once it serves, or (None, why it cannot) in one line."""
    if not otlp.available():
        return None, "the endpoint needs opentelemetry-proto: pip install -r requirements-live.txt"
    try:
        return endpoint.url(_endpoint(port, str(store_path()))), None
    except OSError as err:
        return None, f"cannot listen on 127.0.0.1:{port} ({err.strerror or err}); is another endpoint running?"


def port_from_env() -> Optional[int]:
    value = os.environ.get(PORT_ENV, "")
    return int(value) if value.isdigit() else None


def open_run(trace_id: str, page: str) -> None:
    """Make the run the session's input (as an uploaded file would be), then go to ``page``."""
    use_run(trace_id)
    st.switch_page(PAGES[page])


def use_run(trace_id: str) -> None:
    name, data = run_bytes(trace_id)
    loaded = _load_trace(name, data, trace_id)
    from_bytes = content_key(name, data)
    _use(from_bytes, loaded, sample=None)
    st.session_state["dbg.sample"] = None
    st.session_state[INPUT_KEY] = (from_bytes, name, data)   # so Save this case works on the next page too


def save_run(trace_id: str, title: str) -> str:
    """Save the run as a case (its spans as the input, the default settings); the case id."""
    use_run(trace_id)
    _, name, data = st.session_state[INPUT_KEY]
    loaded = st.session_state["ctx.loaded"]
    fields = {**case_fields(loaded, "diagnose"), "title": title or f"live run {trace_id}", "note": "", "tag": ""}
    return casestore.save_case(data, fields)
