"""Did a candidate's text reach a prompt that was actually sent? Whole, partly, or not at all.

Matching is on whitespace-normalised, case-folded text, so a logged prompt that
re-wrapped lines still matches; a passage cut off part-way (a truncated tail)
counts as partly there, with the share that made it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from ..stages.compress import sentences


def normalise(text: str) -> str:
    """Case-folded text with every run of whitespace made one space.

    >>> normalise("  Refunds\\n take   5 days ")
    'refunds take 5 days'
    """
    return " ".join(text.casefold().split())


@dataclass(frozen=True)
class Reach:
    id: str
    status: str            # "whole", "partly", "absent"
    share: float           # fraction of the candidate's characters found
    offset: Optional[int]  # where in the normalised prompt it starts, when found
    order: Optional[int] = None  # 1-based order among the candidates found in the prompt


def _longest_prefix(needle: str, haystack: str) -> tuple[int, int]:
    """Length of the longest prefix of needle found in haystack, and where (binary search:
    if a prefix is present, so is every shorter one)."""
    lo, hi, at = 0, len(needle), -1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        pos = haystack.find(needle[:mid])
        if pos >= 0:
            lo, at = mid, pos
        else:
            hi = mid - 1
    return lo, at


def reached(candidates, prompt: str, *, min_chars: int = 40) -> list[Reach]:
    """For each candidate, whether (and where) its text is in ``prompt``."""
    hay = normalise(prompt)
    out = []
    for c in candidates:
        text = normalise(c.text)
        if not text:
            out.append(Reach(c.id, "absent", 0.0, None))
            continue
        pos = hay.find(text)
        if pos >= 0:
            out.append(Reach(c.id, "whole", 1.0, pos))
            continue
        length, at = _longest_prefix(text, hay)
        found = length if length >= min(min_chars, len(text)) else 0
        # a passage cut at its start, or with a sentence removed: count the sentences that are there
        parts = [normalise(s) for s in sentences(c.text)]
        present = [p for p in parts if len(p) >= 20 and p in hay]
        by_sentences = sum(len(p) for p in present)
        if by_sentences > found:
            found, at = by_sentences, hay.find(present[0])
        share = round(found / len(text), 3)
        out.append(Reach(c.id, "partly", share, at) if found else Reach(c.id, "absent", 0.0, None))
    found = sorted((r for r in out if r.offset is not None), key=lambda r: r.offset)
    order = {r.id: i for i, r in enumerate(found, 1)}
    return [Reach(r.id, r.status, r.share, r.offset, order.get(r.id)) for r in out]




@dataclass(frozen=True)
class Difference:
    id: str
    logged: str              # whole / partly / absent in the prompt that was actually sent
    logged_order: Optional[int]
    replay: str              # the candidate's fate in the replay
    replay_position: Optional[int]
    change: str              # "both", "neither", "only logged", "only replay"


def logged_vs_replay(trace, logged_prompt: str) -> list[Difference]:
    """For every candidate: did the logged system send it, does the replay keep it, and what differs."""
    seen = {r.id: r for r in reached(trace.candidates, logged_prompt)}
    out = []
    for d in trace.decisions:
        r = seen[d.id]
        sent, kept = r.status != "absent", d.fate == "kept"
        change = {(True, True): "both", (False, False): "neither", (True, False): "only logged",
                  (False, True): "only replay"}[(sent, kept)]
        out.append(Difference(d.id, r.status, r.order, d.fate, d.position, change))
    return out
