"""A passage cap is not a budget (issue #30): a candidate dropped because ``max_passages`` was reached is
``over_limit`` in the engine, the trace, the explanation, the fates table and a replay's counts, never
``over_budget``."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from ctxcore import FATE_MEANINGS, Candidate, Config, build, load, trace_from_json
from ctxcore.analysis.explain import explain
from ctxcore.replay import compare
from ctxui.tables import fates_frame

TEXTS = ["Refunds take five business days.", "Shipping is free over 50 EUR.", "Returns need a receipt.",
         "Gift cards never expire.", "Invoices are emailed monthly.", "Support answers within a day."]


def _cands(scores):
    return [Candidate(f"c{i}", TEXTS[i % len(TEXTS)] + f" Case {i}.", s) for i, s in enumerate(scores)]


def test_past_the_limit_with_tokens_left_is_over_limit_with_its_meaning():
    t = build(_cands([0.9, 0.8, 0.7, 0.6]), "refunds?", Config(budget=1000, max_passages=2, near_dup=None))
    assert [d.id for d in t.kept()] == ["c0", "c1"]
    assert [(d.id, d.fate, d.stage, d.reason) for d in t.decisions if d.fate != "kept"] == [
        ("c2", "over_limit", "select", "the passage limit (max_passages 2) was already reached"),
        ("c3", "over_limit", "select", "the passage limit (max_passages 2) was already reached")]
    assert t.fate_counts()["over_limit"] == 2 and t.fate_counts()["over_budget"] == 0
    assert FATE_MEANINGS["over_limit"].startswith("the passage limit (max_passages) was reached")
    # the trace keeps the fate through JSON, and the schema accepts it
    back = trace_from_json(t.to_json())
    assert [d.fate for d in back.decisions] == ["kept", "kept", "over_limit", "over_limit"]


def test_a_budget_cut_and_a_limit_cut_in_one_build_keep_their_own_fates():
    # c1 is too long for what is left after c0; c2 fits; then the limit of 2 stops c3
    cands = _cands([0.9, 0.8, 0.7, 0.6])
    cands[1] = Candidate("c1", "Shipping policy detail. " * 60, 0.8)
    t = build(cands, "refunds?", Config(budget=60, label_overhead=0, max_passages=2, near_dup=None))
    fates = {d.id: d.fate for d in t.decisions}
    assert fates == {"c0": "kept", "c1": "over_budget", "c2": "kept", "c3": "over_limit"}


@settings(max_examples=60, deadline=None)
@given(scores=st.lists(st.floats(0.05, 1.0), min_size=1, max_size=8), limit=st.integers(1, 6),
       select_by=st.sampled_from(["score", "density", "mmr"]))
def test_with_room_for_every_passage_nothing_is_over_budget(scores, limit, select_by):
    t = build(_cands(scores), "refunds?", Config(budget=5000, window=65536, max_passages=limit, near_dup=None,
                                                 select=select_by))
    fates = [d.fate for d in t.decisions]
    assert "over_budget" not in fates
    assert fates.count("kept") == min(limit, len(scores))
    assert fates.count("over_limit") == max(0, len(scores) - limit)
    for d in t.decisions:  # the reason and the fate agree, in both walks (the plain rule too)
        assert ("passage limit" in d.reason) == (d.fate == "over_limit")


def test_explain_proposes_the_limit_that_keeps_it_not_a_budget():
    t = build(_cands([0.9, 0.8, 0.7, 0.6]), "refunds?", Config(budget=1000, max_passages=2, near_dup=None))
    e = explain(t, "c3")
    assert (e.fate, e.fix, e.fix_verified) == ("over_limit", {"max_passages": 4}, True)
    assert e.note == "a passage limit of 4 (now 2) keeps it; the docs budget had room, the limit did not"
    # the fix is real: a re-run under it keeps c3
    assert build(_cands([0.9, 0.8, 0.7, 0.6]), "refunds?",
                 Config(budget=1000, max_passages=4, near_dup=None)).decision("c3").fate == "kept"


def test_explain_when_the_budget_would_stop_it_anyway():
    cands = _cands([0.9, 0.8])
    cands[1] = Candidate("c1", "Shipping policy detail. " * 60, 0.8)
    t = build(cands, "q", Config(budget=40, label_overhead=0, max_passages=1, near_dup=None))
    e = explain(t, "c1")
    assert e.fate == "over_limit"
    assert e.note == "even without the passage limit it does not fit the docs budget"
    assert e.fix["max_passages"] is None and e.fix_verified and e.fix["budget"] > 40


def test_the_fates_table_shows_over_limit_for_every_capped_row():
    t = build(_cands([0.9, 0.8, 0.7, 0.6, 0.5]), "refunds?", Config(budget=1000, max_passages=3, near_dup=None))
    df = fates_frame(t)
    capped = df[df["reason"].str.contains("passage limit")]
    assert list(capped["fate"]) == ["over_limit", "over_limit"]
    assert "over_budget" not in set(df["fate"])


def test_a_replay_counts_a_capped_passage_as_over_limit(tmp_path):
    doc = {"query": "refunds?", "config": {"budget": 1000, "near_dup": None},
           "candidates": [{"id": c.id, "text": c.text, "score": c.score} for c in _cands([0.9, 0.8, 0.7, 0.6])]}
    path = tmp_path / "run.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    row = compare(load(str(path)), {"max_passages": 2}, with_findings=False)
    moved = {(m["id"], m["before_fate"], m["after_fate"]) for m in row["newly_dropped"]}
    assert moved == {("c2", "kept", "over_limit"), ("c3", "kept", "over_limit")}
