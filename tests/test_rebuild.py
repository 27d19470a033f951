"""A rebuild that resumes from remembered stage results gives the trace a fresh build gives."""

import dataclasses

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxcore import Candidate, Config, Inputs, build
from ctxcore.pipeline import clear_caches

WORDS = "refund refunds five 5 days shipping free order warranty policy the a approval 500 EUR manager".split()


def _candidates():
    out = []
    for i in range(40):
        words = [WORDS[(i * 7 + k * 3) % len(WORDS)] for k in range(6 + i % 9)]
        if i % 5 == 4:
            words = out[i - 4].text.split() + ["again"]          # a near copy of an earlier chunk
        if i % 11 == 10:
            words = out[i - 1].text.split()                       # an exact copy
        out.append(Candidate(f"c{i}", " ".join(words) + f" n{i % 13}", round(1 - (i * 37 % 40) / 41, 3),
                             doc_id=f"d{i % 6}", chunk_index=(i // 6) % 4,
                             date=("2025-01-01", "2026-07-01", None)[(i // 6) % 3],
                             permissions=("staff",) if i % 7 == 0 else None))
    return out


CANDIDATES = _candidates()
INPUTS = Inputs(system="You are a support agent.", history=({"role": "user", "content": "hello"},))
BASE = Config(window=1200, max_output=200, select="mmr")

# every setting, with a value other than the base's
OTHER = {"encoding": "o200k_base", "model": "gpt-4o", "window": 4096, "max_output": 500, "safety": 0.1,
         "history_share": 0.2, "budget": 90, "caller": "guest", "prefer_newest": False, "near_dup": 0.5,
         "similarity": "shingles", "merge_adjacent": True, "min_score": 0.4, "drop_unscored": True, "select": "score",
         "mmr_lambda": 0.3, "order": "rank", "label_overhead": 3, "compress": True, "max_chunk_tokens": 12,
         "max_passages": 3}


def test_every_setting_is_covered():
    assert set(OTHER) == {f.name for f in dataclasses.fields(Config)}


def _fresh(config):
    clear_caches()
    return build(CANDIDATES, "how long do refunds take?", config, INPUTS).to_json()


@pytest.mark.parametrize("name", sorted(OTHER))
def test_one_setting_changed(name):
    changed = BASE.replace(**{name: OTHER[name]})
    expected = _fresh(changed)
    assert expected != _fresh(BASE)  # the change matters for these candidates, so the test can fail
    clear_caches()
    build(CANDIDATES, "how long do refunds take?", BASE, INPUTS)
    assert build(CANDIDATES, "how long do refunds take?", changed, INPUTS).to_json() == expected
    # and back again
    assert build(CANDIDATES, "how long do refunds take?", BASE, INPUTS).to_json() == _fresh(BASE)


changes = st.lists(st.sampled_from(sorted(OTHER)), min_size=1, max_size=6)


@pytest.mark.slow
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(changes)
def test_a_sequence_of_changes(names):
    """A user moving controls one after another: every step equals a fresh build of that step."""
    clear_caches()
    config, steps = BASE, []
    for name in names:
        config = config.replace(**{name: BASE.__dict__[name] if config.__dict__[name] == OTHER[name] else OTHER[name]})
        steps.append((config, build(CANDIDATES, "how long do refunds take?", config, INPUTS).to_json()))
    for config, got in steps:
        assert got == _fresh(config)


@pytest.mark.parametrize("other", [Inputs(system="You are a careful support agent. " * 8, history=INPUTS.history),
                                   Inputs(system=INPUTS.system, history=({"role": "user", "content": "x " * 90},)),
                                   Inputs()])
@pytest.mark.parametrize("config", [BASE, BASE.replace(order="rank")])
def test_other_blocks_or_history(other, config):
    """The budget measures the mandatory blocks and history, so a rebuild with other ones re-measures."""
    clear_caches()
    expected = build(CANDIDATES, "how long do refunds take?", config, other).to_json()
    clear_caches()
    build(CANDIDATES, "how long do refunds take?", BASE, INPUTS)
    assert build(CANDIDATES, "how long do refunds take?", config, other).to_json() == expected


def test_a_merged_passage_is_not_taken_for_its_head():
    """A merged passage carries its head's id with its own token count; a remembered over-budget
    record of the head alone must not stand in for it."""
    top = Candidate("top", "refund policy " * 30, 0.9)
    head = Candidate("d-0", "shipping takes five business days " * 12, 0.5, doc_id="d", chunk_index=0)
    tail = Candidate("d-1", "warranty covers two years " * 12, 0.4, doc_id="d", chunk_index=1)
    cands = [top, head, tail]
    clear_caches()
    off, on = Config(budget=100, near_dup=None), Config(budget=100, near_dup=None, merge_adjacent=True)
    build(cands, "q", off)
    again = build(cands, "q", on)
    clear_caches()
    fresh = build(cands, "q", on)
    assert again.to_json() == fresh.to_json()
    assert again.decision("d-0").fate == "over_budget"
    assert again.decision("d-0").reason != build(cands, "q", off).decision("d-0").reason
