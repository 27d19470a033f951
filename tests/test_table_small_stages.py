"""Tables for the small stages: the budget split and its line and error (ctxcore.stages.budget), extractive
compression (ctxcore.stages.compress), the attention orders (ctxcore.stages.order) and merging adjacent chunks
(ctxcore.stages.merge), with the arithmetic worked by hand."""

import re

import pytest

from ctxcore import Budget, BuildError, Candidate, Config, Decision, Inputs, build, window_budget
from ctxcore.stages.budget import describe
from ctxcore.stages.compress import sentences, shrink
from ctxcore.stages.merge import runs
from ctxcore.stages.order import by_document, lost_in_the_middle, sandwich

# ---------------------------------------------------------------- budget

# 8192 - 1024 = 7168, * 0.95 = 6809.6 -> 6809 safe input; less 65 fixed leaves 6744; 0.4 of it: int(2697.6) = 2697
SEED = dict(window=8192, max_output=1024, safety=0.05, fixed=65, safe_input=6809)


@pytest.mark.parametrize("args, kwargs, want", [
    ((8192, 1024, 65), {"history_share": 0.4},
     Budget(**SEED, history=2697, docs=4047, history_cap=2697)),
    ((8192, 1024, 65), {"history_share": 0.4, "history_used": 300},
     Budget(**SEED, history=2697, docs=4047, history_cap=2697, history_used=300)),
    ((8192, 1024, 65), {},
     Budget(**SEED, history=0, docs=6744, history_auto=True, history_cap=2697)),
    ((8192, 1024, 65), {"history_used": 500},
     Budget(**SEED, history=500, docs=6244, history_auto=True, history_cap=2697, history_used=500)),
    ((8192, 1024, 65), {"history_used": 5000},  # auto holds at most the 0.4 share
     Budget(**SEED, history=2697, docs=4047, history_auto=True, history_cap=2697, history_used=5000)),
    ((8192, 1024, 65), {"docs": 500},
     Budget(**SEED, history=0, docs=500, docs_direct=True, history_auto=True, history_cap=2697)),
    ((8192, 1024, 65), {"history_share": 0.0},
     Budget(**SEED, history=0, docs=6744, history_cap=0)),
    # (4096 - 96) * 0.9 = 3600; less 100 leaves 3500; 0.25 of it is 875
    ((4096, 96, 100), {"safety": 0.1, "history_share": 0.25},
     Budget(window=4096, max_output=96, safety=0.1, fixed=100, safe_input=3600, history=875, docs=2625,
            history_cap=875)),
    # (1000 - 500) * 0.95 = 475; less 600 is -125: no history, and the documents are short
    ((1000, 500, 600), {"history_share": 0.4},
     Budget(window=1000, max_output=500, safety=0.05, fixed=600, safe_input=475, history=0, docs=-125,
            history_cap=0)),
])
def test_window_budget_records(args, kwargs, want):
    window, max_output, fixed = args
    assert window_budget(window, max_output, fixed=fixed, **kwargs) == want


@pytest.mark.parametrize("budget, line", [
    # (3900 - 256) * 0.95 = 3461.8 -> 3461; less 96 leaves 3365; 0.4 of it is 1346
    (window_budget(3900, 256, fixed=96),
     "safe input 3461, fixed 96, history 0 (auto: the history uses 0 of up to 1346), docs 3365"),
    (window_budget(8192, 1024, fixed=65, history_used=500),
     "safe input 6809, fixed 65, history 500 (auto: the history uses 500 of up to 2697), docs 6244"),
    (window_budget(8192, 1024, fixed=65, history_share=0.4),
     "safe input 6809, fixed 65, history 2697 (a fixed share), docs 4047"),
    (window_budget(8192, 1024, fixed=65, history_share=0.4, history_used=300),
     "safe input 6809, fixed 65, history 2697 (a fixed share; the history uses 300), docs 4047"),
    (window_budget(8192, 1024, fixed=65, docs=500),
     "safe input 6809, fixed 65, history 0 (auto: the history uses 0 of up to 2697), docs 500 (given directly)"),
])
def test_the_budget_line(budget, line):
    assert describe(budget) == line


def test_the_budget_error_in_full():
    # int((200 - 100) * 0.9) = 90 tokens of input; "policy " * 200 alone is over 200 tokens
    with pytest.raises(BuildError) as err:
        build([Candidate("a", "x", 1.0)], "q", Config(window=200, max_output=100, safety=0.1),
              Inputs(system="policy " * 200))
    m = re.fullmatch(r"the mandatory blocks \(system, instructions, schema, tools, rule, question\) need (\d+) "
                     r"tokens but the input budget is 90 \(window 200 - max_output 100, less 10% safety\); "
                     r"raise the window or shorten those blocks", str(err.value))
    assert m and int(m[1]) > 200


