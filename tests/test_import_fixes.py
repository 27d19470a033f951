"""Logged-trace import fixes (issue #28 item 8, issue #31): a document's id and score kept in its
metadata, post-retrieval filter steps, nested retriever spans that log the same documents, the
MLflow model name, and the limits a log states. Fixtures and their shape sources are in
tests/fixtures/traces/README.md."""

from __future__ import annotations

import copy
import json
import os

import pytest

from ctxcore import InputError, load, trace_from_json
from ctxcore.io.formats.documents import document
from ctxcore.io.formats.messages import stated_limits
from ctxcore.io.formats.values import unflatten
from ctxcore.io.schema import problems

HERE = os.path.dirname(os.path.abspath(__file__))
TRACES = os.path.join(HERE, "fixtures", "traces")

IDS = ["kb-101", "kb-102", "kb-103"]
SCORES = [0.91, 0.84, 0.62]
ALL8 = [f"kb-10{i}" for i in range(1, 9)]


def read(name):
    with open(os.path.join(TRACES, name), encoding="utf-8") as f:
        return json.load(f)


def load_data(data, name):
    return load(json.dumps(data).encode(), name)


# 1. id and score in the document metadata ----------------------------------------------------------------

def test_openinference_langchain_documents_take_id_and_score_from_their_metadata():
    """The OpenInference LangChain tracer logs document.content and document.metadata (a JSON string) only."""
    got = load_data(read("openinference_langchain_metadata.json"), "oi.json")
    assert [c.id for c in got.candidates] == IDS
    assert [c.score for c in got.candidates] == SCORES
    assert [c.doc_id for c in got.candidates] == ["refund-policy", "damaged-items", "store-credit"]
    assert [c.title for c in got.candidates] == ["Refund Policy", "Damaged Items", "Store Credit"]
    assert got.candidates[0].metadata["source"] == "kb/refund-policy.md"
    assert not any("carry no scores" in w for w in got.warnings)


@pytest.mark.parametrize("item, want_id, want_score", [
    ({"document.content": "t", "document.metadata": '{"id": "a", "score": 0.5}'}, "a", 0.5),
    ({"content": "t", "metadata": {"id": "a", "score": 0.5}}, "a", 0.5),
    ({"content": "t", "id": "top", "score": 0.9, "metadata": {"id": "a", "score": 0.5}}, "top", 0.9),
    ({"content": "t", "metadata": {"relevance_score": "0.7"}}, None, 0.7),
    ({"content": "t", "metadata": {"similarity_score": 0.3}}, None, 0.3),
    ({"content": "t", "metadata": {"score": "high"}}, None, None),
    ({"content": "t", "metadata": {"id": 7}}, 7, None),
    ({"content": "t", "metadata": {"id": True}}, None, None),
    ({"content": "t", "metadata": {"id": {"x": 1}}}, None, None),
    ({"content": "t", "metadata": {"id": ""}}, None, None),
    ({"content": "t", "metadata": '["a", "b"]'}, None, None),
])
def test_document_id_and_score_fall_back_to_the_metadata(item, want_id, want_score):
    d = document(unflatten(item), "w", "f.json")
    assert (d["id"], d["score"]) == (want_id, want_score)


def _openllmetry_with_metadata_ids():
    data = read("openllmetry_langchain.json")
    for rs in data["resourceSpans"]:
        for ss in rs["scopeSpans"]:
            for span in ss["spans"]:
                for a in span["attributes"]:
                    text = a["value"].get("stringValue", "")
                    if a["key"] == "traceloop.entity.output" and '"documents"' in text:
                        out = json.loads(text)
                        for doc, i, s in zip(out["documents"], IDS, SCORES):
                            doc["metadata"].update({"id": i, "score": s})
                        a["value"]["stringValue"] = json.dumps(out)
    return data


def _langsmith_with_metadata_ids():
    data = read("langsmith_runs.json")
    runs = data if isinstance(data, list) else data["runs"]
    for run in runs:
        if run["run_type"] == "retriever":
            for doc in run["outputs"]["documents"]:
                doc["metadata"]["id"] = doc.pop("id")
                doc["id"] = None  # LangChain Document.id is optional; stores often leave it unset
    return data


