"""Live: runs as the OTLP endpoint receives them, each with its one-word diagnosis; open one in Diagnose or the
Debugger, or save it as a case."""

import streamlit as st

import ctxui
from ctxcore import InputError
from ctxui import live as lv

ss = st.session_state
ctxui.init_state()
go = ss.pop("live.go", None)   # a button in the refreshing list asked to open a run (switch_page runs here)
if go is not None:
    lv.open_run(*go)

st.title("Live runs", anchor=False)
path = lv.store_path()
st.caption(ctxui.md_escape(f"Runs your pipeline sends to the OTLP endpoint, stored in {path} (set CTXCORE_DATA_DIR "
                           "to move it). Point OTEL_EXPORTER_OTLP_TRACES_ENDPOINT at the endpoint; see the "
                           "README, \"Send traces live\"."))

with st.sidebar:
    port = st.number_input("OTLP port", min_value=1, max_value=65535, value=lv.port_from_env() or 4318,
                           key="live.port")
    on = st.toggle("Receive traces here", key="live.receive", value=lv.port_from_env() is not None,
                   help="Start the OTLP/HTTP endpoint inside this app's server (as `python -m ctxcore serve` "
                        "would); it runs until the server stops.")
if on:
    url, problem = lv.start_endpoint(int(port))
    if problem:
        st.sidebar.error(ctxui.md_escape(problem), icon=":material/error:")
    else:
        st.sidebar.success(ctxui.md_escape(f"Receiving at {url}"), icon=":material/sensors:")


st.toggle("Refresh every 2 s", key="live.auto", help="The list reads the store again on its own; what you typed "
          "and the run you picked stay.")
EVERY = 2.0 if ss.get("live.auto") else None


@st.fragment(run_every=EVERY)
def runs_view() -> None:
    """The list and the chosen run; refreshed on its own, so the filters and the choice stay as they are."""
    try:
        services = lv.live_store.services(path)
    except InputError as err:
        st.info(ctxui.md_escape(f"{ctxui.one_line(err)}."), icon=":material/sensors_off:")
        st.button("Refresh", key="live.refresh0", icon=":material/refresh:")
        return
    svc_col, text_col, btn_col = st.columns([1, 2, 1], vertical_alignment="bottom")
    service = svc_col.selectbox("Service", [""] + services, key="live.service", format_func=lambda s: s or "any")
    text = text_col.text_input("Search the spans", key="live.text", placeholder="a phrase of the query, a doc id…")
    btn_col.button("Refresh", key="live.refresh", icon=":material/refresh:")
    runs = lv.live_store.runs(path, service=service, text=text, limit=lv.SHOWN)
    if not runs:
        st.info("No run matches yet." if (service or text) else "No run received yet.", icon=":material/hourglass:")
        return
    table = lv.frame(runs, path)
    st.dataframe(table, hide_index=True, width="stretch", key="live.table")
    ids = [r.trace_id for r in runs]
    labels = dict(zip(ids, (f"{row['received']} · {row['service'] or '?'} · {row['verdict']} · "
                            f"{ctxui.one_line(row['query'])[:60]}" for _, row in table.iterrows())))
    if ss.get("live.pick") not in ids:
        ss["live.pick"] = ids[0]
    tid = st.selectbox("Run", ids, key="live.pick", format_func=lambda t: labels.get(t, t))
    show_run(tid)


def show_run(tid: str) -> None:
    name, data = lv.run_bytes(tid, path)
    s = lv.summarise(name, data, tid)
    if s.note:
        st.error(ctxui.md_escape(s.note), icon=":material/error:")
    a, b, c, d = st.columns(4)
    a.metric("Verdict", s.verdict)
    b.metric("Documents", s.documents)
    c.metric("Passages sent", s.sent)
    d.metric("Model", s.model or "(none logged)")
    st.text(f"Query: {s.query}")
    st.text(f"Answer: {s.answer}")
    loaded = lv._load_trace(name, data, tid) if not s.note else None
    if loaded is not None:
        st.dataframe([{"id": c.id, "score": c.score, "text": c.text} for c in loaded.candidates],
                     hide_index=True, width="stretch", key="live.docs")
        if loaded.logged is not None and loaded.logged.prompt_text:
            with st.expander("Prompt as sent"):
                st.code(loaded.logged.prompt_text, language=None, wrap_lines=True)
    one, two, three = st.columns(3)
    if one.button("Open in Diagnose", key="live.diagnose", icon=":material/troubleshoot:"):
        ss["live.go"] = (tid, "Diagnose")
        st.rerun(scope="app")
    if two.button("Open in Debugger", key="live.debugger", icon=":material/bug_report:"):
        ss["live.go"] = (tid, "Debugger")
        st.rerun(scope="app")
    if three.button("Save as a case", key="live.save", icon=":material/bookmark_add:"):
        try:
            ss["live.saved"] = lv.save_run(tid, f"live run {tid[:8]} · {s.query[:60]}")
        except (ctxui.casestore.CaseError, OSError, ctxui.casestore.sqlite3.Error, InputError) as err:
            st.error(ctxui.md_escape(f"The case was not saved: {ctxui.one_line(err)}"), icon=":material/error:")
    if ss.get("live.saved"):
        st.success(ctxui.md_escape(f"Saved as case {ss['live.saved']}: open it from Saved cases."),
                   icon=":material/check:")


runs_view()
