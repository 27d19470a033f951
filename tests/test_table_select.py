"""Selection under the docs budget, as whole records: every kept and over_budget Decision, the survivors and
the MMR similarity note, for the fast walk (``select.run``, what a build uses) and for the plain rule it is held
to (``select.definition``), on states made by the stages before select.

Token counts are cl100k's, written by hand: ``text_of_tokens(n)`` is n tokens; the measured label line of
candidate ``a`` with score 0.9 is ``[S1] source=a score=0.9`` plus its line break, 11 tokens
(``[S`` ``1`` ``]`` `` source`` ``=a`` `` score`` ``=`` ``0`` ``.`` ``9`` ``\\n``), and one more for the blank line: 12.
"""

import pytest
from conftest import text_of_tokens

from ctxcore import Candidate, Config, Decision, build

from ctxcore.stages import select
from ctxcore.pipeline import state_before
from ctxcore.stages.select import similarity_for

A, BIG, C = text_of_tokens(30), text_of_tokens(50, "cat"), text_of_tokens(20, "dog")
THREE = [Candidate("a", A, 0.9), Candidate("big", BIG, 0.8), Candidate("c", C, 0.7)]
REFUNDS = "Refunds take five days. Shipping is free over fifty dollars."  # 6 + 7 = 13 tokens
QUERY = "how long do refunds take"


def _before(cands, query="q", **cfg):
    return state_before(select.run, cands, query, Config(near_dup=None, **cfg))


def _kept(i, tokens, cost, text, compressed=False):
    """A kept record of the plain rule."""
    return Decision(i, "kept", "select", "fits", tokens=tokens, cost=cost, compressed=compressed, text=text)


def _over(i, reason, fate="over_budget"):
    return Decision(i, fate, "select", reason)


def _notes(state):
    return [(str(w), w.kind, w.ids) for w in state.warnings]


LIMIT = "the passage limit was already reached"

