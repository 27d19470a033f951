"""Every cache the engine keeps, owned here: bounded, safe under concurrent builds, cleared in one call.

Two kinds. A :class:`Memo` holds a stage's result for the last few inputs, so a
slider move redoes only what it changed. A :class:`ByText` holds results of a pure
function of one text (token counts, word sets, label lines); they never go stale,
so they are bounded by the bytes they hold instead: ``CTXCORE_CACHE_MB`` (default
512) shared between them. Streamlit runs sessions as threads of one process, so
writes take a lock, and the collector pause of a build is counted across builds.
"""

from __future__ import annotations

import gc
import os
import threading
from contextlib import contextmanager
from typing import Callable, TypeVar

T = TypeVar("T")
V = TypeVar("V")

_LOCK = threading.RLock()
_MISSING = object()


def _total_bytes() -> int:
    try:
        mb = float(os.environ.get("CTXCORE_CACHE_MB", "512"))
    except ValueError:
        mb = 512.0
    return max(1, int(mb * 1024 * 1024))


class Memo(dict):
    """A dict of at most ``most`` entries, oldest dropped first."""

    def __init__(self, most: int):
        super().__init__()
        self.most = most
        _MEMOS.append(self)

    def keep(self, key, value: V) -> V:
        """Store ``value`` as the newest entry, dropping the oldest when full; returns it.

        >>> m = Memo(2); _ = m.keep("a", 1), m.keep("b", 2), m.keep("c", 3); sorted(m)
        ['b', 'c']
        """
        with _LOCK:
            self.pop(key, None)
            while len(self) >= self.most:
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


def _cost(key) -> int:
    """Bytes a cached entry is charged: its texts, three times over for the result, plus a fixed part."""
    if isinstance(key, str):
        return 96 + 3 * len(key)
    if isinstance(key, tuple):  # small values, texts, or a record with its text
        return 96 + 3 * sum(len(k) if isinstance(k, str) else len(getattr(k, "text", "")) for k in key)
    return 96


class ByText(dict):
    """Results by text, the oldest dropped first once the entries' bytes pass this cache's share.

    >>> c = ByText("example", share=0, most_bytes=200); c.put("x" * 10, 1); c.put("y", 2); list(c)
    ['y']
    >>> del _BY_TEXT["example"]
    """

    def __init__(self, name: str, share: float, most_bytes: int | None = None):
        super().__init__()
        self.name, self.share, self.most_bytes, self.bytes = name, share, most_bytes, 0
        _BY_TEXT[name] = self

    @property
    def limit(self) -> int:
        return self.most_bytes if self.most_bytes is not None else int(_total_bytes() * self.share)

    def put(self, key, value) -> None:
        cost = _cost(key)
        with _LOCK:
            if key not in self:
                self.bytes += cost
            self[key] = value
            if self.bytes > self.limit:
                self._shrink()

    def put_many(self, pairs) -> None:
        with _LOCK:
            for key, value in pairs:
                if key not in self:
                    self.bytes += _cost(key)
                self[key] = value
            if self.bytes > self.limit:
                self._shrink()

    def _shrink(self) -> None:
        limit = self.limit
        while self and self.bytes > limit:
            key = next(iter(self))
            del self[key]
            self.bytes -= _cost(key)

    def clear(self) -> None:
        with _LOCK:
            super().clear()
            self.bytes = 0


def by_text(name: str, share: float = 0.05) -> Callable:
    """Decorate a pure function of its arguments (texts and small values) with a :class:`ByText`.

    >>> @by_text("doubled")
    ... def doubled(text): return text * 2
    >>> doubled("ab"), doubled.cache["ab"]
    ('abab', 'abab')
    >>> del _BY_TEXT["doubled"]
    """

    def wrap(fn):
        cache = ByText(name, share)
        get, put = cache.get, cache.put

        def cached(*args):
            key = args[0] if len(args) == 1 else args
            value = get(key, _MISSING)
            if value is _MISSING:
                value = fn(*args)
                put(key, value)
            return value

        cached.__wrapped__, cached.__doc__, cached.__name__ = fn, fn.__doc__, fn.__name__
        cached.__module__, cached.cache, cached.cache_clear = fn.__module__, cache, cache.clear
        return cached

    return wrap


def text_cache(name: str, share: float) -> ByText:
    """The cache called ``name``, made on first use (token counts keep one per encoding)."""
    with _LOCK:
        return _BY_TEXT.get(name) or ByText(name, share)


_MEMOS: list[Memo] = []
_BY_TEXT: dict[str, ByText] = {}


def forget() -> None:
    """Clear every stage memo (what rebuilds resume from), keeping the caches by text."""
    with _LOCK:
        for memo in _MEMOS:
            memo.clear()


def clear() -> None:
    """Clear everything: stage memos and caches by text (for measuring a cold build)."""
    forget()
    with _LOCK:
        for cache in _BY_TEXT.values():
            cache.clear()


def held_bytes() -> int:
    """Bytes the caches by text are charged for, all together."""
    return sum(c.bytes for c in list(_BY_TEXT.values()))


_PAUSES = 0
_RESUME = False


@contextmanager
def collector_paused():
    """Pause the cyclic collector while any build runs, and resume it when the last one ends.

    A build makes tens of thousands of records and no reference cycles; the collector would only
    re-scan the cached records meanwhile. Counted, so concurrent builds never leave it off.
    """
    global _PAUSES, _RESUME
    with _LOCK:
        if _PAUSES == 0:
            _RESUME = gc.isenabled()
            gc.disable()
        _PAUSES += 1
    try:
        yield
    finally:
        with _LOCK:
            _PAUSES -= 1
            if _PAUSES == 0 and _RESUME:
                gc.enable()
