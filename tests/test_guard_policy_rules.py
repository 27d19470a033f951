"""The rules a logged pipeline appears to follow, one small function each, held by hand-valued tables (issue
#29): each rule's words, value and confidence, on both sides of every edge that decides whether it is claimed."""

from __future__ import annotations

import pytest

from ctxcore.analysis.policy import (Rule, budget_rule, dedup_rule, history_rule, order_rule, passages_rule,
                                     per_document_rule, reranker_rule, threshold_rule, truncation_rule,
                                     versions_rule)


@pytest.mark.parametrize("k, n, stated, rule", [
    (0, 5, None, None),
    (0, 5, 3, None),                                  # nothing sent: even a stated top_n says nothing
    (5, 5, None, Rule("all_passages", 5, "sent all 5 passages retrieved", "certain")),
    (5, 5, 5, Rule("passages", 5, "top_n 5 is stated in the span metadata; sent 5 of the 5 passages retrieved",
                   "stated")),
    (3, 5, 4, Rule("passages", 4, "top_n 4 is stated in the span metadata; sent 3 of the 5 passages retrieved",
                   "stated")),
    (1, 5, None, Rule("passages", 1, "sent 1 of the 5 passages retrieved", "certain")),
])
def test_top_k(k, n, stated, rule):
    assert passages_rule(k, n, stated) == rule


@pytest.mark.parametrize("sent, not_sent, first_k, stated, rule", [
    ([0.81, 0.52], [0.47, 0.31], False, None,
     Rule("threshold", 0.5, "all 2 sent scored >= 0.50; the 2 not sent scored 0.47 and 0.31", "likely")),
    ([0.81, 0.52], [0.52], False, None, None),       # a tie: no cut keeps one and drops the other
    ([0.81, 0.52], [0.519], False, None,
     Rule("threshold", 0.52, "all 2 sent scored >= 0.52; the 1 not sent scored 0.52", "likely")),
    ([0.9], [0.4, 0.3, 0.2, 0.1], False, None,      # three scores shown, the strongest first, the rest elided
     Rule("threshold", 0.9, "all 1 sent scored >= 0.90; the 4 not sent scored 0.40 and 0.30 and 0.20 …", "likely")),
    ([0.9], [0.4, 0.3, 0.2], False, None,
     Rule("threshold", 0.9, "all 1 sent scored >= 0.90; the 3 not sent scored 0.40 and 0.30 and 0.20", "likely")),
    ([0.81, 0.52], [0.47], True, None, None),         # the first k retrieved: top-k explains it
    ([], [0.47], False, None, None),
    ([0.81], [], False, None, None),
    ([0.81, 0.52], [0.6], False, 0.45,
     Rule("threshold", 0.45, "a minimum score of 0.45 is stated in the span metadata; the lowest sent scored 0.52",
          "stated")),
    ([], [], True, 0.45, Rule("threshold", 0.45, "a minimum score of 0.45 is stated in the span metadata",
                              "stated")),
])
def test_a_minimum_score(sent, not_sent, first_k, stated, rule):
    assert threshold_rule(sent, not_sent, first_k, stated) == rule


@pytest.mark.parametrize("sent_docs, not_sent, rule", [
    (["a", "b"], [("a#2", "a", True)],
     Rule("per_document", 1, "the 2 sent passages come from 2 different documents; a#2 shares a document with a "
                             "sent one and was not sent", "likely")),
    (["a", "b", None], [("a#2", "a", False), ("b#2", "b", False), ("b#3", "b", True), ("a#3", "a", False)],
     Rule("per_document", 1, "the 2 sent passages come from 2 different documents; a#2, b#2, b#3 share documents "
                             "with sent ones and were not sent", "likely")),
    (["a", "b"], [("a#2", "a", False)],
     Rule("per_document", 1, "the 2 sent passages come from 2 different documents; a#2 shares a document with a "
                             "sent one and was not sent (they also scored lower)", "guess")),
    (["a"], [("a#2", "a", True)], None),              # one document sent: nothing to tell a cap from
    (["a", "a"], [("a#2", "a", True)], None),         # two chunks of one document sent: no cap
    (["a", "b"], [("c#1", "c", True), ("n", None, True)], None),   # nothing held back shares a sent document
])
def test_one_chunk_per_document(sent_docs, not_sent, rule):
    assert per_document_rule(sent_docs, not_sent) == rule