DEFINITION_CASES = {
    # 30 fits 55 (25 left); 50 does not; 20 does
    "the walk goes on after a chunk that does not fit": (
        THREE, {"budget": 55, "label_overhead": 0},
        [_kept("a", 30, 30, A), _kept("c", 20, 20, C)],
        {"big": _over("big", "needs 50 tokens (50 text + 0 label) but only 25 of the 55-token docs budget "
                             "were left")}),
    # 30 + 5 = 35 of 55, 20 left: 50 + 5 and 20 + 5 do not fit
    "every chunk pays its label line": (
        THREE, {"budget": 55, "label_overhead": 5},
        [_kept("a", 30, 35, A)],
        {"big": _over("big", "needs 55 tokens (50 text + 5 label) but only 20 of the 55-token docs budget "
                             "were left"),
         "c": _over("c", "needs 25 tokens (20 text + 5 label) but only 20 of the 55-token docs budget were left")}),
    "after max_passages every other passage is over the limit, not over budget": (
        THREE, {"budget": 500, "label_overhead": 0, "max_passages": 1},
        [_kept("a", 30, 30, A)], {"big": _over("big", LIMIT, "over_limit"), "c": _over("c", LIMIT, "over_limit")}),
    "a chunk over the per-chunk cap is dropped when compression is off": (
        THREE, {"budget": 500, "label_overhead": 0, "max_chunk_tokens": 25},
        [_kept("c", 20, 20, C)],
        {"a": _over("a", "30 tokens is over the per-chunk cap of 25 and compression is off"),
         "big": _over("big", "50 tokens is over the per-chunk cap of 25 and compression is off")}),
    # 13 + 2 is over 10: cut to the one sentence sharing words with the query, 6 tokens, cost 8
    "a chunk that does not fit is cut to its query-relevant sentence": (
        [Candidate("g", REFUNDS, 0.9)], {"budget": 10, "label_overhead": 2, "compress": True},
        [_kept("g", 6, 8, "Refunds take five days.", compressed=True)], {}),
    "a chunk over the cap is cut to the cap": (
        [Candidate("g", REFUNDS, 0.9)], {"budget": 100, "label_overhead": 2, "compress": True,
                                         "max_chunk_tokens": 10},
        [_kept("g", 6, 8, "Refunds take five days.", compressed=True)], {}),
    "a chunk whose relevant sentence is over the cap is dropped": (
        [Candidate("g", REFUNDS, 0.9)], {"budget": 100, "label_overhead": 2, "compress": True,
                                         "max_chunk_tokens": 5},
        [], {"g": _over("g", "13 tokens is over the per-chunk cap of 5 and no query-relevant sentence fits in it")}),
    # densities 0.9/30 = 0.03, 0.7/20 = 0.035, 0.2/10 = 0.02: c (10 left), a does not fit, d fits exactly
    "density walks by score per token": (
        [Candidate("a", A, 0.9), Candidate("c", C, 0.7), Candidate("d", text_of_tokens(10, "bird"), 0.2)],
        {"budget": 30, "label_overhead": 0, "select": "density"},
        [_kept("c", 20, 20, C), _kept("d", 10, 10, text_of_tokens(10, "bird"))],
        {"a": _over("a", "needs 30 tokens (30 text + 0 label) but only 10 of the 30-token docs budget were left")}),
    # the label line counts in the density: c 0.5/(20+8) = 0.018 before d 0.3/(10+8) = 0.017 (by text alone d,
    # 0.03, would go first); c takes all 28
    # 13 + 2 is over 12 though 13 - 2 is not: still cut, to the 6-token sentence, cost 8
    "a chunk over what is left by its label line alone is cut too": (
        [Candidate("g", REFUNDS, 0.9)], {"budget": 12, "label_overhead": 2, "compress": True},
        [_kept("g", 6, 8, "Refunds take five days.", compressed=True)], {}),
    # 13 + 2 is exactly 15: it fits whole, nothing is cut
    "a chunk that fits exactly is not cut": (
        [Candidate("g", REFUNDS, 0.9)], {"budget": 15, "label_overhead": 2, "compress": True},
        [_kept("g", 13, 15, REFUNDS)], {}),
    "a chunk over the cap with compression off is dropped, though a sentence of it would fit": (
        [Candidate("g", REFUNDS, 0.9)], {"budget": 100, "label_overhead": 2, "max_chunk_tokens": 10},
        [], {"g": _over("g", "13 tokens is over the per-chunk cap of 10 and compression is off")}),
    "a chunk of exactly the cap is not over it": (
        [Candidate("b", text_of_tokens(25, "bird"), 0.9)], {"budget": 100, "label_overhead": 0, "max_chunk_tokens": 25},
        [_kept("b", 25, 25, text_of_tokens(25, "bird"))], {}),
    # both sentences are about refunds (6 + 5 tokens): what is left after the label line, 8, holds only the first
    "a cut chunk keeps what fits beside its label line": (
        [Candidate("r", "Refunds take five days. Refunds need a receipt.", 0.9)],
        {"budget": 10, "label_overhead": 2, "compress": True},
        [_kept("r", 6, 8, "Refunds take five days.", compressed=True)], {}),
    # a score of 0 is worth nothing per token: p (0.5/10) goes first, z (0/10) finds nothing left
    "density puts a zero score last": (
        [Candidate("z", text_of_tokens(10, "bird"), 0.0), Candidate("p", text_of_tokens(10, "fish"), 0.5)],
        {"budget": 10, "label_overhead": 0, "select": "density"},
        [_kept("p", 10, 10, text_of_tokens(10, "fish"))],
        {"z": _over("z", "needs 10 tokens (10 text + 0 label) but only 0 of the 10-token docs budget were left")}),
    # a one-token chunk: 0.1/1 = 0.1 before 0.8/10 = 0.08, and then 9 are left for a 10-token one
    "density of a one-token chunk": (
        [Candidate("b", text_of_tokens(10, "bird"), 0.8), Candidate("a", text_of_tokens(1, "cat"), 0.1)],
        {"budget": 10, "label_overhead": 0, "select": "density"},
        [_kept("a", 1, 1, text_of_tokens(1, "cat"))],
        {"b": _over("b", "needs 10 tokens (10 text + 0 label) but only 9 of the 10-token docs budget were left")}),
    "density counts the label line": (
        [Candidate("c", C, 0.5), Candidate("d", text_of_tokens(10, "bird"), 0.3)],
        {"budget": 28, "label_overhead": 8, "select": "density"},
        [_kept("c", 20, 28, C)],
        {"d": _over("d", "needs 18 tokens (10 text + 8 label) but only 0 of the 28-token docs budget were left")}),
}


@pytest.mark.parametrize("cands, cfg, kept, removed", DEFINITION_CASES.values(), ids=DEFINITION_CASES.keys())
def test_the_plain_rule_decides_whole_records(cands, cfg, kept, removed):
    before = _before(cands, QUERY, **cfg)
    after = select.definition(before)
    assert list(after.kept) == kept
    assert dict(after.removed) == removed
    assert [c.id for c in after.alive] == [d.id for d in kept]
    assert _notes(after) == _notes(before) == []  # only MMR says how it compared passages


