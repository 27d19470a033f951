"""Debugger: pick a scenario or upload candidates/a trace, move the controls, see every fate."""

import streamlit as st

import ctxui

st.title("Context construction debugger", anchor=False)
st.caption("Which retrieved chunks reached the prompt, which were dropped, and why. "
           "Every decision on this page comes from the ctxcore engine.")

headline = ctxui.headline_first("debugger")  # a session's first run sends the headline alone (ctxui.firstpaint)
if headline:  # the controls come with the full run; empty space holds their place
    ctxui.gap(ctxui.OPEN_FROM_GAP)
    ctxui.gap(ctxui.INPUT_GAP)
    loaded = st.session_state["ctx.loaded"]
else:
    ctxui.open_from("dbg")  # a trace fetched from Phoenix, MLflow, Langfuse or LangSmith
    loaded = ctxui.loaded_input()
ctxui.input_banner()  # which input (or saved case) every result below belongs to

ctxui.scenario_header(loaded)
ctxui.scenario_story(loaded)
if headline:
    ctxui.gap(ctxui.QUERY_GAP)
    query = ctxui.store()["query"]  # what the query box shows on its first run
else:
    query_col, buttons_col = st.columns([3, 2], vertical_alignment="bottom")
    with query_col:
        query = ctxui.query_input()
    with buttons_col:
        ctxui.settings_buttons(loaded)

trace = ctxui.safe_build(st.session_state["ctx.key"], loaded, query)
st.session_state["ctx.trace"] = trace  # for other pages (and tests)
if trace is None:
    if headline:  # the error needs the controls to be fixed: the full run shows both
        st.rerun()
    st.stop()
st.session_state["ctx.last_fixed"] = trace.budget.fixed
logged_prompt = ctxui.logged_prompt_text(loaded)
recorded = trace is loaded.trace  # the controls equal a saved trace's settings: it is shown, not rebuilt
view = ctxui.view_mode(logged_prompt, recorded)  # "replay", or "sent" for the logged prompt as it was sent
if loaded.trace is not None and view == "replay":
    st.caption("Showing the logged trace as recorded; change a control or the query to replay it."
               if recorded else "Replayed with the current settings (they or the query differ "
               "from the logged trace).")

if view == "sent":
    ctxui.sent_view(trace, ctxui.logged_of(loaded), logged_prompt)
    ctxui.spans_panel(ctxui.logged_of(loaded))
    st.subheader("The replay under the current controls", anchor=False)

ctxui.metrics(trace)
ctxui.warnings_list(trace)
ctxui.paint_headline_first("debugger")  # the headline paints before the heavy elements are sent

map_title, map_scale = st.columns([3, 1], vertical_alignment="bottom")
map_title.subheader("Where each block sits in the prompt", anchor=False)
scale = map_scale.selectbox("Map scale", ctxui.MAP_SCALES, key="dbg.map_scale", format_func=ctxui.map_scale_label,
                            help="auto fits the axis to the prompt (it moves only when the prompt crosses a step); "
                                 "the safe input and a fixed number of tokens stay put while you move the controls.")
right = ctxui.map_right([trace], scale)
st.plotly_chart(ctxui.prompt_map(trace, right=right), width="stretch", key="dbg.map")
st.caption(ctxui.map_scale_note([trace], right))

st.subheader("Fates", anchor=False)
shown = ctxui.fates_table(trace)
with st.expander("Candidate detail", expanded=True):
    ctxui.detail_view(trace, shown)

st.subheader("Kept passages: position vs. score", anchor=False)
st.caption("A high-scoring passage in the shaded middle is the one a model is most likely to overlook.")
st.plotly_chart(ctxui.position_chart(trace), width="stretch", key="dbg.positions")

st.subheader("The prompt", anchor=False)
prompt_tab, bars_tab = st.tabs(["Final prompt (exact text)", "Token bars per block"])
with prompt_tab:
    ctxui.prompt_view(trace)
with bars_tab:
    ctxui.token_bars(trace)
    ctxui.token_boundaries(trace)

if logged_prompt and view != "sent":
    ctxui.spans_panel(ctxui.logged_of(loaded))

st.subheader("Download and save", anchor=False)
ctxui.downloads(trace, loaded)
ctxui.save_case_box(loaded, page="debugger")
