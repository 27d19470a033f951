"""LangSmith runs and MLflow traces read as OpenInference spans (ctxcore/io/formats/langsmith.py, mlflow.py), held
by hand-valued tables: which files are runs or traces, LangChain messages and generations in every dumped form, and
the span record each run or span becomes, written out whole (issue #29). Shapes as the modules' docstrings cite
them (langsmith-sdk schemas.py, langchain_core tracers, mlflow entities span.py / trace.py / document.py)."""

import pytest

from ctxcore.io.formats import langsmith, mlflow
from ctxcore.io.formats.langsmith import lc_message, lc_messages

LC_SYSTEM = {"lc": 1, "type": "constructor", "id": ["langchain", "schema", "messages", "SystemMessage"],
             "kwargs": {"content": "sys"}}


def _said(role, content):
    return {"message": {"role": role, "content": content}}


@pytest.mark.parametrize("message, expected", [
    ("hi", _said("user", "hi")),
    ('"hi"', _said("user", "hi")),
    (5, None),
    (None, None),
    ({"role": "system", "content": "s"}, _said("system", "s")),
    ({"type": "human", "content": "h"}, _said("user", "h")),
    ({"role": "ai", "type": "human", "content": "x"}, _said("assistant", "x")),
    (LC_SYSTEM, _said("system", "sys")),
    ({"lc": 1, "id": ["m", "HumanMessage"], "kwargs": {"content": "k", "type": "ai"}}, _said("assistant", "k")),
    ({"lc": 1, "id": ["m", "AIMessage"], "kwargs": {"tool_calls": [{"name": "f", "args": {"é": 1}}]}},
     _said("assistant", '[{"name": "f", "args": {"é": 1}}]')),
    ({"lc": 1, "id": ["m", "AIMessage"], "kwargs": {"content": "", "tool_calls": [{"name": "f"}]}},
     _said("assistant", "")),
    ({"lc": 0, "kwargs": {"content": "k"}, "content": "top", "role": "user"}, _said("user", "top")),
    ({"lc": 1, "kwargs": "not an object", "content": "top"}, _said("user", "top")),
    ({"role": "critic", "content": "c"}, _said("critic", "c")),
    ({"id": [], "content": "c"}, _said("user", "c")),
    ({"id": "m.ToolMessage", "content": "c"}, _said("user", "c")),
    ({"content": [{"text": "a"}, "b"]}, _said("user", "a\nb")),
    ({"role": "function", "content": None}, _said("tool", "")),
    ({"role": "ChatMessage", "content": "c"}, _said("user", "c")),
    ({"type": "ToolMessage", "content": "c"}, _said("tool", "c")),
    ({"role": 5, "content": "x"}, _said("5", "x")),
])
def test_a_langchain_message(message, expected):
    assert lc_message(message) == expected


@pytest.mark.parametrize("value, expected", [
    ([[LC_SYSTEM, {"type": "human", "content": "q"}], [{"type": "human", "content": "other"}]],
     [_said("system", "sys"), _said("user", "q")]),
    ([{"type": "ai", "content": "a"}, 5, "b"], [_said("assistant", "a"), _said("user", "b")]),
    ('[["hi"]]', [_said("user", "hi")]),
    ([[], "x"], [_said("user", "x")]),
    ([[]], []),
    ([], []),
    ("not a list", []),
    (None, []),
])
def test_langchain_messages(value, expected):
    assert lc_messages(value) == expected


@pytest.mark.parametrize("outputs, expected", [
    ({"generations": [[{"text": "t1"}, {"text": "t2"}], [{"text": "t3"}]]}, ["t1", "t2"]),
    ({"generations": [{"text": "a"}]}, ["a"]),
    ({"generations": [{"text": "", "message": {"type": "ai", "content": "m"}}]}, ["m"]),
    ({"generations": [{"text": "t", "message": {"content": "m"}}]}, ["t"]),
    ({"generations": [{"message": {"lc": 1, "id": ["m", "AIMessage"], "kwargs": {"content": "k"}}}]}, ["k"]),
    ({"generations": [{"text": 5}]}, []),
    ({"generations": ["x", {"text": "ok"}]}, ["ok"]),
    ({"generations": [{"message": 7}]}, []),
    ({"generations": [{"message": "said"}]}, ["said"]),
    ({"generations": [{"message": {"content": ""}}]}, [""]),
    ({"generations": [[]]}, []),
    ({"generations": []}, []),
    ({"generations": "x"}, []),
    (None, []),
])
def test_generations(outputs, expected):
    assert langsmith._generations(outputs) == [_said("assistant", t) for t in expected]


