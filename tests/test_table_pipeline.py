"""The runner as whole records: which copy of a repeated id keeps it (and the exact_duplicate records and
repeated_ids warning for the others), the warnings the start and recency_scope write, rank order, the cost of
the kept evidence, and ``state_before`` building the state a stage receives with the given settings."""

import dataclasses

import pytest

from conftest import warnings_of

from ctxcore import Candidate, Config, Decision, Inputs, build, evidence_cost, loads, rank_order

from ctxcore.stages import select
from ctxcore.pipeline import state_before


def _copy(new_id, given, score, best, best_score):
    return Decision(new_id, "exact_duplicate", "ids",
                    f"id 'a' was given {given} times; this copy (score {score}) has the same text as {best} "
                    f"(score {best_score}), which is kept in its place", duplicate_of=best)


SAME_TEXT = "Refunds take five days."

REPEATED = {
    # the id stays with the better-scored copy; a scored copy is better than an unscored one
    "unscored first, scored second": ([None, 0.5], [_copy("a#2", 2, "unscored", "a", "0.5"), "a"]),
    "scored first, unscored second": ([0.5, None], ["a", _copy("a#2", 2, "unscored", "a", "0.5")]),
    "a score of 0 is still a score, under 0.5": ([0.0, 0.5], [_copy("a#2", 2, "0", "a", "0.5"), "a"]),
    "a score of 0 beats no score": ([None, 0.0], [_copy("a#2", 2, "unscored", "a", "0"), "a"]),
    "ties go to the first": ([0.5, 0.5], ["a", _copy("a#2", 2, "0.5", "a", "0.5")]),
    "three copies": ([0.2, 0.9, None], [_copy("a#2", 3, "0.2", "a", "0.9"), "a", _copy("a#3", 3, "unscored", "a",
                                                                                       "0.9")]),
}


@pytest.mark.parametrize("scores, expected", REPEATED.values(), ids=REPEATED.keys())
def test_a_repeated_id_stays_with_the_best_scored_copy(scores, expected):
    t = build([Candidate("a", SAME_TEXT, s) for s in scores], "q", Config(budget=500))
    assert [c.id for c in t.candidates] == [e if isinstance(e, str) else e.id for e in expected]
    for d, e in zip(t.decisions, expected):  # decision k is input candidate k
        if isinstance(e, str):
            assert (d.id, d.fate) == (e, "kept")
        else:
            assert d == e
    copies = len(scores) - 1
    dropped = f"{copies} same-text {'copy was' if copies == 1 else 'copies were'} dropped as exact_duplicate"
    assert warnings_of(t, "repeated_ids") == [(f"id 'a' appears {len(scores)} times in the input: {dropped}",
                                          ("a",) + tuple(f"a#{n}" for n in range(2, len(scores) + 1)))]


def test_a_repeated_id_with_other_text_is_renamed_and_kept():
    cands = [Candidate("a", "x", 0.2), Candidate("a", "x", 0.9), Candidate("a", "y", 0.5), Candidate("a#3", "z")]
    t = build(cands, "q", Config(budget=500))
    # a#3 is taken by the input, so the other-text copy becomes a#4
    assert [c.id for c in t.candidates] == ["a#2", "a", "a#4", "a#3"]
    assert t.decisions[0] == _copy("a#2", 3, "0.2", "a", "0.9")
    assert warnings_of(t, "repeated_ids") == [(
        "id 'a' appears 3 times in the input: 1 same-text copy was dropped as exact_duplicate; a copy with other "
        "text renamed a#4", ("a", "a#2", "a#4"))]


START_NOTES = {
    "some unscored": ([0.9, None, 0.5, None], [
        ("2 of 4 candidates have no score; they rank after the scored ones, in input order", "unscored",
         ("c1", "c3"))]),
    "none scored": ([None, None], [("no candidate has a score: the input order is the rank", "unscored", ())]),
    "all scored": ([0.9, 0.1], []),
}


@pytest.mark.parametrize("scores, notes", START_NOTES.values(), ids=START_NOTES.keys())
def test_the_start_says_what_has_no_score(scores, notes):
    t = build([Candidate(f"c{i}", f"Text number {i}.", s) for i, s in enumerate(scores)], "q", Config(budget=500))
    assert [(str(w), w.kind, w.ids) for w in t.warnings if w.kind == "unscored"] == notes


