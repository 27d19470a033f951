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


def test_spans_starting_together_keep_the_order_they_were_logged_in():
    """Two spans starting at the same second: the one logged first stays first, whatever their ends (sorting on
    the whole (start, end, span) would put the shorter first, or compare spans)."""
    spans = [_span(0, 1.0, 5.0, "a"), _span(1, 1.0, 1.5, "b"), _span(2, 1.2, 1.3, "c")]
    assert _runs(spans) == {"a": [0, 1, 2]}


def test_the_window_ends_at_the_last_end():
    assert window([_span(0, 0.0, 10.0), _span(1, 2.0, 3.0)]) == (0.0, 10.0)
    assert window([_span(0, 4.0, None), _span(1, 2.0, None)]) == (2.0, 4.0)  # no ends: the last start
    assert window([_span(0, None, None)]) is None


def test_the_span_panel_rows():
    """What the "About this file" span panel shows for each span: ids, ISO start, duration in ms to the
    microsecond, the model however it was logged, and the token counts."""
    from ctxcore.io.formats.runs import span_rows
    llm = Span(index=0, trace_id="t", span_id="s1", parent_id="s0", name="ChatOpenAI", kind="LLM",
               start=1700000000.0, end=1700000001.2345678,
               attrs={"llm": {"response": {"model_name": "gpt-4o-mini"}, "token_count": {"prompt": "812", "completion": 40}}})
    bare = _span(1, None, 3.0, span_id="s2")
    own = Span(index=2, trace_id="t", span_id="s3", parent_id=None, name="x", kind="", start=5.0, end=6.0,
               attrs={"llm": {"model_name": "m1", "response": {"model_name": "m2"}}})
    rows = span_rows([llm, bare, own])
    assert rows[0] == {"name": "ChatOpenAI", "kind": "LLM", "id": "s1", "parent": "s0",
                       "start": "2023-11-14T22:13:20.000Z", "duration_ms": 1234.568, "model": "gpt-4o-mini",
                       "prompt_tokens": 812, "completion_tokens": 40}
    assert rows[1] == {"name": "s", "kind": None, "id": "s2", "parent": None, "start": None, "duration_ms": None,
                       "model": None, "prompt_tokens": None, "completion_tokens": None}
    assert (rows[2]["model"], rows[2]["duration_ms"], rows[2]["start"]) == ("m1", 1000.0, "1970-01-01T00:00:05.000Z")


# --- the entry points (formats/shapes.py): what is refused, naming the file, and the run asked for ---

def _multi(without_content=False) -> bytes:
    from conftest import ROOT
    import os
    lines = [json.loads(line) for line in open(os.path.join(ROOT, "tests/fixtures/traces/phoenix_multi.jsonl"))]
    if without_content:
        for span in lines:
            span["attributes"] = {k: v for k, v in span["attributes"].items() if not k.endswith(".document.content")}
    return "\n".join(json.dumps(line) for line in lines).encode()


@pytest.mark.parametrize("raw, message, field", [
    (b'{"candidates": [], "query": "q"}', "this is a ctxcore input file, not a logged trace", None),
    (b'{"spans_please": 1}', "not a logged trace: expected OpenInference spans (Arize Phoenix export), OTLP JSON, a "
     "Langfuse trace with observations, LangSmith runs or an MLflow trace", None),
    (b'{"id": "t1", "observations": ["o1", "o2"]}', "this Langfuse trace lists observation ids only; export it with "
     "its observations (GET /api/public/traces/{traceId})", "observations"),
])
def test_what_is_not_a_logged_trace_is_refused_naming_the_file(raw, message, field):
    from ctxcore.errors import InputError
    from ctxcore.io.formats.shapes import load_file
    with pytest.raises(InputError) as err:
        load_file(raw, name="given.json")
    assert (err.value.message, err.value.source, err.value.field) == (message, "given.json", field)


