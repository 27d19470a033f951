"""The pieces of the pipeline's own causes (``ctxcore.analysis.causes``) held by hand-valued tables (issue #29):
which of two disagreeing passages should win (by date, then by source type, both directions and ties), how
much two passages share, the question's own words a passage adds, the chunk next to a sent one, and the
conflicting-sources cause at the edge of "the same topic"."""

from __future__ import annotations

import dataclasses

import pytest

from ctxcore import Candidate, Config, build
from ctxcore.analysis.causes import (HISTORY_CROWD, NEAR_THRESHOLD, SAME_TOPIC, TRUST, _asks, _next_chunks, _same,
                                     _winner, conflicting_sources, history_crowding, numbers, paraphrased_duplicates,
                                     per_document_cap, reranker_cut, threshold_cut)
from ctxcore.analysis.findings import Ctx
from ctxcore.analysis.policy import Policy, Rule
from ctxcore.analysis.sent import of_build
from ctxcore.records import Inputs, Logged


def _c(cid, date=None, source_type=None, text="x"):
    return Candidate(cid, text, date=date, source_type=source_type)


@pytest.mark.parametrize("a, b, expected", [
    (_c("a", "2025-03-01"), _c("b", "2024-01-01"), ("a", "b", "a is newer (2025-03-01 against 2024-01-01)")),
    (_c("a", "2024-01-01"), _c("b", "2025-03-01"), ("b", "a", "b is newer (2025-03-01 against 2024-01-01)")),
    # the same date, or a date on one side only: the source types decide
    (_c("a", "2025-03-01", "blog"), _c("b", "2025-03-01", "official"), ("b", "a", "b is official, a is blog")),
    (_c("a", "2025-03-01", "Official"), _c("b", None, "forum"), ("a", "b", "a is Official, b is forum")),
    (_c("a", None, "docs"), _c("b", "2025-03-01", "blog"), ("a", "b", "a is docs, b is blog")),
    (_c("a", None, "blog"), _c("b", None, "KB"), ("b", "a", "b is KB, a is blog")),
    # equal trust, an unknown type, or none: no winner
    (_c("a", None, "official"), _c("b", None, "policy"), None),
    (_c("a", None, "official"), _c("b", None, "wiki"), None),
    (_c("a", None, "wiki"), _c("b", None, "official"), None),
    (_c("a", None, None), _c("b", None, "official"), None),
    (_c("a", None, "forum"), _c("b", None, None), None),
    (_c("a"), _c("b"), None),
])
def test_which_of_two_disagreeing_passages_should_win(a, b, expected):
    got = _winner(a, b)
    assert (None if got is None else (got[0].id, got[1].id, got[2])) == expected


def test_the_trust_ranks_the_table_assumes():
    assert (TRUST["official"], TRUST["docs"], TRUST["kb"], TRUST["blog"], TRUST["forum"]) == (3, 2, 2, 1, 0)


@pytest.mark.parametrize("a, b, share", [
    ({"x", "y"}, {"x", "y", "z", "w"}, 1.0),      # over the smaller set
    ({"x", "y", "z", "w"}, {"x", "q"}, 0.5),
    ({"x"}, {"y"}, 0.0),
    (set(), {"x"}, 0.0), ({"x"}, set(), 0.0), (set(), set(), 0.0),
])
def test_the_share_two_passages_have_in_common(a, b, share):
    assert _same(frozenset(a), frozenset(b)) == share


def _ctx(cands, query, budget=1000, answer="", **settings):
    trace = build(cands, query, Config(budget=budget, **settings))
    return Ctx(trace, of_build(trace), (), answer, None, None, Policy())


def test_asks_lists_the_questions_own_words_a_passage_adds_in_question_order_at_most_four():
    q = "Do Refunds of ALPHA and bravo charlie delta echo take 14 days?"
    sent = Candidate("s", "refunds are handled by the team.", 0.9)
    x = Candidate("x", "alpha bravo charlie delta echo 14 days take " * 4, 0.2)
    ctx = _ctx((sent, x), q, budget=20)
    assert ctx.trace.decision("x").fate == "over_budget"
    assert _asks(ctx, "x") == "alpha, bravo, charlie, delta"
    assert _asks(ctx, "s") == ""