def _run(id, **kw):
    return {"id": id, "run_type": "chain", "inputs": {}, **kw}


@pytest.mark.parametrize("data, ids", [
    (_run("r"), ["r"]),
    ({"runs": [_run("r1"), _run("r2")]}, ["r1", "r2"]),
    ([_run("r1", child_runs=[_run("c1", child_runs=[_run("g1")]), {"x": 1}, _run("c2")]), _run("r2")],
     ["r1", "c1", "g1", "c2", "r2"]),
    ([_run("r", child_runs=None)], ["r"]),
    ({"id": 1, "run_type": "llm", "outputs": None}, [1]),
    ([], None),
    ([_run("r1"), {"id": 2}], None),
    ({"id": 1, "run_type": 5, "inputs": {}}, None),
    ({"run_type": "llm", "inputs": {}}, None),
    ({"id": 1, "run_type": "llm"}, None),
    ({"runs": "x"}, None),
])
def test_which_files_are_langsmith_runs(data, ids):
    runs = langsmith._runs(data)
    assert (None if runs is None else [r["id"] for r in runs]) == ids


def _span(name, kind, attributes, trace_id="t", span_id="r", parent_id="p", start="s", end="e"):
    return {"name": name, "span_kind": kind, "context": {"trace_id": trace_id, "span_id": span_id},
            "parent_id": parent_id, "start_time": start, "end_time": end,
            "attributes": {"openinference.span.kind": kind, **attributes}}


LLM_RUN = {"id": "r", "run_type": "llm", "name": "chat", "trace_id": "t", "parent_run_id": "p", "start_time": "s",
           "end_time": "e",
           "inputs": {"messages": [[LC_SYSTEM, {"type": "human", "content": "q"}]]},
           "outputs": {"generations": [[{"text": "ans"}]],
                       "llm_output": {"model_name": "gpt-x", "token_usage": {"prompt_tokens": 10,
                                                                             "completion_tokens": "3"}}},
           "extra": {"invocation_params": {"model_name": "m1", "_type": "openai", "stream": False, "temperature": 0},
                     "metadata": {"ls_model_name": "lsm"}}}
LLM_IN = ('{"messages": [[{"lc": 1, "type": "constructor", "id": ["langchain", "schema", "messages", '
          '"SystemMessage"], "kwargs": {"content": "sys"}}, {"type": "human", "content": "q"}]]}')
LLM_OUT = ('{"generations": [[{"text": "ans"}]], "llm_output": {"model_name": "gpt-x", "token_usage": '
           '{"prompt_tokens": 10, "completion_tokens": "3"}}}')