def test_bytes_that_are_not_text_or_json_are_refused_naming_the_file():
    from ctxcore.errors import InputError
    from ctxcore.io.formats.shapes import load_file
    for raw in (b"\xff\xfe\x00{", b'{"name": "query", "span_kind": '):
        with pytest.raises(InputError) as err:
            load_file(raw, name="given.jsonl")
        assert err.value.source == "given.jsonl"


@pytest.mark.parametrize("run, message", [
    (3, "run 3 is not in the file; it holds 2 runs (python -m ctxcore inspect lists them)"),
    (0, "run 0 is not in the file; it holds 2 runs (python -m ctxcore inspect lists them)"),
])
def test_a_run_not_in_the_file_is_refused_with_how_many_it_holds(run, message):
    from ctxcore.errors import InputError
    from ctxcore.io.formats.shapes import load_run
    with pytest.raises(InputError) as err:
        load_run(_multi(), run=run, name="multi.jsonl")
    assert (err.value.message, err.value.source, err.value.field) == (message, "multi.jsonl", "run")


def test_a_file_of_one_run_says_one_run():
    from conftest import ROOT
    import os
    from ctxcore.errors import InputError
    from ctxcore.io.formats.shapes import load_run
    with pytest.raises(InputError) as err:
        load_run(os.path.join(ROOT, "tests/fixtures/traces/phoenix_nested.json"), run=2)
    assert err.value.message == "run 2 is not in the file; it holds 1 run (python -m ctxcore inspect lists them)"


def test_the_second_run_is_read_under_the_files_name_with_the_companion_texts():
    from ctxcore.io.formats.shapes import load_run
    texts = {"kb-207#2": "small damaged items are refunded", "kb-207#1": "photo of the damage first",
             "kb-112#0": "refund thresholds", "kb-118#0": "blenders", "kb-121#0": "other"}
    got = load_run(_multi(without_content=True), run=2, name="multi.jsonl", texts=texts)
    assert got.logged.trace_id == "e3f2a1b0c9d8e7f6a5b4c3d2e1f00112"
    assert got.source == "multi.jsonl"
    assert [(c.id, c.text) for c in got.candidates] == [("kb-207#2", "small damaged items are refunded"),
                                                         ("kb-207#1", "photo of the damage first")]
    first = load_run(_multi(), run=1, name="multi.jsonl")
    assert first.logged.trace_id == "7d0c6f1e2a3b4c5d6e7f8091a2b3c4d5" and first.source == "multi.jsonl"


# --- OTLP JSON and Phoenix's OTLP-shaped span pages (formats/otlp.py) ---

_PX = {"span_id": "s1", "trace_id": "t1", "start_time_unix_nano": 1}


@pytest.mark.parametrize("span, is_span", [
    (_PX, True),
    ({"span_id": "s1", "trace_id": "t1", "attributes": []}, True),
    ({"span_id": "s1", "trace_id": "t1", "start_time_unix_nano": 1, "attributes": {}}, True),
    ({"trace_id": "t1", "attributes": []}, False),          # no span id
    ({"span_id": "s1", "attributes": []}, False),           # no trace id
    ({"span_id": "s1", "trace_id": "t1", "attributes": {}}, False),  # neither OTLP's time nor its attribute list
    (["span_id", "trace_id"], False),
])
def test_what_a_phoenix_otlp_span_is(span, is_span):
    from ctxcore.io.formats.otlp import _is_phoenix_span
    assert _is_phoenix_span(span) is is_span


@pytest.mark.parametrize("data, count", [
    ({"data": [_PX, _PX]}, 2),
    ([{"data": [_PX]}, {"data": [_PX, _PX]}], 3),   # pages, as a paginated export saves them
    ([{"data": [_PX]}, {"other": 1}], None),
    ([_PX], None),
    ([], None),
    ({"data": []}, None),
    ({"data": {"a": _PX}}, None),
    ({"data": [_PX, {"span_id": "s2"}]}, None),
])
def test_phoenix_otlp_span_pages(data, count):
    from ctxcore.io.formats.otlp import _phoenix_spans
    got = _phoenix_spans(data)
    assert (None if got is None else len(got)) == count


