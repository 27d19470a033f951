"""Learn: a walk through context construction, one stage per step, each live on a sample scenario.

Every step has one control of its own (not the sidebar's) and compares two builds made by ctxcore:
*before* (the stage off, or at its naive value) and *after* (the control's value). The step is kept in
the address (``?step=k``, and ``lv=`` for the control when it is not at its starting value). The steps are
in ``ctxui.steps``, what each shows best in ``ctxui.lessons``.
"""

import streamlit as st

import ctxcore
import ctxui

STEPS, N = ctxui.STEPS, ctxui.N_STEPS

ctxui.init_state()
ss = st.session_state
ss.setdefault("learn.step", 1)
ss.setdefault("learn.values", {})
ctxui.link_warning(ctxui.read_step_link())

k = min(max(int(ss["learn.step"]), 1), N)
step = STEPS[k - 1]

st.title("Learn context construction, one stage at a time", anchor=False)
st.progress(k / N, text=f"Step {k} of {N} · {step.title}")
stages = " → ".join(f"**{s.key}**" if i == k else s.key for i, s in enumerate(STEPS, 1))
st.caption(stages)

ss["learn.jump"] = k


def _jump() -> None:
    ss["learn.step"] = int(ss["learn.jump"])


def _go(delta: int) -> None:
    ss["learn.step"] = min(max(int(ss["learn.step"]) + delta, 1), N)


st.header(f"{k}. {step.title}", anchor=False)
st.markdown(step.text)

key, loaded = ctxui.load_named_sample(step.scenario)
scenario = ctxui.scenario_info(loaded)
title = scenario.get("title") or loaded.source
st.caption(ctxui.md_escape(f"Live on the sample scenario “{title}” ({loaded.source}). "
                           f"The question: {loaded.query}"))

values = ss["learn.values"]
value = values.get(step.key, step.default)
if value not in step.options:
    value = step.default
wkey = f"learn.{step.key}"
if wkey not in ss:
    ss[wkey] = value
with st.container(border=True):
    control_col, note_col = st.columns([2, 3], gap="large", vertical_alignment="center")
    with control_col:
        if step.widget == "select_slider":
            value = st.select_slider(step.label, step.options, key=wkey, format_func=str)
        elif step.widget == "toggle":
            value = st.toggle(step.label, key=wkey)
        elif step.widget == "radio":
            value = st.radio(step.label, step.options, key=wkey)
        else:
            value = st.selectbox(step.label, step.options, key=wkey)
        values[step.key] = value
    try:
        before, after = ctxui.build_step(step, step.before), ctxui.build_step(step, value)
    except (ctxcore.InputError, ctxcore.BuildError) as err:
        st.error(ctxui.md_escape(str(err)), icon=":material/error:")
        st.stop()
    with note_col:
        st.markdown(ctxui.md_escape(f"Before: {step.words(step.before)} — kept {ctxui.kept_count(before)}, "
                                    f"prompt {before.prompt.tokens:,} tokens"))
        st.markdown(ctxui.md_escape(f"After: {step.words(value)} — kept {ctxui.kept_count(after)}, "
                                    f"prompt {after.prompt.tokens:,} tokens"))
    ctxui.change_metrics(before, after, step.words(step.before), step.words(value))
ss["learn.traces"] = (before, after)  # for tests
ctxui.set_page_params({"step": k, "lv": None if value == step.default else ctxui.encode_step_value(value)})

names = ("before", "after")
if step.key == "ordering":  # here the picture is the point; the table of moves follows it
    ctxui.show_ordering(step, value, before, after)
changes = ctxui.fate_changes(before, after)
moved = ctxui.moved_passages(before, after)
if value == step.before:
    st.info("The control is at the *before* value: move it to see what this stage changes.",
            icon=":material/touch_app:")
elif len(changes):
    st.subheader("Fates that changed", anchor=False)
    ctxui.changes_table(changes, names, key="learn.changes")
if len(moved):
    st.subheader("Passages that moved", anchor=False)
    ctxui.moved_table(moved, names, key="learn.moved")
if value != step.before and not len(changes) and not len(moved):
    st.caption("No fate and no position changed; only the token numbers above did.")

ctxui.STEP_VIEWS[step.key](step, value, before, after)

if not step.variant and st.button("Open this step in the debugger", key="learn.open", icon=":material/bug_report:",
                                  help="Load this scenario in the debugger with the after settings."):
    path = ctxui.sample_path(step.scenario)
    if path is not None and ctxui.use_sample(path):
        ctxui.apply_config(after.config.to_dict(), loaded.source)
        st.switch_page("pages/debugger.py")

st.divider()
prev_col, jump_col, next_col = st.columns([1, 2, 1], vertical_alignment="bottom")
prev_col.button("Previous", key="learn.prev", on_click=_go, args=(-1,), disabled=k == 1,
                icon=":material/arrow_back:", width="stretch")
jump_col.selectbox("Go to step", list(range(1, N + 1)), key="learn.jump", on_change=_jump,
                   format_func=lambda i: f"{i}. {STEPS[i - 1].title}")
next_col.button("Next", key="learn.next", on_click=_go, args=(1,), disabled=k == N, icon=":material/arrow_forward:",
                icon_position="right", type="primary", width="stretch")