@pytest.mark.parametrize("run, record", [
    ({"id": "r", "run_type": "chain", "name": "", "inputs": {"question": "é"}, "outputs": "plain", "trace_id": "t",
      "parent_run_id": "p", "start_time": "s", "end_time": "e", "extra": {"metadata": {"k": 2}}},
     _span("chain", "CHAIN", {"input.value": '{"question": "é"}', "output.value": "plain", "metadata": {"k": 2}})),
    ({"id": "r", "run_type": "weird", "inputs": None, "extra": "not an object"},
     _span("weird", "WEIRD", {}, trace_id=None, parent_id=None, start=None, end=None)),
    ({"id": "r", "run_type": "prompt", "inputs": '"q"', "outputs": '{"a": 1}', "extra": {"metadata": "x"}},
     _span("prompt", "CHAIN", {"input.value": "q", "output.value": '{"a": 1}'}, trace_id=None, parent_id=None,
           start=None, end=None)),
    ({"id": "r", "run_type": "retriever", "name": "docs", "trace_id": "t", "parent_run_id": "p", "start_time": "s",
      "end_time": "e", "inputs": {"query": "q"},
      "outputs": {"documents": [{"page_content": "p", "metadata": {"score": 0.5}}]}},
     _span("docs", "RETRIEVER", {"input.value": '{"query": "q"}',
                                 "output.value": '{"documents": [{"page_content": "p", "metadata": {"score": 0.5}}]}',
                                 "retrieval.documents": [{"document": {"score": 0.5, "content": "p",
                                                                       "metadata": {"score": 0.5}}}]})),
    ({"id": "r", "run_type": "retriever", "name": "docs", "trace_id": "t", "parent_run_id": "p", "start_time": "s",
      "end_time": "e", "outputs": "no documents"}, _span("docs", "RETRIEVER", {"output.value": "no documents"})),
    (LLM_RUN, _span("chat", "LLM", {
        "input.value": LLM_IN, "output.value": LLM_OUT, "metadata": {"ls_model_name": "lsm"},
        "llm.input_messages": [_said("system", "sys"), _said("user", "q")],
        "llm.output_messages": [_said("assistant", "ans")], "llm.model_name": "m1",
        "llm.invocation_parameters": {"model_name": "m1", "temperature": 0},
        "llm.token_count.prompt": 10, "llm.token_count.completion": 3})),
    ({**LLM_RUN, "prompt_tokens": 7, "completion_tokens": 2.0,
      "extra": {"invocation_params": {"model": "m2"}}},
     _span("chat", "LLM", {
         "input.value": LLM_IN, "output.value": LLM_OUT,
         "llm.input_messages": [_said("system", "sys"), _said("user", "q")],
         "llm.output_messages": [_said("assistant", "ans")], "llm.model_name": "m2",
         "llm.invocation_parameters": {"model": "m2"}, "llm.token_count.prompt": 7,
         "llm.token_count.completion": 2})),
    ({"id": "r", "run_type": "llm", "name": "gen", "trace_id": "t", "parent_run_id": "p", "start_time": "s",
      "end_time": "e", "inputs": {"prompts": ["p1", 5, "p2"], "model": "im"},
      "outputs": {"usage_metadata": {"input_tokens": 4}}, "extra": {"metadata": {"ls_model_name": "lsm"}}},
     _span("gen", "LLM", {"input.value": '{"prompts": ["p1", 5, "p2"], "model": "im"}',
                          "output.value": '{"usage_metadata": {"input_tokens": 4}}', "metadata": {"ls_model_name": "lsm"},
                          "llm.prompts": ["p1", "p2"], "llm.model_name": "lsm", "llm.token_count.prompt": 4})),
    ({"id": "r", "run_type": "llm", "name": "gen", "trace_id": "t", "parent_run_id": "p", "start_time": "s",
      "end_time": "e", "inputs": {"messages": [], "model": "im"}, "outputs": {"llm_output": {"token_usage": {}}}},
     _span("gen", "LLM", {"input.value": '{"messages": [], "model": "im"}',
                          "output.value": '{"llm_output": {"token_usage": {}}}', "llm.model_name": "im"})),
])
def test_the_span_a_langsmith_run_becomes(run, record):
    assert langsmith._record(run) == record


def _trace(*spans, **info):
    return {"info": info, "data": {"spans": list(spans)}}


@pytest.mark.parametrize("data, count", [
    (_trace(), 1),
    ({"traces": [_trace(), _trace()]}, 2),
    ([_trace(), _trace()], 2),
    ([], None),
    ([_trace(), {"info": {}}], None),
    ({"info": "x", "data": {"spans": []}}, None),
    ({"info": {}, "data": {"spans": {}}}, None),
    ({"traces": "x"}, None),
])
def test_which_files_are_mlflow_traces(data, count):
    traces = mlflow._traces(data)
    assert (None if traces is None else len(traces)) == count


@pytest.mark.parametrize("value, text", [(None, None), ("s", "s"), ({"é": 1}, '{"é": 1}'), (0, "0"), ([], "[]")])
def test_mlflow_values_as_text(value, text):
    assert mlflow._text(value) == text


DOCS_OUT = '[{"page_content": "p", "metadata": {"doc_uri": "u"}, "id": "d1"}]'
LLM_INPUTS = '{"messages": [{"role": "user", "content": "q"}], "model": "inm", "max_tokens": 50}'