@pytest.mark.parametrize("value, expected", [
    ("ESIzRFVmd4g=", "1122334455667788"),                                   # 8 bytes, base64: 12 characters
    ("AAECAwQFBgcICQoLDA0ODw==", "000102030405060708090a0b0c0d0e0f"),       # 16 bytes: 24 characters
    ("AAECAwQFBg==", "AAECAwQFBg=="),                   # 12 characters, 7 bytes: not an id's length
    ("AAECAwQFBgcICQoLDA0ODxA=", "AAECAwQFBgcICQoLDA0ODxA="),   # 24 characters, 17 bytes
    ("AAECAwQFBgcICQoLDA0ODw=", "AAECAwQFBgcICQoLDA0ODw="),     # 23 characters
    ("AAECAwQFBgcICQoLDA0ODxAR=", "AAECAwQFBgcICQoLDA0ODxAR="),  # 25 characters
    ("ESIzRFVmd4gA", "ESIzRFVmd4gA"),                   # no padding: hex ids never end in "="
    ("/OA2Ktx8e5E=gkH1PTGVzQ2=", "/OA2Ktx8e5E=gkH1PTGVzQ2="),  # not base64 (a lenient decoder reads 8 bytes)
    ("0af7651916cd43dd8448eb211c80319c", "0af7651916cd43dd8448eb211c80319c"),
    (None, None),
])
def test_otlp_ids_as_hex(value, expected):
    from ctxcore.io.formats.otlp import hex_id
    assert hex_id(value) == expected


def test_an_otlp_span_record_takes_either_spelling_and_skips_empty_values():
    from ctxcore.io.formats.otlp import _dicts, _record
    got = _record({"name": "retrieve", "traceId": "", "trace_id": "ESIzRFVmd4g=", "span_id": "s2",
                   "parent_span_id": "s1", "start_time_unix_nano": "10", "endTimeUnixNano": "20"})
    assert got == {"name": "retrieve", "context": {"trace_id": "1122334455667788", "span_id": "s2"},
                   "parent_id": "s1", "start_time": "10", "end_time": "20", "attributes": []}
    assert _dicts(None) == [] and _dicts([{"a": 1}, 2, "x"]) == [{"a": 1}]


def test_an_otlp_request_with_an_empty_scope_still_reads_its_other_spans():
    from ctxcore.io.formats.otlp import trace_ids
    span = {"traceId": "t1", "spanId": "s1", "name": "retrieve", "startTimeUnixNano": "1", "attributes": []}
    data = {"resourceSpans": [{"scopeSpans": None}, {"scopeSpans": [{"spans": None}, {"spans": [span]}]}]}
    assert trace_ids(data) == ["t1"]


def test_a_malformed_otlp_span_is_refused_naming_the_file():
    from ctxcore.errors import InputError
    from ctxcore.io.formats.shapes import load_file
    deep = {"key": "llm." + ".".join(["x"] * 300), "value": {"intValue": "1"}}
    data = {"resourceSpans": [{"scopeSpans": [{"spans": [
        {"traceId": "t1", "spanId": "s1", "name": "llm", "startTimeUnixNano": "1", "attributes": [deep]}]}]}]}
    with pytest.raises(InputError) as err:
        load_file(json.dumps(data).encode(), name="otlp.json")
    assert err.value.source == "otlp.json"
    assert err.value.message == "attributes nested more than 100 levels deep (each part of a dotted key is a level)"


# --- what every family shares (formats/family.py) ---

def test_the_trace_shown_is_the_first_that_retrieved_else_the_first():
    from ctxcore.io.formats.family import select_trace
    has_docs = lambda members: "docs" in members  # noqa: E731  (None would raise: the members are always passed)
    assert select_trace({"a": ["llm"], "b": ["docs"], "c": ["docs"]}, None, has_docs, "trace", "f.json") == "b"
    assert select_trace({"x": [], "y": []}, None, has_docs, "trace", "f.json") == "x"
    assert select_trace({"x": [], "y": []}, "y", has_docs, "trace", "f.json") == "y"


