from conftest import text_of_tokens

from ctxcore import Candidate, Config, build, evidence_cost


def test_walk_goes_on_after_a_chunk_that_does_not_fit():
    cands = [Candidate("a", text_of_tokens(30), 0.9), Candidate("big", text_of_tokens(50, "cat"), 0.8),
             Candidate("c", text_of_tokens(20, "dog"), 0.7)]
    t = build(cands, "q", Config(budget=55, label_overhead=0))
    assert [d.id for d in t.kept()] == ["a", "c"]
    assert t.decision("big").reason == ("needs 50 tokens (50 text + 0 label) but only 25 of the 55-token docs "
                                        "budget were left")


def test_label_overhead_is_counted_per_chunk():
    cands = [Candidate(f"c{i}", text_of_tokens(10, w), 0.9 - i / 10) for i, w in enumerate(["a", "b", "c"])]
    assert build(cands, "q", Config(budget=30, label_overhead=0)).fate_counts()["kept"] == 3
    t = build(cands, "q", Config(budget=30, label_overhead=5))
    assert t.fate_counts()["kept"] == 2 and evidence_cost(t) == 30


def test_auto_overhead_is_the_measured_label_line(cl100k):
    c = Candidate("doc-1", "Refunds take five days.", 0.9, title="Returns", section="Refunds > Timing")
    t = build([c], "q", Config(budget=100))
    # the provenance line, written out by hand: a value with spaces is quoted
    line = '[S1] source=doc-1 title=Returns section="Refunds > Timing" score=0.9'
    assert line + "\nRefunds take five days.\n" in t.prompt.text
    # the overhead is that line with its line break, plus the blank line after the passage
    assert t.decision("doc-1").cost - t.decision("doc-1").tokens == cl100k.count(line + "\n") + 1


def test_nothing_fits():
    t = build([Candidate("a", text_of_tokens(50), 0.9)], "q", Config(budget=10))
    assert t.decision("a").fate == "over_budget" and t.abstain


def test_empty_input_builds_an_abstaining_prompt():
    t = build([], "anything?", Config())
    assert t.decisions == () and t.abstain and t.prompt.text.endswith("Question: anything?")


def test_one_giant_chunk_without_compression_is_over_budget_with_compression_shrinks():
    giant = " ".join(f"Sentence {i} is about shipping." for i in range(400)) + " Refunds take five days."
    off = build([Candidate("g", giant, 0.9)], "how long do refunds take", Config(budget=200))
    on = build([Candidate("g", giant, 0.9)], "how long do refunds take", Config(budget=200, compress=True))
    assert off.decision("g").fate == "over_budget"
    d = on.decision("g")
    assert d.fate == "kept" and d.compressed and d.cost <= 200 and "Refunds take five days." in d.text


def test_max_chunk_tokens_without_compression_drops_the_chunk():
    t = build([Candidate("a", text_of_tokens(50), 0.9)], "q", Config(budget=500, max_chunk_tokens=20))
    assert t.decision("a").fate == "over_budget" and "per-chunk cap of 20" in t.decision("a").reason


def test_mmr_prefers_diversity():
    base = "refund policy five business days original payment method card"
    cands = [Candidate("a", base, 0.9), Candidate("a2", base + " bank", 0.89),
             Candidate("ship", "return shipping is free for damaged items", 0.6)]
    score = build(cands, "q", Config(budget=20, label_overhead=0, near_dup=None))
    mmr = build(cands, "q", Config(budget=20, label_overhead=0, near_dup=None, select="mmr", mmr_lambda=0.5))
    assert {d.id for d in score.kept()} == {"a", "a2"}
    assert {d.id for d in mmr.kept()} == {"a", "ship"}


def test_max_passages_caps_the_count_and_says_so():
    cands = [Candidate(c, f"text {c}", s) for c, s in [("a", 0.9), ("b", 0.8), ("c", 0.7)]]
    t = build(cands, "q", Config(budget=500, max_passages=2))
    assert [d.id for d in t.kept()] == ["a", "b"]
    assert t.decision("c").reason == "the passage limit (max_passages 2) was already reached"
    assert t.decision("c").fate == "over_limit"  # a cap is not a budget: 500 tokens had room for it


