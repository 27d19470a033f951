"""The pipeline's own causes at the edges their first tables missed (issue #29): which of two next chunks is
named, a merge that does not fit, a reranker asked for what the pipeline already sends, rewordings at exactly
the shares and thresholds that decide them, a fix proved by the second try or by none, and the search for a
disagreement going on past pairs that do not decide it. Every expected value is worked out by hand below."""

from __future__ import annotations

import dataclasses

import pytest

from ctxcore import Candidate, Config, build
from ctxcore.analysis.causes import (CROWD_SHARE, PARAPHRASE, conflicting_sources, paraphrased_duplicates,
                                     per_document_cap, reranker_cut)
from ctxcore.analysis.findings import Ctx
from ctxcore.analysis.policy import Policy, Rule
from ctxcore.analysis.sent import content_words, of_build
from ctxcore.records import Logged
from ctxcore.stages.similarity import jaccard, words

Q4 = "alpha bravo charlie delta"
PER_DOC = Rule("per_document", True, "one chunk per document", "likely")


def _ctx(cands, query, rules=(), settings=(), answer="", logged=None, **config):
    trace = build(cands, query, Config(**config))
    if logged is not None:
        trace = dataclasses.replace(trace, logged=logged)
    return Ctx(trace, of_build(trace), (), answer, None, None, Policy(tuple(rules), tuple(settings)))


# --- one chunk per document -----------------------------------------------------------------------------------

def _chunk(cid, text, score):
    doc, index = cid.split("#")
    return Candidate(cid, text, score, doc_id=doc, chunk_index=int(index))


def test_of_two_next_chunks_the_one_a_sent_chunk_leads_into_with_a_colon_is_named():
    """d#1 comes first and its next chunk holds as much of the question as e#2 (bravo, charlie): the colon at
    the end of e#1 (trailing spaces and all) decides, not the order or the strength."""
    cands = (_chunk("d#1", "alpha kilo lima mike.", 0.9), _chunk("e#1", "alpha oscar papa: the steps are:  ", 0.8),
             _chunk("d#2", "bravo charlie zulu yankee.", 0.5), _chunk("e#2", "bravo charlie quebec.", 0.4))
    ctx = _ctx(cands, Q4, [PER_DOC], (("max_passages", 2),), max_passages=2)
    assert [p.id for p in ctx.sent.passages] == ["d#1", "e#1"]
    [f] = per_document_cap(ctx)
    assert f.ids == ("e#2", "e#1")
    assert f.title == ('Your pipeline sends one chunk per document, so e#2, the next chunk of e after the sent e#1, '
                       'was retrieved but never sent: e#1 ends "…alpha oscar papa: the steps are:" and the text it '
                       'leads into is e#2.')
    assert f.proof == ("merging adjacent chunks sends e#2 together with e#1; re-run with it, e#1 is in the prompt as "
                       "[S2], position 2 of 2")


def test_a_colon_before_trailing_white_space_still_leads_into_a_next_chunk_the_question_does_not_need():
    cands = (_chunk("d#1", "alpha: the steps are as follows:\n  ", 0.9), _chunk("d#2", "kilo lima mike.", 0.5))
    [f] = per_document_cap(_ctx(cands, Q4, [PER_DOC], (("max_passages", 1),), max_passages=1))
    assert f.title.endswith('d#1 ends "…alpha: the steps are as follows:" and the text it leads into is d#2.')


def test_a_long_chunk_is_quoted_by_its_last_sixty_characters():
    lead = "alpha " + "0123456789" * 7 + ":"          # 77 characters: the quote is the last 60
    cands = (_chunk("d#1", lead, 0.9), _chunk("d#2", "kilo lima mike.", 0.5))
    [f] = per_document_cap(_ctx(cands, Q4, [PER_DOC], (("max_passages", 1),), max_passages=1))
    quote = "123456789" + "0123456789" * 5 + ":"
    assert f.title.endswith(f'd#1 ends "…{quote}" and the text it leads into is d#2.')


def test_a_merge_that_does_not_fit_the_budget_is_offered_but_not_proved():
    """Merged, d#1 and d#2 take 126 tokens against a budget of 100: the merge happens (d#2 is merged into d#1),
    but d#1 no longer fits, so the fix is offered as a change and said unproved, with nowhere it lands."""
    cands = (_chunk("d#1", "alpha kilo lima mike.", 0.9), _chunk("d#2", "bravo charlie zulu yankee. " * 20, 0.5))
    ctx = _ctx(cands, Q4, [PER_DOC], (("max_passages", 1), ("budget", 100)), max_passages=1, budget=100)
    merged = ctx.case.run(merge_adjacent=True)
    assert (merged.decision("d#1").fate, merged.decision("d#2").merged_into) == ("over_budget", "d#1")
    [f] = per_document_cap(ctx)
    assert (f.fix, f.fix_verified, f.after) == ({"merge_adjacent": True}, False, None)
    assert f.proof == "merging adjacent chunks did not send them together"