@pytest.mark.parametrize("make, name", [
    (_openllmetry_with_metadata_ids, "openllmetry.json"),
    (_langsmith_with_metadata_ids, "langsmith.json"),
    (lambda: read("mlflow_langchain_autolog.json"), "mlflow.json"),
])
def test_every_langchain_family_reads_id_and_score_from_document_metadata(make, name):
    got = load_data(make(), name)
    assert [c.id for c in got.candidates] == IDS
    assert [c.score for c in got.candidates] == SCORES


# 2. filter steps --------------------------------------------------------------------------------------

def test_langfuse_runnable_lambda_filters_are_filter_steps_not_more_candidates():
    """A RETRIEVER of 8, then unique_by_doc (6) and select_top_docs (3), each a CHAIN with Documents in and out."""
    got = load_data(read("langfuse_langchain_filter.json"), "lf.json")
    assert [c.id for c in got.candidates] == ALL8
    assert [c.score for c in got.candidates] == [0.91, 0.84, 0.62, 0.6, 0.58, 0.41, 0.39, 0.35]
    lg = got.logged
    assert lg.retriever_spans == ("VectorStoreRetriever",)
    assert lg.reranker == {"span": "select_top_docs", "model": None, "top_k": None, "step": "filter",
                           "filters": [{"span": "unique_by_doc",
                                        "kept": ["kb-101", "kb-102", "kb-103", "kb-106", "kb-107", "kb-108"]},
                                       {"span": "select_top_docs", "kept": ["kb-101", "kb-102", "kb-103"]}]}
    assert lg.reranked == ("kb-101", "kb-102", "kb-103")
    assert lg.reranker_cut == ("kb-104", "kb-105", "kb-106", "kb-107", "kb-108")
    assert not any("combined" in w for w in got.warnings)


def test_langfuse_chain_with_new_documents_still_adds_candidates():
    """The other side of the rule: a CHAIN whose documents are not all known produces candidates."""
    data = read("langfuse_langchain_filter.json")
    extra = {"id": None, "metadata": {"id": "kb-900", "score": 0.2}, "page_content": "A new passage.", "type": "Document"}
    data["observations"][3]["output"].append(extra)  # select_top_docs now returns one document never retrieved
    got = load_data(data, "lf.json")
    assert len(got.candidates) == 8 + 4
    assert got.logged.reranker["filters"] == [{"span": "unique_by_doc", "kept": ["kb-101", "kb-102", "kb-103",
                                                                                  "kb-106", "kb-107", "kb-108"]}]


def _with_compression(kept):
    """The OpenInference fixture with a ContextualCompressionRetriever around its retriever returning ``kept``."""
    spans = read("openinference_langchain_metadata.json")
    base = spans[1]
    outer = copy.deepcopy(base)
    outer["name"], outer["context"]["span_id"] = "ContextualCompressionRetriever", "a000000000000009"
    base["parent_id"] = "a000000000000009"
    attrs = {k: v for k, v in base["attributes"].items() if not k.startswith("retrieval.documents")}
    for j, i in enumerate(kept):
        attrs[f"retrieval.documents.{j}.document.content"] = base["attributes"][f"retrieval.documents.{i}.document.content"]
        attrs[f"retrieval.documents.{j}.document.metadata"] = base["attributes"][f"retrieval.documents.{i}.document.metadata"]
    outer["attributes"] = attrs
    return [spans[0], outer, *spans[1:]]


def test_a_compression_retriever_around_the_retriever_is_a_filter_step():
    got = load_data(_with_compression([1, 0]), "oi.json")
    assert [c.id for c in got.candidates] == IDS  # the inner retriever's 3, not the outer's 2
    assert got.logged.retriever_spans == ("VectorStoreRetriever",)
    assert got.logged.reranker["filters"] == [{"span": "ContextualCompressionRetriever", "kept": ["kb-102", "kb-101"]}]
    assert got.logged.reranked == ("kb-102", "kb-101")
    assert got.logged.reranker_cut == ("kb-103",)


# 3. nested retriever spans logging the same documents ---------------------------------------------------

NOTE = ("the RETRIEVER 'retriever_query_engine.retrieve' span repeats the 3 documents of the RETRIEVER "
        "'vector_index_retriever.retrieve' span nested in it: read once, from the inner span")


def test_unlinked_nested_retriever_spans_are_read_once():
    """LlamaIndex.TS through OpenLLMetry-JS without a context manager: every span its own trace."""
    got = load_data(read("openllmetry_llamaindex_ts_unlinked.json"), "ts.json")
    assert [c.id for c in got.candidates] == IDS
    assert [c.score for c in got.candidates] == SCORES
    assert got.logged.retriever_spans == ("vector_index_retriever.retrieve",)
    assert NOTE in got.logged.unmapped
    assert got.logged.reranked == ()


