"""Learn: a walk through context construction, one stage per step, each live on a sample scenario.

Every step has one control of its own (not the sidebar's) and compares two builds made by ctxcore:
*before* (the stage off, or at its naive value) and *after* (the control's value). The step is kept in
the address (``?step=k``, and ``lv=`` for the control when it is not at its starting value).
"""

from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass, field
from typing import Any, Callable

import pandas as pd
import streamlit as st

import ctxcore
import ctxui


@dataclass(frozen=True)
class Step:
    key: str
    title: str
    scenario: str                       # sample file stem
    text: str                           # why the stage matters (markdown, our own words)
    label: str                          # the control's label
    widget: str                         # select_slider | toggle | radio | selectbox
    options: tuple                      # the control's values
    before: Any                         # the stage off / its naive value
    default: Any                        # where the control starts
    settings: Callable[[Any], dict]     # control value -> Config overrides
    fixed: dict = field(default_factory=dict)  # overrides for both builds (to isolate the stage)
    words: Callable[[Any], str] = str   # control value -> how the page names it
    variant: bool = False               # the control changes the input, not a setting (exact dedup)


def _off(name: str, convert=lambda v: v) -> Callable[[Any], dict]:
    return lambda v: {name: None if v == "off" else convert(v)}


COMPRESSION = {"off": {"compress": False, "max_chunk_tokens": None},
               "on": {"compress": True, "max_chunk_tokens": None},
               "on, cap 150": {"compress": True, "max_chunk_tokens": 150},
               "on, cap 100": {"compress": True, "max_chunk_tokens": 100},
               "on, cap 60": {"compress": True, "max_chunk_tokens": 60}}
SPACED = "the same text plus one trailing space"
IDENTICAL = "byte-identical to the FAQ chunk (as retrieved)"

