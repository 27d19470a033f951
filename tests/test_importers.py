"""Logged traces from other tools (OpenInference / Arize Phoenix, Langfuse) read as ctxcore input.

Most tests go through ``ctxcore.load`` so the loader wiring is proven. JSON *arrays* of spans reach
the formats through ``loaders.from_object`` (which calls ``formats.detect_any`` for lists); those
cases are tested through ``formats.detect_any`` directly and through ``load``. No test here skips
itself on a condition read from the production code: broken wiring must fail, not skip.
"""

from __future__ import annotations

import dataclasses
import copy
import json
import os
import re
from datetime import datetime

import pytest

from ctxcore import Config, InputError, load, loads, rank_order

from ctxcore.io import formats, loaders

HERE = os.path.dirname(os.path.abspath(__file__))
TRACES = os.path.join(HERE, "fixtures", "traces")
FLAT = os.path.join(TRACES, "phoenix_flat.jsonl")
NESTED = os.path.join(TRACES, "phoenix_nested.json")
NOSCORES = os.path.join(TRACES, "phoenix_noscores.json")
MULTI = os.path.join(TRACES, "phoenix_multi.jsonl")
NO_RETRIEVER = os.path.join(TRACES, "phoenix_no_retriever.json")
TRUNCATED = os.path.join(TRACES, "phoenix_truncated_prompt.json")
LANGFUSE = os.path.join(TRACES, "langfuse_trace.json")

SYSTEM = ("You are the support assistant for Brightline Home. Answer from the context only and cite the "
          "articles you use.")
Q_REFUND = "Do I need a team lead to approve a $450 refund for a blender that arrived cracked?"
TRACE_A, TRACE_B = "7d0c6f1e2a3b4c5d6e7f8091a2b3c4d5", "e3f2a1b0c9d8e7f6a5b4c3d2e1f00112"