def _run_kept(i, reason, tokens, cost, compressed=False, text=None, tokens_before=None):
    return Decision(i, "kept", "select", reason, tokens=tokens, tokens_before=tokens_before, cost=cost,
                    compressed=compressed, text=text)


RUN_CASES = {
    "the walk goes on after a chunk that does not fit": (
        THREE, {"budget": 55, "label_overhead": 0},
        [_run_kept("a", "rank 1, score 0.9; selected by score for 30 tokens (30 of 55 used)", 30, 30),
         _run_kept("c", "rank 3, score 0.7; selected by score for 20 tokens (50 of 55 used)", 20, 20)],
        {"big": _over("big", "needs 50 tokens (50 text + 0 label) but only 25 of the 55-token docs budget "
                             "were left")}),
    # a costs 30 + 12 = 42, 13 left; no label line is under 5 tokens, so 50 + 5 and 20 + 5 cannot fit
    "chunks whose text alone is over what is left are decided together": (
        THREE, {"budget": 55},
        [_run_kept("a", "rank 1, score 0.9; selected by score for 42 tokens (42 of 55 used)", 30, 42)],
        {"big": _over("big", "needs its 50 text tokens plus a label line but only 13 of the 55-token docs budget "
                             "were left"),
         "c": _over("c", "needs its 20 text tokens plus a label line but only 13 of the 55-token docs budget "
                         "were left")}),
    "after max_passages every other passage is over the limit, not over budget": (
        THREE, {"budget": 500, "label_overhead": 0, "max_passages": 1},
        [_run_kept("a", "rank 1, score 0.9; selected by score for 30 tokens (30 of 500 used)", 30, 30)],
        {i: _over(i, "the passage limit (max_passages 1) was already reached", "over_limit") for i in ("big", "c")}),
    "a compressed chunk records its text and its size before": (
        [Candidate("g", REFUNDS, 0.9)], {"budget": 10, "label_overhead": 2, "compress": True},
        [_run_kept("g", "rank 1, score 0.9; selected by score for 8 tokens (8 of 10 used); compressed from 13 "
                        "tokens", 6, 8, True, "Refunds take five days.", 13)], {}),
    "density walks by score per token": (
        [Candidate("a", A, 0.9), Candidate("c", C, 0.7), Candidate("d", text_of_tokens(10, "bird"), 0.2)],
        {"budget": 30, "label_overhead": 0, "select": "density"},
        [_run_kept("c", "rank 2, score 0.7; selected by score per token for 20 tokens (20 of 30 used)", 20, 20),
         _run_kept("d", "rank 3, score 0.2; selected by score per token for 10 tokens (30 of 30 used)", 10, 10)],
        {"a": _over("a", "needs 30 tokens (30 text + 0 label) but only 10 of the 30-token docs budget were left")}),
}


@pytest.mark.parametrize("cands, cfg, kept, removed", RUN_CASES.values(), ids=RUN_CASES.keys())
def test_the_fast_walk_decides_whole_records(cands, cfg, kept, removed):
    before = _before(cands, QUERY, **cfg)
    after = select.run(before)
    assert list(after.kept) == kept
    assert dict(after.removed) == removed
    assert [c.id for c in after.alive] == [d.id for d in kept]
    assert _notes(after) == []


# -- MMR: lam * score - (1 - lam) * the highest similarity with what was kept

SAME, OTHER = (1.0, 0.0), (0.0, 1.0)
TEN = {w: text_of_tokens(10, w) for w in ("a", "b", "c")}
COSINE = "MMR compared passages by the cosine of their embeddings (every candidate carries one)"


def _jaccard_note(why):
    return f"MMR compared passages by word-set Jaccard of their texts ({why})"


