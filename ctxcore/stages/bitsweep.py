"""Near-dedup of many texts by character shingles, on hashed bit rows.

The word join (:mod:`ctxcore.stages.wordsets`) meets candidate pairs through their rarest elements. Five-character
shingles have no rare ones: nearly every shingle of a text is held by a hundred others, so at 0.8 the join's
prefix filter let 62M candidate pairs through on 10k texts (5 s). Here each text's shingles are also hashed
into a row of bits. Two sets of sizes a and b with Jaccard >= t differ in at most (a + b)(1 - t)/(1 + t)
elements, and a bit set in one row and not in the other stands for at least one element in one set only,
so a pair whose rows differ in more bits cannot match: the filter never drops a match (collisions only let
more through). The pairs that pass are counted exactly on the shingle ids, with the definition's arithmetic
(``shared / (a + b - shared)``). The sweep is :func:`ctxcore.stages.wordsets.dense_sweep`'s: each block of
rows against the survivors before it (kept in size order, so the length filter is one slice), then the
rest of the block among themselves in order. The sets and the pair filter run on two threads (numpy lets go of
the GIL in its loops, and the tokenizer counts on two cores too); what is found does not depend on the split.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

from ..memo import pool
from .similarity import Match

FROM = 0.8  # thresholds from which the sweep is used: there two matching rows differ in at most a ninth of
            # their shingles, and the filter rules out nearly every other pair (measured on bench/synth.py's
            # set and both corpora of bench/corpora.py); below, wordsets' join or sweeps answer
_BLOCK = 1024        # rows a sweep step settles at once: against the survivors before, then among themselves
_SUB = 64            # ... compared with the earlier survivors together, of similar size
_CELLS = 1 << 21     # (row, survivor, uint64 word) cells a comparison step holds at most
_MIX = 0x9E3779B97F4A7C15  # multiplicative hashing of a shingle id to its bit
_GATHER = 3          # a word compared for a pair left after the head costs about this many compared for all
_SAMPLE = 4096       # pairs of rows the head is chosen on
_CHUNK = 1 << 15     # characters of texts whose shingle sets and bit rows are made at once


def _np():
    import numpy  # third-party and heavy: loaded when many texts are compared

    return numpy


def _stream(texts: Sequence[str], k: int):
    """(each character's digit, with k zeros after the last; each normalised text's length; the base), or None
    when k digits of that base do not fit in 63 bits."""
    np = _np()
    norms = [" ".join(t.lower().split()) for t in texts]
    lengths = np.fromiter(map(len, norms), dtype=np.int64, count=len(norms))
    joined = "".join(norms)
    # one byte a character where all are ASCII (Python knows that without looking), else four
    chars = (np.frombuffer(joined.encode("ascii"), dtype=np.uint8) if joined.isascii() else
             np.frombuffer(joined.encode("utf-32-le", "surrogatepass"), dtype=np.uint32))
    # numpy indexes with 8-byte numbers: the characters are taken a slice at a time, or every one of them would
    # become 8 bytes of fresh memory, and a page the process touches for the first time costs more than the
    # arithmetic on it (why the digits are the narrowest that hold the base, too)
    slices = [slice(at, at + _CHUNK) for at in range(0, len(chars), _CHUNK)]
    present = np.zeros(256 if chars.dtype == np.uint8 else 0x110000, dtype=bool)
    for part in slices:
        present[chars[part]] = True
    base = int(present.sum()) + 1
    if base ** k >= 1 << 63:
        return None
    digits = np.zeros(len(chars) + k, dtype=np.uint8 if base < 1 << 8 else np.uint16 if base < 1 << 16 else np.int64)
    digit, into = np.cumsum(present, dtype=np.int64).astype(digits.dtype), digits[:len(chars)]
    for part in slices:
        np.take(digit, chars[part], out=into[part])
    return digits, lengths, base


def _keys(digits, lengths, starts, base: int, k: int, t0: int, t1: int):
    """(id of every shingle, how many each text holds) for texts ``t0``..``t1 - 1`` of the stream, text i's
    characters from ``starts[i]``."""
    np = _np()
    lengths, starts = lengths[t0:t1], starts[t0:t1]
    lo = int(starts[0]) if len(starts) else 0
    hi = int(starts[-1] + lengths[-1]) if len(starts) else 0
    # the k characters from every place of the texts at once; a shingle of a text at least k long lies inside
    # its text, and a shorter text's one shingle is made below with 0 after its end (a window past a text's
    # end reads the next one's digits: those places are left out)
    window = digits[lo:hi].astype(np.int64)
    for d in range(1, k):
        window *= base
        window += digits[lo + d:hi + d]
    grams = np.where(lengths >= k, lengths - k + 1, np.minimum(lengths, 1))
    # every place starts a shingle, save the last k - 1 of a text (a short text: all but its first)
    starts, tail = starts - lo, np.maximum(np.minimum(lengths, k) - 1, 0)
    where = np.ones(hi - lo, dtype=bool)
    where[np.repeat(starts + lengths - tail, tail) + np.arange(int(tail.sum())) -
          np.repeat(np.cumsum(tail) - tail, tail)] = False
    key = window[where]
    ends = np.cumsum(grams)
    for t in np.flatnonzero((lengths < k) & (lengths > 0)).tolist():
        start, size = lo + int(starts[t]), int(lengths[t])
        key[int(ends[t]) - 1] = sum(int(digits[start + d]) * base ** (k - 1 - d) for d in range(size))
    return key, grams


def shingle_keys(texts: Sequence[str], k: int = 5):
    """(id of every shingle, the text holding it, one more than the largest id), in text order with repeats,
    as :func:`ctxcore.stages.similarity.shingles` makes the sets (lower-cased, whitespace runs as one space;
    a text shorter than k is its own one shingle); None when the texts hold so many distinct characters
    that k of them do not fit in 63 bits.

    A character becomes its place among the characters present (1, 2, ...), and a shingle the k-digit
    number those make, with 0 after the end of a short text: no hashing, so no two shingles are one id.

    >>> key, text, span = shingle_keys(["abcdef", "ab"], 5)
    >>> key.tolist(), text.tolist(), span
    ([3267, 6068, 3087], [0, 0, 1], 16807)
    """
    made = _stream(texts, k)
    if made is None:
        return None
    np = _np()
    digits, lengths, base = made
    key, grams = _keys(digits, lengths, np.cumsum(lengths) - lengths, base, k, 0, len(texts))
    return key, np.repeat(np.arange(len(texts), dtype=np.int64), grams), base ** k


@dataclass(frozen=True)
class ShingleBits:
    """Each text's distinct shingle ids, row i in ``keys[starts[i]:starts[i] + sizes[i]]`` (ascending), and its
    shingles hashed into ``bits`` (rows x uint64 words)."""

    starts: object  # int64, one per row
    keys: object    # int64
    sizes: object   # int64, distinct shingles per row
    bits: object    # uint64, (rows, words)
    span: int       # every id is below it

    def subset(self, rows) -> "ShingleBits":
        """The rows ``rows`` (ascending) alone, their ids where they are: copying millions of ids cost more than
        the sweep that reads a few of them."""
        rows = _np().asarray(rows, dtype=_np().int64)
        return ShingleBits(self.starts[rows], self.keys, self.sizes[rows], self.bits[rows], self.span)


def _chunks(lengths, t0: int, t1: int, chars: int) -> list[tuple[int, int]]:
    """Texts ``t0``..``t1 - 1`` in runs of whole texts of about ``chars`` characters (a longer text alone)."""
    np = _np()
    ends = np.cumsum(lengths[t0:t1])
    cuts = np.unique(np.searchsorted(ends, np.arange(chars, int(ends[-1]) if len(ends) else 0, chars), side="right"))
    bounds = [t0] + [t0 + int(c) for c in cuts if 0 < c < t1 - t0] + [t1]
    return list(zip(bounds[:-1], bounds[1:]))


def shingle_bits(texts: Sequence[str], k: int = 5) -> Optional[ShingleBits]:
    """The shingle sets of ``texts`` with their bit rows; None where :func:`shingle_keys` gives none, or
    the ids and text numbers together pass 63 bits. Made a run of texts at a time, small enough that its
    arrays stay in cache and reuse the same memory (one pass over arrays of millions cost more in the kernel,
    first touching fresh pages, than in the arithmetic); the two halves of the texts on two cores.

    >>> sb = shingle_bits(["Refund  days", "refund days!", "abc", ""])
    >>> sb.sizes.tolist(), sb.bits.shape
    ([7, 8, 1, 0], (4, 1))
    """
    np = _np()
    made = _stream(texts, k)
    n = len(texts)
    if made is None:
        return None
    digits, lengths, base = made
    span = base ** k
    shift = span.bit_length()  # (text, id) packed with shifts and masks: several times cheaper than divmod
    if max(n, 1) << shift >= 1 << 63:
        return None
    starts = np.cumsum(lengths) - lengths
    halves = [_chunks(lengths, 0, n // 2, _CHUNK), _chunks(lengths, n // 2, n, _CHUNK)]
    sizes = np.zeros(n, dtype=np.int64)

    def sets(chunks):
        """The distinct ids of each run's texts, ascending per text (their counts into ``sizes``)."""
        out = []
        for t0, t1 in chunks:
            key, grams = _keys(digits, lengths, starts, base, k, t0, t1)
            packed = np.repeat(np.arange(t0, t1, dtype=np.int64) << shift, grams)
            packed |= key
            packed.sort()
            packed = packed[np.concatenate([[True], packed[1:] != packed[:-1]])] if len(packed) else packed
            sizes[t0:t1] = np.bincount((packed >> shift) - t0, minlength=t1 - t0)
            packed &= (1 << shift) - 1
            out.append(packed)
        return out

    keys = list(pool("sweep", 2).map(sets, halves))
    bounds = np.cumsum(sizes) - sizes
    # about two bits per shingle of a middling row: a row half full tells sets apart
    median = int(np.median(sizes)) if n else 0
    width = min(4096, max(64, 1 << (2 * median - 1).bit_length()))
    rows = np.empty((n, width // 64), dtype=np.uint64)

    def bits(half: int) -> None:
        for (t0, t1), key in zip(halves[half], keys[half]):
            hashed = key.view(np.uint64) * np.uint64(_MIX)
            hashed >>= np.uint64(64 - (width.bit_length() - 1))
            at = np.repeat(np.arange(t1 - t0, dtype=np.int64) * width, sizes[t0:t1])  # the row's first bit
            at += hashed.view(np.int64)
            flat = np.zeros((t1 - t0) * width, dtype=bool)
            flat[at] = True
            rows[t0:t1] = np.packbits(flat.reshape(t1 - t0, width), axis=1, bitorder="little").view(np.uint64)

    list(pool("sweep", 2).map(bits, (0, 1)))
    return ShingleBits(bounds, np.concatenate(keys[0] + keys[1]) if n else np.zeros(0, dtype=np.int64),
                       sizes, rows, span)


class Survivors:
    """The rows a sweep has kept so far, in size order, with their bit columns: what each new block of rows is
    compared with first. Shared by this sweep and :func:`ctxcore.stages.wordsets.dense_sweep`."""

    SLACK = 1 - 1e-9  # the length filter prunes only what is clearly impossible

    def __init__(self, bits, sizes):
        np = _np()
        self.bits, self.sizes = bits, sizes  # every row's bit columns (words x rows) and set size
        self.rows = np.zeros(0, dtype=np.int64)
        self.row_sizes = np.zeros(0, dtype=np.int64)
        self.row_bits = bits[:, :0]

    def blocks(self, block: int):
        """Each block of ``block`` rows in rank order, without the empty ones (an empty row matches nothing)."""
        np = _np()
        for start in range(0, len(self.sizes), block):
            rows = start + np.flatnonzero(self.sizes[start:start + block] > 0)
            if len(rows):
                yield rows

    def band(self, size, threshold: float) -> tuple[int, int]:
        """The slice of survivors whose size can reach Jaccard ``threshold`` with sizes ``size[0]..size[-1]``."""
        np = _np()
        lo = int(np.searchsorted(self.row_sizes, threshold * size[0] * self.SLACK, side="left"))
        hi = int(np.searchsorted(self.row_sizes, size[-1] / threshold / self.SLACK, side="right"))
        return lo, hi

    def runs(self, rows, threshold: float, sub: int, cells: int):
        """The comparisons of a block's ``rows`` with the survivors: for each run of ``sub`` rows of similar size
        and each slice of the survivors their sizes can match (at most ``cells`` row x survivor x word cells),
        ``(at, size, mine, c0, c1)``: the run's positions in ``rows``, their sizes and bit columns, the slice."""
        np = _np()
        if not len(self.rows):
            return
        by_size = np.argsort(self.sizes[rows], kind="stable")
        for start in range(0, len(rows), sub):
            at = by_size[start:start + sub]
            size = self.sizes[rows[at]]
            lo, hi = self.band(size, threshold)
            step = max(1, cells // (len(at) * self.bits.shape[0]))
            mine = self.bits[:, rows[at]]
            for c0 in range(lo, hi, step):
                yield at, size, mine, c0, min(hi, c0 + step)

    def admit(self, new) -> None:
        """Rows ``new`` survived: kept, in size order."""
        np = _np()
        rows = np.concatenate([self.rows, new])
        order = np.argsort(np.concatenate([self.row_sizes, self.sizes[new]]), kind="stable")
        self.rows, self.row_bits = rows[order], np.concatenate([self.row_bits, self.bits[:, new]], axis=1)[:, order]
        self.row_sizes = self.sizes[self.rows]


def _popcount(x):
    np = _np()
    if hasattr(np, "bitwise_count"):
        return np.bitwise_count(x)
    return np.unpackbits(x.view(np.uint8).reshape(x.shape + (8,)), axis=-1).sum(axis=-1, dtype=np.uint8)


def _differ(a, b):
    """Bits set in one row only, for every row of ``a`` with every row of ``b`` (bit columns: words x rows)."""
    out = _popcount(a[0][:, None] ^ b[0][None, :]).astype(_np().uint16)
    for w in range(1, len(a)):
        out += _popcount(a[w][:, None] ^ b[w][None, :])
    return out


def choose_head(bits, sizes, threshold: float) -> int:
    """How many of a row's words to compare every pair on first (bit columns: words x rows): the number that
    costs least on a sample of pairs of rows the length filter lets meet (fixed seed). Too few words and
    unrelated pairs pass on to the rest, each of its words fetched pair by pair; too many and every pair pays
    for words a few would have settled. Which pairs pass does not depend on it."""
    np = _np()
    words = bits.shape[0]
    order = np.flatnonzero(sizes > 0)
    order = order[np.argsort(sizes[order], kind="stable")]
    if words == 1 or len(order) < 2:
        return max(1, words // 2)
    rng = np.random.default_rng(0)
    i = rng.integers(0, len(order) - 1, _SAMPLE)
    top = np.searchsorted(sizes[order], sizes[order[i]] / threshold, side="right") - 1  # the band's last row
    j = np.minimum(i + 1 + (rng.random(_SAMPLE) * np.maximum(top - i, 1)).astype(np.int64), len(order) - 1)
    a, b = order[i], order[j]
    room = (sizes[a] + sizes[b]) * (1 - threshold) / (1 + threshold)
    differ = np.cumsum(_popcount(bits[:, a] ^ bits[:, b]), axis=0)  # bits differing in the first h words
    passed = (differ <= room[None, :]).mean(axis=1)
    cost = np.arange(1, words + 1) + _GATHER * (words - np.arange(1, words + 1)) * passed
    return int(np.argmin(cost)) + 1


def _maybe(a_bits, b_bits, a, b, threshold: float, head: int):
    """(row, column) of the pairs the bit and size filters let through: those that may reach ``threshold``.
    The first ``head`` words (:func:`choose_head`) are compared for every pair (the bits set in one row only there already
    rule out most pairs: they are a lower bound of the whole count), the rest for the pairs left."""
    np = _np()
    slack = 1 - 1e-9  # prune only what is clearly impossible, so float rounding never loses a match
    room = (1 - threshold) / (1 + threshold) / slack
    a_room, b_room = a * room, b * room
    part = _differ(a_bits[:head], b_bits[:head])
    r, c = np.nonzero(part <= a_room[:, None] + b_room[None, :])
    x, y = a[r], b[c]
    keep = (y >= threshold * x * slack) & (y <= x / threshold / slack)
    r, c = r[keep], c[keep]
    if head < len(a_bits) and len(r):
        rest = _popcount(a_bits[head:, r] ^ b_bits[head:, c]).sum(axis=0, dtype=np.int64)
        keep = part[r, c] + rest <= a_room[r] + b_room[c]
        r, c = r[keep], c[keep]
    return r, c


def _similarity(sb: ShingleBits, i, j):
    """Jaccard of rows i[p] and j[p], for every p: shared ids counted exactly."""
    np = _np()
    step = max(1, ((1 << 62) // sb.span) // 2)  # pair number times span stays in 63 bits
    shared = np.zeros(len(i), dtype=np.int64)
    for p0 in range(0, len(i), step):
        both = np.concatenate([i[p0:p0 + step], j[p0:p0 + step]])
        count = sb.sizes[both]
        pair = np.repeat(np.tile(np.arange(len(both) // 2, dtype=np.int64), 2), count)
        at = np.repeat(sb.starts[both] - (np.cumsum(count) - count), count) + np.arange(int(count.sum()))
        keys = np.sort(pair * sb.span + sb.keys[at])
        twice = keys[1:][keys[1:] == keys[:-1]]  # a row holds an id once, so a repeat is a shared one
        shared[p0:p0 + step] = np.bincount(twice // sb.span, minlength=len(both) // 2)
    return shared / (sb.sizes[i] + sb.sizes[j] - shared)


def _run_pairs(sb: ShingleBits, kept: Survivors, rows, run, threshold: float, head: int):
    """One comparison of :meth:`Survivors.runs`: (position in ``rows``, survivor, Jaccard) of the pairs that pass."""
    at, size, mine, c0, c1 = run
    r, c = _maybe(mine, kept.row_bits[:, c0:c1], size, kept.row_sizes[c0:c1], threshold, head)
    who = kept.rows[c0 + c]
    return at[r], who, _similarity(sb, rows[at[r]], who)


def _among(bits, sizes, threshold: float, head: int):
    """(row, earlier row) of the pairs within one block the filters let through, on both cores: the rows before
    ``cut`` against each other, and the rest against all rows before them (equal areas at 0.618 of the block)."""
    np = _np()
    cut = len(sizes) * 5 // 8

    def part(lo, hi):
        r, c = _maybe(bits[:, lo:hi], bits[:, :hi], sizes[lo:hi], sizes[:hi], threshold, head)
        r = r + lo
        return r[c < r], c[c < r]

    parts = list(pool("sweep", 2).map(lambda b: part(*b), [(0, cut), (cut, len(sizes))]))
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


def sweep(sb: ShingleBits, threshold: float) -> list[Match]:
    """Each row's first earlier survivor with Jaccard >= threshold, or None: near-dedup as
    :func:`ctxcore.stages.similarity.near_duplicates_naive` defines it.

    >>> sweep(shingle_bits(["refund in five days", "Refund in  five days!", "ship it", "ship it"]), 0.8)
    [None, (0, 0.9375), None, (2, 1.0)]
    """
    np = _np()
    sizes = sb.sizes
    n = len(sizes)
    out: list[Match] = [None] * n
    bits = np.ascontiguousarray(sb.bits.T)  # (words, rows)
    kept = Survivors(bits, sizes)
    head = choose_head(bits, sizes, threshold)
    for rows in kept.blocks(_BLOCK):
        first = np.full(len(rows), n, dtype=np.int64)  # the earliest survivor matched (n: none)
        first_sim = np.zeros(len(rows))
        for x_at, who, sim in pool("sweep", 2).map(lambda run: _run_pairs(sb, kept, rows, run, threshold, head),
                                         kept.runs(rows, threshold, _SUB, _CELLS)):
            for x, y, z in zip(x_at.tolist(), who.tolist(), sim.tolist()):
                if z >= threshold and y < first[x]:
                    first[x], first_sim[x] = y, z
        for r, f, s in zip(rows[first < n].tolist(), first[first < n].tolist(), first_sim[first < n].tolist()):
            out[r] = (f, s)
        # the rows no earlier survivor took, settled among themselves in order
        group = rows[first == n]
        if not len(group):
            continue
        r, c = _among(bits[:, group], sizes[group], threshold, head)
        sim = _similarity(sb, group[r], group[c])
        hits: dict[int, list[tuple[int, float]]] = {}
        for x, y, z in sorted(zip(r.tolist(), c.tolist(), sim.tolist())):
            if z >= threshold:
                hits.setdefault(x, []).append((y, z))
        settled: set[int] = set()
        for k in range(len(group)):
            match = next(((q, z) for q, z in hits.get(k, ()) if q in settled), None)
            if match is None:
                settled.add(k)
            else:
                out[int(group[k])] = (int(group[match[0]]), match[1])
        kept.admit(group[sorted(settled)])
    return out
