"""Langfuse exports read (ctxcore/io/formats/langfuse.py), held by hand-valued tables: the SDK's snake_case as the
API's camelCase, what is an observation or a trace, traces in every export shape, documents in a retriever's output,
messages and the prompt of a generation, token counts, and each observation's row in the span panel (issue #29).
Field names as the module cites them (langfuse/langfuse-python api/commons/types/observation.py)."""

import pytest

from ctxcore.errors import InputError
from ctxcore.io.formats import langfuse as lf

SNAKE = {"trace_id": "t", "parent_observation_id": "p", "start_time": 1, "end_time": 2, "completion_start_time": 3,
         "model_parameters": {}, "usage_details": {}, "cost_details": {}, "prompt_name": "pn", "prompt_version": 1,
         "prompt_id": "pi", "status_message": "ok", "session_id": "s", "user_id": "u", "html_path": "h",
         "total_cost": 0.1, "name": "n"}
CAMEL = {"traceId": "t", "parentObservationId": "p", "startTime": 1, "endTime": 2, "completionStartTime": 3,
         "modelParameters": {}, "usageDetails": {}, "costDetails": {}, "promptName": "pn", "promptVersion": 1,
         "promptId": "pi", "statusMessage": "ok", "sessionId": "s", "userId": "u", "htmlPath": "h", "totalCost": 0.1,
         "name": "n"}


@pytest.mark.parametrize("obj, camel", [
    (SNAKE, CAMEL),
    ({"trace_id": "t", "traceId": "own"}, {"trace_id": "t", "traceId": "own"}),
    ({"traceId": "own", "trace_id": "t", "start_time": 1}, {"traceId": "own", "trace_id": "t", "startTime": 1}),
    ({"name": "n"}, {"name": "n"}),
    ("x", "x"),
])
def test_snake_case_as_the_api_writes_it(obj, camel):
    before = dict(obj) if isinstance(obj, dict) else obj
    assert lf._camel(obj) == camel
    assert obj == before


def test_an_object_without_snake_case_is_returned_as_it_is():
    obj = {"traceId": "t"}
    assert lf._camel(obj) is obj


@pytest.mark.parametrize("obj, observation", [
    *[({"type": t.lower(), "traceId": "t"}, True) for t in sorted(lf._LF_TYPES)],
    ({"type": "GENERATION", "parentObservationId": "p"}, True),
    ({"type": "EVENT", "startTime": 1}, True),
    ({"type": "SPAN"}, False),
    ({"type": "WEIRD", "traceId": "t"}, False),
    ({"type": 5, "traceId": "t"}, False),
    ({"type": "SPAN", "traceId": "t", "text": "x"}, False),
    ({"type": "SPAN", "traceId": "t", "span_kind": "LLM"}, False),
    ("x", False),
])
def test_what_is_an_observation(obj, observation):
    assert lf._is_observation(obj) is observation


@pytest.mark.parametrize("obj, trace", [({"observations": []}, True), ({"observations": "x"}, False),
                                        ({"observations": [], "candidates": []}, False),
                                        ({"observations": [], "format": "x"}, False), ([], False)])
def test_what_is_a_langfuse_trace(obj, trace):
    assert lf._is_lf_trace(obj) is trace


O1 = {"type": "SPAN", "traceId": "t1", "id": "o1"}
O2 = {"type": "GENERATION", "traceId": "b", "id": "g"}


def _found(data):
    got = lf._langfuse_traces(data, "lf.json")
    return None if got is None else [(t.id, t.trace, t.observations) for t in got]


