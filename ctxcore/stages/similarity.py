"""Similarity, by definition: word sets, character shingles, Jaccard, cosine, and who duplicates whom.

These are the plain definitions near-dedup is held to. ``similar_pairs`` is the
Python self-join (prefix and positional filters) and gives exactly what
``near_duplicates_naive`` gives; :mod:`ctxcore.stages.wordsets` is the numpy join for
many texts, with the same result. The word and shingle sets of one text are
remembered by text (:mod:`ctxcore.memo` owns the cache and its bound).
"""

from __future__ import annotations

import hashlib
import math
import re
import sys
from collections import Counter, defaultdict
from itertools import chain
from typing import Optional, Sequence

from ..memo import by_text

_WORD = re.compile(r"[a-z0-9]+")


@by_text("words")
def words(text: str) -> frozenset[str]:
    """The set of lower-cased ``[a-z0-9]+`` words.

    >>> sorted(words("Refunds: 5 business-days"))
    ['5', 'business', 'days', 'refunds']
    """
    return frozenset(map(sys.intern, _WORD.findall(text.lower())))  # one copy of each word, however many texts


@by_text("shingles")
def shingles(text: str, k: int = 5) -> frozenset[str]:
    """Character k-grams of the lower-cased, space-collapsed text."""
    norm = " ".join(text.lower().split())
    if len(norm) <= k:
        return frozenset([norm]) if norm else frozenset()
    return frozenset(norm[i:i + k] for i in range(len(norm) - k + 1))


def jaccard(a: frozenset, b: frozenset) -> float:
    """|a & b| / |a | b|; two empty sets are not similar (0.0).

    >>> round(jaccard(words("within five business days"), words("within 5 business days")), 3)
    0.6
    """
    inter = len(a & b)
    union = len(a) + len(b) - inter
    return inter / union if union else 0.0


@by_text("digest")
def digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


Match = Optional[tuple[int, float]]


def near_duplicates_naive(sets: Sequence[frozenset], threshold: float) -> list[Match]:
    """The definition: each set against the earlier survivors, first match wins."""
    out: list[Match] = []
    survivors: list[int] = []
    for i, s in enumerate(sets):
        match = None
        for j in survivors:
            sim = jaccard(s, sets[j])
            if sim >= threshold:
                match = (j, sim)
                break
        out.append(match)
        if match is None:
            survivors.append(i)
    return out


def near_duplicates(sets: Sequence[frozenset], threshold: float) -> list[Match]:
    """Same result as :func:`near_duplicates_naive`, without comparing all pairs.

    >>> s = [words("a b c d e"), words("a b c d e f"), words("x y z")]
    >>> near_duplicates(s, 0.8)
    [None, (0, 0.8333333333333334), None]
    """
    return first_survivor(similar_pairs(sets, threshold), threshold)


def similar_pairs(sets: Sequence[frozenset], threshold: float) -> list[list[tuple[int, float]]]:
    """For each set, every earlier set with Jaccard >= threshold, in order: a similarity self-join.

    Every set is sorted by one global order, rarest word first. Two sets with
    Jaccard >= t share at least t/(1+t) * (|x| + |y|) words, so their short
    prefixes must intersect (prefix filter), and a shared word found at
    positions i and j bounds how many more they can share (positional filter).
    Pairs passing both are verified with the same arithmetic as the definition.

    >>> similar_pairs([words("a b c d e"), words("a b c d e f"), words("a b c d e")], 0.8)
    [[], [(0, 0.8333333333333334)], [(0, 1.0), (1, 0.8333333333333334)]]
    """
    df = Counter(chain.from_iterable(sets))
    vocabulary = sorted(df)
    vocabulary.sort(key=df.__getitem__)  # stable: rarest first, ties alphabetical
    rank_of = {w: r for r, w in enumerate(vocabulary)}.__getitem__
    index: dict[int, list[tuple[int, int, int]]] = defaultdict(list)  # word -> (set, position, size)
    share = threshold / (1 + threshold)
    slack = 1 - 1e-9  # prune only when clearly impossible, so float rounding never loses a match
    out: list[list[tuple[int, float]]] = []
    for i, s in enumerate(sets):
        n = len(s)
        if n == 0:
            out.append([])  # no words: never similar, and nothing can match it
            continue
        # at least ceil(t * n) words are shared; the epsilon only ever lengthens the prefix (float-safe)
        prefix = sorted(map(rank_of, s))[: n - max(1, math.ceil(threshold * n - 1e-9)) + 1]
        lo, hi = threshold * n * slack, n / threshold / slack
        overlap: dict[int, int] = {}
        for pos, w in enumerate(prefix):
            entries = index.get(w)
            if entries is None:
                continue
            rest = n - pos - 1
            for j, pos_j, m in entries:
                if m < lo or m > hi:
                    continue
                seen = overlap.get(j, 0)
                if seen < 0:
                    continue
                tail = m - pos_j - 1
                bound = seen + 1 + (rest if rest < tail else tail)
                overlap[j] = seen + 1 if bound >= share * (n + m) * slack else -1
        found = []
        for j in sorted(j for j, o in overlap.items() if o > 0):
            sim = jaccard(s, sets[j])
            if sim >= threshold:
                found.append((j, sim))
        out.append(found)
        for pos, w in enumerate(prefix):
            index[w].append((i, pos, n))
    return out


def first_survivor(pairs: Sequence[Sequence[tuple[int, float]]], threshold: float) -> list[Match]:
    """Resolve a join into the definition: each set's first earlier *survivor* at or above threshold.

    A join made at a lower threshold answers every higher one, so moving the
    threshold up never recomputes similarities.
    """
    out: list[Match] = [None] * len(pairs)
    for i in [i for i, found in enumerate(pairs) if found]:  # a set with no similar earlier set survives
        out[i] = next(((j, sim) for j, sim in pairs[i] if sim >= threshold and out[j] is None), None)
    return out


def cosine_duplicates(vectors: Sequence[Optional[Sequence[float]]], threshold: float) -> list[Match]:
    """First earlier survivor with cosine similarity >= threshold (vectors may be missing)."""
    import numpy as np  # third-party and heavy: loaded only when embeddings are compared

    n = len(vectors)
    out: list[Match] = [None] * n
    have = [i for i, v in enumerate(vectors) if v is not None]
    if not have:
        return out
    dims = {len(vectors[i]) for i in have}
    if len(dims) != 1:
        raise ValueError(f"embeddings have different lengths: {sorted(dims)}")
    mat = np.zeros((n, dims.pop()))
    for i in have:
        mat[i] = vectors[i]
    norms = np.linalg.norm(mat, axis=1)
    norms[norms == 0] = 1.0
    mat = mat / norms[:, None]
    alive = np.zeros(n, dtype=bool)
    for start in range(0, n, 512):
        block = mat[start:start + 512] @ mat.T
        for r, i in enumerate(range(start, min(n, start + 512))):
            if vectors[i] is not None:
                hits = np.nonzero((block[r, :i] >= threshold) & alive[:i])[0]
                if hits.size:
                    out[i] = (int(hits[0]), float(block[r, hits[0]]))
                    continue
            alive[i] = True
    return out