def test_linked_nested_retriever_spans_read_the_innermost():
    data = read("openllmetry_llamaindex_ts_unlinked.json")
    spans = data["resourceSpans"][0]["scopeSpans"][0]["spans"]
    for s in spans:
        s["traceId"] = "11" * 16
    spans[1]["parentSpanId"], spans[2]["parentSpanId"], spans[3]["parentSpanId"] = "1" * 16, "2" * 16, "1" * 16
    got = load_data(data, "ts.json")
    assert [c.id for c in got.candidates] == IDS
    assert got.logged.retriever_spans == ("vector_index_retriever.retrieve",)
    assert NOTE in got.logged.unmapped


def test_retriever_spans_one_after_the_other_are_both_read():
    """Edge: the second retrieval ends after the first (not inside it): two retrievals, combined as before."""
    data = read("openllmetry_llamaindex_ts_unlinked.json")
    spans = data["resourceSpans"][0]["scopeSpans"][0]["spans"]
    spans[2]["endTimeUnixNano"] = str(int(spans[1]["endTimeUnixNano"]) + 1_000_000)  # 1 ms past the first's end
    got = load_data(data, "ts.json")
    assert [c.id for c in got.candidates] == IDS + [f"{i}#2" for i in IDS]
    assert not any("read once" in u for u in got.logged.unmapped)


# 4. the MLflow model name ------------------------------------------------------------------------------

def test_mlflow_langchain_autolog_model_and_max_tokens():
    got = load_data(read("mlflow_langchain_autolog.json"), "mlflow.json")
    assert got.logged.model == "gpt-4o-mini"
    assert got.config == {"model": "gpt-4o-mini", "max_output": 400}
    assert got.logged.stated == {"max_output": 400}


@pytest.mark.parametrize("attrs, outputs_model, want", [
    ({"invocation_params": {"model": "gpt-4o"}}, None, "gpt-4o"),
    ({"invocation_params": {"model_name": "gpt-4.1-mini"}}, None, "gpt-4.1-mini"),
    ({"metadata": {"ls_model_name": "gpt-4o-mini"}}, None, "gpt-4o-mini"),
    ({}, "gpt-4o-mini-2024-07-18", "gpt-4o-mini-2024-07-18"),
    ({"mlflow.llm.model": "gpt-4o", "invocation_params": {"model_name": "gpt-4.1"}}, None, "gpt-4o"),
    ({}, None, None),
])
def test_mlflow_model_name_sources(attrs, outputs_model, want):
    data = read("mlflow_langchain_autolog.json")
    span = data["data"]["spans"][2]
    for key in ("invocation_params", "metadata"):
        span["attributes"].pop(key)
    span["attributes"].update({k: json.dumps(v) for k, v in attrs.items()})
    outputs = json.loads(span["attributes"]["mlflow.spanOutputs"])
    outputs["llm_output"]["model_name"] = outputs_model
    span["attributes"]["mlflow.spanOutputs"] = json.dumps(outputs)
    assert load_data(data, "mlflow.json").logged.model == want


# 5. stated limits ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("params, want", [
    ({"context_window": 8192}, {"context_window": 8192}),
    ({"max_model_len": 32768}, {"context_window": 32768}),
    ({"max_context_tokens": "6000"}, {"context_window": 6000}),
    ({"max_tokens": 512}, {"max_output": 512}),
    ({"max_completion_tokens": 256}, {"max_output": 256}),
    ({"ls_max_tokens": 400}, {"max_output": 400}),
    ({"min_relevance_score": 0.25}, {"min_score": 0.25}),
    ({"score_threshold": 0.5}, {"min_score": 0.5}),
    ({"similarity_cutoff": 0.7}, {"min_score": 0.7}),
    ({"top_n": 5}, {"top_n": 5}),
    ({"top_k": 10}, {"top_k": 10}),
    ({"k": 4}, {"top_k": 4}),
    ({"search_kwargs": {"k": 8, "score_threshold": 0.3}}, {"top_k": 8, "min_score": 0.3}),
    ({"search_kwargs": '{"k": 6}'}, {"top_k": 6}),
    ({"k": True, "max_tokens": None, "top_n": "five"}, None),
    ({"max_tokens": 100, "max_completion_tokens": 200}, {"max_output": 100}),
    ({}, None),
])
def test_stated_limits_canonical_names(params, want):
    unmapped = []
    assert stated_limits([("span", params, True)], unmapped) == want
    assert unmapped == []


