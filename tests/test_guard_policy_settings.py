"""The pipeline's rules as ctxcore settings, held by hand-valued tables (issue #29): which rule becomes which
setting, what the replay says it cannot do (word for word: the CLI and the pages print these lines), and the
limits a log states, at both edges of what is accepted."""

from __future__ import annotations

import dataclasses
import math

import pytest

from ctxcore import Candidate, Config, build
from ctxcore.analysis.policy import Rule, _number, _stated, infer, order_rule, settings_of, truncation_rule
from ctxcore.analysis.sent import of_trace
from ctxcore.io.loaded import Loaded
from ctxcore.records import Inputs, Logged



def _order_other():
    return order_rule(["c", "a", "b"], ["a", "b", "c"], ["a", "b", "c"])


@pytest.mark.parametrize("stated, settings", [
    ({"context_window": 1}, {"window": 1}),                 # the smallest window a log can state
    ({"context_window": 0}, {}),                            # no window at all: not a limit, left out
    ({"context_window": True}, {}),                         # a flag, not a number of tokens
    ({"context_window": 8192.0}, {}),                       # tokens are whole: a float is not read as one
    ({"max_output": 0}, {"max_output": 0}),                 # nothing kept for the answer is a real setting
    ({"max_output": 1}, {"max_output": 1}),
    ({"max_output": -1}, {}),
    ({"max_output": False}, {}),
    ({"context_window": 4096, "max_output": 512}, {"window": 4096, "max_output": 512}),
])
def test_the_limits_a_log_states(stated, settings):
    assert settings_of([], 5, stated) == (settings, [])


@pytest.mark.parametrize("value, retrieved, settings", [
    (4, 5, {"max_passages": 4}),
    (5, 5, {}),      # every passage retrieved was sent: no cap to set
    (6, 5, {}),      # a stated top-n larger than what came back caps nothing
])
def test_a_top_k_is_a_cap_only_below_what_was_retrieved(value, retrieved, settings):
    assert settings_of([Rule("passages", value, "", "certain")], retrieved, {}) == (settings, [])


def test_an_order_no_ctxcore_order_gives_is_said_with_the_ranks_it_was_sent_in():
    rule = _order_other()
    assert rule.evidence == "the sent passages are retrieval ranks 3 1 2: neither retrieval nor score order"
    assert settings_of([rule], 3, {}) == (
        {}, ["the order of the sent passages (3 1 2): none of ctxcore's orders puts them so"])


def test_a_passage_cut_part_way_is_something_the_replay_cannot_do():
    rule = truncation_rule([("kb#1", 2, 0.411)], 3)
    assert settings_of([rule], 3, {}) == (
        {}, ["a passage cut part-way (kb#1): ctxcore keeps or drops whole passages and compresses only at sentence "
             "ends"])


@pytest.mark.parametrize("confidence, cannot", [
    ("stated", ["the reranker's cut: ctxcore does not rerank; it selects from every retrieved candidate"]),
    ("certain", ["the reranker's cut: ctxcore does not rerank; it selects from every retrieved candidate"]),
    ("guess", []),   # a reranker that returned all it was given cut nothing the replay must reproduce
])
def test_a_rerankers_cut_is_named_unless_it_is_a_guess(confidence, cannot):
    assert settings_of([Rule("reranker", 3, "", confidence)], 5, {}) == ({}, cannot)


def test_every_rule_at_once_in_order():
    rules = [Rule("passages", 3, "", "certain"), Rule("threshold", 0.5, "", "likely"),
             Rule("per_document", True, "", "likely"),
             Rule("dedup", False, "s2 copies s1 (similarity 1.00)", "certain"), Rule("versions", True, "", "certain"),
             _order_other(), truncation_rule([("r3", 3, 0.5)], 3), Rule("reranker", 3, "", "certain")]
    settings, cannot = settings_of(rules, 6, {"context_window": 8192, "max_output": 256})
    assert settings == {"window": 8192, "max_output": 256, "max_passages": 3, "min_score": 0.5, "near_dup": None,
                        "prefer_newest": False}
    assert [line.split(":")[0] for line in cannot] == [
        "one chunk per document", "identical copies sent more than once", "the order of the sent passages (3 1 2)",
        "a passage cut part-way (r3)", "the reranker's cut"]


def test_copies_that_are_rewordings_turn_near_dedup_off_without_saying_exact_copies_were_sent():
    assert settings_of([Rule("dedup", False, "s2 rewords s1 (similarity 0.91)", "likely")], 3, {}) == (
        {"near_dup": None}, [])


