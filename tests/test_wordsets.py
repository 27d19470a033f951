"""The numpy word sets and self-join give exactly what the Python definition gives."""

import random

import pytest
from hypothesis import given, settings, strategies as st

from ctxcore import Candidate, Config, build

from ctxcore.stages import dedup, wordsets
from ctxcore.pipeline import forget_stage_results
from ctxcore.stages.dedup import jaccard, near_duplicates_naive, near_matches, words

# words that sit on the packing's edges: 8, 9, 12 and 13 characters, equal first twelve, digits, case
EDGES = ["abcdefgh", "abcdefghi", "abcdefghijkl", "abcdefghijklm", "abcdefghijkln", "abcdefghijklmnopqrstuvwxyz0",
         "a", "b", "a0", "0a", "z9", "zzzzzzzzzzzz", "ZZZZZZZZZZZZ", "9999999999999", "x" * 40, "x" * 41]
# separators and text whose lower-casing makes ASCII letters: Kelvin sign, dotted capital I, sigma, CJK, emoji
ODD = ["\u212a", "\u0130", "\u03a3", "é", "退款", "\U0001f600", "\n", "\t", "-", "'", "\x00", "_"]

text = st.lists(st.sampled_from(EDGES + ODD + ["refund", "Refund", "days", "five", "5"]), max_size=25).map(
    lambda parts: " ".join(parts) if len(parts) % 2 else "".join(parts))


def _shared_matrix(texts):
    sets = wordsets.word_sets(texts)
    return [[len(set(sets.row(i).tolist()) & set(sets.row(j).tolist())) for j in range(len(texts))]
            for i in range(len(texts))]


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(st.lists(text, max_size=12))
def test_word_sets_are_the_word_sets_of_the_definition(texts):
    sets = wordsets.word_sets(texts)
    assert sets.sizes.tolist() == [len(words(t)) for t in texts]
    expected = [[len(words(a) & words(b)) for b in texts] for a in texts]
    assert _shared_matrix(texts) == expected


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(st.lists(text, max_size=30), st.floats(0.05, 1.0))
def test_self_join_equals_the_python_join(texts, threshold):
    expected = dedup.similar_pairs([words(t) for t in texts], threshold)
    assert wordsets.similar_pairs(wordsets.word_sets(texts), threshold) == expected


def test_long_words_equal_in_their_first_twelve_characters_stay_apart():
    texts = ["abcdefghijklm pay", "abcdefghijkln pay", "abcdefghijkl pay", "abcdefghijklm pay"]
    assert _shared_matrix(texts)[0] == [2, 1, 1, 2]
    assert wordsets.similar_pairs(wordsets.word_sets(texts), 0.9) == [[], [], [], [(0, 1.0)]]


def _corpus(n, seed):
    """Chunks of 20-120 words from a Zipf-like vocabulary, a fifth of them edited copies of earlier ones."""
    rng = random.Random(seed)
    vocab = [f"w{i}" for i in range(3000)]
    weights = [1 / (r + 1) for r in range(len(vocab))]
    out = []
    for _ in range(n):
        if out and rng.random() < 0.2:
            parts = rng.choice(out).split()
            for _ in range(rng.randint(1, 6)):
                parts[rng.randrange(len(parts))] = rng.choice(vocab)
            out.append(" ".join(parts))
        else:
            out.append(" ".join(rng.choices(vocab, weights, k=rng.randint(20, 120))))
    return out


@pytest.mark.slow
@pytest.mark.parametrize("threshold", [0.5, 0.7, 0.8, 0.95])
def test_near_dedup_of_thousands_equals_all_pairs(threshold):
    texts = _corpus(1500, seed=int(threshold * 100))
    got = near_matches(texts, "words", threshold)  # 1500 texts: the numpy path
    assert len(texts) >= dedup._VECTORISED_FROM
    assert got == near_duplicates_naive([words(t) for t in texts], threshold)
    assert sum(m is not None for m in got) > 50  # the planted copies are found, so the test can fail


def test_small_batches_give_the_same_pairs(monkeypatch):
    texts = _corpus(400, seed=3)
    whole = wordsets.similar_pairs(wordsets.word_sets(texts), 0.6)
    monkeypatch.setattr(wordsets, "_BATCH", 7)
    assert wordsets.similar_pairs(wordsets.word_sets(texts), 0.6) == whole
    assert sum(map(len, whole)) > 20


