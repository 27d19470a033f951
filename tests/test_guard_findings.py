"""The context every cause detector reads (``ctxcore.analysis.findings.Ctx``), held by hand-valued tables
(issue #29): which passage the answer lacked, at both edges of "about the question"; which fix ``reach``
returns and whether it is verified, at both edges of the re-run allowance; the budget ``grow`` adds, to the
token; and a finding as the JSON the CLI prints.

The scenario: the question asks for four content words (alpha, bravo, charlie, delta); ``s1`` is sent and
holds alpha; ``x`` holds bravo and charlie and is dropped by a 30-token docs budget (26 text tokens);
``y`` holds delta and is dropped too.
"""

from __future__ import annotations

import dataclasses

import pytest

from ctxcore import Candidate, Config, build
from ctxcore.analysis.answer import Check
from ctxcore.analysis.findings import MAX_PROOFS, RELEVANT, Ctx, Finding, landing, setting_said, with_budget
from ctxcore.analysis.notes import QUOTE, _quote, answer_notes, cut_notes, missing_notes, reranker_said
from ctxcore.analysis.policy import Policy
from ctxcore.analysis.sent import content_words, of_build, reconstruct
from ctxcore.records import Logged

QUERY = "alpha bravo charlie delta"
S1 = Candidate("s1", "alpha kilo lima mike november.", 0.9)
X = Candidate("x", "bravo charlie zulu yankee oscar papa quebec romeo sierra tango uniform victor whiskey.", 0.8)
Y = Candidate("y", "delta xray.", 0.3)


def _ctx(*extra: Candidate, budget: int = 30, proofs: int = 0) -> Ctx:
    trace = build((S1, X, Y) + extra, QUERY, Config(budget=budget))
    ctx = Ctx(trace, of_build(trace), (), "", None, None, Policy())
    ctx.proofs = proofs
    return ctx


def test_the_scenario_is_as_the_tables_assume():
    t = build((S1, X, Y), QUERY, Config(budget=30))
    assert [(d.id, d.fate) for d in t.decisions] == [("s1", "kept"), ("x", "over_budget"), ("y", "over_budget")]
    assert (t.budget.docs, t.candidates[1].tokens, t.decision("x").tokens) == (30, 26, None)
    assert content_words(QUERY) == {"alpha", "bravo", "charli", "delta"}


def test_adds_is_the_question_words_a_passage_holds_that_nothing_sent_does():
    ctx = _ctx()
    assert ctx.adds("x") == {"bravo", "charli"}  # not zulu (not asked), not alpha (sent)
    assert ctx.adds("y") == {"delta"}
    assert ctx.adds("s1") == frozenset()
    assert ctx.findable == {"bravo", "charli", "delta"}


@pytest.mark.parametrize("text, needed", [
    ("bravo charlie and more words here", True),        # two words nothing sent holds
    ("delta, alone of the question's words", False),   # one word, and not all that is findable
    ("alpha again, which was already sent", False),    # about the question (1 of 4), adds nothing
    ("nothing about it at all", False),
])
def test_needed_asks_for_two_new_words_or_all_that_could_be_found(text, needed):
    ctx = _ctx(Candidate("z", text, 0.1))
    assert ctx.needed("z") is needed


def test_one_new_word_is_needed_when_it_is_all_that_could_be_found():
    """Without y, delta is in no retrieved passage: a passage adding bravo alone adds all that was findable
    once charlie is sent too."""
    trace = build((Candidate("s1", "alpha charlie kilo.", 0.9), Candidate("b", "bravo only here.", 0.5)), QUERY,
                  Config(budget=25))
    ctx = Ctx(trace, of_build(trace), (), "", None, None, Policy())
    assert [d.fate for d in trace.decisions] == ["kept", "over_budget"]
    assert (ctx.adds("b"), ctx.findable) == ({"bravo"}, {"bravo"})
    assert ctx.needed("b") is True


@pytest.mark.parametrize("words, about", [(1, True), (0, False)])
def test_about_the_question_at_its_edge(words, about):
    """1 of 4 question words is exactly RELEVANT (0.25): about it. The passage also adds two new words, so
    only the share decides; with 0 of 4 it adds none."""
    assert RELEVANT == 0.25
    held = " ".join(["bravo", "charlie"][:words * 2]) if words else "zulu"
    ctx = _ctx(Candidate("z", f"{held} yankee.", 0.1))
    assert ctx.needed("z") is about