def test_asks_repeats_no_word_and_keeps_digits():
    ctx = _ctx((Candidate("s", "nothing here.", 0.9), Candidate("x", "Limit 500 per order, limit 500.", 0.2)),
               "What limit? The limit is 500?", budget=15)
    assert ctx.trace.decision("x").fate == "over_budget"
    assert _asks(ctx, "x") == "limit, 500"


def test_the_chunk_after_a_sent_one_of_the_same_document_and_version():
    sent = Candidate("d1#2", "chunk two of the policy:", 0.9, doc_id="d1", chunk_index=2, version="v2")
    cands = (
        sent,
        Candidate("d1#3", "chunk three", 0.1, doc_id="d1", chunk_index=3, version="v2"),       # next: yes
        Candidate("d1#1", "chunk one", 0.1, doc_id="d1", chunk_index=1, version="v2"),         # before it
        Candidate("d1#4", "chunk four", 0.1, doc_id="d1", chunk_index=4, version="v2"),        # two after
        Candidate("d1v1#3", "old chunk three", 0.1, doc_id="d1", chunk_index=3, version="v1"),  # other version
        Candidate("d2#3", "other doc three", 0.1, doc_id="d2", chunk_index=3, version="v2"),   # other document
    )
    ctx = _ctx(cands, "policy", budget=1000)
    ctx.sent = _with_not_sent(of_build(build((sent,), "policy", Config())), [c.id for c in cands[1:]])
    assert [(c.id, n.id) for c, n in _next_chunks(ctx)] == [("d1#2", "d1#3")]


def _with_not_sent(sent, ids):
    """The sent context of a build of the sent passages alone, with ``ids`` as the retrieved ones not sent."""
    return dataclasses.replace(sent, not_sent=tuple(ids))


def test_a_sent_passage_without_a_document_or_index_has_no_next_chunk_but_the_others_are_still_looked_at():
    cands = (
        Candidate("free", "no document", 0.9),
        Candidate("noidx", "no index", 0.9, doc_id="d1"),
        Candidate("d1#0", "chunk zero:", 0.9, doc_id="d1", chunk_index=0),
        Candidate("d1#1", "chunk one", 0.1, doc_id="d1", chunk_index=1),
    )
    ctx = _ctx(cands, "chunk", budget=1000)
    sent = of_build(build(cands[:3], "chunk", Config()))
    ctx.sent = _with_not_sent(sent, ["d1#1"])
    assert sorted(p.id for p in ctx.sent.passages) == ["d1#0", "free", "noidx"]
    assert [(c.id, n.id) for c, n in _next_chunks(ctx)] == [("d1#0", "d1#1")]


# --- conflicting sources -------------------------------------------------------------------------------------

OLD = "Refunds to a credit card take 14 days from the request date."
NEW = "Refunds to a credit card take 5 days from the request date."


def _conflict(a_text, b_text, answer="", a_date="2024-01-01", b_date="2025-06-01"):
    cands = (Candidate("old", a_text, 0.9, date=a_date), Candidate("new", b_text, 0.8, date=b_date))
    # near_dup off: the two differ by one word, and a copy check would keep only one of them
    return conflicting_sources(_ctx(cands, "How long do card refunds take?", answer=answer, near_dup=None))


def test_two_sent_passages_that_disagree_on_a_number_name_the_newer_one():
    [f] = _conflict(OLD, NEW, answer="They take 14 days [S1].")
    assert f.ids == ("old", "new")
    assert f.title == ("Two passages that were sent disagree (new says 5; old says 14), and the answer used old, the "
                       "one that should lose: new is newer (2025-06-01 against 2024-01-01).")
    assert f.evidence == "new and old share 88% of their content words; the answer states 14"  # 7 of 8


def test_without_an_answer_the_disagreement_is_still_a_cause():
    [f] = _conflict(OLD, NEW)
    assert f.title == ("Two passages that were sent disagree (new says 5; old says 14); new should win: new is newer "
                       "(2025-06-01 against 2024-01-01).")