@pytest.mark.parametrize("data, traces", [
    ({"id": "t1", "name": "q", "observations": [O1, 5]}, [("t1", {"id": "t1", "name": "q", "observations": [O1, 5]},
                                                           [O1])]),
    ({"data": [{"id": "t1", "observations": [O1]}]}, [("t1", {"id": "t1", "observations": [O1]}, [O1])]),
    ({"data": [], "observations": [O1]}, [(None, {"data": [], "observations": [O1]}, [O1])]),
    ({"trace": {"id": "t2", "session_id": "s"}, "observations": [O1]}, [("t2", {"id": "t2", "sessionId": "s"}, [O1])]),
    ({"trace": "not an object", "id": 5, "observations": [O1]},
     [("5", {"trace": "not an object", "id": 5, "observations": [O1]}, [O1])]),
    ({"id": "t", "observations": [{"type": "SPAN", "trace_id": "t", "start_time": 1}]},
     [("t", {"id": "t", "observations": [{"type": "SPAN", "trace_id": "t", "start_time": 1}]},
       [{"type": "SPAN", "traceId": "t", "startTime": 1}])]),
    ({"observations": [{"foo": 1}]}, None),
    ({"observations": []}, [(None, {"observations": []}, [])]),
    ([{"id": "a", "observations": [O1]}, {"id": "b", "observations": [O2]}],
     [("a", {"id": "a", "observations": [O1]}, [O1]), ("b", {"id": "b", "observations": [O2]}, [O2])]),
    ([{"id": "a", "observations": [O1]}, {"id": "b", "observations": [{"x": 1}]}],
     [("a", {"id": "a", "observations": [O1]}, [O1])]),
    ([{"id": "b", "observations": [{"x": 1}]}], None),
    ([{"type": "SPAN", "trace_id": "a", "start_time": 1}, O2, {"type": "SPAN", "traceId": "a"}],
     [("a", {"id": "a"}, [{"type": "SPAN", "traceId": "a", "startTime": 1}, {"type": "SPAN", "traceId": "a"}]),
      ("b", {"id": "b"}, [O2])]),
    ([{"type": "SPAN", "parentObservationId": "p"}], [(None, {}, [{"type": "SPAN", "parentObservationId": "p"}])]),
    ([O1, {"text": "x"}], None),
    ([O1, 5], None),
    ([{"x": 1}], None),
    ([], None),
    ("x", None),
])
def test_langfuse_traces_in_every_export_shape(data, traces):
    assert _found(data) == traces


def test_a_trace_of_observation_ids_is_refused_naming_the_field():
    with pytest.raises(InputError) as e:
        lf._langfuse_traces({"id": "t", "observations": ["o1", "o2"]}, "lf.json")
    assert str(e.value) == ("lf.json, field 'observations': this Langfuse trace lists observation ids only; export it "
                            "with its observations (GET /api/public/traces/{traceId})")


def test_trace_ids_in_file_order():
    assert lf.trace_ids({"data": [{"id": "t1", "observations": [O1]}, {"observations": [O1]},
                                  {"id": 7, "observations": [O1]}]}) == ["t1", "#2", "7"]
    assert lf.trace_ids({"data": [{"id": "t1", "observations": [O1]}, {"id": "t1", "observations": [O1]}]}) == [
        "t1#1", "t1#2"]
    assert lf.trace_ids({"observations": [O1]}) == []
    assert lf.trace_ids("x") == []


@pytest.mark.parametrize("o, name", [({"type": "generation", "name": "llm", "id": "g"}, "GENERATION 'llm'"),
                                     ({"id": "o1"}, "OBSERVATION 'o1'"), ({}, "OBSERVATION '?'"),
                                     ({"type": "", "name": "", "id": ""}, "OBSERVATION '?'")])
def test_an_observations_name(o, name):
    assert lf._lf_name(o) == name


def _doc(content, id=None, score=None, metadata=None):
    return {"content": content, "id": id, "score": score, "metadata": metadata or {}}