STEPS: tuple[Step, ...] = (
    Step("budget", "Budget: how much room evidence gets", "03_overflow",
         "Before a single chunk is chosen, the engine works out how many tokens the evidence may take: the "
         "window, minus what is reserved for the answer, minus a safety margin, minus the blocks that are always "
         "there, with a share set aside for history. That number is a ceiling the packer has to respect. Tell "
         "the build the window is bigger than the model's real one and nothing is dropped here — the serving "
         "layer then cuts the end of the prompt without a word, and the section that answers the question sits "
         "near the end.",
         "Context window the build is told about (tokens)", "select_slider", (4096, 8192, 16384, 32768),
         32768, 8192, lambda v: {"window": v}, words=lambda v: f"window {v:,}"),
    Step("tokens", "Token counting: the unit of every budget", "02_buried_in_middle",
         "Budgets are in tokens, and a token is whatever the model's tokenizer says it is — not a word, not four "
         "characters. The engine counts every chunk with the real tokenizer of the chosen model and caches the "
         "count by text, so moving a slider never counts again. Two encodings cut the same text differently, so "
         "a prompt that just fits for one model can overflow for another.",
         "Tokenizer", "selectbox", tuple(ctxcore.ENCODINGS), "cl100k_base",
         "o200k_base" if "o200k_base" in ctxcore.ENCODINGS else ctxcore.ENCODINGS[-1],
         lambda v: {"encoding": v}),
    Step("exact", "Exact duplicates", "01_duplicates_crowd_out",
         "Retrieval often returns the same paragraph from several places. Exact deduplication hashes each "
         "chunk's text (SHA-256) and keeps the best-scored copy, so an identical copy costs nothing. It has no "
         "setting, so the control here changes the input instead: one invisible trailing space is enough for a "
         "copy to slip past the hash — which is why near-duplicate removal exists. (Near-duplicate removal is "
         "off in this step to show exact deduplication alone.)",
         "The help-center copy of the refund paragraph is…", "radio", (IDENTICAL, SPACED), SPACED, IDENTICAL,
         lambda v: {}, fixed={"near_dup": None}, words=lambda v: "identical copy" if v == IDENTICAL
         else "copy with a trailing space", variant=True),
    Step("near", "Near duplicates", "01_duplicates_crowd_out",
         "Copies that differ by a word or two (\"5\" versus \"five\", \"can take\" versus \"may take\") have "
         "different hashes. Near-duplicate removal compares the word sets of the chunks (Jaccard similarity) and "
         "drops the lower-ranked one when the overlap reaches the threshold; the trace names the survivor and the "
         "similarity. Set it too high and rewordings get through; too low and chunks that say different things "
         "start to count as copies.",
         "Near-duplicate threshold", "select_slider", ("off", 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 1.0), "off", 0.8,
         _off("near_dup"), words=lambda v: "near-dedup off" if v == "off" else f"threshold {v}"),
    Step("merge", "Merging adjacent chunks", "08_adjacent_chunks",
         "Documents are cut into chunks, and an answer can run across a cut. With merging on, chunks of the same "
         "document with consecutive chunk numbers become one passage in source order, so a procedure arrives as "
         "steps 1 to 4 instead of as loose fragments ranked apart.",
         "Merge adjacent chunks of a document", "toggle", (False, True), False, True,
         lambda v: {"merge_adjacent": v}, words=lambda v: "merging on" if v else "merging off"),
    Step("stale", "Filters: stale versions", "04_stale_policy",
         "Policies change, and an index often holds the old and the new version side by side. When several "
         "versions of one document are present, the engine keeps the newest and marks the others stale, so the "
         "model never has to choose between two rules that contradict each other.",
         "Prefer the newest version (drop stale ones)", "toggle", (False, True), False, True,
         lambda v: {"prefer_newest": v}, words=lambda v: "stale filter on" if v else "stale filter off"),
    Step("threshold", "Filters: minimum score", "06_unanswerable",
         "A retriever always returns its top results, even when nothing relevant exists. A minimum score drops "
         "the weak candidates; when none is left, the prompt tells the model to say it cannot answer instead of "
         "improvising from loosely related text.",
         "Minimum score", "select_slider", ("off", 0.1, 0.2, 0.3, 0.4, 0.5), "off", 0.5, _off("min_score"),
         words=lambda v: "no threshold" if v == "off" else f"minimum score {v}"),
    Step("selection", "Selection: what fills the budget", "07_density_vs_score",
         "Whatever survives the filters competes for the budget. Greedy by score takes the best chunk first even "
         "when it is long; score per token favours dense chunks and can fit several useful ones into the same "
         "room; MMR trades relevance against repetition. A chunk that does not fit is skipped and the walk goes "
         "on with the next.",
         "Selection", "radio", ("score", "density", "mmr"), "score", "density", lambda v: {"select": v},
         words=lambda v: {"score": "greedy by score", "density": "by score per token", "mmr": "MMR"}[v]),
    Step("ordering", "Ordering: where each passage sits", "02_buried_in_middle",
         "Models read the beginning and the end of a long context more reliably than its middle. Ordering decides "
         "where each chosen passage goes: *sandwich* puts the best first and the second best last, so the weakest "
         "sit in the middle. Nothing is added or dropped here; only positions change.",
         "Order", "selectbox", ("original", "rank", "sandwich", "document"), "original", "sandwich",
         lambda v: {"order": v}, words=lambda v: f"{v} order"),
    Step("compression", "Compression", "07_density_vs_score",
         "Sometimes the useful part of a chunk is two sentences of a long section. Extractive compression keeps "
         "the sentences that share words with the question, verbatim and in their order, and never cuts inside "
         "a sentence, so a long chunk can still fit and a quote from it is still a quote. A per-chunk cap keeps "
         "any one chunk from taking most of the budget.",
         "Compression", "select_slider", tuple(COMPRESSION), "off", "on", lambda v: dict(COMPRESSION[v]),
         words=lambda v: f"compression {v}"),
    Step("labels", "Labels and their cost", "01_duplicates_crowd_out",
         "Every kept passage gets a label line — [S1], its document, title, date and score — so the model can "
         "cite it and a reviewer can check the citation. Those lines cost tokens too. Measuring them (*auto*) "
         "keeps the evidence inside its budget; treating them as free overspends it.",
         "Label overhead per passage (tokens)", "select_slider", (0, 5, 10, 20, 40, "auto"), 0, "auto",
         lambda v: {"label_overhead": v},
         words=lambda v: "label lines measured" if v == "auto" else f"{v} tokens per label"),
    Step("assembly", "Assembly: the prompt, block by block", "04_stale_policy",
         "The prompt is put together in order of trust: system rules, developer instructions, the evidence fenced "
         "and marked as data, the conversation history, the grounding rule, and the question last. Text inside a "
         "chunk can neither close the evidence fence nor pass itself off as a label. History gets its own share of "
         "what is left; the oldest turns that do not fit are left out, and the trace says so.",
         "History share (of what the fixed blocks leave)", "select_slider", (0.0, 0.02, 0.05, 0.1, 0.2, 0.4),
         0.0, 0.4, lambda v: {"history_share": v}, words=lambda v: f"history share {v:g}"),
    Step("trace", "The trace: one fate per candidate", "01_duplicates_crowd_out",
         "Every input candidate ends with exactly one fate, the stage that decided it and a reason with the "
         "numbers. That record turns \"the model got it wrong\" into \"the shipping chunk was pushed out by five "
         "copies of the refund paragraph\". Save it, load it again for the same view, or compare two of them.",
         "Settings", "radio", ("naive", "recommended"), "naive", "recommended",
         lambda v: dict(ctxcore.PRESETS[v]), words=lambda v: f"{v} preset"),
)
N = len(STEPS)