def test_an_answer_that_took_the_right_number_is_not_explained_by_the_conflict():
    assert _conflict(OLD, NEW, answer="They take 5 days [S2].") == []


@pytest.mark.parametrize("a_numbers, b_numbers, found", [
    ("14", "5", True),
    ("14 and 30", "5 and 30", True),
    ("14 and 5", "5", False),     # one's numbers contain the other's: an addition, not a disagreement
    ("5", "14 and 5", False),
    ("5", "5", False),
])
def test_a_disagreement_needs_a_number_on_each_side_the_other_lacks(a_numbers, b_numbers, found):
    a = f"Refunds to a credit card take {a_numbers} days from the request date."
    b = f"Refunds to a credit card take {b_numbers} days from the request date."
    assert bool(_conflict(a, b)) is found


def test_same_topic_at_its_edge():
    """Half the smaller passage's content words in common is the same topic; fewer is not."""
    assert SAME_TOPIC == 0.5
    # content words: {refund, card, take, 14} and {refund, card, tulip, 5}: 2 of 4 = 0.5
    [same] = _conflict("refund card take 14", "refund card tulip 5")
    assert same.evidence == "new and old share 50% of their content words"
    # {refund, card, take, 14} and {refund, tulip, orchid, 5}: 1 of 4
    assert _conflict("refund card take 14", "refund tulip orchid 5") == []


def test_passages_off_each_others_topic_do_not_stop_the_search_for_a_pair_that_disagrees():
    cands = (Candidate("tulip", "Tulips bloom 3 weeks in spring.", 0.95, date="2023-01-01"),
             Candidate("old", OLD, 0.9, date="2024-01-01"), Candidate("new", NEW, 0.8, date="2025-06-01"))
    [f] = conflicting_sources(_ctx(cands, "How long do card refunds take?", near_dup=None))
    assert f.ids == ("old", "new")


def test_a_pair_with_no_disagreement_does_not_stop_the_search_either():
    cands = (Candidate("same1", NEW, 0.95, date="2023-01-01"), Candidate("same2", NEW + " Really.", 0.94),
             Candidate("old", OLD, 0.9, date="2024-01-01"), Candidate("new", NEW + " Since June.", 0.8,
                                                                      date="2025-06-01"))
    found = conflicting_sources(_ctx(cands, "How long do card refunds take?", near_dup=None))
    assert [f.ids for f in found] == [("same1", "old")]  # same1 and same2 agree; same1 (2023) and old (2024) not


# --- history crowding ----------------------------------------------------------------------------------------

TURNS = tuple({"role": "user" if i % 2 == 0 else "assistant",
               "content": "we talked about shipping times and parcel tracking numbers " * 8} for i in range(12))
SETTINGS = (("history_share", 0.9), ("max_output", 200), ("window", 2000))  # the pipeline let history take 0.9
REFUND = "Card refunds take five business days from approval. "


def _crowded(a_text, share=0.72, cands=None, query="How long do card refunds take?"):
    cands = cands or (Candidate("a", a_text, 0.9), Candidate("b", "Refunds need a receipt.", 0.5))
    trace = build(cands, query, Config(window=2000, max_output=200, history_share=0.9), Inputs(history=TURNS))
    policy = Policy((Rule("history", share, "the history took 1,447 of 2,000 tokens", "certain"),), SETTINGS)
    return trace, history_crowding(Ctx(trace, of_build(trace), (), "", None, None, policy))


def test_history_that_crowded_out_the_best_passage_is_the_cause_and_a_cap_sends_it():
    trace, [f] = _crowded(REFUND * 30)
    assert [(d.id, d.fate) for d in trace.decisions] == [("a", "over_budget"), ("b", "kept")]
    assert (f.kind, f.severity, f.ids, f.fix, f.fix_verified) == ("history_crowding", 3, ("a",),
                                                                  {"history_share": 0.2}, True)
    assert f.title == ("The conversation history took 72% of the model's window, so a, the best-scored passage for "
                       "the current question, did not fit and was never sent.")
    assert f.evidence == "the history took 1,447 of 2,000 tokens; 1 passages were sent."
    assert f.proof == "re-running your pipeline with the history capped sends it; re-run with it, a is in the " \
                      "prompt as [S1], position 1 of 2"
    assert f.after == {"id": "a", "fate": "kept", "label": "S1", "position": 1, "of": 2}
    assert f.fix_said == "cap the history at 321 tokens, the most recent turns first (ctxcore: history_share 0.2)"


