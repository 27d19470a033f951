"""How the diagnosis puts its findings together, held by hand-valued tests (issue #29): copies that filled a
reranker's slots come before its cut, a prompt over the window is one cause and not two, an answer nothing
supports ends the search, the progress a caller is told, and what the diagnosis reports besides its findings."""

from __future__ import annotations

import dataclasses

import pytest

from ctxcore import Candidate, Config, build
from ctxcore.analysis import diagnosis as dg
from ctxcore.analysis.findings import MAX_PROOFS, Ctx, Finding
from ctxcore.analysis.policy import Policy, of
from ctxcore.analysis.sent import of_build, of_trace
from ctxcore.records import Logged

CROWD = Finding("duplicates_crowd_out", 3, "copies", "", ids=("x", "c1", "c2"))
REWORDED = Finding("paraphrased_duplicates", 3, "rewordings", "", ids=("x", "p1", "p2"))
CUT_X = Finding("reranker_cut", 3, "the reranker cut x", "", ids=("x",))
CUT_Y = Finding("reranker_cut", 3, "the reranker cut y", "", ids=("y",))
CUT_C1 = Finding("reranker_cut", 3, "the reranker cut c1", "", ids=("c1",))
BURIED = Finding("buried_in_middle", 3, "r buried", "", ids=("r",))


def _note(f: Finding) -> Finding:
    return Finding(f.kind, 1, f.title, f.evidence, ids=f.ids, role="note")


@pytest.mark.parametrize("causes, first, notes", [
    # the copies crowded x out of the reranker's slots: they come first, and its cut of x is their note
    ([CUT_X, CROWD, BURIED], [CROWD, BURIED], [_note(CUT_X)]),
    ([CUT_X, REWORDED], [REWORDED], [_note(CUT_X)]),
    # a cut of a passage the copies did not crowd out stays a cause of its own, in its place
    ([CUT_Y, CROWD, BURIED], [CUT_Y, CROWD, BURIED], []),
    # a cut of one of the copies themselves is theirs too
    ([CUT_C1, CROWD], [CROWD], [_note(CUT_C1)]),
    # no copies: nothing to reorder
    ([CUT_X, BURIED], [CUT_X, BURIED], []),
    # copies and a cut without ids (a reranker that named nothing): left as they are
    ([Finding("reranker_cut", 3, "cut", ""), CROWD], [Finding("reranker_cut", 3, "cut", ""), CROWD], []),
])
def test_copies_that_filled_a_steps_slots_come_before_its_cut(causes, first, notes):
    assert dg._copies_filled_the_step(causes) == (first, notes)


# --- what a caller is told, and what the diagnosis reports besides its findings -------------------------------

Q = "How long does a refund take?"
R = "Refunds take five business days to reach your original payment method after approval."
S = "Store credit is issued instantly and arrives in your account as soon as the return is scanned."
COPY = "Our returns desk is open Monday to Friday from nine to five for refund questions about orders."
X = "A refund takes longer for bank transfers: allow up to ten business days for the refund to arrive."
TWO = (Candidate("r", R, 0.95), Candidate("c1", COPY, 0.8), Candidate("c2", COPY, 0.8), Candidate("c3", COPY, 0.8),
       Candidate("x", X, 0.7), Candidate("s", S, 0.4))
TEXT = {c.id: c.text for c in TWO}
SENT = "\n\n".join(f"[{i}] {TEXT[k]}" for i, k in enumerate(["c1", "c2", "r", "c3", "s"], 1)) + f"\n\nQuestion: {Q}"


def _logged(cands, prompt, config=Config(budget=2000)):
    return dataclasses.replace(build(cands, Q, config), logged=Logged("openinference", prompt_text=prompt))