def test_a_build_holds_the_budget_it_was_given():
    t = build([Candidate("a", "refunds", 1.0)], "q", Config(window=4096, max_output=96, safety=0.1, budget=300,
                                                            history_share=0.25))
    b = t.budget
    # 3600 safe input; the fixed blocks are counted, 0.25 of what they leave is held for history
    assert (b.window, b.max_output, b.safety, b.safe_input, b.docs, b.docs_direct) == (4096, 96, 0.1, 3600, 300,
                                                                                       True)
    assert (b.history, b.history_cap, b.history_auto) == (int((3600 - b.fixed) * 0.25),) * 2 + (False,)


def test_mandatory_blocks_that_exactly_fill_the_input_budget_are_allowed():
    fixed = build([], "q", Config()).budget.fixed  # the mandatory blocks do not depend on the window
    t = build([], "q", Config(window=100 + fixed, max_output=100, safety=0.0))
    assert (t.budget.safe_input, t.budget.history, t.budget.docs, t.budget.history_used) == (fixed, 0, 0, 0)
    with pytest.raises(BuildError):
        build([], "q", Config(window=99 + fixed, max_output=100, safety=0.0))


TURNS = tuple({"role": r, "content": c} for r, c in [
    ("user", "Where is my refund for order 1234?"), ("assistant", "It was issued on Monday."),
    ("user", "When will it arrive on my card?"), ("assistant", "Within five business days of issue."),
    ("user", "Can I get it faster?"), ("assistant", "No, the bank sets the speed.")])


def _history_cost(tok, cap):
    """Reference: the newest whole turns that fit under cap, plus the history fence when any is kept."""
    used, kept = 0, 0
    for turn in reversed(TURNS):
        cost = len(tok.encode(f"{turn['role']}: {turn['content']}\n"))
        if used + cost > cap:
            break
        used, kept = used + cost, kept + 1
    return (used + len(tok.encode("<history>\n</history>\n\n")) if kept else 0), kept


@pytest.mark.parametrize("share", [0.05, 0.1, "auto"])
def test_the_history_budget_holds_what_the_kept_turns_cost(cl100k, share):
    t = build([], "q", Config(window=1000, max_output=100, safety=0.0, history_share=share), Inputs(history=TURNS))
    b = t.budget
    remaining = 900 - b.fixed  # (1000 - 100) * 1.0 = 900 safe input
    cap = int(remaining * (0.4 if share == "auto" else share))
    used, kept = _history_cost(cl100k, cap)
    assert (b.history_cap, b.history_used, b.history, b.docs) == (
        cap, used, used if share == "auto" else cap, remaining - (used if share == "auto" else cap))
    history = [blk for blk in t.blocks if blk.kind == "history"]
    assert [blk.tokens for blk in history] == [used]  # assembly keeps the same turns
    assert t.prompt.text.count("\nuser: ") + t.prompt.text.count("\nassistant: ") == kept


# ---------------------------------------------------------------- compress

@pytest.mark.parametrize("text, want", [
    ("One. Two!  Three? four", ["One.", "Two!", "Three?", "four"]),
    ("a.b c. d", ["a.b c.", "d"]),  # a dot inside a word does not end a sentence
    ("Hi.\n\nThere", ["Hi.", "There"]),
    ("  ", []),
    ("", []),
    ("No end", ["No end"]),
])
def test_sentences(text, want):
    assert sentences(text) == want


TEXT = ("Refunds take five days. Shipping is free. Refunds of gifts take ten business days. "
        "Warranty covers defects.")
# query words shared: sentence 0 {refunds, take, days} = 3, sentence 2 {refunds, take, business, days} = 4;
# word counts: sentence 0 has 4 words, sentence 2 has 7


def word_count(s):
    return len(s.split())


