"""Every cache the engine keeps, owned here: bounded, safe under concurrent builds, cleared in one call.

Two kinds. A :class:`Memo` holds a stage's result for the last few inputs, so a
slider move redoes only what it changed: at most ``most`` entries each, and, across
all of them, entries made for the last :data:`INPUTS` candidate sets only (a build
names its input with :func:`building`; an older input's entries all go when a new
one arrives, so a closed session's upload is not held by the stage memos). A :class:`ByText` holds results of a pure
function of one text (token counts, word sets, label lines); they never go stale,
so they are bounded by the bytes they hold instead: ``CTXCORE_CACHE_MB`` (default
512) shared between them. Streamlit runs sessions as threads of one process, so
writes take a lock, and the collector pause of a build is counted across builds.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import os
import threading
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Callable, TypeVar

T = TypeVar("T")
V = TypeVar("V")

_LOCK = threading.RLock()
_MISSING = object()


def _read_total_bytes() -> int:
    try:
        mb = float(os.environ.get("CTXCORE_CACHE_MB", "512"))
    except ValueError:
        mb = 512.0
    return max(1, int(mb * 1024 * 1024))


_TOTAL = _read_total_bytes()  # read once: every cached result checks it, and the environment is slow to read


def _total_bytes() -> int:
    return _TOTAL


_ONE_SHOT: ContextVar = ContextVar("ctxcore.memo.one_shot", default=False)


@contextmanager
def one_shot():
    """Within this block no rebuild will follow (a CLI ``build``): stages skip the work they do only so
    that a rebuild with other settings is cheap.

    >>> with one_shot(): rebuilds_expected()
    False
    >>> rebuilds_expected()
    True
    """
    token = _ONE_SHOT.set(True)
    try:
        yield
    finally:
        _ONE_SHOT.reset(token)


def rebuilds_expected() -> bool:
    return not _ONE_SHOT.get()


INPUTS = 4  # candidate sets whose stage results are remembered (each app session has one at a time)
_INPUT: ContextVar = ContextVar("ctxcore.memo.input", default=None)
_RECENT: "OrderedDict[tuple, None]" = OrderedDict()  # the last INPUTS inputs, oldest first


class Memo(dict):
    """A dict of at most ``most`` entries, oldest dropped first; an entry made while a build of some
    input runs (:func:`building`) is dropped, too, when that input is no longer among the last INPUTS."""

    def __init__(self, most: int):
        super().__init__()
        self.most = most
        self.inputs: dict = {}  # key -> the input it was made for (only for entries made within a build)
        _MEMOS.append(self)

    def keep(self, key, value: V) -> V:
        """Store ``value`` as the newest entry, dropping the oldest when full; returns it.

        >>> m = Memo(2); _ = m.keep("a", 1), m.keep("b", 2), m.keep("c", 3); sorted(m)
        ['b', 'c']
        """
        with _LOCK:
            self.pop(key, None)
            self.inputs.pop(key, None)
            while len(self) >= self.most:
                oldest = next(iter(self))
                self.pop(oldest)
                self.inputs.pop(oldest, None)
            made_for = _INPUT.get()
            if made_for is None or made_for in _RECENT:  # (an input dropped while its build ran: not kept)
                self[key] = value
                if made_for is not None:
                    self.inputs[key] = made_for
        return value

    def of(self, obj: T, make: Callable[[T], V]) -> V:
        """``make(obj)``, remembered for this very object: keyed by identity, since a tuple of 10k
        records hashes slowly; the entry holds the object, so no other can take its id."""
        held = self.get(id(obj))
        if held is None or held[0] is not obj:
            held = self.keep(id(obj), (obj, make(obj)))
        return held[1]

    def clear(self) -> None:
        with _LOCK:
            super().clear()
            self.inputs.clear()

    def _drop_input(self, gone) -> None:
        for key in [k for k, made_for in self.inputs.items() if made_for == gone]:
            self.pop(key, None)
            del self.inputs[key]


@contextmanager
def building(candidates):
    """Within this block, stage memos file what they keep under this input (its records, by identity).
    Entering with an input that is not among the last :data:`INPUTS` drops every entry made for the
    oldest one.

    >>> first, others = (object(),), [(object(),) for _ in range(INPUTS)]
    >>> m = Memo(8)
    >>> with building(first): _ = m.keep("x", 1)
    >>> for other in others:
    ...     with building(other): pass
    >>> "x" in m, len(_RECENT) == INPUTS
    (False, True)
    >>> _MEMOS.remove(m)
    """
    ident = tuple(map(id, candidates))
    with _LOCK:
        if ident in _RECENT:
            _RECENT.move_to_end(ident)
        else:
            _RECENT[ident] = None
            while len(_RECENT) > INPUTS:
                gone, _ = _RECENT.popitem(last=False)
                for memo in _MEMOS:
                    memo._drop_input(gone)
    token = _INPUT.set(ident)
    try:
        yield
    finally:
        _INPUT.reset(token)


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
        _RECENT.clear()


def clear() -> None:
    """Clear everything: stage memos and caches by text (for measuring a cold build)."""
    forget()
    with _LOCK:
        for cache in _BY_TEXT.values():
            cache.clear()


def held_bytes() -> int:
    """Bytes the caches by text are charged for, all together."""
    return sum(c.bytes for c in list(_BY_TEXT.values()))


def _libc_trim():
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return libc.malloc_trim
    except (OSError, AttributeError):  # not glibc: nothing to call
        return None


_TRIM = _libc_trim()


def give_back() -> None:
    """Collect garbage and hand freed heap memory back to the system (glibc ``malloc_trim``; elsewhere
    only the collection). Freed memory otherwise stays in the process: a server's RSS would keep the
    high-water mark of every upload it has seen. Costs a full collection and a walk of the free heap
    (tens of milliseconds at a few hundred MB): for after a large input is gone, not for every rerun."""
    gc.collect()
    if _TRIM is not None:
        _TRIM(0)


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


_POOLS: dict[tuple[int, str], ThreadPoolExecutor] = {}


def pool(name: str, workers: int) -> ThreadPoolExecutor:
    """This process's thread pool ``name``. A process forked from one that used a pool (``multiprocessing``'s
    default on Linux, a pre-forking server) inherits the pool's records but none of its threads, and work handed
    to it would wait forever; so each process makes its own.

    >>> pool("example", 1).submit(len, "four").result()
    4
    """
    key = (os.getpid(), name)
    found = _POOLS.get(key)
    if found is None:  # two threads may both make one: setdefault keeps the first, the other never starts a thread
        found = _POOLS.setdefault(key, ThreadPoolExecutor(max_workers=workers, thread_name_prefix="ctxcore-" + name))
    return found
