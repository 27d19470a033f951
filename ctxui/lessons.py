"""What each Learn step shows best, below its before/after numbers: one renderer per stage.

Every renderer takes the step, the control's value and the two builds, and reads nothing else.
"""

from __future__ import annotations

import hashlib
from typing import Any

import pandas as pd
import streamlit as st

import ctxcore
from ctxcore import Trace

from .charts import budget_waterfall, position_chart, prompt_map, token_bars
from .loading import build_trace, load_named_sample
from .prompt import block_pieces, block_text
from .steps import IDENTICAL, Step, build_step, kept_count
from .tables import fates_frame
from .text import md_escape
from .theme import fate_style


def fate_moves(before: Trace, after: Trace) -> list[str]:
    """``id: fate before → fate after`` for every candidate whose fate the change moved, in input order."""
    was = {d.id: d.fate for d in before.decisions}
    return [f"{d.id}: {was[d.id]} → {d.fate}" for d in after.decisions if d.id in was and was[d.id] != d.fate]


def change_metrics(before: Trace, after: Trace, before_words: str = "before", after_words: str = "after") -> None:
    """Kept, dropped, evidence and prompt tokens after the change, with the change from before, and how many
    fates moved: a change that swaps one fate for another moves no count, and the cards must not all say +0
    as if nothing happened."""
    numbers = [
        ("Kept", kept_count(before), kept_count(after), "off"),
        ("Dropped", len(before.decisions) - kept_count(before), len(after.decisions) - kept_count(after), "off"),
        ("Evidence tokens", ctxcore.evidence_cost(before), ctxcore.evidence_cost(after), "off"),
        ("Prompt tokens", before.prompt.tokens, after.prompt.tokens, "off"),
    ]
    st.caption(md_escape(f"Each card shows the number after the change ({after_words}); the small figure under it "
                         f"is the change from before ({before_words})."))
    moves = fate_moves(before, after)
    columns = st.columns(len(numbers) + 1)
    for col, (label, b, a, color) in zip(columns, numbers):
        col.metric(label, f"{a:,}", delta=f"{a - b:+,}", delta_color=color, border=True,
                   delta_arrow="auto" if a != b else "off",
                   help=f"after: {a:,} · before: {b:,} · change: {a - b:+,}")
    columns[-1].metric("Fates changed", f"{len(moves):,}", border=True,
                       help="; ".join(moves) if moves else "no candidate's fate moved")


# --------------------------------------------------------------------------- what each stage shows best

def show_budget(step: Step, value: Any, before: Trace, after: Trace) -> None:
    b0, b1 = before.budget, after.budget
    st.plotly_chart(budget_waterfall(b1), width="stretch", key="learn.waterfall")
    st.caption(f"After: safe input {b1.safe_input:,}, docs budget {b1.docs:,}. Before, the build believed in a "
               f"{b0.window:,}-token window: docs budget {b0.docs:,}, a prompt of {before.prompt.tokens:,} tokens.")


def show_tokens(step: Step, value: Any, before: Trace, after: Trace) -> None:
    counts_before = {c.id: c.tokens for c in before.candidates}
    rows = [{"id": c.id, step.words(step.before): counts_before.get(c.id), step.words(value): c.tokens,
             "change": (c.tokens or 0) - (counts_before.get(c.id) or 0)} for c in after.candidates]
    st.subheader("Tokens per chunk", anchor=False)
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch", key="learn.token_table")
    first = next((i for i, b in enumerate(after.blocks) if b.kind == "evidence" and b.id), None)
    if first is not None:
        st.caption(f"Where {value} cuts the first passage into tokens (│ marks each boundary):")
        st.code("│".join(p.replace("\n", "↵\n") for p in block_pieces(after, first)),
                language=None, wrap_lines=True)


def show_exact(step: Step, value: Any, before: Trace, after: Trace) -> None:
    dup = next((d for d in build_step(step, IDENTICAL).decisions if d.fate == "exact_duplicate"), None)
    if dup is None:
        return
    texts = {c.id: c.text for c in after.candidates}
    fates = {d.id: d.fate for d in after.decisions}
    rows = [{"id": i, "SHA-256 of the text": hashlib.sha256(texts[i].encode("utf-8")).hexdigest()[:24] + "…",
             "fate": fates[i]} for i in (dup.duplicate_of, dup.id)]
    st.subheader("The two copies' hashes", anchor=False)
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch", key="learn.hashes")


