"""Tables for ctxcore.stages.similarity: word sets, shingles, Jaccard, digests, who near-duplicates whom (the
definition, the self-join and the first-survivor resolution) and cosine duplicates, with hand-worked numbers
and, for the join, a brute-force all-pairs reference written here."""

import random

import pytest

from ctxcore.stages.similarity import (cosine_duplicates, digest, first_survivor, jaccard, near_duplicates,
                                near_duplicates_naive, shingles, similar_pairs, words)


def F(*items):
    return frozenset(items)


@pytest.mark.parametrize("text, expected", [
    ("Refunds: 5 business-days", F("refunds", "5", "business", "days")),
    ("", F()),
    ("  ...  ", F()),
    ("ÉTÉ café 2x", F("t", "caf", "2x")),  # only [a-z0-9] runs count as words
    ("the THE The", F("the")),
])
def test_words_are_lower_cased_ascii_runs(text, expected):
    assert words(text) == expected


@pytest.mark.parametrize("text, k, expected", [
    ("Hello  World", 5, F("hello", "ello ", "llo w", "lo wo", "o wor", " worl", "world")),
    ("abcdef", 3, F("abc", "bcd", "cde", "def")),
    ("abcde", 5, F("abcde")),  # exactly k characters: the text itself
    ("ab", 3, F("ab")),
    (" \n\t ", 5, F()),
    ("", 5, F()),
    ("a  a  a", 3, F("a a", " a ")),
])
def test_shingles_are_character_k_grams_of_the_collapsed_text(text, k, expected):
    assert shingles(text, k) == expected


@pytest.mark.parametrize("a, b, expected", [
    (F("a", "b", "c"), F("b", "c", "d"), 0.5),  # 2 shared of 4
    (F("a"), F("a"), 1.0),
    (F(), F(), 0.0),  # two empty sets are not similar
    (F("a"), F(), 0.0),
    (F("a", "b", "c", "d"), F("a", "b", "c", "d", "e"), 0.8),
])
def test_jaccard_is_shared_over_union(a, b, expected):
    assert jaccard(a, b) == expected


