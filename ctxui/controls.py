"""The sidebar's controls and the shared tokenizer/window controls; each writes one Config field into the store."""

from __future__ import annotations

import streamlit as st

import ctxcore
from ctxcore.settings import BY_NAME

from .settings import ORDER_HELP, SELECT_HELP
from .state import bound, reset_defaults, store, sync_url
from .text import md_escape


# Tokenizer choices: the encodings ctxcore ships, then model names that map to one of them.
MODELS = ("gpt-4o", "gpt-4o-mini", "gpt-4.1", "gpt-4", "gpt-3.5-turbo")


def _tokenizer_options() -> list[str]:
    opts = list(ctxcore.ENCODINGS) + list(MODELS)
    current = store()["tokenizer"]
    if current not in opts:
        opts.append(current)
    return opts


def _tokenizer_label(name: str) -> str:
    if name in ctxcore.ENCODINGS:
        return f"{name} (encoding)"
    try:
        return f"{name} → {ctxcore.encoding_for_model(name)}"
    except KeyError:
        return name


def control_bounds(field: str) -> dict:
    """min_value/max_value of a setting's control: the registry's bounds (Setting.control_range), nowhere else."""
    lo, hi = BY_NAME[field].control_range
    return {k: v for k, v in (("min_value", lo), ("max_value", hi)) if v is not None}


def ranged(widget, field: str, wkey: str, label: str, **kwargs):
    """A numeric control bound to store[field] with the registry's range; a stored value outside it (a widget
    given one stops the page) is pulled to the nearest end, and a note under the control says so."""
    bounds = control_bounds(field)
    s, ss = store(), st.session_state
    value = s.get(field)
    lo, hi = bounds.get("min_value", value), bounds.get("max_value", value)
    if isinstance(value, (int, float)) and not isinstance(value, bool) and not lo <= value <= hi:
        clamped = type(bounds["min_value" if value < lo else "max_value"])(min(max(value, lo), hi))
        s[field] = clamped
        ss.pop(wkey, None)
        ss[f"{wkey}.note"] = (f"{label}: {value} is outside this control's range; using {clamped}.", clamped)
    result = bound(widget, field, wkey, label, **bounds, **kwargs)
    note = ss.get(f"{wkey}.note")
    if note and note[1] == result:  # said while the clamped value stands
        st.caption(md_escape(note[0]))
    return result


def tokenizer_select(prefix: str, where=None) -> str:
    where = where or st
    return bound(where.selectbox, "tokenizer", f"{prefix}.tokenizer", "Model / encoding",
                 _tokenizer_options(), format_func=_tokenizer_label,
                 help="Token counts use this model's tokenizer (tiktoken encodings, offline).")


def window_controls(prefix: str) -> None:
    ranged(st.number_input, "window", f"{prefix}.window", "Context window (tokens)", step=1024)
    ranged(st.number_input, "max_output", f"{prefix}.max_output", "Max output (reserved for the answer)", step=256)
    ranged(st.slider, "safety", f"{prefix}.safety", "Safety margin", step=BY_NAME["safety"].step,
           help="Fraction taken off after reserving the answer, for tokenizer drift.")
    auto = bound(st.toggle, "history_auto", f"{prefix}.history_auto", "History share: auto",
                 help="On: the history gets the tokens its kept turns use, at most 40% of what the fixed blocks "
                      "leave; the documents get the rest. Off: the share below is held for history, used or not.")
    ranged(st.slider, "history_share", f"{prefix}.history_share", "History share", step=0.01, disabled=auto,
           help="Share of what the fixed blocks leave that is held for conversation history.")


def sidebar_controls() -> None:
    """Every control writes one Config field into the store; the page builds from the store."""
    with st.sidebar:
        st.header("Settings", anchor=False)
        tokenizer_select("dbg")

        st.subheader("Evidence budget", anchor=False)
        on = bound(st.toggle, "budget_on", "dbg.budget_on", "Direct docs budget",
                   help="On: evidence gets exactly this many tokens. Off: the window split decides.")
        ranged(st.number_input, "budget", "dbg.budget", "Docs budget (tokens)", step=50, disabled=not on)
        with st.expander("Window split", expanded=not on):
            window_controls("dbg")

        st.subheader("Filters", anchor=False)
        on = bound(st.toggle, "min_score_on", "dbg.min_score_on", "Minimum score")
        ranged(st.number_input, "min_score", "dbg.min_score", "Drop candidates scoring below", step=0.05,
               format="%.3f", disabled=not on)
        bound(st.checkbox, "drop_unscored", "dbg.drop_unscored", "Drop unscored candidates too", disabled=not on,
              help=BY_NAME["drop_unscored"].help + ". Off: they pass, and the trace warns that they were not checked.")
        on = bound(st.toggle, "near_dup_on", "dbg.near_dup_on", "Near-duplicate removal")
        ranged(st.slider, "near_dup", "dbg.near_dup", "Near-duplicate threshold", step=0.01, disabled=not on)
        bound(st.selectbox, "similarity", "dbg.similarity", "Similarity", ["words", "shingles", "cosine"],
              disabled=not on, help="words: word-set Jaccard; shingles: character shingles; cosine: embeddings")
        bound(st.checkbox, "prefer_newest", "dbg.prefer_newest", "Prefer newest version (drop stale)")

        st.subheader("Selection & order", anchor=False)
        sel = bound(st.radio, "select", "dbg.select", "Selection", ["score", "density", "mmr"], horizontal=True,
                    format_func=lambda x: {"score": "score", "density": "density", "mmr": "MMR"}[x],
                    help="; ".join(f"{k}: {v}" for k, v in SELECT_HELP.items()))
        ranged(st.slider, "mmr_lambda", "dbg.mmr_lambda", "MMR λ (relevance vs. diversity)", step=0.01,
               disabled=sel != "mmr")
        on = bound(st.toggle, "max_passages_on", "dbg.max_passages_on", "Limit the number of passages",
                   help="On: at most this many passages are kept, even when the budget has room for more.")
        ranged(st.number_input, "max_passages", "dbg.max_passages", "Max passages", step=1, disabled=not on)
        bound(st.selectbox, "order", "dbg.order", "Order", list(BY_NAME["order"].choices),
              help="; ".join(f"{k}: {v}" for k, v in ORDER_HELP.items()))  # the names fit the sidebar; help says more

        with st.expander("Labels, compression, merging"):
            auto = bound(st.toggle, "label_auto", "dbg.label_auto", "Label overhead: measure (auto)")
            ranged(st.number_input, "label_overhead", "dbg.label_overhead", "Label overhead per passage (tokens)",
                   step=1, disabled=auto)
            bound(st.checkbox, "compress", "dbg.compress", "Compress (keep query-relevant sentences)")
            on = bound(st.toggle, "max_chunk_on", "dbg.max_chunk_on", "Cap tokens per chunk")
            ranged(st.number_input, "max_chunk_tokens", "dbg.max_chunk_tokens", "Max chunk tokens", step=50,
                   disabled=not on)
            bound(st.checkbox, "merge_adjacent", "dbg.merge_adjacent", "Merge adjacent chunks of a document")
            bound(st.text_input, "caller", "dbg.caller", "Caller (for permissions)",
                  help="Candidates whose permissions do not include this caller are not_permitted.")

        st.button("Reset to defaults", on_click=reset_defaults, key="dbg.reset", width="stretch")
    sync_url()


def query_input() -> str:
    return bound(st.text_input, "query", "dbg.query", "Query (prefilled from the file; edit to rebuild)",
                 placeholder="The user's question")
