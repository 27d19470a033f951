"""Diagnose: from a logged trace to the root cause — findings, what the model did not see, the answer."""

import json

import pandas as pd
import streamlit as st

import ctxui
from ctxcore.answer import check_answer
from ctxcore.explain import explain_text, findings
from ctxcore.reach import logged_vs_replay

st.title("Diagnose a wrong answer", anchor=False)
st.caption("Load the production trace (a ctxcore trace, a Phoenix/OpenInference export, or a Langfuse trace), "
           "paste the answer, and see what the model did not see and why. Every fix below was checked by "
           "re-running the engine.")

loaded = ctxui.loaded_input()
query = ctxui.query_input()
trace = ctxui.safe_build(st.session_state["ctx.key"], loaded, query)
if trace is None:
    st.stop()

logged = loaded.extra.get("logged") or {}
logged_prompt = logged.get("prompt_text") or (loaded.trace.prompt.text if loaded.trace is not None else None)
for note in loaded.warnings:
    st.info(ctxui.md_escape(note), icon=":material/info:")

answer = st.text_area("The model's answer (citations like [S2] are checked against the prompt)",
                      value=logged.get("answer") or "", key=f"dx.answer.{st.session_state['ctx.key'][:16]}",
                      height=110)


@st.cache_data(show_spinner="Re-running the engine to verify each fix…", max_entries=32)
def _diagnose(key: str, config_json: str, query: str, answer: str, logged_tokens, logged_prompt, _trace):
    checks = check_answer(_trace, answer, logged_prompt) if answer.strip() else []
    return checks, findings(_trace, answer_checks=checks, logged_prompt_tokens=logged_tokens,
                            logged_prompt=logged_prompt)


config_json = json.dumps(trace.config.to_dict(), sort_keys=True)
checks, found = _diagnose(st.session_state["ctx.key"], config_json, trace.query, answer,
                          logged.get("prompt_tokens"), logged.get("prompt_text"), trace)

st.subheader("Findings", anchor=False)
if not found:
    st.success("Nothing in this context looks like the cause of a wrong answer.", icon=":material/check:")
SEVERITY = {3: "likely cause", 2: "worth fixing", 1: "note"}
for i, f in enumerate(found):
    with st.container(border=True):
        head, act = st.columns([4, 1], vertical_alignment="center")
        head.markdown(f"**{SEVERITY[f.severity]}** · {ctxui.md_escape(f.title)}")
        head.text(f.evidence)
        if f.fix:
            act.caption(("verified fix" if f.fix_verified else "suggested, not verified") + ": "
                        + ctxui.md_escape(", ".join(f"{k}={v}" for k, v in f.fix.items())))
            act.button("Apply", key=f"dx.fix.{i}", on_click=ctxui.apply_config,
                       args=({**trace.config.to_dict(), **f.fix},), help="Set the sidebar controls to this fix")

st.subheader("What did the model not see?", anchor=False)
needle = st.text_input("A phrase or number from the right answer, e.g. 650 EUR or 30 days", key="dx.find")
if needle.strip():
    rows = explain_text(trace, needle)
    if not rows:
        st.info("No candidate contains that text: retrieval never returned it, so no setting here can help.",
                icon=":material/search_off:")
    else:
        st.dataframe(pd.DataFrame([{
            "id": e.id, "fate": e.fate, "stage": e.stage, "why": f"{e.note}. {e.reason}",
            "fix": json.dumps(e.fix) if e.fix else "", "verified": e.fix_verified} for e in rows]),
            hide_index=True, width="stretch",
            column_config={"why": st.column_config.TextColumn(width="large"),
                           "verified": st.column_config.CheckboxColumn()})

if answer.strip():
    st.subheader("The answer, claim by claim", anchor=False)
    st.dataframe(pd.DataFrame([{"kind": c.kind, "verdict": c.verdict, "claim": c.claim, "detail": c.detail}
                               for c in checks], columns=["kind", "verdict", "claim", "detail"]),
                 hide_index=True, width="stretch",
                 column_config={"detail": st.column_config.TextColumn(width="large")})

if logged_prompt:
    st.subheader("Logged prompt versus replay", anchor=False)
    diff = logged_vs_replay(trace, logged_prompt)
    frame = pd.DataFrame([{"id": d.id, "sent (logged)": d.logged, "order sent": d.logged_order,
                           "replay fate": d.replay, "replay position": d.replay_position,
                           "difference": d.change} for d in diff])
    for column in ("order sent", "replay position"):  # blank, not None, where there is no place
        frame[column] = frame[column].astype("Int64")
    st.dataframe(frame, hide_index=True, width="stretch")
    left, right = st.columns(2)
    with left:
        tokens = logged.get("prompt_tokens")
        st.caption("Logged prompt (what was sent)" + (f" · {tokens:,} tokens as logged" if tokens else ""))
        st.code(logged_prompt, language=None, wrap_lines=True, height=420)
    with right:
        st.caption(f"Replay under the current controls · {trace.prompt.tokens:,} tokens")
        st.code(trace.prompt.text, language=None, wrap_lines=True, height=420)
