"""The word sets of many texts at once, and their similarity self-join, in numpy.

The same sets and the same pairs as :func:`ctxcore.stages.similarity.words` and :func:`ctxcore.stages.similarity.similar_pairs`,
exactly (tests compare them), for inputs large enough that a Python loop over every word would cost more than
counting the tokens does.

A word is a run of ``[a-z0-9]`` in the lower-cased text. Words of up to twelve characters are written as base-37
numbers with digits 1..36, which is injective and fits in 63 bits; longer words get ids from a dictionary. No
hashing, so two different words can never be taken for one. Shingle sets (:func:`shingle_sets`) are numbered in
the same exact way, and the join and the sweep work on either.
"""

from __future__ import annotations

import functools
import itertools
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Optional, Sequence

from .bitsweep import Survivors, shingle_keys
from .similarity import Match, first_survivor


class _Numpy:
    """numpy, imported on first read: a build of a few hundred texts never needs it, and importing it would
    cost more than that build's near-dedup. The first read puts numpy itself in this module's globals."""

    def __getattr__(self, name):
        import numpy
        globals()["np"] = numpy
        return getattr(numpy, name)


np = _Numpy()


@functools.cache
def _tables() -> SimpleNamespace:
    """The lookup arrays (a digit per byte, byte masks, each byte's bits and their count), made on first use."""
    codes = np.zeros(256, dtype=np.uint8)
    codes[np.frombuffer(b"0123456789abcdefghijklmnopqrstuvwxyz", dtype=np.uint8)] = np.arange(1, 37)
    return SimpleNamespace(
        codes=codes, masks=np.array([(1 << (8 * k)) - 1 for k in range(9)], dtype=np.uint64),
        bits=np.unpackbits(np.arange(256, dtype=np.uint8)[:, None], axis=1, bitorder="little").astype(np.float64),
        byte_bits=np.array([bin(b).count("1") for b in range(256)], dtype=np.uint8))


_LONG, _37_4 = 1 << 63, 37 ** 4  # plain ints: numpy takes them at the dtype of the uint64 arrays they meet
_EVERY_OTHER_BYTE, _EVERY_OTHER_PAIR = 0x00FF00FF00FF00FF, 0x0000FFFF0000FFFF
_PACKED = 12            # 37**12 < 2**63
_BATCH = 500_000        # candidate pairs filtered at a time: bounds memory on texts that all look alike, and
                        # keeps each step's arrays small enough to stay in cache
_HASH_BITS = 20        # buckets (2**20) the join counts candidate pairs in before sorting the few that may pass
_MIX = 0x9E3779B97F4A7C15  # multiplicative hashing (the word sets' sort uses it too)
_GROUP = 64             # open rows a sweep step settles at once: one bit each in a word's uint64 mask
_FIRST = 8              # ... in its first step, doubling after each
_ROWS = 16_384          # rows a sweep step compares at once
# a sweep hands what is still open to the join once that join looks cheaper: one candidate pair costs
# about as much as this many (survivor, word of a later row) meetings of the sweep (at 10k chunks, about
# 40 ns against 1 ns)
_PAIR_COST = 40


@dataclass(frozen=True)
class WordSets:
    """Each text's distinct words as ids, row i in ``ids[starts[i]:starts[i + 1]]``, rarest first.

    Rarity is the number of texts holding the word (ties by id); the join's
    prefix filter needs one global order, and any order gives the same pairs.
    """

    starts: np.ndarray   # int64, len(texts) + 1
    ids: np.ndarray      # int64, the words of every row, each row in ascending rarity rank
    sizes: np.ndarray    # int64, words per row
    vocabulary: int

    def row(self, i: int) -> np.ndarray:
        return self.ids[self.starts[i]:self.starts[i + 1]]


