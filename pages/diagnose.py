"""Diagnose: the prompt that was actually sent, its root cause first (tied to the answer, with a verified fix),
the notes apart, the sent prompt marked beside the replay, and what the model did not see."""

import streamlit as st

import ctxui

st.title("Diagnose a wrong answer", anchor=False)
st.caption("Load the production trace (a ctxcore trace, a Phoenix/OpenInference export, or a Langfuse trace). "
           "The prompt that was sent is the evidence; the replay is the counterfactual: every fix below was "
           "checked by re-running the engine on the same candidates.")

ctxui.open_from("dx")  # a trace fetched from Phoenix, MLflow, Langfuse or LangSmith
loaded = ctxui.loaded_input(about=False)  # the root cause first; the file's details at the end
ctxui.input_banner()  # which input (or saved case) the root cause below belongs to
key = st.session_state["ctx.key"]
if ctxui.open_in_failure_state(key, loaded):  # a sample opens in its failure state, so it shows its root cause
    st.rerun()
query = ctxui.query_input()
trace = ctxui.safe_build(key, loaded, query)
if trace is None:
    st.stop()

if ctxui.open_in_policy(key, loaded, trace):  # an imported run: the controls start as its pipeline's policy
    st.rerun()
logged = ctxui.logged_of(loaded)
answer_key = f"dx.answer.{key[:16]}"
answer = st.session_state.get(answer_key, logged.answer or "")
evidence = ctxui.failure_trace(key, loaded, query)  # a sample: its failure state is what was "sent"
dx = ctxui.run_diagnosis(key, trace, answer, logged, ctxui.model_limit(loaded), evidence)
root = dx.root
applied = st.session_state.get("dx.applied")

# --- the logged pipeline's own rules, read off what it retrieved and sent: the ground every fix is worded on ----
heading, rule_lines, cannot = ctxui.pipeline_rules(key, trace)
if rule_lines:
    st.markdown(f"**{heading}**")
    st.markdown("\n".join(f"- {line}" for line in rule_lines))
    if cannot:
        st.caption("The replay cannot reproduce: " + "; ".join(cannot))

# --- the root cause, above the fold: one sentence, the decisive passage, the verified fix ------------------
st.subheader("Root cause", anchor=False)
if root is None:
    st.success("Nothing in the prompt that was sent looks like the cause of a wrong answer.", icon=":material/check:")
else:
    with st.container(border=True):
        st.markdown(f"**{ctxui.md_escape(root.title)}**")
        st.caption(ctxui.md_escape(root.evidence))
        passage = ctxui.decisive_text(trace, root)
        if passage:
            st.caption(f"The decisive passage, {ctxui.md_escape(passage[0])}:")
            st.text(passage[1])
        for consequence in root.folded:
            st.markdown(f"- {ctxui.md_escape(consequence)}")
        if root.fix or root.fix_said:
            left, right = st.columns([4, 1], vertical_alignment="center")
            left.markdown(f"**{ctxui.fix_label(root)}**: " + ctxui.md_escape(ctxui.fix_text(root)))
            left.caption(ctxui.md_escape(root.technical))
            if root.proof:
                left.caption(ctxui.md_escape(root.proof))
            if root.fix:
                right.button("Apply", key="dx.fix.root", type="primary", on_click=ctxui.apply_fix,
                             args=(ctxui.fix_controls(trace, root), root.fix, root.kind, root.ids),
                             help="Set the controls to this fix and show the passage before and after")
        elif root.proof:
            st.caption(ctxui.md_escape(root.proof))
        if root.resolved or (applied and applied.get("kind") == root.kind and tuple(applied["ids"]) == root.ids):
            ba = ctxui.before_after(trace, dx, root)
            st.markdown(("**Resolved in the replay.** " if ba["resolved"] else "**Not resolved yet.** ")
                        + ctxui.md_escape(f"{ba['id']}: before, {ba['before']}; after, {ba['after']}."))
            b, a = st.columns(2)
            b.metric(f"Before: {ba['id']} in the prompt that was sent", ba["before_short"])
            a.metric(f"After: {ba['id']} in the replay", ba["after_short"])
            was, now = ctxui.passage_texts(trace, dx, root)
            b.caption("The passage as the model read it:")
            b.text(was)
            a.caption("The passage in the replay:")
            a.text(now)