ctxui.init_state()
ss = st.session_state
ss.setdefault("learn.step", 1)
ss.setdefault("learn.values", {})


def encode(value: Any) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    return str(value)


# --------------------------------------------------------------------------- the link's step and value

problems = []
wanted = ctxui.link_page_param("step")
if wanted is not None:
    if wanted.strip().isdigit() and 1 <= int(wanted) <= N:
        ss["learn.step"] = int(wanted)
    else:
        problems.append(f"step={wanted!r} must be a whole number from 1 to {N}")
wanted_value = ctxui.link_page_param("lv")
if wanted_value is not None:
    step = STEPS[ss["learn.step"] - 1]
    match = [o for o in step.options if encode(o) == wanted_value.strip()]
    if match:
        ss["learn.values"][step.key] = match[0]
        ss.pop(f"learn.{step.key}", None)
    else:
        problems.append(f"lv={wanted_value!r} must be one of {', '.join(encode(o) for o in step.options)} "
                        f"for step {ss['learn.step']}")
ctxui.link_warning(problems)

k = min(max(int(ss["learn.step"]), 1), N)
step = STEPS[k - 1]


# --------------------------------------------------------------------------- builds

def _with_space(loaded: ctxcore.Loaded, copy_id: str) -> ctxcore.Loaded:
    cands = tuple(dataclasses.replace(c, text=c.text + " ", tokens=None) if c.id == copy_id else c
                  for c in loaded.candidates)
    return dataclasses.replace(loaded, candidates=cands)


def build(value: Any) -> ctxcore.Trace:
    """The trace for the step's scenario with the control at ``value`` (cached by ctxui)."""
    key, loaded = ctxui.load_named_sample(step.scenario)
    config = loaded.settings(**{**step.fixed, **step.settings(value)})
    if step.variant and value == SPACED:
        plain = ctxui.build_trace(key, loaded, config, loaded.query)
        copy = next((d for d in plain.decisions if d.fate == "exact_duplicate"), None)
        if copy is not None:
            return ctxui.build_trace(f"{key}:space:{copy.id}", _with_space(loaded, copy.id), config, loaded.query)
    return ctxui.build_trace(key, loaded, config, loaded.query)


def kept(t: ctxcore.Trace) -> int:
    return t.fate_counts().get("kept", 0)


def change_metrics(before: ctxcore.Trace, after: ctxcore.Trace) -> None:
    numbers = [
        ("Kept", kept(before), kept(after), "off"),
        ("Dropped", len(before.decisions) - kept(before), len(after.decisions) - kept(after), "off"),
        ("Evidence tokens", ctxcore.evidence_cost(before), ctxcore.evidence_cost(after), "off"),
        ("Prompt tokens", before.prompt.tokens, after.prompt.tokens, "off"),
    ]
    for col, (label, b, a, color) in zip(st.columns(len(numbers)), numbers):
        col.metric(label, f"{a:,}", delta=f"{a - b:+,}", delta_color=color, border=True,
                   delta_arrow="auto" if a != b else "off",
                   help=f"after: {a:,} · before: {b:,} · change: {a - b:+,}")


# --------------------------------------------------------------------------- what each stage shows best