def test_stated_limits_first_source_wins_and_others_are_listed():
    unmapped = []
    got = stated_limits([("LLM 'a'", {"max_tokens": 400}, False), ("CHAIN 'b' metadata", '{"max_tokens": 900, '
                                                                   '"rate_limit_rpm": 60, "max_hops": 2}', True),
                         ("CHAIN 'c' metadata", {"max_retries": 3}, False)], unmapped)
    assert got == {"max_output": 400}
    assert unmapped == ["stated limits of the CHAIN 'b' metadata not read: rate_limit_rpm=60, max_hops=2"]


def test_openinference_stated_limits_reach_the_trace_and_come_back():
    got = load_data(read("openinference_langchain_metadata.json"), "oi.json")
    want = {"max_output": 400, "top_k": 3, "min_score": 0.5, "context_window": 128000}
    assert got.logged.stated == want
    assert "stated limits of the CHAIN 'RunnableSequence' metadata not read: rate_limit_rpm=60" in got.logged.unmapped
    text = got.build().to_json()
    assert json.loads(text)["logged"]["stated"] == want
    assert trace_from_json(text).logged.stated == want


def test_langfuse_stated_limits_from_model_parameters():
    assert load_data(read("langfuse_langchain_filter.json"), "lf.json").logged.stated == {"max_output": 400}


def test_a_tampered_stated_limit_is_refused_naming_the_field():
    got = load_data(read("openinference_langchain_metadata.json"), "oi.json")
    data = json.loads(got.build().to_json())
    assert problems(data) == []
    data["logged"]["stated"]["top_k"] = "three"
    # the validator names the optional block an anyOf sits on (schema.py), not the key inside it
    assert problems(data) == ["logged: must be Logged or null"]
    with pytest.raises(InputError) as err:
        trace_from_json(json.dumps(data), source="t.json")
    assert str(err.value).startswith("t.json, field 'logged': must be Logged or null")


def test_nested_spans_that_start_together_are_read_once():
    """Edge: the inner retrieval starts the same nanosecond as the outer one and comes first in the file."""
    data = read("openllmetry_llamaindex_ts_unlinked.json")
    spans = data["resourceSpans"][0]["scopeSpans"][0]["spans"]
    spans[2]["startTimeUnixNano"] = spans[1]["startTimeUnixNano"]
    spans[1], spans[2] = spans[2], spans[1]
    got = load_data(data, "ts.json")
    assert [c.id for c in got.candidates] == IDS
    assert got.logged.retriever_spans == ("vector_index_retriever.retrieve",)
    assert NOTE in got.logged.unmapped


def test_three_nested_retrievals_read_once_and_the_middle_one_is_a_filter_step():
    """Edge: base retriever (3) inside a step that cut one (2) inside the query engine's retrieve (2, reordered)."""
    data = read("openllmetry_llamaindex_ts_unlinked.json")
    spans = data["resourceSpans"][0]["scopeSpans"][0]["spans"]
    inner = copy.deepcopy(spans[2])
    inner["spanId"], inner["traceId"], inner["name"] = "5" * 16, "55" * 16, "base_retriever.retrieve"
    inner["startTimeUnixNano"] = str(int(spans[2]["startTimeUnixNano"]) + 1_000_000)
    inner["endTimeUnixNano"] = str(int(spans[2]["endTimeUnixNano"]) - 1_000_000)
    for span, order in ((spans[2], [0, 1]), (spans[1], [1, 0])):
        for a in span["attributes"]:
            if a["key"] == "traceloop.entity.output":
                nodes = json.loads(a["value"]["stringValue"])
                a["value"]["stringValue"] = json.dumps([nodes[i] for i in order])
    spans.insert(3, inner)
    got = load_data(data, "ts.json")
    assert [c.id for c in got.candidates] == IDS
    assert got.logged.retriever_spans == ("base_retriever.retrieve",)
    assert got.logged.reranker["filters"] == [{"span": "vector_index_retriever.retrieve", "kept": ["kb-101", "kb-102"]},
                                              {"span": "retriever_query_engine.retrieve", "kept": ["kb-102", "kb-101"]}]
    assert got.logged.reranker_cut == ("kb-103",)
