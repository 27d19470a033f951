"""The link scheme: one LinkParam per query parameter, its store field, its encoding and its valid range (pure)."""

from __future__ import annotations

import dataclasses
import math
import re
from typing import Optional

import ctxcore

from .settings import ORDER_HELP, SELECT_HELP, SLIDER_RANGES


LINK_PAGE_KEYS = {"step", "lv", "a", "b"}
MAX_TOKENS = 10_000_000


@dataclasses.dataclass(frozen=True)
class LinkParam:
    """One link parameter: the store field it sets, how to read and write it, and its valid range."""

    key: str
    field: str                      # store field holding the value
    kind: str                       # int | float | bool | choice | tokenizer | text | list
    config: Optional[str] = None    # the Config field it feeds (to name a parameter in a settings error)
    lo: Optional[float] = None
    hi: Optional[float] = None
    options: tuple = ()
    switch: Optional[str] = None    # store field of the on/off toggle that goes with the value
    word: str = "off"               # the word standing for the toggle's state ``word_state``
    word_state: bool = False

    def encode(self, values: dict) -> str:
        if self.switch and bool(values.get(self.switch)) == self.word_state:
            return self.word
        v = values.get(self.field)
        if self.kind == "bool":
            return "1" if v else "0"
        if self.kind == "float":
            text = repr(float(v))
            return text[:-2] if text.endswith(".0") else text
        if self.kind == "int":
            return str(int(v))
        if self.kind == "list":
            return ",".join(v or [])
        return "" if v is None else str(v)

    def decode(self, text: str) -> dict:
        """Store updates for ``text``; ValueError (saying what is allowed) when it is not valid."""
        text = str(text).strip()
        if self.switch and text.lower() == self.word:
            return {self.switch: self.word_state}
        value = self._value(text)
        return {self.switch: not self.word_state, self.field: value} if self.switch else {self.field: value}

    def _allowed(self) -> str:
        prefix = f"'{self.word}' or " if self.switch else ""
        if self.kind == "int":
            return f"{prefix}a whole number from {self.lo:,.0f} to {self.hi:,.0f}"
        if self.kind == "float":
            return f"{prefix}a number from {self.lo:g} to {self.hi:g}"
        if self.kind == "bool":
            return "1 or 0"
        if self.kind in ("choice", "list"):
            return ("one of " if self.kind == "choice" else "a comma-separated list of ") + ", ".join(self.options)
        if self.kind == "tokenizer":
            return "an encoding (" + ", ".join(ctxcore.ENCODINGS) + ") or a known model name"
        return f"text of at most {self.hi:,.0f} characters"

    def _value(self, text: str):
        bad = ValueError(f"must be {self._allowed()}")
        if self.kind == "int":
            if not re.fullmatch(r"[+-]?\d{1,12}", text):
                raise bad
            value = int(text)
        elif self.kind == "float":
            try:
                value = float(text)
            except ValueError:
                raise bad from None
            if not math.isfinite(value):
                raise bad
        elif self.kind == "bool":
            low = text.lower()
            if low not in ("1", "0", "true", "false", "yes", "no", "on", "off"):
                raise bad
            return low in ("1", "true", "yes", "on")
        elif self.kind == "choice":
            if text not in self.options:
                raise bad
            return text
        elif self.kind == "list":
            items = [t.strip() for t in text.split(",") if t.strip()]
            if any(t not in self.options for t in items):
                raise bad
            return items
        elif self.kind == "tokenizer":
            if text not in ctxcore.ENCODINGS:
                try:
                    ctxcore.encoding_for_model(text)
                except KeyError:
                    raise bad from None
            return text
        else:  # text
            if len(text) > self.hi:
                raise bad
            return text
        if not self.lo <= value <= self.hi:
            raise bad
        return value


LINK_PARAMS: tuple[LinkParam, ...] = (
    LinkParam("tok", "tokenizer", "tokenizer", "encoding"),
    LinkParam("win", "window", "int", "window", 1, MAX_TOKENS),
    LinkParam("out", "max_output", "int", "max_output", 0, MAX_TOKENS),
    LinkParam("safety", "safety", "float", "safety", *SLIDER_RANGES["safety"]),
    LinkParam("hist", "history_share", "float", "history_share", *SLIDER_RANGES["history_share"]),
    LinkParam("budget", "budget", "int", "budget", 0, MAX_TOKENS, switch="budget_on"),
    LinkParam("min", "min_score", "float", "min_score", -1e9, 1e9, switch="min_score_on"),
    LinkParam("nd", "near_dup", "float", "near_dup", *SLIDER_RANGES["near_dup"], switch="near_dup_on"),
    LinkParam("sim", "similarity", "choice", "similarity", options=("words", "shingles", "cosine")),
    LinkParam("newest", "prefer_newest", "bool", "prefer_newest"),
    LinkParam("sel", "select", "choice", "select", options=tuple(SELECT_HELP)),
    LinkParam("lam", "mmr_lambda", "float", "mmr_lambda", *SLIDER_RANGES["mmr_lambda"]),
    LinkParam("order", "order", "choice", "order", options=tuple(ORDER_HELP)),
    LinkParam("maxp", "max_passages", "int", "max_passages", 1, 100_000, switch="max_passages_on"),
    LinkParam("label", "label_overhead", "int", "label_overhead", 0, 100_000, switch="label_auto", word="auto",
              word_state=True),
    LinkParam("comp", "compress", "bool", "compress"),
    LinkParam("cap", "max_chunk_tokens", "int", "max_chunk_tokens", 1, MAX_TOKENS, switch="max_chunk_on"),
    LinkParam("merge", "merge_adjacent", "bool", "merge_adjacent"),
    LinkParam("caller", "caller", "text", "caller", hi=200),
    LinkParam("fixed", "fixed", "int", None, 0, MAX_TOKENS),
    LinkParam("q", "query", "text", None, hi=4000),
    LinkParam("fates", "fates", "list", None, options=tuple(ctxcore.FATES)),
)
LINK_BY_KEY = {p.key: p for p in LINK_PARAMS}
