"""The small parts of the diagnosis (``ctxcore.analysis.diagnosis``) held by hand-valued tables (issue #29): the
fixes for a prompt over the window at both edges of "fewer tokens for the answer", the fixes for a pipeline rule
(the score floor rounded down to the hundredth, the passage count one up), what each fix says, which notes a root
cause explains, and how a version is named."""

from __future__ import annotations

import dataclasses

import pytest

from ctxcore import Candidate, Config, build
from ctxcore.analysis.diagnosis import _SWALLOWS, _explains, _rule_fixes, _rule_said, _version, _whole, \
    _window_fixes, _window_said
from ctxcore.analysis.findings import Ctx, Finding
from ctxcore.analysis.policy import Policy, Rule
from ctxcore.analysis.sent import of_build

QUERY = "How long do card refunds take?"
CANDS = (Candidate("a", "Card refunds take five business days.", 0.9),
         Candidate("b", "Refunds need the original receipt.", 0.4567),
         Candidate("c", "Refunds to a card can take longer at weekends.", 0.29),
         Candidate("d", "Card refunds take five days. The office is closed on public holidays and weekends in most "
                        "regions.", 0.2))


def _ctx(limit=None, prompt_tokens=None, **settings) -> Ctx:
    trace = build(CANDS, QUERY, Config(**settings))
    sent = of_build(trace)
    if prompt_tokens is not None:
        sent = dataclasses.replace(sent, prompt_tokens=prompt_tokens)
    return Ctx(trace, sent, (), "", limit, None, Policy())


@pytest.mark.parametrize("c, named", [
    (Candidate("x", "t", date="2025-01-02", version="v3"), "2025-01-02"),
    (Candidate("x", "t", version="v3"), "v3"),
    (Candidate("x", "t"), "?"),
])
def test_a_version_is_named_by_its_date_then_its_version(c, named):
    assert _version(c) == named


# 8192 * 0.95 = 7782.4 tokens of input; the room left for the answer is rounded down to the hundred.
@pytest.mark.parametrize("sent_tokens, first", [
    (7000, {"max_output": 700}),
    (6700, {"max_output": 1000}),   # 1082.4 -> 1000: still under the 1,024 reserved
    (6682, None),                   # 1100.4 -> 1100: not fewer than the 1,024 reserved
    (7682, {"max_output": 100}),    # 100.4 -> 100
    (7683, None),                   # 99.4 -> 0: no room at all
    (7782, None),
])
def test_fewer_tokens_for_the_answer_only_when_that_leaves_some_and_less_than_reserved(sent_tokens, first):
    ctx = _ctx(limit=6000, prompt_tokens=sent_tokens)
    window = {"window": 6000 + 1024}
    assert _window_fixes(ctx) == ([first] if first else []) + [window]


@pytest.mark.parametrize("max_output, first", [(1000, None), (1001, {"max_output": 1000})])
def test_fewer_tokens_for_the_answer_only_when_fewer_than_reserved(max_output, first):
    """8,192 x 0.95 = 7,782.4 tokens of input; a prompt of 6,700 leaves room for 1,000 (rounded down to 100s):
    no fewer than the 1,000 reserved, but fewer than 1,001."""
    ctx = _ctx(limit=6000, prompt_tokens=6700, max_output=max_output)
    assert _window_fixes(ctx) == ([first] if first else []) + [{"window": 6000 + max_output}]


def test_a_pipeline_without_a_copy_check_also_gets_one_with_the_window():
    ctx = _ctx(limit=4000, prompt_tokens=9000, near_dup=None, window=16000, max_output=2000)
    assert _window_fixes(ctx) == [{"window": 6000}, {"window": 6000, "near_dup": 0.8}]


def test_what_a_window_fix_says():
    ctx = _ctx()
    assert _window_said(None, ctx) == "" and _window_said({}, ctx) == ""
    assert _window_said({"max_output": 700}, ctx) == (
        "reserve fewer tokens for the answer, 700 instead of 1,024, so the prompt fits the window "
        "(ctxcore: max_output 700)")
    assert _window_said({"window": 16384, "near_dup": 0.8}, ctx) == (
        "count the prompt against the model's 16,384-token window before sending, leaving out passages that do "
        "not fit (ctxcore: window 16384, near_dup 0.8)")