def read_json(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def read_jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def ids(loaded):
    return [c.id for c in loaded.candidates]


def scores(loaded):
    return [c.score for c in loaded.candidates]


# ---------------------------------------------------------------------------------------------
# OpenInference: the flattened JSONL export, end to end
# ---------------------------------------------------------------------------------------------

def test_flat_jsonl_maps_documents_query_prompt_and_answer():
    got = load(FLAT)
    assert got.format == "openinference" and got.source == FLAT and got.trace is None
    assert ids(got) == ["kb-112#0", "kb-207#1", "kb-207#2", "kb-118#0", "forum-5531"]
    assert scores(got) == [0.89, 0.84, 0.71, 0.62, 0.41]
    first = got.candidates[0]
    assert first.doc_id == "kb-112" and first.title == "Refund approval thresholds" and first.chunk_index == 0
    assert first.metadata["source"] == "kb/refunds/approval-thresholds.md" and first.metadata["retrieval_rank"] == 1
    assert got.candidates[4].source_type == "forum"
    assert got.query == Q_REFUND
    assert got.config == {"model": "gpt-4o-mini", "max_output": 512}
    assert got.settings().encoding == "o200k_base" and got.settings().max_output == 512
    assert got.inputs.system == SYSTEM and got.inputs.history == ()

    logged = got.logged
    assert logged.prompt_text.startswith(f"system: {SYSTEM}\n\nuser: Context:\n[1] Refund approval thresholds")
    assert logged.prompt_text.endswith(f"Question: {Q_REFUND}")
    assert logged.prompt_tokens == 287 and logged.model == "gpt-4o-mini"
    assert logged.answer.startswith("Yes. A $450 refund is above the $200")
    assert logged.trace_id == "4b1f0c2a9e6d4d0f8a7b3c2d1e0f9a8b"
    assert list(logged.traces) == ["4b1f0c2a9e6d4d0f8a7b3c2d1e0f9a8b"]
    assert "spans not used: EMBEDDING 'embedding'" in logged.unmapped
    assert "model parameters temperature" in logged.unmapped
    assert any(w.startswith("not mapped from the openinference trace:") and "EMBEDDING" in w for w in got.warnings)


# ---------------------------------------------------------------------------------------------
# One normaliser: every shape of the same spans gives the same candidates
# ---------------------------------------------------------------------------------------------

def _split_row(row):
    top = {k: v for k, v in row.items() if not k.startswith("attributes.")}
    attrs = {k[len("attributes."):]: v for k, v in row.items() if k.startswith("attributes.")}
    return top, attrs


def _span_json(row, attributes):
    """Phoenix span JSON: nested context, the attributes as given."""
    top, _ = _split_row(row)
    return {"name": top["name"], "context": {"trace_id": top["context.trace_id"], "span_id": top["context.span_id"]},
            "span_kind": top["span_kind"], "parent_id": top["parent_id"], "start_time": top["start_time"],
            "end_time": top["end_time"], "status_code": "OK", "attributes": attributes, "events": []}


def _semconv(attrs):
    """Lists collapsed, their items keyed by semantic conventions (get_spans_dataframe style)."""
    out, lists = {}, {}
    for key, value in attrs.items():
        m = re.match(r"^(.*?)\.(\d+)\.(.*)$", key)
        if m:
            lists.setdefault(m.group(1), {}).setdefault(int(m.group(2)), {})[m.group(3)] = value
        else:
            out[key] = value
    for prefix, items in lists.items():
        out[prefix] = [items[i] for i in sorted(items)]
    return out


def _fully_nested(attrs):
    """Every dot a level, digit levels as lists; document.metadata as an object (independent of the importer)."""
    root = {}
    for key, value in attrs.items():
        parts, node = key.split("."), root
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = json.loads(value) if parts[-1] == "metadata" else value

    def lists(node):
        if isinstance(node, dict):
            node = {k: lists(v) for k, v in node.items()}
            if node and all(k.isdigit() for k in node):
                return [node[k] for k in sorted(node, key=int)]
        return node
    return lists(root)


def _otlp_value(v):
    if isinstance(v, bool):
        return {"boolValue": v}
    if isinstance(v, int):
        return {"intValue": str(v)}
    if isinstance(v, float):
        return {"doubleValue": v}
    return {"stringValue": v}


def _nanos(iso):
    return str(int(datetime.fromisoformat(iso).timestamp() * 1_000_000) * 1000)


def _otlp(rows):
    spans = []
    for row in rows:
        top, attrs = _split_row(row)
        spans.append({"traceId": top["context.trace_id"], "spanId": top["context.span_id"],
                      "parentSpanId": top["parent_id"] or "", "name": top["name"], "kind": "SPAN_KIND_INTERNAL",
                      "startTimeUnixNano": _nanos(top["start_time"]), "endTimeUnixNano": _nanos(top["end_time"]),
                      "attributes": [{"key": k, "value": _otlp_value(v)} for k, v in attrs.items()]})
    return {"resourceSpans": [{"resource": {"attributes": []},
                               "scopeSpans": [{"scope": {"name": "openinference.instrumentation"}, "spans": spans}]}]}


def _dataframe_rows(rows):
    """get_spans_dataframe().reset_index(): flattened columns, semantic-convention lists."""
    out = []
    for row in rows:
        top, attrs = _split_row(row)
        out.append({**top, **{f"attributes.{k}": v for k, v in _semconv(attrs).items()}})
    return out


def _columns_orient(rows):
    """DataFrame.to_json() default orient ('columns'), indexed by context.span_id."""
    records = _dataframe_rows(rows)
    cols = list(dict.fromkeys(k for r in records for k in r if k != "context.span_id"))
    return {c: {r["context.span_id"]: r.get(c) for r in records} for c in cols}


def _split_orient(rows):
    records = _dataframe_rows(rows)
    cols = list(dict.fromkeys(k for r in records for k in r if k != "context.span_id"))
    return {"columns": cols, "index": [r["context.span_id"] for r in records],
            "data": [[r.get(c) for c in cols] for r in records]}


SHAPES = {
    "span json, flattened attributes": lambda rows: {"spans": [_span_json(r, _split_row(r)[1]) for r in rows]},
    "span json, semconv lists": lambda rows: {"spans": [_span_json(r, _semconv(_split_row(r)[1])) for r in rows]},
    "span json, fully nested": lambda rows: {"data": [_span_json(r, _fully_nested(_split_row(r)[1])) for r in rows]},
    "dataframe records": lambda rows: {"data": _dataframe_rows(rows)},
    "dataframe columns orient": _columns_orient,
    "dataframe split orient": _split_orient,
    "otlp json": _otlp,
}


@pytest.mark.parametrize("shape", list(SHAPES))
def test_flattened_and_nested_shapes_parse_to_the_same_candidates(tmp_path, shape):
    reference = load(FLAT)
    path = tmp_path / "spans.json"
    path.write_text(json.dumps(SHAPES[shape](read_jsonl(FLAT))))
    got = load(path)
    fmt = "otlp" if shape == "otlp json" else "openinference"  # OTLP is its own family, with OpenInference inside
    assert got.format == fmt
    assert got.candidates == reference.candidates
    assert (got.query, got.inputs, got.config) == (reference.query, reference.inputs, reference.config)
    assert got.logged == dataclasses.replace(reference.logged, format=fmt)


def test_unflatten_merges_flat_keys_into_nested_values():
    attrs = formats.unflatten({
        "retrieval.documents": [{"document.content": "A"}],
        "retrieval.documents.0.document.score": 0.5,
        "retrieval.documents.1.document.content": "B",
        "llm.token_count.prompt": 12,
        "metadata": '{"user.id": "u1"}',
    })
    assert attrs == {"retrieval": {"documents": [{"document": {"content": "A", "score": 0.5}},
                                                 {"document": {"content": "B"}}]},
                     "llm": {"token_count": {"prompt": 12}}, "metadata": '{"user.id": "u1"}'}


# ---------------------------------------------------------------------------------------------
# Reranker: its scores rank; what it dropped follows, unscored
# ---------------------------------------------------------------------------------------------

def _check_reranked(got):
    assert got.format == "openinference"
    assert ids(got) == ["kb-207#1", "kb-207#3", "kb-207#2", "kb-301#0"]
    assert scores(got) == [0.97, 0.91, 0.38, None]
    by_id = {c.id: c for c in got.candidates}
    assert by_id["kb-207#3"].metadata["retrieval_rank"] == 4 and by_id["kb-207#3"].metadata["retrieval_score"] == 0.74
    assert by_id["kb-207#3"].metadata["reranker_rank"] == 2
    dropped = by_id["kb-301#0"].metadata
    assert dropped["reranker"] == "not in output" and dropped["retrieval_score"] == 0.77
    assert "reranker_rank" not in dropped
    assert any("the reranker dropped 1 of 4 documents" in w for w in got.warnings)
    assert got.query.startswith("A customer's lamp arrived with a broken shade")
    assert got.logged.query_from == "rerank: reranker.query"
    assert got.logged.reranker == {"span": "rerank", "model": "rerank-english-v3.0", "top_k": 3}
    assert got.logged.prompt_tokens == 402 and got.config["model"] == "gpt-4o-2024-08-06"
    # the reranker score decides: #3 (retrieval score 0.74, the lowest) now ranks above #2 (0.80)
    assert [c.id for c in rank_order(got.candidates)] == ["kb-207#1", "kb-207#3", "kb-207#2", "kb-301#0"]
    roomy = got.build(got.settings(budget=2000))
    cost = {d.id: d.cost for d in roomy.decisions}
    tight = got.build(got.settings(budget=cost["kb-207#1"] + cost["kb-207#3"]))
    fates = {d.id: d.fate for d in tight.decisions}
    assert fates == {"kb-207#1": "kept", "kb-207#3": "kept", "kb-207#2": "over_budget", "kb-301#0": "over_budget"}


def test_reranker_scores_are_used_for_ranking():
    _check_reranked(formats.detect_any(read_json(NESTED), NESTED))


def test_reranker_file_loads_end_to_end():
    _check_reranked(load(NESTED))


def test_reranker_in_a_span_container_loads_end_to_end(tmp_path):
    path = tmp_path / "spans.json"
    path.write_text(json.dumps({"spans": read_json(NESTED)}))
    _check_reranked(load(path))


def test_reranker_input_missing_from_the_span_falls_back_to_the_retrieved_documents(tmp_path):
    spans = read_json(NESTED)
    del spans[2]["attributes"]["reranker"]["input_documents"]
    path = tmp_path / "spans.json"
    path.write_text(json.dumps({"spans": spans}))
    got = load(path)
    assert ids(got) == ["kb-207#1", "kb-207#3", "kb-207#2", "kb-301#0"]
    assert got.candidates[3].metadata["reranker"] == "not in output"


# ---------------------------------------------------------------------------------------------
# No scores, several traces, malformed
# ---------------------------------------------------------------------------------------------

def test_documents_without_scores_keep_retrieval_order():
    got = load(NOSCORES)
    assert got.format == "openinference"
    assert ids(got) == ["doc-1", "doc-2", "doc-3"] and scores(got) == [None, None, None]
    assert got.candidates[0].text.startswith("Refunds go back to the original payment method")
    assert got.candidates[0].metadata == {"source": "kb/refunds/timing.md", "retrieval_rank": 1}
    assert "documents carry no scores: ranked by retrieval order" in got.warnings
    assert got.query == "How long until a refund shows up on my card?"
    # LangChain's stuff prompt puts the passages in the system message: not reused as the system block
    assert got.inputs.system == ""
    assert any(u.startswith("the system message") for u in got.logged.unmapped)
    trace = got.build()
    assert "documents carry no scores: ranked by retrieval order" in trace.warnings
    assert [d.id for d in trace.kept()] and {d.label for d in trace.kept()} == {"S1", "S2", "S3"}
    assert [c.id for c in rank_order(trace.candidates)] == ["doc-1", "doc-2", "doc-3"]


def test_several_traces_default_to_the_first_with_documents_and_can_be_chosen():
    got = load(MULTI)
    assert got.logged.trace_id == TRACE_A
    assert list(got.logged.traces) == [TRACE_A, TRACE_B]
    assert f"file holds 2 traces; showing {TRACE_A}" in got.warnings
    assert ids(got) == ["kb-112#0", "kb-207#1", "kb-118#0"]

    items = read_jsonl(MULTI)
    assert formats.openinference_traces(items) == [TRACE_A, TRACE_B]
    other = formats.load_trace(items, MULTI, trace_id=TRACE_B)
    assert other.logged.trace_id == TRACE_B
    assert ids(other) == ["kb-207#2", "kb-207#1"] and other.query.startswith("Can the customer keep a cracked")
    assert f"file holds 2 traces; showing {TRACE_B}" in other.warnings
    assert formats.load_file(MULTI, trace_id=TRACE_B).candidates == other.candidates

    with pytest.raises(InputError) as err:
        formats.load_trace(items, MULTI, trace_id="feedface")
    assert err.value.field == "trace_id"
    assert f"trace 'feedface' is not in the file; it holds: {TRACE_A}, {TRACE_B}" in str(err.value)


def test_default_trace_skips_a_trace_without_retrieval(tmp_path):
    chat = read_json(NO_RETRIEVER)
    path = tmp_path / "spans.jsonl"
    path.write_text("".join(json.dumps(s) + "\n" for s in chat + read_jsonl(MULTI)))
    got = load(path)
    assert got.logged.trace_id == TRACE_A
    assert list(got.logged.traces) == ["5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c", TRACE_A, TRACE_B]


NO_RETRIEVER_MESSAGE = ("no RETRIEVER or RERANKER span with documents; found span kinds: LLM, CHAIN "
                        "(without a retriever step there are no candidates to replay)")


def test_no_retriever_span_is_a_clear_error():
    with pytest.raises(InputError) as err:
        formats.detect_any(read_json(NO_RETRIEVER), NO_RETRIEVER)
    assert str(err.value) == f"{NO_RETRIEVER}: {NO_RETRIEVER_MESSAGE}"


def test_no_retriever_span_is_a_clear_error_from_jsonl(tmp_path):
    path = tmp_path / "chat.jsonl"
    path.write_text("".join(json.dumps(s) + "\n" for s in read_json(NO_RETRIEVER)))
    with pytest.raises(InputError) as err:
        load(path)
    assert str(err.value) == f"{path}: {NO_RETRIEVER_MESSAGE}"


def test_no_retriever_span_is_a_clear_error_end_to_end():
    with pytest.raises(InputError) as err:
        load(NO_RETRIEVER)
    assert str(err.value) == f"{NO_RETRIEVER}: {NO_RETRIEVER_MESSAGE}"


def test_a_chosen_trace_without_retrieval_names_it(tmp_path):
    items = read_json(NO_RETRIEVER) + read_jsonl(MULTI)
    with pytest.raises(InputError) as err:
        formats.load_trace(items, "mixed", trace_id="5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c")
    assert "with documents in trace 5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c; found span kinds: LLM, CHAIN" in str(err.value)


def test_document_without_text_names_the_span_and_document(tmp_path):
    rows = read_jsonl(FLAT)
    del rows[2]["attributes.retrieval.documents.1.document.content"]
    path = tmp_path / "spans.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(InputError) as err:
        load(path)
    assert err.value.field == "retrieve.retrieval.documents[1]"
    assert "has no text" in err.value.message


def test_repeated_and_missing_document_ids_become_unique():
    docs = [{"document.id": "kb-9", "document.content": "first"},
            {"document.content": "no id"},
            {"document.id": "kb-9", "document.content": "second"},
            {"document.id": "doc-2", "document.content": "an id that looks generated"},
            {"document.id": 7, "document.content": "a numeric id"}]
    spans = {"spans": [{"name": "retrieve", "span_kind": "RETRIEVER",
                        "context": {"trace_id": "t1", "span_id": "s1"},
                        "attributes": {"input.value": "q", "retrieval.documents": docs}}]}
    got = loads(json.dumps(spans), "ids.json")
    assert ids(got) == ["kb-9", "doc-2#2", "kb-9#2", "doc-2", "7"]
    assert [c.doc_id for c in got.candidates] == ["kb-9", None, "kb-9", "doc-2", "7"]


def test_truncated_prompt_keeps_every_retrieved_document():
    got = formats.detect_any(read_json(TRUNCATED), TRUNCATED)
    assert ids(got) == ["kb-112#0", "kb-207#1", "kb-207#2", "kb-118#0"]
    prompt = got.logged.prompt_text
    texts = {c.id: c.text for c in got.candidates}
    assert texts["kb-112#0"] in prompt and texts["kb-118#0"] in prompt
    assert texts["kb-207#1"] not in prompt and texts["kb-207#1"][:80] in prompt  # cut off mid-way
    assert texts["kb-207#2"] not in prompt  # never sent
    assert got.logged.prompt_tokens == 236


def test_truncated_prompt_loads_end_to_end():
    assert ids(load(TRUNCATED)) == ["kb-112#0", "kb-207#1", "kb-207#2", "kb-118#0"]


def test_unknown_model_is_left_out_with_a_warning(tmp_path):
    rows = read_jsonl(FLAT)
    rows[3]["attributes.llm.model_name"] = "claude-3-5-sonnet-20240620"
    rows[3]["attributes.llm.invocation_parameters"] = json.dumps({"max_tokens": 20000})
    path = tmp_path / "spans.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    got = load(path)
    assert got.config == {} and got.logged.model == "claude-3-5-sonnet-20240620"
    assert any("model 'claude-3-5-sonnet-20240620' has no known tokenizer" in w for w in got.warnings)
    assert "model parameters max_tokens" in got.logged.unmapped  # 20000 does not fit the window
    got.build()


# ---------------------------------------------------------------------------------------------
# Langfuse
# ---------------------------------------------------------------------------------------------

def test_langfuse_trace_maps_documents_query_prompt_answer_model_and_tokens():
    got = load(LANGFUSE)
    assert got.format == "langfuse"
    assert ids(got) == ["kb-112#0", "kb-207#1", "kb-207#2", "forum-5531"]
    assert scores(got) == [0.88, 0.81, 0.66, 0.35]  # metadata.relevance_score
    assert got.candidates[1].text.startswith("Damaged-item returns: ask the customer for a photo")
    assert got.candidates[1].doc_id == "kb-207" and got.candidates[1].title == "Damaged-item returns"
    assert got.query == Q_REFUND and got.logged.query_from == "kb-search: input"
    assert got.inputs.system == SYSTEM
    assert got.config == {"model": "gpt-4o-2024-08-06", "max_output": 400}

    logged = got.logged
    assert logged.prompt_text.startswith(f"system: {SYSTEM}\n\nuser: Context:\n[1] Refund approval")
    assert logged.answer.startswith("Yes. A $450 refund")
    assert logged.model == "gpt-4o-2024-08-06" and logged.prompt_tokens == 356
    assert logged.trace_id == "2f9c4d61-7a0e-4b8f-9d3c-5e1a2b6c7d80"
    assert logged.llm_span == "answer" and list(logged.retriever_spans) == ["kb-search"]
    assert list(logged.unmapped) == [
        "model parameters temperature",
        "observations not used: SPAN 'rag-pipeline', EVENT 'pii-check-passed'",
        "trace metadata (channel, locale)",
        "scores (helpfulness=1)",
        "tags (support, refunds)",
    ]
    warning = next(w for w in got.warnings if w.startswith("not mapped from the langfuse trace:"))
    assert "EVENT 'pii-check-passed'" in warning and "scores (helpfulness=1)" in warning


def _langfuse(**changes):
    trace = read_json(LANGFUSE)
    obs = {o["id"]: o for o in trace["observations"]}
    for key, value in changes.items():
        oid, _, fld = key.partition("__")
        obs[oid.replace("_", "-")][fld] = value
    return trace


RETRIEVER_OUTPUTS = {
    "strings": (["Refunds over $200 need a team lead.", "Damaged items need a photo."],
                ["doc-1", "doc-2"], [None, None]),
    "documents object": ({"documents": [{"id": "a", "content": "Refunds over $200 need a team lead.", "score": 0.7},
                                        {"id": "b", "text": "Damaged items need a photo.", "score": 0.9,
                                         "metadata": {"title": "Damage"}}]},
                         ["a", "b"], [0.7, 0.9]),
    "langchain documents": ([{"page_content": "Refunds over $200 need a team lead.", "metadata": {"source": "x"},
                              "type": "Document"},
                             {"page_content": "Damaged items need a photo.", "metadata": {"score": 0.4}}],
                            ["doc-1", "doc-2"], [None, 0.4]),
    "llamaindex nodes": ({"nodes": [{"node": {"id_": "n1", "text": "Refunds over $200 need a team lead."},
                                     "score": 0.81}]},
                         ["n1"], [0.81]),
    "json string": (json.dumps([{"text": "Refunds over $200 need a team lead.", "id": "j1", "score": 0.5}]),
                    ["j1"], [0.5]),
}


@pytest.mark.parametrize("shape", list(RETRIEVER_OUTPUTS))
def test_langfuse_retriever_output_shapes(tmp_path, shape):
    output, want_ids, want_scores = RETRIEVER_OUTPUTS[shape]
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(_langfuse(obs_2__output=output)))
    got = load(path)
    assert (ids(got), scores(got)) == (want_ids, want_scores)


