"""Invariants of every build, over generated candidate sets and settings."""

import os
import re

import pytest

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxcore import trace_from_json, Candidate, Config, Inputs, Trace, build, evidence_cost, get_tokenizer, load
from ctxcore.stages.dedup import near_duplicates, near_duplicates_naive, words

EXAMPLES = int(os.environ.get("CTXCORE_PROPERTY_EXAMPLES", "500"))
WORDS = ["refund", "refunds", "five", "5", "days", "shipping", "free", "order", "warranty", "policy", "the", "a",
         "approval", "500", "EUR", "manager", "[S1]", "</evidence>", "ignore", "instructions", ".", "\n"]

text = st.lists(st.sampled_from(WORDS), min_size=0, max_size=40).map(" ".join)
candidate = st.builds(
    lambda t, s, d, i, date: dict(text=t, score=s, doc_id=d, chunk_index=i, date=date),
    text, st.one_of(st.none(), st.floats(-1, 1, allow_nan=False)), st.sampled_from([None, "d1", "d2"]),
    st.one_of(st.none(), st.integers(0, 5)), st.sampled_from([None, "2025-01-01", "2026-07-01"]))
candidates = st.lists(candidate, max_size=25).map(
    lambda items: [Candidate(f"c{i}", **item) for i, item in enumerate(items)])
configs = st.builds(
    Config, budget=st.one_of(st.none(), st.integers(0, 400)), window=st.integers(1200, 9000),
    max_output=st.integers(0, 1000), near_dup=st.one_of(st.none(), st.floats(0.05, 1.0)),
    min_score=st.one_of(st.none(), st.floats(-1, 1)), select=st.sampled_from(["score", "density", "mmr"]),
    order=st.sampled_from(["rank", "sandwich", "document", "original"]),
    label_overhead=st.one_of(st.just("auto"), st.integers(0, 20)), compress=st.booleans(),
    max_chunk_tokens=st.one_of(st.none(), st.integers(1, 40)), merge_adjacent=st.booleans(),
    prefer_newest=st.booleans())
inputs = st.builds(Inputs, system=st.sampled_from(["", "You are a support agent."]),
                   history=st.lists(st.fixed_dictionaries({"role": st.just("user"), "content": text}),
                                    max_size=4).map(tuple))

SETTINGS = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.slow
@SETTINGS
@given(candidates, configs, inputs)
def test_invariants(cands, config, inp):
    t = build(cands, "how long do refunds take?", config, inp)
    # every id exactly once, in input order
    assert [d.id for d in t.decisions] == [c.id for c in cands]
    # the whole prompt, recounted, fits the input budget
    assert get_tokenizer(config.encoding).count(t.prompt.text) == t.prompt.tokens <= t.budget.safe_input
    assert evidence_cost(t) <= t.budget.docs
    # labels S1..Sk, gapless, in prompt order, each exactly once as a label line
    kept = t.kept()
    assert [d.label for d in kept] == [f"S{i}" for i in range(1, len(kept) + 1)]
    lines = re.findall(r"^\[(S\d+)\] ", t.prompt.text, flags=re.MULTILINE)
    assert lines == [d.label for d in kept]
    # mandatory blocks are present
    assert t.prompt.text.endswith("Question: how long do refunds take?")
    assert "Answer only from the labelled passages above." in t.prompt.text
    if inp.system:
        assert t.prompt.text.startswith(inp.system)
    # determinism and replay
    assert build(cands, "how long do refunds take?", config, inp).to_json() == t.to_json()
    assert trace_from_json(t.to_json()).to_json() == t.to_json()
    assert load(t.to_json().encode(), name="trace.json").build().prompt.text == t.prompt.text


@pytest.mark.slow
@SETTINGS
@given(st.lists(text, max_size=40), st.floats(0.05, 1.0))
def test_near_dedup_equals_all_pairs_reference(texts, threshold):
    sets = [words(t) for t in texts]
    assert near_duplicates(sets, threshold) == near_duplicates_naive(sets, threshold)
