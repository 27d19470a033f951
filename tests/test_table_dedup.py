"""Exact and near duplicates as whole records: the exact_duplicate and near_duplicate Decisions (reason, named
survivor, similarity) under words, shingles and cosine, and the cosine warnings word for word."""

import pytest

from ctxcore import Candidate, Config, Decision, build
from ctxcore.stages import dedup, wordsets
from ctxcore.stages.dedup import _sweep, join_texts, near_matches


def _dups(trace):
    return {d.id: d for d in trace.decisions if d.fate in ("exact_duplicate", "near_duplicate")}


def _notes(trace):
    return [(str(w), w.kind, w.ids) for w in trace.warnings if w.kind.startswith("cosine")]


def _exact(i, of, sha):
    return Decision(i, "exact_duplicate", "exact_dedup", f"same text (SHA-256 {sha}) as higher-ranked {of}",
                    duplicate_of=of, similarity=1.0)


def test_exact_copies_name_the_highest_ranked_and_the_texts_hash():
    # sha256("same text") begins 2e68a7bba11b, sha256("Refunds take five days.") 78387a319902
    cands = [Candidate("low", "same text", 0.2), Candidate("high", "same text", 0.9),
             Candidate("r1", "Refunds take five days.", 0.5), Candidate("r2", "Refunds take five days.", 0.5),
             Candidate("r3", "Refunds take five days.", 0.6), Candidate("other", "Same text", 0.1)]
    t = build(cands, "q", Config(budget=500, near_dup=None))
    assert _dups(t) == {"low": _exact("low", "high", "2e68a7bba11b"), "r1": _exact("r1", "r3", "78387a319902"),
                        "r2": _exact("r2", "r3", "78387a319902")}


BASE = "alpha beta gamma delta epsilon"

NEAR = {
    # 5 shared of 6 words: 0.833
    "words at 0.8": ({"near_dup": 0.8}, [(BASE, None), (BASE + " zeta", "word-set Jaccard 0.833 with higher-ranked a "
                                                                        "(threshold 0.8)", "a", 0.8333)]),
    # 5 of 6 is under 0.85: kept
    "words under the threshold": ({"near_dup": 0.85}, [(BASE, None), (BASE + " zeta", None)]),
    # 5 of 5: exactly 1.0 passes a threshold of 1
    "words at a threshold of 1": ({"near_dup": 1.0}, [(BASE, None), ("Alpha, beta; gamma delta epsilon!",
                                                                    "word-set Jaccard 1.000 with higher-ranked a "
                                                                    "(threshold 1)", "a", 1.0)]),
    # b matches a (4 of 5 = 0.8); c matches b (5 of 6) but b is gone, and a (4 of 6 = 0.667) is under 0.8
    "only survivors are matched": ({"near_dup": 0.8}, [
        ("alpha beta gamma delta", None),
        ("alpha beta gamma delta epsilon", "word-set Jaccard 0.800 with higher-ranked a (threshold 0.8)", "a", 0.8),
        ("alpha beta gamma delta epsilon zeta", None)]),
    # "abcdefg" has the 5-grams abcde bcdef cdefg, "abcdefgh" those and defgh: 3 of 4
    "shingles": ({"near_dup": 0.7, "similarity": "shingles"}, [
        ("abcdefg", None),
        ("ABCDEFGH", "5-character shingle Jaccard 0.750 with higher-ranked a (threshold 0.7)", "a", 0.75)]),
    "cosine": ({"near_dup": 0.75, "similarity": "cosine"}, [
        ("first", None, (1.0, 0.0)),
        ("second", "cosine 0.800 with higher-ranked a (threshold 0.75)", "a", 0.8, (0.8, 0.6)),
        ("third", None, (0.6, 0.8))]),  # 0.6 with a (b is gone)
}