def test_langfuse_span_named_like_a_retriever_and_plain_values(tmp_path):
    trace = _langfuse(obs_2__type="SPAN", obs_2__name="retrieve-documents", obs_2__input=Q_REFUND,
                      obs_3__output="Yes, a team lead must approve it.", obs_3__usageDetails={},
                      obs_3__usage={"promptTokens": 301}, obs_3__model="gpt-4-turbo",
                      obs_3__input=[{"role": "system", "content": "Be brief."},
                                    {"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello!"},
                                    {"role": "user", "content": [{"type": "text", "text": "Docs: ..."}]}])
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(trace))
    got = load(path)
    assert len(got.candidates) == 4 and got.query == Q_REFUND
    logged = got.logged
    assert logged.answer == "Yes, a team lead must approve it." and logged.prompt_tokens == 301
    assert logged.prompt_text == "system: Be brief.\n\nuser: Hi\n\nassistant: Hello!\n\nuser: Docs: ..."
    assert got.inputs.system == "Be brief."
    assert got.inputs.history == ({"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello!"})
    assert got.config["model"] == "gpt-4-turbo" and got.settings().encoding == "cl100k_base"


def test_langfuse_query_falls_back_to_the_trace_input(tmp_path):
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(_langfuse(obs_2__input=None)))
    got = load(path)
    assert got.query == Q_REFUND and got.logged.query_from == "trace input"