# --- a reranker's cut -----------------------------------------------------------------------------------------

SENT = Candidate("s1", "alpha kilo lima mike.", 0.9)
RANKED = (SENT, Candidate("x", "bravo charlie zulu.", 0.5), Candidate("z", "kilo november.", 0.3))


def _reranked(info, sends):
    logged = Logged("openinference", prompt_text="p", reranker=info, reranked=("s1",), reranker_cut=("x", "z"))
    rules = (Rule("passages", sends, f"{sends} sent", "likely"),)
    return reranker_cut(_ctx(RANKED, Q4, rules, (("max_passages", sends),), logged=logged, max_passages=1))


def test_the_reranker_top_n_it_states_is_the_one_to_raise_whatever_it_kept():
    [f] = _reranked({"span": "rerank", "top_k": 3}, sends=1)
    assert f.title.startswith("Your reranker (rerank) kept 1 of the retrieved passages")   # what it kept
    assert f.fix_said == "raise the reranker's top_n from 3 to 4 (ctxcore: max_passages 4)"  # what it was set to


def test_a_reranker_fix_the_pipeline_already_has_is_said_but_neither_offered_nor_proved():
    """x is 2nd in rank, the step kept 1: two passages would reach it, and the pipeline already sends two."""
    [f] = _reranked({"span": "rerank", "top_k": 1}, sends=2)
    assert (f.fix, f.fix_verified, f.after) == (None, False, None)
    assert f.proof == "re-running your pipeline with more passages did not send it"
    assert f.fix_said == "raise the reranker's top_n from 1 to 2 (ctxcore: max_passages 2)"


# --- rewordings ------------------------------------------------------------------------------------------------

P1 = Candidate("p1", "Card refunds take five days.", 0.9)                                        # 6 tokens
P2 = Candidate("p2", "The card refunds will take five days in total, we think.", 0.85)          # 13 tokens
P3 = Candidate("p3", "For a card, refunds can take about five days or so.", 0.8)                # 13 tokens
CASH = Candidate("x", "Cash back instead of a card refund is possible at the store.", 0.5)
QCASH = "How long do card refunds take, and can I get cash back instead?"


def _paraphrased(cands, k=3, settings=(), **config):
    rules = (Rule("passages", k, f"{k} sent", "likely"),)
    return paraphrased_duplicates(_ctx(cands, QCASH, rules, (("max_passages", k),) + settings, max_passages=k,
                                       **config))


def test_a_passage_sharing_exactly_three_fifths_of_the_first_ones_content_words_is_a_rewording():
    ages = Candidate("p2", "Card refunds take ages, weeks, months.", 0.85)
    share = len(content_words(ages.text) & content_words(P1.text)) / 5      # card, refund, take of p1's five
    assert (share, PARAPHRASE) == (0.6, 0.6)
    [f] = _paraphrased((P1, ages, P3, CASH))
    assert f.ids == ("x", "p1", "p3", "p2")


def test_rewordings_are_found_whatever_group_comes_first():
    """zz, sent first, is a group of its own; the three rewordings are the largest group, not the first."""
    [f] = _paraphrased((Candidate("zz", "Kilo.", 0.95), P1, P2, P3, CASH), k=4)
    assert f.title.startswith("3 rewordings of one passage (p2) took 91% of what was sent, so x")


def test_nothing_sent_is_no_rewording():
    assert _paraphrased((P1, P2, P3, CASH), min_score=0.99) == []


def test_rewordings_the_pipelines_own_copy_check_catches_at_exactly_its_threshold_are_not_this_cause():
    """p2 and p3 share 5 of 17 words, the least of the three pairs: a copy check at exactly 5/17 catches them."""
    assert min(jaccard(words(a.text), words(b.text)) for a, b in ((P1, P2), (P1, P3), (P2, P3))) == 5 / 17
    assert _paraphrased((P1, P2, P3, CASH), settings=(("near_dup", 5 / 17),)) == []
    assert len(_paraphrased((P1, P2, P3, CASH), settings=(("near_dup", 0.3),))) == 1


@pytest.mark.parametrize("tail, evidence, found", [
    (" in most shops.", 128, True),          # 32 of 128 tokens: exactly a quarter
    (" in most shops today.", 129, False),   # 32 of 129: under a quarter
])
def test_rewordings_crowd_out_from_exactly_a_quarter_of_the_sent_evidence(tail, evidence, found):
    long = Candidate("w", " ".join(["Warranty claims are handled by the maker"] * 13) + tail, 0.95)
    cands = (long, P1, P2, P3, CASH)
    trace = build(cands, QCASH, Config(max_passages=4))
    assert (of_build(trace).evidence_tokens, CROWD_SHARE) == (evidence, 0.25)
    assert bool(_paraphrased(cands, k=4)) is found