def show_budget() -> None:
    b0, b1 = before.budget, after.budget
    st.plotly_chart(ctxui.budget_waterfall(b1), width="stretch", key="learn.waterfall")
    st.caption(f"After: safe input {b1.safe_input:,}, docs budget {b1.docs:,}. Before, the build believed in a "
               f"{b0.window:,}-token window: docs budget {b0.docs:,}, a prompt of {before.prompt.tokens:,} tokens.")


def show_tokens() -> None:
    counts_before = {c.id: c.tokens for c in before.candidates}
    rows = [{"id": c.id, step.words(step.before): counts_before.get(c.id), step.words(value): c.tokens,
             "change": (c.tokens or 0) - (counts_before.get(c.id) or 0)} for c in after.candidates]
    st.subheader("Tokens per chunk", anchor=False)
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch", key="learn.token_table")
    first = next((i for i, b in enumerate(after.blocks) if b.kind == "evidence" and b.id), None)
    if first is not None:
        st.caption(f"Where {value} cuts the first passage into tokens (│ marks each boundary):")
        st.code("│".join(p.replace("\n", "↵\n") for p in ctxui.block_pieces(after, first)),
                language=None, wrap_lines=True)


def show_exact() -> None:
    dup = next((d for d in build(IDENTICAL).decisions if d.fate == "exact_duplicate"), None)
    if dup is None:
        return
    texts = {c.id: c.text for c in after.candidates}
    fates = {d.id: d.fate for d in after.decisions}
    rows = [{"id": i, "SHA-256 of the text": hashlib.sha256(texts[i].encode("utf-8")).hexdigest()[:24] + "…",
             "fate": fates[i]} for i in (dup.duplicate_of, dup.id)]
    st.subheader("The two copies' hashes", anchor=False)
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch", key="learn.hashes")


def show_near() -> None:
    rows = [{"id": d.id, "duplicate of": d.duplicate_of, "similarity": d.similarity}
            for d in after.decisions if d.fate == "near_duplicate"]
    if rows:
        st.subheader("Dropped as near duplicates", anchor=False)
        st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch", key="learn.near",
                     column_config={"similarity": st.column_config.NumberColumn(format="%.3f")})


def show_merge() -> None:
    for d in after.kept():
        if d.merged_from:
            st.caption(ctxui.md_escape(f"{d.label}: one passage from {', '.join(d.merged_from)}"))
            st.code(d.text or "", language=None, wrap_lines=True)


def show_stale() -> None:
    rows = [{"id": d.id, "superseded by": d.superseded_by, "why": d.reason}
            for d in after.decisions if d.fate == "stale"]
    if rows:
        st.subheader("Older versions left out", anchor=False)
        st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch", key="learn.stale")
    notes = [w for w in after.warnings if "disagree" in w]
    if notes:
        st.caption("The versions disagree, which is why only the newest may speak:")
        st.code("\n".join(notes), language=None, wrap_lines=True)


def show_threshold() -> None:
    scores = {c.id: c.score for c in after.candidates}
    rows = [{"id": d.id, "score": scores.get(d.id), "before": b.fate, "after": d.fate}
            for b, d in zip(before.decisions, after.decisions)]
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch", key="learn.scores",
                 column_config={"score": st.column_config.ProgressColumn(min_value=0.0, max_value=1.0,
                                                                         format="%.2f")})
    rule = next((i for i, b in enumerate(after.blocks) if b.kind == "rule"), None)
    if after.abstain and rule is not None:
        st.caption("Nothing cleared the threshold, so the prompt's last rule asks the model to abstain:")
        st.code(ctxui.block_text(after, rule).strip(), language=None, wrap_lines=True)


def show_selection() -> None:
    fb = {d.id: d.fate for d in before.decisions}
    rows = [{"id": c.id, "score": c.score, "tokens": c.tokens,
             "score per 100 tokens": round(100 * (c.score or 0) / max(c.tokens or 1, 1), 3),
             "before": fb[c.id], "after": d.fate} for c, d in zip(after.candidates, after.decisions)]
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch", key="learn.select")