def test_the_start_says_which_ids_were_generated():
    cands = [Candidate("chunk-0", "One.", 0.9, generated_id=True), Candidate("own", "Two.", 0.8),
             Candidate("chunk-2", "Three.", 0.7, generated_id=True)]
    t = build(cands, "q", Config(budget=500))
    assert warnings_of(t, "generated_ids") == [("2 candidates had no id; ids were generated from their position",
                                           ("chunk-0", "chunk-2"))]


RECENCY = {
    "dated without doc_id": ([("a", None), ("b", None), ("c", "doc")], [(
        "2 of 3 dated candidates have no doc_id, so their dates were not compared with any other: prefer_newest "
        "compares versions only within one doc_id", ("a", "b"))]),
    "every dated one has a doc_id": ([("a", "doc"), ("b", "doc")], []),
    "one dated candidate is compared with nothing anyway": ([("a", None)], []),
}


@pytest.mark.parametrize("dated, notes", RECENCY.values(), ids=RECENCY.keys())
def test_recency_scope_warns_about_dates_without_a_document(dated, notes):
    cands = [Candidate(i, f"Text {i}.", 0.5, doc_id=doc, date=f"2025-0{n + 1}-01") for n, (i, doc) in
             enumerate(dated)] + [Candidate("undated", "Other text.", 0.4)]
    t = build(cands, "q", Config(budget=500, near_dup=None))
    assert warnings_of(t, "no_doc_id") == notes
    assert warnings_of(build(cands, "q", Config(budget=500, near_dup=None, prefer_newest=False)), "no_doc_id") == []


def test_rank_order_is_score_descending_then_input_order_with_unscored_last():
    cands = [Candidate("u1", "x"), Candidate("low", "x", 0.1), Candidate("hi", "x", 0.9), Candidate("u2", "x"),
             Candidate("zero", "x", 0.0), Candidate("hi2", "x", 0.9), Candidate("neg", "x", -0.5)]
    assert [c.id for c in rank_order(cands)] == ["hi", "hi2", "low", "zero", "neg", "u1", "u2"]


def test_evidence_cost_adds_text_and_label_tokens_of_the_kept():
    # 2 + 4 text tokens ("one two" is one, two; "One two three." is One, two, three, .) and 5 label tokens each
    cands = [Candidate("a", "one two", 0.9), Candidate("b", "One two three.", 0.8)]
    t = build(cands, "q", Config(budget=500, label_overhead=5))
    assert [(d.tokens, d.cost) for d in t.kept()] == [(2, 7), (4, 9)] and evidence_cost(t) == 16


def test_state_before_builds_with_the_given_settings():
    cands = [Candidate("a", "one two", 0.9), Candidate("b", "three four", None)]
    given = Config(budget=77, min_score=0.5, near_dup=None)
    state = state_before(select.run, cands, "q", given)
    assert state.config == given and state.budget.docs == 77
    assert [c.id for c in state.alive] == ["a", "b"]  # b is unscored: it passes min_score
    assert state_before(select.run, cands, "q").config == Config()


def _whole(t):
    return t, [(str(w), w.kind, w.ids) for w in t.warnings]


STEPS = [Config(budget=500), Config(budget=500, encoding="o200k_base"), Config(budget=500, prefer_newest=False),
         Config(budget=500, near_dup=0.5), Config(budget=500, similarity="shingles"),
         Config(budget=500, merge_adjacent=True), Config(budget=500, min_score=0.6), Config(budget=60),
         Config(budget=60, order="rank"), Config(budget=60, order="document"), Config(budget=500, caller="hr"),
         Config(budget=500, drop_unscored=True, min_score=0.1), Config(budget=500)]


