"""Budget calculator: how a context window splits into answer, margin, fixed blocks, history and docs."""

import streamlit as st

import ctxcore
import ctxui

st.title("Budget calculator", anchor=False)
st.caption("Reserve the answer, take the safety margin off, subtract the blocks that are always there, "
           "then split the rest between history and documents. The docs figure is a ceiling, not a target.")

left, right = st.columns([1, 2])
with left:
    ctxui.tokenizer_select("bud")
    ctxui.window_controls("bud")
    last_fixed = st.session_state.get("ctx.last_fixed")
    ctxui.bound(st.number_input, "fixed", "bud.fixed", "Fixed blocks (tokens)", min_value=0, step=1,
                help="System, instructions, schemas, tools, the grounding rule and the question.")
    if last_fixed is not None:
        st.button(f"Use the debugger's fixed blocks ({last_fixed} tokens)", key="bud.use_fixed",
                  on_click=ctxui.apply_controls, args=({"fixed": last_fixed},))
    with st.expander("Count the tokens of a fixed block"):
        sample = st.text_area("Paste a system prompt, schema or tool definition", key="bud.sample_text")
        if sample:
            encoding, n, exact = ctxui.count_block_tokens(sample)
            st.metric(f"Tokens ({encoding}{'' if exact else ', approximate'})", n)

s = ctxui.store()
with right:
    try:
        b = ctxui.store_budget()
    except ctxcore.InputError as err:
        st.error(ctxui.md_escape(str(err)), icon=":material/error:")
        st.stop()
    if b.docs < 0:
        st.error(f"The fixed blocks ({b.fixed:,} tokens) are larger than the safe input ({b.safe_input:,} tokens): "
                 "nothing is left for history or documents.", icon=":material/error:")
    cols = st.columns(3)
    cols[0].metric("Safe input", f"{b.safe_input:,}")
    cols[1].metric("History", f"{b.history:,}")
    cols[2].metric("Docs budget", f"{b.docs:,}")
    st.plotly_chart(ctxui.budget_waterfall(b), width="stretch", key="bud.waterfall")
    if b.history_auto:
        history = (f"history (auto) = what the kept turns use, at most ⌊({b.safe_input:,} − {b.fixed:,}) × 0.4⌋ = "
                   f"{b.history_cap:,}: {b.history:,} here, where no conversation is given")
    else:
        history = f"history = ⌊({b.safe_input:,} − {b.fixed:,}) × {s['history_share']:g}⌋ = {b.history:,}"
    st.caption(f"safe input = ⌊({b.window:,} − {b.max_output:,}) × (1 − {b.safety:g})⌋ = {b.safe_input:,}; "
               f"{history}; docs = {b.safe_input:,} − {b.fixed:,} − {b.history:,} = {b.docs:,}")
