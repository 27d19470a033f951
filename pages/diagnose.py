"""Diagnose: from a logged trace to the root cause — findings, what the model did not see, the answer."""

import streamlit as st

import ctxui

st.title("Diagnose a wrong answer", anchor=False)
st.caption("Load the production trace (a ctxcore trace, a Phoenix/OpenInference export, or a Langfuse trace), "
           "paste the answer, and see what the model did not see and why. Every fix below was checked by "
           "re-running the engine.")

loaded = ctxui.loaded_input()
query = ctxui.query_input()
trace = ctxui.safe_build(st.session_state["ctx.key"], loaded, query)
if trace is None:
    st.stop()

logged = ctxui.logged_of(loaded)
logged_prompt = ctxui.logged_prompt_text(loaded)
for note in loaded.warnings:
    st.info(ctxui.md_escape(note), icon=":material/info:")

answer = st.text_area("The model's answer (citations like [S2] are checked against the prompt)",
                      value=logged.answer or "", key=f"dx.answer.{st.session_state['ctx.key'][:16]}",
                      height=110)

checks, found = ctxui.diagnose(st.session_state["ctx.key"], trace, answer, logged)

st.subheader("Findings", anchor=False)
if not found:
    st.success("Nothing in this context looks like the cause of a wrong answer.", icon=":material/check:")
for i, f in enumerate(found):
    with st.container(border=True):
        head, act = st.columns([4, 1], vertical_alignment="center")
        head.markdown(f"**{ctxui.SEVERITY[f.severity]}** · {ctxui.md_escape(f.title)}")
        head.text(f.evidence)
        if f.fix:
            act.caption(("verified fix" if f.fix_verified else "suggested, not verified") + ": "
                        + ctxui.md_escape(", ".join(f"{k}={v}" for k, v in f.fix.items())))
            act.button("Apply", key=f"dx.fix.{i}", on_click=ctxui.apply_config,
                       args=({**trace.config.to_dict(), **f.fix},), help="Set the sidebar controls to this fix")

st.subheader("What did the model not see?", anchor=False)
needle = st.text_input("A phrase or number from the right answer, e.g. 650 EUR or 30 days", key="dx.find")
if needle.strip():
    rows = ctxui.explain_frame(trace, needle)
    if not len(rows):
        st.info("No candidate contains that text: retrieval never returned it, so no setting here can help.",
                icon=":material/search_off:")
    else:
        st.dataframe(rows, hide_index=True, width="stretch",
                     column_config={"why": st.column_config.TextColumn(width="large"),
                                    "verified": st.column_config.CheckboxColumn()})

if answer.strip():
    st.subheader("The answer, claim by claim", anchor=False)
    st.dataframe(ctxui.claims_frame(checks), hide_index=True, width="stretch",
                 column_config={"detail": st.column_config.TextColumn(width="large")})

if logged_prompt:
    st.subheader("Logged prompt versus replay", anchor=False)
    st.dataframe(ctxui.replay_frame(trace, logged_prompt), hide_index=True, width="stretch")
    left, right = st.columns(2)
    with left:
        tokens = logged.prompt_tokens
        st.caption("Logged prompt (what was sent)" + (f" · {tokens:,} tokens as logged" if tokens else ""))
        st.code(logged_prompt, language=None, wrap_lines=True, height=420)
    with right:
        st.caption(f"Replay under the current controls · {trace.prompt.tokens:,} tokens")
        st.code(trace.prompt.text, language=None, wrap_lines=True, height=420)

ctxui.save_case_box(loaded, page="diagnose")