def show_near(step: Step, value: Any, before: Trace, after: Trace) -> None:
    rows = [{"id": d.id, "duplicate of": d.duplicate_of, "similarity": d.similarity}
            for d in after.decisions if d.fate == "near_duplicate"]
    if rows:
        st.subheader("Dropped as near duplicates", anchor=False)
        st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch", key="learn.near",
                     column_config={"similarity": st.column_config.NumberColumn(format="%.3f")})


def show_merge(step: Step, value: Any, before: Trace, after: Trace) -> None:
    for d in after.kept():
        if d.merged_from:
            st.caption(md_escape(f"{d.label}: one passage from {', '.join(d.merged_from)}"))
            st.code(d.text or "", language=None, wrap_lines=True)


def show_stale(step: Step, value: Any, before: Trace, after: Trace) -> None:
    rows = [{"id": d.id, "superseded by": d.superseded_by, "why": d.reason}
            for d in after.decisions if d.fate == "stale"]
    if rows:
        st.subheader("Older versions left out", anchor=False)
        st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch", key="learn.stale")
    notes = [w for w in after.warnings if "disagree" in w]
    if notes:
        st.caption("The versions disagree, which is why only the newest may speak:")
        st.code("\n".join(notes), language=None, wrap_lines=True)


def show_threshold(step: Step, value: Any, before: Trace, after: Trace) -> None:
    scores = {c.id: c.score for c in after.candidates}
    rows = [{"id": d.id, "score": scores.get(d.id), "before": b.fate, "after": d.fate}
            for b, d in zip(before.decisions, after.decisions)]
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch", key="learn.scores",
                 column_config={"score": st.column_config.ProgressColumn(min_value=0.0, max_value=1.0,
                                                                         format="%.2f")})
    rule = next((i for i, b in enumerate(after.blocks) if b.kind == "rule"), None)
    if after.abstain and rule is not None:
        st.caption("Nothing cleared the threshold, so the prompt's last rule asks the model to abstain:")
        st.code(block_text(after, rule).strip(), language=None, wrap_lines=True)


def show_selection(step: Step, value: Any, before: Trace, after: Trace) -> None:
    fb = {d.id: d.fate for d in before.decisions}
    rows = [{"id": c.id, "score": c.score, "tokens": c.tokens,
             "score per 100 tokens": round(100 * (c.score or 0) / max(c.tokens or 1, 1), 3),
             "before": fb[c.id], "after": d.fate} for c, d in zip(after.candidates, after.decisions)]
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch", key="learn.select")


def show_ordering(step: Step, value: Any, before: Trace, after: Trace) -> None:
    st.subheader("Lost in the middle", anchor=False)
    st.caption("Each dot is a kept passage: where it sits (1 = first) against its score. The shaded middle is "
               "what a model reads least reliably; the ring marks the best-scored passage.")
    scores = {c.id: c.score or 0 for c in after.candidates}
    best = max((d.id for d in after.kept()), key=lambda i: scores[i], default=None)
    left, right = st.columns(2)
    with left:
        st.caption(md_escape(f"Before: {step.words(step.before)}"))
        st.plotly_chart(position_chart(before, highlight=best, note="best-scored"), width="stretch",
                        key="learn.pos_before")
    with right:
        st.caption(md_escape(f"After: {step.words(value)}"))
        st.plotly_chart(position_chart(after, highlight=best, note="best-scored"), width="stretch",
                        key="learn.pos_after")
    show_orders_side_by_side(step)


def _rank_among_kept(t: Trace) -> dict[str, int]:
    """1-based rank of each kept passage among the kept ones: score descending, ties by input order."""
    order = {c.id: i for i, c in enumerate(t.candidates)}
    scores = {c.id: c.score for c in t.candidates}
    kept = sorted((d.id for d in t.kept()), key=lambda i: (scores[i] is None, -(scores[i] or 0.0), order[i]))
    return {cid: r for r, cid in enumerate(kept, 1)}


