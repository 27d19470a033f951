"""Stage: token counts with the model's real tokenizer, offline, cached by text.

tiktoken fetches its vocabulary over the network on first use. The PyPI package
``bpe-openai`` ships the same files byte for byte, so we place them where
tiktoken looks for its cache and let tiktoken verify the hash itself. Nothing is
ever downloaded. When no vocabulary can be had, an approximate counter is used
and the trace says so.
"""

from __future__ import annotations

import gzip
import hashlib
import math
import os
import tempfile
from bisect import bisect_left
from dataclasses import dataclass
from importlib import resources
from itertools import accumulate

from ..encodings import ENCODINGS, encoding_for_model  # noqa: F401  (re-exported: the stage's callers use them)
from ..encodings import VOCABULARIES as _VOCABULARIES
from ..memo import ByText, Memo, pool, text_cache

APPROXIMATE = "approx_chars4"


def _tiktoken_cache_dir() -> str | None:
    """The directory tiktoken will read its cache from (None: caching disabled)."""
    for var in ("TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR"):
        if var in os.environ:
            return os.environ[var] or None
    return os.path.join(tempfile.gettempdir(), "data-gym-cache")


def _seed_cache(name: str) -> None:
    url, expected = _VOCABULARIES[name]
    cache_dir = _tiktoken_cache_dir()
    if cache_dir is None:
        raise LookupError("tiktoken caching is disabled (TIKTOKEN_CACHE_DIR is empty)")
    path = os.path.join(cache_dir, hashlib.sha1(url.encode()).hexdigest())
    if os.path.exists(path):
        with open(path, "rb") as f:
            if hashlib.sha256(f.read()).hexdigest() == expected:
                return
    data = gzip.decompress(resources.files("bpe_openai.data").joinpath(f"{name}.tiktoken.gz").read_bytes())
    if hashlib.sha256(data).hexdigest() != expected:
        raise LookupError(f"the {name} vocabulary shipped by bpe-openai does not have the expected hash")
    os.makedirs(cache_dir, exist_ok=True)
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


@dataclass(frozen=True)
class Tokenizer:
    """Counts tokens for one encoding; ``exact`` is False for the fallback."""

    name: str
    exact: bool
    _encoding: object = None

    def encode(self, text: str) -> list[int]:
        if self._encoding is None:
            return list(range(_approximate(text)))
        return self._encoding.encode_ordinary(text)

    def count(self, text: str) -> int:
        return _count_cached(self, text)

    def count_many(self, texts) -> list[int]:
        """Counts for many texts; uncached ones are tokenized once each, on every core."""
        return self.count_later(texts).result()

    def count_later(self, texts) -> "Counting":
        """Start counting ``texts`` in the background; ``.result()`` gives the counts in order."""
        return Counting(self, list(texts))

    def pieces(self, text: str) -> list[str]:
        """The text split at token boundaries (for showing them)."""
        if self._encoding is None:
            return [text[i : i + 4] for i in range(0, len(text), 4)]
        ids = self._encoding.encode_ordinary(text)
        return [b.decode("utf-8", errors="replace") for b in self._encoding.decode_tokens_bytes(ids)]

    def piece_tokens(self, pieces: list[str]) -> tuple[list[tuple[int, int]], int]:
        """:meth:`piece_tokens_whole`, counting each run of pieces that tokenises alone by itself (with the
        count remembered by text): the builds of one run share most of their pieces, so a rebuild counts
        only the pieces that changed. A piece ending in a line break before a piece starting with an ASCII
        letter, ``<`` or ``[`` is such a boundary for both encodings' pre-tokenizers: no pattern of theirs
        carries a match from a line end into those characters (o200k's punctuation run does carry one into
        ``/``), so the tokens of the whole are the runs' tokens one after another. A test holds the two equal.

        >>> tok, pieces = get_tokenizer("cl100k_base"), ["<a>\\n", "[S1] x.\\n\\n", "Question: y"]
        >>> tok.piece_tokens(pieces)
        ([(0, 2), (2, 7), (7, 10)], 10)
        >>> tok.piece_tokens(pieces) == tok.piece_tokens_whole(pieces)
        True
        """
        if self.name not in _ALONE_AFTER_LINE_END or not _utf8(pieces):
            return self.piece_tokens_whole(pieces)
        out: list[tuple[int, int]] = []
        at = 0
        for a, b in _runs(pieces):
            if b - a == 1:
                n = _count_cached(self, pieces[a], _piece_counts(self.name))
                out.append((at, at + n))
            else:
                spans, n = self.piece_tokens_whole(pieces[a:b])
                out.extend((at + s, at + e) for s, e in spans)
            at += n
        return out, at

    def piece_tokens_whole(self, pieces: list[str]) -> tuple[list[tuple[int, int]], int]:
        """For the text ``"".join(pieces)``: each piece's (first token, end token), as
        ``bisect_left`` over :meth:`offsets` gives them, and the text's token count (the plain definition).

        Works in bytes (token byte lengths are remembered per token id), which is several times
        faster than character offsets on a long prompt and gives the same indexes.

        >>> get_tokenizer("cl100k_base").piece_tokens_whole(["Hello", " world", "!"])
        ([(0, 1), (1, 2), (2, 3)], 3)
        """
        text = "".join(pieces)
        try:
            sizes = [len(p.encode("utf-8")) for p in pieces]
        except UnicodeEncodeError:  # lone surrogates: tiktoken encodes a repaired text, so count characters
            sizes = None
        if self._encoding is None or sizes is None:
            starts, sizes = self.offsets(text), [len(p) for p in pieces]
            count = len(starts)
        else:
            ids = self._encoding.encode_ordinary(text)
            known = _TOKEN_BYTES.setdefault(self.name, {})
            decode = self._encoding.decode_single_token_bytes
            lengths = [known.get(t) or known.setdefault(t, len(decode(t))) for t in ids]
            starts, count = list(accumulate(lengths, initial=0))[:-1], len(ids)
        out, at = [], 0
        for size in sizes:
            out.append((bisect_left(starts, at), bisect_left(starts, at + size)))
            at += size
        return out, count

    def offsets(self, text: str) -> list[int]:
        """Character offset where each token of ``text`` starts."""
        if self._encoding is None:
            return list(range(0, len(text), 4))
        _, starts = self._encoding.decode_with_offsets(self._encoding.encode_ordinary(text))
        return starts