@pytest.mark.parametrize("value, number", [
    (0.5, 0.5), (3, 3), (0, 0),
    (True, None), (False, None),             # JSON's true is not a score
    (math.inf, None), (math.nan, None), (-math.inf, None),
    ("0.5", None), (None, None), ([0.5], None),
])
def test_a_stated_number_is_a_finite_int_or_float(value, number):
    assert _number(value) == number if number is not None else _number(value) is None


@pytest.mark.parametrize("stated, read", [
    (None, {}), ({}, {}), ({"min_score": 0.4}, {"min_score": 0.4}),
    ([["min_score", 0.4]], {}), ("min_score=0.4", {}),   # a hand-edited trace file: states nothing
])
def test_the_stated_limits_of_a_log(stated, read):
    assert _stated(Logged("openinference", prompt_text="p", stated=stated)) == read


# --- the budget fitted to what was sent ------------------------------------------------------------------------

Q = "How do I reset the router password?"
THREE = tuple(Candidate(f"p{i}", t, round(0.9 - 0.1 * i, 2)) for i, t in enumerate((
    "To reset the router password hold the reset button for ten seconds and wait for the lights to blink twice "
    "before you log in again with the default admin credentials printed on the label.",
    "The admin page at 192.168.0.1 lets you change the router password once you are signed in with the current "
    "one; choose a long passphrase and save the settings before rebooting.",
    "If you forgot the router password and cannot reach the admin page, a factory reset restores the default "
    "password shown on the sticker under the device.")))


def _sent():
    """The logged pipeline sent all three, strongest first. Built in the test, never at import: a mutation
    worker forks after import, and the engine's threads do not survive a fork."""
    return build(THREE, Q, Config(order="rank"))


def _logged(config: Config, **stated):
    trace = build(THREE, Q, config)
    return dataclasses.replace(trace, logged=Logged("openinference", prompt_text=_sent().prompt.text,
                                                    stated=stated or None))


def test_the_three_passages_cost_what_the_tables_below_assume():
    assert [(d.id, d.fate, d.cost) for d in _sent().decisions] == [("p0", "kept", 48), ("p1", "kept", 53),
                                                                 ("p2", "kept", 41)]


def test_a_window_whose_split_leaves_less_room_than_was_sent_gets_a_budget_of_what_the_sent_passages_cost():
    """In a 350-token window with 100 kept for the answer, ctxcore's own split leaves 134 tokens for evidence and
    drops p2; the pipeline sent all three, 48 + 53 + 41 = 142 tokens: that is the budget, and with it the replay
    sends what was sent."""
    trace = _logged(Config(window=350, max_output=100, order="rank"))
    assert trace.budget.docs == 134 and trace.decision("p2").fate == "over_budget"
    policy = infer(trace)
    assert dict(policy.settings) == {"budget": 142, "max_output": 100, "order": "original", "window": 350}
    assert policy.cannot == ()


def test_a_window_too_small_for_what_was_sent_is_said_not_hidden():
    """In 340 tokens even the sent passages' own build keeps only p0 and p1 (101 tokens): the budget is theirs, and
    the replay says it drops p2."""
    policy = infer(_logged(Config(window=340, max_output=100, order="rank")))
    assert dict(policy.settings)["budget"] == 101
    assert policy.cannot == ("p2 was sent, but the replay drops it (over_budget)",)


def test_a_window_that_holds_what_was_sent_needs_no_budget():
    policy = infer(_logged(Config(window=360, max_output=100, order="rank")))
    assert dict(policy.settings) == {"max_output": 100, "order": "original", "window": 360}


@pytest.mark.parametrize("stated, settings", [
    # a window no larger than the room kept for the answer is a limit ctxcore refuses: both are left out
    ({"context_window": 500, "max_output": 800}, {"order": "original"}),
    ({"context_window": 500, "max_output": 500}, {"order": "original"}),
    ({"context_window": 2000, "max_output": 800}, {"max_output": 800, "order": "original", "window": 2000}),
])
def test_stated_limits_ctxcore_refuses_are_left_out(stated, settings):
    policy = infer(_logged(Config(order="rank"), **stated))
    assert dict(policy.settings) == settings and policy.cannot == ()


# --- the history's share of the window -------------------------------------------------------------------------

TURN = "We talked about the firewall settings and the port forwarding rules for the game console at length. "