def test_a_passage_of_a_fifth_of_the_question_is_not_about_it():
    """Five question words, the passage holds one (0.2 < 0.25) though that word is all that is findable."""
    q = "alpha bravo charlie delta echo"
    s = Candidate("s1", "alpha charlie delta echo kilo.", 0.9)
    trace = build((s, Candidate("b", "bravo only here.", 0.5)), q, Config(budget=25))
    ctx = Ctx(trace, of_build(trace), (), "", None, None, Policy())
    assert [d.fate for d in trace.decisions] == ["kept", "over_budget"]
    assert (ctx.adds("b"), ctx.findable) == ({"bravo"}, {"bravo"})
    assert ctx.needed("b") is False


# --- reach and grow ------------------------------------------------------------------------------------------

ROOMY = {"budget": 120}     # x kept
TIGHT = {"budget": 40}      # x still over the budget
ORDER = {"order": "rank"}   # changes the order only: x still over the budget


def test_reach_returns_the_first_fix_that_keeps_the_passage_with_where_it_lands():
    ctx = _ctx()
    assert ctx.reach("x", [ROOMY]) == (ROOMY, True, {"id": "x", "fate": "kept", "label": "S3", "position": 3,
                                                     "of": 3})
    assert ctx.proofs == 1


def test_reach_grows_the_first_fix_that_only_missed_the_budget_by_the_passages_cost_plus_60():
    ctx = _ctx()
    fix, verified, found = ctx.reach("x", [ORDER, TIGHT])
    # the first over-budget fix (ORDER), grown to the 30-token docs budget + 26 text tokens + 60
    assert (fix, verified, found) == ({"order": "rank", "budget": 116}, True,
                                      {"id": "x", "fate": "kept", "label": "S2", "position": 2, "of": 3})
    assert ctx.proofs == 4  # ORDER, TIGHT, ORDER again in grow, and the grown fix


def test_grow_says_unverified_when_the_passage_is_still_dropped():
    """w (scored above x, 36 words) fits the grown budget first and leaves x no room."""
    ctx = _ctx(Candidate("w", "bravo charlie " * 18, 0.85))
    assert ctx.grow("x", {"order": "rank"}) == ({"order": "rank", "budget": 116}, False, None)


@pytest.mark.parametrize("window, expected", [
    (200, ({"window": 200, "max_output": 80}, False, None)),  # safe input 114 < 30 + 26 + 60: refused, as it was
    (203, ({"window": 203, "max_output": 80, "budget": 116}, False, None)),  # 116 = 116: tried (the final count
    #                                                                          then drops x)
    (240, ({"window": 240, "max_output": 80, "budget": 116}, True,
           {"id": "x", "fate": "kept", "label": "S2", "position": 2, "of": 2})),
])
def test_grow_refuses_a_budget_past_the_safe_input_and_tries_one_at_it(window, expected):
    ctx = _ctx()
    assert ctx.case.run(window=window, max_output=80).budget.safe_input == {200: 114, 203: 116, 240: 152}[window]
    assert ctx.grow("x", {"window": window, "max_output": 80}) == expected


@pytest.mark.parametrize("before, expected_fix, verified", [
    (MAX_PROOFS + 1, ROOMY, True),      # one re-run left: used
    (MAX_PROOFS + 2, ROOMY, False),     # none left: the first try is returned unproved
    (MAX_PROOFS - 2, ROOMY, True),
])
def test_reach_stops_at_the_re_run_allowance(before, expected_fix, verified):
    ctx = _ctx(proofs=before)
    fix, ok, found = ctx.reach("x", [ROOMY])
    assert (fix, ok) == (expected_fix, verified)
    assert ctx.proofs == before + (1 if verified else 0)


@pytest.mark.parametrize("before, grown", [(MAX_PROOFS, True), (MAX_PROOFS + 1, False)])
def test_reach_grows_only_while_a_re_run_is_left(before, grown):
    """After the loop's one re-run the count is before + 1: grow runs while it is under MAX_PROOFS + 2."""
    ctx = _ctx(proofs=before)
    fix, ok, found = ctx.reach("x", [ORDER])
    if grown:
        assert (fix, ok, found["position"]) == ({"order": "rank", "budget": 116}, True, 2)
    else:
        assert (fix, ok, found) == (ORDER, False, None)