def test_a_sent_context_that_counted_no_evidence_blames_no_rewordings():
    """A sent context read back without its token counts: no share can be said, so no cause is claimed."""
    trace = build((P1, P2, P3, CASH), QCASH, Config(max_passages=3))
    sent = dataclasses.replace(of_build(trace), evidence_tokens=0)
    ctx = Ctx(trace, sent, (), "", None, None, Policy((Rule("passages", 3, "3 sent", "likely"),),
                                                       (("max_passages", 3),)))
    assert paraphrased_duplicates(ctx) == []


def test_of_two_passages_the_rewordings_crowded_out_the_one_adding_more_of_the_question_is_named():
    """y is ranked above x and sorts after it, but adds two of the question's words (cash, back) to x's three."""
    y = Candidate("y", "Cash back is possible for a card.", 0.6)
    [f] = _paraphrased((P1, P2, P3, y, CASH))
    assert f.ids[0] == "x"


def test_a_fix_proved_only_by_preferring_new_passages_says_so():
    """Treating rewordings as copies at 0.25 also drops x (it shares 3 of 10 words with p1); MMR at the
    pipeline's lambda of 0.3 sends it instead, and the finding says that fix, not the other."""
    x = Candidate("x", "Card refunds take: cash back instead is possible.", 0.5)
    assert jaccard(words(x.text), words(P1.text)) == 0.3
    [f] = _paraphrased((P1, P2, P3, x), settings=(("mmr_lambda", 0.3),))
    assert (f.fix, f.fix_verified) == ({"select": "mmr"}, True)
    assert f.proof == ("re-running your pipeline preferring passages that add something new sends it; re-run with "
                       "it, x is in the prompt as [S2], position 2 of 3")
    assert f.fix_said == "prefer passages that add something new over rewordings (ctxcore: select mmr)"


def test_rewordings_whose_fixes_all_fail_are_said_unproved_with_the_first_fix():
    """The pipeline's floor of 0.6 drops x (0.5) in every re-run."""
    [f] = _paraphrased((P1, P2, P3, CASH), settings=(("min_score", 0.6),))
    assert (f.fix, f.fix_verified, f.after) == ({"near_dup": 0.25}, False, None)
    assert f.proof == "no re-run tried sent it"
    assert f.fix_said == "treat passages that say the same thing in other words as copies (ctxcore: near_dup 0.25)"


# --- conflicting sources: the search goes on past pairs that decide nothing -----------------------------------

OLD = "Refunds to a credit card take 14 days from the request date."
NEW = "Refunds to a credit card take 5 days from the request date."
QCARD = "How long do card refunds take?"


def test_a_first_pair_that_agrees_does_not_stop_the_search():
    cands = (Candidate("a1", NEW, 0.95, date="2023-01-01"), Candidate("a2", NEW + " Really.", 0.94, date="2022-01-01"),
             Candidate("old", OLD, 0.9, date="2024-01-01"))
    ctx = _ctx(cands, QCARD, near_dup=None, order="rank")
    assert [p.id for p in ctx.sent.passages] == ["a1", "a2", "old"]   # (a1, a2) is the first pair looked at
    assert [f.ids for f in conflicting_sources(ctx)] == [("a1", "old")]


def test_a_first_pair_where_neither_should_win_does_not_stop_the_search():
    """a1 (official) and a2 (policy) disagree but trust both alike; a1 against the forum post decides."""
    cands = (Candidate("a1", NEW, 0.95, source_type="official"), Candidate("a2", OLD, 0.94, source_type="policy"),
             Candidate("forum", NEW.replace("5", "7"), 0.9, source_type="forum"))
    ctx = _ctx(cands, QCARD, near_dup=None, order="rank")
    assert [p.id for p in ctx.sent.passages] == ["a1", "a2", "forum"]
    [f] = conflicting_sources(ctx)
    assert f.title == ("Two passages that were sent disagree (a1 says 5; forum says 7); a1 should win: a1 is "
                       "official, forum is forum.")


def test_every_losing_number_the_answer_states_is_listed():
    cands = (Candidate("old", "Fees are 1, 2, 3 and 4 EUR for card refunds today.", 0.9, date="2024-01-01"),
             Candidate("new", "Fees are 6, 7, 8 and 9 EUR for card refunds today.", 0.8, date="2025-06-01"))
    [f] = conflicting_sources(_ctx(cands, QCARD, answer="It costs 3 or 4 EUR.", near_dup=None))
    assert f.evidence == "new and old share 56% of their content words; the answer states 3, 4"
