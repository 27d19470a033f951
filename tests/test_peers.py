"""Issue #15: LangChain, LlamaIndex and Haystack conventions, and where ctxcore differs.

Every expected order and number below is written from the peer's own source (cited next to it), not
from ctxcore's output.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from streamlit.testing.v1 import AppTest

import ctxcore
from ctxcore import trace_from_json, Candidate, Config, Inputs, Trace, build, window_budget
from ctxcore.stages.order import lost_in_the_middle, sandwich
from ctxcore.pipeline import state_before, unique_ids
from ctxcore.stages import select
from conftest import cli

ROOT = Path(__file__).resolve().parents[1]


def _kinds(trace: Trace) -> dict[str, list]:
    out: dict[str, list] = {}
    for w in trace.warnings:
        out.setdefault(w.kind, []).append(w)
    return out


def _ranked(n: int, **extra) -> list[Candidate]:
    """n candidates c1..cn, c1 the best-scored; texts share no words (nothing is a near duplicate)."""
    return [Candidate(f"c{i}", f"passage{i} word{i} text{i}.", round(1 - i / 100, 2), **extra) for i in range(1, n + 1)]


# --------------------------------------------------------------------------- 1. ordering

def test_lost_in_the_middle_is_haystacks_order():
    # haystack test/components/rankers/test_lost_in_the_middle.py (test_lost_in_the_middle_order_odd):
    # nine documents 1..9 come out "1 3 5 7 9 8 6 4 2"
    assert lost_in_the_middle(list("123456789")) == list("135798642")
    # haystack/components/rankers/lost_in_the_middle.py inserts each next document at len//2 + len%2:
    # [1] [1 2] [1 3 2] [1 3 4 2] [1 3 5 4 2] [1 3 5 6 4 2] [1 3 5 7 6 4 2] [1 3 5 7 8 6 4 2]
    assert lost_in_the_middle(list("12345678")) == list("13578642")
    assert lost_in_the_middle(["1"]) == ["1"] and lost_in_the_middle([]) == []


def test_sandwich_stays_as_the_seed_defines_it():
    # the seed's order_for_attention: best first, second best last, ranks 3..N in rank order between
    assert sandwich(list("123456789")) == list("134567892")


def _long_context_reorder(ranked):
    """LangChain's libs/community/langchain_community/document_transformers/long_context_reorder.py
    (_litm_reordering): reverse the list, then even positions go to the front and odd ones to the back.
    LlamaIndex's llama-index-core/llama_index/core/postprocessor/node.py (LongContextReorder) sorts by score
    ascending and does the same, so for ranked input both give this."""
    out = []
    for i, value in enumerate(reversed(ranked)):
        if i % 2 == 1:
            out.append(value)
        else:
            out.insert(0, value)
    return out


def test_long_context_reorder_puts_the_best_last_when_n_is_even():
    # written from the peers' source: 4 ranked -> 2 4 3 1 (the best last); 5 ranked -> 1 3 5 4 2
    assert _long_context_reorder(list("1234")) == list("2431")
    assert _long_context_reorder(list("12345")) == list("13542")
    for n in range(1, 12):
        ranked = [str(i) for i in range(1, n + 1)]
        ours = lost_in_the_middle(ranked)
        theirs = _long_context_reorder(ranked)
        assert theirs == (ours if n % 2 else ours[::-1]), n  # the README's side-by-side says exactly this


def test_build_orders_nine_passages_lost_in_the_middle():
    t = build(_ranked(9), "q", Config(order="lost-in-the-middle"))
    assert [d.id for d in t.kept()] == ["c1", "c3", "c5", "c7", "c9", "c8", "c6", "c4", "c2"]
    assert [d.label for d in t.kept()] == [f"S{i}" for i in range(1, 10)]
    t = build(_ranked(9), "q", Config(order="sandwich"))
    assert [d.id for d in t.kept()] == ["c1", "c3", "c4", "c5", "c6", "c7", "c8", "c9", "c2"]


@pytest.mark.slow
def test_every_order_is_described_and_reachable_from_the_cli(tmp_path):
    meanings = dict(ctxcore.settings.BY_NAME["order"].meanings)
    assert "1 3 5 7 9 8 6 4 2" in meanings["lost-in-the-middle"]
    assert "weakest in the very middle" in meanings["lost-in-the-middle"]
    assert "weakest sits next to last" in meanings["sandwich"]
    path = tmp_path / "nine.json"
    path.write_text(json.dumps([{"id": c.id, "text": c.text, "score": c.score} for c in _ranked(9)]))
    code, out, _ = cli("build", str(path), "--order", "lost-in-the-middle", "--format", "json")
    assert code == 0
    kept = sorted((d for d in json.loads(out)["decisions"] if d["fate"] == "kept"), key=lambda d: d["position"])
    assert [d["id"] for d in kept] == ["c1", "c3", "c5", "c7", "c9", "c8", "c6", "c4", "c2"]


def test_learn_ordering_step_describes_sandwich_exactly():
    from ctxui.steps import STEPS

    step = next(s for s in STEPS if s.key == "ordering")
    assert "weakest in the middle" not in step.text and "sit in the middle" not in step.text
    assert "second best last" in step.text and "1 3 5 7 9 8 6 4 2" in step.text
    assert {"sandwich", "lost-in-the-middle"} <= set(step.options)


def test_learn_ordering_step_shows_the_two_orders_side_by_side():
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.query_params["step"] = "9"
    at.run()
    at.switch_page("pages/learn.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    frame = next(d.value for d in at.dataframe if "lost-in-the-middle: rank" in d.value.columns)
    n = len(frame)
    assert n >= 3
    # ranks position by position, written from the two definitions
    assert list(frame["sandwich: rank"]) == [1, *range(3, n + 1), 2]
    assert list(frame["lost-in-the-middle: rank"]) == lost_in_the_middle(list(range(1, n + 1)))


# --------------------------------------------------------------------------- 2. history_share: auto

def test_llamaindex_default_window_without_history():
    # llama-index-core/llama_index/core/constants.py: DEFAULT_CONTEXT_WINDOW = 3900, DEFAULT_NUM_OUTPUTS = 256;
    # indices/prompt_helper.py gives the chunks context_window - prompt tokens - num_output.
    cands = [Candidate("a", "Refunds are processed within five business days.", 0.9)]
    auto = build(cands, "q", Config(window=3900, max_output=256))
    fixed = auto.budget.fixed
    assert fixed == 96  # the rule, the evidence fence and "Question: q", measured (cl100k_base)
    safe_input = int((3900 - 256) * 0.95)
    assert safe_input == 3461
    assert (auto.budget.safe_input, auto.budget.history, auto.budget.docs) == (safe_input, 0, safe_input - fixed)
    assert auto.budget.docs == 3365 and auto.budget.history_auto and auto.budget.history_cap == 1346
    # before (a fixed 0.40 share): 1,346 tokens held for a history that does not exist
    share = build(cands, "q", Config(window=3900, max_output=256, history_share=0.4))
    assert (share.budget.history, share.budget.docs) == (int((3461 - 96) * 0.4), 3461 - 96 - int((3461 - 96) * 0.4))
    assert (share.budget.history, share.budget.docs) == (1346, 2019)
    assert 3900 - 256 - fixed == 3548  # what LlamaIndex offers (it takes no safety margin)
    bare = build(cands, "q", Config(window=3900, max_output=256, safety=0))
    assert bare.budget.docs == 3548  # ... and what ctxcore gives with safety 0: the README's PromptHelper row


HISTORY = tuple({"role": r, "content": f"turn {i}: " + "the customer asks about refunds again " * 8}
                for i, r in enumerate(["user", "assistant"] * 5))


def test_auto_holds_what_the_history_uses_and_keeps_the_same_turns(cl100k):
    cands = [Candidate(f"c{i}", f"Refund rule {i}: " + "details of the refund policy " * 20, 0.9 - i / 100)
             for i in range(30)]
    for window in (8192, 2000, 1200):
        auto = build(cands, "refunds?", Config(window=window, max_output=256), Inputs(history=HISTORY))
        share = build(cands, "refunds?", Config(window=window, max_output=256, history_share=0.4),
                      Inputs(history=HISTORY))
        history_blocks = [b for b in auto.blocks if b.kind == "history"]
        assert [b.tokens for b in history_blocks] == [b.tokens for b in share.blocks if b.kind == "history"]
        b = auto.budget
        # the history gets what its kept turns use (each turn line, and the block's fence), at most the 40% share
        kept_turns = auto.prompt.text.count("turn ")
        want = sum(cl100k.count(f"{t['role']}: {t['content']}\n") for t in HISTORY[len(HISTORY) - kept_turns:])
        want += cl100k.count("<history>\n</history>\n\n")
        assert b.history == min(want, b.history_cap) and b.history_used == want
        assert b.docs == b.safe_input - b.fixed - b.history
        assert auto.prompt.tokens <= b.safe_input
        assert ctxcore.evidence_cost(auto) >= ctxcore.evidence_cost(share)
        assert not [d for d in auto.decisions if d.stage == "final_count"]


@pytest.mark.slow
def test_the_cli_budget_line_says_auto():
    code, out, _ = cli("build", str(ROOT / "sample_data" / "02_buried_in_middle.json"))
    line = next(l for l in out.splitlines() if l.startswith("budget:"))
    assert "history 0 (auto: the history uses 0 of up to" in line
    code, out, _ = cli("build", str(ROOT / "sample_data" / "02_buried_in_middle.json"), "--history-share", "0.4")
    line = next(l for l in out.splitlines() if l.startswith("budget:"))
    assert "(a fixed share; the history uses 0)" in line
    code, _, err = cli("build", str(ROOT / "sample_data" / "02_buried_in_middle.json"), "--history-share", "most")
    assert code == 2


def test_history_share_controls_and_link():
    from ctxui.linkparams import LINK_BY_KEY
    from ctxui.settings import DEFAULTS, config_from_controls, controls_from_config

    values, _ = controls_from_config({**DEFAULTS})
    assert values["history_auto"] is True and config_from_controls(values)["history_share"] == "auto"
    values, _ = controls_from_config({**DEFAULTS, "history_share": 0.25})
    assert (values["history_auto"], values["history_share"]) == (False, 0.25)
    assert config_from_controls(values)["history_share"] == 0.25
    hist = LINK_BY_KEY["hist"]
    assert hist.decode("auto") == {"history_auto": True}
    assert hist.decode("0.3") == {"history_auto": False, "history_share": 0.3}
    assert hist.encode({"history_auto": True, "history_share": 0.4}) == "auto"
    with pytest.raises(ValueError, match="^must be a fraction from 0 to 1 or 'auto'$"):
        hist.decode("2")


def test_a_link_with_a_fixed_history_share_sets_the_toggle():
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.query_params["scenario"] = "04_stale_policy"
    at.query_params["hist"] = "0.4"
    at.query_params["unsc"] = "1"
    at.query_params["min"] = "0.5"
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.toggle(key="dbg.history_auto").value is False
    assert at.slider(key="dbg.history_share").value == pytest.approx(0.4)
    assert at.checkbox(key="dbg.drop_unscored").value is True
    cfg = at.session_state["ctx.trace"].config
    assert (cfg.history_share, cfg.drop_unscored, cfg.min_score) == (0.4, True, 0.5)
    shown = " ".join(c.value for c in at.caption).replace("\\", "")  # captions are markdown-escaped
    assert "history 2,656 (a fixed share; the conversation uses 593)" in shown


# --------------------------------------------------------------------------- 3. repeated ids

def test_same_id_same_text_keeps_the_best_scored_copy():
    # haystack/components/joiners/document_joiner.py (_concatenate): of documents sharing an id, the one with
    # the highest score is kept. Here the vector retriever's copy (0.82) beats the keyword one (0.31).
    text = "Refunds are processed within five business days."
    cands = [Candidate("kb-1", text, 0.31), Candidate("kb-2", "Shipping is free over 50 EUR.", 0.6),
             Candidate("kb-1", text, 0.82)]
    t = build(cands, "refunds", Config())
    assert [d.id for d in t.decisions] == ["kb-1#2", "kb-2", "kb-1"]  # one decision per input candidate, in order
    dup = t.decisions[0]
    assert (dup.fate, dup.stage, dup.duplicate_of) == ("exact_duplicate", "ids", "kb-1")
    assert "0.31" in dup.reason and "0.82" in dup.reason
    assert t.decision("kb-1").fate == "kept" and "score=0.82" in t.prompt.text
    (w,) = _kinds(t)["repeated_ids"]
    assert w.ids == ("kb-1", "kb-1#2")
    assert [c.id for c in t.candidates] == ["kb-1#2", "kb-2", "kb-1"]


def test_same_id_other_text_is_renamed_in_input_order():
    cands = [Candidate("a", "alpha text one", 0.5), Candidate("b", "beta", 0.4), Candidate("a", "gamma two", 0.9),
             Candidate("a", "delta three", 0.7)]
    t = build(cands, "q", Config(order="rank"))
    assert [d.id for d in t.decisions] == ["a", "b", "a#2", "a#3"]
    assert all(d.fate == "kept" for d in t.decisions)
    assert [d.id for d in t.kept()] == ["a#2", "a#3", "a", "b"]
    (w,) = _kinds(t)["repeated_ids"]
    assert "renamed a#2, a#3" in w
    # the renamed trace reads back and replays: its ids are unique now
    again = trace_from_json(t.to_json())
    assert [d.id for d in again.decisions] == ["a", "b", "a#2", "a#3"]


def test_renaming_skips_ids_the_input_already_uses_and_mixes_both_cases():
    cands = (Candidate("a", "x", 0.2), Candidate("a#2", "other", 0.1), Candidate("a", "x", 0.9),
             Candidate("a", "y", 0.5), Candidate("a", "y", 0.6))
    out, dropped, notes = unique_ids(cands)
    # the best-scored copy of the first text keeps "a"; the others are a#3, a#4, a#5 in input order (a#2 is taken)
    assert [c.id for c in out] == ["a#3", "a#2", "a", "a#4", "a#5"]
    assert sorted((d.id, d.duplicate_of) for d in dropped) == [("a#3", "a"), ("a#4", "a#5")]
    t = build(list(cands), "q", Config())
    assert len(t.decisions) == 5 and len({d.id for d in t.decisions}) == 5


# --------------------------------------------------------------------------- 4. MMR on embeddings

def _mmr_case(embed_c=True):
    # a and b say the same thing in other words (no shared word), c is about something else;
    # their embeddings say what a reader would: a and b are the same, c is different
    return [Candidate("a", "refunds take five business days", 0.9, embedding=(1.0, 0.0)),
            Candidate("b", "money returned within a working week", 0.85, embedding=(1.0, 0.0)),
            Candidate("c", "shipping is free over fifty euros", 0.5, embedding=(0.0, 1.0) if embed_c else None)]


def test_mmr_uses_cosine_when_every_candidate_carries_an_embedding():
    # libs/core/langchain_core/vectorstores/utils.py (maximal_marginal_relevance): the next pick maximises
    # lambda * relevance - (1 - lambda) * max cosine with those picked. After a: b scores 0.5*0.85 - 0.5*1 = -0.075,
    # c scores 0.5*0.5 - 0.5*0 = 0.25, so c is second.
    cfg = Config(select="mmr", mmr_lambda=0.5, max_passages=2, near_dup=None, order="rank")
    t = build(_mmr_case(), "refunds", cfg)
    assert [d.id for d in t.kept()] == ["a", "c"]
    (w,) = _kinds(t)["similarity_used"]
    assert "cosine" in w and "by MMR (cosine of embeddings)" in t.decision("a").reason
    # one candidate without an embedding: word-set Jaccard (a and b share no word, so b is second)
    t = build(_mmr_case(embed_c=False), "refunds", cfg)
    assert [d.id for d in t.kept()] == ["a", "b"]
    (w,) = _kinds(t)["similarity_used"]
    assert "word-set Jaccard" in w and "1 of 3 candidates carry no embedding" in w


_WORDS = ["refund", "policy", "days", "card", "bank", "ship"]


@st.composite
def _embedded(draw):
    n = draw(st.integers(1, 10))
    cands = [Candidate(f"c{i}", " ".join(draw(st.lists(st.sampled_from(_WORDS), min_size=1, max_size=12))),
                       draw(st.one_of(st.none(), st.floats(0, 1, allow_nan=False))),
                       embedding=tuple(draw(st.lists(st.floats(-1, 1, allow_nan=False), min_size=3, max_size=3))))
             for i in range(n)]
    cfg = Config(budget=draw(st.integers(0, 200)), select="mmr", mmr_lambda=draw(st.sampled_from([0.0, 0.3, 0.7, 1.0])),
                 near_dup=None, max_passages=draw(st.one_of(st.none(), st.integers(1, 4))))
    return cands, cfg


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_embedded())
def test_mmr_on_embeddings_fast_walk_equals_the_plain_rule(case):
    cands, cfg = case
    before = state_before(select.run, cands, "refund policy", cfg)
    fast, plain = select.run(before), select.definition(before)
    assert [d.id for d in fast.kept] == [d.id for d in plain.kept]
    assert sorted(fast.removed) == sorted(plain.removed)
    assert [w.kind for w in fast.warnings] == [w.kind for w in plain.warnings]


# --------------------------------------------------------------------------- 5. unscored candidates and min_score

def _mixed():
    return [Candidate("s1", "scored high", 0.9), Candidate("s2", "scored low", 0.2),
            Candidate("u1", "unscored one"), Candidate("u2", "unscored two"), Candidate("u3", "unscored three")]


def test_unscored_candidates_pass_min_score_with_a_warning():
    t = build(_mixed(), "q", Config(min_score=0.5))
    assert {d.id: d.fate for d in t.decisions} == {"s1": "kept", "s2": "below_threshold", "u1": "kept",
                                                  "u2": "kept", "u3": "kept"}
    (w,) = _kinds(t)["unscored_unchecked"]
    assert "3 unscored candidates were not checked against min_score" in w and w.ids == ("u1", "u2", "u3")


def test_drop_unscored_drops_them_as_llamaindex_does():
    # llama-index-core/llama_index/core/postprocessor/node.py (SimilarityPostprocessor): with a cutoff set,
    # a node whose score is None is not used; so only s1 is left
    t = build(_mixed(), "q", Config(min_score=0.5, drop_unscored=True))
    assert [d.id for d in t.decisions if d.fate == "kept"] == ["s1"]
    u1 = t.decision("u1")
    assert (u1.fate, u1.stage) == ("below_threshold", "threshold") and "unscored" in u1.reason
    assert "unscored_unchecked" not in _kinds(t)
    # without min_score nothing is checked, so nothing is dropped
    assert build(_mixed(), "q", Config(drop_unscored=True)).fate_counts()["kept"] == 5


@pytest.mark.slow
def test_drop_unscored_flag(tmp_path):
    path = tmp_path / "mixed.json"
    path.write_text(json.dumps([{"id": c.id, "text": c.text, **({"score": c.score} if c.score is not None else {})}
                                for c in _mixed()]))
    code, out, _ = cli("build", str(path), "--min-score", "0.5", "--drop-unscored", "--format", "json")
    assert code == 0
    trace = json.loads(out)
    assert trace["config"]["drop_unscored"] is True
    assert [d["id"] for d in trace["decisions"] if d["fate"] == "kept"] == ["s1"]


# --------------------------------------------------------------------------- 6. recency without a doc_id

def test_dated_candidates_without_doc_id_are_not_compared_and_the_trace_says_so():
    # llama-index-core/llama_index/core/postprocessor/node_recency.py (FixedRecencyPostprocessor) sorts all
    # nodes by their date and keeps the newest top_k (1): it would keep only "new". ctxcore compares versions
    # within one doc_id, so both stay, and the trace warns.
    cands = [Candidate("old", "Refunds take 10 days.", 0.9, date="2024-01-01"),
             Candidate("new", "Refunds take 5 days.", 0.8, date="2026-01-01")]
    t = build(cands, "q", Config())
    assert t.fate_counts()["stale"] == 0 and t.fate_counts()["kept"] == 2
    (w,) = _kinds(t)["no_doc_id"]
    assert w.ids == ("old", "new") and "2 of 2 dated candidates have no doc_id" in w
    # with a doc_id they are compared: the older is stale, and nothing is warned
    same = [Candidate(c.id, c.text, c.score, doc_id="refunds", date=c.date) for c in cands]
    t = build(same, "q", Config())
    assert t.decision("old").fate == "stale" and "no_doc_id" not in _kinds(t)
    # prefer_newest off compares nothing anyway: no warning
    assert "no_doc_id" not in _kinds(build(cands, "q", Config(prefer_newest=False)))


def test_new_warning_kinds_are_declared_and_in_the_schema():
    from ctxcore.records import WARNING_KINDS
    from ctxcore.io.schema import trace_schema

    kinds = trace_schema()["$defs"]["TraceWarning"]["properties"]["kind"]["description"]
    for kind in ("repeated_ids", "similarity_used", "unscored_unchecked", "no_doc_id"):
        assert kind in WARNING_KINDS and kind in kinds
    budget = trace_schema()["$defs"]["Budget"]["properties"]
    assert {"history_auto", "history_cap", "history_used"} <= set(budget)


def test_readme_has_the_coming_from_table():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## Coming from LangChain / LlamaIndex / Haystack"):]
    for name in ("LongContextReorder", "LostInTheMiddleRanker", "SimilarityPostprocessor", "EmbeddingsRedundantFilter",
                 "DocumentJoiner", "PrevNextNodePostprocessor", "PromptHelper", "trim_messages",
                 "maximal_marginal_relevance"):
        assert name in section, name


def test_a_rebuild_after_drop_unscored_changes_is_a_fresh_build():
    from ctxcore.pipeline import clear_caches

    cands = _mixed() * 1
    base = Config(min_score=0.5)
    clear_caches()
    fresh = build(cands, "q", base.replace(drop_unscored=True)).to_json()
    clear_caches()
    build(cands, "q", base)
    assert build(cands, "q", base.replace(drop_unscored=True)).to_json() == fresh


def test_history_crowding_fix_under_auto():
    from conftest import text_of_tokens
    from ctxcore.analysis.explain import findings

    history = tuple({"role": "user", "content": "We talked about the 500 EUR limit before. " * 8} for _ in range(20))
    cands = [Candidate(f"c{i}", text_of_tokens(700, w), 0.9 - i / 10) for i, w in enumerate(["a", "b", "c"])]
    t = build(cands, "q", Config(window=2400, max_output=200), Inputs(history=history))
    b = t.budget  # whole turns under the 0.4 ceiling: 753 of 797 here
    assert b.history_auto and b.history == b.history_used and b.history_cap - 100 < b.history <= b.history_cap
    f = next(f for f in findings(t) if f.kind == "history_crowding")
    assert f.fix == {"history_share": 0.2} and f.fix_verified  # half of auto's 0.4 ceiling