def test_documents_logged_by_id_take_the_companion_text_and_no_other_does():
    from ctxcore.io.formats.family import _fill_texts
    docs = [{"id": "a", "content": None, "where": "w0"}, {"id": "b", "content": "  ", "where": "w1"},
            {"id": "c", "content": "its own text", "where": "w2"}]
    warnings: list = []
    _fill_texts(docs, {"a": "alpha", "b": "beta", "c": "not this"}, "f.json", warnings)
    assert [d["content"] for d in docs] == ["alpha", "beta", "its own text"]
    assert warnings == ["the log recorded 2 documents by id only: took the text of 2 from the candidates file"]


def test_filter_steps_are_recorded_beside_a_reranker_or_as_the_step_that_cut():
    from ctxcore.io.formats.family import _filtered
    from ctxcore.records import Candidate
    docs = [{"id": "a", "content": "alpha"}, {"id": "b", "content": "beta"}, {"id": "c", "content": "gamma"}]
    cands = tuple(Candidate(id=d["id"], text=d["content"]) for d in docs)
    filters = [{"span": "similarity cutoff", "kept": [docs[0], docs[2]]}, {"span": "top 1", "kept": [docs[2]]}]
    steps = [{"span": "similarity cutoff", "kept": ["a", "c"]}, {"span": "top 1", "kept": ["c"]}]
    with_reranker = _filtered({"query": "q", "reranker": {"model": "m", "top_k": 2}}, docs, cands, filters)
    assert with_reranker == {"query": "q", "reranker": {"model": "m", "top_k": 2, "filters": steps}}
    alone = _filtered({"query": "q"}, docs, cands, filters)
    assert alone == {"query": "q", "reranker": {"span": "top 1", "model": None, "top_k": None, "step": "filter",
                                                "filters": steps},
                     "reranked": ["c"], "reranker_cut": ["a", "b"]}


# --- the survivors of the first run over runs, family, shapes and otlp ---

def test_run_rows_name_a_run_by_its_id_as_text_and_a_run_without_one_as_none():
    from ctxcore.io.formats.runs import run_rows
    rows = run_rows({None: ["llm"], 7: ["docs", "llm"]}, lambda m: "docs" in m, lambda m: "llm" in m, len,
                    lambda m: 0.0)
    assert [(r["id"], r["retrieval"], r["llm"], r["documents"], r["start"]) for r in rows] == [
        (None, False, True, 1, "1970-01-01T00:00:00.000Z"), ("7", True, True, 2, "1970-01-01T00:00:00.000Z")]


@pytest.mark.parametrize("ids, how", [
    (["a", "b", "c", "d", "e", "f"], "; 6 of 7 documents carry only an id (a, b, c, d, e and 1 more): give their "
     "text in a candidates file (id, text), with --candidates FILE or the app's second uploader"),
    ([None], ""),
])
def test_documents_still_without_text_are_refused_naming_the_first_and_how_to_give_the_rest(ids, how):
    from ctxcore.errors import InputError
    from ctxcore.io.formats.family import _fill_texts
    docs = [{"id": i, "content": "  ", "where": f"spans[{n}]"} for n, i in enumerate(ids)]
    docs.append({"id": "z", "content": "has text", "where": "spans[9]"})
    with pytest.raises(InputError) as err:
        _fill_texts(docs, None, "f.json", [])
    assert err.value.message == ("the document has no text (document.content is empty or missing; the export may "
                                 "hide retrieval text)" + how.replace("of 7", f"of {len(docs)}"))
    assert (err.value.source, err.value.field) == ("f.json", "spans[0]")