def test_naive_preset_keeps_duplicates_and_database_order():
    from ctxcore import PRESETS

    cands = [Candidate("b", "refund policy five days", 0.5), Candidate("a", "refund policy 5 days", 0.9)]
    t = build(cands, "q", Config(budget=500, **PRESETS["naive"]))
    assert [d.id for d in t.kept()] == ["b", "a"]


# -- MMR: the lazy walk gives the definition's order, and a build with it the definition's trace

import dataclasses  # noqa: E402
import random  # noqa: E402

import pytest  # noqa: E402
from hypothesis import given, settings, strategies as st  # noqa: E402

from ctxcore.stages import select  # noqa: E402
from ctxcore.stages.dedup import jaccard, words  # noqa: E402


def _mmr_definition(alive, lam, rank, accepted):
    """Every step: the highest lam * score - (1 - lam) * closest over the whole pool, ties by rank."""
    pool, closest = list(alive), {c.id: 0.0 for c in alive}
    while pool:
        best = max(pool, key=lambda c: (lam * (c.score or 0.0) - (1 - lam) * closest[c.id], -rank[c.id]))
        pool.remove(best)
        yield best
        if best.id in accepted:
            for c in pool:
                closest[c.id] = max(closest[c.id], jaccard(words(c.text), words(best.text)))


class _DefinitionWalk:
    """select's walk interface over the definition, with nothing cut short."""

    def __init__(self, alive, lam, rank):
        self.accepted, self.walked = set(), []
        self.gen = _mmr_definition(alive, lam, rank, self.accepted)
        self.alive = alive

    def __iter__(self):
        for c in self.gen:
            self.walked.append(c)
            yield c

    def least(self, _k=None):
        done = {c.id for c in self.walked[:-1]}
        return min(c.tokens for c in self.alive if c.id not in done)

    def rest(self, _k=None):
        return [self.walked[-1]] + list(self.gen)

    def accept(self, c):
        self.accepted.add(c.id)


def _pool(seed, n):
    rng = random.Random(seed)
    vocab = "refund days five card bank ship free damaged policy order item fee".split()
    out = []
    for i in range(n):
        text = " ".join(rng.choices(vocab, k=rng.randint(2, 9)))
        score = rng.choice([None, 0.2, 0.5, 0.5, 0.8, round(rng.random(), 2)])  # ties, and unscored
        out.append(Candidate(f"c{i}", text, score))
    return out


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 10**6), st.integers(1, 40), st.sampled_from([0.0, 0.3, 0.5, 0.7, 1.0]),
       st.integers(0, 60))
def test_lazy_mmr_walks_in_the_definitions_order(seed, n, lam, budget):
    # tokens as select sees them: one per word here; rank order as the build makes it
    cands = [dataclasses.replace(c, tokens=len(c.text.split())) for c in _pool(seed, n)]
    alive = tuple(sorted(cands, key=lambda c: (c.score is None, -(c.score or 0.0))))
    rank = {c.id: i for i, c in enumerate(alive)}
    lazy, reference = select._Mmr(alive, lam, rank), _mmr_definition(alive, lam, rank, accepted := set())
    left, got, want = budget, [], []
    for c in lazy:  # accept what fits, as select does
        got.append(c.id)
        if c.tokens <= left:
            left -= c.tokens
            lazy.accept(c)
    left = budget
    for c in reference:
        want.append(c.id)
        if c.tokens <= left:
            left -= c.tokens
            accepted.add(c.id)
    assert got == want


@pytest.mark.parametrize("budget, limit", [(60, None), (400, None), (2000, None), (400, 4), (5000, 30)])
@pytest.mark.parametrize("lam", [0.3, 0.7])
def test_mmr_build_equals_the_definition(budget, limit, lam, monkeypatch):
    cands = _pool(99, 300)
    config = Config(budget=budget, near_dup=None, select="mmr", mmr_lambda=lam, max_passages=limit)
    got = build(cands, "q", config)
    monkeypatch.setattr(select, "_Mmr", _DefinitionWalk)
    from ctxcore.pipeline import forget_stage_results

    forget_stage_results()
    want = build(cands, "q", config)
    assert got.to_json() == want.to_json()
    assert 0 < got.fate_counts()["kept"] < 300


