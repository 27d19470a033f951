"""A fix is "verified" exactly when a build with that fix applied does what the fix claims.

For every candidate a trace did not keep (and every kept one explain suggests moving), the fix that
``explain`` proposes is applied by this test with a fresh ``build`` - not through explain's own
helpers - and ``fix_verified`` must match the outcome. The same for every finding's fix. Inputs: every
sample scenario under several settings, every fixture file and logged trace, a few generated cases,
and hand-made cases for the paths the samples never reach (a freeing fix that does not free, a
budget fallback that finds no budget).
"""

from __future__ import annotations

import functools
import glob
import os
import random

import pytest

from ctxcore import Candidate, Config, Inputs, build, get_tokenizer, load
from ctxcore.analysis.explain import explain, findings

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SAMPLES = sorted(glob.glob(os.path.join(ROOT, "sample_data", "*.json")))
# files that are not a trace to build on their own: broken on purpose, documentation, ids without texts, bare spans
NOT_ALONE = ("bad.json", "no_text.csv", "no_retriever.json", "README.md", "otlp_genai.json", "expected.json",
             "bare_openinference_llm.json", "bare_genai_chat.json", "make.py")
FIXTURES = sorted(p for p in glob.glob(os.path.join(ROOT, "tests", "fixtures", "*.*")) + glob.glob(
    os.path.join(ROOT, "tests", "fixtures", "traces", "*.*")) if not p.endswith(NOT_ALONE))
# settings that make the samples show every kind of loss: the file's own, the naive preset's switches,
# a tighter budget, and a threshold
VARIANTS = [{}, {"prefer_newest": False, "near_dup": None}, {"budget": 150}, {"min_score": 0.6},
            {"order": "original"}]


def rebuild(trace, fix):
    return build(trace.candidates, trace.query, trace.config.replace(**fix), trace.inputs)


def achieved(trace, cid, fix) -> bool:
    """What explain's fix claims, checked with a build of this test's own: a dropped candidate is
    kept; a kept one in the weak middle moves to the first or last position."""
    after = rebuild(trace, fix)
    d = after.decision(cid)
    if trace.decision(cid).fate != "kept":
        return d.fate == "kept"
    return d.fate == "kept" and d.position in (1, len(after.kept()))


def check_explanations(trace, explanations=None) -> int:
    checked = 0
    for d in trace.decisions:
        e = explanations[d.id] if explanations else explain(trace, d.id)
        if e.fix is None:
            assert not e.fix_verified, (d.id, e)
            continue
        assert e.fix_verified == achieved(trace, d.id, e.fix), (d.id, d.fate, e.fix, e.fix_verified)
        checked += 1
    return checked


def check_findings(trace) -> int:
    kept = {d.id for d in trace.decisions if d.fate == "kept"}
    checked = 0
    for f in findings(trace):
        if f.fix is None:
            assert not f.fix_verified, f
            continue
        after = rebuild(trace, f.fix)
        now_kept = {d.id for d in after.decisions if d.fate == "kept"}
        if f.kind in ("dropped_for_budget", "newest_version_dropped", "buried_in_middle"):
            ok = achieved(trace, f.ids[0], f.fix)
        elif f.kind in ("duplicates_in_prompt", "stale_version_kept"):
            ok = not (set(f.ids) & now_kept)  # the repeats, or the old versions, leave the prompt
        elif f.kind == "history_crowding":
            lost = {d.id for d in trace.decisions if d.fate == "over_budget"}
            ok = bool(lost & now_kept)  # some passage dropped for budget comes back
            assert set(f.ids) == lost & now_kept
        else:
            raise AssertionError(f"a finding kind this test does not know how to check: {f.kind}")
        assert f.fix_verified == ok, (f.kind, f.fix, f.fix_verified, ok, sorted(kept), sorted(now_kept))
        checked += 1
    return checked


CASES = [(os.path.basename(path), extra) for path in SAMPLES for extra in VARIANTS]


@functools.lru_cache(maxsize=None)
def _sample(name: str, extra: tuple):
    loaded = load(os.path.join(ROOT, "sample_data", name))
    trace = loaded.build(loaded.settings(**dict(extra)))
    return trace, {d.id: explain(trace, d.id) for d in trace.decisions}


@pytest.mark.slow
@pytest.mark.parametrize("name,extra", CASES, ids=[f"{n}{e or ''}" for n, e in CASES])
def test_every_sample_fix_is_verified_exactly_when_a_rebuild_keeps_it(name, extra):
    trace, explanations = _sample(name, tuple(extra.items()))
    check_explanations(trace, explanations)
    check_findings(trace)