def test_a_passage_too_big_for_a_fifth_of_history_gets_the_tenth_tried_next():
    trace, [f] = _crowded(REFUND * 148)
    assert (f.fix, f.fix_verified) == ({"history_share": 0.1}, True)
    assert f.fix_said == "cap the history at 160 tokens, the most recent turns first (ctxcore: history_share 0.1)"


def test_a_passage_too_big_for_any_cap_is_said_unproved():
    trace, [f] = _crowded(REFUND * 400)
    assert (f.fix, f.fix_verified, f.after) == ({"history_share": 0.2}, False, None)
    assert f.proof == "capping the history did not send it"


@pytest.mark.parametrize("share, found", [(0.3, True), (0.29, False)])
def test_history_crowds_out_only_from_three_tenths_of_the_window(share, found):
    assert HISTORY_CROWD == 0.3
    assert bool(_crowded(REFUND * 30, share=share)[1]) is found


def test_no_history_rule_no_cause():
    trace = build((Candidate("a", REFUND * 30, 0.9),), "How long do card refunds take?",
                  Config(window=2000, max_output=200, history_share=0.9), Inputs(history=TURNS))
    assert history_crowding(Ctx(trace, of_build(trace), (), "", None, None, Policy((), SETTINGS))) == []


def test_only_the_best_scored_passage_left_out_is_blamed_on_the_history():
    """The best passage was sent; the second best was not: the history did not crowd out what mattered."""
    cands = (Candidate("b", "Card refunds: five days.", 0.95), Candidate("a", REFUND * 30, 0.9))
    trace, found = _crowded("", cands=cands)
    assert [(d.id, d.fate) for d in trace.decisions] == [("b", "kept"), ("a", "over_budget")]
    assert found == []


@pytest.mark.parametrize("text, blamed", [
    ("card refunds " * 100, True),       # 2 of 4 question words (card, refund; take, long missing)
    ("refunds policy " * 100, True),     # 1 of 4: RELEVANT exactly
    ("parcel tracking " * 100, False),   # none
])
def test_the_crowded_out_passage_must_be_about_the_question(text, blamed):
    trace, found = _crowded(text)
    assert trace.decision("a").fate == "over_budget"
    assert bool(found) is blamed


def test_the_conflict_finding_whole():
    [f] = _conflict(OLD, NEW, answer="They take 14 days [S1].")
    assert (f.kind, f.severity, f.fix, f.fix_verified, f.role, f.after) == ("conflicting_sources", 3, None, False,
                                                                             "cause", None)
    assert f.proof == "no ctxcore setting ranks sources by trust: the replay cannot prove this fix"
    assert f.fix_said == ("when sources disagree, send only the one that should win (new), or drop older sources "
                          "like old from the index (ctxcore: no setting for this)")


def test_the_losing_source_type_is_named_in_the_fix():
    cands = (Candidate("blog", OLD, 0.9, source_type="blog"), Candidate("kb", NEW, 0.8, source_type="kb"))
    [f] = conflicting_sources(_ctx(cands, "How long do card refunds take?", near_dup=None))
    assert f.title.endswith("; kb should win: kb is kb, blog is blog.")
    assert f.fix_said == ("when sources disagree, send only the one that should win (kb), or drop blog sources like "
                          "blog from the index (ctxcore: no setting for this)")