def test_reach_at_an_edge_never_grows_and_returns_the_first_try():
    ctx = _ctx()
    assert ctx.reach("x", [ORDER, TIGHT], edge=True) == (ORDER, False, None)
    assert ctx.proofs == 2


def test_reach_grows_the_over_budget_fix_not_an_earlier_one_that_dropped_it_otherwise():
    """The first try drops x below a score threshold; the second only misses the budget: that one grows."""
    ctx = _ctx()
    fix, ok, found = ctx.reach("x", [{"min_score": 0.85}, ORDER])
    assert (fix, ok) == ({"order": "rank", "budget": 116}, True)


def test_reach_with_nothing_that_keeps_or_nearly_keeps_returns_the_first_try_unproved():
    ctx = _ctx()
    tries = [{"min_score": 0.85}, {"min_score": 0.95}]
    assert ctx.reach("x", tries) == (tries[0], False, None)
    assert ctx.reach("x", []) == (None, False, None)


def test_a_finding_as_json_lists_its_ids_and_consequences():
    f = Finding("dropped_by_budget", 3, "x was left out", "26 tokens", fix={"budget": 116}, ids=("x", "s1"),
                folded=("y was left out too",))
    assert f.to_dict() == {
        "kind": "dropped_by_budget", "severity": 3, "title": "x was left out", "evidence": "26 tokens",
        "fix": {"budget": 116}, "fix_verified": False, "ids": ["x", "s1"], "role": "cause",
        "folded": ["y was left out too"], "proof": "", "after": None, "resolved": False, "fix_said": "",
        "base": {},
    }


# --- the notes ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("text, quoted", [
    ("a  short\n sentence", '"a short sentence"'),                  # whitespace runs become one space
    ("x" * QUOTE, '"' + "x" * QUOTE + '"'),                        # exactly QUOTE characters: whole
    ("x" * (QUOTE + 1), '"' + "x" * QUOTE + '…"'),                 # one more: cut, with an ellipsis
    ("word " * 20, '"' + ("word " * 12)[:QUOTE] + '…"'),
])
def test_an_uncited_sentence_is_quoted_whole_up_to_sixty_characters(text, quoted):
    assert QUOTE == 60
    assert _quote(text) == quoted


def test_uncited_sentences_are_folded_into_one_note_quoting_each():
    one = Check("Refunds take  five days.", "citation", "uncited", "", ids=())
    two = Check("Card refunds take ten.", "citation", "uncited", "", ids=("c1",))
    bad = Check("[S9]", "citation", "unknown_label", detail="no [S9] in the prompt", ids=())
    ok = Check("[S1]", "citation", "ok", "", ids=("c1",))
    assert [(f.kind, f.title, f.ids) for f in answer_notes([one])] == [
        ("answer_uncited", 'The answer\'s sentence "Refunds take five days." cites no passage.', ())]
    notes = answer_notes([ok, one, bad, two])
    assert [(f.kind, f.severity, f.role, f.ids) for f in notes] == [
        ("answer_unknown_label", 1, "note", ()), ("answer_uncited", 1, "note", ("c1",))]
    assert notes[0].title == "the answer cites [S9], which is not a label in the prompt"
    assert notes[1].title == ('2 sentences of the answer cite no passage: "Refunds take five days."; '
                              '"Card refunds take ten.".')


@pytest.mark.parametrize("reranker, said", [
    (None, "the reranker"), ({}, "the reranker"), ({"model": "bge"}, "the reranker"),
    ({"span": "rerank-7", "model": "bge"}, "the reranker (rerank-7)"),
])
def test_the_reranker_is_named_by_its_span_when_the_log_has_one(reranker, said):
    trace = build((S1,), QUERY, Config())
    logged = Logged("openinference", prompt_text="p", reranker=reranker)
    assert reranker_said(dataclasses.replace(trace, logged=logged)) == said


def test_grow_counts_an_empty_passage_by_its_label_alone_and_says_a_whole_number_of_tokens():
    """An empty text counts 0 tokens and its dropped decision none: the budget grows by the 60-token margin."""
    trace = build((Candidate("a", "alpha bravo", 0.9), Candidate("e", "", 0.5)), "alpha", Config(budget=15))
    ctx = Ctx(trace, of_build(trace), (), "", None, None, Policy())
    assert (trace.candidates[1].tokens, trace.decision("e").fate, trace.decision("e").tokens) == (0, "over_budget",
                                                                                                 None)
    fix, ok, found = ctx.grow("e", {"order": "rank"})
    assert repr(fix) == "{'order': 'rank', 'budget': 75}" and ok is True and found["id"] == "e"


