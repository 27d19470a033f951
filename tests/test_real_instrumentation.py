"""Traces written by the REAL instrumentation of real RAG pipelines import right (issue #31 item 1).

Each pipeline in tests/pipelines/ logs a correct, a copies and a stale run through the framework's real
instrumentor and a real exporter (the OpenTelemetry SDK's spans as OTLP JSON, or MLflow's autolog into a
local sqlite store and ``Trace.to_json()``); ctxcore reads the file it wrote. The model is fake; nothing
else is. No network: every store and exporter is local."""

from __future__ import annotations

import functools
import json
import re

import pytest
from openinference.instrumentation.haystack import HaystackInstrumentor
from openinference.instrumentation.langchain import LangChainInstrumentor
from openinference.instrumentation.llama_index import LlamaIndexInstrumentor
from opentelemetry.instrumentation.langchain import LangchainInstrumentor as OpenLLMetryLangchain

from ctxcore.analysis.diagnosis import diagnose
from ctxcore.io.formats import load_run
from ctxcore.io.formats.genai import step_documents, to_openinference
from tests.pipelines.export import mlflow_file, otlp_file
from tests.pipelines.haystack_rag import run_haystack
from tests.pipelines.langchain_rag import run_langchain
from tests.pipelines.llamaindex_rag import run_llamaindex
from tests.pipelines.scenario import COPIES, CORRECT, MODEL, STALE, SYSTEM, user_message

SETUPS = {  # name -> (pipeline, exporter setup factory taking the output path and a work directory)
    "langchain-openinference": (run_langchain, lambda path, tmp: functools.partial(otlp_file, path, LangChainInstrumentor())),
    "llamaindex-openinference": (run_llamaindex, lambda path, tmp: functools.partial(otlp_file, path, LlamaIndexInstrumentor())),
    "haystack-openinference": (run_haystack, lambda path, tmp: functools.partial(otlp_file, path, HaystackInstrumentor())),
    "langchain-openllmetry": (run_langchain, lambda path, tmp: functools.partial(otlp_file, path, OpenLLMetryLangchain())),
    "langchain-mlflow": (run_langchain, lambda path, tmp: functools.partial(mlflow_file, path, str(tmp))),
}
RUNS = (CORRECT, COPIES, STALE)


@pytest.fixture(scope="module")
def logged(tmp_path_factory):
    """Each setup's exported file, written once per module by the real pipeline and instrumentation."""
    files = {}

    def get(name):
        if name not in files:
            pipeline, setup = SETUPS[name]
            work = tmp_path_factory.mktemp(name)
            path = str(work / "export.json")
            pipeline(setup(path, work))
            files[name] = path
        return files[name]
    return get


def runs_of(path):
    first = load_run(path)
    return [load_run(path, run=i) for i in range(1, len(first.logged.runs) + 1)]


@pytest.mark.parametrize("name", SETUPS)
def test_every_run_reads_documents_query_prompt_answer_and_model(logged, name):
    loaded = runs_of(logged(name))
    assert len(loaded) == 3
    for got, run in zip(loaded, RUNS):
        assert [c.id for c in got.candidates] == [d.id for d in run.retrieved]
        assert [c.score for c in got.candidates] == [d.score for d in run.retrieved]
        assert [c.text for c in got.candidates] == [d.text for d in run.retrieved]
        assert got.query == run.query
        assert got.logged.answer == run.answer
        assert got.logged.model == MODEL
        prompt = got.logged.prompt_text
        assert prompt.startswith(f"system: {SYSTEM}\n\nuser: Context:\n") and prompt.endswith(f"Question: {run.query}")
        assert [d.id for d in run.retrieved if d.text in prompt] == [d.id for d in run.retrieved
                                                                    if any(d.text == s.text for s in run.sent())]


@pytest.mark.parametrize("name", ["langchain-openinference", "haystack-openinference", "langchain-openllmetry",
                                  "langchain-mlflow"])
def test_the_logged_prompt_is_the_labelled_one_that_was_sent(logged, name):
    for got, run in zip(runs_of(logged(name)), RUNS):
        assert got.logged.prompt_text == f"system: {SYSTEM}\n\nuser: {user_message(run.query, run.sent())}"


@pytest.mark.parametrize("name", SETUPS)
def test_the_diagnosis_names_the_broken_runs_cause_and_none_for_the_correct_run(logged, name):
    got = []
    for loaded in runs_of(logged(name)):
        trace = loaded.build()
        found = diagnose(trace, logged_prompt=loaded.logged.prompt_text, answer=loaded.logged.answer).findings
        causes = [f for f in found if f.role == "cause"]
        got.append((causes[0].kind, causes[0].ids[:2]) if causes else None)
    assert got == [None,
                   ("duplicates_crowd_out", ("warranty-damaged-goods", "refund-copy-0")),
                   ("outdated_version_sent", ("returns-2024", "returns-2025"))]


@pytest.mark.parametrize("name, span", [("langchain-openinference", "select_top_docs"),
                                        ("langchain-openllmetry", "execute_task select_top_docs"),
                                        ("langchain-mlflow", "select_top_docs")])
