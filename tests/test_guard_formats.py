"""The format readers held by hand-valued tables (issue #29): runs grouped by time when an export lost its links,
and which LLM call is the generation. Each test names the bug it was checked against (planted by hand)."""

import json

import pytest

import ctxcore

from ctxcore.io.formats.messages import generation
from ctxcore.io.formats.runs import GAP_SECONDS, by_time, links_lost, pick, window
from ctxcore.io.formats.spans import Span


def _span(i, start, end, trace=None, span_id=None, parent=None, name="s"):
    return Span(index=i, trace_id=trace, span_id=span_id, parent_id=parent, name=name, kind="", start=start, end=end)


def _runs(spans, **kw):
    groups = by_time(spans, **kw)
    return None if groups is None else {k: [s.index for s in v] for k, v in groups.items()}


def test_gap_is_two_seconds():
    assert GAP_SECONDS == 2.0


def test_a_short_nested_span_does_not_split_one_request():
    """A request from 0 to 10 s; a short child 0.1-0.2 s; the generation starts at 5 s, 4.8 s after the short child
    ended but inside the request. Plant: ``reach = end`` (the last span's end, not the furthest): two runs."""
    spans = [_span(0, 0.0, 10.0, "r"), _span(1, 0.1, 0.2, "c1"), _span(2, 5.0, 9.0, "c2")]
    assert _runs(spans) == {"r": [0, 1, 2]}


@pytest.mark.parametrize("start, runs", [
    (12.0, {"a": [0, 1]}),               # exactly GAP_SECONDS after the first request ended: still one run
    (12.001, {"a": [0], "b": [1]}),      # just past it: the next request
    (11.0, {"a": [0, 1]}),
    (30.0, {"a": [0], "b": [1]}),
])
def test_two_requests_a_gap_apart_are_two_runs(start, runs):
    """Plant: ``start >= reach + gap`` (a request starting exactly 2 s later split off) and GAP 2.0 -> 20."""
    spans = [_span(0, 0.0, 10.0, "a"), _span(1, start, start + 1.0, "b")]
    assert _runs(spans) == runs


def test_runs_without_trace_ids_are_numbered_and_times_in_milliseconds_are_read():
    """Epoch milliseconds (1.7e12) are read as seconds; ids 'run-1', 'run-2'. Plant: ``len(groups)`` unnumbered."""
    t = 1_700_000_000_000
    spans = [_span(0, t, t + 1000), _span(1, t + 500, t + 900), _span(2, t + 3001, t + 4000), _span(3, t + 4100, None)]
    assert _runs(spans) == {"run-1": [0, 1], "run-2": [2, 3]}


def test_a_span_without_a_time_means_no_grouping_by_time():
    assert _runs([_span(0, 0.0, 1.0, "a"), _span(1, None, None, "b")]) is None


def test_spans_are_grouped_in_time_order_not_file_order():
    """Plant: the sort removed (the late span in file order would open a run of its own)."""
    spans = [_span(0, 20.0, 21.0, "late"), _span(1, 0.0, 1.0, "early"), _span(2, 0.5, 0.6, "mid")]
    assert _runs(spans) == {"early": [1, 2], "late": [0]}


@pytest.mark.parametrize("spans, lost", [
    ([_span(0, 0, 1, "a", "1"), _span(1, 0, 1, "b", "2")], True),
    ([_span(0, 0, 1, "a", "1"), _span(1, 0, 1, "b", "2", parent="1")], False),   # a parent in the file
    ([_span(0, 0, 1, "a", "1"), _span(1, 0, 1, "a", "2")], False),               # one trace id shared
    ([_span(0, 0, 1, "a", "1")], False),                                          # one span: nothing lost
    ([_span(0, 0, 1, "a", "1"), _span(1, 0, 1, "b", "2", parent="9")], True),    # a parent not in the file
])
def test_links_lost(spans, lost):
    """Plant: ``len(spans) < 1`` (a single span read as an export that lost its links)."""
    assert links_lost(spans) is lost


def test_pick_prefers_retrieval_and_llm_then_retrieval_then_the_first():
    groups = {"x": ["llm"], "y": ["docs"], "z": ["docs", "llm"]}
    has_docs, has_llm = (lambda m: "docs" in m), (lambda m: "llm" in m)
    assert pick(groups, has_docs, has_llm) == "z"
    assert pick({"x": ["llm"], "y": ["docs"]}, has_docs, has_llm) == "y"
    assert pick({"x": ["llm"], "y": []}, has_docs, has_llm) == "x"


def test_window_is_first_start_to_last_end_or_start():
    assert window([_span(0, 5.0, 6.0), _span(1, 1.0, 2.0), _span(2, 7.0, None)]) == (1.0, 7.0)
    assert window([_span(0, None, None)]) is None


# -- which LLM call is the generation ---------------------------------------------------------------------------
D1 = "Refunds take five business days to reach your original payment method after approval."
D2 = "Standard shipping is free for orders over fifty dollars and arrives within a week."
Q = "How long does a refund take?"
ANSWER = "Five business days [1]."
CONTEXT = f"[1] {D1}\n[2] {D2}\n\nQuestion: {Q}"
# (name, seconds from the start, prompt, answer): a rewrite before retrieval, the generation, a judge after it
CALLS = {"rewrite": (0.1, f"Rewrite the question for search: {Q}", "refund duration"),
         "generate": (2.0, CONTEXT, ANSWER),
         "judge": (5.0, f"Grade the answer against the documents.\n{CONTEXT}\nAnswer: {ANSWER}", "score: 5")}
