"""Compare: the same input under two settings, side by side, and exactly what changed between them."""

import streamlit as st

import ctxui

st.title("Compare two settings side by side", anchor=False)
st.caption("The input loaded in the debugger (or the first sample scenario), built twice. "
           "Every number and every fate on this page comes from the ctxcore engine.")

loaded = ctxui.ensure_loaded()
ctxui.sidebar_controls()
if loaded is None:
    st.info("No input yet: pick a sample scenario or upload a file on the Debugger page.")
    st.stop()

ctxui.input_banner()  # which input (or saved case) both sides are built from
ss = st.session_state
logged_prompt = ctxui.logged_prompt_text(loaded)
options = ctxui.preset_options(loaded, logged_prompt)
ctxui.link_warning(ctxui.read_side_links(options))

ctxui.scenario_header(loaded)
if not ss.get("ctx.sample"):
    st.caption("This input is an uploaded file: a link to this page carries the settings only.")
query = ctxui.store()["query"]
st.text(f"Question: {query}" if query else "Question: (none)")

left, right = st.columns(2, gap="large")
choices = {"a": ctxui.side_choice("a", left, options), "b": ctxui.side_choice("b", right, options)}
ctxui.set_page_params({k: ss[f"cmp.{k}.choice"] for k in ctxui.SIDE_DEFAULTS
                       if ss[f"cmp.{k}.choice"] != ctxui.SIDE_DEFAULTS[k]})
built = {k: ctxui.side_trace(choice, loaded, ss["ctx.key"], query) for k, choice in choices.items()}
axis = ctxui.shared_right(built, loaded, logged_prompt)  # one axis for both maps
sides = {}
for name, column in (("a", left), ("b", right)):
    with column:
        sides[name] = ctxui.render_side(name, choices[name], built, loaded, logged_prompt, axis)
trace_a, trace_b = sides["a"], sides["b"]
if trace_a is None or trace_b is None:
    st.stop()
st.caption(ctxui.map_scale_note([trace_a, trace_b], axis) + " Both maps share this axis.")
st.session_state["cmp.traces"] = (trace_a, trace_b)  # for tests
names = ("A", "B")
name_a = f"A ({ctxui.PRESET_LABELS[choices['a']].lower()})"
name_b = f"B ({ctxui.PRESET_LABELS[choices['b']].lower()})"
if "sent" in choices.values():
    ctxui.sent_comparison(choices, trace_a, trace_b, logged_prompt)
    st.stop()

st.subheader("Fates that differ", anchor=False)
changes = ctxui.fate_changes(trace_a, trace_b)
if len(changes):
    st.caption(f"{len(changes)} of {len(trace_a.decisions)} candidates end differently under "
               f"{name_a} and {name_b}.")
    ctxui.changes_table(changes, names, key="cmp.changes")
else:
    st.caption("Every candidate has the same fate under both settings.")
moved = ctxui.moved_passages(trace_a, trace_b)
if len(moved):
    st.caption(f"{len(moved)} passage{'s are' if len(moved) != 1 else ' is'} kept by both but "
               f"sit{'' if len(moved) != 1 else 's'} at a different place in the prompt:")
    ctxui.moved_table(moved, names, key="cmp.moved")

totals_col, settings_col = st.columns([3, 2], gap="large")
with totals_col:
    st.subheader("Token totals", anchor=False)
    totals = ctxui.totals_frame({"A": trace_a, "B": trace_b})
    st.dataframe(totals, hide_index=True, width="stretch", key="cmp.totals", height=38 + 35 * len(totals))
with settings_col:
    st.subheader("Settings that differ", anchor=False)
    diff = ctxui.settings_changes(trace_a.config, trace_b.config)
    if len(diff):
        st.dataframe(diff, hide_index=True, width="stretch", key="cmp.settings")
    else:
        st.caption("Both sides use the same settings.")

st.subheader("The two prompts, line by line", anchor=False)
if trace_a.prompt.text == trace_b.prompt.text:
    st.caption("The two prompts are identical.")
else:
    st.caption("Lines starting with - are only in prompt A, lines starting with + only in prompt B "
               "(a unified diff of the exact prompt text, two lines of context).")
    st.code(ctxui.prompt_diff(trace_a.prompt.text, trace_b.prompt.text, names), language="diff",
            wrap_lines=True, height=520)