def test_the_samples_exercise_verified_and_unverified_fixes():
    """Guard against a vacuous pass: the runs above include both outcomes."""
    outcomes = set()
    for name, extra in CASES:
        trace, explanations = _sample(name, tuple(extra.items()))
        outcomes |= {e.fix_verified for e in explanations.values() if e.fix is not None and e.fate != "kept"}
    assert outcomes == {True, False}


@pytest.mark.parametrize("path", FIXTURES, ids=os.path.basename)
def test_every_fixture_fix_is_verified_exactly_when_a_rebuild_keeps_it(path):
    loaded = load(path)
    for extra in ({}, {"budget": 60}):
        trace = loaded.build(loaded.settings(**extra))
        check_explanations(trace)
        check_findings(trace)


WORDS = "refund refunds five days business approval team lead shipping free warranty order policy".split()


def _generated(seed: int):
    rnd = random.Random(seed)
    cands = []
    for i in range(rnd.randint(3, 9)):
        text = " ".join(rnd.choice(WORDS) for _ in range(rnd.randint(4, 60)))
        if cands and rnd.random() < 0.3:  # a near copy of an earlier one
            text = cands[-1].text + " " + rnd.choice(WORDS)
        cands.append(Candidate(f"g{i}", text, rnd.choice([0.3, 0.5, 0.6, 0.8, 0.9]),
                               doc_id=rnd.choice([None, "p"]), version=rnd.choice([None, "v1", "v2"])))
    config = Config(budget=rnd.choice([40, 80, 160]), prefer_newest=rnd.random() < 0.5,
                    near_dup=rnd.choice([None, 0.8]), min_score=rnd.choice([None, 0.55]),
                    max_chunk_tokens=rnd.choice([None, None, 40]), order=rnd.choice(["rank", "original"]))
    history = tuple({"role": "user", "content": " ".join(rnd.choice(WORDS) for _ in range(30))}
                    for _ in range(rnd.randint(0, 3)))
    return build(cands, "how long do refunds take?", config, Inputs(history=history))


@pytest.mark.parametrize("seed", range(12))
def test_generated_fixes_are_verified_exactly_when_a_rebuild_keeps_them(seed):
    trace = _generated(seed)
    check_explanations(trace)
    check_findings(trace)


# ---------------------------------------------------------------------------------------------
# the paths no sample takes, by hand
# ---------------------------------------------------------------------------------------------

def _words(n: int, word: str) -> str:
    return " ".join([word] * n)


def test_a_freeing_setting_that_frees_nothing_is_not_offered():
    # nothing here is a duplicate or a version, so neither prefer_newest nor near-dedup frees any
    # budget: the only honest fix for b is a bigger budget
    cands = [Candidate("a", _words(40, "alpha"), 0.9), Candidate("b", _words(40, "beta"), 0.8)]
    t = build(cands, "q", Config(budget=60, label_overhead=0, prefer_newest=False, near_dup=None))
    assert t.decision("b").fate == "over_budget"
    e = explain(t, "b")
    assert e.fix == {"budget": 80} and e.fix_verified  # 40 + 40 text tokens, no label overhead
    assert rebuild(t, {"prefer_newest": True}).decision("b").fate == "over_budget"
    assert rebuild(t, {"near_dup": 0.8}).decision("b").fate == "over_budget"


def test_a_freeing_setting_is_offered_when_it_frees_the_room():
    # a2 is a with one word more (10 of 11 words shared: similarity 0.909); a and a2 fill the budget,
    # so b is dropped. Near-dedup at 0.8 drops a2 and leaves room for b
    tok = get_tokenizer("cl100k_base")
    a_text = "refunds are processed within five business days to the original card"
    cands = [Candidate("a", a_text, 0.9), Candidate("a2", a_text + " today", 0.85),
             Candidate("b", "return shipping is free for damaged items", 0.8)]
    a, a2, b = (tok.count(c.text) for c in cands)
    budget = a + a2  # a and a2 fill it exactly; b is shorter than a2, so a and b fit once a2 is gone
    assert b <= a2
    t = build(cands, "q", Config(budget=budget, label_overhead=0, near_dup=None))
    assert [d.fate for d in t.decisions] == ["kept", "kept", "over_budget"]
    e = explain(t, "b")
    assert e.fix == {"near_dup": 0.8} and e.fix_verified
    assert rebuild(t, e.fix).decision("b").fate == "kept"