@pytest.mark.slow
def test_stage_names_the_same_survivor_and_similarity_as_the_definition():
    texts = _corpus(1200, seed=11)
    cands = [Candidate(f"c{i}", t, round(1 - i / 2000, 4)) for i, t in enumerate(texts)]
    trace = build(cands, "w1 w2", Config(budget=500))
    naive = near_duplicates_naive([words(t) for t in texts], 0.8)  # input order is rank order here
    for c, m in zip(cands, naive):
        d = trace.decision(c.id)
        if d.fate in ("exact_duplicate",):
            continue
        if m is None:
            assert d.fate != "near_duplicate", c.id
        else:
            assert d.fate == "near_duplicate" and d.duplicate_of == f"c{m[0]}", c.id
            assert d.similarity == round(jaccard(words(c.text), words(texts[m[0]])), 4)


def test_lower_threshold_rebuild_reuses_word_sets_and_matches_a_fresh_build():
    texts = _corpus(1200, seed=5)
    cands = [Candidate(f"c{i}", t, round(1 - i / 2000, 4)) for i, t in enumerate(texts)]
    build(cands, "q", Config(budget=500, near_dup=0.9))
    again = build(cands, "q", Config(budget=500, near_dup=0.6))
    dedup._JOINS.clear()
    fresh = build(cands, "q", Config(budget=500, near_dup=0.6))
    assert again.to_json() == fresh.to_json()
    assert again.fate_counts()["near_duplicate"] > build(cands, "q", Config(budget=500, near_dup=0.9)).fate_counts()[
        "near_duplicate"]


# -- the sweep: near-dedup from the survivors forward, for thresholds where the join meets most pairs

@pytest.mark.slow
@pytest.mark.parametrize("group, pair_cost, rows", [(1, 40, 16_384), (3, 0, 5), (3, 10**9, 1), (64, 40, 7)])
@settings(max_examples=150, deadline=None)
@given(texts=st.lists(text, max_size=40), threshold=st.floats(0.01, 1.0))
def test_sweep_equals_the_definition(group, pair_cost, rows, texts, threshold):
    # small groups take many steps; a pair cost of 0 hands what is open to the join at the first chance,
    # a huge one never does; small row slices split every comparison
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(wordsets, "_GROUP", group)
        mp.setattr(wordsets, "_PAIR_COST", pair_cost)
        mp.setattr(wordsets, "_ROWS", rows)
        got = wordsets.sweep(wordsets.word_sets(texts), threshold)
    assert got == near_duplicates_naive([words(t) for t in texts], threshold)


@pytest.mark.slow
@pytest.mark.parametrize("threshold", [0.02, 0.1, 0.2, 0.3])
def test_near_dedup_at_low_thresholds_sweeps_and_equals_all_pairs(threshold, monkeypatch):
    texts = _corpus(1500, seed=int(threshold * 100))
    sets = wordsets.word_sets(texts)
    assert wordsets.join_size(sets, threshold) > 1_000_000  # a join here meets most pairs
    naive = near_duplicates_naive([words(t) for t in texts], threshold)
    monkeypatch.setattr(dedup, "_SWEEP_FROM", 1_000_000)
    assert near_matches(texts, "words", threshold) == naive  # swept, or on bit rows (dense_sweep)
    monkeypatch.setattr(wordsets, "_DENSE_BYTES", 0)  # never on bit rows: the sweep itself
    assert near_matches(texts, "words", threshold) == naive
    monkeypatch.setattr(wordsets, "_PAIR_COST", 0)  # and with the rest handed to the join early
    assert near_matches(texts, "words", threshold) == naive
    assert sum(m is not None for m in naive) > 250


def test_sweep_settles_ten_thousand_rows_with_few_survivors():
    # one common word in every text: at 0.01 the first text absorbs all the others; the join would
    # meet all 50 million pairs
    texts = [f"common w{i} w{i + 1}" for i in range(10_000)]
    got = wordsets.sweep(wordsets.word_sets(texts), 0.01)
    assert got[0] is None and got[1] == (0, 0.5)  # "common w1 w2" shares w1 with "common w0 w1" too
    assert got[2:] == [(0, 0.2)] * 9_998


@pytest.mark.slow
def test_rebuilds_across_join_and_sweep_match_fresh_builds(monkeypatch):
    monkeypatch.setattr(dedup, "_SWEEP_FROM", 1_000_000)  # 1,200 chunks: under 0.35 the stage sweeps
    texts = _corpus(1200, seed=13)
    cands = [Candidate(f"c{i}", t, round(1 - i / 2000, 4)) for i, t in enumerate(texts)]
    seen = {}
    for threshold in (0.8, 0.05, 0.3, 0.05, 0.7, 0.15, 0.9):
        seen[threshold] = build(cands, "q", Config(budget=500, near_dup=threshold)).to_json()
    assert any(key[2] == 0.05 for key in dedup._SWEPT)  # the low thresholds were swept
    for threshold, trace in seen.items():
        forget_stage_results()
        assert build(cands, "q", Config(budget=500, near_dup=threshold)).to_json() == trace, threshold
    counts = {t: build(cands, "q", Config(budget=500, near_dup=t)).fate_counts()["near_duplicate"] for t in seen}
    assert counts[0.05] > counts[0.3] > counts[0.9]