@pytest.mark.parametrize("span, info, record", [
    ({"trace_id": "t", "span_id": "r", "parent_span_id": "p", "name": "retrieve", "start_time_unix_nano": "s",
      "end_time_unix_nano": "e", "attributes": {"mlflow.spanType": '"RETRIEVER"', "mlflow.spanInputs": '"q"',
                                                "mlflow.spanOutputs": DOCS_OUT}}, {},
     _span("retrieve", "RETRIEVER", {"input.value": "q", "output.value": DOCS_OUT, "retrieval.documents": [
         {"document": {"id": "d1", "content": "p", "metadata": {"doc_uri": "u"}}}]})),
    ({"context": {"trace_id": "ct", "span_id": "cs"}, "parent_id": "p", "start_time": 5, "end_time": 6,
      "span_type": "chat_model", "attributes": "not an object"}, {"request_id": "req"},
     _span("llm", "LLM", {}, trace_id="ct", span_id="cs", start=5, end=6)),
    ({"attributes": {"mlflow.spanType": '"WHATEVER"'}}, {"trace_id": "it", "request_id": "rq"},
     _span("span", "UNKNOWN", {}, trace_id="it", span_id=None, parent_id=None, start=None, end=None)),
    ({"name": "n", "span_type": "RETRIEVER", "attributes": {"mlflow.spanType": '"PARSER"',
                                                            "mlflow.traceRequestId": '"req-1"'}}, {"request_id": "rq"},
     _span("n", "CHAIN", {}, trace_id="req-1", span_id=None, parent_id=None, start=None, end=None)),
    ({"name": "n", "attributes": {}}, {"request_id": "rq"},
     _span("n", "UNKNOWN", {}, trace_id="rq", span_id=None, parent_id=None, start=None, end=None)),
    ({"trace_id": "t", "span_id": "r", "parent_span_id": "p", "name": "llm", "start_time_unix_nano": "s",
      "end_time_unix_nano": "e",
      "attributes": {"mlflow.spanType": '"LLM"', "mlflow.spanInputs": LLM_INPUTS,
                     "mlflow.spanOutputs": '{"model": "outm"}', "mlflow.llm.model": '"gpt-4o"',
                     "mlflow.chat.tokenUsage": '{"input_tokens": 12, "output_tokens": 3, "total_tokens": 15}'}}, {},
     _span("llm", "LLM", {"input.value": LLM_INPUTS, "output.value": '{"model": "outm"}',
                          "llm.input_messages": [_said("user", "q")], "llm.model_name": "gpt-4o",
                          "llm.token_count.prompt": 12, "llm.token_count.completion": 3,
                          "llm.invocation_parameters": {"max_tokens": 50}})),
    ({"trace_id": "t", "span_id": "r", "parent_span_id": "p", "name": "llm", "start_time_unix_nano": "s",
      "end_time_unix_nano": "e",
      "attributes": {"mlflow.spanType": '"CHAT_MODEL"', "mlflow.spanInputs": '[[{"type": "human", "content": "hi"}]]',
                     "invocation_params": '{"model": "pm", "_type": "x", "stream": true, "temperature": 0.1}',
                     "metadata": '{"ls_model_name": "lsm"}', "mlflow.spanOutputs": '{"generations": [[{"text": "a"}]]}',
                     "mlflow.chat.tokenUsage": '{"input_tokens": "x"}'}}, {},
     _span("llm", "LLM", {"input.value": '[[{"type": "human", "content": "hi"}]]',
                          "output.value": '{"generations": [[{"text": "a"}]]}', "metadata": {"ls_model_name": "lsm"},
                          "llm.input_messages": [_said("user", "hi")], "llm.output_messages": [_said("assistant", "a")],
                          "llm.model_name": "pm", "llm.invocation_parameters": {"model": "pm", "temperature": 0.1}})),
    ({"trace_id": "t", "span_id": "r", "parent_span_id": "p", "name": "llm", "start_time_unix_nano": "s",
      "end_time_unix_nano": "e",
      "attributes": {"mlflow.spanType": '"LLM"', "mlflow.spanInputs": '{"model": 5, "max_tokens": "many"}',
                     "mlflow.chat.messages": '[{"role": "user", "content": "m"}]', "metadata": '{"ls_model_name": "lsm"}'}},
     {}, _span("llm", "LLM", {"input.value": '{"model": 5, "max_tokens": "many"}', "metadata": {"ls_model_name": "lsm"},
                              "llm.input_messages": [_said("user", "m")], "llm.model_name": "lsm"})),
    ({"trace_id": "t", "span_id": "r", "parent_span_id": "p", "name": "rerank", "start_time_unix_nano": "s",
      "end_time_unix_nano": "e",
      "attributes": {"mlflow.spanType": '"RERANKER"',
                     "mlflow.spanInputs": '{"query": "q", "nodes": [{"text": "a"}, {"text": "b"}]}',
                     "mlflow.spanOutputs": '[{"page_content": "b", "metadata": {"relevance_score": 0.9}}]'}}, {},
     _span("rerank", "RERANKER", {
         "input.value": '{"query": "q", "nodes": [{"text": "a"}, {"text": "b"}]}',
         "output.value": '[{"page_content": "b", "metadata": {"relevance_score": 0.9}}]',
         "reranker.output_documents": [{"document": {"score": 0.9, "content": "b",
                                                     "metadata": {"relevance_score": 0.9}}}],
         "reranker.input_documents": [{"document": {"content": "a"}}, {"document": {"content": "b"}}],
         "reranker.query": "q"})),
    ({"trace_id": "t", "span_id": "r", "parent_span_id": "p", "name": "rerank", "start_time_unix_nano": "s",
      "end_time_unix_nano": "e", "attributes": {"mlflow.spanType": '"RERANKER"', "mlflow.spanInputs": '{"query": 5}'}},
     {}, _span("rerank", "RERANKER", {"input.value": '{"query": 5}'})),
])
def test_the_span_an_mlflow_span_becomes(span, info, record):
    assert mlflow._record(span, info) == record