def test_a_runnable_lambda_after_the_retriever_is_a_filter_step(logged, name, span):
    """select_top_docs keeps the 4 best of 6: a filter step, its kept ids in order; never more candidates."""
    copies = runs_of(logged(name))[1]
    assert len(copies.candidates) == 6
    assert copies.logged.reranker["filters"] == [{"span": span, "kept": ["refund-copy-0", "refund-copy-1",
                                                                         "refund-copy-2", "refund-copy-3"]}]
    assert copies.logged.reranked == ("refund-copy-0", "refund-copy-1", "refund-copy-2", "refund-copy-3")
    assert copies.logged.reranker_cut == ("warranty-damaged-goods", "gift-wrap")


def test_the_llamaindex_retriever_nested_in_its_retrieve_span_is_read_once(logged):
    """OpenInference writes a RETRIEVER 'FixedRetriever.retrieve' span with the nodes and a RETRIEVER
    'FixedRetriever._retrieve' inside it without them: one retrieval, six candidates."""
    copies = runs_of(logged("llamaindex-openinference"))[1]
    assert copies.logged.retriever_spans == ("FixedRetriever.retrieve",)
    assert len(copies.candidates) == 6
    assert not any("combined" in w for w in copies.warnings)


def test_the_runs_keep_their_order_and_dates_and_families(logged):
    stale = runs_of(logged("haystack-openinference"))[2]
    assert [(c.doc_id, c.date) for c in stale.candidates] == [("returns-policy", "2024-02-01"),
                                                             ("returns-policy", "2025-03-01"), ("gift", None)]


# step_documents, the reader fix the real output showed: a table of CHAIN outputs --------------------------

LC_DOC = {"id": None, "metadata": {"id": "a", "score": 0.5}, "page_content": "t", "type": "Document"}
DUMPD = {"lc": 1, "type": "constructor", "id": ["langchain", "schema", "document", "Document"],
         "kwargs": {"metadata": {"id": "a", "score": 0.5}, "page_content": "t", "type": "Document"}}


@pytest.mark.parametrize("kind, output, want", [
    ("CHAIN", json.dumps([LC_DOC]), [{"document": {"score": 0.5, "content": "t", "metadata": {"id": "a", "score": 0.5}}}]),
    ("CHAIN", json.dumps({"outputs": [DUMPD]}), [{"document": {"score": 0.5, "content": "t",
                                                               "metadata": {"id": "a", "score": 0.5}}}]),
    ("CHAIN", json.dumps({"documents": [{"id": "h1", "content": "t", "score": 0.2}]}),
     [{"document": {"id": "h1", "score": 0.2, "content": "t"}}]),
    ("CHAIN", json.dumps(["<NodeWithScore(node=TextNode(id_=a), score=0.9)>"]), None),  # reprs: not documents
    ("CHAIN", json.dumps({"documents": ["Document(id=a, content: 't')"]}), None),
    ("CHAIN", json.dumps([{"metadata": {"id": "a"}}]), None),                            # no text: not documents
    ("CHAIN", json.dumps([]), None),
    ("CHAIN", "[1] some text", None),
    ("LLM", json.dumps([LC_DOC]), None),                                                 # only a CHAIN step
])
def test_step_documents_reads_a_chain_steps_output_documents(kind, output, want):
    attrs = {"openinference": {"span": {"kind": kind}}, "output": {"value": output}}
    assert (step_documents(attrs).get("retrieval") or {}).get("documents") == want


@pytest.mark.parametrize("attrs, want", [
    ({"gen_ai": {"request": {"model": "unknown"}}, "traceloop": {"association": {"properties": {"ls_model_name": "m"}}}}, "m"),
    ({"gen_ai": {"request": {"model": "gpt-4o"}}, "traceloop": {"association": {"properties": {"ls_model_name": "m"}}}},
     "gpt-4o"),
    ({"gen_ai": {"request": {"model": "unknown"}, "response": {"model": "r"}}}, "r"),
    ({"gen_ai": {"request": {"model": "unknown"}, "operation": {"name": "chat"}}}, None),
])
def test_openllmetrys_unknown_model_gives_way_to_the_model_langchain_named(attrs, want):
    assert (to_openinference(attrs).get("llm") or {}).get("model_name") == want


@pytest.mark.parametrize("name", [n for n in SETUPS if n != "langchain-mlflow"])
def test_trace_ids_read_as_hex_whatever_json_mapping_wrote_them(logged, name):
    # the SDK's spans encoded with protobuf's JSON mapping carry base64 ids; OTLP JSON (the Collector) writes hex,
    # so `--trace-id` takes the id as every tracing UI shows it
    runs = runs_of(logged(name))
    ids = [r.logged.trace_id for r in runs]
    assert len(set(ids)) == 3 and all(re.fullmatch(r"[0-9a-f]{32}", i) for i in ids), ids
    assert load_run(logged(name), trace_id=ids[1]).logged.trace_id == ids[1]