def _with_history(repeats: int, sent_window: int = 2000):
    """A conversation of one long user turn; the logged pipeline gave the history 90% of a ``sent_window``-token
    window, the trace's own configuration is a 2,000-token window with the automatic split."""
    inputs = Inputs(history=({"role": "user", "content": TURN * repeats},
                             {"role": "assistant", "content": "Noted, the rules are saved."}))
    sent = build(THREE, Q, Config(window=sent_window, max_output=200, order="rank", history_share=0.9), inputs)
    trace = build(THREE, Q, Config(window=2000, max_output=200, order="rank"), inputs)
    return dataclasses.replace(trace, logged=Logged("openinference", prompt_text=sent.prompt.text))


@pytest.mark.parametrize("repeats, took, share", [
    # 1,607 tokens are left after the fixed blocks (safe input 1,710, fixed 103); the automatic split gives the
    # history at most 40% of them: a history over that is the pipeline's own share, rounded up to a hundredth
    (35, 639, None),    # 639 x 2000 / 2000 / 1607 = 0.398: within the automatic split
    (36, 657, 0.41),    # 0.329 x 2000 / 1607 = 0.4095
    (40, 729, 0.46),    # 0.364 x 2000 / 1607 = 0.4530
    (60, 1089, 0.68),   # 0.544 x 2000 / 1607 = 0.6770
])
def test_a_history_over_the_automatic_split_becomes_the_pipelines_history_share(repeats, took, share):
    trace = _with_history(repeats)
    assert (trace.budget.safe_input, trace.budget.fixed) == (1710, 103)
    policy = infer(trace)
    assert policy.rule("history").evidence == (f"the conversation history took {took} of the 2000-token window "
                                               f"({took / 2000:.0%})")
    assert dict(policy.settings).get("history_share") == share


def test_a_history_larger_than_the_whole_room_gets_all_of_it_and_the_replay_says_what_it_then_drops():
    """Sent from a 4,000-token window: 1,809 history tokens where the trace's window leaves 1,607 (a share of
    1.13, capped at the whole room), so the replay has no room for any passage and says so."""
    policy = infer(_with_history(100, sent_window=4000))
    assert policy.rule("history").value == 0.904
    assert dict(policy.settings)["history_share"] == 1.0
    assert policy.cannot == tuple(f"p{i} was sent, but the replay drops it (over_budget)" for i in range(3))


def test_a_loaded_run_has_its_history_and_fixed_blocks_counted_as_its_build_has():
    """A loaded run's policy is inferred before selection (no fates decided): its budget and history are still
    the run's own, so the history's share is read as it is from the whole build (0.46 for 40 turns' worth)."""
    trace = _with_history(40)
    loaded = Loaded(THREE, Q, Inputs(system="Answer from the evidence only.", history=trace.inputs.history),
                    config={"window": 2000, "max_output": 200, "order": "rank"}, logged=trace.logged)
    from_loaded, from_build = infer(loaded), infer(loaded.build())
    assert from_loaded == from_build and dict(from_loaded.settings)["history_share"] == 0.46
    assert from_loaded.rule("history").evidence == from_build.rule("history").evidence


def test_the_sent_context_a_trace_carries_is_read_once_not_again():
    """A trace whose log already carries its sent context (read when it was imported) is not read again: here the
    attached reading says only p0 was sent, and the policy follows it rather than the prompt text."""
    trace = _logged(Config(order="rank"))
    only_p0 = of_trace(trace, build(THREE[:1], Q, Config()).prompt.text)
    assert [p.id for p in only_p0.passages] == ["p0"] and only_p0.source == "logged"
    carried = dataclasses.replace(trace, logged=dataclasses.replace(trace.logged, sent=only_p0))
    assert infer(carried).rule("passages").value == 1 and infer(trace).rule("all_passages").value == 3
    replayed = dataclasses.replace(only_p0, source="replay")   # a replay's reading is not evidence: read the prompt
    assert infer(dataclasses.replace(trace, logged=dataclasses.replace(trace.logged, sent=replayed))) == infer(trace)


# --- what each rule is read from, end to end on a logged prompt ------------------------------------------------

A = "To reset the router password hold the reset button for ten seconds."
A2 = "To reset the router password hold the reset button for twelve seconds."   # word sets 9/11 alike: 0.818
B = "The admin page lets you change the router password once signed in."
D = "Then log in with the default credentials printed on the router label."
C = "A factory reset restores the default password shown on the sticker."


def _sent_only(cands, sent_ids, stated=None, cut=None, **config):
    """A trace of ``cands`` whose log holds the prompt a pipeline built from ``sent_ids`` alone, in their order,
    keeping near copies (and, with ``prefer_newest=False``, old versions); ``cut`` shortens that prompt."""
    sent = build(tuple(c for c in cands if c.id in sent_ids), Q, Config(order="original", near_dup=None, **config))
    text = sent.prompt.text if cut is None else cut(sent.prompt.text)
    return dataclasses.replace(build(cands, Q, Config()),
                               logged=Logged("openinference", prompt_text=text, stated=stated))


