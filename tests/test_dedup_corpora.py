"""Near-dedup on issue #18's corpora (bench/corpora.py) gives the definition's fates, and each fast
path (the dense sweep on bit rows, the join's hashed pair counts, the word sets' hashed sort) gives
what the definition gives."""

import contextlib
import os
import sys

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from conftest import ROOT
from ctxcore import Candidate, Config, build
from ctxcore.stages import dedup, wordsets
from ctxcore.stages.dedup import near_duplicates_naive, near_matches, words
from ctxcore.memo import one_shot
from ctxcore.pipeline import forget_stage_results

sys.path.insert(0, os.path.join(ROOT, "bench"))
import corpora  # noqa: E402


def _ranked(corpus, n):
    """Candidates of a corpus with scores falling along the input, so rank order is input order."""
    return [Candidate(f"c{i}", t, round(1 - i / (2 * n), 6)) for i, t in enumerate(corpora.texts(corpus, n))]


@pytest.mark.slow
@pytest.mark.parametrize("corpus", corpora.CORPORA)
@pytest.mark.parametrize("once", [False, True], ids=["app", "cli-one-shot"])
def test_stage_fates_at_2k_equal_the_all_pairs_definition(corpus, once):
    cands = _ranked(corpus, 2000)
    forget_stage_results()
    # the app's build joins below the threshold for later slider moves; the CLI's (one_shot) does not
    with one_shot() if once else contextlib.nullcontext():
        trace = build(cands, "q", Config(budget=500))
    if corpus == "prose":
        reached = [entry[0] for entry in dedup._JOINS.values()]
        assert reached == ([0.8] if once else [0.5])  # (at 2k the join down to 0.5 is small enough)
    # the definition over what exact dedup leaves, in rank order: each against every earlier survivor
    first = {}
    for c in cands:
        first.setdefault(c.text, c)
    unique = [c for c in cands if first[c.text] is c]
    naive = near_duplicates_naive([words(c.text) for c in unique], 0.8)
    near = 0
    for c, m in zip(unique, naive):
        d = trace.decision(c.id)
        if m is None:
            assert d.fate != "near_duplicate", c.id
        else:
            near += 1
            assert (d.fate, d.duplicate_of) == ("near_duplicate", unique[m[0]].id), c.id
            assert d.similarity == round(m[1], 4)
    assert near > 90  # the planted one-word-changed copies (5%) at least: the test can fail
    assert sum(trace.decision(c.id).fate == "exact_duplicate" for c in cands) > 90


@pytest.mark.slow
@pytest.mark.parametrize("corpus, dense", [("prose", False), ("templated", True)])
@pytest.mark.parametrize("threshold", [0.5, 0.8, 0.95])
def test_near_matches_at_2k_equal_the_definition(corpus, dense, threshold):
    texts = list(dict.fromkeys(corpora.texts(corpus, 2000)))
    sets = wordsets.word_sets(texts)
    cost = wordsets.join_size(sets, threshold)
    # the templated corpus takes the dense sweep (a join there meets nearly every pair), prose the join
    assert (cost > dedup._DENSE_FROM and wordsets.dense_cost(sets, threshold) < cost) is dense
    assert near_matches(texts, "words", threshold) == near_duplicates_naive([words(t) for t in texts], threshold)


# -- the dense sweep against the definition, on small vocabularies (one, two and three uint64 words a set)

def _texts(vocabulary):
    word = st.sampled_from([f"w{i}" for i in range(vocabulary)] + ["A", "a", "Zz9"])
    return st.lists(st.lists(word, max_size=40).map(" ".join), max_size=60)


