"""The reference worked examples, number for number, through the API and the CLI."""

import json

import pytest

from conftest import SEED_TEXTS, cli, text_of_tokens

from ctxcore import Candidate, Config, build, evidence_cost, window_budget
from ctxcore.stages.compress import shrink
from ctxcore.stages.dedup import jaccard, words


def test_budget_split_matches_reference():
    b = window_budget(8192, 1024, fixed=65, history_share=0.40)  # the seed's split, given explicitly
    assert (b.safe_input, b.history, b.docs) == (6809, 2697, 4047)


def test_policy_sentence_is_nine_tokens(cl100k):
    assert cl100k.count("Refunds are processed within five business days.") == 9


def test_near_duplicate_similarity_five_vs_5():
    sim = jaccard(words(SEED_TEXTS["policy-returns"]), words(SEED_TEXTS["policy-returns-near"]))
    assert round(sim, 3) == 0.846


def test_dedup_then_budget_60_keeps_four_using_58(seed_candidates):
    t = build(seed_candidates, "how long do refunds take", Config(budget=60, label_overhead=0, order="rank"))
    fates = {d.id: d.fate for d in t.decisions}
    assert fates == {"policy-returns": "kept", "policy-returns-copy": "exact_duplicate",
                     "policy-returns-near": "near_duplicate", "policy-shipping": "kept",
                     "blog-holiday": "over_budget", "faq-tracking": "kept", "policy-warranty": "kept"}
    assert [d.id for d in t.kept()] == ["policy-returns", "policy-warranty", "faq-tracking", "policy-shipping"]
    assert evidence_cost(t) == 58
    near = t.decision("policy-returns-near")
    assert near.duplicate_of == "policy-returns" and round(near.similarity, 3) == 0.846
    assert t.decision("policy-returns-copy").duplicate_of == "policy-returns"
    assert t.decision("blog-holiday").stage == "select"


def test_sandwich_order_of_the_four(seed_candidates):
    t = build(seed_candidates, "how long do refunds take", Config(budget=60, label_overhead=0))
    assert [d.id for d in t.kept()] == ["policy-returns", "faq-tracking", "policy-shipping", "policy-warranty"]
    assert [d.label for d in t.kept()] == ["S1", "S2", "S3", "S4"]


def test_density_picks_two_small_over_one_big():
    cands = [Candidate("big", text_of_tokens(35), 0.99), Candidate("small1", text_of_tokens(12, "cat"), 0.90),
             Candidate("small2", text_of_tokens(12, "dog"), 0.85)]
    by_score = build(cands, "q", Config(budget=40, label_overhead=0, near_dup=None))
    by_density = build(cands, "q", Config(budget=40, label_overhead=0, near_dup=None, select="density"))
    assert {d.id for d in by_score.kept()} == {"big"} and evidence_cost(by_score) == 35
    assert {d.id for d in by_density.kept()} == {"small1", "small2"} and evidence_cost(by_density) == 24
    assert by_density.decision("big").fate == "over_budget"


LONG = ("Refunds are processed within five business days. "
        "The refund goes back to the original payment method. "
        "During the holiday season our warehouse team works around the clock. "
        "Contact support if the refund has not arrived after ten days.")


def test_compress_43_to_9_tokens(cl100k):
    assert cl100k.count(LONG) == 43
    short = shrink(LONG, "how long do refunds take", 20, cl100k.count)
    assert short == "Refunds are processed within five business days."
    assert cl100k.count(short) == 9


def test_compress_through_build_records_before_and_after():
    t = build([Candidate("long", LONG, 0.9)], "how long do refunds take",
              Config(budget=100, compress=True, max_chunk_tokens=20, label_overhead=0))
    d = t.decision("long")
    assert (d.fate, d.compressed, d.tokens_before, d.tokens) == ("kept", True, 43, 9)
    assert d.text == "Refunds are processed within five business days."
    assert "Refunds are processed within five business days.\n" in t.prompt.text
    assert "holiday" not in t.prompt.text


@pytest.mark.slow
def test_cli_reproduces_the_budget_60_example(seed_file):
    code, out, err = cli("build", seed_file, "--budget", "60", "--label-overhead", "0", "--format", "json")
    assert code == 0, err
    trace = json.loads(out)
    kept = sorted((d for d in trace["decisions"] if d["fate"] == "kept"), key=lambda d: d["position"])
    assert [d["id"] for d in kept] == ["policy-returns", "faq-tracking", "policy-shipping", "policy-warranty"]
    assert sum(d["cost"] for d in kept) == 58
    fates = {d["id"]: d["fate"] for d in trace["decisions"]}
    assert fates["blog-holiday"] == "over_budget" and fates["policy-returns-near"] == "near_duplicate"


@pytest.mark.slow
def test_cli_table_names_every_fate(seed_file):
    code, out, _ = cli("build", seed_file, "--budget", "60", "--label-overhead", "0")
    assert code == 0
    assert "evidence: 58 of 60 tokens" in out
    for fate in ("exact_duplicate", "near_duplicate", "over_budget", "kept"):
        assert fate in out
