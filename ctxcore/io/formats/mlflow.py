"""MLflow 3 traces (``mlflow.get_trace(id).to_json()``, the UI's download, a list or JSONL of them)
read as OpenInference spans.

Shape sources: mlflow/mlflow ``mlflow/entities/span.py`` (``Span.to_dict``: ``trace_id``, ``span_id``,
``parent_span_id``, ``name``, ``start_time_unix_nano``, ``end_time_unix_nano``, ``status``, ``attributes``
whose values are JSON-encoded; the older v2 dict with ``context``/``parent_id``/``start_time``),
``mlflow/entities/trace.py`` (``{"info": ..., "data": {"spans": [...]}}``), ``mlflow/tracing/constant.py``
(``mlflow.spanType``, ``mlflow.spanInputs``, ``mlflow.spanOutputs``, ``mlflow.traceRequestId``,
``mlflow.chat.tokenUsage`` = ``{"input_tokens", "output_tokens", "total_tokens"}``, ``mlflow.llm.model``)
and ``mlflow/entities/document.py`` (a RETRIEVER span's outputs: ``[{"page_content", "metadata", "id"}]``)."""

from __future__ import annotations

import json
from typing import Optional

from .family import Family
from .genai import _documents
from .langsmith import _generations, lc_messages
from .openinference import reader_of, trace_ids as _oi_trace_ids
from .values import as_int, dig, first, json_value

MLFLOW = "mlflow"
_KINDS = {"CHAT_MODEL": "LLM", "LLM": "LLM", "RETRIEVER": "RETRIEVER", "RERANKER": "RERANKER",
          "EMBEDDING": "EMBEDDING", "TOOL": "TOOL", "AGENT": "AGENT", "CHAIN": "CHAIN", "PARSER": "CHAIN"}


def _is_trace(x) -> bool:
    return isinstance(x, dict) and isinstance(x.get("info"), dict) and isinstance(dig(x, "data", "spans"), list)


def _traces(data) -> Optional[list]:
    if isinstance(data, dict) and isinstance(data.get("traces"), list):
        data = data["traces"]
    items = data if isinstance(data, list) else [data]
    return items if items and all(_is_trace(x) for x in items) else None


def _text(value) -> Optional[str]:
    if value is None:
        return None
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _record(span: dict, info: dict) -> dict:
    raw = span.get("attributes") if isinstance(span.get("attributes"), dict) else {}
    a = {k: json_value(v) for k, v in raw.items()}  # every value is JSON-encoded (dump_span_attribute_value)
    kind = _KINDS.get(str(first(a.get("mlflow.spanType"), span.get("span_type")) or "").upper(), "")
    inputs, outputs = a.get("mlflow.spanInputs"), a.get("mlflow.spanOutputs")
    attrs: dict = {"openinference.span.kind": kind or "UNKNOWN"}
    if inputs is not None:
        attrs["input.value"] = _text(inputs)
    if outputs is not None:
        attrs["output.value"] = _text(outputs)
    if isinstance(a.get("metadata"), dict):  # the LangChain autolog keeps the run's metadata here
        attrs["metadata"] = a["metadata"]
    if kind == "RETRIEVER":
        docs = _documents(outputs)
        if docs is not None:
            attrs["retrieval.documents"] = docs
    if kind == "RERANKER":
        out_docs = _documents(outputs)
        in_docs = _documents(first(dig(inputs, "documents"), dig(inputs, "nodes")))
        if out_docs is not None:
            attrs["reranker.output_documents"] = out_docs
        if in_docs is not None:
            attrs["reranker.input_documents"] = in_docs
        if isinstance(dig(inputs, "query"), str):
            attrs["reranker.query"] = inputs["query"]
    if kind == "LLM":
        msgs = lc_messages(first(dig(inputs, "messages"), a.get("mlflow.chat.messages"),
                                 inputs if isinstance(inputs, list) else None))
        if msgs:
            attrs["llm.input_messages"] = msgs
        gens = _generations(outputs)
        if gens:
            attrs["llm.output_messages"] = gens
        params = a.get("invocation_params") if isinstance(a.get("invocation_params"), dict) else {}
        model = first(a.get("mlflow.llm.model"), params.get("model"), params.get("model_name"),
                      dig(a.get("metadata"), "ls_model_name"), dig(outputs, "llm_output", "model_name"),
                      dig(inputs, "model"), dig(outputs, "model"))
        if isinstance(model, str):
            attrs["llm.model_name"] = model
        usage = a.get("mlflow.chat.tokenUsage") if isinstance(a.get("mlflow.chat.tokenUsage"), dict) else {}
        for ours, theirs in (("prompt", "input_tokens"), ("completion", "output_tokens")):
            if as_int(usage.get(theirs)) is not None:
                attrs[f"llm.token_count.{ours}"] = as_int(usage[theirs])
        if params:  # the LangChain autolog's chat model span: attributes=kwargs (mlflow/langchain/langchain_tracer.py)
            attrs["llm.invocation_parameters"] = {k: v for k, v in params.items() if k not in ("_type", "stream")}
        elif isinstance(inputs, dict) and as_int(inputs.get("max_tokens")) is not None:
            attrs["llm.invocation_parameters"] = {"max_tokens": as_int(inputs["max_tokens"])}
    ctx = span.get("context") if isinstance(span.get("context"), dict) else {}
    trace_id = first(a.get("mlflow.traceRequestId"), span.get("trace_id"), ctx.get("trace_id"),
                     info.get("trace_id"), info.get("request_id"))
    return {"name": span.get("name") or kind.lower() or "span", "span_kind": kind or "UNKNOWN",
            "context": {"trace_id": trace_id, "span_id": first(span.get("span_id"), ctx.get("span_id"))},
            "parent_id": first(span.get("parent_span_id"), span.get("parent_id")),
            "start_time": first(span.get("start_time_unix_nano"), span.get("start_time")),
            "end_time": first(span.get("end_time_unix_nano"), span.get("end_time")), "attributes": attrs}


def _records(data) -> list:
    return [_record(s, t["info"]) for t in _traces(data) or [] for s in t["data"]["spans"] if isinstance(s, dict)]


FAMILY = Family(MLFLOW, matches=lambda data, source: _traces(data) is not None,
                load=reader_of(_records, MLFLOW),
                traces=lambda data: _oi_trace_ids(_records(data)))