@pytest.mark.slow
@pytest.mark.parametrize("block, sub, cells", [(1024, 64, 1 << 21), (5, 2, 1), (1, 1, 3), (7, 64, 50)])
@settings(max_examples=120, deadline=None)
@given(data=st.data(), vocabulary=st.sampled_from([6, 60, 130, 190]), threshold=st.floats(0.01, 1.0))
def test_dense_sweep_equals_the_definition(block, sub, cells, data, vocabulary, threshold):
    texts = data.draw(_texts(vocabulary))
    # small blocks take many steps (the survivors of earlier steps then decide most rows), small runs and
    # cell limits split every comparison
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(wordsets, "_DENSE_BLOCK", block)
        mp.setattr(wordsets, "_DENSE_SUB", sub)
        mp.setattr(wordsets, "_DENSE_CELLS", cells)
        got = wordsets.dense_sweep(wordsets.word_sets(texts), threshold)
    assert got == near_duplicates_naive([words(t) for t in texts], threshold)


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(texts=_texts(12), threshold=st.sampled_from([0.25, 0.5, 0.6, 0.75, 0.8, 2 / 3, 1.0]))
def test_dense_sweep_keeps_exact_ties(texts, threshold):
    # similarities exactly at the threshold (4 shared of 5 at 0.8) are duplicates, as in the definition
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(wordsets, "_DENSE_BLOCK", 4)
        got = wordsets.dense_sweep(wordsets.word_sets(texts), threshold)
    assert got == near_duplicates_naive([words(t) for t in texts], threshold)


def test_dense_sweep_at_an_exact_tie():
    texts = ["a b c d", "a b c d e", "x y", "a b c d e f g h i j"]
    assert wordsets.dense_sweep(wordsets.word_sets(texts), 0.8) == [None, (0, 0.8), None, None]
    assert wordsets.dense_sweep(wordsets.word_sets(texts), 0.4) == [None, (0, 0.8), None, (0, 0.4)]


def test_bit_rows_hold_each_set():
    texts = [" ".join(f"w{k}" for k in range(i, 200, 3)) for i in range(5)] + ["", "w7"]
    sets = wordsets.word_sets(texts)
    bits = wordsets.bit_rows(sets)
    assert bits.shape == (len(texts), (sets.vocabulary + 63) // 64)
    for i in range(len(texts)):
        held = [64 * c + b for c in range(bits.shape[1]) for b in range(64) if int(bits[i, c]) >> b & 1]
        assert held == sorted(sets.row(i).tolist())


# -- the join's hashed pair counts and the word sets' hashed sort: exact whatever the hash does

text = st.lists(st.sampled_from([f"w{i}" for i in range(30)]), max_size=25).map(" ".join)


@settings(max_examples=150, deadline=None)
@given(texts=st.lists(text, max_size=40), threshold=st.floats(0.3, 1.0), bits=st.sampled_from([1, 2, 20]))
def test_join_pair_counting_in_few_buckets_loses_no_pair(texts, threshold, bits):
    expected = dedup.similar_pairs([words(t) for t in texts], threshold)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(wordsets, "_HASH_BITS", bits)  # 1 bit: two buckets, collisions everywhere
        assert wordsets.similar_pairs(wordsets.word_sets(texts), threshold) == expected


def test_word_sets_when_every_key_shares_one_hash(monkeypatch):
    texts = corpora.texts("prose", 300)
    normal = wordsets.word_sets(texts)
    monkeypatch.setattr(wordsets, "_MIX", np.uint64(0))  # every key hashes to 0: sorted by key instead
    collided = wordsets.word_sets(texts)
    assert collided.sizes.tolist() == normal.sizes.tolist() == [len(words(t)) for t in texts]
    assert near_matches(texts, "words", 0.5) == near_duplicates_naive([words(t) for t in texts], 0.5)
    for i in (0, 17, 299):
        assert len(set(collided.row(i).tolist())) == collided.sizes[i]


# -- the stage on a templated corpus: warm rebuilds at other thresholds are fresh builds' traces

@pytest.mark.slow
def test_templated_rebuilds_across_thresholds_match_fresh_builds():
    cands = _ranked("templated", 1500)
    seen = {t: build(cands, "q", Config(budget=500, near_dup=t)).to_json() for t in (0.8, 0.5, 0.9, 0.8, 0.3)}
    for t, trace in seen.items():
        forget_stage_results()
        assert build(cands, "q", Config(budget=500, near_dup=t)).to_json() == trace, t
    counts = {t: build(cands, "q", Config(budget=500, near_dup=t)).fate_counts()["near_duplicate"] for t in seen}
    assert counts[0.3] > counts[0.5] > counts[0.8] > counts[0.9] > 0