def test_a_caller_is_told_each_rerun_between_reading_the_prompt_and_done():
    """Copies crowd x out and r is buried: six re-runs prove the two fixes on the pipeline's policy; the caller
    hears the first step, each re-run by its settings, and the end, counted against MAX_PROOFS + 2 steps."""
    calls = []
    d = dg.diagnose(_logged(TWO, SENT), progress=lambda *step: calls.append(step))
    total = MAX_PROOFS + 2
    assert (MAX_PROOFS, d.proofs, d.unproved) == (5, 6, 0)
    assert calls == [(0, total, "reading the sent prompt"),
                     (1, total, "re-running your pipeline with near_dup 0.8"),
                     (2, total, "re-running your pipeline with near_dup 0.8"),
                     (3, total, "re-running your pipeline with near_dup 0.8, budget 168"),
                     (4, total, "re-running your pipeline with order rank"),
                     (5, total, "re-running your pipeline with no change"),
                     (6, total, "re-running your pipeline with budget 168"),
                     (7, total, "done")]


def test_each_fix_goes_on_the_pipelines_own_settings_which_the_diagnosis_reports():
    trace = _logged(TWO, SENT)
    d = dg.diagnose(trace)
    assert d.policy == of(trace) and dict(d.policy.settings) == {"budget": 88, "max_passages": 5, "near_dup": None}
    assert [(f.kind, f.severity, f.fix, f.base, f.resolved) for f in d.causes] == [
        ("duplicates_crowd_out", 3, {"near_dup": 0.8, "budget": 168}, dict(d.policy.settings), True),
        ("buried_in_middle", 2, {"order": "rank"}, dict(d.policy.settings), True)]
    assert d.root.fix_said == ("remove copies of a passage before sending, and give the evidence about 168 tokens "
                               "(ctxcore: near_dup 0.8, budget 168)")


TIERS = ("card", "bank transfer", "store credit", "gift card", "cash", "cheque", "voucher", "paypal", "crypto", "loan",
         "layaway", "split pay")
TWELVE = tuple(Candidate(f"k{i}", f"A refund to {t} takes {i + 2} business days after the return is approved.",
                         round(0.95 - 0.03 * i, 2)) for i, t in enumerate(TIERS))


def test_with_no_cause_the_diagnosis_still_reports_its_reruns_the_passages_it_only_counted_and_the_policy():
    """A top-2 pipeline sent k0 and k1 of twelve like passages: none held anything the answer lacked, so there is
    no cause; k2 is proved left out by the top-2 (one re-run), k3 to k7 are listed, and four more only counted."""
    trace = _logged(TWELVE, build(TWELVE[:2], Q, Config(order="original")).prompt.text, Config())
    d = dg.diagnose(trace)
    assert d.root is None and (d.proofs, d.unproved) == (1, 4)
    assert [(f.kind, f.ids) for f in d.findings] == [("not_sent", ("k2",))] + [
        ("missing_from_logged_prompt", (f"k{i}",)) for i in range(3, 8)]
    assert d.policy == of(trace) and dict(d.policy.settings) == {"max_passages": 2, "order": "original"}


# --- nothing about the question --------------------------------------------------------------------------------

WQ = "Which warranty period covers electronics online?"
FILLERS = (Candidate("f0", "Parking is free for customers on weekends at the rear of the main building.", 0.33),
           Candidate("f1", "The cafe on the ground floor serves soup and sandwiches until three.", 0.32),
           Candidate("f2", "Lifts to every floor are beside the main entrance and the stairs.", 0.31),
           Candidate("d#2", "Then a second coat can go on once the first one feels dry to the touch.", 0.3, doc_id="d",
                     chunk_index=2),
           Candidate("g", "Gift wrapping is offered at the front desk during December.", 0.29),
           Candidate("d#1", "Blue paint dries in about an hour on a warm and sunny afternoon outside.", 0.25,
                     doc_id="d", chunk_index=1))


