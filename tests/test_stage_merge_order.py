from ctxcore import Candidate, Config, build
from ctxcore.stages.order import by_document


def _doc():
    return [Candidate("r2", "Step 3: hold reset for ten seconds.", 0.9, doc_id="router", chunk_index=2),
            Candidate("x", "Unrelated billing note.", 0.8, doc_id="billing", chunk_index=0),
            Candidate("r0", "Step 1: unplug the router.", 0.7, doc_id="router", chunk_index=0),
            Candidate("r1", "Step 2: wait thirty seconds.", 0.6, doc_id="router", chunk_index=1),
            Candidate("r5", "Appendix: warranty.", 0.5, doc_id="router", chunk_index=5)]


def test_adjacent_chunks_merge_into_the_first_in_source_order():
    t = build(_doc(), "reset router", Config(budget=500, merge_adjacent=True, order="document"))
    assert t.decision("r1").fate == "merged" and t.decision("r1").merged_into == "r0"
    assert t.decision("r2").merged_into == "r0"
    head = t.decision("r0")
    assert head.fate == "kept" and head.text.splitlines() == [
        "Step 1: unplug the router.", "Step 2: wait thirty seconds.", "Step 3: hold reset for ten seconds."]
    assert [d.id for d in t.kept()] == ["r0", "r5", "x"]  # router first: its best member ranks first


def test_without_merge_everything_is_separate():
    t = build(_doc(), "reset router", Config(budget=500, order="rank"))
    assert [d.id for d in t.kept()] == ["r2", "x", "r0", "r1", "r5"]


def test_orders():
    cands = [Candidate(c, f"text {c}", s) for c, s in [("d", 0.4), ("a", 0.9), ("c", 0.6), ("b", 0.8)]]
    kept = lambda order: [d.id for d in build(cands, "q", Config(budget=500, order=order)).kept()]
    assert kept("rank") == ["a", "b", "c", "d"]
    assert kept("sandwich") == ["a", "c", "d", "b"]
    assert kept("original") == ["d", "a", "c", "b"]


def test_labels_follow_prompt_order_and_positions_are_one_based():
    cands = [Candidate(c, f"text {c}", s) for c, s in [("a", 0.9), ("b", 0.8), ("c", 0.7)]]
    t = build(cands, "q", Config(budget=500))
    assert [(d.id, d.label, d.position) for d in t.kept()] == [("a", "S1", 1), ("c", "S2", 2), ("b", "S3", 3)]
    assert t.prompt.text.index("[S1] source=a") < t.prompt.text.index("[S2] source=c") < t.prompt.text.index(
        "[S3] source=b")


def test_document_order_puts_chunks_without_an_index_after_the_numbered_ones():
    """Found by mutation testing (``order.by_document`` with its no-index-last key flipped survived): within a
    document, chunks in source order, and a chunk whose place is unknown after those whose place is known."""
    docs = {"a?": "A", "a1": "A", "a0": "A", "b0": "B"}
    index = {"a?": None, "a1": 1, "a0": 0, "b0": 0}
    assert by_document(["a?", "b0", "a1", "a0"], docs.get, index.get) == ["a0", "a1", "a?", "b0"]