@pytest.mark.parametrize("cfg, rows", NEAR.values(), ids=NEAR.keys())
def test_near_duplicates_name_the_first_matching_survivor(cfg, rows):
    cands, expected = [], {}
    for i, row in zip("abc", rows):
        embedding = row[-1] if isinstance(row[-1], tuple) else None
        cands.append(Candidate(i, row[0], 0.9 - ord(i) / 100, embedding=embedding))
        if row[1] is not None:
            expected[i] = Decision(i, "near_duplicate", "near_dedup", row[1], duplicate_of=row[2],
                                   similarity=row[3])
    t = build(cands, "q", Config(budget=500, **cfg))
    assert _dups(t) == expected
    assert _notes(t) == []


def test_cosine_says_which_candidates_were_not_compared():
    cands = [Candidate("a", "first", 0.9, embedding=(1.0, 0.0)), Candidate("b", "second", 0.8),
             Candidate("c", "third", 0.7, embedding=(1.0, 0.0)), Candidate("d", "fourth", 0.6)]
    t = build(cands, "q", Config(budget=500, similarity="cosine", near_dup=0.9))
    assert _dups(t) == {"c": Decision("c", "near_duplicate", "near_dedup",
                                      "cosine 1.000 with higher-ranked a (threshold 0.9)", duplicate_of="a",
                                      similarity=1.0)}
    assert _notes(t) == [("cosine near-dedup: 2 candidates carry no embedding and were not compared",
                          "cosine_missing", ("b", "d"))]


def test_cosine_is_skipped_when_embeddings_differ_in_length():
    cands = [Candidate("a", "first", 0.9, embedding=(1.0, 0.0)), Candidate("b", "second", 0.8, embedding=(1.0,)),
             Candidate("c", "first", 0.7, embedding=(1.0, 0.0))]
    t = build(cands, "q", Config(budget=500, similarity="cosine", near_dup=0.9))
    assert _dups(t) == {"c": _exact("c", "a", "a7937b64b8ca")}  # sha256("first"); exact dedup still runs
    assert _notes(t) == [("cosine near-dedup skipped: embeddings have different lengths: [1, 2]", "cosine_skipped",
                          ())]


def test_near_matches_of_texts():
    # "a b c d e f" shares 5 of 6 with the first; "a b c d e" again shares 5 of 6 with the second, which is gone
    assert near_matches(["a b c d e", "a b c d e f", "x y z", "a b c d e"], "words", 0.8) == [
        None, (0, 5 / 6), None, (0, 1.0)]


def test_near_matches_of_many_texts_take_the_sweep():
    # Two ten-word families, every third text with one extra word: 600 texts sharing their prefix words make
    # 239,100 join pairs (over _DENSE_FROM, 200,000) against a dense sweep costing 11,231, so join_texts hands
    # back sets and near_matches sweeps them. Text 0 (family 0) has the
    # extra word and text 1 (family 1) has not: a text matches the first of its family, 10/11 when exactly one
    # of the two has the extra word, else 1.0.
    fam = ["alpha beta gamma delta epsilon zeta eta theta iota kappa", "one two three four five six seven eight nine ten"]
    texts = [fam[i % 2] + (" extra" if i % 3 == 0 else "") for i in range(600)]
    pairs, sets, _ = join_texts(texts, "words", 0.8)
    assert pairs is None and sets is not None

    def expected(i):
        extra, first_has_extra = i % 3 == 0, i % 2 == 0
        return None if i < 2 else (i % 2, 1.0 if extra == first_has_extra else 10 / 11)
    assert near_matches(texts, "words", 0.8) == [expected(i) for i in range(600)]


def test_the_sweep_without_bit_rows():
    # 20 texts of five words each seen nowhere else, then two copies of "a b c d e": the join's cost is the one
    # pair sharing prefix words, below what bit rows over a 105-word vocabulary would cost, so the plain sweep runs
    texts = [" ".join(f"w{5 * i + j}" for j in range(5)) for i in range(20)] + ["a b c d e", "a b c d e"]
    sets = wordsets.word_sets(texts)
    assert wordsets.dense_cost(sets, 0.8) >= wordsets.join_size(sets, 0.8)
    assert _sweep(sets, 0.8) == [None] * 21 + [(20, 1.0)]
    assert _sweep(sets, 0.8, rows=[0, 20, 21]) == [None, None, (1, 1.0)]


