"""OpenTelemetry GenAI semantic conventions and OpenLLMetry (Traceloop) attributes read as
OpenInference ones, so one span mapping (:mod:`.openinference`) serves every convention.

Sources (the names below are theirs, not guesses):

* GenAI conventions, open-telemetry/semantic-conventions ``model/gen-ai/deprecated/spans-deprecated.yaml``
  (``span.gen_ai.retrieval.client``: ``gen_ai.operation.name`` = ``retrieval``,
  ``gen_ai.retrieval.query.text``, ``gen_ai.retrieval.documents`` = ``[{"id", "score"}, ...]``, a JSON
  string on spans) and ``docs/gen-ai/gen-ai-input-messages.json`` / ``gen-ai-output-messages.json`` /
  ``gen-ai-system-instructions.json`` (``[{"role", "parts": [{"type": "text", "content"}]}]``), before
  they moved to open-telemetry/semantic-conventions-genai.
* OpenLLMetry, traceloop/openllmetry ``packages/opentelemetry-instrumentation-langchain/.../callback_handler.py``
  (retriever span ``vector_db_retrieve {name}``, ``gen_ai.operation.name`` = ``vector_db_retrieve``,
  ``traceloop.entity.input`` = ``{"query": ...}``, ``traceloop.entity.output`` =
  ``{"documents": [{"page_content", "metadata"}], "count": N}``, ``traceloop.span.kind``) and
  ``span_utils.py`` (``gen_ai.input.messages`` now; ``gen_ai.prompt.N.role``/``.content`` and
  ``gen_ai.completion.N.*`` before 2026, commit a52869968).
"""

from __future__ import annotations

import json
from typing import Optional

from .values import as_int, dig, first, json_value

_LLM_OPS = frozenset({"chat", "text_completion", "generate_content", "completion"})
_KINDS = {"retrieval": "RETRIEVER", "vector_db_retrieve": "RETRIEVER", "embeddings": "EMBEDDING",
          "execute_tool": "TOOL", "invoke_agent": "AGENT", "create_agent": "AGENT", "rerank": "RERANKER"}
_TRACELOOP_KINDS = {"workflow": "CHAIN", "task": "CHAIN", "agent": "AGENT", "tool": "TOOL"}


def convention(attrs: dict) -> Optional[str]:
    """Which non-OpenInference convention a span's (nested) attributes follow, if any."""
    if isinstance(attrs.get("traceloop"), dict):
        return "traceloop"
    if isinstance(attrs.get("gen_ai"), dict):
        return "gen_ai"
    return None


def _parts_text(parts) -> Optional[str]:
    parts = json_value(parts)
    if isinstance(parts, str):
        return parts
    if not isinstance(parts, list):
        return None
    texts = []
    for p in parts:
        if isinstance(p, str):
            texts.append(p)
        elif isinstance(p, dict) and p.get("type", "text") == "text" and isinstance(p.get("content"), str):
            texts.append(p["content"])
        elif isinstance(p, dict) and isinstance(p.get("text"), str):
            texts.append(p["text"])
        elif isinstance(p, dict) and p.get("type") in ("tool_call", "tool_call_response"):
            texts.append(json.dumps(p, ensure_ascii=False))
    return "\n".join(texts)


def _messages(value) -> list[dict]:
    """GenAI messages (``parts``) or indexed ``gen_ai.prompt.N`` entries as OpenInference messages."""
    value = json_value(value)
    if isinstance(value, dict) and all(isinstance(k, str) and k.isdigit() for k in value):
        value = [value[k] for k in sorted(value, key=int)]
    out = []
    for m in value if isinstance(value, list) else []:
        if not isinstance(m, dict):
            continue
        text = _parts_text(m["parts"]) if "parts" in m else None
        if text is None:
            content = json_value(m.get("content"))
            text = content if isinstance(content, str) else _parts_text(content)
        out.append({"message": {"role": str(m.get("role") or "user"), "content": text or ""}})
    return out


def _documents(value) -> Optional[list]:
    """Retrieved documents: GenAI ``[{"id", "score", ...}]`` or a LangChain ``{"documents": [...]}``."""
    value = json_value(value)
    if isinstance(value, dict):
        value = first(*(value.get(k) for k in ("documents", "source_documents", "context", "nodes")
                        if isinstance(value.get(k), list)))
        if value is None:
            return None
    if not isinstance(value, list):
        return None
    docs = []
    for item in value:
        item = json_value(item)
        if isinstance(item, dict) and item.get("lc") and isinstance(item.get("kwargs"), dict):
            item = {**item["kwargs"], "id": item["kwargs"].get("id")}  # langchain dumpd(): its "id" is the class path
        if isinstance(item, str):
            docs.append({"document": {"content": item}})
            continue
        if not isinstance(item, dict):
            return None
        node = item.get("node") if isinstance(item.get("node"), dict) else item
        text = first(*(node.get(k) for k in ("content", "page_content", "text", "document")
                       if isinstance(node.get(k), str)))
        meta = json_value(node.get("metadata"))
        meta = meta if isinstance(meta, dict) else None
        doc = {"id": first(node.get("id"), node.get("id_"), item.get("id")),
               "score": first(item.get("score"), node.get("score"), item.get("relevance_score"),
                              (meta or {}).get("relevance_score"), (meta or {}).get("score")),
               "content": text, "metadata": meta}
        docs.append({"document": {k: v for k, v in doc.items() if v is not None}})
    return docs