def test_mmr_takes_the_diverse_passage_and_says_it_compared_embeddings():
    # lam 0.5: first a (0.45 against 0.425 and 0.25); then a2 is 0.425 - 0.5 * 1 = -0.075, ship 0.25 - 0 = 0.25
    cands = [Candidate("a", TEN["a"], 0.9, embedding=SAME), Candidate("a2", TEN["b"], 0.85, embedding=SAME),
             Candidate("ship", TEN["c"], 0.5, embedding=OTHER)]
    before = _before(cands, budget=20, label_overhead=0, select="mmr", mmr_lambda=0.5)
    a2 = {"a2": _over("a2", "needs 10 tokens (10 text + 0 label) but only 0 of the 20-token docs budget were left")}
    plain, fast = select.definition(before), select.run(before)
    assert list(plain.kept) == [_kept("a", 10, 10, TEN["a"]), _kept("ship", 10, 10, TEN["c"])]
    assert list(fast.kept) == [
        _run_kept("a", "rank 1, score 0.9; selected by MMR (cosine of embeddings) for 10 tokens (10 of 20 used)",
                  10, 10),
        _run_kept("ship", "rank 3, score 0.5; selected by MMR (cosine of embeddings) for 10 tokens (20 of 20 used)",
                  10, 10)]
    assert dict(plain.removed) == dict(fast.removed) == a2
    assert [c.id for c in plain.alive] == [c.id for c in fast.alive] == ["a", "ship"]
    assert _notes(plain) == _notes(fast) == [(COSINE, "similarity_used", ())]


MMR_NOTES = {
    "no embeddings": ([None, None], _jaccard_note("2 of 2 candidates carry no embedding"), "word-set Jaccard"),
    "one embedding": ([SAME, None], _jaccard_note("1 of 2 candidates carry no embedding"), "word-set Jaccard"),
    "different lengths": ([SAME, (1.0,)], _jaccard_note("the embeddings have different lengths"),
                          "word-set Jaccard"),
    "all embeddings": ([SAME, OTHER], COSINE, "cosine of embeddings"),
}


@pytest.mark.parametrize("embeddings, note, how", MMR_NOTES.values(), ids=MMR_NOTES.keys())
def test_mmr_says_how_it_compared_passages(embeddings, note, how):
    cands = [Candidate(i, TEN[i], s, embedding=e) for i, s, e in zip("ab", (0.9, 0.8), embeddings)]
    before = _before(cands, budget=100, label_overhead=0, select="mmr")
    for after in (select.definition(before), select.run(before)):
        assert _notes(after) == [(note, "similarity_used", ())]
    assert [d.reason for d in select.run(before).kept] == [
        f"rank 1, score 0.9; selected by MMR ({how}) for 10 tokens (10 of 100 used)",
        f"rank 2, score 0.8; selected by MMR ({how}) for 10 tokens (20 of 100 used)"]


def test_mmr_with_nothing_to_compare_says_so():
    before = _before([], budget=100, select="mmr")
    for after in (select.definition(before), select.run(before)):
        assert after.kept == () and _notes(after) == [(_jaccard_note("there was nothing to compare"),
                                                       "similarity_used", ())]


def test_mmr_puts_an_unscored_passage_before_a_negatively_scored_one():
    # unscored counts as score 0: value 0, against 0.5 * -1e-17 = -5e-18 for the cross-encoder's negative score,
    # however small; only one fits
    cands = [Candidate("neg", TEN["a"], -1e-17), Candidate("none", TEN["b"])]
    before = _before(cands, budget=10, label_overhead=0, select="mmr", mmr_lambda=0.5)
    over = "needs 10 tokens (10 text + 0 label) but only 0 of the 10-token docs budget were left"
    plain, fast = select.definition(before), select.run(before)
    assert list(plain.kept) == [_kept("none", 10, 10, TEN["b"])]
    assert list(fast.kept) == [_run_kept(
        "none", "rank 2, score unscored; selected by MMR (word-set Jaccard) for 10 tokens (10 of 10 used)", 10, 10)]
    assert dict(plain.removed) == dict(fast.removed) == {"neg": _over("neg", over)}


def test_mmr_stops_walking_once_no_text_left_can_fit():
    # a costs 30 + 12 = 42 of 55; then the shortest text not walked, c's 20, plus a label line of at least 5 is
    # over the 13 left: big and c are decided together
    after = select.run(_before(THREE, budget=55, select="mmr"))
    assert list(after.kept) == [_run_kept(
        "a", "rank 1, score 0.9; selected by MMR (word-set Jaccard) for 42 tokens (42 of 55 used)", 30, 42)]
    assert dict(after.removed) == {
        i: _over(i, f"needs its {n} text tokens plus a label line but only 13 of the 55-token docs budget were left")
        for i, n in (("big", 50), ("c", 20))}


