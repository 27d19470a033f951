"""Stages that drop a candidate because a higher-ranked survivor already says it.

Exact: identical text (SHA-256). Near: Jaccard similarity of word sets at or
above a threshold against the survivors in rank order; the first matching
survivor is named. The fast path (prefix filtering) returns exactly what the
straightforward all-pairs definition returns; tests hold it to that.
"""

from __future__ import annotations

import math
import sys
from typing import Optional, Sequence

from . import bitsweep, wordsets  # numpy is imported only when their paths run (wordsets._Numpy, bitsweep._np)
from ..memo import Memo, rebuilds_expected
from ..records import Decision, TraceWarning
from .similarity import (Match, cosine_duplicates, digest, first_survivor, jaccard, near_duplicates,
                         near_duplicates_naive, shingles, similar_pairs, words)

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
# past this many candidate pairs, near-dedup counts shared words on bit rows instead (wordsets.dense_sweep)
# when that costs less: small vocabularies, where the sets share most of their words and the join's filters
# let nearly every pair through (10k templated chunks of a 120-word vocabulary: a join of 500M candidate
# pairs, a dense sweep of 0.2 s). Below it the join is cheap, and its pairs answer other thresholds too.
_DENSE_FROM = 200_000


def join_texts(texts: Sequence[str], similarity: str, threshold: float, sets=None, reach_below: bool = False):
    """The similarity self-join of ``texts`` under a set measure: (pairs, word sets, lowest similarity
    the pairs go down to).

    Word or shingle sets of many texts go through numpy (:mod:`ctxcore.stages.wordsets`), with the same
    result; with ``reach_below`` that join goes below ``threshold`` (down to 0.5 where cheap), so that
    steps down a slider reuse it. The sets are handed back for a join further down. When the join at
    ``threshold`` would cost more than ``_SWEEP_FROM`` candidate pairs and a sweep looks cheaper,
    pairs is None: the sets are for a sweep.
    """
    n = len(texts)
    if isinstance(sets, bitsweep.ShingleBits) and threshold < bitsweep.FROM:
        sets = None  # remembered for a higher threshold: here the bit filter would prune little
    if sets is None and similarity in _MEASURES and (
            n >= _VECTORISED_FROM or (n >= _VECTORISED_LOADED and "numpy" in sys.modules)):
        if similarity == "shingles" and threshold >= bitsweep.FROM:
            sets = bitsweep.shingle_bits(texts)  # no shingle is rare: the join would meet nearly every pair
        if sets is None:
            sets = (wordsets.word_sets if similarity == "words" else wordsets.shingle_sets)(texts)  # None: too varied
    if isinstance(sets, bitsweep.ShingleBits):
        return None, sets, threshold
    if sets is not None:
        cost = wordsets.join_size(sets, threshold)
        if cost > _DENSE_FROM and wordsets.dense_cost(sets, threshold) < cost:
            return None, sets, threshold
        lower = threshold
        for reach in (_LOWEST, round(threshold - _MARGIN, 9)) if reach_below else ():  # 0.8 - 0.1 is 0.70..01
            if _LOWEST <= reach < threshold and wordsets.join_size(sets, reach) <= _MARGIN_PAIRS:
                lower = reach
                break
        if lower == threshold:
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
    """Near-dedup of all the sets, or of those in ``rows``, from the survivors forward: on bit rows
    (:func:`ctxcore.stages.wordsets.dense_sweep`) where that costs less than the join would, else
    :func:`ctxcore.stages.wordsets.sweep`."""
    if isinstance(sets, bitsweep.ShingleBits):
        return bitsweep.sweep(sets if rows is None else sets.subset(rows), threshold)
    sets = sets if rows is None else wordsets.subset(sets, rows)
    if wordsets.dense_cost(sets, threshold) < wordsets.join_size(sets, threshold):
        return wordsets.dense_sweep(sets, threshold)
    return wordsets.sweep(sets, threshold)


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
                                    reach_below=rebuilds_expected())
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
            warnings.append(TraceWarning(f"cosine near-dedup: {missing} candidates carry no embedding and were not "
                                         f"compared", "cosine_missing", [x.id for x in alive if x.embedding is None][:50]))
        try:
            matches = cosine_duplicates(vectors, c.near_dup)
        except ValueError as err:
            return state.warn(TraceWarning(f"cosine near-dedup skipped: {err}", "cosine_skipped"))
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