def test_digest_is_the_sha256_of_the_utf8_text():
    assert digest("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    assert digest("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"


A, B = F("1", "2", "3", "4", "5"), F("1", "2", "3", "4", "5", "6")
C = F("2", "3", "4", "5", "6", "7")  # with A: 4/7 = 0.571; with B: 5/7 = 0.714


@pytest.mark.parametrize("sets, threshold, expected", [
    ([A, B, C], 0.7, [None, (0, 5 / 6), None]),  # C matches only B, and B is not a survivor
    ([A, C, B], 0.7, [None, None, (0, 5 / 6)]),  # B matches A first
    ([A, A, F()], 1.0, [None, (0, 1.0), None]),
    ([F(), F()], 0.5, [None, None]),
    ([F("a", "b", "c", "d"), F("a", "b", "c", "d", "e")], 0.8, [None, (0, 0.8)]),  # at the threshold counts
    ([F("a", "b", "c", "d"), F("a", "b", "c", "d", "e")], 0.81, [None, None]),
    ([F("x"), A, B, C], 0.5, [None, None, (1, 5 / 6), (1, 4 / 7)]),
    ([F("x"), F("x")], 0.5, [None, (0, 1.0)]),  # one-word sets
    ([F("x"), F("x")], 1.0, [None, (0, 1.0)]),
    ([F("a", "b"), F("b", "a")], 0.5, [None, (0, 1.0)]),
    ([F("a", "b", "c", "d", "e"), F("a", "b", "c", "d")], 0.8, [None, (0, 0.8)]),  # the later set is smaller
])
def test_near_duplicates_take_the_first_earlier_survivor(sets, threshold, expected):
    assert near_duplicates_naive(sets, threshold) == expected
    assert near_duplicates(sets, threshold) == expected


def test_similar_pairs_lists_every_earlier_similar_set():
    assert similar_pairs([A, B, C, F(), A], 0.5) == [
        [], [(0, 5 / 6)], [(0, 4 / 7), (1, 5 / 7)], [], [(0, 1.0), (1, 5 / 6), (2, 4 / 7)]]


def test_a_word_shared_with_a_set_of_another_size_does_not_hide_later_ones():
    # at 1.0 every prefix is one word, the rarest (ties alphabetical): "a" for the first three sets. When
    # {a, b} meets {a, p, q} (too big to be equal) under "a", the next set under "a", the first {a, b}, is
    # still compared.
    sets = [F("a", "p", "q"), F("a", "b"), F("a", "b"), F("p", "q"), F("p", "q"), F("b", "p", "q")]
    assert similar_pairs(sets, 1.0) == [[], [], [(1, 1.0)], [], [(3, 1.0)], []]


def test_a_pruned_set_does_not_hide_later_sets_under_the_same_word():
    # {c,e,f,h,j,k} against {f,j}: 2 shared of 6 = 0.333, a match at 0.3; against {e,i,j}: 2 of 7 = 0.286, and
    # that pair is ruled out on the way, before {f,j} is reached under the same word
    sets = [F("e", "i", "j"), F("f", "j"), F("f"), F("f"), F("c", "e", "f", "h", "j", "k")]
    assert similar_pairs(sets, 0.3) == [[], [], [(1, 0.5)], [(1, 0.5), (2, 1.0)], [(1, 2 / 6)]]


def test_first_survivor_resolves_a_lower_threshold_join_at_a_higher_one():
    pairs = similar_pairs([A, B, C], 0.5)
    assert first_survivor(pairs, 0.5) == [None, (0, 5 / 6), (0, 4 / 7)]
    assert first_survivor(pairs, 0.7) == [None, (0, 5 / 6), None]
    assert first_survivor(pairs, 0.9) == [None, None, None]
    assert first_survivor([[], [(0, 0.75)], [(1, 0.9)]], 0.8) == [None, None, (1, 0.9)]


def _all_pairs(sets, t):
    """Reference self-join: every earlier set, every pair compared."""
    def jac(a, b):
        return len(a & b) / len(a | b) if a | b else 0.0
    return [[(j, jac(s, sets[j])) for j in range(i) if s | sets[j] and jac(s, sets[j]) >= t]
            for i, s in enumerate(sets)]


@pytest.mark.parametrize("seed, threshold", [(1, 0.5), (2, 0.6), (3, 0.75), (4, 0.8), (5, 0.34), (6, 1.0), (7, 0.2),
                                             (8, 0.9)])
def test_similar_pairs_equals_the_all_pairs_join(seed, threshold):
    rnd = random.Random(seed)
    vocab = [f"w{i}" for i in range(14)]
    base = [frozenset(rnd.sample(vocab, rnd.randint(0, 9))) for _ in range(12)]
    # near copies: one word dropped or added, so many pairs sit near the threshold
    sets = base + [frozenset(list(s)[1:]) for s in base] + [s | {rnd.choice(vocab)} for s in base]
    rnd.shuffle(sets)
    assert similar_pairs(sets, threshold) == _all_pairs(sets, threshold)


# cosine: vectors are normalised, missing ones are never matched, the first earlier survivor wins
@pytest.mark.parametrize("vectors, threshold, expected", [
    ([[2, 0], [1, 1], [3, 0]], 0.9, [None, None, (0, 1.0)]),  # [1,1] vs [2,0]: cos 0.707
    ([[2, 0], [1, 1], [3, 0]], 0.7, [None, (0, 0.7071067811865475), (0, 1.0)]),
    ([[1, 0], [1, 0]], 1.0, [None, (0, 1.0)]),  # at the threshold counts
    ([[1, 0], [1, 0], [0, 1], [0, 1]], 0.9, [None, (0, 1.0), None, (2, 1.0)]),
    ([[1, 0], None, [1, 0]], 0.9, [None, None, (0, 1.0)]),
    ([None, None], 0.5, [None, None]),
    ([], 0.5, []),
    ([[0, 0], [1, 0]], 0.0, [None, (0, 0.0)]),  # a zero vector has cosine 0 with everything
    ([[1, 0], [0, 0]], 0.0, [None, (0, 0.0)]),
])
def test_cosine_duplicates(vectors, threshold, expected):
    assert cosine_duplicates(vectors, threshold) == expected


def test_cosine_duplicates_across_blocks_of_512():
    n = 1100
    vectors = [[0.0] * n for _ in range(n)]
    for i in range(n):
        vectors[i][i] = float(i + 1)  # all orthogonal: no duplicates ...
    vectors[512] = [3.0] + [0.0] * (n - 1)  # ... except 512, the first row of the second block, copies 0
    vectors[1099] = [0.0, 5.0] + [0.0] * (n - 2)  # and the last row, in the third block, copies 1
    expected = [None] * n
    expected[512], expected[1099] = (0, 1.0), (1, 1.0)
    assert cosine_duplicates(vectors, 0.9) == expected


def test_embeddings_of_different_lengths_are_refused_with_the_lengths():
    with pytest.raises(ValueError) as err:
        cosine_duplicates([[1.0, 0.0, 0.0], None, [1.0, 0.0]], 0.5)
    assert str(err.value) == "embeddings have different lengths: [2, 3]"
