"""A bare attribute map (one span's attributes, no envelope), issue #29: when it is recognised, which
convention it is named as, and what it reads as. Hand-valued: each row is an input and its exact answer."""

import json

import pytest

from ctxcore.errors import InputError
from ctxcore.io.formats import family_of, load_trace
from ctxcore.io.formats.bare import BARE

OI = "OpenInference span attributes"
GENAI = "OpenTelemetry GenAI span attributes"
DOCS = {"retrieval.documents": [{"document.id": "a", "document.content": "alpha text"}]}


@pytest.mark.parametrize("data,convention", [
    ([], None), ({}, None), (["llm.a", "llm.b"], None), ("llm.model_name", None),
    # an envelope of our own or of a span is not a bare map, whatever else it holds
    ({**DOCS, "candidates": []}, None), ({**DOCS, "format": "x"}, None), ({**DOCS, "attributes": {}}, None),
    # the bare top-level names count as known, not only their dotted prefixes
    ({"openinference": {"span": {"kind": "LLM"}}}, OI), ({"llm": {"model_name": "m"}}, OI),
    ({"retrieval": {"documents": []}}, OI), ({"gen_ai": {"system": "openai"}}, GENAI),
    ({"openinferencex": 1}, None), ({"llmx": 1}, None),
    # at least half the keys must be known: 1 of 2 is, 1 of 3 is not, none of one is not
    ({"llm.model_name": "m", "x": 1}, OI), ({"llm.model_name": "m", "x": 1, "y": 2}, None), ({"x": 1}, None),
    ({"llm.model_name": "m", "llm.x": 1, "x": 1}, OI),
    # gen_ai / traceloop names the GenAI convention unless an OpenInference name is present too
    ({"gen_ai.request.model": "m"}, GENAI), ({"traceloop.entity.name": "chain"}, GENAI),
    ({"gen_ai.request.model": "m", "openinference.span.kind": "LLM"}, OI),
    ({"traceloop.entity.name": "c", "openinference.span.kind": "LLM"}, OI),
    ({"llm.model_name": "m"}, OI), ({"input.value": "q", "output.value": "a"}, OI),
])
def test_which_maps_are_bare_and_the_convention_they_are_named_as(data, convention):
    if convention is None:
        assert getattr(family_of(data, "f.json"), "name", None) != BARE
        return
    assert family_of(data, "f.json").name == BARE
    with pytest.raises(InputError) as err:
        load_trace({**data, "llm.x": 1} if "retrieval" in data else data, "f.json")
    assert f"closest format recognised: {convention} (" in str(err.value)


@pytest.mark.parametrize("data,kind", [({"llm.model_name": "m"}, "unknown"),
                                       ({"openinference.span.kind": "LLM", "llm.model_name": "m"}, "LLM"),
                                       ({"openinference.span.kind": "EMBEDDING"}, "EMBEDDING")])
def test_a_map_without_documents_is_refused_in_one_line_naming_the_file_the_field_and_the_span_kind(data, kind):
    with pytest.raises(InputError) as err:
        load_trace(data, "attrs.json")
    assert str(err.value) == (
        f"attrs.json, field 'retrieval.documents': a single span's attributes, not a trace: closest format "
        f"recognised: {OI} (span kind {kind}), which lacks retrieval.documents (a retriever span); export the "
        f"whole trace with every span (see the README's input formats)")
    assert (err.value.source, err.value.field) == ("attrs.json", "retrieval.documents")


def test_a_retriever_map_reads_as_one_span_named_span_of_the_bare_format():
    attrs = {"openinference.span.kind": "RETRIEVER", "input.value": "When?",
             "retrieval.documents.0.document.id": "a", "retrieval.documents.0.document.content": "alpha text",
             "retrieval.documents.1.document.id": "b", "retrieval.documents.1.document.content": "beta text"}
    got = load_trace(attrs, "attrs.json")
    assert (got.format, got.source, got.query) == (BARE, "attrs.json", "When?")
    assert [(c.id, c.text) for c in got.candidates] == [("a", "alpha text"), ("b", "beta text")]
    assert [(s["name"], s["kind"]) for s in got.logged.spans] == [("span", "RETRIEVER")]
    assert got.warnings == ("documents carry no scores: ranked by retrieval order",
                            "not mapped from the span-attributes trace: the prompt and answer (no LLM span in the "
                            "trace)")


def test_a_reranker_map_with_output_documents_only_reads_its_kept_documents():
    attrs = {"openinference.span.kind": "RERANKER", "reranker.query": "When?",
             "reranker.output_documents": [{"document.id": "a", "document.content": "alpha", "document.score": 0.9},
                                           {"document.id": "b", "document.content": "beta", "document.score": 0.4}]}
    got = load_trace(attrs, "attrs.json")
    assert [(c.id, c.score) for c in got.candidates] == [("a", 0.9), ("b", 0.4)]
    assert got.logged.reranked == ("a", "b") and got.query == "When?"


def test_a_trace_id_asked_of_a_bare_map_is_refused_naming_it():
    with pytest.raises(InputError) as err:
        load_trace({"openinference.span.kind": "RETRIEVER", **DOCS}, "attrs.json", trace_id="t9")
    assert str(err.value) == ("attrs.json, field 'trace_id': trace 't9' is not in the file; it holds: no trace ids")


def test_a_reranker_map_that_kept_no_documents_is_refused():
    with pytest.raises(InputError) as err:
        load_trace({"openinference.span.kind": "RERANKER", "reranker.query": "q", "reranker.top_k": 3}, "attrs.json")
    assert "(span kind RERANKER), which lacks retrieval.documents" in str(err.value)


def test_an_attribute_nested_too_deep_is_refused_naming_the_file_and_the_key():
    with pytest.raises(InputError) as err:
        load_trace({"llm.model_name": "m", "llm." + ".".join(["x"] * 300): 1}, "attrs.json")
    assert (err.value.source, err.value.field) == ("attrs.json", "spans[0].attributes.llm" + ".x" * 27 + "...")
    assert err.value.message == "attributes nested more than 100 levels deep (each part of a dotted key is a level)"


def test_documents_logged_by_id_take_their_text_from_the_companion_file():
    attrs = {"gen_ai.operation.name": "retrieval", "gen_ai.retrieval.documents": json.dumps(
        [{"id": "a", "score": 0.8}, {"id": "b", "score": 0.5}])}
    got = load_trace(attrs, "attrs.json", texts={"a": "alpha text", "b": "beta text"})
    assert [(c.id, c.text, c.score) for c in got.candidates] == [("a", "alpha text", 0.8), ("b", "beta text", 0.5)]
    with pytest.raises(InputError) as err:
        load_trace(attrs, "attrs.json")
    assert "a" in str(err.value) and err.value.source == "attrs.json"