def test_langfuse_without_retriever_is_a_clear_error(tmp_path):
    trace = read_json(LANGFUSE)
    trace["observations"] = [o for o in trace["observations"] if o["type"] != "RETRIEVER"]
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(trace))
    with pytest.raises(InputError) as err:
        load(path)
    assert err.value.field == "observations"
    assert "no RETRIEVER observation" in err.value.message and "GENERATION 'answer'" in err.value.message


def test_langfuse_trace_listing_only_observation_ids_is_a_clear_error(tmp_path):
    trace = read_json(LANGFUSE)
    trace["observations"] = [o["id"] for o in trace["observations"]]
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(trace))
    with pytest.raises(InputError, match="observation ids only"):
        load(path)


def test_langfuse_observation_list_from_the_api(tmp_path):
    trace = read_json(LANGFUSE)
    path = tmp_path / "observations.json"
    path.write_text(json.dumps({"data": trace["observations"], "meta": {"page": 1, "totalItems": 4}}))
    got = load(path)
    assert got.format == "langfuse" and ids(got) == ["kb-112#0", "kb-207#1", "kb-207#2", "forum-5531"]
    assert got.logged.trace_id == trace["id"]


# ---------------------------------------------------------------------------------------------
# Every imported file builds, and every document gets one decision
# ---------------------------------------------------------------------------------------------

