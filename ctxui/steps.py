"""The Learn walkthrough's steps: one per stage, each a control and the two builds it compares (no widgets).

Every step compares two builds made by ctxcore: *before* (the stage off, or at its naive value) and *after*
(the control's value). A step names its sample scenario; the builds go through the cached ``build_trace``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Callable

import streamlit as st

import ctxcore

from .loading import build_trace, load_named_sample
from .state import link_page_param


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
         "where each chosen passage goes. *sandwich* puts the best first, the second best last and ranks 3…N in "
         "rank order between them, so with five or more passages the weakest sits next to last. "
         "*lost-in-the-middle* (as Haystack's LostInTheMiddleRanker) alternates inward from both ends — nine "
         "passages read 1 3 5 7 9 8 6 4 2 — so the weakest sits in the very middle. The table below puts the two "
         "side by side. Nothing is added or dropped here; only positions change.",
         "Order", "selectbox", ("original", "rank", "sandwich", "lost-in-the-middle", "document"), "original",
         "sandwich",
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
         "what is left (with *auto*, only what its kept turns use, at most 0.4, and the documents get the rest); "
         "the oldest turns that do not fit are left out, and the trace says so.",
         "History share (of what the fixed blocks leave)", "select_slider", (0.0, 0.02, 0.05, 0.1, 0.2, 0.4, "auto"),
         0.0, 0.4, lambda v: {"history_share": v},
         words=lambda v: ("history share auto (what the turns use, up to 0.4)" if v == "auto"
                          else f"history share {v:g}")),
    Step("trace", "The trace: one fate per candidate", "01_duplicates_crowd_out",
         "Every input candidate ends with exactly one fate, the stage that decided it and a reason with the "
         "numbers. That record turns \"the model got it wrong\" into \"the shipping chunk was pushed out by five "
         "copies of the refund paragraph\". Save it, load it again for the same view, or compare two of them.",
         "Settings", "radio", ("naive", "recommended"), "naive", "recommended",
         lambda v: dict(ctxcore.PRESETS[v]), words=lambda v: f"{v} preset"),
)
N_STEPS = len(STEPS)


def encode_step_value(value: Any) -> str:
    """A control value as the link's ``lv`` writes it."""
    if isinstance(value, bool):
        return "1" if value else "0"
    return str(value)


def read_step_link() -> list[str]:
    """Take the opening link's ``step`` and ``lv`` into the session (``learn.step``, ``learn.values``); the
    problems with them, for ``link_warning``."""
    ss = st.session_state
    problems = []
    wanted = link_page_param("step")
    if wanted is not None:
        if wanted.strip().isdigit() and 1 <= int(wanted) <= N_STEPS:
            ss["learn.step"] = int(wanted)
        else:
            problems.append(f"step={wanted!r} must be a whole number from 1 to {N_STEPS}")
    wanted_value = link_page_param("lv")
    if wanted_value is not None:
        step = STEPS[ss["learn.step"] - 1]
        match = [o for o in step.options if encode_step_value(o) == wanted_value.strip()]
        if match:
            ss["learn.values"][step.key] = match[0]
            ss.pop(f"learn.{step.key}", None)
        else:
            problems.append(f"lv={wanted_value!r} must be one of "
                            f"{', '.join(encode_step_value(o) for o in step.options)} for step {ss['learn.step']}")
    return problems


def _with_space(loaded: ctxcore.Loaded, copy_id: str) -> ctxcore.Loaded:
    cands = tuple(dataclasses.replace(c, text=c.text + " ", tokens=None) if c.id == copy_id else c
                  for c in loaded.candidates)
    return dataclasses.replace(loaded, candidates=cands)


def build_step(step: Step, value: Any) -> ctxcore.Trace:
    """The trace for the step's scenario with the control at ``value`` (cached by build_trace)."""
    key, loaded = load_named_sample(step.scenario)
    config = loaded.settings(**{**step.fixed, **step.settings(value)})
    if step.variant and value == SPACED:
        plain = build_trace(key, loaded, config, loaded.query)
        copy = next((d for d in plain.decisions if d.fate == "exact_duplicate"), None)
        if copy is not None:
            return build_trace(f"{key}:space:{copy.id}", _with_space(loaded, copy.id), config, loaded.query)
    return build_trace(key, loaded, config, loaded.query)


def kept_count(t: ctxcore.Trace) -> int:
    return t.fate_counts().get("kept", 0)