def test_an_answer_nothing_supports_ends_the_search_while_nothing_relevant_does_not():
    """Nothing retrieved shares a word with the question; the paint document was sent in two pieces, out of
    order. With no answer, that is a second cause; an answer the passages do not support is the whole story."""
    trace = build(FILLERS, WQ, Config(order="rank"))
    assert [(f.kind, f.severity, f.ids) for f in dg.diagnose(trace).findings] == [
        ("nothing_relevant", 3, ("f0", "f1", "f2")), ("fragmented_document", 2, ("d#1", "d#2"))]
    answered = dg.diagnose(trace, answer="The warranty period for electronics bought online is two years.")
    assert [(f.kind, f.role) for f in answered.findings] == [("unsupported_answer", "cause"),
                                                             ("answer_uncited", "note")]


def test_with_nothing_relevant_retrieved_the_strongest_passage_is_not_also_called_buried():
    """'best' has the top score and sits at 3 of 6, where the burial check finds it; but it shares no word with the
    question (the warranty passages share one of seven, 14%, under 20%), so where it sat is beside the point."""
    q = "Which warranty period covers electronics bought online in Europe?"
    cands = (Candidate("w1", "The warranty card is kept in the lid of the box.", 0.2),
             Candidate("w2", "A warranty sticker sits on the back of the unit.", 0.21),
             Candidate("best", FILLERS[0].text, 0.34),
             Candidate("w3", "Ask at the desk for a copy of the warranty leaflet.", 0.22), FILLERS[1], FILLERS[2])
    trace = build(cands, q, Config(order="original"))
    assert [(f.kind, f.ids) for f in dg._buried(_ctx(trace))] == [("buried_in_middle", ("best",))]
    assert [(f.kind, f.ids) for f in dg.diagnose(trace).findings] == [("nothing_relevant", ("w3", "w2", "w1"))]


def _ctx(trace):
    return Ctx(trace, of_build(trace), (), "", None, None, Policy())


# --- a prompt over the window is one cause, not two -----------------------------------------------------------

RQ = "How do I reset the router password?"
TOPICS = ("admin page", "factory reset", "mobile app", "support line", "label sticker", "web portal")
SIX = tuple(Candidate(f"p{i}", f"To reset the router password use the {t}: it takes {i + 2} minutes and needs the "
                               f"serial number.", round(0.9 - i * 0.05, 2)) for i, t in enumerate(TOPICS))
Z = Candidate("z", "To reset the router password hold the reset button for ten seconds, then use the default "
                   "password on the label.", 0.95)
SIX_SENT = build(SIX, RQ, Config(order="rank")).prompt.text
NO_QUESTION = SIX_SENT[:SIX_SENT.rindex("Question")]
MID_P5 = SIX_SENT[:SIX_SENT.index("serial number", SIX_SENT.index("web portal"))]


@pytest.mark.parametrize("prompt, limit, causes", [
    # within what the model reads, a prompt that ends before its question, or inside p5, is cut off
    (NO_QUESTION, None, [("prompt_cut_off", 3, ("p5",), "The question was missing from the prompt that was sent")]),
    (MID_P5, None, [("prompt_cut_off", 3, ("p5",), "The prompt was cut off in the middle of p5: only 84%")]),
    # past a limit of 100 tokens the missing question is the same tail as the prompt over the window: one cause
    (NO_QUESTION, 100, [("prompt_over_window", 3, ("p1",), "The prompt that was sent was longer than the model "
                                                           "could read: 285 tokens")]),
    # ... but a passage cut in the middle is a second thing that went wrong, and stays a cause
    (MID_P5, 100, [("prompt_over_window", 3, ("p1",), "The prompt that was sent was longer than the model could "
                                                      "read: 224 tokens"),
                   ("prompt_cut_off", 2, ("p5",), "The prompt was cut off in the middle of p5: only 84%")]),
])
def test_a_prompt_over_the_window_and_cut_off(prompt, limit, causes):
    d = dg.diagnose(build((Z,) + SIX, RQ, Config(order="rank")), logged_prompt=prompt, limit=limit)
    assert [(f.kind, f.severity, f.ids) for f in d.causes] == [c[:3] for c in causes]
    assert all(f.title.startswith(c[3]) for f, c in zip(d.causes, causes))
    # z, the strongest passage, was never sent, but held nothing the others lacked: a note, after the causes
    assert [(f.kind, f.severity, f.role) for f in d.findings[len(causes):]] == [("not_sent", 1, "note")]


