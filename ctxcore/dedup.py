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
import sys
from collections import Counter, defaultdict
from functools import lru_cache
from itertools import chain
from typing import Optional, Sequence

from .memo import Memo
from .records import Decision

_WORD = re.compile(r"[a-z0-9]+")


@lru_cache(maxsize=262_144)
def words(text: str) -> frozenset[str]:
    """The set of lower-cased ``[a-z0-9]+`` words.

    >>> sorted(words("Refunds: 5 business-days"))
    ['5', 'business', 'days', 'refunds']
    """
    return frozenset(map(sys.intern, _WORD.findall(text.lower())))  # one copy of each word, however many texts


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
    """Drop candidates whose text is identical to a higher-ranked one (the reason names the text's
    SHA-256, which is how logs and other tools identify a chunk's content)."""
    first: dict[str, str] = {}
    out = []
    for c in state.alive:
        earlier = first.setdefault(c.text, c.id)
        if earlier != c.id:
            out.append(Decision.quick(c.id, "exact_duplicate", "exact_dedup",
                                      f"same text (SHA-256 {digest(c.text)[:12]}) as higher-ranked {earlier}",
                                      duplicate_of=earlier, similarity=1.0))
    return state.drop(out)


_MEASURES = {"words": words, "shingles": shingles}
_VECTORISED_FROM = 500  # texts; below this, importing numpy (~90 ms) costs more than the Python join saves ...
_VECTORISED_LOADED = 100  # ... unless something (the app's pandas) has imported it already
# a vectorised join reaches below the threshold asked for: down to 0.5, or else 0.1 below, as far as costs
# at most this many candidate pairs. From 0.8 at 10k chunks, 0.5 is 3.9M pairs and adds about 60 ms to a
# cold build, most of it while the tokens are counted; at 100k even 0.7 is 56M pairs (3 s): then no margin
_MARGIN, _LOWEST, _MARGIN_PAIRS = 0.1, 0.5, 5_000_000
# past this many candidate pairs (at 10k chunks, thresholds under about 0.65), near-dedup sweeps
# (wordsets.sweep) instead of joining when that looks cheaper: where few survive, and a join would verify
# nearly every pair (1k chunks at 0.05: join 1.8 s, sweep 1 ms). A join's pairs answer every threshold
# above it too; a sweep answers its own.
_SWEEP_FROM = 1_000_000


def join_texts(texts: Sequence[str], similarity: str, threshold: float, sets=None, reach_below: bool = False):
    """The similarity self-join of ``texts`` under a set measure: (pairs, word sets, lowest similarity
    the pairs go down to).

    Word or shingle sets of many texts go through numpy (:mod:`ctxcore.wordsets`), with the same
    result; with ``reach_below`` that join goes below ``threshold`` (down to 0.5 where cheap), so that
    steps down a slider reuse it. The sets are handed back for a join further down. When the join at
    ``threshold`` would cost more than ``_SWEEP_FROM`` candidate pairs and a sweep looks cheaper,
    pairs is None: the sets are for a sweep.
    """
    n = len(texts)
    if sets is None and similarity in _MEASURES and (
            n >= _VECTORISED_FROM or (n >= _VECTORISED_LOADED and "numpy" in sys.modules)):
        from . import wordsets

        sets = (wordsets.word_sets if similarity == "words" else wordsets.shingle_sets)(texts)  # None: too varied
    if sets is not None:
        from . import wordsets

        lower = threshold
        for reach in (_LOWEST, round(threshold - _MARGIN, 9)) if reach_below else ():  # 0.8 - 0.1 is 0.70..01
            if _LOWEST <= reach < threshold and wordsets.join_size(sets, reach) <= _MARGIN_PAIRS:
                lower = reach
                break
        if lower == threshold:
            cost = wordsets.join_size(sets, threshold)
            if cost > _SWEEP_FROM and wordsets.sweep_pays(sets, threshold, cost):
                return None, sets, threshold
        try:
            return wordsets.similar_pairs(sets, lower), sets, lower
        except OverflowError:  # beyond the input limits: the Python join gives the same pairs
            pass
    return similar_pairs([_MEASURES[similarity](t) for t in texts], threshold), None, threshold