def test_a_title_names_at_most_three_numbers_a_side_in_order():
    a = "Fees are 1, 2, 3 and 4 EUR for card refunds today."
    b = "Fees are 6, 7, 8 and 9 EUR for card refunds today."
    [used] = _conflict(a, b, answer="It costs 4 EUR.")
    assert used.title.startswith("Two passages that were sent disagree (new says 6, 7, 8; old says 1, 2, 3), and the "
                                 "answer used old")
    [plain] = _conflict(a, b)
    assert plain.title.startswith("Two passages that were sent disagree (new says 6, 7, 8; old says 1, 2, 3); new")


def test_an_answer_that_used_neither_number_is_not_explained_and_the_search_goes_on():
    """The first pair disagrees on a number the answer did not state; the second pair's loser is what it used."""
    cands = (Candidate("p1", "Parcel fees are 3 EUR for card refunds.", 0.95, date="2022-01-01"),
             Candidate("p2", "Parcel fees are 4 EUR for card refunds.", 0.94, date="2023-01-01"),
             Candidate("old", OLD, 0.9, date="2024-01-01"), Candidate("new", NEW, 0.8, date="2025-06-01"))
    ctx = _ctx(cands, "How long do card refunds take?", answer="They take 14 days.", near_dup=None)
    assert [p.id for p in ctx.sent.passages][:1] == ["p1"]
    found = conflicting_sources(ctx)
    assert [(f.ids, f.evidence.split("; ")[-1]) for f in found] == [(("old", "new"), "the answer states 14")]
    assert conflicting_sources(_ctx(cands, "q", answer="It is 3 EUR.", near_dup=None))[0].ids == ("p1", "p2")


def test_a_superseded_passage_takes_no_part_in_a_conflict():
    """Two versions of one document: the older is superseded, so the blog is set against the newer one only."""
    cands = (Candidate("v1", OLD, 0.9, doc_id="policy", version="1", source_type="official"),
             Candidate("v2", NEW, 0.8, doc_id="policy", version="2", source_type="official"),
             Candidate("blog", OLD.replace("14", "30"), 0.7, source_type="blog"))
    trace = build(cands, "How long do card refunds take?", Config(near_dup=None, prefer_newest=False))
    ctx = Ctx(trace, of_build(trace), (), "", None, None, Policy())
    assert [p.superseded_by for p in ctx.sent.passages if p.id == "v1"] == ["v2"]
    assert [f.ids for f in conflicting_sources(ctx)] == [("blog", "v2")]


# --- a score threshold, a per-document cap and a reranker's cut: the pipeline's rules as causes ---------------

Q4 = "alpha bravo charlie delta"
SENT = Candidate("s1", "alpha kilo lima mike.", 0.9)


def _ruled(cands, rules, settings=(), logged=None, **config):
    trace = build(cands, Q4, Config(**config))
    if logged is not None:
        trace = dataclasses.replace(trace, logged=logged)
    return Ctx(trace, of_build(trace), (), "", None, None, Policy(tuple(rules), tuple(settings)))


FLOOR = Rule("threshold", 0.45, "nothing under 0.45 was sent", "likely")


def _threshold(score, max_passages=None):
    x = Candidate("x", "bravo charlie zulu.", score)
    settings = (("min_score", 0.45),) + ((("max_passages", max_passages),) if max_passages else ())
    ctx = _ruled((SENT, x), [FLOOR], settings, min_score=0.45, max_passages=max_passages)
    return threshold_cut(ctx)


def test_a_passage_just_under_the_score_floor_is_the_cause_and_the_lower_floor_sends_it():
    [f] = _threshold(0.4267)
    assert (f.kind, f.severity, f.ids, f.fix, f.fix_verified) == ("threshold_cut", 3, ("x",), {"min_score": 0.42},
                                                                  True)
    assert f.title == ("x scored 0.43, just under your pipeline's minimum relevance score of 0.45, so it was never "
                       "sent; it holds what the question asks about (bravo, charlie) and nothing sent does.")
    assert f.evidence == "Your pipeline's rule: nothing under 0.45 was sent."
    assert f.proof == ("re-running your pipeline with the lower minimum sends it; re-run with it, x is in the prompt "
                       "as [S2], position 2 of 2")
    assert f.fix_said == "lower the minimum relevance score from 0.45 to 0.42 (ctxcore: min_score 0.42)"


