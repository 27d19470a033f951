"""LangSmith runs (``Client().list_runs(...)`` dumped as JSON or JSONL, a run with nested
``child_runs``, or ``{"runs": [...]}``) read as OpenInference spans.

Shape sources: langchain-ai/langsmith-sdk ``python/langsmith/schemas.py`` (``RunBase``/``Run``: ``id``,
``name``, ``run_type``, ``start_time``, ``end_time``, ``inputs``, ``outputs``, ``extra``,
``parent_run_id``, ``trace_id``, ``child_runs``, ``prompt_tokens``, ``completion_tokens``) and
langchain-ai/langchain ``libs/core/langchain_core/tracers/core.py`` (a retriever run's
``outputs = {"documents": [Document]}`` and ``inputs = {"query": ...}``; a chat model run's
``inputs = {"messages": [[dumpd(message), ...]]}`` and ``outputs`` = ``LLMResult`` with
``generations`` and ``llm_output``)."""

from __future__ import annotations

import json
from typing import Optional

from .family import Family
from .genai import _documents
from .messages import content_text
from .openinference import reader_of, trace_ids as _oi_trace_ids
from .values import as_int, dig, first, json_value

LANGSMITH = "langsmith"
_KINDS = {"retriever": "RETRIEVER", "llm": "LLM", "chain": "CHAIN", "tool": "TOOL", "embedding": "EMBEDDING",
          "prompt": "CHAIN", "parser": "CHAIN"}
_ROLES = {"system": "system", "human": "user", "user": "user", "ai": "assistant", "assistant": "assistant",
          "tool": "tool", "function": "tool", "SystemMessage": "system", "HumanMessage": "user",
          "AIMessage": "assistant", "ToolMessage": "tool", "ChatMessage": "user"}


def _is_run(x) -> bool:
    return isinstance(x, dict) and isinstance(x.get("run_type"), str) and "id" in x and \
        ("inputs" in x or "outputs" in x)


def _runs(data) -> Optional[list]:
    if isinstance(data, dict) and isinstance(data.get("runs"), list):
        data = data["runs"]
    items = data if isinstance(data, list) else [data]
    if not items or not all(_is_run(x) for x in items):
        return None
    out, stack = [], list(reversed(items))
    while stack:  # child_runs flattened, depth first, in order
        run = stack.pop()
        out.append(run)
        stack.extend(reversed([c for c in run.get("child_runs") or [] if _is_run(c)]))
    return out


def lc_message(m) -> Optional[dict]:
    """A LangChain message (``dumpd`` form, a plain ``{role|type, content}`` dict) as an OpenInference one."""
    m = json_value(m)
    if not isinstance(m, dict):
        return {"message": {"role": "user", "content": m}} if isinstance(m, str) else None
    body = m.get("kwargs") if m.get("lc") and isinstance(m.get("kwargs"), dict) else m
    kind = first(body.get("role"), body.get("type"),
                 m["id"][-1] if isinstance(m.get("id"), list) and m["id"] else None)
    text = content_text(body.get("content"))
    if text is None and body.get("tool_calls"):
        text = json.dumps(body["tool_calls"], ensure_ascii=False)
    return {"message": {"role": _ROLES.get(str(kind), str(kind or "user")), "content": text or ""}}


def lc_messages(value) -> list[dict]:
    value = json_value(value)
    if isinstance(value, list) and value and all(isinstance(b, list) for b in value):
        value = value[0]  # one batch per prompt: the run's first
    return [m for m in (lc_message(x) for x in value or []) if m is not None] if isinstance(value, list) else []


def _generations(outputs) -> list[dict]:
    gens = dig(outputs, "generations")
    if isinstance(gens, list) and gens and isinstance(gens[0], list):
        gens = gens[0]
    out = []
    for g in gens if isinstance(gens, list) else []:
        if not isinstance(g, dict):
            continue
        text = g.get("text") if isinstance(g.get("text"), str) and g["text"] else None
        if text is None and g.get("message") is not None:
            msg = lc_message(g["message"])
            text = msg["message"]["content"] if msg else None
        if text is not None:
            out.append({"message": {"role": "assistant", "content": text}})
    return out


def _record(run: dict) -> dict:
    kind = _KINDS.get(run["run_type"], run["run_type"].upper())
    inputs, outputs = json_value(run.get("inputs")), json_value(run.get("outputs"))
    extra = run.get("extra") if isinstance(run.get("extra"), dict) else {}
    attrs: dict = {"openinference.span.kind": kind}
    if inputs is not None:
        attrs["input.value"] = inputs if isinstance(inputs, str) else json.dumps(inputs, ensure_ascii=False)
    if outputs is not None:
        attrs["output.value"] = outputs if isinstance(outputs, str) else json.dumps(outputs, ensure_ascii=False)
    if isinstance(extra.get("metadata"), dict):  # the run's metadata: where LangChain states ls_max_tokens, k ...
        attrs["metadata"] = extra["metadata"]
    if kind == "RETRIEVER":
        docs = _documents(outputs)
        if docs is not None:
            attrs["retrieval.documents"] = docs
    if kind == "LLM":
        msgs = lc_messages(dig(inputs, "messages"))
        if msgs:
            attrs["llm.input_messages"] = msgs
        elif isinstance(dig(inputs, "prompts"), list):
            attrs["llm.prompts"] = [p for p in inputs["prompts"] if isinstance(p, str)]
        gens = _generations(outputs)
        if gens:
            attrs["llm.output_messages"] = gens
        params = extra.get("invocation_params") if isinstance(extra.get("invocation_params"), dict) else {}
        model = first(params.get("model_name"), params.get("model"), dig(extra, "metadata", "ls_model_name"),
                      dig(outputs, "llm_output", "model_name"), dig(inputs, "model"))
        if model is not None:
            attrs["llm.model_name"] = model
        if params:
            attrs["llm.invocation_parameters"] = {k: v for k, v in params.items() if k not in ("_type", "stream")}
        prompt = first(as_int(run.get("prompt_tokens")), as_int(dig(outputs, "llm_output", "token_usage",
                                                                     "prompt_tokens")),
                       as_int(dig(outputs, "usage_metadata", "input_tokens")))
        if prompt is not None:
            attrs["llm.token_count.prompt"] = prompt
        completion = first(as_int(run.get("completion_tokens")),
                           as_int(dig(outputs, "llm_output", "token_usage", "completion_tokens")))
        if completion is not None:
            attrs["llm.token_count.completion"] = completion
    return {"name": run.get("name") or run["run_type"], "span_kind": kind,
            "context": {"trace_id": run.get("trace_id"), "span_id": run.get("id")},
            "parent_id": run.get("parent_run_id"), "start_time": run.get("start_time"),
            "end_time": run.get("end_time"), "attributes": attrs}


def _records(data) -> Optional[list]:
    runs = _runs(data)
    return [_record(r) for r in runs] if runs is not None else None


FAMILY = Family(LANGSMITH, matches=lambda data, source: _runs(data) is not None,
                load=reader_of(_records, LANGSMITH),
                traces=lambda data: _oi_trace_ids(_records(data) or []))