@pytest.mark.parametrize("value, docs", [
    ('["a", "b"]', [_doc("a"), _doc("b")]),
    ({"documents": ["d"], "docs": ["x"]}, [_doc("d")]),
    ({"docs": ["d"], "results": ["x"]}, [_doc("d")]),
    ({"results": ["r"], "nodes": ["x"]}, [_doc("r")]),
    ({"nodes": ["n"], "source_nodes": ["x"]}, [_doc("n")]),
    ({"source_nodes": ["s"], "context": ["x"]}, [_doc("s")]),
    ({"context": ["c"], "output": ["x"]}, [_doc("c")]),
    ({"output": ["o"]}, [_doc("o")]),
    ({"documents": "x", "output": ["o"]}, [_doc("o")]),
    ({"other": []}, None),
    ([5], None),
    ("text", None),
    ([{"node": {"document": {"text": "t", "id": "d"}}, "score": "0.5"}], [_doc("t", "d", 0.5)]),
    ([{"page_content": "a", "pageContent": "b"}], [_doc("a")]),
    ([{"pageContent": "b", "text": "c"}], [_doc("b")]),
    ([{"text": "c", "content": "x"}], [_doc("c")]),
    ([{"content": "x", "document": "dd"}], [_doc("x")]),
    ([{"document": "dd", "chunk": "k"}], [_doc("dd")]),
    ([{"chunk": "k", "content": 5}], [_doc("k")]),
    ([{"text": "t", "metadata": "{'id': 'm', 'score': 0.2}"}], [_doc("t", "m", 0.2, {"id": "m", "score": 0.2})]),
    ([{"text": "t", "metadata": "plain"}], [_doc("t", metadata={"metadata": "plain"})]),
    ([{"text": "t", "id": "a", "id_": "b", "doc_id": "c"}], [_doc("t", "a")]),
    ([{"text": "t", "id_": "b", "doc_id": "c"}], [_doc("t", "b")]),
    ([{"text": "t", "doc_id": "c"}], [_doc("t", "c")]),
    ([{"text": "t", "score": "x", "relevance_score": 0.3, "metadata": {"relevance_score": 0.4}}],
     [_doc("t", score=0.3, metadata={"relevance_score": 0.4})]),
    ([{"node": {"text": "t", "score": 0.6}, "score": None, "relevance_score": 0.3}], [_doc("t", score=0.6)]),
    ([{"text": "t", "metadata": {"relevance_score": 0.4, "score": 0.5}}],
     [_doc("t", score=0.4, metadata={"relevance_score": 0.4, "score": 0.5})]),
    ([{"text": 5}], [_doc(None)]),
    ([], []),
])
def test_documents_in_a_retrievers_output(value, docs):
    assert lf._lf_documents(value) == docs


def test_reading_documents_leaves_the_parsed_json_unchanged():
    value = [{"text": "t", "metadata": {"id": "m"}}]
    assert lf._lf_documents(value)[0]["metadata"] is not value[0]["metadata"]
    assert value == [{"text": "t", "metadata": {"id": "m"}}]


@pytest.mark.parametrize("o, retriever", [
    ({"type": "retriever"}, True),
    ({"name": "Retrieve docs", "output": ["a"]}, True),
    ({"name": "retrieve", "output": "plain"}, False),
    ({"name": "search", "output": [{"page_content": "a"}]}, True),
    ({"output": '[{"page_content": "a"}]'}, True),
    ({"output": []}, False),
    ({"output": [{"page_content": "a"}, {"text": "b"}]}, False),
    ({"name": "search", "output": ["a"]}, False),
    ({}, False),
])
def test_which_observation_is_a_retriever(o, retriever):
    assert lf._lf_is_retriever(o) is retriever


@pytest.mark.parametrize("value, messages", [
    ([{"role": "user", "content": "q"}, {"role": "assistant", "tool_calls": [{"id": "é"}]},
      {"role": "tool", "content": None}], [("user", "q"), ("assistant", '[{"id": "é"}]'), ("tool", "")]),
    ({"messages": [{"role": "system", "content": "s"}]}, [("system", "s")]),
    ('[{"role": "user", "content": "j"}]', [("user", "j")]),
    ([{"role": 5, "content": "x"}], [("5", "x")]),
    ([{"role": "user", "blocks": [{"block_type": "text", "text": "b"}]}], [("user", "b")]),
    ({"messages": "x"}, None),
    ([], None),
    ([{"content": "x"}], None),
    ([{"role": "user", "content": "x"}, "y"], None),
    ("text", None),
])
def test_a_generations_messages(value, messages):
    assert lf._lf_messages(value) == messages


