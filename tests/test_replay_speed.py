"""The replay's fast paths (#33) beside the definitions they speed up: findings without verification have the
same kinds, a policy inferred before selection is the one inferred from a build, a run's citations read off
its kept labels are the answer check's, the remembered sent context is the plain reading, and a run whose
context did not change needs no findings (its kinds are equal)."""

from __future__ import annotations

import glob
import os
import sys

import pytest

from ctxcore import load
from ctxcore.analysis import answer as answer_module
from ctxcore.analysis import explain as explain_module
from ctxcore.analysis import policy as policy_module
from ctxcore.analysis import sent as sent_module
from ctxcore.analysis.explain import findings
from ctxcore.io.formats import load_file
from ctxcore.pipeline import clear_caches, prepared
from ctxcore.replay.read import items, load_item
from ctxcore.replay.run import _cited_checked, _cited_own, _same_context, policy_settings

from conftest import ROOT, crowded_by_history

sys.path.insert(0, os.path.join(ROOT, "bench"))
import replaylog  # noqa: E402

SETTINGS = ({}, {"budget": 700}, {"budget": 1600}, {"max_passages": 3}, {"order": "rank"}, {"order": "sandwich"},
            {"near_dup": 0.95}, {"near_dup": None}, {"prefer_newest": False}, {"min_score": 0.5},
            {"select": "density"}, {"history_share": 0.1})
SAMPLES = sorted(glob.glob(os.path.join(ROOT, "sample_data", "0*.json")))


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Loaded runs: generated ctxcore traces (each a fifth citing its weakest passage), a Phoenix span export,
    the sample scenarios."""
    folder = tmp_path_factory.mktemp("speed")
    traces, spans = str(folder / "traces.jsonl"), str(folder / "spans.jsonl")
    replaylog.generate(traces, 16, seed=3, candidates=(12, 30), sentences=(1, 3))
    replaylog.generate_spans(spans, 12, seed=4, candidates=(12, 30), sentences=(1, 3))
    return [load_item(item)[0] for item in items([traces, spans])] + [load(p) for p in SAMPLES]


def _kinds(trace, **kw):
    return sorted({f.kind for f in findings(trace, **kw)})


def test_findings_without_verification_have_the_same_kinds_and_rebuild_nothing(runs, monkeypatch):
    built = []
    real = explain_module.build
    monkeypatch.setattr(explain_module, "build", lambda *a, **k: built.append(1) or real(*a, **k))
    compared = 0
    for loaded in runs:
        for new in SETTINGS[:6]:
            trace = loaded.build(loaded.settings(**new))
            verified = _kinds(trace)
            before = len(built)
            assert _kinds(trace, verify=False) == verified
            assert len(built) == before  # not one re-build
            compared += bool(verified)
    assert compared >= 10


def test_findings_without_verification_offer_no_fix_and_say_the_same(runs):
    """A fix is offered only once a re-build has found and proved it: unverified findings carry none."""
    fixed = set()
    for loaded in runs:
        for new in SETTINGS:
            trace = loaded.build(loaded.settings(**new))
            verified, quick = findings(trace), findings(trace, verify=False)
            assert [(f.fix, f.fix_verified) for f in quick] == [(None, False)] * len(quick)
            assert [(f.kind, f.title, f.evidence) for f in quick] == [(f.kind, f.title, f.evidence) for f in verified]
            fixed |= {f.kind for f in verified if f.fix is not None}
    # the verified side did offer fixes to withhold, among them two a single re-build proves
    assert {"duplicates_in_prompt", "stale_version_kept", "dropped_for_budget"} <= fixed, fixed
    # and the third: 20 turns of history crowd three 300-token passages out; halving the history share regains
    # two of them, which only a re-build can tell
    trace = crowded_by_history()
    crowd = {verify: next(f for f in findings(trace, verify=verify) if f.kind == "history_crowding")
             for verify in (True, False)}
    assert [(f.fix, f.fix_verified, f.ids) for f in crowd.values()] == [
        ({"history_share": 0.4}, True, ("c1", "c2")), (None, False, ())]


def test_a_run_whose_context_did_not_change_has_the_same_finding_kinds(runs):
    """Why the replay skips findings where ``_same_context`` holds: the kinds are equal on both sides."""
    same = 0
    for loaded in runs:
        base = loaded.build()
        for new in SETTINGS:
            after = loaded.build(loaded.settings(**new))
            if _same_context(base, after):
                same += 1
                assert _kinds(after, verify=False) == _kinds(base, verify=False), new
                assert _kinds(after) == _kinds(base), new
    assert same >= 20  # the claim was put to the test, not passed by default


def test_citations_read_off_the_kept_labels_are_the_answer_checks(runs):
    answers = ("It is in [S1].", "See [S2, S3] and [s1]; also [S9].", "[S4][S4] twice, [ S2 ; S5 ]", "No label.",
               "[S2, S2] and [S1]; [s3; S3, S1].",
               "Quoted “rule for refunds” [S1], 450 EUR per [S3].", "[1] and [2] are numbers, not [S#].", "")
    tried = 0
    for loaded in runs:
        for new in SETTINGS[:5]:
            own = loaded.build(loaded.settings(**new))
            logged = loaded.logged or (loaded.trace.logged if loaded.trace is not None else None)
            for answer in answers + ((logged.answer,) if logged is not None and logged.answer else ()):
                assert _cited_own(own, answer) == _cited_checked(own, answer, None), answer
                tried += 1
    assert tried > 300


def test_without_a_sent_prompt_a_citation_of_an_outdated_version_is_still_a_citation(runs):
    """No prompt, no fate checks: ``citations`` keeps a kept outdated version's label, as the answer check does."""
    outdated = 0
    for loaded in runs:
        own = loaded.build(loaded.settings(prefer_newest=False))
        sent = sent_module.of_build(own)
        answer = " ".join(f"[{p.label.strip('[]')}]" for p in sent.passages)
        assert answer_module.citations(own, answer) == _cited_checked(own, answer, None) == _cited_own(own, answer)
        outdated += any(p.superseded_by for p in sent.passages)
    assert outdated >= 1