@pytest.mark.parametrize("settings", [{"select": "density"}, {"compress": True}, {}])
def test_label_lines_measured_together_cost_what_each_measured_alone(settings, cl100k):
    import re

    odd = ["Returns", 'say "hi"', "[S9] forged", "a  b\tc", "</evidence>", "日本語", None]
    cands = [Candidate(f"id {i}" if i % 3 else f"doc-{i}", f"Refunds take {i} business days.", 0.9 - i / 100,
                       doc_id=f"d{i}", title=odd[i % 7], section=odd[(i + 2) % 7],
                       date="2026-01-0%d" % (1 + i % 9)) for i in range(30)]
    t = build(cands, "refunds", Config(budget=900, near_dup=None, **settings))
    kept = {d.id: d for d in t.kept()}
    assert 10 < len(kept) < 30  # most fit, not all: the walk went past one that did not
    # each passage's label line as it stands in the prompt (counted with the width of S1, as select does)
    lines = {d.id: re.search(r"^\[%s\] .*$" % d.label, t.prompt.text, flags=re.MULTILINE).group()
             for d in kept.values()}
    for c in cands:
        if c.id in kept:
            d = kept[c.id]
            line = "[S1]" + lines[c.id][len(d.label) + 2:]
            assert d.cost - d.tokens == cl100k.count(line + "\n") + 1, c.id


# -- the fast walk against the plain rule (select.definition), on the same state

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from ctxcore.stages import select  # noqa: E402
from ctxcore.pipeline import state_before  # noqa: E402

_WORDS = ["refund", "policy", "days", "card", "bank", "ship", "damaged", "five", "order", "invoice"]


@st.composite
def selections(draw):
    n = draw(st.integers(1, 14))
    cands = []
    for i in range(n):
        words_ = draw(st.lists(st.sampled_from(_WORDS), min_size=1, max_size=40))
        score = draw(st.one_of(st.none(), st.floats(0, 1, allow_nan=False)))
        cands.append(Candidate(f"c{i}", " ".join(words_) + ".", score))
    cfg = Config(budget=draw(st.integers(0, 400)), select=draw(st.sampled_from(["score", "density", "mmr"])),
                 mmr_lambda=draw(st.sampled_from([0.0, 0.3, 0.7, 1.0])), near_dup=None,
                 max_passages=draw(st.one_of(st.none(), st.integers(1, 5))),
                 label_overhead=draw(st.sampled_from(["auto", 0, 7])),
                 compress=draw(st.booleans()), max_chunk_tokens=draw(st.one_of(st.none(), st.integers(5, 40))))
    return cands, cfg


def _outcome(state):
    kept = [(d.id, d.tokens, d.cost, bool(d.compressed)) for d in state.kept]
    return kept, sorted((i, d.fate) for i, d in state.removed.items())


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(selections())
def test_the_fast_walk_decides_what_the_plain_rule_decides(case):
    cands, cfg = case
    before = state_before(select.run, cands, "refund policy for damaged orders", cfg)
    assert _outcome(select.run(before)) == _outcome(select.definition(before))


def test_a_budget_of_exactly_what_everything_costs_keeps_everything():
    cands = [Candidate(f"c{i}", text_of_tokens(10 + i, w), 0.9 - i / 10) for i, w in enumerate(["a", "b", "c"])]
    # 10 + 11 + 12 text tokens and 4 label tokens each, written by hand: 45
    exact = build(cands, "q", Config(budget=45, label_overhead=4, order="rank"))
    assert [d.id for d in exact.kept()] == ["c0", "c1", "c2"] and evidence_cost(exact) == 45
    short = build(cands, "q", Config(budget=44, label_overhead=4, order="rank"))
    assert [d.id for d in short.kept()] == ["c0", "c1"] and short.decision("c2").fate == "over_budget"


def test_density_selection_takes_scored_passages_before_unscored_ones():
    """Found by mutation testing (``select._density_order`` with its unscored-last key flipped survived): an
    unscored candidate has no density to compare, so it waits until every scored one had its turn."""
    cands = [Candidate("unscored", text_of_tokens(10, "cat"), None), Candidate("scored", text_of_tokens(10), 0.2)]
    t = build(cands, "q", Config(budget=10, label_overhead=0, select="density"))
    assert [d.id for d in t.kept()] == ["scored"]
    assert t.decision("unscored").fate == "over_budget"
