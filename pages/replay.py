"""Replay a log: every run of a trace log rebuilt under new settings — what changes, what it costs, what breaks."""

import streamlit as st

import ctxui
from ctxcore import InputError
from ctxui import replay as rp

st.title("Replay a log under new settings", anchor=False)
st.caption("Every run of a trace log is built again under the new settings and compared with what was logged "
           "(the prompt that was sent, or the trace's own decisions). Every number here comes from ctxcore.")

ctxui.sidebar_controls()
ss = st.session_state

log_col, settings_col = st.columns(2, gap="large")
with log_col:
    source = st.radio("Log", ["Sample log", "Upload a log"], key="rp.source", horizontal=True)
    upload = None
    if source == "Upload a log":
        upload = st.file_uploader("A JSONL of traces, a span export of many runs, or one trace",
                                  type=["json", "jsonl", "csv"], key="rp.upload")
    else:
        st.caption(f"{rp.SAMPLE_LOG.name}: 30 logged runs of a support assistant.")
with settings_col:
    which = st.radio("New settings", ["The sidebar's", "Upload a settings JSON"], key="rp.which", horizontal=True)
    settings_file = None
    if which != "The sidebar's":
        settings_file = st.file_uploader("Settings JSON", type=["json"], key="rp.settings")

try:
    new = rp.sidebar_settings() if settings_file is None else rp.settings_upload(settings_file.name,
                                                                                   settings_file.getvalue())
except InputError as err:
    st.error(ctxui.md_escape(str(err)), icon=":material/error:")
    st.stop()
if which != "The sidebar's" and settings_file is None:
    st.info("Upload a settings JSON to replay under it.")
    st.stop()
st.caption("New settings: " + ctxui.md_escape(", ".join(f"{k}={v}" for k, v in new.items())))

paths = [str(rp.SAMPLE_LOG)] if source == "Sample log" else []
uploaded = (upload.name, upload.getvalue()) if upload is not None else None  # a temporary file for the run only
if st.button("Replay", type="primary", key="rp.run", disabled=not (paths or uploaded)):
    rp.run(paths, new, upload=uploaded)

result = ss.get(rp.RESULT)
if result is None:
    st.stop()
report = result["report"]
cols = st.columns(5)
cols[0].metric("Runs replayed", f"{report['runs']:,}")
cols[1].metric("Changed", f"{report['changed']:,}")
cols[2].metric("Cited passage lost", f"{report['regression_count']:,}")
cols[3].metric("Prompt tokens saved", f"{report['tokens']['saved_total']:,}")
cols[4].metric("Unreadable", f"{report['unreadable_count']:,}")

st.subheader("Likely regressions", anchor=False)
st.caption("Runs where a passage the logged answer cited would no longer be in the prompt.")
regressions = rp.regressions_frame(result)
if len(regressions):
    ctxui.readable_table(regressions, key="rp.regressions")
else:
    st.success("Every passage a logged answer cited is still in its prompt.", icon=":material/check:")

chart_a, chart_b = st.columns(2, gap="large")
chart_a.plotly_chart(rp.tokens_chart(result), width="stretch", key="rp.tokens")
if report["fate_moves"]:
    chart_b.plotly_chart(rp.fates_chart(report), width="stretch", key="rp.fates")
else:
    chart_b.caption("No candidate's fate moved.")
if report["unreadable"]:
    st.subheader("Unreadable runs", anchor=False)
    ctxui.readable_table(rp.unreadable_frame(report), key="rp.unreadable", reason="reason")

st.subheader("Open a run", anchor=False)
choices = rp.run_choices(result)
if choices:
    index = st.selectbox("Run", choices, key="rp.pick", format_func=lambda i: rp.run_label(result, i))
    debug_col, compare_col = st.columns(2)
    if debug_col.button("Open in the Debugger (new settings in the sidebar)", key="rp.debugger"):
        rp.open_run(result, index, "pages/debugger.py")
    if compare_col.button("Compare its baseline with the new settings", key="rp.compare"):
        rp.open_run(result, index, "pages/compare.py")