def test_mlflow_spans_that_are_not_objects_are_passed_over():
    records = mlflow._records({"traces": [_trace({"name": "a"}, 5, {"name": "b"}, request_id="r1"),
                                          _trace({"name": "c"}, request_id="r2")]})
    assert [(r["name"], r["context"]["trace_id"]) for r in records] == [("a", "r1"), ("b", "r1"), ("c", "r2")]
    assert mlflow._records({"not": "a trace"}) == []


@pytest.mark.parametrize("attributes, model", [
    ({"mlflow.llm.model": '"lm"', "invocation_params": '{"model": "pm", "model_name": "pmn"}'}, "lm"),
    ({"invocation_params": '{"model": "pm", "model_name": "pmn"}', "metadata": '{"ls_model_name": "lsm"}'}, "pm"),
    ({"invocation_params": '{"model_name": "pmn"}', "metadata": '{"ls_model_name": "lsm"}'}, "pmn"),
    ({"metadata": '{"ls_model_name": "lsm"}', "mlflow.spanOutputs": '{"llm_output": {"model_name": "lom"}}'}, "lsm"),
    ({"mlflow.spanOutputs": '{"llm_output": {"model_name": "lom"}, "model": "outm"}',
      "mlflow.spanInputs": '{"model": "inm"}'}, "lom"),
    ({"mlflow.spanOutputs": '{"model": "outm"}', "mlflow.spanInputs": '{"model": "inm"}'}, "inm"),
    ({"mlflow.spanOutputs": '{"model": "outm"}', "mlflow.spanInputs": '{"other": 1}'}, "outm"),
    ({"mlflow.spanOutputs": '{"model": 5}'}, None),
])
def test_an_mlflow_llm_spans_model_is_the_first_one_found(attributes, model):
    record = mlflow._record({"attributes": {"mlflow.spanType": '"LLM"', **attributes}}, {})
    assert record["attributes"].get("llm.model_name") == model


def test_an_mlflow_rerankers_input_documents_before_its_nodes():
    record = mlflow._record({"attributes": {
        "mlflow.spanType": '"RERANKER"',
        "mlflow.spanInputs": '{"documents": [{"page_content": "a"}], "nodes": [{"text": "n"}]}'}}, {})
    assert record["attributes"]["reranker.input_documents"] == [{"document": {"content": "a"}}]


@pytest.mark.parametrize("extra, outputs, inputs, model", [
    ({"invocation_params": {"model_name": "pmn", "model": "pm"}, "metadata": {"ls_model_name": "lsm"}}, None, None,
     "pmn"),
    ({"invocation_params": {"model": "pm"}, "metadata": {"ls_model_name": "lsm"}}, None, None, "pm"),
    ({"metadata": {"ls_model_name": "lsm"}}, {"llm_output": {"model_name": "lom"}}, None, "lsm"),
    ({}, {"llm_output": {"model_name": "lom"}}, {"model": "im"}, "lom"),
    ({}, {"llm_output": {}}, {"model": "im"}, "im"),
    ({}, None, None, None),
])
def test_a_langsmith_llm_runs_model_is_the_first_one_found(extra, outputs, inputs, model):
    record = langsmith._record({"id": "r", "run_type": "llm", "extra": extra, "outputs": outputs, "inputs": inputs})
    assert record["attributes"].get("llm.model_name") == model


def test_langsmith_outputs_keep_their_characters_and_a_file_of_no_runs_has_no_records():
    record = langsmith._record({"id": "r", "run_type": "chain", "outputs": {"a": "é"}})
    assert record["attributes"]["output.value"] == '{"a": "é"}'
    assert langsmith._records({"not": "runs"}) is None
