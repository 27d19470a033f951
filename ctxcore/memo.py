"""Bounded memos the stages keep between rebuilds, so a slider move redoes only what it changed.

Each keeps its newest few entries; :func:`forget` clears every one (the benchmark does, to measure
a first rebuild). Caches by text (token counts, word sets of one text) are not here: they never go
stale, and the pipeline clears them separately.
"""

from __future__ import annotations

from typing import Callable, TypeVar

T = TypeVar("T")
V = TypeVar("V")


class Memo(dict):
    """A dict of at most ``most`` entries, oldest dropped first."""

    def __init__(self, most: int):
        super().__init__()
        self.most = most
        _ALL.append(self)

    def keep(self, key, value: V) -> V:
        """Store ``value`` as the newest entry, dropping the oldest when full; returns it.

        >>> m = Memo(2); _ = m.keep("a", 1), m.keep("b", 2), m.keep("c", 3); sorted(m)
        ['b', 'c']
        """
        self.pop(key, None)
        if len(self) >= self.most:
            self.pop(next(iter(self)))
        self[key] = value
        return value

    def of(self, obj: T, make: Callable[[T], V]) -> V:
        """``make(obj)``, remembered for this very object: keyed by identity, since a tuple of 10k
        records hashes slowly; the entry holds the object, so no other can take its id."""
        held = self.get(id(obj))
        if held is None or held[0] is not obj:
            held = self.keep(id(obj), (obj, make(obj)))
        return held[1]


_ALL: list[Memo] = []


def forget() -> None:
    """Clear every memo."""
    for memo in _ALL:
        memo.clear()