@pytest.mark.parametrize("value, prompt", [
    ([{"role": "system", "content": "s"}, {"role": "user", "content": "q"}],
     ("system: s\n\nuser: q", [("system", "s"), ("user", "q")])),
    ("plain", ("plain", [])),
    ('"quoted"', ("quoted", [])),
    ({"prompt": "p"}, ("p", [])),
    ({"prompt": 5}, ('{\n  "prompt": 5\n}', [])),
    (None, (None, [])),
    ([1, 2], ("[\n  1,\n  2\n]", [])),
    ({"é": 1}, ('{\n  "é": 1\n}', [])),
])
def test_a_generations_prompt(value, prompt):
    assert lf._lf_prompt({"input": value}) == prompt


@pytest.mark.parametrize("o, tokens", [
    ({"usageDetails": {"input": 5, "prompt_tokens": 6}}, 5),
    ({"usageDetails": '{"prompt_tokens": 6, "input_tokens": 7}'}, 6),
    ({"usageDetails": {"input_tokens": 7}, "usage": {"input": 8}}, 7),
    ({"usage": {"input": 8, "promptTokens": 9}}, 8),
    ({"usage": {"promptTokens": 9}, "promptTokens": 10}, 9),
    ({"promptTokens": 10, "inputUsage": 11}, 10),
    ({"inputUsage": 11}, 11),
    ({"usageDetails": {"input": "x"}, "usage": "no", "promptTokens": 3.0}, 3),
    ({"usageDetails": {"input": -1}}, None),
    ({}, None),
])
def test_a_generations_prompt_tokens(o, tokens):
    assert lf._lf_tokens(o) == tokens


NONE_ROW = {"name": None, "kind": None, "id": None, "parent": None, "start": None, "duration_ms": None, "model": None,
            "prompt_tokens": None, "completion_tokens": None}


@pytest.mark.parametrize("o, row", [
    ({"name": "n", "type": "generation", "id": 5, "parentObservationId": "p", "startTime": "2024-01-02T03:04:05Z",
      "endTime": "2024-01-02T03:04:06.5Z", "model": "m", "usageDetails": {"input": 3, "output": 4}},
     {"name": "n", "kind": "GENERATION", "id": "5", "parent": "p", "start": "2024-01-02T03:04:05.000Z",
      "duration_ms": 1500.0, "model": "m", "prompt_tokens": 3, "completion_tokens": 4}),
    ({}, NONE_ROW),
    ({"startTime": 0, "endTime": 0.0015}, {**NONE_ROW, "start": "1970-01-01T00:00:00.000Z", "duration_ms": 1.5}),
    ({"startTime": 0}, {**NONE_ROW, "start": "1970-01-01T00:00:00.000Z"}),
    ({"endTime": 5}, NONE_ROW),
    ({"type": "", "usageDetails": '{"completion_tokens": 2}'}, {**NONE_ROW, "completion_tokens": 2}),
    ({"usageDetails": {"output": 1, "completion_tokens": 2}}, {**NONE_ROW, "completion_tokens": 1}),
    ({"usageDetails": "x", "model": 4.0}, {**NONE_ROW, "model": "4"}),
])
def test_an_observations_row_in_the_span_panel(o, row):
    assert lf._lf_span(o) == row


def test_trace_ids_of_a_file_of_observation_ids_are_refused_as_input():
    with pytest.raises(InputError) as e:
        lf.trace_ids({"id": "t", "observations": ["o1"]})
    assert str(e.value).startswith("input, field 'observations': this Langfuse trace lists observation ids only")
