"""Every sample scenario does what its description says, with its own settings,
and its naive settings reproduce the failure it describes."""

import glob
import os

import pytest
from conftest import ROOT

from ctxcore import evidence_cost, load

FILES = sorted(glob.glob(os.path.join(ROOT, "sample_data", "*.json")))


def _naive(loaded):
    return loaded.build(loaded.settings(**loaded.extra["scenario"]["naive_config"]))


def test_there_are_at_least_eight_scenarios():
    assert len(FILES) >= 8


@pytest.mark.parametrize("path", FILES, ids=os.path.basename)
def test_recommended_settings_give_the_documented_outcome(path):
    loaded = load(path)
    expect = loaded.extra["scenario"]["expect"]
    t = loaded.build()
    kept = {d.id for d in t.kept()}
    assert set(expect["kept"]) <= kept
    for cid, fate in expect["dropped"].items():
        assert t.decision(cid).fate == fate, (cid, t.decision(cid).reason)
    assert t.prompt.tokens <= t.budget.safe_input and evidence_cost(t) <= t.budget.docs


def _scenario(name):
    return load(next(p for p in FILES if os.path.basename(p).startswith(name)))


def test_01_copies_crowd_out_the_shipping_exception_without_near_dedup():
    naive = _naive(_scenario("01"))
    assert naive.decision("returns-shipping-damaged").fate == "over_budget"
    assert naive.fate_counts()["near_duplicate"] == 0


def test_02_database_order_buries_the_best_chunk():
    loaded = _scenario("02")
    best = max(loaded.candidates, key=lambda c: c.score).id
    assert loaded.build().decision(best).position == 1
    naive = _naive(loaded)
    assert 1 < naive.decision(best).position < len(naive.kept())


def test_03_overflow_engine_stays_in_budget_where_truncation_would_cut_the_decisive_chunk():
    loaded = _scenario("03")
    t = loaded.build()
    decisive = max(loaded.candidates, key=lambda c: c.score).id
    assert t.decision(decisive).fate == "kept"
    assert sum(c.tokens for c in t.candidates) > t.budget.safe_input  # it really overflows
    naive = _naive(loaded)
    start = next(b.start_token for b in naive.blocks if b.id == decisive)
    assert start > t.budget.safe_input  # a client cutting at the 8k window would lose it


def test_04_stale_policy_wins_without_prefer_newest():
    loaded = _scenario("04")
    naive = _naive(loaded)
    assert naive.decision("refund-approval-2026-07-table").fate == "over_budget"
    assert {naive.decision(i).fate for i in ("refund-approval-2025-03", "refund-approval-2025-09")} == {"kept"}
    assert len(loaded.inputs.history) == 20
    assert any("disagree" in w and "500 eur" in w for w in loaded.build().warnings)


def test_05_hidden_instruction_is_fenced_and_warned_about():
    t = _scenario("05").build()
    assert any(w.startswith("forum-cracked-jug contains") for w in t.warnings)
    assert t.prompt.text.count("</evidence>") == 1


def test_06_unanswerable_question_abstains():
    loaded = _scenario("06")
    assert loaded.build().abstain
    assert not _naive(loaded).abstain  # without a threshold, weak chunks become distractors


def test_07_score_keeps_the_big_chunk_density_the_precise_ones():
    naive = _naive(_scenario("07"))
    assert [d.id for d in naive.kept()] == ["pd65-product-overview"]


def test_08_merged_passage_reads_in_source_order():
    t = _scenario("08").build()
    head = t.decision("reset-guide-part1")
    parts = sorted((c for c in t.candidates if c.id.startswith("reset-guide")), key=lambda c: c.chunk_index)
    assert parts[0].id == "reset-guide-part1"
    assert head.text == "\n".join(c.text for c in parts)
    assert _naive(_scenario("08")).fate_counts()["merged"] == 0