# --- the prompt over the window, every field ----------------------------------------------------------------------

SEVEN = SIX + (Candidate("p6", "To reset the router password use the help desk: it takes 8 minutes and needs the "
                                "serial number.", 0.6),)


def _over(cands, limit, config=Config(order="rank"), prompt=None):
    trace = build(cands, RQ, config)
    sent = of_build(trace) if prompt is None else of_trace(trace, prompt)
    return dg._over_window(Ctx(trace, sent, (), "", limit, None, Policy()))


def test_a_prompt_over_the_window_fixed_by_keeping_less_room_for_the_answer():
    """The pipeline sent all six passages (295 tokens) to a 1,000-token window keeping 800 for the answer: 200 fit.
    Keeping 600 (the room the prompt leaves, in hundreds: 950 - 295 = 655) lets p3, the strongest past token 200,
    be read: the re-run keeps it as [S4]."""
    [f] = _over(SIX, None, Config(window=1000, max_output=800, order="rank"), SIX_SENT)
    assert (f.kind, f.severity, f.ids, f.fix, f.fix_verified) == ("prompt_over_window", 3, ("p3",),
                                                                  {"max_output": 600}, True)
    assert f.evidence == ("3 passages lie past token 200 (the window minus the room kept for the answer): p3, p4, "
                          "p5")
    assert f.proof == ("re-running your pipeline with it keeps the passage; re-run with it, p3 is in the prompt as "
                       "[S4], position 4 of 6")
    assert f.after == {"id": "p3", "fate": "kept", "label": "S4", "position": 4, "of": 6}
    assert f.fix_said == ("reserve fewer tokens for the answer, 600 instead of 800, so the prompt fits the window "
                          "(ctxcore: max_output 600)")


def test_a_prompt_over_a_window_too_small_for_the_passage_says_no_rerun_kept_it():
    [f] = _over(SIX, None, Config(window=300, max_output=100, order="rank"), SIX_SENT)
    assert (f.severity, f.ids, f.fix, f.fix_verified, f.after, f.proof) == (
        3, ("p3",), {"window": 300, "budget": 168}, False, None, "no re-run tried kept it")


@pytest.mark.parametrize("cands, limit, ids, past", [
    (SIX, 295, None, None),                       # the prompt is 295 tokens: at the limit, nothing is past it
    (SIX, 294, ("p5",), "1 passage lies past token 294"),   # the question is past it: the last passage is named
    (SIX, 280, ("p5",), "1 passage lies past token 280"),
    (SIX, 30, ("p0",), "6 passages lie past token 30 (the window minus the room kept for the answer): p0, p1, p2, "
                       "p3, p4, p5"),
    (SEVEN, 30, ("p0",), "7 passages lie past token 30 (the window minus the room kept for the answer): p0, p1, p2, "
                         "p3, p4, p5…"),
])
def test_the_passages_past_the_limit(cands, limit, ids, past):
    found = _over(cands, limit)
    assert [f.ids for f in found] == ([] if ids is None else [ids])
    assert all(f.evidence.startswith(past) for f in found)


def test_of_passages_past_the_limit_that_score_the_same_the_earliest_is_named():
    tied = SIX[:3] + tuple(Candidate(c.id, c.text, 0.7) for c in SIX[3:])
    [f] = _over(tied, 120, Config(order="original"))
    assert f.ids == ("p3",) and f.evidence.endswith(": p3, p4, p5")