@pytest.mark.parametrize("found, said", [
    (None, ""),
    ({}, ""),
    ({"id": "x", "fate": "over_budget", "label": None, "position": None, "of": 2}, ""),
    ({"id": "x", "fate": "kept", "label": "S2", "position": 2, "of": 3},
     "; re-run with it, x is in the prompt as [S2], position 2 of 3"),
])
def test_where_a_fixed_passage_lands_is_said_only_when_it_is_kept(found, said):
    assert landing(found) == said


@pytest.mark.parametrize("said, fix, out", [
    ("cap the history (ctxcore: history_share 0.2, budget 502)", {"history_share": 0.2, "budget": 502},
     "cap the history, and give the evidence about 502 tokens (ctxcore: history_share 0.2, budget 502)"),
    ("send more (ctxcore: max_passages 6, budget 1500)", {"max_passages": 6, "budget": 1500},
     "send more, and give the evidence about 1,500 tokens (ctxcore: max_passages 6, budget 1500)"),
    # the first "(ctxcore:" splits: a said that names two keeps the second in its tail
    ("a (ctxcore: x) or b (ctxcore: budget 9)", {"budget": 9},
     "a, and give the evidence about 9 tokens (ctxcore: x) or b (ctxcore: budget 9)"),
    # nothing to add: no fix, no budget in it, no ctxcore part to put it before, or the tokens already said
    ("cap the history (ctxcore: history_share 0.2)", None, "cap the history (ctxcore: history_share 0.2)"),
    ("cap the history (ctxcore: history_share 0.2)", {}, "cap the history (ctxcore: history_share 0.2)"),
    ("cap the history (ctxcore: history_share 0.2)", {"history_share": 0.2},
     "cap the history (ctxcore: history_share 0.2)"),
    ("raise the budget", {"budget": 502}, "raise the budget"),
    ("give it 502 tokens (ctxcore: budget 502)", {"budget": 502}, "give it 502 tokens (ctxcore: budget 502)"),
])
def test_a_fix_that_needed_a_budget_says_how_much_evidence_room(said, fix, out):
    assert with_budget(said, fix) == out


# --- the notes of the passages left out or cut, and of the answer's checks ------------------------------------

NOTE_CANDS = (Candidate("s1", "alpha kilo lima mike.", 0.9), Candidate("x", "bravo charlie zulu.", 0.8),
              Candidate("y", "delta yankee " * 30, 0.7), Candidate("z", "kilo november.", 0.6),
              Candidate("r", "charlie romeo.", 0.5))
NOTE_PROMPT = "[1] alpha kilo lima mike.\n\nQuestion: alpha bravo charlie delta"


def _noted(cands=NOTE_CANDS, prompt=NOTE_PROMPT):
    trace = build(cands, QUERY, Config(budget=60))
    logged = Logged("openinference", prompt_text=prompt, reranker={"span": "rr"}, reranked=("s1", "x", "y", "z"),
                    reranker_cut=("r",))
    trace = dataclasses.replace(trace, logged=logged)
    return Ctx(trace, reconstruct(trace, prompt), (), "", None, None, Policy())


def test_the_strongest_passages_left_out_are_noted_with_what_the_replay_does_with_them():
    ctx = _noted()
    assert ctx.sent.not_sent == ("x", "y", "z", "r")
    reason = {d.id: d.reason for d in ctx.trace.decisions}
    notes, more = missing_notes(ctx, set())
    assert [(f.kind, f.severity, f.role, f.ids, f.title, f.evidence) for f in notes] == [
        ("missing_from_logged_prompt", 1, "note", ("x",), "x was retrieved but never sent",
         "the replay keeps it as [S3]; the prompt as sent does not contain it"),
        ("missing_from_logged_prompt", 1, "note", ("y",), "y was retrieved but never sent",
         f"the replay drops it too: {reason['y']}; the prompt as sent does not contain it"),
        ("cut_by_reranker", 1, "note", ("r",), "r was cut by the reranker (rr) before context construction",
         f"the reranker kept 4 passages (s1, x, y, z); the replay drops it too: {reason['r']}"),
    ]  # z holds no question word: not noted, but counted among the rest
    assert more == 1
    assert [f.ids for f in missing_notes(ctx, {"y"})[0]] == [("x",), ("r",)] and missing_notes(ctx, {"y"})[1] == 1


