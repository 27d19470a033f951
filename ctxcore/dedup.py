"""Stages that drop a candidate because a higher-ranked survivor already says it.

Exact: identical text (SHA-256). Near: Jaccard similarity of word sets at or
above a threshold against the survivors in rank order; the first matching
survivor is named. The fast path (prefix filtering) returns exactly what the
straightforward all-pairs definition returns; tests hold it to that.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections import Counter, defaultdict
from functools import lru_cache
from typing import Optional, Sequence

from .records import Decision

_WORD = re.compile(r"[a-z0-9]+")


@lru_cache(maxsize=262_144)
def words(text: str) -> frozenset[str]:
    """The set of lower-cased ``[a-z0-9]+`` words.

    >>> sorted(words("Refunds: 5 business-days"))
    ['5', 'business', 'days', 'refunds']
    """
    return frozenset(_WORD.findall(text.lower()))


@lru_cache(maxsize=262_144)
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


@lru_cache(maxsize=262_144)
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

    Two sets with Jaccard >= t share at least ceil(t * |s|) members, so when every
    set is sorted by one global order (rarest first), their short prefixes must
    intersect. Only survivors sharing a prefix word are verified, with the same
    arithmetic as the definition.

    >>> s = [words("a b c d e"), words("a b c d e f"), words("x y z")]
    >>> near_duplicates(s, 0.8)
    [None, (0, 0.8333333333333334), None]
    """
    df = Counter(w for s in sets for w in s)
    order = {w: r for r, w in enumerate(sorted(df, key=lambda w: (df[w], w)))}
    index: dict[int, list[int]] = defaultdict(list)
    out: list[Match] = []
    for i, s in enumerate(sets):
        n = len(s)
        if n == 0:
            out.append(None)  # no words: never similar, and nothing can match it
            continue
        alpha = max(1, math.ceil(threshold * n) - 1)  # one short of the bound: float-safe
        prefix = sorted(order[w] for w in s)[: n - alpha + 1]
        seen: set[int] = set()
        for w in prefix:
            seen.update(index.get(w, ()))
        match = None
        lo, hi = threshold * n * (1 - 1e-9), n / threshold * (1 + 1e-9)
        for j in sorted(seen):
            other = sets[j]
            if not lo <= len(other) <= hi:
                continue
            sim = jaccard(s, other)
            if sim >= threshold:
                match = (j, sim)
                break
        out.append(match)
        if match is None:
            for w in prefix:
                index[w].append(i)
    return out


def cosine_duplicates(vectors: Sequence[Optional[Sequence[float]]], threshold: float) -> list[Match]:
    """First earlier survivor with cosine similarity >= threshold (vectors may be missing)."""
    import numpy as np

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


def exact(state):
    """Drop candidates whose text is identical to a higher-ranked one."""
    first: dict[str, str] = {}
    out = []
    for c in state.alive:
        h = digest(c.text)
        if h in first:
            out.append(Decision(c.id, "exact_duplicate", "exact_dedup",
                                f"same text (SHA-256 {h[:12]}) as higher-ranked {first[h]}",
                                duplicate_of=first[h], similarity=1.0))
        else:
            first[h] = c.id
    return state.drop(out)


_MEASURES = {"words": words, "shingles": shingles}


def near(state):
    """Drop candidates too similar to a higher-ranked survivor."""
    c = state.config
    if c.near_dup is None or not state.alive:
        return state
    alive = state.alive
    warnings = []
    if c.similarity == "cosine":
        vectors = [x.embedding for x in alive]
        missing = sum(v is None for v in vectors)
        if missing:
            warnings.append(f"cosine near-dedup: {missing} candidates carry no embedding and were not compared")
        try:
            matches = cosine_duplicates(vectors, c.near_dup)
        except ValueError as err:
            return state.warn(f"cosine near-dedup skipped: {err}")
        measure = "cosine"
    else:
        matches = near_duplicates([_MEASURES[c.similarity](x.text) for x in alive], c.near_dup)
        measure = "word-set Jaccard" if c.similarity == "words" else "5-character shingle Jaccard"
    out = [Decision(x.id, "near_duplicate", "near_dedup",
                    f"{measure} {m[1]:.3f} with higher-ranked {alive[m[0]].id} (threshold {c.near_dup:g})",
                    duplicate_of=alive[m[0]].id, similarity=round(m[1], 4))
           for x, m in zip(alive, matches) if m is not None]
    return state.drop(out).warn(*warnings)