def test_with_a_passage_count_the_floor_and_one_more_passage_are_offered():
    [f] = _threshold(0.4267, max_passages=1)
    assert (f.fix, f.fix_verified) == ({"min_score": 0.42, "max_passages": 2}, True)
    assert f.fix_said == ("lower the minimum relevance score from 0.45 to 0.42 and send 2 passages instead of 1 "
                          "(ctxcore: min_score 0.42, max_passages 2)")


@pytest.mark.parametrize("score, found", [(0.30, True), (0.2999, False), (0.4499, True), (0.45, False)])
def test_just_under_is_at_most_fifteen_hundredths_under(score, found):
    assert NEAR_THRESHOLD == 0.15
    assert bool(_threshold(score)) is found


def test_no_threshold_rule_no_threshold_cause():
    x = Candidate("x", "bravo charlie zulu.", 0.43)
    assert threshold_cut(_ruled((SENT, x), [], (("min_score", 0.45),), min_score=0.45)) == []


def test_of_two_passages_under_the_floor_the_stronger_is_named():
    cands = (SENT, Candidate("x", "bravo charlie zulu.", 0.40), Candidate("y", "bravo charlie yankee.", 0.44))
    [f] = threshold_cut(_ruled(cands, [FLOOR], (("min_score", 0.45),), min_score=0.45))
    assert f.ids == ("y",) and f.fix == {"min_score": 0.44}


PER_DOC = Rule("per_document", True, "one chunk per document", "likely")


def _doc_cap(lead, nxt="bravo charlie zulu yankee.", merge=False):
    c = Candidate("d#1", lead, 0.9, doc_id="d", chunk_index=1)
    n = Candidate("d#2", nxt, 0.5, doc_id="d", chunk_index=2)
    ctx = _ruled((c, n), [PER_DOC], (("max_passages", 1),), max_passages=1)
    if merge:
        ctx.case = dataclasses.replace(ctx.case, config=ctx.case.config.replace(merge_adjacent=True))
    return per_document_cap(ctx)


def test_the_chunk_after_a_sent_one_that_the_question_needs_is_the_cause():
    [f] = _doc_cap("alpha kilo lima mike.")
    assert (f.kind, f.ids, f.fix, f.fix_verified) == ("per_document_cap", ("d#2", "d#1"), {"merge_adjacent": True},
                                                      True)
    assert f.title == ("Your pipeline sends one chunk per document, so d#2, the next chunk of d after the sent d#1, "
                       "was retrieved but never sent: d#2 holds what the question asks about (bravo, charlie) and "
                       "nothing sent does.")
    assert f.evidence == "d#1 is chunk 1 and d#2 chunk 2 of d."
    assert f.proof.startswith("merging adjacent chunks sends d#2 together with d#1; re-run with it, d#1 is in the "
                              "prompt as [S1]")
    assert f.fix_said == ("send the next chunk of the same document, or merge adjacent chunks before the "
                          "one-per-document cap (ctxcore: merge_adjacent on)")


def test_a_sent_chunk_that_ends_in_a_colon_leads_into_the_next_whatever_it_holds():
    [f] = _doc_cap("alpha: the steps are as follows:", nxt="kilo lima mike november.")
    assert f.title.endswith('was retrieved but never sent: d#1 ends "…alpha: the steps are as follows:" and the text '
                            'it leads into is d#2.')


def test_a_next_chunk_the_question_does_not_need_after_a_finished_chunk_is_no_cause():
    assert _doc_cap("alpha kilo lima mike.", nxt="kilo lima mike november.") == []
    assert per_document_cap(_ruled((SENT,), [], ())) == []


def test_a_merge_the_pipeline_already_does_is_offered_as_no_fix():
    [f] = _doc_cap("alpha kilo lima mike.", merge=True)
    assert (f.fix, f.fix_verified, f.after) == (None, False, None)
    assert f.proof == "merging adjacent chunks did not send them together"