def _nodes(value) -> bool:
    """A LlamaIndex retriever result as OpenLLMetry writes it (traceloop/openllmetry
    ``packages/opentelemetry-instrumentation-llamaindex/.../dispatcher_wrapper.py``: the result
    JSON-encoded with each ``NodeWithScore.to_json()``, so a list of JSON strings)."""
    if not isinstance(value, list) or not value:
        return False
    items = [json_value(x) for x in value]
    return all(isinstance(x, dict) and isinstance(x.get("node"), dict) for x in items)


def step_documents(attrs: dict) -> dict:
    """``attrs`` with ``retrieval.documents`` added when the span is a CHAIN step whose output is a list of
    documents: a LangChain ``RunnableLambda`` such as ``select_top_docs`` (OpenInference logs the list in
    ``output.value``, OpenLLMetry under ``outputs``) or a Haystack component returning ``{"documents": [...]}``.
    The reader can then tell a filter step (documents already read, some of them) from a new retrieval."""
    if dig(attrs, "retrieval", "documents") is not None or dig(attrs, "openinference", "span", "kind") != "CHAIN":
        return attrs
    out = json_value(dig(attrs, "output", "value"))
    out = json_value(out.get("outputs", out.get("documents"))) if isinstance(out, dict) else out
    if not isinstance(out, list) or not out or not all(isinstance(json_value(x), dict) for x in out):
        return attrs
    docs = _documents(out)
    if not docs or any("content" not in d["document"] for d in docs):
        return attrs
    return {**attrs, "retrieval": {**(attrs.get("retrieval") or {}), "documents": docs}}


def to_openinference(attrs: dict) -> dict:
    """``attrs`` (nested) with OpenInference keys added from GenAI / Traceloop ones; the
    OpenInference keys a span already has are kept."""
    if convention(attrs) is None:
        return attrs
    g = attrs.get("gen_ai") if isinstance(attrs.get("gen_ai"), dict) else {}
    tl = attrs.get("traceloop") if isinstance(attrs.get("traceloop"), dict) else {}
    out = dict(attrs)
    op = dig(g, "operation", "name")
    op = op if isinstance(op, str) else None
    kind = _KINDS.get(op) if op else None
    if kind is None and (op in _LLM_OPS or str(dig(attrs, "llm", "request", "type")) in ("chat", "completion")):
        kind = "LLM"
    entity_out = json_value(dig(tl, "entity", "output"))
    docs = _documents(dig(g, "retrieval", "documents"))
    if docs is None and isinstance(entity_out, dict) and isinstance(entity_out.get("documents"), list):
        docs = _documents(entity_out)
        kind = kind or "RETRIEVER"
    if docs is None and _nodes(entity_out):  # OpenLLMetry LlamaIndex: a retriever's NodeWithScore list
        docs = _documents(entity_out)
        kind = kind or "RETRIEVER"
    if kind is None and isinstance(dig(tl, "span", "kind"), str):
        kind = _TRACELOOP_KINDS.get(dig(tl, "span", "kind"))
    if kind is None and (g.get("prompt") is not None or dig(g, "input", "messages") is not None):
        kind = "LLM"
    if kind and not dig(attrs, "openinference", "span", "kind"):
        out["openinference"] = {"span": {"kind": kind}}
    if docs is not None and dig(attrs, "retrieval", "documents") is None:
        out["retrieval"] = {**(attrs.get("retrieval") or {}), "documents": docs}
    query = dig(g, "retrieval", "query", "text")
    entity_in = dig(tl, "entity", "input")
    if dig(attrs, "input", "value") is None and first(query, entity_in) is not None:
        out["input"] = {**(attrs.get("input") or {}), "value": first(query, entity_in)}
    if dig(attrs, "output", "value") is None and entity_out is not None:
        out["output"] = {**(attrs.get("output") or {}),
                         "value": dig(tl, "entity", "output")}
    llm = dict(attrs.get("llm") or {}) if isinstance(attrs.get("llm"), dict) else {}
    if "input_messages" not in llm:
        msgs = _messages(dig(g, "input", "messages"))
        if not msgs and isinstance(g.get("prompt"), (list, dict)):
            msgs = _messages(g["prompt"])
        system = _parts_text(g.get("system_instructions"))
        if system:
            msgs = [{"message": {"role": "system", "content": system}}] + msgs
        if msgs:
            llm["input_messages"] = msgs
    if "output_messages" not in llm:
        msgs = _messages(dig(g, "output", "messages"))
        if not msgs and isinstance(g.get("completion"), (list, dict)):
            msgs = _messages(g["completion"])
        if msgs:
            llm["output_messages"] = msgs
    model = first(*(m for m in (dig(g, "response", "model"), dig(g, "request", "model")) if m != "unknown"),
                  dig(tl, "association", "properties", "ls_model_name"))  # OpenLLMetry's placeholder, LangChain's name
    if model is not None and "model_name" not in llm:
        llm["model_name"] = model
    tokens = dict(llm.get("token_count") or {}) if isinstance(llm.get("token_count"), dict) else {}
    prompt = first(as_int(dig(g, "usage", "input_tokens")), as_int(dig(g, "usage", "prompt_tokens")))
    completion = first(as_int(dig(g, "usage", "output_tokens")), as_int(dig(g, "usage", "completion_tokens")))
    if prompt is not None:
        tokens.setdefault("prompt", prompt)
    if completion is not None:
        tokens.setdefault("completion", completion)
    if tokens:
        llm["token_count"] = tokens
    max_tokens = as_int(dig(g, "request", "max_tokens"))
    if max_tokens is not None and "invocation_parameters" not in llm:
        llm["invocation_parameters"] = {"max_tokens": max_tokens}
    if llm:
        out["llm"] = llm
    if kind == "RERANKER" and docs is not None and "reranker" not in attrs:
        out["reranker"] = {"output_documents": docs}
        out.pop("retrieval", None)
    return out