def _rules(trace) -> dict:
    return {r.kind: (r.value, r.evidence, r.confidence) for r in infer(trace).rules}


CHUNKS = (Candidate("a#1", A, 0.9, doc_id="a", chunk_index=1), Candidate("b#1", B, 0.8, doc_id="b", chunk_index=1),
          Candidate("a#2", D, 0.8, doc_id="a", chunk_index=2), Candidate("c#1", C, 0.7, doc_id="c", chunk_index=1))


@pytest.mark.parametrize("cands, sent_ids, tail, confidence", [
    # a#2 (0.8) out-scored the lowest sent passage (c#1, 0.7): only a one-chunk-per-document rule explains it
    (CHUNKS, ["a#1", "b#1", "c#1"], "not sent", "likely"),
    # a#2 scored the same as the lowest sent (b#1, 0.8): a top-2 explains it as well
    (CHUNKS, ["a#1", "b#1"], "not sent (they also scored lower)", "guess"),
    # a#2 has no score: it did not out-score anything
    (CHUNKS[:2] + (dataclasses.replace(CHUNKS[2], score=None),), ["a#1", "b#1"],
     "not sent (they also scored lower)", "guess"),
])
def test_one_chunk_per_document_is_likely_only_when_the_chunk_left_out_out_scored_a_sent_one(cands, sent_ids, tail,
                                                                                            confidence):
    n = len(sent_ids)
    assert _rules(_sent_only(cands, sent_ids))["per_document"] == (
        1, f"the {n} sent passages come from {n} different documents; a#2 shares a document with a sent one and "
           f"was {tail}", confidence)


COPIES = (Candidate("s1", A, 0.9), Candidate("s2", A2, 0.85), Candidate("s3", B, 0.8))


def test_a_near_copy_sent_and_one_held_back():
    assert _rules(_sent_only(COPIES, ["s1", "s2", "s3"]))["dedup"] == (
        False, "sent 1 copy of passages already sent: s2 repeats s1 (similarity 0.82)", "certain")
    assert _rules(_sent_only(COPIES, ["s1", "s3"]))["dedup"] == (
        True, "s2 repeats a sent passage and was not sent", "likely")


def test_a_copy_whose_similarity_a_trace_file_left_out_is_said_as_identical():
    trace = _sent_only(COPIES, ["s1", "s2", "s3"])
    sent = of_trace(trace, trace.logged.prompt_text)
    blank = dataclasses.replace(sent, passages=tuple(dataclasses.replace(p, similarity=None) for p in sent.passages))
    carried = dataclasses.replace(trace, logged=dataclasses.replace(trace.logged, sent=blank))
    assert _rules(carried)["dedup"][1] == "sent 1 copy of passages already sent: s2 repeats s1 (similarity 1.00)"


V1 = Candidate("v1", "The router password reset takes ten seconds of holding the button.", 0.9, doc_id="kb",
               version="1")
V2 = Candidate("v2", "The router password reset takes twenty seconds of holding the button.", 0.85, doc_id="kb",
               version="2")


@pytest.mark.parametrize("sent_ids, said", [(["v1", "v2", "s3"], "which was sent too"),
                                            (["v1", "s3"], "which was retrieved but not sent")])
def test_an_outdated_version_sent_with_or_without_the_newer(sent_ids, said):
    trace = _sent_only((V1, V2, COPIES[2]), sent_ids, prefer_newest=False)
    assert _rules(trace)["versions"] == (False, f"sent v1, an older version of v2, {said}", "certain")


def test_a_passage_cut_part_way_says_where_it_stood_among_those_sent():
    trace = _sent_only(COPIES, ["s1", "s3"], cut=lambda text: text[:text.index("router password once") + 15])
    assert _rules(trace)["truncation"] == ("s3", "s3, passage 2 of 2, was cut after 76% of its text", "certain")


@pytest.mark.parametrize("top_n, rule", [
    (2, ("passages", 2, "top_n 2 is stated in the span metadata; sent 2 of the 3 passages retrieved", "stated")),
    # a top_n that is not a whole number is not a statement: what was sent says it
    ("2", ("passages", 2, "sent 2 of the 3 passages retrieved", "certain")),
    (2.0, ("passages", 2, "sent 2 of the 3 passages retrieved", "certain")),
])
def test_a_stated_top_n(top_n, rule):
    kind, *said = rule
    assert _rules(_sent_only(COPIES, ["s1", "s3"], stated={"top_n": top_n}))[kind] == tuple(said)
