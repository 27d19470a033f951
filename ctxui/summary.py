"""Headline numbers of a build (the debugger's row, a comparison side's two by two) and its warnings."""

from __future__ import annotations

import streamlit as st

import ctxcore
from ctxcore import Trace

from .text import md_escape, visible
from .theme import fate_badges


def _history_note(b) -> str:
    """What the budget holds for history, and why (auto: what the kept turns use, up to the 40% share)."""
    if b.history_auto:
        return f"history {b.history:,} (auto: what the conversation uses, of up to {b.history_cap:,})"
    used = "" if b.history_used is None else f"; the conversation uses {b.history_used:,}"
    return f"history {b.history:,} (a fixed share{used})"


# short enough not to be cut in a fifth of a 1280 px page (or a quarter of Compare's side); the help says more
EVIDENCE_LABEL, PROMPT_LABEL = "Evidence / budget", "Prompt / safe input"


def metrics(trace: Trace) -> None:
    """Headline numbers: candidates, kept, dropped (with a badge per non-zero fate), tokens vs budgets."""
    counts = trace.fate_counts()
    b = trace.budget
    kept = counts.get("kept", 0)
    row = st.columns([1, 1, 1, 1.5, 1.5])
    row[0].metric("Candidates", len(trace.decisions), border=True)
    row[1].metric("Kept", kept, help=ctxcore.FATE_MEANINGS["kept"], border=True)
    row[2].metric("Dropped", len(trace.decisions) - kept, border=True)
    row[3].metric(EVIDENCE_LABEL, f"{ctxcore.evidence_cost(trace):,} / {b.docs:,}",
                  help="Evidence tokens / docs budget: the docs-budget tokens the kept passages use (text plus "
                       "label lines), of the docs budget.", border=True)
    row[4].metric(PROMPT_LABEL, f"{trace.prompt.tokens:,} / {b.safe_input:,}",
                  help="Prompt tokens / safe input: counted on the whole final prompt text.", border=True)
    fate_badges(counts)
    note = (f"Tokenizer {trace.tokenizer.encoding}" + ("" if trace.tokenizer.exact else " (approximate counts)")
            + f" · window {b.window:,} · max output {b.max_output:,} · safety {b.safety:.0%} · fixed blocks "
            f"{b.fixed:,} · {_history_note(b)} · docs budget {b.docs:,}"
            + (" (direct)" if b.docs_direct else " (from the split)"))
    st.caption(md_escape(note))
    if trace.abstain:
        st.warning("No passage reached the prompt: the model is told to abstain.", icon=":material/block:")


def side_metrics(trace: Trace) -> None:
    """The headline numbers for one side of a comparison (two by two, to fit half a page)."""
    counts = trace.fate_counts()
    kept = counts.get("kept", 0)
    b = trace.budget
    top = st.columns(2)
    top[0].metric("Kept", kept, border=True, help=ctxcore.FATE_MEANINGS["kept"])
    top[1].metric("Dropped", len(trace.decisions) - kept, border=True)
    bottom = st.columns(2)
    bottom[0].metric(EVIDENCE_LABEL, f"{ctxcore.evidence_cost(trace):,} / {b.docs:,}", border=True,
                     help="Docs-budget tokens the kept passages use (text plus label lines), against the docs "
                          "budget.")
    bottom[1].metric(PROMPT_LABEL, f"{trace.prompt.tokens:,} / {b.safe_input:,}", border=True,
                     help="Tokens of the whole final prompt, against the safe input.")
    fate_badges(counts)
    if trace.abstain:
        st.caption("No passage reached the prompt: the model is told to abstain.")


def warnings_list(trace: Trace, limit: int = 5) -> None:
    ws = list(trace.warnings)
    for w in ws[:limit]:
        st.warning(md_escape(w), icon=":material/warning:")
    if len(ws) > limit:
        with st.expander(f"All {len(ws)} warnings"):
            st.code(visible("\n".join(ws)), language=None, wrap_lines=True)