def word_sets(texts: Sequence[str]) -> WordSets:
    """Word sets of ``texts`` (as ranks in one rarity order).

    >>> ws = word_sets(["Refunds: 5 days", "5 DAYS", ""])
    >>> ws.sizes.tolist(), ws.vocabulary
    ([3, 2, 0], 3)
    """
    lowered = [t.lower() for t in texts]
    blob = "\n".join(lowered).encode("utf-8", "surrogatepass")  # non-ASCII bytes are >= 0x80: never a word
    lengths = np.fromiter((len(s) if s.isascii() else len(s.encode("utf-8", "surrogatepass")) for s in lowered),
                          dtype=np.int64, count=len(lowered))
    del lowered  # at 100k texts every array here is 100 MB or more: each goes as soon as it is used
    text_starts = np.zeros(len(texts), dtype=np.int64)
    np.cumsum(lengths[:-1] + 1, out=text_starts[1:])

    tables = _tables()
    codes = np.concatenate([tables.codes[np.frombuffer(blob, dtype=np.uint8)], np.zeros(16, dtype=np.uint8)])
    edges = np.diff((codes > 0).view(np.int8), prepend=np.int8(0))
    first = np.flatnonzero(edges == 1)
    length = np.flatnonzero(edges == -1) - first
    del edges
    per_text = np.diff(np.searchsorted(first, text_starts), append=len(first))
    text = np.repeat(np.arange(len(texts), dtype=np.int64), per_text)

    # eight codes at a time, read as one little-endian integer; bytes past the word are masked to zero
    window = np.ndarray((len(codes) - 7,), dtype="<u8", buffer=codes, strides=(1,))
    head = _base37(window[first] & tables.masks[np.minimum(length, 8)])
    tail = _base37(window[first + 8] & tables.masks[np.clip(length - 8, 0, 4)]) // _37_4  # its first four digits
    key = head
    key *= _37_4
    key += tail
    del tail, window
    long_words = np.flatnonzero(length > _PACKED)
    if long_words.size:
        seen: dict[bytes, int] = {}
        key[long_words] = _LONG | np.fromiter(
            (seen.setdefault(blob[s:s + n], len(seen)) for s, n in zip(first[long_words].tolist(),
                                                                   length[long_words].tolist())),
            dtype=np.uint64, count=long_words.size)
    del blob, codes, first, length
    return _sets(key, text, len(texts))


def shingle_sets(texts: Sequence[str], k: int = 5) -> Optional[WordSets]:
    """The character k-gram sets of ``texts``, as :func:`ctxcore.stages.similarity.shingles` makes them, numbered
    exactly (:func:`ctxcore.stages.bitsweep.shingle_keys`), or None when the texts hold so many distinct
    characters that k of them do not fit in 63 bits (then the caller makes them in Python).

    >>> ss = shingle_sets(["Refund  days", "refund days!", "abc", ""])
    >>> ss.sizes.tolist(), ss.vocabulary
    ([7, 8, 1, 0], 9)
    """
    made = shingle_keys(texts, k)
    return None if made is None else _sets(made[0], made[1], len(texts))