def orders_side_by_side(sandwich: Trace, litm: Trace) -> pd.DataFrame:
    """Position by position: which passage (and its rank) each of the two orders puts there."""
    rows = []
    ranks_s, ranks_l = _rank_among_kept(sandwich), _rank_among_kept(litm)
    for pos, (a, b) in enumerate(zip(sandwich.kept(), litm.kept()), 1):
        rows.append({"position": pos, "sandwich: rank": ranks_s[a.id], "sandwich: passage": a.id,
                     "lost-in-the-middle: rank": ranks_l[b.id], "lost-in-the-middle: passage": b.id})
    return pd.DataFrame(rows, columns=["position", "sandwich: rank", "sandwich: passage", "lost-in-the-middle: rank",
                                       "lost-in-the-middle: passage"])


def show_orders_side_by_side(step: Step) -> None:
    sandwich, litm = build_step(step, "sandwich"), build_step(step, "lost-in-the-middle")
    st.subheader("sandwich and lost-in-the-middle, side by side", anchor=False)
    st.caption(md_escape(
        "Rank 1 is the best-scored kept passage. sandwich: 1, 3, 4, …, N, 2 (best first, second best last, the "
        "rest in rank order, so the weakest sits next to last). lost-in-the-middle (Haystack's "
        "LostInTheMiddleRanker): odd ranks from the start, even ranks from the end, so the weakest sits in the "
        "very middle. LangChain's and LlamaIndex's LongContextReorder give the same as lost-in-the-middle for an "
        "odd number of passages and its mirror image (best last) for an even number."))
    st.dataframe(orders_side_by_side(sandwich, litm), hide_index=True, width="stretch", key="learn.orders")


def show_compression(step: Step, value: Any, before: Trace, after: Trace) -> None:
    cands = {c.id: c for c in after.candidates}
    for d in after.kept():
        if d.compressed:
            st.caption(md_escape(f"{d.id}: {d.tokens_before} tokens as retrieved, {d.tokens} in the prompt"))
            left, right = st.columns(2)
            left.code(cands[d.id].text, language=None, wrap_lines=True)
            right.code(d.text or "", language=None, wrap_lines=True)


def show_labels(step: Step, value: Any, before: Trace, after: Trace) -> None:
    first = next((i for i, b in enumerate(after.blocks) if b.kind == "evidence" and b.id), None)
    if first is not None:
        st.caption("The first passage as it sits in the prompt, label line included:")
        st.code(block_text(after, first).strip("\n"), language=None, wrap_lines=True)


def show_assembly(step: Step, value: Any, before: Trace, after: Trace) -> None:
    st.plotly_chart(prompt_map(after), width="stretch", key="learn.map")
    token_bars(after)
    with st.expander("Retrieved text stays data (scenario 05, a hidden instruction)"):
        try:
            k5, l5 = load_named_sample("05_hidden_instruction")
            t5 = build_trace(k5, l5, l5.settings(), l5.query)
        except (ctxcore.InputError, ctxcore.BuildError):
            return
        flagged = [w for w in t5.warnings if "neutralised" in w]
        idx = next((i for i, b in enumerate(t5.blocks) if b.id and any(w.startswith(b.id + " ") for w in flagged)),
                   None)
        if idx is None:
            return
        cid = t5.blocks[idx].id
        st.caption(md_escape(flagged[0]))
        left, right = st.columns(2)
        left.caption("As retrieved")
        left.code(next(c.text for c in t5.candidates if c.id == cid), language=None, wrap_lines=True)
        right.caption("As it sits in the prompt")
        right.code(block_text(t5, idx).strip("\n"), language=None, wrap_lines=True)


def show_trace(step: Step, value: Any, before: Trace, after: Trace) -> None:
    df = fates_frame(after)[["id", "fate", "stage", "reason"]]
    st.dataframe(df.style.map(fate_style, subset=["fate"]), hide_index=True, width="stretch",
                 key="learn.trace", column_config={"reason": st.column_config.TextColumn(width="large")})
    st.download_button("Download this trace (JSON)", after.to_json(), file_name="learn.trace.json",
                       mime="application/json", on_click="ignore", icon=":material/download:", key="learn.dl")
    st.page_link("pages/compare.py", label="Compare two settings side by side", icon=":material/compare:")



STEP_VIEWS = {"budget": show_budget, "tokens": show_tokens, "exact": show_exact, "near": show_near,
              "merge": show_merge, "stale": show_stale, "threshold": show_threshold, "selection": show_selection,
              "ordering": lambda *args: None, "compression": show_compression, "labels": show_labels,
              "assembly": show_assembly, "trace": show_trace}