def _reranked(cut_ids, info, kept=("s1",)):
    cands = (SENT, Candidate("x", "bravo charlie zulu.", 0.5), Candidate("y", "bravo yankee.", 0.4),
             Candidate("z", "kilo november.", 0.3))
    logged = Logged("openinference", prompt_text="p", reranker=info, reranked=kept, reranker_cut=cut_ids)
    return reranker_cut(_ruled(cands, [], (("max_passages", 1),), logged=logged, max_passages=1))


def test_a_passage_the_reranker_dropped_that_the_question_needs_is_the_cause():
    [f] = _reranked(("x", "y", "z"), {"span": "rerank", "top_k": 1})
    assert (f.kind, f.ids, f.fix, f.fix_verified) == ("reranker_cut", ("x",), {"max_passages": 2}, True)
    assert f.title == ("Your reranker (rerank) kept 1 of the retrieved passages and dropped x before the prompt was "
                       "built, yet x holds what the question asks about (bravo, charlie) and nothing sent does.")
    assert f.evidence == "It kept s1; 3 passages were dropped at that step."
    assert f.fix_said == "raise the reranker's top_n from 1 to 2 (ctxcore: max_passages 2)"
    assert f.proof.startswith("re-running your pipeline with 2 passages sends it")


def test_a_filter_step_is_named_as_one_and_asked_to_keep_more():
    [f] = _reranked(("x",), {"span": "filter-7", "step": "filter", "top_k": 1})
    assert f.title.startswith("Your filter step (filter-7) kept 1 of the retrieved passages and dropped x")
    assert f.fix_said == "let your filter step (filter-7) keep 2 passages instead of 1 (ctxcore: max_passages 2)"


def test_without_a_span_or_top_k_the_reranker_is_named_plainly_and_its_kept_count_is_the_top():
    [f] = _reranked(("x",), None, kept=("s1", "z"))
    assert f.title.startswith("Your reranker kept 2 of the retrieved passages and dropped x")
    assert f.fix == {"max_passages": 3} and f.fix_said.startswith("raise the reranker's top_n from 2 to 3")


def test_a_reranker_cut_of_nothing_needed_is_no_cause():
    assert _reranked(("z",), {"span": "rerank", "top_k": 1}) == []
    assert _reranked((), {"span": "rerank", "top_k": 1}) == []


# --- rewordings that crowd out the rest of the question, and the numbers a text states -----------------------

REWORDED = (Candidate("p1", "Card refunds take five days.", 0.9),
            Candidate("p2", "The card refunds will take five days in total, we think.", 0.85),
            Candidate("p3", "For a card, refunds can take about five days or so.", 0.8))
CASH = Candidate("x", "Cash back instead of a card refund is possible at the store.", 0.5)
QCASH = "How long do card refunds take, and can I get cash back instead?"
THREE = (Rule("passages", 3, "3 of 4 sent", "likely"),)


def _paraphrased(cands, k=3):
    trace = build(cands, QCASH, Config(max_passages=k))
    return paraphrased_duplicates(Ctx(trace, of_build(trace), (), "", None, None,
                                      Policy(THREE, (("max_passages", k),))))


def test_rewordings_that_took_the_room_of_the_rest_of_the_question_are_the_cause():
    [f] = _paraphrased(REWORDED + (CASH,))
    assert (f.kind, f.severity, f.ids, f.fix, f.fix_verified) == ("paraphrased_duplicates", 3,
                                                                  ("x", "p1", "p3", "p2"), {"near_dup": 0.25}, True)
    assert f.title == ("3 rewordings of one passage (p1) took 100% of what was sent, so x, which covers the rest of "
                       "the question (cash, back, instead), was never sent.")
    assert f.evidence == ("p1, p3, p2 share at least 83% of their content words, though only 0.29 of their word "
                          "sets (too different for a copy check at 0.8).")
    assert f.proof == ("re-running your pipeline with rewordings removed sends it; re-run with it, x is in the "
                       "prompt as [S2], position 2 of 2")
    assert f.fix_said == "treat passages that say the same thing in other words as copies (ctxcore: near_dup 0.25)"


def test_two_rewordings_are_not_enough_to_crowd_anything_out():
    assert _paraphrased(REWORDED[:2] + (CASH,), k=2) == []


