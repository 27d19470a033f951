"""Every setting of a build, declared once.

Config's validation, the CLI flags, the app's controls and link keys, and the
README's settings table all come from :data:`SETTINGS` (a test holds Config and
the README to it). Adding a setting is one entry here, one field on
:class:`ctxcore.records.Config`, and the stage that reads it.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Optional

from .errors import InputError
from .encodings import ENCODINGS, encoding_for_model

MAX_TOKENS = 10_000_000  # five times the largest window any model offers; larger numbers are typos or attacks


@dataclass(frozen=True)
class Setting:
    """One setting: its type and bounds, what it means, and how the CLI, the controls and links name it."""

    name: str
    kind: str                       # int | float | bool | choice | text | encoding | model | overhead | share
    default: Any
    help: str
    must: str                       # what a valid value is, as "must be ..." ends
    lo: Optional[float] = None
    hi: Optional[float] = None
    lo_open: bool = False           # lo itself is not allowed
    hi_open: bool = False
    nullable: bool = False          # None (null, "off") is allowed: the setting is switched off
    choices: tuple = ()
    meanings: tuple = ()            # (choice, what it does), for choices
    flag: Optional[str] = None      # CLI flag; None: the name with dashes
    flag_value: Any = None          # a flag that sets this value and takes no argument
    off_flag: Optional[str] = None  # CLI flag that switches it off
    link: str = ""                  # key in a shareable link
    control: str = "number"         # number | slider | select | radio | checkbox | text | tokenizer
    step: Optional[float] = None    # slider/number step
    off_value: Any = None           # what an off switch's control shows
    switch: Optional[str] = None    # the app's on/off toggle for a nullable setting
    switch_word: str = "off"        # the link value standing for the switch's off state ("auto" for labels)

    @property
    def control_range(self) -> tuple[Optional[float], Optional[float]]:
        """The range a control offers: the bounds themselves, an open end moved in by one step (a slider cannot
        stop just short of 1), and MAX_TOKENS above a count. One set of bounds for Config, controls and links."""
        lo, hi = self.lo, self.hi
        if lo is not None and self.lo_open:
            lo = lo + (self.step or 1)
        if hi is not None and self.hi_open:
            hi = hi - (self.step or 1)
        if self.kind in ("int", "overhead") and hi is None:
            hi = MAX_TOKENS
        if self.kind in ("float", "share"):  # a slider wants its ends and its value of one type
            lo, hi = (None if lo is None else float(lo)), (None if hi is None else float(hi))
        return lo, hi

    @property
    def cli(self) -> str:
        return self.flag or "--" + self.name.replace("_", "-")

    def meaning(self, choice: str) -> str:
        return dict(self.meanings).get(choice, "")

    def problem(self, value) -> Optional[str]:
        """Why ``value`` is not valid for this setting, or None when it is."""
        if value is None:
            return None if self.nullable else f"must be {self.must}"
        if self.kind in ("overhead", "share") and value == "auto":
            return None
        if self.kind in ("int", "overhead"):
            if not _is_int(value):
                return f"must be {self.must}"
            if value > MAX_TOKENS:
                return f"must be at most {MAX_TOKENS:,} tokens"
        elif self.kind in ("float", "share"):
            if not _is_number(value):
                return f"must be {self.must}"
        elif self.kind == "bool":
            return None if isinstance(value, bool) else f"must be {self.must}"
        elif self.kind == "choice":
            return None if value in self.choices else f"must be one of {', '.join(self.choices)}"
        elif self.kind in ("text", "encoding", "model"):
            if not isinstance(value, str) or (self.kind == "encoding" and not _ENCODING.fullmatch(value)):
                return f"must be {self.must}"
            if self.kind == "model":
                try:
                    encoding_for_model(value)
                except KeyError:
                    return f"unknown model; give an encoding instead ({', '.join(ENCODINGS)})"
            return None
        if self.lo is not None and (value < self.lo or (self.lo_open and value == self.lo)):
            return f"must be {self.must}"
        if self.hi is not None and (value > self.hi or (self.hi_open and value == self.hi)):
            return f"must be {self.must}"
        return None


_ENCODING = re.compile(r"[A-Za-z0-9_.-]{1,64}")  # an unknown name is approximated; markup or paths are refused


def _is_number(x) -> bool:
    if not isinstance(x, (int, float)) or isinstance(x, bool):
        return False
    try:
        return math.isfinite(x)
    except OverflowError:  # an integer too large for a float
        return False


def _is_int(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


ORDERS = (
    ("rank", "best first, in rank order"),
    ("sandwich", "best first, second best last, ranks 3…N in rank order between them (for N ≥ 5 the weakest "
                 "sits next to last)"),
    ("lost-in-the-middle", "Haystack's LostInTheMiddleRanker: ranks alternate inward from both ends, odd ranks "
                           "from the start and even ranks from the end (9 passages read 1 3 5 7 9 8 6 4 2: best "
                           "first, second best last, the weakest in the very middle)"),
    ("document", "grouped by document, chunks in source order, documents by their best rank"),
    ("original", "the retrieval order, as the input listed them (to show the failure)"),
)
SELECTIONS = (("score", "greedy by score"), ("density", "greedy by score per token"),
              ("mmr", "maximal marginal relevance"))
SIMILARITIES = (("words", "word-set Jaccard"), ("shingles", "5-character shingle Jaccard"),
                ("cosine", "cosine of the candidates' embeddings"))

SETTINGS: tuple[Setting, ...] = (
    Setting("encoding", "encoding", "cl100k_base", "tokenizer encoding the counts use",
            "an encoding name (letters, digits, '_', '.', '-'; at most 64)",
            link="tok", control="tokenizer"),
    Setting("model", "model", None, "model name; sets the encoding", "a model name", nullable=True),
    Setting("window", "int", 8192, "the model's context window (tokens)", "a whole number of tokens, 1 or more",
            lo=1, link="win"),
    Setting("max_output", "int", 1024, "tokens reserved for the answer", "a whole number of tokens, 0 or more",
            lo=0, link="out"),
    Setting("safety", "float", 0.05, "safety margin taken off the input side",
            "a fraction from 0 up to (not including) 1", lo=0, hi=1, hi_open=True, link="safety",
            control="slider", step=0.01),
    Setting("history_share", "share", "auto", "share of what is left that is held for conversation history: "
            "a fixed fraction, or auto (the history gets the tokens its kept turns use, at most 0.4 of what is "
            "left, and the documents get the rest)", "a fraction from 0 to 1 or 'auto'", lo=0, hi=1, link="hist",
            control="slider", step=0.01, off_value=0.4, switch="history_auto",
            switch_word="auto"),
    Setting("budget", "int", None, "evidence token budget, given directly (overrides the window split)",
            "a whole number of tokens, 0 or more", lo=0, nullable=True, link="budget", off_value=1000,
            switch="budget_on", step=50),
    Setting("min_score", "float", None, "drop scored candidates under this score", "a number or null",
            nullable=True, link="min", off_value=0.5, switch="min_score_on", step=0.05),
    Setting("drop_unscored", "bool", False, "with min_score set, drop candidates that carry no score (as "
            "LlamaIndex's SimilarityPostprocessor does) instead of letting them pass unchecked", "true or false",
            flag_value=True, link="unsc", control="checkbox"),
    Setting("near_dup", "float", 0.8, "near-duplicate threshold (similarity at or above it is a duplicate)",
            "a similarity above 0 and at most 1, or null to switch it off", lo=0, hi=1, lo_open=True,
            nullable=True, off_flag="--no-near-dup", link="nd", control="slider", step=0.01,
            off_value=0.8, switch="near_dup_on"),
    Setting("similarity", "choice", "words", "near-duplicate similarity measure", "one of words, shingles, cosine",
            choices=tuple(c for c, _ in SIMILARITIES), meanings=SIMILARITIES, link="sim", control="select"),
    Setting("prefer_newest", "bool", True, "drop older versions of a passage (one document's same section) when a newer one is present",
            "true or false", flag="--no-prefer-newest", flag_value=False, link="newest", control="checkbox"),
    Setting("select", "choice", "score", "how evidence is chosen under the budget", "one of score, density, mmr",
            choices=tuple(c for c, _ in SELECTIONS), meanings=SELECTIONS, link="sel", control="radio"),
    Setting("mmr_lambda", "float", 0.7, "MMR: weight of relevance against diversity", "between 0 and 1",
            lo=0, hi=1, link="lam", control="slider", step=0.01),
    Setting("order", "choice", "sandwich", "order of the passages in the prompt",
            "one of rank, sandwich, lost-in-the-middle, document, original", choices=tuple(c for c, _ in ORDERS),
            meanings=ORDERS,
            link="order", control="select"),
    Setting("max_passages", "int", None, "at most this many passages, even when the budget has room",
            "a whole number, 1 or more, or null", lo=1, nullable=True, link="maxp", off_value=10,
            switch="max_passages_on", step=1),
    Setting("label_overhead", "overhead", "auto", "tokens a passage's label line costs: measured (auto) or fixed",
            "a whole number of tokens or 'auto'", lo=0, link="label", off_value=10, switch="label_auto",
            switch_word="auto", flag=None),
    Setting("compress", "bool", False, "cut oversized or non-fitting chunks to their query-relevant sentences",
            "true or false", flag_value=True, link="comp", control="checkbox"),
    Setting("max_chunk_tokens", "int", None, "per-chunk cap (tokens); over it a chunk is compressed or dropped",
            "a whole number of tokens, 1 or more, or null", lo=1, nullable=True, link="cap", off_value=200,
            switch="max_chunk_on", step=50),
    Setting("merge_adjacent", "bool", False, "join chunks of one document with consecutive chunk indexes",
            "true or false", flag_value=True, link="merge", control="checkbox"),
    Setting("caller", "text", None, "who asks: candidates whose permissions exclude the caller are not_permitted",
            "a string", nullable=True, link="caller", control="text"),
)
BY_NAME = {s.name: s for s in SETTINGS}
AUTO_HISTORY_SHARE = 0.40  # history_share auto: the history gets what its kept turns use, at most this share
CHOICES = {s.name: s.choices for s in SETTINGS if s.kind == "choice"}


def check(config) -> None:
    """Raise InputError naming the first invalid setting of ``config`` (a Config); a model sets the encoding."""
    model = BY_NAME["model"]
    if (why := model.problem(config.model)) is not None:
        raise InputError(f"{why} (got {config.model!r})", source="config", field="model")
    if config.model is not None:
        object.__setattr__(config, "encoding", encoding_for_model(config.model))
    for s in SETTINGS:
        value = getattr(config, s.name)
        why = s.problem(value)
        if why is not None:
            raise InputError(f"{why} (got {value!r})", source="config", field=s.name)
    if config.window <= config.max_output:
        raise InputError(f"must be larger than max_output (got {config.window!r})", source="config", field="window")


def markdown_table() -> str:
    """The README's settings table: every setting with its default, CLI flag, link key and meaning."""
    rows = ["| setting | default | CLI | link | what it does |", "|---|---|---|---|---|"]
    for s in SETTINGS:
        flags = " / ".join(f"`{f}`" for f in (s.cli, s.off_flag) if f)
        what = s.help + (" (" + "; ".join(f"`{c}`: {m}" for c, m in s.meanings) + ")" if s.meanings else "")
        default = "null" if s.default is None else str(s.default).lower() if isinstance(s.default, bool) else s.default
        rows.append(f"| `{s.name}` | `{default}` | {flags} | {f'`{s.link}`' if s.link else ''} | {what} |")
    return "\n".join(rows)