def test_a_fix_whose_budget_fallback_finds_no_budget_is_not_verified():
    # "low" is under the threshold; lowering the threshold lets it through, but at 50 tokens it is over
    # the 30-token per-chunk cap and compression is off: no docs budget keeps it
    cands = [Candidate("a", _words(10, "alpha"), 0.9), Candidate("low", _words(50, "beta"), 0.2)]
    t = build(cands, "q", Config(budget=400, min_score=0.5, max_chunk_tokens=30))
    assert t.decision("low").fate == "below_threshold"
    e = explain(t, "low")
    assert e.fix == {"min_score": 0.2}
    assert e.fix_verified is False
    assert rebuild(t, e.fix).decision("low").fate == "over_budget"
    check_explanations(t)


def test_a_fix_whose_budget_fallback_finds_a_budget_is_verified_with_that_budget():
    # below the threshold and, once let through, over a 40-token docs budget with "a" kept: the fix
    # lowers the threshold and raises the budget to 10 + 50 text tokens with no label overhead
    cands = [Candidate("a", _words(10, "alpha"), 0.9), Candidate("low", _words(50, "beta"), 0.2)]
    t = build(cands, "q", Config(budget=40, min_score=0.5, label_overhead=0))
    e = explain(t, "low")
    assert e.fix == {"min_score": 0.2, "budget": 60} and e.fix_verified
    assert rebuild(t, {"min_score": 0.2, "budget": 59}).decision("low").fate == "over_budget"


def test_a_stale_fix_blocked_by_the_window_is_not_verified():
    # the old version comes back with prefer_newest off, but the 100-word chunk can never fit the
    # prompt of a 300-token window (the final count drops it whatever the docs budget)
    # one passage (chunk 0) in two versions: unrelated texts are versions only where a place pairs them
    cands = [Candidate("new", "Refunds take five days.", 0.5, doc_id="p", chunk_index=0, version="v2"),
             Candidate("old", _words(300, "beta"), 0.9, doc_id="p", chunk_index=0, version="v1")]
    t = build(cands, "q", Config(window=300, max_output=0))
    assert t.decision("old").fate == "stale"
    e = explain(t, "old")
    assert e.fix is not None and e.fix["prefer_newest"] is False
    assert e.fix_verified is False
    check_explanations(t)


# ---------------------------------------------------------------------------------------------
# the diagnosis of the sent prompt: every cause's fix, by a fresh rebuild
# ---------------------------------------------------------------------------------------------

def cause_achieved(trace, f) -> bool:
    """What a diagnosis cause's fix claims, checked with a build of this test's own."""
    from ctxcore.analysis.diagnosis import KINDS

    assert f.kind in KINDS or f.kind.startswith(("answer_", "missing_", "cut_")), f.kind
    after = rebuild(trace, {**f.base, **f.fix})  # the logged pipeline's policy plus the fix
    d = after.decision(f.ids[0])
    if f.kind == "per_document_cap":
        return after.decision(f.ids[1]).fate == "kept" and d.merged_into == f.ids[1]
    if f.kind == "buried_in_middle":
        return d.fate == "kept" and d.position in (1, len(after.kept()))
    if f.kind == "outdated_version_sent":
        return after.decision(f.ids[1]).fate == "kept" and d.fate != "kept"
    if f.kind in ("unsupported_answer", "nothing_relevant"):
        return after.abstain
    if f.kind == "fragmented_document":
        return d.fate == "kept" and all(after.decision(i).merged_into == f.ids[0] for i in f.ids[1:])
    return d.fate == "kept"


DIAGNOSED = [os.path.join(ROOT, "sample_data", n) for n in sorted(os.listdir(os.path.join(ROOT, "sample_data")))
             if n.endswith(".json")] + sorted(glob.glob(os.path.join(ROOT, "tests", "fixtures", "traces", "*.*")) +
                                              glob.glob(os.path.join(ROOT, "tests", "fixtures", "diagnose", "*.js*")) +
                                              glob.glob(os.path.join(ROOT, "tests", "fixtures", "causes", "*.js*")))
DIAGNOSED = [p for p in DIAGNOSED if not p.endswith(NOT_ALONE)]


@pytest.mark.parametrize("path", DIAGNOSED, ids=os.path.basename)
def test_every_diagnosis_fix_is_verified_exactly_when_a_rebuild_does_it(path):
    from ctxcore.analysis.diagnosis import diagnose

    loaded = load(path)
    naive = (loaded.extra.get("scenario") or {}).get("naive_config")
    trace = loaded.build(loaded.settings(**naive) if naive else loaded.settings())
    dx = diagnose(trace, logged_prompt=loaded.logged.prompt_text if loaded.logged else None,
                  answer=loaded.logged.answer if loaded.logged else None)
    for f in dx.findings:
        if f.fix is None:
            assert not f.fix_verified, f
        elif f.role == "cause" or f.kind == "not_sent":
            assert f.fix_verified == cause_achieved(trace, f), (f.kind, f.fix, f.fix_verified)