def show_ordering() -> None:
    st.subheader("Lost in the middle", anchor=False)
    st.caption("Each dot is a kept passage: where it sits (1 = first) against its score. The shaded middle is "
               "what a model reads least reliably; the ring marks the best-scored passage.")
    scores = {c.id: c.score or 0 for c in after.candidates}
    best = max((d.id for d in after.kept()), key=lambda i: scores[i], default=None)
    left, right = st.columns(2)
    with left:
        st.caption(ctxui.md_escape(f"Before: {step.words(step.before)}"))
        st.plotly_chart(ctxui.position_chart(before, highlight=best, note="best-scored"), width="stretch",
                        key="learn.pos_before")
    with right:
        st.caption(ctxui.md_escape(f"After: {step.words(value)}"))
        st.plotly_chart(ctxui.position_chart(after, highlight=best, note="best-scored"), width="stretch",
                        key="learn.pos_after")


def show_compression() -> None:
    cands = {c.id: c for c in after.candidates}
    for d in after.kept():
        if d.compressed:
            st.caption(ctxui.md_escape(f"{d.id}: {d.tokens_before} tokens as retrieved, {d.tokens} in the prompt"))
            left, right = st.columns(2)
            left.code(cands[d.id].text, language=None, wrap_lines=True)
            right.code(d.text or "", language=None, wrap_lines=True)


def show_labels() -> None:
    first = next((i for i, b in enumerate(after.blocks) if b.kind == "evidence" and b.id), None)
    if first is not None:
        st.caption("The first passage as it sits in the prompt, label line included:")
        st.code(ctxui.block_text(after, first).strip("\n"), language=None, wrap_lines=True)


def show_assembly() -> None:
    st.plotly_chart(ctxui.prompt_map(after), width="stretch", key="learn.map")
    ctxui.token_bars(after)
    with st.expander("Retrieved text stays data (scenario 05, a hidden instruction)"):
        try:
            k5, l5 = ctxui.load_named_sample("05_hidden_instruction")
            t5 = ctxui.build_trace(k5, l5, l5.settings(), l5.query)
        except (ctxcore.InputError, ctxcore.BuildError):
            return
        flagged = [w for w in t5.warnings if "neutralised" in w]
        idx = next((i for i, b in enumerate(t5.blocks) if b.id and any(w.startswith(b.id + " ") for w in flagged)),
                   None)
        if idx is None:
            return
        cid = t5.blocks[idx].id
        st.caption(ctxui.md_escape(flagged[0]))
        left, right = st.columns(2)
        left.caption("As retrieved")
        left.code(next(c.text for c in t5.candidates if c.id == cid), language=None, wrap_lines=True)
        right.caption("As it sits in the prompt")
        right.code(ctxui.block_text(t5, idx).strip("\n"), language=None, wrap_lines=True)


def show_trace() -> None:
    df = ctxui.fates_frame(after)[["id", "fate", "stage", "reason"]]
    st.dataframe(df.style.map(ctxui.fate_style, subset=["fate"]), hide_index=True, width="stretch",
                 key="learn.trace", column_config={"reason": st.column_config.TextColumn(width="large")})
    st.download_button("Download this trace (JSON)", after.to_json(), file_name="learn.trace.json",
                       mime="application/json", on_click="ignore", icon=":material/download:", key="learn.dl")
    st.page_link("pages/compare.py", label="Compare two settings side by side", icon=":material/compare:")


# --------------------------------------------------------------------------- page

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
        before, after = build(step.before), build(value)
    except (ctxcore.InputError, ctxcore.BuildError) as err:
        st.error(ctxui.md_escape(str(err)), icon=":material/error:")
        st.stop()
    with note_col:
        st.markdown(ctxui.md_escape(f"Before: {step.words(step.before)} — kept {kept(before)}, "
                                    f"prompt {before.prompt.tokens:,} tokens"))
        st.markdown(ctxui.md_escape(f"After: {step.words(value)} — kept {kept(after)}, "
                                    f"prompt {after.prompt.tokens:,} tokens"))
    change_metrics(before, after)
ss["learn.traces"] = (before, after)  # for tests
ctxui.set_page_params({"step": k, "lv": None if value == step.default else encode(value)})

names = ("before", "after")
if step.key == "ordering":  # here the picture is the point; the table of moves follows it
    show_ordering()
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


SHOW = {"budget": show_budget, "tokens": show_tokens, "exact": show_exact, "near": show_near, "merge": show_merge,
        "stale": show_stale, "threshold": show_threshold, "selection": show_selection, "ordering": lambda: None,
        "compression": show_compression, "labels": show_labels, "assembly": show_assembly, "trace": show_trace}
SHOW[step.key]()

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
