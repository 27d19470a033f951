""""Open from...": a trace fetched from the tool it lives in (Phoenix, MLflow, Langfuse, LangSmith), loaded as an
uploaded export would be. Credentials come from the server's environment variables or from the form, where
they are used for that one fetch: the form clears itself, and they never enter a case, a link or the URL."""

from __future__ import annotations

from typing import Optional

import streamlit as st

from ctxcore import InputError
from ctxcore.io import remote, sources
from ctxcore.io.sources import Source

from .inputs import _use
from .loading import load_bytes
from .text import md_escape, one_line

TOOLS = ("phoenix", "mlflow", "langfuse", "langsmith")
TOOL_LABELS = {"phoenix": "Phoenix", "mlflow": "MLflow", "langfuse": "Langfuse", "langsmith": "LangSmith"}
# the form's key field and secret field, as the environment variables the readers read
KEY_NAMES = {"phoenix": ("PHOENIX_API_KEY", None), "mlflow": ("MLFLOW_TRACKING_TOKEN", None),
             "langfuse": ("LANGFUSE_PUBLIC_KEY", "LANGFUSE_SECRET_KEY"), "langsmith": ("LANGSMITH_API_KEY", None)}


def source_of(where: str, tool: Optional[str], trace_id: str) -> Source:
    """The source the form names: a trace's URL alone, or a server's URL with the tool and a trace id.

    >>> source_of("http://h:6006/projects/UHJvamVjdDox/traces/0af7651916cd43dd8448eb211c80319c", None, "").scheme
    'phoenix'
    >>> source_of("http://h:5000", "mlflow", " tr-1 ")
    Source(scheme='mlflow', location='http://h:5000', trace='tr-1')
    """
    where, trace_id = where.strip(), trace_id.strip()
    found = sources.parse(where) if where else None
    if found is not None and not trace_id:
        return found
    if not where:
        raise InputError("give the trace's URL as the tool shows it, or the server's URL and a trace id",
                         source="Open from")
    tool = tool or (found.scheme if found is not None else None)
    if tool is None:
        raise InputError("pick the tool (Phoenix, MLflow, Langfuse, LangSmith), or paste the trace's own URL",
                         source=where)
    if not trace_id:
        raise InputError("give the trace id, or paste the trace's own URL", source=where)
    return Source(tool, found.location if found is not None else where, trace_id)


def credentials_of(scheme: str, key: str, secret: str) -> dict:
    """The typed credentials as the environment variables the reader of ``scheme`` reads; empty fields left out.

    >>> credentials_of("langfuse", "pk-1", "sk-1")
    {'LANGFUSE_PUBLIC_KEY': 'pk-1', 'LANGFUSE_SECRET_KEY': 'sk-1'}
    >>> credentials_of("phoenix", "", "ignored")
    {}
    """
    names = KEY_NAMES.get(scheme, (None, None))
    return {n: v.strip() for n, v in zip(names, (key, secret)) if n and v and v.strip()}


def open_from(page: str) -> None:
    """The "Open from..." expander of a page (``page`` prefixes its widget keys); a fetched trace becomes the
    current input, and a fetch that fails is one error line with the current input kept."""
    with st.expander("Open from…", expanded=False):
        with st.form(f"{page}.open_from", clear_on_submit=True, border=False):
            where = st.text_input("Trace URL (as copied from the tool), or the server's URL", key=f"{page}.of.where",
                                  placeholder="http://127.0.0.1:6006/projects/…/traces/…")
            tool_col, id_col = st.columns(2)
            tool = tool_col.selectbox("Tool", TOOLS, index=None, key=f"{page}.of.tool",
                                      format_func=TOOL_LABELS.get, placeholder="read from the URL")
            trace_id = id_col.text_input("Trace id (with a server's URL)", key=f"{page}.of.trace")
            key_col, secret_col = st.columns(2)
            key = key_col.text_input("API key or token (optional)", type="password", key=f"{page}.of.key",
                                     help="Default: the server's environment (PHOENIX_API_KEY, MLFLOW_TRACKING_TOKEN, "
                                          "LANGFUSE_PUBLIC_KEY, LANGSMITH_API_KEY). Used for this fetch only.")
            secret = secret_col.text_input("Langfuse secret key (optional)", type="password", key=f"{page}.of.secret",
                                           help="Default: LANGFUSE_SECRET_KEY. Used for this fetch only.")
            submitted = st.form_submit_button("Open")
    if submitted:
        for field in ("key", "secret"):  # used for this fetch only: not kept in the session past it
            st.session_state.pop(f"{page}.of.{field}", None)
        _open(where, tool, trace_id, key, secret)


def _open(where: str, tool: Optional[str], trace_id: str, key: str, secret: str) -> None:
    """Fetch and load; the current input stays when anything fails (the input section shows the line)."""
    ss = st.session_state
    try:
        src = source_of(where, tool, trace_id)
        with st.spinner(f"Fetching {src.trace} from {TOOL_LABELS.get(src.scheme, src.scheme)}…"):
            name, data = remote.fetch_with(src, credentials_of(src.scheme, key, secret))
        loaded_key, loaded = load_bytes(name, data)
    except InputError as err:
        ss["ctx.load_error"] = str(err)
        return
    except Exception as err:  # noqa: BLE001 - a client's own failure is still one line
        ss["ctx.load_error"] = f"Open from: the trace could not be fetched ({one_line(err)})"
        return
    _use(loaded_key, loaded, sample=None)
    ss["dbg.sample"] = None
    st.toast(md_escape(f"Opened {name}"))