def test_at_most_five_passages_left_out_are_noted_the_strongest_first():
    extra = tuple(Candidate(f"w{i}", f"bravo whiskey {i}.", 0.4 - i / 100) for i in range(4))
    ctx = _noted(NOTE_CANDS + extra)
    notes, more = missing_notes(ctx, set())
    assert [f.ids[0] for f in notes] == ["x", "y", "r", "w0", "w1"]
    assert more == len(ctx.sent.not_sent) - 5 == 3


def test_a_passage_cut_part_way_in_the_sent_prompt_is_noted_with_its_share():
    x = Candidate("x", "bravo charlie zulu yankee oscar papa quebec romeo sierra tango.", 0.8)
    ctx = _noted((NOTE_CANDS[0], x), "[1] alpha kilo lima mike.\n[2] bravo charlie zulu yankee oscar papa quebec"
                                     "\n\nQuestion: q")
    [p] = [p for p in ctx.sent.passages if p.id == "x"]
    assert p.cut and p.share == 0.698  # 44 of its 63 characters
    [f] = cut_notes(ctx, set())
    assert (f.kind, f.severity, f.role, f.ids, f.title, f.evidence) == (
        "cut_in_logged_prompt", 1, "note", ("x",), "x reached the prompt only in part",
        "70% of its text is in what was sent: it was cut off")
    assert cut_notes(ctx, {"x"}) == []


def test_a_bad_answer_check_is_a_note_with_its_detail_and_ids():
    bad = Check("[S9]", "citation", "unknown_label", "no [S9] in the prompt", ids=("c9",))
    uncited = Check("Refunds take five days.", "citation", "uncited", "", ids=("c1",))
    notes = answer_notes([bad, uncited])
    assert [(f.kind, f.evidence, f.ids) for f in notes] == [
        ("answer_unknown_label", "no [S9] in the prompt", ("c9",)),
        ("answer_uncited", "a claim without a citation cannot be checked against what was sent", ("c1",))]


def test_every_passage_left_out_noted_leaves_none_to_count():
    ctx = _noted(NOTE_CANDS[:2])
    notes, more = missing_notes(ctx, set())
    assert [f.ids for f in notes] == [("x",)] and more == 0


def test_a_reranker_that_kept_many_lists_eight():
    trace = build(NOTE_CANDS, QUERY, Config(budget=60))
    kept = tuple(f"k{i}" for i in range(10))
    logged = Logged("openinference", prompt_text=NOTE_PROMPT, reranked=kept, reranker_cut=("r",))
    trace = dataclasses.replace(trace, logged=logged)
    ctx = Ctx(trace, reconstruct(trace, NOTE_PROMPT), (), "", None, None, Policy())
    [cut] = [f for f in missing_notes(ctx, set())[0] if f.kind == "cut_by_reranker"]
    assert cut.title == "r was cut by the reranker before context construction"
    assert cut.evidence.startswith("the reranker kept 10 passages (k0, k1, k2, k3, k4, k5, k6, k7); ")


def test_each_re_run_is_reported_as_progress_in_the_pipelines_words():
    calls = []
    trace = build((S1, X, Y), QUERY, Config(budget=30))
    ctx = Ctx(trace, of_build(trace), (), "", None, lambda *a: calls.append(a), Policy())
    assert ctx.run({"budget": 40}).config.budget == 40
    ctx.run({})
    assert calls == [(1, MAX_PROOFS + 2, "re-running your pipeline with budget 40"),
                     (2, MAX_PROOFS + 2, "re-running your pipeline with no change")]


@pytest.mark.parametrize("fix, said", [
    (None, ""), ({}, ""),
    ({"merge_adjacent": True, "prefer_newest": False, "near_dup": None}, "merge_adjacent on, prefer_newest off, "
                                                                         "near_dup off"),
    ({"min_score": 0.45, "safety": 1e-07, "max_passages": 3, "order": "rank"},
     "min_score 0.45, safety 1e-07, max_passages 3, order rank"),
    ({"history_share": 0.2, "budget": 1500}, "history_share 0.2, budget 1500"),
])
def test_a_setting_change_in_the_settings_pages_words(fix, said):
    assert setting_said(fix) == said