@pytest.mark.parametrize("copies_sent, copies_held, rule", [
    ([("b", "a", 1.0)], ["x"], Rule("dedup", False, "sent 1 copy of passages already sent: b repeats a (similarity "
                                                    "1.00)", "certain")),
    ([("b", "a", 1.0), ("c", "a", 0.914), ("d", "b", 0.8), ("e", "a", 0.9)], [],
     Rule("dedup", False, "sent 4 copies of passages already sent: b repeats a (similarity 1.00), c repeats a "
                          "(similarity 0.91), d repeats b (similarity 0.80)", "certain")),
    ([], ["b"], Rule("dedup", True, "b repeats a sent passage and was not sent", "likely")),
    ([], ["b", "c", "d", "e"], Rule("dedup", True, "b, c, d repeat a sent passage and were not sent", "likely")),
    ([], [], None),
])
def test_copies_sent_or_held_back(copies_sent, copies_held, rule):
    assert dedup_rule(copies_sent, copies_held) == rule


@pytest.mark.parametrize("outdated, rule", [
    ([("v1", "v2", True), ("w1", "w2", False)], Rule("versions", False, "sent v1, an older version of v2, which was "
                                                                        "sent too", "certain")),
    ([("v1", "v2", False)], Rule("versions", False, "sent v1, an older version of v2, which was retrieved but not "
                                                    "sent", "certain")),
    ([], None),
])
def test_outdated_versions_sent(outdated, rule):
    assert versions_rule(outdated) == rule


@pytest.mark.parametrize("sent, retrieved, by_score, rule", [
    (["a"], ["a", "b"], ["a", "b"], None),             # one passage has no order
    (["a", "c"], ["a", "b", "c"], ["a", "c", "b"],
     Rule("order", "original", "the 2 sent passages are in the order retrieval returned them, which is also by "
                               "score", "certain")),
    (["a", "c"], ["a", "b", "c"], ["c", "a", "b"],
     Rule("order", "original", "the 2 sent passages are in the order retrieval returned them", "certain")),
    (["c", "a"], ["a", "b", "c"], ["c", "b", "a"],
     Rule("order", "rank", "the 2 sent passages are in score order, not retrieval order", "certain")),
    (["c", "a", "b"], ["a", "b", "c"], ["a", "b", "c"],
     Rule("order", "other", "the sent passages are retrieval ranks 3 1 2: neither retrieval nor score order",
          "certain")),
])
def test_the_order_passages_were_sent_in(sent, retrieved, by_score, rule):
    assert order_rule(sent, retrieved, by_score) == rule


def test_an_evidence_budget_and_a_history_share():
    assert budget_rule(120, ("big", 300)) == Rule(
        "budget", 120, "the sent evidence took 120 tokens; big (300 tokens) out-scored a sent passage and would have "
                       "made it 420", "likely")
    assert budget_rule(120, None) is None
    assert history_rule(820, 8192) == Rule("history", 0.1, "the conversation history took 820 of the 8192-token "
                                                           "window (10%)", "certain")
    assert history_rule(1, 3) == Rule("history", 0.333, "the conversation history took 1 of the 3-token window "
                                                        "(33%)", "certain")
    assert history_rule(0, 8192) is None


@pytest.mark.parametrize("reranker, kept, cut, rule", [
    ({"model": "rr", "top_k": 3}, 2, 1, Rule("reranker", 3, "top_n 3 is stated in the reranker span; rr returned 2 "
                                                           "of the 3 candidates it was given", "stated")),
    ({"top_k": True}, 2, 1, Rule("reranker", 2, "the reranker returned 2 of the 3 candidates it was given",
                                 "certain")),  # a flag, not a number
    ({"top_k": "3"}, 2, 0, Rule("reranker", 2, "the reranker returned 2 of the 2 candidates it was given", "guess")),
    ({"model": ""}, 2, 1, Rule("reranker", 2, "the reranker returned 2 of the 3 candidates it was given",
                               "certain")),
    (None, 2, 1, None),
    ({}, 2, 1, None),
])
def test_a_rerankers_top_n(reranker, kept, cut, rule):
    assert reranker_rule(reranker, kept, cut) == rule


def test_a_passage_cut_part_way():
    assert truncation_rule([("kb#1", 2, 0.411), ("kb#2", 3, 0.1)], 3) == Rule(
        "truncation", "kb#1", "kb#1, passage 2 of 3, was cut after 41% of its text", "certain")
    assert truncation_rule([], 3) is None
