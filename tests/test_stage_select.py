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
    from ctxcore.assemble import label_line

    c = Candidate("doc-1", "Refunds take five days.", 0.9, title="Returns", section="Refunds > Timing")
    t = build([c], "q", Config(budget=100))
    assert t.decision("doc-1").cost - t.decision("doc-1").tokens == cl100k.count(label_line(c, "S1") + "\n") + 1


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


def test_naive_preset_keeps_duplicates_and_database_order():
    from ctxcore import PRESETS

    cands = [Candidate("b", "refund policy five days", 0.5), Candidate("a", "refund policy 5 days", 0.9)]
    t = build(cands, "q", Config(budget=500, **PRESETS["naive"]))
    assert [d.id for d in t.kept()] == ["b", "a"]