def test_a_rebuild_resumed_from_a_remembered_state_equals_a_cold_build():
    from ctxcore.pipeline import forget_stage_results

    cands = (Candidate("p-1", "Refunds take five business days.", 0.9, doc_id="p", chunk_index=0, version="2"),
             Candidate("p-0", "Refunds take ten business days.", 0.8, doc_id="p", chunk_index=1, version="1"),
             Candidate("s", "Refunds take five business days!", 0.7, permissions=("hr",)),
             Candidate("t", "Standard shipping is free over fifty dollars.", 0.5, doc_id="t", chunk_index=0),
             Candidate("t1", "It arrives in three to five days.", None, doc_id="t", chunk_index=1))
    inputs = Inputs(system="Be brief.", history=({"role": "user", "content": "Hi"},))
    warm = [_whole(build(cands, "how long do refunds take", cfg, inputs)) for cfg in STEPS]
    cold = []
    for cfg in STEPS:
        forget_stage_results()
        cold.append(_whole(build(cands, "how long do refunds take", cfg, inputs)))
    assert warm == cold
    assert len({str(t.decisions) for t, _ in warm}) > 5  # the settings did change the outcome


def test_evidence_cost_counts_a_kept_passage_without_a_cost_as_nothing():
    # "alpha beta gamma delta" is 4 tokens, "other words" 2, no label lines: 6; a trace read from a file may
    # carry no cost for a kept passage, which then counts 0 (the 3 dropped tokens never count)
    t = build([Candidate("a", "alpha beta gamma delta", 0.9), Candidate("o", "other words", 0.6),
               Candidate("x", "three more words", 0.1)], "q", Config(budget=100, label_overhead=0, min_score=0.5))
    assert evidence_cost(t) == 6
    t = dataclasses.replace(t, decisions=tuple(dataclasses.replace(d, cost=None) if d.id == "o" else d
                                               for d in t.decisions))
    assert evidence_cost(t) == 4


def test_dated_candidates_without_a_doc_id_are_named_fifty_at_most():
    cands = [Candidate(f"c{i:02d}", f"text number {i}", 0.5, date="2025-01-01") for i in range(51)] + [
        Candidate("d", "doc text", 0.5, doc_id="p", date="2024-01-01")]
    t = build(cands, "q", Config(budget=5000, near_dup=None))
    assert [(str(w), w.ids) for w in t.warnings if w.kind == "no_doc_id"] == [
        ("51 of 52 dated candidates have no doc_id, so their dates were not compared with any other: prefer_newest "
         "compares versions only within one doc_id", tuple(f"c{i:02d}" for i in range(50)))]


def test_copies_of_an_id_with_other_texts_are_renamed_each_to_its_own_id():
    t = build([Candidate("a", "first text", 0.9), Candidate("a", "second text", 0.8),
               Candidate("a", "third text", 0.7)], "q", Config(budget=500, near_dup=None))
    assert [(d.id, d.fate) for d in t.decisions] == [("a", "kept"), ("a#2", "kept"), ("a#3", "kept")]
    assert [(str(w), w.ids) for w in t.warnings if w.kind == "repeated_ids"] == [
        ("id 'a' appears 3 times in the input: copies with other text renamed a#2, a#3", ("a", "a#2", "a#3"))]


def test_warnings_about_many_candidates_name_fifty_of_them():
    unscored = [Candidate(f"c{i:02d}", f"text number {i}", None) for i in range(51)] + [Candidate("s", "scored", 0.5)]
    t = build(unscored, "q", Config(budget=5000, near_dup=None))
    assert [(str(w), w.ids) for w in t.warnings if w.kind == "unscored"] == [
        ("51 of 52 candidates have no score; they rank after the scored ones, in input order",
         tuple(f"c{i:02d}" for i in range(50)))]
    no_vector = [Candidate(f"c{i:02d}", f"text number {i}", 0.5, embedding=None if i < 51 else (1.0, 0.0))
                 for i in range(52)]
    t = build(no_vector, "q", Config(budget=5000, similarity="cosine"))
    assert [(str(w), w.ids) for w in t.warnings if w.kind == "cosine_missing"] == [
        ("cosine near-dedup: 51 candidates carry no embedding and were not compared",
         tuple(f"c{i:02d}" for i in range(50)))]
    generated = loads("\n".join('{"text": "t%d"}' % i for i in range(51)), "x.jsonl").candidates
    t = build(generated, "q", Config(budget=5000, near_dup=None))
    # generated ids are c1, c2, ... by position: the fifty named are c1..c50
    assert [(str(w), w.ids) for w in t.warnings if w.kind == "generated_ids"] == [
        ("51 candidates had no id; ids were generated from their position", tuple(f"c{i}" for i in range(1, 51)))]