IMPORTABLE = [FLAT, NESTED, NOSCORES, MULTI, TRUNCATED, LANGFUSE]


@pytest.mark.parametrize("path", IMPORTABLE, ids=os.path.basename)
def test_every_imported_file_builds_with_one_decision_per_document(path):
    got = formats.load_file(path)
    for config in (got.settings(), got.settings(budget=60)):
        trace = got.build(config)
        assert [d.id for d in trace.decisions] == [c.id for c in got.candidates]
        assert all(d.fate for d in trace.decisions)
        assert trace.warnings[: len(got.warnings)] == got.warnings
        assert trace.prompt.text.endswith(f"Question: {got.query}")


def test_candidates_are_the_same_through_load_and_load_file():
    for path in (FLAT, NOSCORES, MULTI, LANGFUSE):
        assert load(path).candidates == formats.load_file(path).candidates


# ---------------------------------------------------------------------------------------------
# Plain ctxcore input is left alone
# ---------------------------------------------------------------------------------------------

def test_plain_candidate_files_are_not_taken_for_traces(tmp_path):
    cands = [{"id": "a", "text": "alpha", "score": 0.5, "context": {"trace_id": "x"}}, {"text": "beta"}]
    assert formats.detect({"query": "q", "candidates": cands}, "c.json") is None
    assert formats.detect_any(cands, "c.json") is None
    assert formats.detect_lines(cands, "c.jsonl") is None
    assert formats.detect({"format": "ctxcore.trace/1"}, "t.json") is None
    assert formats.openinference_traces(cands) == []
    p = tmp_path / "c.jsonl"
    p.write_text("".join(json.dumps(c) + "\n" for c in cands))
    got = load(p)
    assert got.format == "jsonl" and [c.id for c in got.candidates] == ["a", "c2"]
    assert load(os.path.join(HERE, "fixtures", "candidates.jsonl")).format == "jsonl"
    assert load(os.path.join(HERE, "fixtures", "seed.json")).format in ("json", "trace")


def test_an_object_that_is_neither_is_still_refused_by_the_loader():
    with pytest.raises(InputError, match="needs a 'candidates' list"):
        loads(json.dumps({"query": "q", "items": []}), "x.json")
    with pytest.raises(InputError, match="not a logged trace"):
        formats.load_trace({"query": "q", "items": []}, "x.json")


def test_the_importer_does_not_change_a_parsed_object():
    data = read_json(LANGFUSE)
    before = copy.deepcopy(data)
    formats.detect(data, "t.json")
    spans = read_json(NESTED)
    before_spans = copy.deepcopy(spans)
    formats.detect_any(spans, "s.json")
    assert data == before and spans == before_spans


def test_settings_from_an_import_are_valid_config():
    for path in IMPORTABLE:
        got = formats.load_file(path)
        assert isinstance(got.settings(), Config)