def test_rewordings_of_a_small_share_of_what_was_sent_are_no_cause():
    """A long fourth passage sent with them: the three take under a quarter of the evidence."""
    long = Candidate("w", "Warranty claims are handled by the maker, " * 12, 0.95)
    assert _paraphrased((long,) + REWORDED + (CASH,), k=4) == []


def test_rewordings_with_nothing_needed_left_out_are_no_cause():
    assert _paraphrased(REWORDED + (Candidate("z", "Parcel tracking numbers are emailed.", 0.5),)) == []


@pytest.mark.parametrize("text, found", [
    ("Refunds up to 1,500 EUR within 14 days (since 2025-03) [2].", {"1500", "14", "2025", "03"}),
    ("See [12]5 and [S3] 7.", {"5", "7"}),     # a citation is no number, and what follows it still is
    ("Version 2.5, not v3 or 4b.", {"2.5"}),
    ("No numbers here.", set()),
])
def test_the_numbers_a_text_states(text, found):
    assert numbers(text) == found


def test_the_reranker_finding_whole():
    [f] = _reranked(("x", "y", "z"), {"span": "rerank", "top_k": 1})
    assert (f.severity, f.role, f.folded) == (3, "cause", ())
    assert f.proof == ("re-running your pipeline with 2 passages sends it; re-run with it, x is in the prompt as "
                       "[S2], position 2 of 2")
    assert f.after == {"id": "x", "fate": "kept", "label": "S2", "position": 2, "of": 2}


def test_a_passage_ranked_low_needs_the_passages_down_to_its_rank():
    """q is ranked 7th of 7: one more than the step kept (2) would not reach it; 7 passages do."""
    low = (Candidate("w1", "kilo a.", 0.29), Candidate("w2", "kilo b.", 0.28),
           Candidate("q", "bravo charlie delta quebec.", 0.1))
    cands = (SENT, Candidate("x", "bravo charlie zulu.", 0.5), Candidate("y", "bravo yankee.", 0.4),
             Candidate("z", "kilo november.", 0.3)) + low
    logged = Logged("openinference", prompt_text="p", reranker={"span": "rerank", "top_k": 1}, reranked=("s1",),
                    reranker_cut=("q", "x"))
    [f] = reranker_cut(_ruled(cands, [], (("max_passages", 1),), logged=logged, max_passages=1))
    assert f.ids == ("q",)  # of the two needed, the one holding more of the question (3 of 4 words against 2)
    assert f.fix == {"max_passages": 7} and f.fix_said.startswith("raise the reranker's top_n from 1 to 7")


def test_a_top_k_that_is_not_a_number_is_not_taken_for_one():
    [f] = _reranked(("x",), {"span": "rerank", "top_k": "2"}, kept=("s1", "z"))
    assert f.fix_said == "raise the reranker's top_n from 2 to 3 (ctxcore: max_passages 3)"  # the 2 it kept


@pytest.mark.parametrize("kept, listed", [(6, "k0, k1, k2, k3, k4, k5;"), (7, "k0, k1, k2, k3, k4, k5…;")])
def test_the_reranker_evidence_lists_six_it_kept(kept, listed):
    [f] = _reranked(("x",), {"top_k": 1}, kept=tuple(f"k{i}" for i in range(kept)))
    assert f.evidence == f"It kept {listed} 1 passages were dropped at that step."


def test_the_per_document_and_rewording_findings_whole():
    [f] = _doc_cap("alpha kilo lima mike.")
    assert (f.severity, f.role, f.after) == (3, "cause", {"id": "d#1", "fate": "kept", "label": "S1", "position": 1,
                                                          "of": 1})
    assert f.proof == ("merging adjacent chunks sends d#2 together with d#1; re-run with it, d#1 is in the prompt as "
                       "[S1], position 1 of 1")
    [p] = _paraphrased(REWORDED + (CASH,))
    assert (p.severity, p.role, p.after) == (3, "cause", {"id": "x", "fate": "kept", "label": "S2", "position": 2,
                                                          "of": 2})