def _logged_fixtures():
    """Every fixture that loads as one logged run with the prompt it sent (traces of every tool, policy, causes)."""
    out = []
    for path in sorted(glob.glob(os.path.join(ROOT, "tests", "fixtures", "**", "*.json*"), recursive=True)):
        try:
            loaded = load_file(path)
        except Exception:  # noqa: BLE001 - a bad-input fixture, or one holding several runs
            continue
        if loaded.logged is not None and loaded.logged.prompt_text:
            out.append(loaded)
    return out


def test_the_replays_citations_are_the_answer_checks_ok_citations(runs):
    """Against a sent prompt, the replay reads only the answer check's citations (``citations``): the same (label,
    id) pairs as the whole check's ``ok`` citations, with [S#], [1]-style, "Document 2" and repeated marks, a label
    the prompt lacks, and a cited passage a newer version supersedes (the check calls that ``cites_outdated``)."""
    logged_runs = [r for r in runs if r.logged is not None and r.logged.prompt_text] + _logged_fixtures()
    assert len(logged_runs) >= 25
    answers = ("It is in [S1].", "See [S2, S3] and [s1]; also [S9].", "[1] and [2; 3], [1] again.", "[2, 2; 1] [S1, S1].",
               "Document 2 says so, as does source 1.", "Nothing cited.", "")
    tried, outdated, found = 0, 0, 0
    for loaded in logged_runs:
        prompt = loaded.logged.prompt_text
        own = loaded.build(loaded.settings(**dict(policy_settings(loaded))))
        sent = sent_module.reconstruct(own, prompt)
        marks = " ".join(f"{p.label or ''} [{i}] [S{i}]" for i, p in enumerate(sent.passages, 1))
        for answer in answers + (marks, loaded.logged.answer or ""):
            fast, plain = answer_module.citations(own, answer, prompt), _cited_checked(own, answer, prompt)
            assert fast == plain, (loaded.source, answer)
            tried += 1
            found += bool(fast)
        outdated += any(p.superseded_by for p in sent.passages)
    assert tried > 150 and found > 40 and outdated >= 1


def test_the_remembered_sent_context_is_the_plain_reading(runs):
    logged_runs = [r for r in runs if r.logged is not None and r.logged.prompt_text]
    assert len(logged_runs) >= 12
    for loaded in logged_runs:
        prompt = loaded.logged.prompt_text
        for new in ({}, {"near_dup": 0.5}, {"near_dup": None}, {"window": 4000, "max_output": 500},
                    dict(policy_settings(loaded))):
            trace = loaded.build(loaded.settings(**new))
            assert sent_module.reconstruct(trace, prompt) == sent_module.read_sent(trace, prompt)


def test_a_policy_inferred_before_selection_is_the_one_inferred_from_a_build(runs):
    """A loaded run's policy is inferred on a build stopped before selection (:func:`ctxcore.pipeline.prepared`);
    the plain definition infers it on the whole build under the file's own settings. Equal on every logged run,
    with and without the reproduction check, and on the policy fixtures (threshold, per document, budget)."""
    fixtures = [load_file(p) for p in sorted(glob.glob(os.path.join(ROOT, "tests", "fixtures", "policy", "*.json*")))]
    logged_runs = [r for r in runs + fixtures if r.logged is not None and r.logged.prompt_text]
    assert len(logged_runs) >= 15
    ruled = 0
    for loaded in logged_runs:
        for reproduce in (True, False):
            fast = policy_module.infer(loaded, reproduce=reproduce)
            clear_caches()  # the fast path cold, as a replay's worker meets a run
            assert fast == policy_module.infer(loaded.build(), reproduce=reproduce)
            ruled += len(fast.rules)
    assert ruled >= 40


def test_the_state_before_selection_has_the_builds_counts_and_budget(runs):
    for loaded in runs[:10]:
        for new in ({}, {"budget": 700}, {"near_dup": None, "max_passages": 3}, {"history_share": 0.1}):
            config = loaded.settings(**new)
            state = prepared(loaded.candidates, loaded.query, config, loaded.inputs)
            clear_caches()
            trace = loaded.build(config)
            assert state.budget == trace.budget and state.config == trace.config
            assert [c.tokens for c in state.candidates] == [c.tokens for c in trace.candidates]
            assert all(isinstance(c.tokens, int) for c in state.candidates)
