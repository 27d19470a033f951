"""The link scheme: one LinkParam per query parameter, its store field, its encoding and its valid range (pure)."""

from __future__ import annotations

import dataclasses
import math
import re
from typing import Optional

import ctxcore

from ctxcore.settings import BY_NAME, MAX_TOKENS, SETTINGS, _is_int, _is_number


LINK_PAGE_KEYS = {"step", "lv", "a", "b"}


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

    def check(self, value) -> None:
        """ValueError (saying what is allowed) when a stored control value, as a saved case holds it, is not one
        this parameter allows: the same rules as its link text, on the value itself."""
        bad = ValueError(f"must be {self._allowed(switch=False)}")
        if self.kind == "int" and not _is_int(value) or self.kind == "float" and not _is_number(value):
            raise bad
        if self.kind == "bool" and not isinstance(value, bool):
            raise bad
        if self.kind == "list" and not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
            raise bad
        if self.kind in ("choice", "tokenizer", "text") and not isinstance(value, str):
            raise bad
        if self.kind == "list":
            self._value(",".join(value))
        elif self.kind in ("int", "float"):
            if not self._in_range(value):
                raise bad
        elif self.kind != "bool":
            self._value(value)

    def _in_range(self, value) -> bool:
        setting = BY_NAME.get(self.config or "")
        if setting is not None:  # the registry's bounds, open ends included
            return setting.problem(value) is None
        return self.lo <= value <= self.hi

    def _allowed(self, switch: bool = True) -> str:
        prefix = f"'{self.word}' or " if self.switch and switch else ""
        setting = BY_NAME.get(self.config or "")
        if setting is not None and self.kind in ("int", "float"):
            return setting.must if f"'{self.word}'" in setting.must else prefix + setting.must
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
        if not self._in_range(value):
            raise bad
        return value


def _setting_link(s) -> LinkParam:
    """The link parameter of one declared setting: its key, kind and range come from the declaration."""
    kind = {"encoding": "tokenizer", "overhead": "int", "share": "float"}.get(s.kind, s.kind)
    lo, hi = s.lo, s.hi
    if kind == "int":
        lo, hi = (0 if lo is None else lo), (MAX_TOKENS if hi is None else hi)
    elif kind == "float":
        lo, hi = (-1e9 if lo is None else lo), (1e9 if hi is None else hi)
    elif kind == "text":
        hi = 200
    return LinkParam(s.link, "tokenizer" if kind == "tokenizer" else s.name, kind, s.name, lo, hi,
                     options=s.choices, switch=s.switch, word=s.switch_word, word_state=s.switch_word == "auto")


LINK_PARAMS: tuple[LinkParam, ...] = tuple(_setting_link(s) for s in SETTINGS if s.link) + (
    LinkParam("fixed", "fixed", "int", None, 0, MAX_TOKENS),
    LinkParam("q", "query", "text", None, hi=4000),
    LinkParam("fates", "fates", "list", None, options=tuple(ctxcore.FATES)),
)
LINK_BY_KEY = {p.key: p for p in LINK_PARAMS}
_BY_FIELD = {p.field: p for p in LINK_PARAMS}
_SWITCHES = {p.switch for p in LINK_PARAMS if p.switch}


def control_problem(field: str, value) -> Optional[str]:
    """Why a stored control value (a saved case's settings) is not valid, or None; a field no control has is
    not judged here."""
    if field in _SWITCHES:
        return None if isinstance(value, bool) else "must be true or false"
    param = _BY_FIELD.get(field)
    if param is None:
        return None
    try:
        param.check(value)
    except ValueError as err:
        return str(err)
    return None