def _sets(key: np.ndarray, text: np.ndarray, n: int) -> WordSets:
    """WordSets from one key per (element, text holding it), repeats allowed, in text order.

    The keys are grouped by one plain sort of (hash of the key, place) packed in an integer, many times
    faster than sorting the keys' places by key; a place's text only grows along the input, so inside a
    key's run the texts ascend and a text's repeats of it sit together. If two different keys ever share
    a hash, the keys' places are sorted by key instead: the sets are exact either way.
    """
    places = len(key)
    low = max(1, (places - 1).bit_length())
    packed = key.astype(np.uint64)  # a copy, changed in place from here on
    packed *= _MIX
    packed >>= np.uint64(low)
    packed <<= np.uint64(low)
    packed |= np.arange(places, dtype=np.uint64)
    packed.sort()
    order = (packed & np.uint64((1 << low) - 1)).astype(np.int64)
    packed >>= np.uint64(low)
    change = packed[1:] != packed[:-1]
    del packed
    ordered = key[order]
    if (ordered[1:] != ordered[:-1])[~change].any():  # one hash, two keys
        order = np.argsort(key, kind="stable")
        ordered = key[order]
        change = ordered[1:] != ordered[:-1]
    word = np.concatenate([[0], np.cumsum(change)]) if places else np.zeros(0, np.int64)
    vocabulary = int(word[-1]) + 1 if places else 0
    row = text[order]
    first = np.concatenate([[True], change | (row[1:] != row[:-1])]) if places else np.zeros(0, bool)
    word, row = word[first], row[first]  # one entry per (word, text holding it)
    texts_holding = np.bincount(word, minlength=vocabulary)
    rank = np.empty(vocabulary, dtype=np.int64)
    rank[np.argsort(texts_holding, kind="stable")] = np.arange(vocabulary)
    ranked = np.sort(row * max(vocabulary, 1) + rank[word]) % max(vocabulary, 1)
    sizes = np.bincount(row, minlength=n).astype(np.int64)
    starts = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(sizes, out=starts[1:])
    return WordSets(starts, ranked, sizes, vocabulary)


def _base37(x: np.ndarray) -> np.ndarray:
    """Eight byte-sized digits (the first in the lowest byte) as one base-37 number, first digit highest."""
    x = (x & _EVERY_OTHER_BYTE) * np.uint64(37) + ((x >> np.uint64(8)) & _EVERY_OTHER_BYTE)
    x = (x & _EVERY_OTHER_PAIR) * np.uint64(37 ** 2) + ((x >> np.uint64(16)) & _EVERY_OTHER_PAIR)
    return (x & np.uint64(0xFFFFFFFF)) * np.uint64(37 ** 4) + (x >> np.uint64(32))


def _prefixes(sets: WordSets, threshold: float):
    """(prefix length of each row, position of every word in its row, which words are in a prefix)."""
    sizes = sets.sizes
    need = np.maximum(1, np.ceil(threshold * sizes - 1e-9)).astype(np.int64)  # the epsilon only lengthens prefixes
    prefix = np.where(sizes > 0, sizes - need + 1, 0)
    position = np.arange(len(sets.ids)) - np.repeat(sets.starts[:-1], sizes)
    return prefix, position, position < np.repeat(prefix, sizes)