def test_a_trace_without_a_question_says_so_and_reads_with_an_empty_one():
    from ctxcore.io.formats.shapes import load_file
    span = {"traceId": "t1", "spanId": "s1", "name": "retrieve", "startTimeUnixNano": "1", "attributes": [
        {"key": "openinference.span.kind", "value": {"stringValue": "RETRIEVER"}},
        {"key": "retrieval.documents.0.document.id", "value": {"stringValue": "a"}},
        {"key": "retrieval.documents.0.document.content", "value": {"stringValue": "alpha text"}}]}
    got = load_file(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}).encode(), name="q.json")
    assert got.query == ""
    assert "the trace holds no question: give one before building" in got.warnings
    assert [(c.id, c.text) for c in got.candidates] == [("a", "alpha text")]


@pytest.mark.parametrize("reader", ["family_of", "detect", "detect_any", "detect_lines", "load_trace"])
def test_a_refusal_without_a_file_name_says_input(reader):
    from ctxcore.errors import InputError
    from ctxcore.io.formats import shapes
    data = {"id": "t1", "observations": ["o1", "o2"]}
    with pytest.raises(InputError) as err:
        getattr(shapes, reader)([data] if reader == "detect_lines" else data)
    assert err.value.source == "input"


@pytest.mark.parametrize("shape", ["snake", "old"])
def test_otlp_in_protobufs_snake_case_and_in_the_old_instrumentation_library_shape(shape):
    from ctxcore.io.formats.otlp import trace_ids
    span = {"traceId": "t1", "spanId": "s1", "name": "retrieve", "startTimeUnixNano": "1", "attributes": []}
    data = ({"resource_spans": [{"scope_spans": [{"spans": [span]}]}]} if shape == "snake"
            else {"resourceSpans": [{"instrumentationLibrarySpans": [{"spans": [span]}]}]})
    assert trace_ids(data) == ["t1"]


def test_an_otlp_request_without_spans_is_not_a_trace():
    from ctxcore.errors import InputError
    from ctxcore.io.formats.shapes import NOT_A_TRACE, load_file
    with pytest.raises(InputError) as err:
        load_file(b'{"resourceSpans": [{"scopeSpans": [{"spans": []}]}]}', name="empty.json")
    assert err.value.message == NOT_A_TRACE


def _parquet(without_content=False) -> bytes:
    import io
    from test_import_families import _phoenix_frame
    frame = _phoenix_frame()
    if without_content:
        frame["attributes.retrieval.documents"] = [
            [{k: v for k, v in d.items() if k != "document.content"} for d in docs] if isinstance(docs, list) else docs
            for docs in frame["attributes.retrieval.documents"]]
    buf = io.BytesIO()
    frame.to_parquet(buf)
    return buf.getvalue()


def test_a_parquet_export_takes_the_trace_asked_for_and_the_companion_texts():
    from ctxcore.errors import InputError
    from ctxcore.io.formats.shapes import load_file
    with pytest.raises(InputError) as err:
        load_file(_parquet(), trace_id="no-such-trace", name="spans.parquet")
    assert (err.value.source, err.value.field) == ("spans.parquet", "trace_id")
    texts = {"kb-101": "one", "kb-102": "two", "kb-103": "three"}
    got = load_file(_parquet(without_content=True), name="spans.parquet", texts=texts)
    assert [(c.id, c.text) for c in got.candidates] == [("kb-101", "one"), ("kb-102", "two"), ("kb-103", "three")]


# --- Phoenix's parquet export (formats/parquet.py): its limits at their edges, and the values it cannot read ---

def _table_bytes(columns: dict) -> bytes:
    import io
    import pyarrow as pa
    import pyarrow.parquet as pq
    buf = io.BytesIO()
    pq.write_table(pa.table(columns), buf)
    return buf.getvalue()


def _spans_table(n: int) -> bytes:
    return _table_bytes({"name": [f"s{i}" for i in range(n)], "span_kind": ["CHAIN"] * n,
                         "context.span_id": [str(i) for i in range(n)], "context.trace_id": ["t"] * n})