@pytest.mark.slow
def test_thresholds_down_to_half_reuse_the_first_join(monkeypatch):
    texts = _corpus(1200, seed=17)
    cands = [Candidate(f"c{i}", t, round(1 - i / 2000, 4)) for i, t in enumerate(texts)]
    build(cands, "q", Config(budget=500, near_dup=0.8))

    def compares(*args):
        raise AssertionError("compared texts again")

    steps = (0.5, 0.65, 0.95, 0.7)
    with monkeypatch.context() as mp:  # the join made for 0.8 reaches 0.5: these compare no texts
        for name in ("similar_pairs", "sweep", "word_sets"):
            mp.setattr(wordsets, name, compares)
        traces = {t: build(cands, "q", Config(budget=500, near_dup=t)).to_json() for t in steps}
    for t in steps:
        forget_stage_results()
        assert build(cands, "q", Config(budget=500, near_dup=t)).to_json() == traces[t]


# -- shingle sets: the same sets as dedup.shingles, and near-dedup over them the definition's

SPACES = [" ", "  ", "\t", "\n", "\xa0", "\u2028", "\u3000", "\x1c", "\x85"]
chars = st.lists(st.sampled_from(list("abcAB ") + SPACES + ODD + ["\ud800", "\U0001f600x"]), max_size=14).map("".join)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(st.lists(chars, max_size=10))
def test_shingle_sets_are_the_shingles_of_the_definition(texts):
    sets = wordsets.shingle_sets(texts)
    assert sets.sizes.tolist() == [len(dedup.shingles(t)) for t in texts]
    got = [[len(set(sets.row(i).tolist()) & set(sets.row(j).tolist())) for j in range(len(texts))]
           for i in range(len(texts))]
    assert got == [[len(dedup.shingles(a) & dedup.shingles(b)) for b in texts] for a in texts]


@pytest.mark.slow
def test_texts_with_too_many_distinct_characters_fall_back_to_python():
    texts = ["".join(map(chr, range(0x4E00 + 7000 * i, 0x4E00 + 7000 * (i + 1)))) for i in range(2)] + ["x"] * 600
    assert wordsets.shingle_sets(texts) is None  # 14,000 distinct characters: five do not fit in 63 bits
    assert near_matches(texts, "shingles", 0.8)[3] == (2, 1.0)


@pytest.mark.slow
@pytest.mark.parametrize("threshold", [0.3, 0.8])
def test_shingle_near_dedup_of_hundreds_equals_all_pairs(threshold):
    texts = _corpus(600, seed=21)
    naive = near_duplicates_naive([dedup.shingles(t) for t in texts], threshold)
    assert near_matches(texts, "shingles", threshold) == naive  # 600 texts: the numpy path
    assert sum(m is not None for m in naive) > 30


@pytest.mark.slow
def test_filter_changes_before_near_dedup_reuse_the_join(monkeypatch):
    texts = _corpus(1200, seed=23)
    cands = [Candidate(f"c{i}", t, round(1 - i / 2000, 4), doc_id=f"d{i % 300}",
                       date=("2025-01-01", "2026-01-01", None)[i // 300 % 3],
                       permissions=("staff",) if i % 4 == 0 else None) for i, t in enumerate(texts)]
    base = Config(budget=500, near_dup=0.7)
    build(cands, "q", base)

    def compares(*args):
        raise AssertionError("compared texts again")

    changes = [base.replace(prefer_newest=False), base.replace(caller="staff"), base.replace(caller="guest"),
               base.replace(caller="staff", prefer_newest=False, near_dup=0.6)]
    with monkeypatch.context() as mp:
        for name in ("similar_pairs", "sweep", "word_sets"):
            mp.setattr(wordsets, name, compares)
        traces = [build(cands, "q", c) for c in changes]
    for config, trace in zip(changes, traces):
        forget_stage_results()
        assert build(cands, "q", config).to_json() == trace.to_json()
    counts = [t.fate_counts() for t in traces]
    assert counts[0]["stale"] == 0 < build(cands, "q", base).fate_counts()["stale"]
    assert counts[2]["not_permitted"] > 0 and all(c["near_duplicate"] > 20 for c in counts)
