"""Langfuse traces (``GET /api/public/traces/{id}``, UI downloads, observation lists, JSONL of
traces) mapped to ctxcore input: retriever outputs, the question and the GENERATION that was sent."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from typing import Optional

from ...errors import InputError
from ..limits import MAX_SPANS
from ..loaded import Loaded
from ...records import Inputs
from .documents import from_metadata, match_keys, rank_documents
from .family import Family, select_trace, to_loaded
from .messages import (content_text, generation, joined, message_text, query_from, request_parts, settings_from,
                       stated_limits, text_of)
from .runs import pick, run_rows
from .spans import is_span
from .values import (acyclic, as_int, as_number, as_str, epoch_seconds, first, iso_time, json_value, listing,
                     outermost, time_order)

LANGFUSE = "langfuse"


_LF_TYPES = frozenset({"SPAN", "GENERATION", "EVENT", "AGENT", "TOOL", "CHAIN", "RETRIEVER", "EVALUATOR",
                       "EMBEDDING", "GUARDRAIL"})


@dataclass
class _LfTrace:
    id: Optional[str]
    trace: dict
    observations: list


# The Python SDK's pydantic models dumped with model_dump() keep the field names, not the API's
# aliases (langfuse/langfuse-python langfuse/api/commons/types/observation.py: trace_id alias traceId,
# start_time alias startTime, parent_observation_id alias parentObservationId, usage_details ...).
_SNAKE = {"trace_id": "traceId", "parent_observation_id": "parentObservationId", "start_time": "startTime",
          "end_time": "endTime", "completion_start_time": "completionStartTime", "model_parameters": "modelParameters",
          "usage_details": "usageDetails", "cost_details": "costDetails", "prompt_name": "promptName",
          "prompt_version": "promptVersion", "prompt_id": "promptId", "status_message": "statusMessage",
          "session_id": "sessionId", "user_id": "userId", "html_path": "htmlPath", "total_cost": "totalCost"}


def _camel(obj):
    """An SDK ``model_dump()`` (snake_case) as the API writes it (camelCase); a copy, the input unchanged."""
    if not isinstance(obj, dict) or not any(k in _SNAKE for k in obj):
        return obj
    return {_SNAKE.get(k, k) if _SNAKE.get(k, k) not in obj else k: v for k, v in obj.items()}


def _is_observation(obj) -> bool:
    return (isinstance(obj, dict) and isinstance(obj.get("type"), str) and obj["type"].upper() in _LF_TYPES
            and ("traceId" in obj or "parentObservationId" in obj or "startTime" in obj)
            and "text" not in obj and not is_span(obj))


def _is_lf_trace(obj) -> bool:
    return isinstance(obj, dict) and isinstance(obj.get("observations"), list) and "candidates" not in obj \
        and "format" not in obj


def _langfuse_traces(data, source: str) -> Optional[list[_LfTrace]]:
    """The Langfuse traces in parsed JSON, or None when it is not a Langfuse export."""
    if isinstance(data, dict) and isinstance(data.get("data"), list) and "observations" not in data:
        return _langfuse_traces(data["data"], source)
    if _is_lf_trace(data):
        trace = _camel(data["trace"] if isinstance(data.get("trace"), dict) else data)
        obs = [_camel(o) for o in data["observations"]]
        if obs and all(isinstance(o, str) for o in obs):
            raise InputError("this Langfuse trace lists observation ids only; export it with its observations "
                             "(GET /api/public/traces/{traceId})", source=source, field="observations")
        if obs and not any(_is_observation(o) for o in obs):
            return None
        return [_LfTrace(as_str(trace.get("id")), trace, [o for o in obs if isinstance(o, dict)])]
    if isinstance(data, list) and data:
        if all(_is_lf_trace(x) for x in data):
            return [t for x in data for t in _langfuse_traces(x, source) or []] or None
        data = [_camel(x) for x in data]
        if any(_is_observation(x) for x in data) and all(isinstance(x, dict) and "text" not in x for x in data):
            groups: dict = {}
            for o in data:
                groups.setdefault(as_str(o.get("traceId")), []).append(o)
            return [_LfTrace(tid, {"id": tid} if tid else {}, obs) for tid, obs in groups.items()]
    return None


def _lf_name(o: dict) -> str:
    return f"{str(o.get('type') or 'observation').upper()} '{o.get('name') or o.get('id') or '?'}'"


def _lf_documents(value) -> Optional[list]:
    """The documents in a retriever output, or None when it does not look like documents."""
    value = json_value(value)
    if isinstance(value, dict):
        for key in ("documents", "docs", "results", "nodes", "source_nodes", "context", "output"):
            if isinstance(value.get(key), list):
                value = value[key]
                break
        else:
            return None
    if not isinstance(value, list):
        return None
    docs = []
    for item in value:
        if isinstance(item, str):
            docs.append({"content": item, "id": None, "score": None, "metadata": {}})
            continue
        if not isinstance(item, dict):
            return None
        node = item["node"] if isinstance(item.get("node"), dict) else item
        if isinstance(node.get("document"), dict):
            node = node["document"]
        text = first(*(node.get(k) for k in ("page_content", "pageContent", "text", "content", "document", "chunk")
                       if isinstance(node.get(k), str)))
        metadata = json_value(node.get("metadata"), literal=True)
        if not isinstance(metadata, dict):
            metadata = {} if metadata is None else {"metadata": metadata}
        metadata = dict(metadata)  # a copy: the caller's parsed JSON is never changed
        score = first(as_number(item.get("score")), as_number(node.get("score")),
                      as_number(item.get("relevance_score")), as_number(metadata.get("relevance_score")),
                      as_number(metadata.get("score")))
        docs.append(from_metadata({"content": text, "id": first(node.get("id"), node.get("id_"), node.get("doc_id")),
                                   "score": score, "metadata": metadata}))
    return docs


def _lf_is_retriever(o: dict) -> bool:
    if str(o.get("type", "")).upper() == "RETRIEVER":
        return True
    if "retriev" in str(o.get("name") or "").lower() and _lf_documents(o.get("output")) is not None:
        return True
    out = json_value(o.get("output"))  # LangChain documents are unmistakable whatever the observation is called
    return isinstance(out, list) and bool(out) and all(isinstance(d, dict) and "page_content" in d for d in out)


def _lf_messages(value) -> Optional[list[tuple[str, str]]]:
    value = json_value(value)
    if isinstance(value, dict) and isinstance(value.get("messages"), list):
        value = value["messages"]
    if isinstance(value, list) and value and all(isinstance(m, dict) and "role" in m for m in value):
        return [(str(m.get("role")), message_text(m) or
                 (json.dumps(m.get("tool_calls"), ensure_ascii=False) if m.get("tool_calls") else ""))
                for m in value]
    return None


def _lf_prompt(o: dict) -> tuple[Optional[str], list[tuple[str, str]]]:
    value = o.get("input")
    messages = _lf_messages(value)
    if messages is not None:
        return joined(messages), messages
    value = json_value(value)
    if isinstance(value, str):
        return value, []
    if isinstance(value, dict) and isinstance(value.get("prompt"), str):
        return value["prompt"], []
    if value is None:
        return None, []
    return json.dumps(value, ensure_ascii=False, indent=2), []


def _lf_tokens(o: dict) -> Optional[int]:
    details = json_value(o.get("usageDetails"))
    usage = o.get("usage") if isinstance(o.get("usage"), dict) else {}
    details = details if isinstance(details, dict) else {}
    return first(as_int(details.get("input")), as_int(details.get("prompt_tokens")),
                 as_int(details.get("input_tokens")), as_int(usage.get("input")), as_int(usage.get("promptTokens")),
                 as_int(o.get("promptTokens")), as_int(o.get("inputUsage")))


def trace_keys(ids: list[Optional[str]]) -> list[Optional[str]]:
    """Each trace's name in the file, from the traces' ids in file order: its id; with its place after it where
    another trace has the same id; its place alone without one, unless it is the file's only trace (one needs
    no name). No trace is lost or merged with another.

    >>> trace_keys(["t-a", None, "t-b", "t-a"])
    ['t-a#1', '#2', 't-b', 't-a#4']
    >>> trace_keys([None])
    [None]
    """
    if len(ids) == 1:
        return list(ids)
    counts = Counter(ids)
    return [tid if tid is not None and counts[tid] == 1 else f"{tid or ''}#{i + 1}" for i, tid in enumerate(ids)]


def _load(traces: list[_LfTrace], source: str, trace_id: Optional[str], texts: Optional[dict] = None) -> Loaded:
    count = sum(len(t.observations) for t in traces)
    if count > MAX_SPANS:
        raise InputError(f"{count} observations; the limit is {MAX_SPANS}", source=source, field="observations")
    groups = dict(zip(trace_keys([t.id for t in traces]), traces))
    has_docs = lambda t: any(_lf_is_retriever(o) for o in t.observations)  # noqa: E731
    has_llm = lambda t: any(str(o.get("type", "")).upper() == "GENERATION" for o in t.observations)  # noqa: E731
    if trace_id is not None:
        chosen = select_trace(groups, trace_id, has_docs, "trace", source)
    else:
        chosen = pick(groups, has_docs, has_llm)
    lf = groups[chosen]
    warnings: list[str] = []
    unmapped: list[str] = []
    if len(groups) > 1:
        warnings.append(f"file holds {len(groups)} traces; showing {chosen}")
    trace, index = lf.trace, {id(o): i for i, o in enumerate(lf.observations)}
    obs = time_order(lf.observations, lambda o: o.get("startTime"), lambda o: index[id(o)])
    by_id = {as_str(o.get("id")): o for o in obs if as_str(o.get("id")) is not None}

    place = {id(o): i for i, o in enumerate(obs)}
    parent = acyclic(obs, by_id, lambda o: as_str(o.get("parentObservationId")), _lf_name, warnings)
    retrievers = outermost([o for o in obs if _lf_is_retriever(o)], by_id, parent)
    if not retrievers:
        kinds = list(dict.fromkeys(_lf_name(o) for o in obs))
        raise InputError(f"no RETRIEVER observation (or span named like 'retrieve…') with documents; found: "
                         f"{listing(kinds) or 'no observations'}", source=source, field="observations")
    retrieved: list[dict] = []
    with_docs, origin, filters, known = [], [], [], set()
    for o in retrievers:
        found = _lf_documents(o.get("output"))
        if found is None:
            raise InputError(f"the output of {_lf_name(o)} is not a list of documents (expected strings, "
                             f"LangChain documents or objects with content/text)", source=source,
                             field=f"observations[{index[id(o)]}].output")
        if not found:
            warnings.append(f"{_lf_name(o)} returned no documents")
            continue
        if str(o.get("type", "")).upper() != "RETRIEVER" and known and set(match_keys(found)) <= known:
            filters.append({"span": o.get("name"), "kept": found})  # documents in, some of them out: a filter
            continue
        known.update(match_keys(found))
        with_docs.append(o)
        for j, d in enumerate(found):
            d["where"] = f"observations[{index[id(o)]}].output[{j}]"
            retrieved.append(d)
            origin.append(o.get("name"))
    if len(with_docs) > 1:
        warnings.append(f"{len(with_docs)} retriever observations: their documents are combined in time order")
        for d, name in zip(retrieved, origin):
            d["metadata"].setdefault("span", name)

    query, query_source = None, None
    for o in retrievers:
        query = query_from(o.get("input"))
        if query:
            query_source = f"{o.get('name')}: input"
            break
    if not query:
        query = query_from(trace.get("input"))
        query_source = "trace input" if query else None

    gens = [o for o in obs if str(o.get("type", "")).upper() == "GENERATION"]
    prompts = {id(g): _lf_prompt(g) for g in gens}
    gen = generation(gens, retrieved, lambda g: prompts[id(g)][0], lambda g: text_of(g.get("output")),
                     text_of(trace.get("output")), lambda g: place[id(g)])
    prompt_text = answer = model = prompt_tokens = None
    inputs, config = Inputs(), {}
    if gen is not None:
        prompt_text, messages = prompts[id(gen)]
        answer = text_of(gen.get("output"))
        model = as_str(gen.get("model"))
        prompt_tokens = _lf_tokens(gen)
        config = settings_from(model, gen.get("modelParameters"), unmapped, warnings)
        system, history = request_parts(messages, retrieved, unmapped)
        inputs = Inputs(system=system, history=history)
        if gen.get("promptName"):
            unmapped.append(f"the managed prompt {gen['promptName']!r} (version {gen.get('promptVersion')})")
    else:
        unmapped.append("the prompt and answer (no GENERATION observation)")
    if answer is None:
        answer = text_of(trace.get("output"))

    used = {id(o) for o in [*retrievers, *([gen] if gen else [])]}
    spare = [_lf_name(o) for o in obs if id(o) not in used]
    if spare:
        unmapped.append(f"observations not used: {listing(spare)}")
    meta = json_value(trace.get("metadata"))
    if isinstance(meta, dict) and meta:
        unmapped.append(f"trace metadata ({', '.join(map(str, meta))})")
    scores = trace.get("scores")
    if isinstance(scores, list) and scores:
        names = [f"{s.get('name')}={s.get('value', s.get('stringValue'))}" for s in scores if isinstance(s, dict)]
        unmapped.append(f"scores ({listing(names)})")
    if isinstance(trace.get("tags"), list) and trace["tags"]:
        unmapped.append(f"tags ({', '.join(map(str, trace['tags']))})")

    stated = stated_limits([*([(_lf_name(gen), gen.get("modelParameters"), False)] if gen else []),
                            *((f"{_lf_name(o)} metadata", o.get("metadata"), True) for o in obs)], unmapped)
    docs = rank_documents(retrieved, [], None, warnings)
    logged = {"prompt_text": prompt_text, "prompt_tokens": prompt_tokens, "answer": answer, "model": model,
              "trace_id": chosen, "traces": [t for t in groups if t is not None], "unmapped": unmapped,
              "query_from": query_source, "llm_span": gen.get("name") if gen else None,
              "retriever_spans": [o.get("name") for o in with_docs], "reranker": None,
              "runs": run_rows(groups, has_docs, has_llm,
                               lambda t: sum(len(_lf_documents(o.get("output")) or []) for o in t.observations
                                             if _lf_is_retriever(o)),
                               lambda t: first(t.trace.get("timestamp"),
                                               min((o["startTime"] for o in t.observations
                                                    if isinstance(o.get("startTime"), str)), default=None))),
              "spans": tuple(_lf_span(o) for o in obs), "stated": stated}
    return to_loaded(LANGFUSE, source, docs, query, inputs, config, logged, warnings, texts, filters)


def _lf_span(o: dict) -> dict:
    start, end = epoch_seconds(o.get("startTime")), epoch_seconds(o.get("endTime"))
    details = json_value(o.get("usageDetails"))
    details = details if isinstance(details, dict) else {}
    return {"name": o.get("name"), "kind": str(o.get("type") or "").upper() or None, "id": as_str(o.get("id")),
            "parent": as_str(o.get("parentObservationId")), "start": iso_time(start) if start is not None else None,
            "duration_ms": round((end - start) * 1000, 3) if start is not None and end is not None else None,
            "model": as_str(o.get("model")), "prompt_tokens": _lf_tokens(o),
            "completion_tokens": first(as_int(details.get("output")), as_int(details.get("completion_tokens")))}


def trace_ids(data) -> list[str]:
    """The trace ids of a Langfuse export, in file order (by place where an id is missing or repeats)."""
    return [t for t in trace_keys([t.id for t in _langfuse_traces(data, "input") or []]) if t is not None]


def _read(data, source: str, trace_id: Optional[str], texts: Optional[dict] = None) -> Loaded:
    return _load(_langfuse_traces(data, source), source, trace_id, texts)


FAMILY = Family(LANGFUSE, matches=lambda data, source: _langfuse_traces(data, source) is not None, load=_read,
                traces=trace_ids)