def test_a_parquet_file_of_more_spans_than_the_limit_is_refused(monkeypatch):
    from ctxcore.errors import InputError
    from ctxcore.io.formats import parquet
    monkeypatch.setattr(parquet, "MAX_SPANS", 3)
    assert len(parquet.records(_spans_table(3), "p.parquet")[0]) == 3
    with pytest.raises(InputError) as err:
        parquet.records(_spans_table(4), "p.parquet")
    assert (err.value.message, err.value.source) == ("a table of 4 rows (spans); the limit is 3", "p.parquet")


def test_a_parquet_file_of_more_columns_than_the_limit_is_refused(monkeypatch):
    from ctxcore.errors import InputError
    from ctxcore.io.formats import parquet
    monkeypatch.setattr(parquet, "MAX_KEYS", 4)
    assert parquet.records(_spans_table(2), "p.parquet")[1] == ["name", "span_kind", "context.span_id",
                                                                "context.trace_id"]
    monkeypatch.setattr(parquet, "MAX_KEYS", 3)
    with pytest.raises(InputError) as err:
        parquet.records(_spans_table(2), "p.parquet")
    assert (err.value.message, err.value.field) == ("a table of 4 columns; the limit is 3", "columns")


def test_a_parquet_file_that_would_decode_past_the_limit_is_refused_before_and_after_reading(monkeypatch):
    from ctxcore.errors import InputError
    from ctxcore.io.formats import parquet
    tail = "; the limit is 0 MB (a small compressed file can repeat one value many times)"
    monkeypatch.setattr(parquet, "MAX_DECODED_BYTES", 0)
    with pytest.raises(InputError) as err:
        parquet.records(_spans_table(2), "p.parquet")
    assert (err.value.message, err.value.source) == ("the table would decode to at least 0 MB" + tail, "p.parquet")
    # one value repeated: stored once as a dictionary, so the metadata's bound is below what Python would hold
    raw = _table_bytes({"name": ["x" * 5000] * 400, "span_kind": ["CHAIN"] * 400})
    import io
    import pyarrow.parquet as pq
    meta = pq.ParquetFile(io.BytesIO(raw)).metadata
    bound = parquet._stored_bound(meta, {"name", "span_kind"})
    assert bound < 400 * 5000
    monkeypatch.setattr(parquet, "MAX_DECODED_BYTES", bound)
    with pytest.raises(InputError) as err:
        parquet.records(raw, "p.parquet")
    assert err.value.message == ("the table would decode to 2 MB; the limit is 0 MB (a small compressed file can "
                                 "repeat one value many times)")


def test_a_parquet_value_python_cannot_hold_is_named_by_row_and_column():
    import pyarrow as pa
    from ctxcore.errors import InputError
    from ctxcore.io.formats import parquet
    raw = _table_bytes({"name": ["a", "b"], "span_kind": ["LLM", "LLM"], "context.span_id": ["1", "2"],
                        "start_time": pa.array([0, 400 * 10**12], pa.timestamp("s"))})
    with pytest.raises(InputError) as err:
        parquet.records(raw, "p.parquet")
    assert (err.value.row, err.value.field, err.value.source) == (2, "start_time", "p.parquet")
    assert err.value.message.startswith("a value Python cannot read (")


def test_a_parquet_file_without_rows_or_without_span_columns_is_refused():
    from ctxcore.errors import InputError
    from ctxcore.io.formats import parquet
    with pytest.raises(InputError) as err:
        parquet.load(_spans_table(0), "p.parquet")
    assert err.value.message == "the parquet file holds no rows"
    with pytest.raises(InputError) as err:
        parquet.load(_table_bytes({"a": [1], "b": ["x"]}), "p.parquet")
    assert err.value.message == ("a parquet table that is not a Phoenix span dataframe (no context.span_id or "
                                 "span_kind column; columns: a, b)")