def test_a_merged_passage_records_its_joined_text():
    # the chunks joined by a line break: 13 tokens (the "." and the line break are one token, ".\n")
    cands = [Candidate("d#0", "Refunds take five days.", 0.9, doc_id="d", chunk_index=0),
             Candidate("d#1", "Shipping is free over fifty dollars.", 0.5, doc_id="d", chunk_index=1)]
    after = select.run(_before(cands, budget=15, label_overhead=0, merge_adjacent=True))
    assert list(after.kept) == [_run_kept("d#0", "rank 1, score 0.9; selected by score for 13 tokens (13 of 15 used)",
                                          13, 13, text="Refunds take five days.\nShipping is free over fifty dollars.")]
    # without merging, the second chunk's own text is not recorded
    after = select.run(_before(cands, budget=15, label_overhead=0))
    assert list(after.kept) == [_run_kept("d#0", "rank 1, score 0.9; selected by score for 6 tokens (6 of 15 used)",
                                          6, 6),
                                _run_kept("d#1", "rank 2, score 0.5; selected by score for 7 tokens (13 of 15 used)",
                                          7, 7)]


def test_merged_passages_too_long_for_what_is_left_get_the_same_reasons():
    # a costs 42 of 55 (its label line measured, 12); d#0 + d#1 is 13 text tokens, over 13 - 5
    cands = [Candidate("a", A, 0.9), Candidate("d#0", "Refunds take five days.", 0.5, doc_id="d", chunk_index=0),
             Candidate("d#1", "Shipping is free over fifty dollars.", 0.4, doc_id="d", chunk_index=1)]
    after = select.run(_before(cands, budget=55, merge_adjacent=True))
    assert [d.id for d in after.kept] == ["a"]
    assert after.removed["d#0"] == _over("d#0", "needs its 13 text tokens plus a label line but only 13 of the "
                                                "55-token docs budget were left")


def test_a_rebuild_of_the_same_candidates_decides_the_same_records():
    from ctxcore import build

    cands = tuple(THREE)  # one tuple: the rebuilds are of the same candidates
    tail = " text tokens plus a label line but only 13 of the 55-token docs budget were left"
    big, c = _over("big", "needs its 50" + tail), _over("c", "needs its 20" + tail)
    # min_score 0.75 drops c (0.7) first; then c is back, and what is left after a is still 13
    for min_score, expected in ((0.75, [big]), (None, [big, c]), (0.75, [big]), (None, [big, c])):
        t = build(cands, "q", Config(budget=55, min_score=min_score))
        assert [d for d in t.decisions if d.fate == "over_budget"] == expected


@pytest.mark.parametrize("u,v,expected", [
    ((3.0, 4.0), (4.0, 3.0), 24 / 25),    # dot 24 over norms 5 x 5
    ((3.0, 4.0), (6.0, 8.0), 1.0),        # the same direction at twice the length: 48 / (5 x 10)
    ((1.0, 2.0), (2.0, 0.0), 0.4472),     # 2 / (sqrt 5 x 2)
    ((0.0, 0.0), (1.0, 0.0), 0.0),        # a zero vector is like nothing
    ((1.0, 0.0), (-1.0, 0.0), 0.0),       # a negative cosine counts as none
])
def test_mmr_cosine_of_embeddings(u, v, expected):
    pair = [Candidate("a", "x", embedding=u), Candidate("b", "y", embedding=v)]
    name, similar = similarity_for(pair)
    assert (name, round(similar(*pair), 4), round(similar(pair[1], pair[0]), 4)) == ("cosine", expected, expected)


def test_remembered_too_long_records_are_per_budget():
    # the same candidate tuple rebuilt at 55, 60 and 55 tokens: a costs 30 + 12 = 42 each time, so 13, then 18,
    # then 13 are left, and each build's records say its own numbers
    cands = tuple(THREE)
    for budget, left in ((55, 13), (60, 18), (55, 13)):
        t = build(cands, "q", Config(budget=budget, near_dup=None))
        assert [(d.id, d.reason) for d in t.decisions if d.fate == "over_budget"] == [
            (i, f"needs its {n} text tokens plus a label line but only {left} of the {budget}-token docs budget "
                "were left") for i, n in (("big", 50), ("c", 20))]


