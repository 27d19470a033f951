"""Relational invariants of a build, checked against references written here, not read from the engine.

Each invariant is a Hypothesis property over generated inputs that deliberately include what the
simpler generators elsewhere leave out: user-trust documents (their passages sit after the evidence
block), several chunks of one newest version, conversation history, and windows tight enough that
the assembled prompt has to be trimmed. Each property also has one hand-made case whose expected
value is written in the test, so a broken invariant fails on a fixed input too, not only when the
generator happens to find it.

The references (rank, word sets, versions, token costs of history turns) are small re-statements of
the design, kept in this file.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxcore import Candidate, Config, Inputs, build, get_tokenizer

QUERY = "How long do refunds take and who approves them?"
TOK = get_tokenizer("cl100k_base")

SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# ---------------------------------------------------------------------------------------------
# references
# ---------------------------------------------------------------------------------------------


def ref_rank(cands) -> dict[str, int]:
    """Design: score descending, ties by input order, unscored after every scored one."""
    order = sorted(range(len(cands)), key=lambda i: (cands[i].score is None, -(cands[i].score or 0.0), i))
    return {cands[i].id: r for r, i in enumerate(order)}


def ref_words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]+", text.lower()))


def ref_jaccard(a: str, b: str) -> float:
    x, y = ref_words(a), ref_words(b)
    return len(x & y) / len(x | y) if x | y else 0.0


def ref_version(v: str) -> int:
    """The generated versions are 'v<number>'; 'v10' is newer than 'v9'."""
    return int(v[1:])


def passage_rank(trace, rank, pid: str) -> int:
    """A passage ranks where its best member ranks (a merged passage carries its members)."""
    members = [pid] + [d.id for d in trace.decisions if d.merged_into == pid]
    return min(rank[m] for m in members)


def prompt_label_lines(text: str) -> list[tuple[str, str]]:
    """(label, source id) of every passage label line, in the order they appear in the prompt."""
    return re.findall(r"^\[(S\d+)\] source=(\S+)", text, flags=re.MULTILINE)


def history_lines(text: str) -> list[str]:
    m = re.search(r"<history>\n(.*?)\n</history>", text, flags=re.DOTALL)
    return m.group(1).split("\n") if m else []


# ---------------------------------------------------------------------------------------------
# generators
# ---------------------------------------------------------------------------------------------

BASES = [
    "Refunds are processed within five business days to the original payment method.",
    "Refunds above 500 EUR need approval from a team lead before they are paid.",
    "Standard shipping is free for orders over 50 dollars and arrives in three days.",
    "Electronics carry a twelve month warranty covering manufacturing defects only.",
    "Return shipping is free when the item arrived damaged or defective.",
]
# near and exact copies arise from sampling the same base twice, or a base with one word changed
VARIANTS = BASES + [b.replace("five", "5") for b in BASES[:1]] + [b + " See the help center." for b in BASES[:3]] \
    + [b.replace("Refunds", "Returns") for b in BASES[:2]]
WORDS = "refund approval days team lead order warranty shipping free policy manager within above".split()

VOCABULARY = WORDS + [f"term{i}" for i in range(200)]  # wide enough that random texts are rarely near copies
texts = st.one_of(st.sampled_from(VARIANTS),
                  st.lists(st.sampled_from(VOCABULARY), min_size=3, max_size=80).map(" ".join))
candidate = st.fixed_dictionaries({
    "text": texts,
    "score": st.sampled_from([None, 0.2, 0.5, 0.5, 0.7, 0.9, 0.95]),
    "doc_id": st.sampled_from([None, "p", "p", "q"]),
    "chunk_index": st.sampled_from([None, 0, 1, 2, 3]),
    "version": st.sampled_from([None, "v1", "v2", "v2", "v10"]),
    "trust": st.sampled_from(["retrieved", "retrieved", "user"]),
})
candidates = st.lists(candidate, min_size=1, max_size=14).map(
    lambda items: [Candidate(f"c{i}", **item) for i, item in enumerate(items)])
turn = st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant"]),
                              "content": st.lists(st.sampled_from(WORDS), min_size=1, max_size=30).map(" ".join)})
histories = st.lists(turn, max_size=7).map(tuple)
configs = st.builds(
    Config,
    window=st.integers(520, 1400), max_output=st.integers(0, 150),
    budget=st.one_of(st.none(), st.none(), st.integers(50, 1500)),  # a direct budget can outgrow the window
    history_share=st.sampled_from([0.0, 0.1, 0.3, 0.6]),
    near_dup=st.sampled_from([None, 0.5, 0.8]), prefer_newest=st.booleans(), merge_adjacent=st.booleans(),
    select=st.sampled_from(["score", "density", "mmr"]), order=st.sampled_from(["rank", "sandwich", "document",
                                                                                  "original"]),
    max_passages=st.sampled_from([None, None, 2]))
# for the final trim: a direct docs budget far over what the window leaves, so select keeps more than
# the assembled prompt can hold
long_texts = st.lists(st.sampled_from(VOCABULARY), min_size=60, max_size=160).map(" ".join)
trim_candidates = st.lists(st.fixed_dictionaries({
    "text": st.one_of(st.sampled_from(VARIANTS), long_texts, long_texts),
    "score": st.sampled_from([None, 0.2, 0.5, 0.5, 0.7, 0.9, 0.95]),
    "doc_id": st.sampled_from([None, "p", "q"]), "chunk_index": st.sampled_from([None, 0, 1, 2]),
    "trust": st.sampled_from(["retrieved", "retrieved", "user"]),
}), min_size=3, max_size=12).map(lambda items: [Candidate(f"c{i}", **item) for i, item in enumerate(items)])
trim_configs = st.builds(
    Config, window=st.integers(450, 900), max_output=st.integers(0, 100), budget=st.integers(600, 4000),
    history_share=st.sampled_from([0.0, 0.2, 0.5]), near_dup=st.sampled_from([None, 0.8]),
    merge_adjacent=st.booleans(), select=st.sampled_from(["score", "density", "mmr"]),
    order=st.sampled_from(["rank", "sandwich", "original"]))


# ---------------------------------------------------------------------------------------------
# the checks, shared by the properties and the hand-made cases
# ---------------------------------------------------------------------------------------------


def check_labels(t):
    lines = prompt_label_lines(t.prompt.text)
    assert [lab for lab, _ in lines] == [f"S{i}" for i in range(1, len(lines) + 1)], lines
    by_label = {d.label: d for d in t.decisions if d.fate == "kept"}
    assert len(by_label) == len(lines)
    for i, (lab, source) in enumerate(lines, 1):
        assert by_label[lab].id == source
        assert by_label[lab].position == i


def check_relations(t):
    cands = {c.id: c for c in t.candidates}
    fate = {d.id: d.fate for d in t.decisions}
    rank = ref_rank(t.candidates)
    for d in t.decisions:
        if d.fate == "exact_duplicate":
            twin = d.duplicate_of
            assert cands[twin].text == cands[d.id].text and rank[twin] < rank[d.id], d
            # it names the copy that survived exact dedup, never another copy dropped there
            assert fate[twin] not in ("exact_duplicate", "stale", "not_permitted"), (d, fate[twin])
        elif d.fate == "near_duplicate":
            twin = d.duplicate_of
            assert rank[twin] < rank[d.id], d
            assert fate[twin] not in ("exact_duplicate", "near_duplicate", "stale", "not_permitted"), (d, fate[twin])
            sim = ref_jaccard(cands[twin].text, cands[d.id].text)
            assert sim >= t.config.near_dup - 1e-9 and d.similarity == pytest.approx(sim, abs=1e-4), (d, sim)
        elif d.fate == "merged":
            head = d.merged_into
            assert cands[head].doc_id == cands[d.id].doc_id
            assert fate[head] not in ("merged", "exact_duplicate", "near_duplicate", "stale", "not_permitted")
        elif d.fate == "stale":
            newer = d.superseded_by
            assert cands[newer].doc_id == cands[d.id].doc_id
            assert ref_version(cands[newer].version) > ref_version(cands[d.id].version)
            assert fate[newer] not in ("stale", "not_permitted"), (d, fate[newer])
        else:
            assert d.duplicate_of is None and d.merged_into is None and d.superseded_by is None, d


def check_stale(t):
    """Stale exactly when prefer_newest and strictly older than the newest version present of its passage: a
    chunk with a chunk_index is that chunk of its doc_id in every version; one without is paired by its words,
    so it is stale only when a newer unplaced chunk of its doc_id supersedes it."""
    newest: dict[tuple, int] = {}
    for c in t.candidates:
        if c.doc_id is not None and c.version is not None and c.chunk_index is not None:
            key = (c.doc_id, c.chunk_index)
            newest[key] = max(newest.get(key, 0), ref_version(c.version))
    by_id = {c.id: c for c in t.candidates}
    fate = {d.id: d for d in t.decisions}
    for c in t.candidates:
        d = fate[c.id]
        if c.chunk_index is None:
            if d.fate == "stale":
                s = by_id[d.superseded_by]
                assert t.config.prefer_newest and (s.doc_id, s.chunk_index) == (c.doc_id, None) and \
                    ref_version(s.version) > ref_version(c.version), (c.id, d.superseded_by)
            continue
        older = (t.config.prefer_newest and c.doc_id is not None and c.version is not None
                 and ref_version(c.version) < newest[(c.doc_id, c.chunk_index)])
        assert (d.fate == "stale") == older, (c.id, c.doc_id, c.version, d.fate, newest)


def check_final_trim(t):
    rank = ref_rank(t.candidates)
    kept = [d.id for d in t.decisions if d.fate == "kept"]
    trimmed = [d.id for d in t.decisions if d.fate == "over_budget" and d.stage == "final_count"]
    for x in trimmed:
        for k in kept:
            assert passage_rank(t, rank, x) > passage_rank(t, rank, k), (x, k, trimmed, kept)


def check_history(t):
    history = t.inputs.history
    costs = [TOK.count(f"{h['role']}: {h['content']}\n") for h in history]
    n, used = 0, 0  # the longest run of newest turns whose costs fit the history budget
    for cost in reversed(costs):
        if used + cost > t.budget.history:
            break
        n, used = n + 1, used + cost
    expected = [f"{h['role']}: {h['content']}" for h in history[len(history) - n:]]
    assert history_lines(t.prompt.text) == expected, (t.budget.history, costs)


# ---------------------------------------------------------------------------------------------
# properties
# ---------------------------------------------------------------------------------------------


@pytest.mark.slow
@SETTINGS
@given(candidates, configs, histories)
def test_labels_run_s1_to_sk_in_prompt_order(cands, config, history):
    check_labels(build(cands, QUERY, config, Inputs(history=history)))


@pytest.mark.slow
@SETTINGS
@given(candidates, configs)
def test_duplicate_merge_and_stale_links_name_a_survivor_of_their_stage(cands, config):
    check_relations(build(cands, QUERY, config))


@SETTINGS
@given(candidates, configs)
def test_a_chunk_is_stale_only_when_strictly_older_than_the_newest_present(cands, config):
    check_stale(build(cands, QUERY, config))


@pytest.mark.slow
@SETTINGS
@given(st.one_of(trim_candidates, candidates), st.one_of(trim_configs, configs), histories)
def test_the_final_trim_drops_only_passages_ranked_below_every_kept_one(cands, config, history):
    check_final_trim(build(cands, QUERY, config, Inputs(history=history)))


@pytest.mark.slow
@SETTINGS
@given(candidates, configs, histories)
def test_the_history_kept_is_the_newest_turns_that_fit(cands, config, history):
    check_history(build(cands, QUERY, config, Inputs(history=history)))


# ---------------------------------------------------------------------------------------------
# the same invariants on fixed inputs, with the expected values written by hand
# ---------------------------------------------------------------------------------------------


def test_a_user_document_takes_the_last_label_even_when_it_outranks_evidence():
    cands = [Candidate("A", "Refunds take five business days.", 0.9),
             Candidate("U", "My order number is 1234 and it arrived cracked.", 0.8, trust="user"),
             Candidate("B", "Return shipping is free for damaged items.", 0.7)]
    t = build(cands, QUERY, Config(budget=500, order="rank"))
    # evidence block first (A, B), then the user documents (U): labels follow that reading order
    assert prompt_label_lines(t.prompt.text) == [("S1", "A"), ("S2", "B"), ("S3", "U")]
    assert {d.id: d.label for d in t.decisions} == {"A": "S1", "B": "S2", "U": "S3"}
    check_labels(t)


def test_every_chunk_of_the_newest_version_survives_and_only_the_older_is_stale():
    cands = [Candidate("old", "Refunds above 300 EUR need a team lead.", 0.95, doc_id="p", chunk_index=0,
                       version="v1"),
             Candidate("new0", "Refunds above 500 EUR need a team lead.", 0.9, doc_id="p", chunk_index=0,
                       version="v2"),
             Candidate("new1", "The team lead answers within one business day.", 0.8, doc_id="p",
                       chunk_index=1, version="v2")]
    t = build(cands, QUERY, Config(budget=500))
    assert {d.id: d.fate for d in t.decisions} == {"old": "stale", "new0": "kept", "new1": "kept"}
    assert t.decision("old").superseded_by == "new0"  # the best-ranked chunk of the newest version
    check_stale(t)
    check_relations(t)


def test_version_ten_is_newer_than_version_nine():
    cands = [Candidate("v9", "Refunds take nine days.", 0.9, doc_id="p", version="v9"),
             Candidate("v10", "Refunds take ten days.", 0.5, doc_id="p", version="v10")]
    t = build(cands, QUERY, Config(budget=500))
    assert [d.fate for d in t.decisions] == ["stale", "kept"]


def test_three_identical_copies_all_name_the_first():
    text = "Refunds are processed within five business days to the original payment method."
    cands = [Candidate("a", text, 0.9), Candidate("b", text, 0.8), Candidate("c", text, 0.7)]
    t = build(cands, QUERY, Config(budget=500))
    assert [(d.fate, d.duplicate_of) for d in t.decisions] == [
        ("kept", None), ("exact_duplicate", "a"), ("exact_duplicate", "a")]
    check_relations(t)


def test_a_near_duplicate_names_the_survivor_not_the_copy_just_above_it():
    # a has 8 words; b adds a ninth (8/9 = 0.889 with a); c adds a tenth (9/10 = 0.9 with b, 8/10 = 0.8
    # with a). At 0.85, b is a near duplicate of a; c is close only to b, which did not survive, so c
    # stays: a duplicate may only be matched against survivors
    a = Candidate("a", "refunds take five business days by card only", 0.9)
    b = Candidate("b", "refunds take five business days by card only today", 0.8)
    c = Candidate("c", "refunds take five business days by card only today please", 0.7)
    t = build([a, b, c], QUERY, Config(budget=500, near_dup=0.85))
    assert [(d.fate, d.duplicate_of) for d in t.decisions] == [
        ("kept", None), ("near_duplicate", "a"), ("kept", None)]
    assert t.decision("b").similarity == pytest.approx(8 / 9, abs=1e-4)
    # at 0.75 c is close enough to a itself, and names a, never b
    t = build([a, b, c], QUERY, Config(budget=500, near_dup=0.75))
    assert [(d.fate, d.duplicate_of) for d in t.decisions] == [
        ("kept", None), ("near_duplicate", "a"), ("near_duplicate", "a")]
    assert t.decision("c").similarity == pytest.approx(8 / 10, abs=1e-4)
    check_relations(t)


def test_an_exact_copy_of_a_near_duplicate_names_its_identical_twin():
    """The chain the design allows: exact dedup runs first, so c names its identical copy b, and b is
    later dropped as a near duplicate of a (b survived exact dedup; the link means "same text as")."""
    a = Candidate("a", "alpha beta gamma delta", 0.9)
    b = Candidate("b", "alpha beta gamma delta epsilon", 0.8)
    c = Candidate("c", "alpha beta gamma delta epsilon", 0.7)
    t = build([a, b, c], QUERY, Config(budget=500))
    assert [(d.fate, d.duplicate_of) for d in t.decisions] == [
        ("kept", None), ("near_duplicate", "a"), ("exact_duplicate", "b")]


def _passage(n_words: int, word: str) -> str:
    return " ".join([word] * n_words) + "."


def test_the_final_trim_drops_the_lowest_ranked_passage_first():
    # a direct docs budget of 2000 lets select keep all four passages of 151 text tokens (150 words and
    # a full stop); with a label line each costs about 160. The 700-token window leaves 665 tokens of
    # input (int(700 * 0.95)); the fixed blocks take about 105 of them, so three passages fit
    # (105 + 3 * 160 = 585) and four do not (745): exactly one goes, and it must be the weakest, d.
    cands = [Candidate("d", _passage(150, "delta"), 0.6), Candidate("a", _passage(150, "alpha"), 0.9),
             Candidate("c", _passage(150, "gamma"), 0.7), Candidate("b", _passage(150, "beta"), 0.8)]
    t = build(cands, QUERY, Config(window=700, max_output=0, safety=0.05, budget=2000, order="rank"))
    assert t.budget.safe_input == 665
    assert TOK.count(cands[0].text) == 151
    assert [(d.id, d.fate, d.stage) for d in t.decisions if d.fate != "kept"] == [("d", "over_budget",
                                                                                   "final_count")]
    assert [d.id for d in t.kept()] == ["a", "b", "c"]
    check_final_trim(t)


def test_history_keeps_the_newest_turns():
    # each turn "user: turn i words words ... (40 words)" and its line break is 46 tokens; the history
    # budget is int((950 - 105) * 0.15) = 126 tokens: two turns (92) fit, three (138) do not, so the
    # prompt holds turns 4 and 5, the newest
    history = tuple({"role": "user", "content": f"turn {i} " + "words " * 40} for i in range(1, 6))
    t = build([Candidate("a", "Refunds take five days.", 0.9)], QUERY,
              Config(window=1000, max_output=0, history_share=0.15), Inputs(history=history))
    assert TOK.count("user: turn 1 " + "words " * 40 + "\n") == 46
    assert t.budget.history == 126
    lines = history_lines(t.prompt.text)
    assert [ln.split()[2] for ln in lines] == ["4", "5"]
    check_history(t)