def test_many_texts_are_compared_by_the_measure_asked_for():
    # 500 texts (the numpy join): each of 250 lists of ten words ("aab bab cab ... jab" for list 1) and the same
    # words reversed. As word sets a reversed text is its original (1.0); as character 5-grams the two share 24 of
    # their 46 (0.52, under 0.8), and no two lists share a word
    texts = []
    for i in range(250):
        w = [first + chr(97 + i // 26) + chr(97 + i % 26) for first in "abcdefghij"]
        texts += [" ".join(w), " ".join(reversed(w))]
    assert join_texts(texts, "shingles", 0.8)[1] is not None
    assert near_matches(texts, "shingles", 0.8) == [None] * 500
    assert near_matches(texts, "words", 0.8) == [(k - 1, 1.0) if k % 2 else None for k in range(500)]


def test_a_join_past_its_limit_hands_over_to_the_sweep_when_the_sweep_pays(monkeypatch):
    # the handover, on three texts, with _SWEEP_FROM moved to where their join's cost sits: "a b c", "a b d",
    # "a c d" at 0.5 mostly match each other (the sweep pays), "a b", "c d", "e f" do not
    pays, not_pays = ["a b c", "a b d", "a c d"], ["a b", "c d", "e f"]
    sets = wordsets.word_sets(pays)
    cost = wordsets.join_size(sets, 0.5)
    monkeypatch.setattr(dedup, "_SWEEP_FROM", cost - 1)
    assert dedup.join_texts(pays, "words", 0.5, sets=sets) == (None, sets, 0.5)
    monkeypatch.setattr(dedup, "_SWEEP_FROM", cost)  # not past the limit: the join
    assert dedup.join_texts(pays, "words", 0.5, sets=sets)[0] is not None
    monkeypatch.setattr(dedup, "_SWEEP_FROM", -1)  # past it, but the sweep would not pay
    assert dedup.join_texts(not_pays, "words", 0.5, sets=wordsets.word_sets(not_pays))[0] == [[], [], []]


def test_each_sweep_is_remembered_under_its_own_texts(monkeypatch):
    # with the limits moved so that three texts are swept: "a b d" and "a c d" share 2 of 4 words with "a b c"
    # (0.5); in the second set only "x y w" repeats "x y z". The second sweep must not be answered by the first.
    monkeypatch.setattr(dedup, "_VECTORISED_FROM", 1)
    monkeypatch.setattr(dedup, "_SWEEP_FROM", -1)
    fates = {}
    for texts in (["a b c", "a b d", "a c d"], ["x y z", "x y w", "p q r"]):
        # and a candidate the caller may not see, gone before dedup: only the others' rows are swept
        cands = [Candidate("hr", "a b c x y z", 0.95, permissions=("hr",))] + [
            Candidate(f"c{i}", s, 0.9 - i / 10) for i, s in enumerate(texts)]
        t = build(cands, "q", Config(budget=500, near_dup=0.5, caller="guest"))
        fates[texts[0]] = [(d.fate, d.duplicate_of) for d in t.decisions]
    assert fates == {"a b c": [("not_permitted", None), ("kept", None), ("near_duplicate", "c0"),
                               ("near_duplicate", "c0")],
                     "x y z": [("not_permitted", None), ("kept", None), ("near_duplicate", "c0"), ("kept", None)]}


def test_pairs_among_some_rows_only_keep_pairs_inside_them():
    # rows 1 and 2 of three: 1's match with 0 is outside and goes; 2's match with 1 becomes a match with place 0
    assert dedup._among([[], [(0, 0.9)], [(1, 0.8)]], [1, 2]) == [[], [(0, 0.8)]]
    assert dedup._among([[], [(0, 0.9)], [(0, 0.8), (1, 0.85)]], [0, 2]) == [[], [(0, 0.8)]]


def _lists(n, tag):
    """n lists of ten words, no word shared between two lists: "{tag}aab {tag}bab ... {tag}jab" for list 1 (the
    tag keeps each test's texts, and the joins remembered for them, its own)."""
    return [" ".join(f"{tag}{first}{chr(97 + i // 26)}{chr(97 + i % 26)}" for first in "abcdefghij") for i in range(n)]


def _with_reversals(tag):
    """250 of :func:`_lists`, each followed by its words in reverse order."""
    return [x for t in _lists(250, tag) for x in (t, " ".join(reversed(t.split())))]


def test_shingles_under_the_bit_filter_threshold_are_compared_as_shingles():
    # the 500 texts of the test above at 0.5, under the bit filter (0.8): a reversed list shares 24 of its 46
    # 5-grams with its original (0.522, a match), where as word sets it would be the original itself (1.0)
    assert near_matches(_with_reversals(""), "shingles", 0.5) == [(k - 1, 24 / 46) if k % 2 else None for k in range(500)]


def _reversed_pairs(tag):
    return [Candidate(f"c{k}", t, 1 - k / 1000) for k, t in enumerate(_with_reversals(tag))]


def test_a_rebuild_under_the_bit_filter_after_one_above_it_compares_the_shingles_again():
    # 500 candidates, a list and its reversal each: at 0.8 (shingles remembered as bit rows) none is a copy; the
    # rebuild at 0.5 cannot use bit rows and makes shingle sets again: every reversal matches its list at 24/46
    cands = _reversed_pairs("")
    first = build(cands, "q", Config(budget=100_000, near_dup=0.8, similarity="shingles"))
    assert [d.fate for d in first.decisions].count("near_duplicate") == 0
    again = build(cands, "q", Config(budget=100_000, near_dup=0.5, similarity="shingles"))
    assert {d.id: (d.duplicate_of, d.similarity) for d in again.decisions if d.fate == "near_duplicate"} == {
        f"c{k}": (f"c{k - 1}", 0.5217) for k in range(1, 500, 2)}


def test_a_rebuild_under_half_finds_pairs_between_its_threshold_and_half():
    # 500 candidates in pairs sharing three of seven words (0.429): a rebuild's join reaches down to 0.5 at most,
    # never up past the threshold asked for, so at 0.4 every second candidate is a copy of the one before
    words = [t.split() for t in _lists(250, "h")]
    cands = [Candidate(f"c{k}", " ".join(w[:3] + (w[5:7] if k % 2 else w[3:5])), 1 - k / 1000)
             for k, w in enumerate(x for x in words for _ in (0, 1))]
    t = build(cands, "q", Config(budget=100_000, near_dup=0.4))
    assert {d.id: (d.duplicate_of, d.similarity) for d in t.decisions if d.fate == "near_duplicate"} == {
        f"c{k}": (f"c{k - 1}", 0.4286) for k in range(1, 500, 2)}


def test_shingle_bit_rows_sweep_only_the_candidates_left_before_dedup():
    # 500 candidates, each list then the list and " zz" (45 of 48 5-grams, 0.9375); every fifth list is for a role
    # the caller lacks and goes before dedup, so its copy has nothing left to repeat and is no near duplicate
    cands = []
    for i, t in enumerate(_lists(250, "s")):
        cands += [Candidate(f"o{i}", t, 0.9, permissions=("hr",) if i % 5 == 0 else None),
                  Candidate(f"z{i}", t + " zz", 0.5)]
    t = build(cands, "q", Config(budget=100_000, near_dup=0.8, similarity="shingles", caller="guest"))
    assert {d.id: (d.duplicate_of, d.similarity) for d in t.decisions if d.fate == "near_duplicate"} == {
        f"z{i}": (f"o{i}", 0.9375) for i in range(250) if i % 5}
