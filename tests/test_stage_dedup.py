import random

import pytest

from ctxcore import Candidate, Config, build

from ctxcore.stages import wordsets
from ctxcore.stages.dedup import _sweep, near_duplicates, near_duplicates_naive, shingles, words


def test_exact_duplicate_keeps_the_higher_ranked_copy():
    t = build([Candidate("low", "same text", 0.2), Candidate("high", "same text", 0.9)], "q", Config(budget=100))
    assert t.decision("low").fate == "exact_duplicate" and t.decision("low").duplicate_of == "high"


def test_ties_are_broken_by_input_order():
    t = build([Candidate("first", "same", 0.5), Candidate("second", "same", 0.5)], "q", Config(budget=100))
    assert t.decision("second").duplicate_of == "first"


def test_all_duplicates_leave_one():
    t = build([Candidate(f"c{i}", "identical chunk", 0.5) for i in range(5)], "q", Config(budget=100))
    assert t.fate_counts()["kept"] == 1 and t.fate_counts()["exact_duplicate"] == 4
    # every copy names the one survivor (ties go to input order: c0), never the copy just above it
    assert [(d.id, d.duplicate_of) for d in t.decisions] == [
        ("c0", None), ("c1", "c0"), ("c2", "c0"), ("c3", "c0"), ("c4", "c0")]


def test_near_dup_names_the_first_matching_survivor_in_rank_order():
    base = "alpha beta gamma delta epsilon zeta eta theta iota kappa"
    t = build([Candidate("a", base, 0.9), Candidate("b", base + " lambda", 0.8),
               Candidate("c", base + " mu", 0.7)], "q", Config(budget=500))
    assert t.decision("b").duplicate_of == "a"
    assert t.decision("c").duplicate_of == "a"  # a ranks before b; b is gone anyway


def test_near_dup_off_keeps_both():
    t = build([Candidate("a", "one two three four five", 0.9), Candidate("b", "one two three four five six", 0.8)],
              "q", Config(budget=500, near_dup=None))
    assert t.fate_counts()["kept"] == 2
    assert all(d.duplicate_of is None and d.similarity is None for d in t.decisions)
    # switched on, b (5 of 6 words shared: 0.833) names a, with that similarity
    t = build(t.candidates, "q", Config(budget=500))
    assert (t.decision("b").fate, t.decision("b").duplicate_of, t.decision("b").similarity) == (
        "near_duplicate", "a", round(5 / 6, 4))


def test_texts_without_words_are_never_near_duplicates():
    t = build([Candidate("a", "退款需要五个工作日", 0.9), Candidate("b", "运费由买家承担", 0.8)], "q", Config(budget=500))
    assert t.fate_counts()["kept"] == 2
    assert [d.duplicate_of for d in t.decisions] == [None, None]


def test_shingles_catch_a_typo_that_words_miss():
    a, b = "Refunds arrive within five business days", "Refunds arive within five busines days"
    assert not near_duplicates([words(a), words(b)], 0.8)[1]
    assert near_duplicates([shingles(a), shingles(b)], 0.65)[1][0] == 0


def test_cosine_on_supplied_embeddings():
    t = build([Candidate("a", "first text", 0.9, embedding=(1.0, 0.0)),
               Candidate("b", "other words", 0.8, embedding=(0.99, 0.05)),
               Candidate("c", "third", 0.7, embedding=(0.0, 1.0))], "q",
              Config(budget=500, similarity="cosine", near_dup=0.95))
    assert t.decision("b").fate == "near_duplicate" and t.decision("b").duplicate_of == "a"
    assert t.decision("c").fate == "kept"


def _corpus(n, seed):
    rng = random.Random(seed)
    vocab = [f"w{i}" for i in range(60)]
    base = [frozenset(rng.sample(vocab, rng.randint(0, 12))) for _ in range(n // 2)]
    out = []
    for _ in range(n):
        s = set(rng.choice(base))
        for _ in range(rng.randint(0, 3)):
            (s.add if rng.random() < 0.5 else s.discard)(rng.choice(vocab))
        out.append(frozenset(s))
    return out


@pytest.mark.slow
def test_fast_near_dedup_equals_the_all_pairs_definition():
    for seed in range(40):
        sets = _corpus(120, seed)
        for t in (0.3, 0.5, 0.6, 0.75, 0.8, 0.9, 1.0):
            assert near_duplicates(sets, t) == near_duplicates_naive(sets, t), (seed, t)


def test_the_sweep_is_near_dedup_from_the_survivors_forward():
    texts = ["a b c d e", "a b c d e f", "x y z", "a b c d e f g"]
    sets = wordsets.word_sets(texts)
    # 1 ~ 0: 5 shared of 6; 3 ~ 0: 5 of 7; 3 ~ 1: 6 of 7, but 1 is a duplicate unless 0 is left out
    assert _sweep(sets, 0.8) == [None, (0, 5 / 6), None, None]
    assert _sweep(sets, 0.7) == [None, (0, 5 / 6), None, (0, 5 / 7)]
    assert _sweep(sets, 0.8, rows=[1, 2, 3]) == [None, None, (0, 6 / 7)]