def near_matches(texts: Sequence[str], similarity: str, threshold: float) -> list[Match]:
    """Each text's first earlier surviving near duplicate: :func:`near_duplicates_naive` on texts.

    >>> near_matches(["a b c d e", "a b c d e f", "x y z"], "words", 0.8)
    [None, (0, 0.8333333333333334), None]
    """
    pairs, sets, _ = join_texts(texts, similarity, threshold)
    return _sweep(sets, threshold) if pairs is None else first_survivor(pairs, threshold)


def _sweep(sets, threshold: float, rows: Optional[list[int]] = None) -> list[Match]:
    """:func:`ctxcore.wordsets.sweep` of all the sets, or of those in ``rows``."""
    from . import wordsets

    return wordsets.sweep(sets if rows is None else wordsets.subset(sets, rows), threshold)


_JOINS = Memo(8)
_SWEPT = Memo(8)


def _memo_near(texts: tuple[str, ...], rows: list[int], similarity: str, threshold: float) -> list[Match]:
    """Near-dedup of ``texts[rows]`` in that order, where ``texts`` are every candidate's, in rank order.

    The join is made over all the texts and remembered, so a rebuild with other settings compares no
    texts again when the threshold is one the join reaches: not when other candidates survive the
    filters before this stage (a similarity belongs to a pair, whoever else is there), nor when the
    threshold moves within the join. Below it, the remembered sets are joined again, or swept when
    that join is too big (a sweep answers its own threshold and survivors only, and is remembered by
    them).
    """
    key = (texts, similarity)
    joined = _JOINS.get(key)
    if joined is not None and joined[0] <= threshold:
        return first_survivor(_among(joined[1], rows), threshold)
    swept_key = key + (threshold, tuple(rows))
    swept = _SWEPT.get(swept_key)
    if swept is not None:
        return swept
    pairs, sets, lower = join_texts(texts, similarity, threshold, sets=joined[2] if joined else None,
                                    reach_below=True)
    if pairs is not None:
        return first_survivor(_among(_JOINS.keep(key, (lower, pairs, sets))[1], rows), threshold)
    if joined is None:
        _JOINS.keep(key, (math.inf, None, sets))  # no pairs yet: the sets, for the next join
    return _SWEPT.keep(swept_key, _sweep(sets, threshold, None if len(rows) == len(texts) else rows))


def _among(pairs: list, rows: list[int]) -> list:
    """The pairs between ``rows`` only, numbered by place in ``rows`` (ascending).

    >>> _among([[], [(0, 0.9)], [(0, 0.8), (1, 0.85)]], [0, 2])
    [[], [(0, 0.8)]]
    """
    if len(rows) == len(pairs):
        return pairs
    place = [-1] * len(pairs)
    for k, r in enumerate(rows):
        place[r] = k
    return [[(place[j], sim) for j, sim in pairs[r] if place[j] >= 0] if pairs[r] else [] for r in rows]


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
        rank = state.rank
        matches = _memo_near(_ranked_texts(state.candidates, rank), [rank[x.id] for x in alive], c.similarity,
                             c.near_dup)
        measure = "word-set Jaccard" if c.similarity == "words" else "5-character shingle Jaccard"
    found = [(x.id, alive[m[0]].id, m[1]) for x, m in zip(alive, matches) if m is not None]
    said, tail = measure + " %.3f with higher-ranked ", f" (threshold {c.near_dup:g})"
    out = Decision.each("near_duplicate", "near_dedup", [(i, said % sim + j + tail) for i, j, sim in found],
                        duplicate_of=[j for _, j, _ in found], similarity=[round(sim, 4) for _, _, sim in found])
    survivors = tuple([x for x, m in zip(alive, matches) if m is None])
    return state.drop(out, survivors=survivors).warn(*warnings)


_TEXTS = Memo(8)


def _ranked_texts(candidates: tuple, rank) -> tuple[str, ...]:
    """Every candidate's text in rank order: the key of the remembered joins, made once per candidate
    set (a rebuild has the same candidates tuple, and gets the same key back without reading 10k records)."""

    def make(cands):
        texts = [""] * len(cands)
        for c in cands:
            texts[rank[c.id]] = c.text
        return tuple(texts)

    return _TEXTS.of(candidates, make)