def join_size(sets: WordSets, threshold: float, rows: Optional[np.ndarray] = None) -> int:
    """How many candidate pairs the join at ``threshold`` generates before filtering (its cost), of all
    rows or of the rows where the boolean ``rows`` is set.

    >>> join_size(word_sets(["a b c d e", "a b c d e f", "x y z", "a b c d e"]), 0.8)
    4
    """
    in_prefix = _prefixes(sets, threshold)[2]
    if rows is not None:
        in_prefix &= np.repeat(rows, sets.sizes)
    held = np.bincount(sets.ids[in_prefix])
    return int((held * (held - 1) // 2).sum())


def similar_pairs(sets: WordSets, threshold: float) -> list[list[tuple[int, float]]]:
    """For each row, every earlier row with Jaccard >= threshold, ascending: the self-join.

    Two sets of sizes a and b at or above the threshold share at least
    ``t/(1+t) * (a+b)`` words, so they share a word among their rarest
    ``n - ceil(t*n) + 1`` (the prefix filter). A candidate pair is dropped when
    the words left after its first shared word (positional filter), or the
    words it shares in both prefixes plus those beyond the shorter-reaching
    prefix, are too few; the rest are verified by counting shared words.

    >>> similar_pairs(word_sets(["a b c d e", "a b c d e f", "x y z", "a b c d e"]), 0.8)
    [[], [(0, 0.8333333333333334)], [], [(0, 1.0), (1, 0.8333333333333334)]]
    """
    n = len(sets.sizes)
    out: list[list[tuple[int, float]]] = [[] for _ in range(n)]
    if n < 2 or not len(sets.ids):
        return out
    sizes = sets.sizes
    prefix, position, in_prefix = _prefixes(sets, threshold)
    last = np.where(prefix > 0, sets.ids[np.minimum(sets.starts[:-1] + prefix - 1, len(sets.ids) - 1)], -1)
    rows = np.repeat(np.arange(n, dtype=np.int64), sizes)[in_prefix]
    word, position = sets.ids[in_prefix], position[in_prefix]
    grouped = np.argsort(word * n + rows)  # by word, rows ascending inside a group
    word, rows, position = word[grouped], rows[grouped], position[grouped]
    group_start = np.searchsorted(word, word)
    before = np.arange(len(word)) - group_start  # earlier rows holding this word in their prefix
    share, slack = threshold / (1 + threshold), 1 - 1e-9  # slack: prune only when clearly impossible
    reach_bits = int(sizes.max()).bit_length()
    reach_mask = (1 << reach_bits) - 1
    if (n * n).bit_length() + reach_bits > 62:
        raise OverflowError("pair keys do not fit in 63 bits")  # not within MAX_BYTES and MAX_CANDIDATES
    # batches of later rows, so that every shared word of a pair is seen in one batch
    upto = np.cumsum(np.bincount(rows, weights=before, minlength=n))
    r0 = 0
    while r0 < n:
        r1 = max(r0 + 1, int(np.searchsorted(upto, (upto[r0 - 1] if r0 else 0) + _BATCH, side="right")))
        sel = np.flatnonzero((rows >= r0) & (rows < r1) & (before > 0))
        r0 = r1
        count = before[sel]
        right = np.repeat(sel, count)
        left = np.repeat(group_start[sel] - np.cumsum(count) + count, count) + np.arange(len(right))
        i, j = rows[right], rows[left]
        a, b = sizes[i], sizes[j]
        fits = (b >= threshold * a * slack) & (b <= a / threshold / slack)
        reach = np.minimum(a - position[right], b - position[left])[fits]  # words left from this one on
        if not len(reach):
            continue
        i, j, a, b = i[fits], j[fits], a[fits], b[fits]
        # before the sort, drop the pairs that cannot pass the filters below, counted by hashed pair:
        # a pair's entries are the words it shares in both prefixes, and one of them must reach far
        # enough. A bucket's counts are at least its pairs' own (collisions only add), so no pair that
        # could pass is dropped, and a pair is kept or dropped whole.
        bits = min(_HASH_BITS, max(8, len(i).bit_length()))  # about one bucket per entry: counting costs its batch
        bucket = ((i * n + j).astype(np.uint64) * _MIX) >> np.uint64(64 - bits)
        enough = share * (a + b) * slack
        beyond = np.where(last[i] <= last[j], a - prefix[i], b - prefix[j])
        reaching = np.bincount(bucket[reach >= enough], minlength=1 << bits)[bucket] > 0
        keep = reaching & (np.bincount(bucket, minlength=1 << bits)[bucket] + beyond >= enough)
        reach = reach[keep]
        if not len(reach):
            continue
        # group by pair with one plain sort: (pair, reach) packed in an integer, so a pair's run ends
        # with its largest reach
        entry = np.sort((i[keep] * n + j[keep]) << reach_bits | reach)
        key = entry >> reach_bits
        end = np.flatnonzero(np.concatenate([key[1:] != key[:-1], [True]]))
        both = np.diff(end, prepend=-1)  # words shared inside both prefixes
        reach = entry[end] & reach_mask
        i, j = np.divmod(key[end], n)
        a, b = sizes[i], sizes[j]
        beyond = np.where(last[i] <= last[j], a - prefix[i], b - prefix[j])
        enough = share * (a + b) * slack
        ok = (reach >= enough) & (both + beyond >= enough)
        i, j = i[ok], j[ok]
        if not len(i):
            continue
        shared = _shared(sets, i, j)
        sim = shared / (sizes[i] + sizes[j] - shared)
        for x, y, z in zip(i.tolist(), j.tolist(), sim.tolist()):
            if z >= threshold:
                out[x].append((y, z))
    return out


def _shared(sets: WordSets, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """How many words rows i[p] and j[p] have in common, for every p."""
    v = max(sets.vocabulary, 1)
    both = np.concatenate([i, j])
    count = sets.sizes[both]
    pair = np.repeat(np.concatenate([np.arange(len(i))] * 2), count)
    at = np.repeat(sets.starts[both] - np.concatenate([[0], np.cumsum(count)[:-1]]), count) + np.arange(count.sum())
    keys = np.sort(pair * v + sets.ids[at])
    twice = keys[1:][keys[1:] == keys[:-1]]  # each row holds a word once, so a repeat is a shared word
    return np.bincount(twice // v, minlength=len(i))



def subset(sets: WordSets, rows) -> WordSets:
    """The rows ``rows`` (ascending) as a WordSets of their own, in the same word order.

    >>> subset(word_sets(["a b", "c", "a b c"]), [0, 2]).sizes.tolist()
    [2, 3]
    """
    rows = np.asarray(rows, dtype=np.int64)
    sizes = sets.sizes[rows]
    starts = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum(sizes, out=starts[1:])
    return WordSets(starts, sets.ids[_entries(sets, rows)], sizes, sets.vocabulary)


def _entries(sets: WordSets, rows: np.ndarray) -> np.ndarray:
    """Positions in ``sets.ids`` of every word of ``rows``, row after row."""
    sizes = sets.sizes[rows]
    offset = sets.starts[rows] - np.concatenate([[0], np.cumsum(sizes)[:-1]])
    return np.repeat(offset, sizes) + np.arange(int(sizes.sum()))


def sweep(sets: WordSets, threshold: float) -> list[Match]:
    """Each row's first earlier survivor with Jaccard >= threshold, or None: near-dedup, found from the
    survivors forward instead of from all similar pairs.

    A step takes the next open rows, settles them among themselves in order, and lets the ones that
    survive close every later row they match. Its work is survivors times the words of the rows still
    open, so it suits low thresholds, where a few survivors absorb most rows and the join would meet
    nearly every pair. When the rows a step takes mostly survive, and joining what is open looks
    cheaper, that is joined instead (ask :func:`sweep_pays` before the sweep: it answers that for the
    first step); either way the answer is the definition's.

    >>> sweep(word_sets(["a b c d e", "a b c d e f", "x y z", "a x"]), 0.25)
    [None, (0, 0.8333333333333334), None, (2, 0.25)]
    """
    sizes = sets.sizes
    out: list[Match] = [None] * len(sizes)
    open_ = sizes > 0  # a row without words matches nothing: it survives and closes nothing
    at, may_join = 0, True  # every row before ``at`` is settled, and no open row matches a survivor there
    for step in itertools.count(1):
        open_[:at] = False
        rest = at + np.flatnonzero(open_[at:])
        if not len(rest):
            return out
        take = min(_GROUP, _FIRST << step - 1)  # small first steps: cheap to find out whether few survive
        group, later = rest[:take], rest[take:]
        kept, closed = _settle(sets, group, threshold)
        for k, q, sim in closed:
            out[group[k]] = (int(group[q]), sim)
        open_[group[[k for k, _, _ in closed]]] = False
        # the group absorbed little: would joining what is open cost less? (asked at steps 2, 4, 8, ...;
        # step 1's answer is sweep_pays, which the caller asked before sweeping)
        if may_join and 2 * len(kept) > len(group) and step > 1 and step & (step - 1) == 0:
            rest = rest[open_[rest]]
            if not _sweeping_pays(sets, len(kept) / len(group), open_, join_size(sets, threshold, open_)):
                try:
                    pairs = similar_pairs(subset(sets, rest), threshold)
                except OverflowError:  # beyond the join's input limits: sweep on
                    may_join = False
                else:
                    for r, m in zip(rest.tolist(), first_survivor(pairs, threshold)):
                        out[r] = None if m is None else (int(rest[m[0]]), m[1])
                    return out
        if not len(later):
            return out
        survivors, at = group[kept], int(group[-1]) + 1
        sim = _similarity(sets, survivors, later)
        match = sim >= threshold
        closed = np.flatnonzero(match.any(axis=1))
        for r, k in zip(closed.tolist(), match[closed].argmax(axis=1).tolist()):
            out[later[r]] = (int(survivors[k]), float(sim[r, k]))
        open_[later[closed]] = False
    return out  # not reached: every step settles at least one row


def sweep_pays(sets: WordSets, threshold: float, pairs: int) -> bool:
    """Whether :func:`sweep` looks cheaper than the join at ``threshold`` (``pairs``: its
    :func:`join_size`), judged by how the first few rows with words settle among themselves: when most
    match each other, few will survive. The sweep's own first step is this question, so it is asked here,
    before the sweep, and the sweep asks again only from its second step on.

    >>> ws = word_sets(["a b c", "a b d", "a c d"]), word_sets(["a b", "c d", "e f"])
    >>> sweep_pays(ws[0], 0.5, join_size(ws[0], 0.5)), sweep_pays(ws[1], 0.5, join_size(ws[1], 0.5))
    (True, False)
    """
    group = np.flatnonzero(sets.sizes > 0)[:_FIRST]
    kept = len(_settle(sets, group, threshold)[0])
    return 2 * kept <= len(group) or _sweeping_pays(sets, kept / len(group), sets.sizes > 0, pairs)


def _sweeping_pays(sets: WordSets, surviving: float, open_: np.ndarray, pairs: int) -> bool:
    """Whether sweeping the ``open_`` rows, if this share of them survives, costs less than the join of
    them, which meets ``pairs`` candidate pairs: each survivor meets the words of half the open rows on
    average; each candidate pair costs about ``_PAIR_COST`` of those meetings."""
    words = int(sets.sizes[open_].sum())
    return surviving * int(open_.sum()) * words / 2 <= _PAIR_COST * pairs


def _settle(sets: WordSets, group: np.ndarray, threshold: float) -> tuple[list[int], list[tuple[int, int, float]]]:
    """Settle the open rows ``group`` among themselves, in order: the positions that survive, and
    (position, position of its first surviving match, similarity) for each that does not."""
    sim = _similarity(sets, group, group)
    kept: list[int] = []
    closed = []
    for k in range(len(group)):
        hit = next((q for q in kept if sim[k, q] >= threshold), None)
        if hit is None:
            kept.append(k)
        else:
            closed.append((k, hit, float(sim[k, hit])))
    return kept, closed


def _similarity(sets: WordSets, some: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Jaccard of every row in ``rows`` with every row in ``some`` (at most 64), a len(rows) x len(some)
    matrix, with the definition's arithmetic: shared / (|a| + |b| - shared)."""
    if len(rows) > _ROWS:  # a slice at a time bounds the per-row histograms below (100k rows: 200 MB)
        return np.concatenate([_similarity(sets, some, rows[k:k + _ROWS]) for k in range(0, len(rows), _ROWS)])
    mask = np.zeros(max(sets.vocabulary, 1), dtype=np.uint64)
    for k, row in enumerate(some.tolist()):
        mask[sets.row(row)] |= np.uint64(1 << k)
    bits = mask[sets.ids[_entries(sets, rows)]]
    owner = np.repeat(np.arange(len(rows)), sets.sizes[rows])
    hit = bits != 0
    bits, owner = bits[hit], owner[hit]
    shared = np.empty((len(rows), len(some)), dtype=np.int64)
    for byte, value in enumerate(bits.view(np.uint8).reshape(-1, 8).T[:(len(some) + 7) // 8]):
        # how many of each row's words carry each value of this byte, then whose bits those values hold
        width = min(8, len(some) - 8 * byte)
        held = np.bincount(owner << width | value, minlength=len(rows) << width).reshape(len(rows), 1 << width)
        shared[:, 8 * byte:8 * byte + width] = held @ _tables().bits[:1 << width, :width]
    return shared / (sets.sizes[rows][:, None] + sets.sizes[some][None, :] - shared)


# -- dense sets: each set as bits of 64-bit words, shared words by popcount

_DENSE_BYTES = 64 << 20  # the bit rows of every set at most this big (100k sets of a 5,000-word vocabulary)
_DENSE_BLOCK = 1024      # rows a dense sweep settles at once: among themselves, and against the survivors before
_DENSE_SUB = 64          # ... those compared with the earlier survivors together, of similar size
_DENSE_CELLS = 1 << 21   # (row, survivor, word) cells a comparison step holds at most
# one candidate pair of the join costs about as much as this many (pair, uint64 word) cells of a dense
# comparison (measured on the prose and templated corpora of bench/corpora.py: about 40 ns against 2.5)
_DENSE_CELL_COST = 1 / 16


def _popcount(x: np.ndarray) -> np.ndarray:
    """Set bits of each element: numpy 2's ``bitwise_count``, else a byte table (numpy 1.26)."""
    if hasattr(np, "bitwise_count"):
        return np.bitwise_count(x)
    return _tables().byte_bits[x.view(np.uint8)].reshape(x.shape + (8,)).sum(axis=-1, dtype=np.uint8)


def bit_rows(sets: WordSets) -> np.ndarray:
    """Each row's set as bits: a (rows, ceil(vocabulary / 64)) uint64 array, word id w as bit w % 64 of
    column w // 64.

    >>> ws = word_sets(["a b", "b c", ""])
    >>> [[w for w in range(ws.vocabulary) if b >> w & 1] == sorted(ws.row(i).tolist()) for i, [b] in
    ...  enumerate(bit_rows(ws).tolist())]
    [True, True, True]
    """
    n, width = len(sets.sizes), max(1, (sets.vocabulary + 63) // 64)
    out = np.zeros(n * width, dtype=np.uint64)
    if len(sets.ids):
        ids = sets.ids.astype(np.uint64)
        cell = np.repeat(np.arange(n, dtype=np.uint64) * np.uint64(width), sets.sizes) + (ids >> np.uint64(6))
        bit = np.left_shift(np.uint64(1), ids & np.uint64(63))
        first = np.flatnonzero(np.concatenate([[True], cell[1:] != cell[:-1]]))  # ids ascend within a row
        out[cell[first]] = np.bitwise_or.reduceat(bit, first)
    return out.reshape(n, width)


def dense_cost(sets: WordSets, threshold: float) -> float:
    """What :func:`dense_sweep` costs at most, in join candidate pairs (:func:`join_size` units): every
    pair of rows within the length filter, times the uint64 words of a row; infinite when the bit rows
    would take more than ``_DENSE_BYTES``.

    >>> dense_cost(word_sets(["a b", "a b c", "a b c d e f g h"]), 0.6)
    0.0625
    """
    width = max(1, (sets.vocabulary + 63) // 64)
    if len(sets.sizes) * width * 8 > _DENSE_BYTES:
        return float("inf")
    sizes = np.sort(sets.sizes[sets.sizes > 0])
    # pairs (a, b) with b at most a and at least threshold * a: the rows before each one in size order
    lo = np.searchsorted(sizes, threshold * sizes * (1 - 1e-9), side="left")
    pairs = int((np.arange(len(sizes)) - lo).sum())
    return pairs * width * _DENSE_CELL_COST


def _shared_bits(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Shared words of every set in ``a`` with every set in ``b``, both bit columns (words, sets) as
    :func:`bit_rows` transposed: a len(a[0]) x len(b[0]) matrix (one plain 2-d pass per uint64 word;
    broadcasting over a third axis is many times slower)."""
    shared = _popcount(a[0][:, None] & b[0][None, :]).astype(np.uint16)
    for w in range(1, len(a)):
        shared += _popcount(a[w][:, None] & b[w][None, :])
    return shared


def dense_sweep(sets: WordSets, threshold: float, bits: Optional[np.ndarray] = None) -> list[Match]:
    """Each row's first earlier survivor with Jaccard >= threshold, or None (near-dedup, as the
    definition says), with every similarity counted on bit rows (:func:`bit_rows`): for a small
    vocabulary, where a set is a few uint64 words and the sets share most of their words, so that
    the join's filters let nearly every pair through.

    A step takes the next ``_DENSE_BLOCK`` rows. Each is first compared with the survivors of the
    earlier steps whose size passes the length filter (the survivors are kept in size order, so those
    are one slice, and the step's rows are compared in runs of similar size); the first of them it
    matches, in rank order, is its survivor. The rows with none are settled among themselves in order.

    >>> dense_sweep(word_sets(["a b c d e", "a b c d e f", "x y z", "a x"]), 0.25)
    [None, (0, 0.8333333333333334), None, (2, 0.25)]
    """
    sizes = sets.sizes
    n = len(sizes)
    out: list[Match] = [None] * n
    bits = np.ascontiguousarray((bit_rows(sets) if bits is None else bits).T)  # (words, rows)
    slack = Survivors.SLACK
    share = threshold / (1 + threshold)
    kept = Survivors(bits, sizes)
    for rows in kept.blocks(_DENSE_BLOCK):
        first = np.full(len(rows), n, dtype=np.int64)  # the earliest survivor matched (n: none)
        first_sim = np.zeros(len(rows))
        for at, size, mine, c0, c1 in kept.runs(rows, threshold, _DENSE_SUB, _DENSE_CELLS):
            shared = _shared_bits(mine, kept.row_bits[:, c0:c1])
            # sharing t/(1+t) of both sizes together is necessary: the exact similarity only for the rows where
            # some pair has that
            maybe = np.flatnonzero((shared - share * kept.row_sizes[None, c0:c1] >= share * size[:, None] * slack)
                                   .any(axis=1))
            if not len(maybe):
                continue
            shared = shared[maybe]
            sim = shared / (size[maybe, None] + kept.row_sizes[None, c0:c1] - shared)
            who = np.where(sim >= threshold, kept.rows[None, c0:c1], n)
            k = who.argmin(axis=1)
            better = np.flatnonzero(who[np.arange(len(maybe)), k] < first[at[maybe]])
            if len(better):
                first[at[maybe[better]]] = who[better, k[better]]
                first_sim[at[maybe[better]]] = sim[better, k[better]]
        # the rows no earlier survivor took, settled among themselves in order
        open_ = np.flatnonzero(first == n)
        for r, f, s in zip(rows[first < n].tolist(), first[first < n].tolist(), first_sim[first < n].tolist()):
            out[r] = (f, s)
        if not len(open_):
            continue
        group = rows[open_]
        shared = _shared_bits(bits[:, group], bits[:, group])
        sim = shared / (sizes[group][:, None] + sizes[group][None, :] - shared)
        hits = np.packbits(sim >= threshold, axis=1, bitorder="little")
        settled = 0  # bit q: group[q] survived
        for k in range(len(group)):
            m = int.from_bytes(hits[k].tobytes(), "little") & settled
            if m:
                q = (m & -m).bit_length() - 1  # the earliest survivor matched
                out[int(group[k])] = (int(group[q]), float(sim[k, q]))
            else:
                settled |= 1 << k
        kept.admit(group[[k for k in range(len(group)) if settled >> k & 1]])
    return out