_ALONE_AFTER_LINE_END = frozenset({"cl100k_base", "o200k_base"})  # checked against their patterns: see piece_tokens
_STARTS_ALONE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ<[")


def _runs(pieces: list[str]) -> list[tuple[int, int]]:
    """(start, end) of the runs of ``pieces`` between boundaries where the text tokenises apart.

    >>> _runs(["a\\n", "b", "c\\n", "[d", "e\\n", "/f"])
    [(0, 1), (1, 3), (3, 6)]
    """
    out, start = [], 0
    for i in range(1, len(pieces)):
        if pieces[i - 1].endswith("\n") and pieces[i][:1] in _STARTS_ALONE:
            out.append((start, i))
            start = i
    if pieces:
        out.append((start, len(pieces)))
    return out


def _utf8(pieces: list[str]) -> bool:
    """Whether the pieces hold no lone surrogate (tiktoken encodes a repaired text for those)."""
    try:
        "".join(pieces).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


class Counting:
    """Token counts of many texts, made while the caller does other work.

    A background thread takes the uncached texts a slice at a time; when the
    caller asks for the result it takes slices too, so every core counts and
    no text is counted twice. tiktoken releases the GIL while it encodes, so
    the stages that need only the text (filters, dedup) run meanwhile. A slice
    is counted in one call (:func:`count_joined`): per text, the thread would
    wait for the GIL once for every text.
    """

    _SLICE_CHARS = 1 << 18  # about 30 ms of encoding: few GIL waits, and the two threads end close together

    def __init__(self, tok: Tokenizer, texts: list[str]):
        cache = _counts(tok.name)
        self._tok, self._texts, self._cache = tok, texts, cache
        self._todo = list(dict.fromkeys(t for t in texts if t not in cache))
        slices = _slices(self._todo, self._SLICE_CHARS)
        self._array = len(slices) >= _ARRAY_FROM
        if self._array:
            import numpy  # noqa: F401 - loaded here, not mid-count in the helper (a small build never loads it)
        self._slices = iter(slices)  # next() is atomic: a slice goes to one thread
        self._counts = [0] * len(self._todo)
        self._helper = pool("count", 1).submit(self._work) if self._todo else None

    def _work(self) -> None:
        todo, counts, encoding = self._todo, self._counts, self._tok._encoding
        for start, end in self._slices:
            counts[start:end] = (count_joined(encoding, todo[start:end], self._array) if encoding is not None
                                 else [_approximate(t) for t in todo[start:end]])

    def result(self) -> list[int]:
        if self._helper is not None:
            self._work()
            self._helper.result()
            self._cache.put_many(zip(self._todo, self._counts))
            self._helper = None
            known = dict(zip(self._todo, self._counts))  # the cache may have dropped some already
            return [known[t] if t in known else _count_cached(self._tok, t) for t in self._texts]
        return [_count_cached(self._tok, t) for t in self._texts]


def _slices(texts: list[str], chars: int) -> list[tuple[int, int]]:
    """(start, end) runs of ``texts`` of about ``chars`` characters each (at least one text).

    >>> _slices(["aaaa", "bb", "cccccc", "d"], 5)
    [(0, 2), (2, 3), (3, 4)]
    """
    out, start, size = [], 0, 0
    for i, t in enumerate(texts):
        size += len(t)
        if size >= chars:
            out.append((start, i + 1))
            start, size = i + 1, 0
    if start < len(texts):
        out.append((start, len(texts)))
    return out


_SEPARATOR = "<|endoftext|>"
_ARRAY_FROM = 4  # slices from which counting reads the tokens as a numpy array, not a list of ints


def count_joined(encoding, texts: list[str], array: bool = False) -> list[int]:
    """``[len(encoding.encode_ordinary(t)) for t in texts]`` in one call to the tokenizer.

    The texts are joined by the end-of-text special token. tiktoken splits its
    input at allowed special tokens and runs its pre-tokenizing pattern on each
    segment alone, so every text's tokens are exactly those it has by itself
    (tests hold the two equal on texts chosen to meet at awkward boundaries). A
    text holding ``<|`` could form or hide a special token at a join, and is
    counted by itself. With ``array`` the tokens come back as a numpy array (no Python int per token, for
    large inputs); else as a list, so a small build does not load numpy.

    >>> enc = get_tokenizer("cl100k_base")._encoding
    >>> texts = ["Refunds take 5 days.", "", "  trailing  ", "<|endoftext|> literal"]
    >>> count_joined(enc, texts) == [len(enc.encode_ordinary(t)) for t in texts]
    True
    """
    alone = {i: len(encoding.encode_ordinary(t)) for i, t in enumerate(texts) if "<|" in t}
    rest = [t for i, t in enumerate(texts) if i not in alone] if alone else texts
    joined, eot = _SEPARATOR.join(rest), encoding.eot_token
    if array:
        tokens = encoding.encode_to_numpy(joined, allowed_special={_SEPARATOR}, disallowed_special=())
        ends = (tokens == eot).nonzero()[0].tolist()
    else:
        tokens = encoding.encode(joined, allowed_special={_SEPARATOR}, disallowed_special=())
        ends, at = [], -1
        for _ in range(len(rest) - 1):
            at = tokens.index(eot, at + 1)  # a scan in C: one Python step per text, not per token
            ends.append(at)
    ends.append(len(tokens))
    counts = iter([e - s - 1 for s, e in zip([-1] + ends, ends)])
    return [alone[i] if i in alone else next(counts) for i in range(len(texts))]


def _approximate(text: str) -> int:
    return math.ceil(len(text) / 4)


_TOKENIZERS: dict[str, Tokenizer] = {}
_COUNTED = ByText("counted records", share=0.05)  # (candidate, count) -> the record with its count
_TOKEN_BYTES: dict[str, dict[int, int]] = {}


def _counts(encoding: str) -> ByText:
    """Token counts by text for one encoding."""
    return text_cache("tokens " + encoding, share=0.25)


def _piece_counts(encoding: str) -> ByText:
    """Token counts of prompt pieces by text: apart from the candidates' counts, which a rebuild never adds to."""
    return text_cache("prompt pieces " + encoding, share=0.05)


def _count_cached(tok: Tokenizer, text: str, cache: ByText | None = None) -> int:
    cache = _counts(tok.name) if cache is None else cache
    n = cache.get(text)
    if n is None:
        n = len(tok._encoding.encode_ordinary(text)) if tok._encoding is not None else _approximate(text)
        cache.put(text, n)
    return n


def get_tokenizer(encoding: str) -> Tokenizer:
    """The tokenizer for ``encoding``, or the labelled approximate one if unavailable."""
    if encoding in _TOKENIZERS:
        return _TOKENIZERS[encoding]
    tok = Tokenizer(APPROXIMATE, exact=False)
    if encoding in _VOCABULARIES:
        try:
            import tiktoken

            _seed_cache(encoding)
            tok = Tokenizer(encoding, exact=True, _encoding=tiktoken.get_encoding(encoding))
        except Exception:  # noqa: BLE001 - any failure means: no real vocabulary here
            tok = Tokenizer(APPROXIMATE, exact=False)
    _TOKENIZERS[encoding] = tok
    return tok


def cache_size(encoding: str) -> int:
    """How many distinct texts have a cached count (used to prove reruns don't recount)."""
    return len(_counts(encoding))


def cached_texts(encoding: str) -> frozenset:
    """The texts with a cached count (to show what a rerun counted that no build had counted before)."""
    return frozenset(_counts(encoding))


_ATTACHED = Memo(8)


def run(state):
    """Attach every candidate's token count (counted in the background since the build started)."""
    counted, swap = _ATTACHED.of(state.candidates, lambda _: _attach(state))
    # a merged passage is a new record whose joined text the merge stage counted itself
    return state.replace(candidates=counted, counting=None,
                         alive=tuple([swap.get(id(c), c) for c in state.alive]))


def _attach(state):
    """(the candidates with counts, id of each -> its counted record). A rebuild resumed from a
    remembered state has the same candidates tuple, and gets this back without a pass over them."""
    counts = state.counting.result()
    made = []

    def counted(c, n):
        if c.tokens == n:
            return c
        key = (c, n)
        out = _COUNTED.get(key)
        if out is None:  # a rebuild gets the same records back instead of making 10k new ones
            out = object.__new__(type(c))  # dataclasses.replace minus its field checks: 100k in a second
            out.__dict__.update(c.__dict__, tokens=n)
            made.append((key, out))
        return out

    given = state.candidates
    with_counts = tuple(map(counted, given, counts))
    _COUNTED.put_many(made)  # one lock and one size check for them all
    return with_counts, {id(c): n for c, n in zip(given, with_counts)}