@pytest.mark.parametrize("query, limit, want", [
    ("how many business days do refunds take", 11, "Refunds take five days. Refunds of gifts take ten business days."),
    ("how many business days do refunds take", 10, "Refunds of gifts take ten business days."),
    ("how many business days do refunds take", 7, "Refunds of gifts take ten business days."),
    ("how many business days do refunds take", 6, "Refunds take five days."),  # the best does not fit: the next
    ("how many business days do refunds take", 3, None),
    ("refunds", 7, "Refunds take five days."),  # a tie: the earlier sentence first
    ("refunds", 4, "Refunds take five days."),
    ("warranty", 1, None),
    ("warranty", 3, "Warranty covers defects."),
    ("free shipping warranty", 6, "Shipping is free. Warranty covers defects."),
    ("nothing shared", 100, None),
    ("refunds", 0, None),
    ("refunds", -5, None),
])
def test_shrink_keeps_the_best_sentences_that_fit_in_source_order(query, limit, want):
    assert shrink(TEXT, query, limit, word_count) == want


def test_a_limit_of_zero_keeps_nothing_whatever_the_counter_says():
    assert shrink(TEXT, "refunds", 0, lambda s: 0) is None


def test_shrink_counts_the_joined_text():
    # by characters: "Refunds." (8) + " " + "Refunds too." (12) is 21
    text = "Refunds. Refunds too."
    assert shrink(text, "refunds", 21, len) == "Refunds. Refunds too."
    assert shrink(text, "refunds", 20, len) == "Refunds."
    assert shrink("Refunds.", "refunds", 1, word_count) == "Refunds."


# ---------------------------------------------------------------- order

@pytest.mark.parametrize("ranked, want_sandwich, want_middle", [
    ([], [], []),
    (["1"], ["1"], ["1"]),
    (["1", "2"], ["1", "2"], ["1", "2"]),
    (list("123"), list("132"), list("132")),
    (list("1234"), list("1342"), list("1342")),
    (list("12345"), list("13452"), list("13542")),
    (list("12345678"), list("13456782"), list("13578642")),
    (list("123456789"), list("134567892"), list("135798642")),
])
def test_attention_orders(ranked, want_sandwich, want_middle):
    assert sandwich(ranked) == want_sandwich
    assert lost_in_the_middle(ranked) == want_middle


def test_sandwich_returns_a_new_list():
    ranked = ["1", "2"]
    out = sandwich(ranked)
    assert out == ranked and out is not ranked
    assert sandwich(("1", "2")) == ["1", "2"]


def test_document_order_groups_by_best_member_with_unnumbered_chunks_last():
    doc = {"b2": "B", "a1": "A", "aN": "A", "b0": "B", "a0": "A"}
    index = {"b2": 2, "a1": 1, "aN": None, "b0": 0, "a0": 0}
    assert by_document(["b2", "a1", "aN", "b0", "a0"], doc.get, index.get) == ["b0", "b2", "a0", "a1", "aN"]
    assert by_document(["aN", "a1"], doc.get, index.get) == ["a1", "aN"]


FIVE = [  # input order c3 c1 c5 c4 c2; rank order by score c1 c2 c3 c4 c5
    Candidate("c3", "third passage about refunds", 0.7, doc_id="A", chunk_index=0),
    Candidate("c1", "first passage about refunds", 0.9, doc_id="A", chunk_index=5),
    Candidate("c5", "fifth passage about refunds", 0.5),
    Candidate("c4", "fourth passage about refunds", 0.6, doc_id="B", chunk_index=0),
    Candidate("c2", "second passage about refunds", 0.8),
]


@pytest.mark.parametrize("order, want", [
    ("rank", ["c1", "c2", "c3", "c4", "c5"]),
    ("sandwich", ["c1", "c3", "c4", "c5", "c2"]),
    ("lost-in-the-middle", ["c1", "c3", "c5", "c4", "c2"]),
    ("original", ["c3", "c1", "c5", "c4", "c2"]),
    # A (best c1) holds c3 (chunk 0) and c1 (chunk 5); c2 and c5 have no document, each its own group; B holds c4
    ("document", ["c3", "c1", "c2", "c4", "c5"]),
])
def test_prompt_order_of_a_build(order, want):
    t = build(FIVE, "refunds", Config(order=order, near_dup=None))
    assert [d.id for d in t.kept()] == want
    assert [d.position for d in t.kept()] == [1, 2, 3, 4, 5]


# ---------------------------------------------------------------- merge

@pytest.mark.parametrize("indexes, want", [
    ([], []),
    ([3], [[3]]),
    ([0, 1, 2, 5, 6, 9], [[0, 1, 2], [5, 6], [9]]),
    ([1, 3, 5], [[1], [3], [5]]),
    ([4, 5], [[4, 5]]),
])
def test_runs_of_consecutive_indexes(indexes, want):
    assert runs(indexes) == want