THRESHOLD = Rule("threshold", 0.5, "nothing under 0.50 was sent", "likely")
PASSAGES = Rule("passages", 2, "2 of 3 were sent", "likely")


@pytest.mark.parametrize("rule, cid, max_passages, fixes", [
    (None, "b", None, []),
    (THRESHOLD, "b", None, [{"min_score": 0.45}]),               # 0.4567 rounded down
    (THRESHOLD, "c", None, [{"min_score": 0.29}]),               # 0.29 * 100 is 28.999...: not 0.28
    (THRESHOLD, "b", 2, [{"min_score": 0.45}, {"min_score": 0.45, "max_passages": 3}]),
    (PASSAGES, "b", 2, [{"max_passages": 3}]),
    (PASSAGES, "b", None, []),
    (Rule("order", "rank", "", "likely"), "b", 2, []),
])
def test_the_fixes_for_the_rule_that_left_a_passage_out(rule, cid, max_passages, fixes):
    assert _rule_fixes(_ctx(max_passages=max_passages), rule, cid) == fixes


def test_an_unscored_passage_has_no_score_floor_to_lower():
    trace = build((Candidate("u", "Card refunds take five days."),), QUERY, Config())
    ctx = Ctx(trace, of_build(trace), (), "", None, None, Policy())
    assert _rule_fixes(ctx, THRESHOLD, "u") == []


@pytest.mark.parametrize("fix, said", [
    (None, ""),
    ({}, ""),
    ({"min_score": 0.45}, "lower the minimum relevance score from 0.50 to 0.45 (ctxcore: min_score 0.45)"),
    ({"min_score": 0.45, "max_passages": 3},
     "lower the minimum relevance score from 0.50 to 0.45 and send 3 passages (ctxcore: min_score 0.45, "
     "max_passages 3)"),
    ({"budget": 1500}, "give the evidence more room, about 1,500 tokens (ctxcore: budget 1500)"),
    ({"max_passages": 3}, "send 3 passages instead of 2 (ctxcore: max_passages 3)"),
    ({"order": "rank"}, "change your pipeline's settings (ctxcore: order rank)"),
])
def test_what_a_rule_fix_says(fix, said):
    assert _rule_said(THRESHOLD, fix, _ctx(max_passages=2)) == said


def _f(kind, *ids):
    return Finding(kind, 3, "", "", ids=ids)


@pytest.mark.parametrize("root, note, explained", [
    (_f("threshold_cut", "x"), _f("missing_from_logged_prompt", "x"), True),      # the same passage
    (_f("threshold_cut", "x"), _f("missing_from_logged_prompt", "y"), False),
    (_f("prompt_cut_off", "x"), _f("missing_from_logged_prompt", "y"), True),     # a cause that swallows the rest
    (_f("history_crowding", "x"), _f("cut_by_reranker", "y"), True),
    (_f("duplicates_crowd_out", "x"), _f("not_sent", "y"), True),
    (_f("duplicates_crowd_out", "x"), _f("cut_in_logged_prompt", "y"), False),   # not a note it swallows
])
def test_which_notes_a_root_cause_explains(root, note, explained):
    assert _explains(root, note) is explained


def test_the_causes_that_swallow_the_passages_left_out():
    assert _SWALLOWS == ("prompt_cut_off", "prompt_over_window", "duplicates_crowd_out", "paraphrased_duplicates",
                         "history_crowding")


@pytest.mark.parametrize("settings, cid, whole", [
    ({}, "a", True),
    ({"max_passages": 1}, "b", False),                      # dropped
    ({"compress": True, "max_chunk_tokens": 10}, "d", False),  # kept, but cut to its first sentence
])
def test_whole_means_kept_and_not_cut(settings, cid, whole):
    ctx = _ctx(**settings)
    if not whole and settings.get("compress"):
        d = ctx.run({}).decision(cid)
        assert d.fate == "kept" and d.compressed
    assert _whole(ctx, cid) is whole