ORDERS = [(["rewrite", "generate", "judge"], "generate"), (["generate", "judge"], "generate"),
          (["rewrite", "generate"], "generate"), (["generate"], "generate")]


def _oi_span(name, kind, sid, parent, start, end, **attrs):
    return {"name": name, "span_kind": kind, "parent_id": parent, "context.span_id": sid, "context.trace_id": "t1",
            "start_time": f"2024-05-14T09:21:{start:06.3f}+00:00", "end_time": f"2024-05-14T09:21:{end:06.3f}+00:00",
            "attributes.openinference.span.kind": kind, **{f"attributes.{k}": v for k, v in attrs.items()}}


def _openinference(order):
    spans = [_oi_span("query", "CHAIN", "root", None, 0.0, 9.0, **{"input.value": Q, "output.value": ANSWER}),
             _oi_span("retrieve", "RETRIEVER", "ret", "root", 1.0, 1.5, **{
                 "input.value": Q, "retrieval.documents.0.document.id": "d1",
                 "retrieval.documents.0.document.content": D1, "retrieval.documents.0.document.score": 0.9,
                 "retrieval.documents.1.document.id": "d2", "retrieval.documents.1.document.content": D2,
                 "retrieval.documents.1.document.score": 0.5})]
    for name in order:
        at, prompt, out = CALLS[name]
        spans.append(_oi_span(name, "LLM", name, "root", at, at + 0.5, **{
            "llm.input_messages.0.message.role": "user", "llm.input_messages.0.message.content": prompt,
            "llm.output_messages.0.message.role": "assistant", "llm.output_messages.0.message.content": out}))
    return "\n".join(json.dumps(s) for s in spans)


def _langfuse(order):
    t = lambda s: f"2024-05-14T10:02:{s:06.3f}Z"  # noqa: E731
    obs = [{"id": "root", "type": "SPAN", "name": "rag", "startTime": t(0), "endTime": t(9), "input": {"question": Q},
            "output": {"answer": ANSWER}},
           {"id": "ret", "type": "RETRIEVER", "name": "kb-search", "startTime": t(1), "endTime": t(1.5),
            "parentObservationId": "root", "input": {"query": Q},
            "output": [{"id": "d1", "page_content": D1, "score": 0.9}, {"id": "d2", "page_content": D2, "score": 0.5}]}]
    for name in order:
        at, prompt, out = CALLS[name]
        obs.append({"id": name, "type": "GENERATION", "name": name, "startTime": t(at), "endTime": t(at + 0.5),
                    "parentObservationId": "root", "model": "gpt-4o", "input": [{"role": "user", "content": prompt}],
                    "output": {"role": "assistant", "content": out}})
    return json.dumps({"id": "lf1", "name": "support", "timestamp": t(0), "input": {"question": Q},
                       "output": {"answer": ANSWER}, "observations": obs})


@pytest.mark.parametrize("make, name", [(_openinference, "x.jsonl"), (_langfuse, "x.json")])
@pytest.mark.parametrize("order, chosen", ORDERS)
def test_the_generation_is_the_call_that_wrote_the_answer_not_a_rewrite_or_a_judge(make, name, order, chosen):
    """A judge after the answer quotes the same two documents; the generation is the call whose answer is the run's
    output. Bug found (and fixed in messages.generation): the later of two calls holding as many documents was
    taken, so the judge's "score: 5" was read as the answer. Plant: the tie broken by place only."""
    loaded = ctxcore.loads(make(order), name)
    assert (loaded.logged.llm_span, loaded.logged.answer, loaded.logged.prompt_text.count(D1)) == (
        chosen, ANSWER, 1)
    assert loaded.logged.prompt_text.endswith(f"Question: {Q}")


def test_a_retry_with_the_same_documents_and_no_run_output_is_the_last_call():
    """Without a run output to tell them apart, the later of two calls holding as many documents is taken (a retry).
    Plant: the earliest taken."""
    spans = [json.loads(line) for line in _openinference(["generate", "judge"]).splitlines()]
    del spans[0]["attributes.output.value"]
    loaded = ctxcore.loads("\n".join(map(json.dumps, spans)), "x.jsonl")
    assert (loaded.logged.llm_span, loaded.logged.answer) == ("judge", "score: 5")


DOCS = [{"content": D1}, {"content": D2}]
# name -> (place, prompt, answer)
PLAIN = {"a": (0, f"{D1}\n{D2}", "Five  business\ndays."), "b": (1, f"{D1}\n{D2}", "score: 5"), "c": (2, D1, "x")}


@pytest.mark.parametrize("calls, output, chosen", [
    (["a", "b", "c"], "Five business days.", "a"),   # the answer equal to the run's output, whitespace aside
    (["a", "b", "c"], None, "b"),                    # no output: the last of the two holding both documents
    (["a", "b", "c"], "   ", "b"),                   # a blank output says nothing
    (["a", "b", "c"], "x", "b"),                     # c wrote the output but holds one document: documents first
    (["c"], None, "c"),
    ([], "x", None),
])
def test_generation_table(calls, output, chosen):
    """Plants: documents not counted first (c taken for output 'x'); the output compared without squashing."""
    got = generation(calls, DOCS, lambda c: PLAIN[c][1], lambda c: PLAIN[c][2], output, lambda c: PLAIN[c][0])
    assert got == chosen