others = [f for f in dx.causes[1:]]
if others:
    st.subheader("Other causes", anchor=False)
    for i, f in enumerate(others):
        with st.container(border=True):
            head, act = st.columns([4, 1], vertical_alignment="center")
            head.markdown(f"**{ctxui.SEVERITY[f.severity]}** · {ctxui.md_escape(f.title)}"
                          + (" · resolved in the replay" if f.resolved else ""))
            head.text(f.evidence)
            if f.fix or f.fix_said:
                act.caption(f"{ctxui.fix_label(f)}: " + ctxui.md_escape(ctxui.fix_text(f)))
            if f.fix:
                act.button("Apply", key=f"dx.fix.{i}", on_click=ctxui.apply_fix,
                           args=(ctxui.fix_controls(trace, f), f.fix, f.kind, f.ids),
                           help="Set the controls to this fix")

answer = st.text_area("The model's answer (citations are checked against the prompt that was sent)",
                      value=logged.answer or "", key=answer_key, height=110)

if dx.notes:
    with st.expander(f"Notes ({len(dx.notes)}): consequences and context, not causes", expanded=root is None):
        for f in dx.notes:
            st.markdown(f"**{ctxui.SEVERITY[f.severity]}** · {ctxui.md_escape(f.title)}")
            st.text(f.evidence)
        if dx.unproved:
            st.caption(f"{dx.unproved} more retrieved passages were not sent; counted, not verified one by one.")

# --- the sent prompt, each passage marked, beside the replay ---------------------------------------------
st.subheader("The prompt that was sent, beside the replay", anchor=False)
sent = dx.sent
st.caption(f"{'Logged prompt' if sent.source == 'logged' else 'The failure-state prompt' if evidence else 'The prompt of these settings'}: "
           f"{len(sent.passages)} passages, {sent.evidence_tokens:,} evidence tokens, {sent.prompt_tokens:,} "
           f"tokens recounted against a limit of {(ctxui.model_limit(loaded) or sent.limit):,}"
           + ("" if sent.question_present else "; the question is missing"))
ctxui.readable_table(ctxui.sent_passages_frame(dx), key="dx.sent_table", reason="marks",
                     column_config={"share sent": st.column_config.ProgressColumn(min_value=0.0, max_value=1.0,
                                                                                  format="percent")})
logged_prompt = ctxui.logged_prompt_text(loaded)
left, right = st.columns(2)
with left:
    tokens = logged.prompt_tokens
    st.caption(("Logged prompt (what was sent)" if logged_prompt else
                "The scenario's failure state (its naive settings)" if evidence is not None else
                "Prompt under the current controls") + (f" · {tokens:,} tokens as logged" if tokens else ""))
    st.code(logged_prompt or (evidence or trace).prompt.text, language=None, wrap_lines=True, height=420)
with right:
    st.caption(f"Replay under the current controls · {trace.prompt.tokens:,} tokens")
    st.code(trace.prompt.text, language=None, wrap_lines=True, height=420)

st.subheader("What did the model not see?", anchor=False)
needle = st.text_input("A phrase or number from the right answer, e.g. 650 EUR or 30 days", key="dx.find")
if needle.strip():
    rows = ctxui.explain_frame(trace, needle, logged.prompt_text)
    if not len(rows):
        st.info("No candidate contains that text: retrieval never returned it, so no setting here can help.",
                icon=":material/search_off:")
    else:
        if len(rows) >= ctxui.SEARCH_LIMIT:
            st.caption(f"The {ctxui.SEARCH_LIMIT} strongest candidates containing it; narrow the phrase to see others.")
        ctxui.readable_table(rows, key="dx.find_table", reason="why",
                             column_config={"verified": st.column_config.CheckboxColumn()})

if answer.strip():
    st.subheader("The answer, claim by claim", anchor=False)
    ctxui.readable_table(ctxui.claims_frame(dx.checks), key="dx.claims_table", reason="detail")

if logged_prompt:
    st.subheader("Logged prompt versus replay", anchor=False)
    ctxui.readable_table(ctxui.replay_frame(trace, logged_prompt, dx), key="dx.replay_table")

ctxui.save_case_box(loaded, page="diagnose")
ctxui.about_panel()