MERGING = [
    Candidate("a0", "Refunds are processed in five days.", 0.5, doc_id="D", chunk_index=0),
    Candidate("a1", "Refunds for gifts go to the giver.", 0.9, doc_id="D", chunk_index=1),
    Candidate("a2", "Store credit never expires.", None, doc_id="D", chunk_index=2),
    Candidate("a4", "Shipping is free over 50 dollars.", 0.3, doc_id="D", chunk_index=4),
    Candidate("b", "Warranty covers defects.", 0.7, doc_id="E", chunk_index=0),
    Candidate("bdup", "Warranty is twelve months.", 0.2, doc_id="E", chunk_index=0),  # same index: b ranks higher
    Candidate("e1", "Claims need a receipt.", 0.1, doc_id="E", chunk_index=1),
    Candidate("x", "No document here.", 0.6),
    Candidate("y", "No index here.", 0.4, doc_id="D"),
]


def test_adjacent_chunks_merge_into_the_first_in_source_order(cl100k):
    t = build(MERGING, "refunds", Config(merge_adjacent=True, order="rank", near_dup=None))
    merged = [d for d in t.decisions if d.fate == "merged"]
    assert merged == [
        Decision("a1", "merged", "merge", "chunk 1 of D follows chunk 0; joined into the passage of a0 (chunks 0-2)",
                 merged_into="a0"),
        Decision("a2", "merged", "merge", "chunk 2 of D follows chunk 1; joined into the passage of a0 (chunks 0-2)",
                 merged_into="a0"),
        Decision("e1", "merged", "merge", "chunk 1 of E follows chunk 0; joined into the passage of b (chunks 0-1)",
                 merged_into="b"),
    ]
    head_a = "Refunds are processed in five days.\nRefunds for gifts go to the giver.\nStore credit never expires."
    head_b = "Warranty covers defects.\nClaims need a receipt."
    # a passage ranks where its best member ranked (a0's passage: a1's rank 1) and carries the best score
    assert [(d.id, d.text) for d in t.kept()] == [("a0", head_a), ("b", head_b), ("x", None), ("y", None),
                                                  ("a4", None), ("bdup", None)]
    kept = {d.id: d for d in t.kept()}
    assert (kept["a0"].tokens, kept["b"].tokens) == (len(cl100k.encode(head_a)), len(cl100k.encode(head_b)))
    assert kept["a0"].reason.startswith("rank 1, score 0.9;")
    assert kept["b"].reason.startswith("rank 2, score 0.7;")
    assert "[S1] source=a0 doc=D score=0.9\n" + head_a + "\n" in t.prompt.text


def test_a_run_of_unscored_chunks_stays_unscored():
    cands = [Candidate("p", "Part one of the policy.", None, doc_id="P", chunk_index=7),
             Candidate("q", "Part two of the policy.", None, doc_id="P", chunk_index=8)]
    t = build(cands, "policy", Config(merge_adjacent=True, near_dup=None))
    assert [(d.id, d.fate, d.text) for d in t.decisions] == [
        ("p", "kept", "Part one of the policy.\nPart two of the policy."), ("q", "merged", None)]
    assert t.decision("q").reason == "chunk 8 of P follows chunk 7; joined into the passage of p (chunks 7-8)"
    assert "[S1] source=p doc=P\n" in t.prompt.text  # no score to show


def test_without_a_run_or_without_the_setting_nothing_merges():
    lone = [Candidate("a", "one", 0.5, doc_id="D", chunk_index=0), Candidate("b", "two", 0.4, doc_id="D",
                                                                            chunk_index=2)]
    for cands, config in ((lone, Config(merge_adjacent=True)), (MERGING, Config(merge_adjacent=False))):
        t = build(cands, "q", config.replace(near_dup=None))
        assert {d.fate for d in t.decisions} == {"kept"}
        assert all(d.text is None for d in t.decisions)


def test_a_lone_chunk_before_a_run_does_not_stop_the_merge():
    cands = [Candidate("k0", "Chunk zero.", 0.9, doc_id="K", chunk_index=0),
             Candidate("k2", "Chunk two.", 0.8, doc_id="K", chunk_index=2),
             Candidate("k3", "Chunk three.", 0.7, doc_id="K", chunk_index=3)]
    t = build(cands, "chunk", Config(merge_adjacent=True, near_dup=None, order="rank"))
    assert [(d.id, d.fate, d.text) for d in t.decisions] == [
        ("k0", "kept", None), ("k2", "kept", "Chunk two.\nChunk three."), ("k3", "merged", None)]
    assert t.decision("k3").reason == "chunk 3 of K follows chunk 2; joined into the passage of k2 (chunks 2-3)"