def test_a_remembered_entry_for_other_candidates_is_never_used():
    # records are remembered per id() of the candidate tuple; a freed tuple's id can come back for another one,
    # so the entry holds its tuple and is used only for that very tuple. Seed what a freed tuple would have left.
    before = _before(THREE, budget=55)
    wrong = {i: Decision(i, "over_budget", "select", "a record made for other candidates") for i in ("big", "c")}
    select._TOO_LONG.keep((id(before.candidates), 13, 55), (tuple(THREE), wrong))
    assert dict(select.run(before).removed) == {
        i: Decision(i, "over_budget", "select", f"needs its {n} text tokens plus a label line but only 13 of the "
                                                "55-token docs budget were left") for i, n in (("big", 50), ("c", 20))}


def test_the_shortest_label_line_fills_what_is_left_exactly():
    # an unscored chunk with id "x" has the shortest label line there is ("[S1] source=x", its line break and the
    # blank line: 7 tokens): 20 text tokens + 7 = 27 fill a 27-token budget, and the floor under every label line
    # must not call it too long
    t = build([Candidate("x", text_of_tokens(20, "bird"), None)], "q", Config(budget=27))
    assert [(d.fate, d.tokens, d.cost) for d in t.decisions] == [("kept", 20, 27)]


def test_with_compression_on_a_chunk_too_long_whole_is_cut_rather_than_called_too_long():
    # its text alone (6 + 30 tokens) is over the 18-token budget, but it is not set aside as too long: cut to its
    # 6-token sentence it costs 6 + 12 for its label line = 18
    text = "Refunds take five days. " + text_of_tokens(30, "bird")
    t = build([Candidate("g", text, 0.9)], QUERY, Config(budget=18, compress=True))
    assert [(d.fate, d.tokens, d.cost, d.compressed) for d in t.decisions] == [("kept", 6, 18, True)]


@pytest.mark.parametrize("n, said", [
    # 10 text tokens + the 5-token floor under every label line is over the 13 left: set aside unmeasured
    (10, "needs its 10 text tokens plus a label line but only 13 of the 55-token docs budget were left"),
    # 8 + 5 is exactly 13: measured, and its 12-token label line is what it lacks room for
    (8, "needs 20 tokens (8 text + 12 label) but only 13 of the 55-token docs budget were left"),
])
def test_a_chunk_is_set_aside_unmeasured_only_when_its_text_and_the_floor_are_over_what_is_left(n, said):
    # a costs 30 + 12 = 42 of 55; a shorter chunk (s, 2 tokens) comes after m, so the walk goes on past m
    cands = [Candidate("a", A, 0.9), Candidate("m", text_of_tokens(n, "fish"), 0.8),
             Candidate("s", text_of_tokens(2, "cat"), 0.7)]
    t = build(cands, "q", Config(budget=55, near_dup=None))
    assert [(d.id, d.fate, d.reason) for d in t.decisions][1:] == [
        ("m", "over_budget", said),
        ("s", "over_budget", "needs 14 tokens (2 text + 12 label) but only 13 of the 55-token docs budget were left")]


def test_chunks_set_aside_are_decided_with_what_was_left_before_the_next_one_kept():
    # a takes 42 of 56: 14 left; m (10 + the floor of 5) is set aside; s (2 + 12) then fills the 14. m's record
    # says what was left when it was set aside, not the 0 after s
    cands = [Candidate("a", A, 0.9), Candidate("m", text_of_tokens(10, "fish"), 0.8),
             Candidate("s", text_of_tokens(2, "cat"), 0.7)]
    t = build(cands, "q", Config(budget=56, near_dup=None))
    assert [(d.id, d.fate, d.reason) for d in t.decisions] == [
        ("a", "kept", "rank 1, score 0.9; selected by score for 42 tokens (42 of 56 used)"),
        ("m", "over_budget", "needs its 10 text tokens plus a label line but only 14 of the 56-token docs budget were "
                             "left"),
        ("s", "kept", "rank 3, score 0.7; selected by score for 14 tokens (56 of 56 used)")]


def test_a_passage_too_long_under_density_names_its_measured_label():
    # density measures every label line first, so a 300-token text over the 147 tokens left is told its whole
    # cost (13 for its label); by score the label is not measured for a text that cannot fit
    cands = [Candidate("short", text_of_tokens(40, "a"), 0.9), Candidate("long", text_of_tokens(300, "b"), 0.8)]
    reasons = {sel: build(cands, "q", Config(budget=200, select=sel)).decision("long").reason
               for sel in ("density", "score")}
    assert reasons == {
        "density": "needs 313 tokens (300 text + 13 label) but only 147 of the 200-token docs budget were left",
        "score": "needs its 300 text tokens plus a label line but only 147 of the 200-token docs budget were left"}
