"""Extractive compression: keep the sentences that share the most words with the
query, verbatim and in source order, within a token limit. Never cuts inside a
sentence, so a quote from a compressed passage is still a quote from the source."""

from __future__ import annotations

import re
from typing import Callable, Optional

from .similarity import words

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def sentences(text: str) -> list[str]:
    """Split after ., ! or ? followed by whitespace.

    >>> sentences("One. Two!  Three? four")
    ['One.', 'Two!', 'Three?', 'four']
    """
    return [s.strip() for s in _SENTENCE_END.split(text) if s.strip()]


def shrink(text: str, query: str, limit: int, count: Callable[[str], int]) -> Optional[str]:
    """The query-relevant sentences of ``text`` that fit in ``limit`` tokens, or None.

    Sentences sharing no word with the query are never kept.

    >>> long = ("Refunds are processed within five business days. "
    ...         "During the holiday season our team works around the clock.")
    >>> shrink(long, "how long do refunds take", 20, lambda s: len(s.split()))
    'Refunds are processed within five business days.'
    """
    if limit <= 0:
        return None
    wanted = words(query)
    parts = sentences(text)
    ranked = sorted((i for i, s in enumerate(parts) if wanted & words(s)),
                    key=lambda i: (-len(wanted & words(parts[i])), i))
    chosen: list[int] = []
    for i in ranked:
        trial = sorted(chosen + [i])
        if count(" ".join(parts[j] for j in trial)) <= limit:
            chosen = trial
    return " ".join(parts[j] for j in chosen) if chosen else None
