"""The logged pipeline's policy in words and on disk, held by hand-valued tables (issue #29): every rule said
in plain words, the lines the CLI and the pages print, a policy read back from a trace's JSON however much of it
is there, the roundest cut between two scores, and which rule explains a passage left out (both sides of each
rule's edge)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from ctxcore import Candidate, Config, build, load
from ctxcore.analysis.policy import (HEADING, Policy, Rule, _copy_of, attach, infer, lines, of, reason_for, report,
                                     roundest, said)
from ctxcore.analysis.sent import of_build, of_trace
from ctxcore.records import Logged

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("kind, value, words", [
    ("passages", 3, "send the top 3 passages"),
    ("passages", 1, "send the top 1 passage"),
    ("all_passages", True, "send every passage retrieved"),
    ("threshold", 0.5, "send only passages scoring 0.50 or more"),
    ("threshold", 0.475, "send only passages scoring 0.47 or more"),   # two places, as Python rounds 0.475
    ("per_document", True, "send at most 1 chunk per document"),
    ("dedup", True, "remove copies before sending"),
    ("dedup", False, "send copies of the same passage"),
    ("versions", True, "send outdated versions alongside newer ones"),
    ("order", "original", "keep the retrieval order"),
    ("order", "rank", "order passages by score"),
    ("order", "sandwich", "order passages in its own way"),
    ("budget", 450, "cap the evidence at about 450 tokens"),
    ("history", 0.72, "give the conversation history 72% of the window"),
    ("reranker", 2, "keep the reranker's top 2"),
    ("truncation", "r3", "cut the prompt part-way through r3"),
    ("something_new", 7, "something_new: 7"),   # a kind from a newer trace: said as it is, not dropped
])
def test_every_rule_in_plain_words(kind, value, words):
    assert said(Rule(kind, value, "", "likely")) == words


RULES = (Rule("passages", 3, "sent 3 of the 5 passages retrieved", "certain"),
         Rule("threshold", 0.5, "all 3 sent scored >= 0.50", "likely"))


def test_the_policy_lines_a_heading_a_line_a_rule_then_what_the_replay_cannot_do():
    policy = Policy(RULES, (("max_passages", 3),), ("identical copies sent more than once", "x was sent"))
    assert HEADING == "Your pipeline appears to:"
    assert lines(policy) == [
        "Your pipeline appears to:",
        "  - send the top 3 passages (sent 3 of the 5 passages retrieved) [certain]",
        "  - send only passages scoring 0.50 or more (all 3 sent scored >= 0.50) [likely]",
        "The replay cannot reproduce:",
        "  - identical copies sent more than once",
        "  - x was sent",
    ]
    assert lines(dataclasses.replace(policy, cannot=())) == lines(policy)[:3]
    assert lines(Policy((), (), ("x was sent",))) == []   # no rule, nothing to say (not even what it cannot do)


@pytest.mark.parametrize("data, rules, settings, cannot", [
    (None, (), (), ()),
    ({}, (), (), ()),
    ({"rules": [RULES[0].to_dict()]}, RULES[:1], (), ()),
    ({"config": {"min_score": 0.5, "max_passages": 3}}, (), (("max_passages", 3), ("min_score", 0.5)), ()),
    ({"cannot": ["x was sent"]}, (), (), ("x was sent",)),
])
def test_a_policy_read_back_from_a_trace_with_any_of_its_parts_missing(data, rules, settings, cannot):
    assert Policy.from_dict(data) == Policy(rules, settings, cannot)


def test_a_policy_survives_its_json_whole():
    policy = Policy(RULES, (("max_passages", 3), ("min_score", 0.5)), ("x was sent",))
    assert Policy.from_dict(policy.to_dict()) == policy


@pytest.mark.parametrize("low, high, cut", [
    (0.52, 0.47, 0.5),       # one place drops 0.47
    (0.52, 0.50, 0.52),      # one place (0.5) would keep 0.50: two places
    (0.524, 0.52, 0.524),    # two places (0.52) keep 0.52: three
    (0.5234, 0.5231, 0.5234),  # no three-place cut drops 0.5231: low itself
    (0.5234, 0.51, 0.52),      # two places
    (0.52345, 0.5229, 0.523),  # three places, not four
    (0.3, 0.29, 0.3),        # 0.3 * 10 is 2.9999999999999996: the 1e-9 keeps it 0.3
    (0.8, None, 0.8),
])
def test_the_roundest_cut_between_two_scores(low, high, cut):
    assert roundest(low, high) == cut


# --- which rule left a passage out -------------------------------------------------------------------------

def _sent(cands, **config):
    trace = build(cands, "alpha bravo", Config(**config))
    return trace, of_build(trace)


def _why(policy_rules, cands, cid, **config):
    trace, sent = _sent(cands, **config)
    found = reason_for(Policy(tuple(policy_rules)), trace, cid, sent)
    return None if found is None else found.kind


FLOOR = Rule("threshold", 0.5, "", "likely")


@pytest.mark.parametrize("score, kind", [(0.49, "threshold"), (0.5, None), (None, None)])
def test_a_floor_explains_only_a_score_under_it(score, kind):
    cands = (Candidate("a", "alpha one.", 0.9), Candidate("b", "bravo two.", score))
    assert _why([FLOOR], cands, "b", max_passages=1) == kind


def test_one_chunk_per_document_explains_a_chunk_of_a_sent_document_only():
    cands = (Candidate("d1", "alpha one.", 0.9, doc_id="d"), Candidate("d2", "bravo two.", 0.8, doc_id="d"),
             Candidate("e1", "bravo three.", 0.7, doc_id="e"), Candidate("n", "bravo four.", 0.6))
    rule = [Rule("per_document", True, "", "likely")]
    assert [_why(rule, cands, cid, max_passages=1) for cid in ("d2", "e1", "n")] == ["per_document", None, None]


def test_a_dedup_rule_explains_a_copy_of_a_sent_passage_when_the_pipeline_removes_copies():
    text = "alpha bravo charlie delta echo foxtrot golf hotel india juliet"
    cands = (Candidate("a", text, 0.9), Candidate("b", text + " kilo", 0.8))   # 10 of 11 words: 0.91
    kept_b = dict(near_dup=None, max_passages=1)
    assert _why([Rule("dedup", True, "", "likely")], cands, "b", **kept_b) == "dedup"
    assert _why([Rule("dedup", False, "", "likely")], cands, "b", **kept_b) is None
    other = (Candidate("a", text, 0.9), Candidate("b", "kilo lima mike november", 0.8))
    assert _why([Rule("dedup", True, "", "likely")], other, "b", **kept_b) is None


def test_a_budget_rule_explains_the_passage_its_evidence_names_last():
    cands = (Candidate("a", "alpha one.", 0.9), Candidate("b", "bravo two.", 0.8))
    rule = [Rule("budget", 450, "evidence about 450 tokens; b (120 tokens) did not fit", "likely")]
    assert _why(rule, cands, "b", max_passages=1) == "budget"
    assert _why(rule, cands, "a", max_passages=1) is None   # "b (" names b, not a
    other = [Rule("budget", 450, "b (120 tokens) did not fit; a (3 tokens) did", "likely")]
    assert _why(other, cands, "b", max_passages=1) is None  # only what follows the first "; " names the one skipped
    bare = [Rule("budget", 450, "b (120 tokens) did not fit", "likely")]  # a stored rule's words, without a "; "
    assert _why(bare, cands, "b", max_passages=1) == "budget"


def test_a_budget_rule_names_a_passage_whose_id_holds_a_semicolon():
    cands = (Candidate("a", "alpha one.", 0.9), Candidate("faq; part 2", "bravo two.", 0.8))
    rule = [Rule("budget", 450, "the sent evidence took 3 tokens; faq; part 2 (3 tokens) out-scored a sent passage",
                 "likely")]
    assert _why(rule, cands, "faq; part 2", max_passages=1) == "budget"


PASSAGES = [Rule("passages", 1, "", "likely")]


@pytest.mark.parametrize("scores, kind", [
    ((0.9, 0.8), "passages"),    # after the sent one by score (and by place)
    ((0.8, 0.8), "passages"),    # a tie in score: still not before it
    ((0.8, None), "passages"),   # unscored: after it by place
])
def test_a_top_k_explains_a_passage_after_every_sent_one(scores, kind):
    cands = (Candidate("a", "alpha one.", scores[0]), Candidate("b", "bravo two.", scores[1]))
    assert _why(PASSAGES, cands, "b", max_passages=1) == kind


def test_a_top_k_does_not_explain_a_passage_first_on_both_counts():
    """b scores higher and comes first in the retrieval order, yet a was sent: no top-k cut b."""
    cands = (Candidate("b", "bravo two.", 0.9), Candidate("a", "alpha one.", 0.8))
    trace, _ = _sent(cands, max_passages=1)
    sent = dataclasses.replace(of_build(build(cands[1:], "alpha bravo", Config())), not_sent=("b",))
    assert reason_for(Policy(tuple(PASSAGES)), trace, "b", sent) is None


def test_a_top_k_explains_a_higher_scored_passage_retrieved_after_every_sent_one():
    cands = (Candidate("a", "alpha one.", 0.8), Candidate("b", "bravo two.", 0.9))
    trace = build(cands, "alpha bravo", Config())
    sent = dataclasses.replace(of_build(build(cands[:1], "alpha bravo", Config())), not_sent=("b",))
    assert reason_for(Policy(tuple(PASSAGES)), trace, "b", sent).kind == "passages"


@pytest.mark.parametrize("b_score, kind", [
    (0.8, "passages"),   # retrieved before a, but scored under it: a top-k by score cut it
    (0.9, "passages"),   # a tie: a top-k by score may keep either
    (0.95, None),        # first on both counts: no top-k cut it
])
def test_a_top_k_explains_a_passage_retrieved_first_only_when_it_scored_no_higher(b_score, kind):
    cands = (Candidate("b", "bravo two.", b_score), Candidate("a", "alpha one.", 0.9))
    trace = build(cands, "alpha bravo", Config())
    sent = dataclasses.replace(of_build(build(cands[1:], "alpha bravo", Config())), not_sent=("b",))
    found = reason_for(Policy(tuple(PASSAGES)), trace, "b", sent)
    assert (None if found is None else found.kind) == kind


def test_the_first_rule_that_applies_is_named_in_the_order_floor_document_copies_budget_top_k():
    cands = (Candidate("a", "alpha one.", 0.9, doc_id="d"), Candidate("b", "bravo two.", 0.4, doc_id="d"))
    rules = [Rule("passages", 1, "", "likely"), Rule("per_document", True, "", "likely"), FLOOR]
    assert _why(rules, cands, "b", max_passages=1) == "threshold"
    assert _why(rules[:2], cands, "b", max_passages=1) == "per_document"


# --- the policy attached to a trace and reported by inspect ----------------------------------------------------

THRESHOLD_RUN = ROOT / "tests" / "fixtures" / "causes" / "threshold_oi_nested.json"


def test_inspect_reports_the_policy_and_its_lines_for_a_logged_run_and_nothing_otherwise():
    loaded = load(THRESHOLD_RUN)
    got = report(loaded)
    assert sorted(got) == ["policy", "policy_lines"]
    assert got["policy_lines"][:2] == ["Your pipeline appears to:",
                                       "  - send the top 3 passages (sent 3 of the 5 passages retrieved) [certain]"]
    assert Policy.from_dict(got["policy"]).rule("threshold").value == 0.5
    assert report(build((Candidate("a", "alpha one.", 0.9),), "alpha", Config())) == {}


def test_a_policy_is_attached_once_to_a_logged_trace_with_a_prompt():
    trace = load(THRESHOLD_RUN).build()
    assert trace.logged.policy is None
    attached = attach(trace)
    assert Policy.from_dict(attached.logged.policy).rule("passages").value == 3
    assert attach(attached) is attached                                            # already there: as it is
    stored = dataclasses.replace(trace, logged=dataclasses.replace(trace.logged, policy={"rules": []}))
    assert attach(stored) is stored                                                # a stored one is kept
    no_prompt = dataclasses.replace(trace, logged=Logged("openinference"))
    assert attach(no_prompt) is no_prompt
    plain = build((Candidate("a", "alpha one.", 0.9),), "alpha", Config())
    assert attach(plain) is plain


def _words(n, start=0):
    return " ".join(f"w{i}" for i in range(start, start + n))


@pytest.mark.parametrize("text, other, copy", [
    (_words(10), _words(8), ("o", 0.8)),          # 8 of 10 words: sizes and similarity both exactly at 0.8
    (_words(10), _words(9, 1), ("o", 0.9)),      # w1..w9: 9 shared of the 10 in all
    (_words(10), _words(7), None),                # 7 of 10: sizes too unequal to be a copy
    (_words(10), _words(10, 2), None),            # 8 shared of 12 in all: 0.67
])
def test_a_copy_of_a_sent_passage_at_the_edges_of_the_copy_check(text, other, copy):
    got = _copy_of(Candidate("c", text), [Candidate("o", other)])
    assert (None if got is None else (got[0], round(got[1], 4))) == copy


def test_a_passage_too_unequal_in_size_does_not_stop_the_search_for_a_copy():
    short, copy = Candidate("s", _words(3)), Candidate("o", _words(10))
    assert _copy_of(Candidate("c", _words(10)), [short, copy]) == ("o", 1.0)


def test_a_stored_policy_is_read_not_inferred_again():
    trace = load(THRESHOLD_RUN).build()
    stored = {"rules": [{"kind": "passages", "value": 9, "evidence": "stored", "confidence": "stated"}]}
    with_stored = dataclasses.replace(trace, logged=dataclasses.replace(trace.logged, policy=stored))
    assert of(with_stored) == Policy((Rule("passages", 9, "stored", "stated"),))
    assert of(trace) == infer(trace) and of(trace).rule("passages").value == 3
    assert of(build((Candidate("a", "alpha one.", 0.9),), "alpha", Config())) == Policy()


def test_the_policy_is_inferred_from_the_sent_context_given():
    """Told that only the first passage was sent, the pipeline appears to send the top 1 of the 5 retrieved."""
    trace = load(THRESHOLD_RUN).build()
    sent = of_trace(trace, trace.logged.prompt_text)
    one = dataclasses.replace(sent, passages=sent.passages[:1],
                              not_sent=tuple(p.id for p in sent.passages[1:]) + sent.not_sent)
    assert of(trace, sent).rule("passages").value == 3
    assert of(trace, one).rule("passages").value == 1
