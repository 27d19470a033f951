"""OpenInference (Arize Phoenix) traces mapped to ctxcore input: the retriever and reranker
documents, the question, and what the LLM span shows was sent."""

from __future__ import annotations

import json
from typing import Optional

from ...errors import InputError
from ..limits import MAX_DEPTH
from ..loaded import Loaded
from ...records import Inputs
from .documents import document, match_keys, rank_documents
from .family import Family, select_trace, to_loaded
from .messages import (content_text, count_docs_in, generation, joined, message_text, query_from, request_parts, settings_from,
                       stated_limits, text_of)
from .runs import GAP_SECONDS, by_time, first_start, links_lost, pick, run_rows, span_rows, window
from .spans import Span, parse_spans, span_records
from .values import (acyclic, as_int, as_str, dig, epoch_seconds, first, json_value, listing, outermost,
                     time_order)

OPENINFERENCE = "openinference"


def _retrieved(span: Span) -> list:
    docs = dig(span.attrs, "retrieval", "documents")
    return docs if isinstance(docs, list) else []


def _reranked(span: Span, which: str) -> Optional[list]:
    docs = dig(span.attrs, "reranker", which)
    return docs if isinstance(docs, list) else None


def _is_retriever(span: Span) -> bool:
    return span.kind == "RETRIEVER" or bool(_retrieved(span))


def _is_reranker(span: Span) -> bool:
    return span.kind == "RERANKER" or dig(span.attrs, "reranker") is not None


def _has_documents(span: Span) -> bool:
    return bool(_retrieved(span) or _reranked(span, "output_documents") or _reranked(span, "input_documents"))


def _has_llm(spans: list[Span]) -> bool:
    return any(s.kind == "LLM" for s in spans)


def _doc_count(spans: list[Span]) -> int:
    return sum(len(_retrieved(s)) for s in spans if _is_retriever(s))


def _with_docs(spans: list[Span]) -> bool:
    return any((_is_retriever(s) or _is_reranker(s)) and _has_documents(s) for s in spans)


def _groups(spans: list[Span], warnings: list[str]) -> dict:
    """The runs: spans by trace id, or by time when every span came out as its own trace."""
    if links_lost(spans):
        timed = by_time(spans)
        if timed is not None and len(timed) < len(spans):
            warnings.append(f"every span is its own trace (the export lost the trace links): grouped the "
                            f"{len(spans)} spans into {len(timed)} runs by time (spans less than {GAP_SECONDS:g} s "
                            f"apart are one run)")
            return timed
    groups: dict = {}
    for s in spans:
        groups.setdefault(s.trace_id, []).append(s)
    return groups


def _load(spans: list[Span], source: str, trace_id: Optional[str], fmt: str = OPENINFERENCE,
          texts: Optional[dict] = None) -> Loaded:
    for s in spans:
        for path in (("retrieval", "documents"), ("reranker", "input_documents"), ("reranker", "output_documents")):
            docs = dig(s.attrs, *path)
            if docs is not None and not isinstance(docs, list):
                raise InputError(f"{s.label()}: the documents must be a list (indexed 0, 1, 2, ...)",
                                 source=source, field=".".join(path))
    if not spans:
        raise InputError(f"the {fmt} export holds no spans", source=source)
    warnings: list[str] = []
    groups = _groups(spans, warnings)
    if trace_id is not None:
        chosen = select_trace(groups, trace_id, _with_docs, "trace", source)
    else:
        chosen = pick(groups, _with_docs, _has_llm)
    trace = groups[chosen]
    unmapped: list[str] = []
    ids = [t for t in groups if t is not None]
    if len(groups) > 1:
        warnings.append(f"file holds {len(groups)} traces; showing {chosen}")

    ordered = time_order(trace, lambda s: s.start, lambda s: s.index)
    place = {id(s): i for i, s in enumerate(ordered)}
    by_id = {s.span_id: s for s in trace if s.span_id is not None}
    found = [s for s in ordered if _is_retriever(s)]
    parent = acyclic(ordered, by_id, lambda s: s.parent_id, lambda s: f"the {s.label()} span", warnings)
    retrievers = outermost(found, by_id, parent)
    rerankers = [s for s in ordered if _is_reranker(s)]
    if not retrievers and not rerankers:
        scope = trace if trace_id is not None else spans
        kinds = list(dict.fromkeys(s.kind or "unknown" for s in scope))
        where = f" in trace {chosen}" if trace_id is not None and len(groups) > 1 else ""
        raise InputError(f"no RETRIEVER or RERANKER span with documents{where}; found span kinds: "
                         f"{', '.join(kinds)} (without a retriever step there are no candidates to replay)",
                         source=source)
    for s in retrievers:
        if not _retrieved(s):
            warnings.append(f"the {s.label()} span holds no documents")
    nested = _nested_under(found, retrievers, by_id)
    for top, members in _inside(retrievers, by_id).items():
        nested.setdefault(top, []).extend(members)
    producers, filters = _producers(retrievers, nested, source, unmapped)
    with_docs = [s for s, _ in producers]
    if len(with_docs) > 1:
        warnings.append(f"{len(with_docs)} retriever spans: their documents are combined in time order")
    retrieved: list[dict] = []
    for s, docs in producers:
        for d in docs:
            if len(with_docs) > 1:
                d["metadata"].setdefault("span", s.name)
            retrieved.append(d)
    reranker = next((s for s in reversed(rerankers) if _reranked(s, "output_documents")), None)
    reranker = reranker or next((s for s in reversed(rerankers) if _reranked(s, "input_documents")), None)
    rer_in, rer_out, rer_info = [], None, None
    if reranker is not None:
        rer_in = [document(item, f"{reranker.name}.reranker.input_documents[{j}]", source)
                  for j, item in enumerate(_reranked(reranker, "input_documents") or [])]
        out_items = _reranked(reranker, "output_documents")
        if out_items is not None:
            rer_out = [document(item, f"{reranker.name}.reranker.output_documents[{j}]", source)
                       for j, item in enumerate(out_items)]
        else:
            warnings.append(f"the {reranker.label()} span records no output documents: its input is ranked as "
                            f"retrieved")
            retrieved = retrieved or rer_in
            rer_in = []
        rer_info = {"span": reranker.name, "model": dig(reranker.attrs, "reranker", "model_name"),
                    "top_k": dig(reranker.attrs, "reranker", "top_k")}
    all_docs = retrieved + rer_in + (rer_out or [])

    # the question
    roots = [s for s in ordered if parent(s) is None or parent(s) not in by_id]
    root = roots[0] if roots else (ordered[0] if ordered else None)
    query_source = None
    query = query_from(dig(reranker.attrs, "reranker", "query")) if reranker is not None else None
    if query:
        query_source = f"{reranker.name}: reranker.query"
    for s in ([*with_docs, *retrievers, *([reranker] if reranker else [])] if not query else []):
        query = query_from(dig(s.attrs, "input", "value"))
        if query:
            query_source = f"{s.name}: input.value"
            break
    if not query and root is not None:
        query = query_from(dig(root.attrs, "input", "value"))
        query_source = f"{root.name}: input.value" if query else None

    # what was sent and received
    llms = [s for s in ordered if s.kind == "LLM"]
    prompts = {id(s): _oi_prompt(s) for s in llms}
    if not any(prompts[id(s)][0] for s in llms) and len(groups) > 1:
        sibling = _sibling_llm(trace, groups, chosen, all_docs)
        if sibling is not None:
            warnings.append(f"the run has no LLM call with a prompt; took the {sibling.label()} span of trace "
                            f"{sibling.trace_id}, which ran in the same time window (recorded apart, e.g. by "
                            f"another instrumentor)")
            llms = [sibling]
            prompts = {id(sibling): _oi_prompt(sibling)}
            place[id(sibling)] = len(place)
    run_output = _said(json_value(dig(root.attrs, "output", "value"))) if root is not None else None
    llm = generation(llms, all_docs, lambda s: prompts[id(s)][0], _oi_answer, run_output, lambda s: place[id(s)])
    prompt_text = answer = model = prompt_tokens = None
    inputs = Inputs()
    config: dict = {}
    if llm is not None:
        prompt_text, messages = prompts[id(llm)]
        answer = _oi_answer(llm)
        attrs = llm.attrs
        params = json_value(dig(attrs, "llm", "invocation_parameters"))
        model = as_str(first(dig(attrs, "llm", "model_name"), dig(attrs, "llm", "response", "model_name"),
                             dig(attrs, "llm", "request", "model_name"),
                             params.get("model") if isinstance(params, dict) else None,
                             params.get("model_name") if isinstance(params, dict) else None))
        prompt_tokens = as_int(dig(attrs, "llm", "token_count", "prompt"))
        config = settings_from(model, params, unmapped, warnings)
        system, history = request_parts(messages, all_docs, unmapped)
        tools = tuple(_oi_tool(t) for t in dig(attrs, "llm", "tools") or [] if _oi_tool(t))
        inputs = Inputs(system=system, history=history, tools=tools)
        if dig(attrs, "llm", "prompt_template", "template") is not None:
            unmapped.append(f"the prompt template of the {llm.label()} span")
        if prompt_text is None:
            unmapped.append(f"the prompt of the {llm.label()} span (no llm.input_messages or llm.prompts)")
    else:
        unmapped.append("the prompt and answer (no LLM span in the trace)")
    if answer is None:
        answer = run_output

    used = {id(s) for s in [*retrievers, *with_docs, *rerankers, *([llm] if llm else []), *([root] if root else [])]}
    spare = [s.label() for s in ordered if id(s) not in used]
    if spare:
        unmapped.append(f"spans not used: {listing(spare)}")

    stated = stated_limits(_limit_sources(ordered, llm, reranker), unmapped)
    docs = rank_documents(retrieved, rer_in, rer_out, warnings)
    shown = ordered + ([llm] if llm is not None and id(llm) not in {id(s) for s in ordered} else [])
    logged = {"prompt_text": prompt_text, "prompt_tokens": prompt_tokens, "answer": answer, "model": model,
              "trace_id": chosen, "traces": ids, "unmapped": unmapped, "query_from": query_source,
              "llm_span": llm.name if llm else None, "retriever_spans": [s.name for s in with_docs],
              "reranker": rer_info, "spans": span_rows(shown),
              "runs": run_rows(groups, _with_docs, _has_llm, _doc_count, first_start),
              "conventions": tuple(dict.fromkeys(s.convention for s in trace if s.convention)), "stated": stated}
    return to_loaded(fmt, source, docs, query, inputs, config, logged, warnings, texts, filters)


def _docs_of(span: Span, source: str) -> list[dict]:
    return [document(item, f"{span.name}.retrieval.documents[{j}]", source) for j, item in enumerate(_retrieved(span))]


def _nested_under(found: list[Span], tops: list[Span], by_id: dict) -> dict:
    """id(outermost retriever) -> [(a retriever span nested in it, levels below it)], in time order.
    Parents are walked at most MAX_DEPTH levels up, so a long (or cyclic) chain costs linear time."""
    top_ids = {id(t) for t in tops}
    out: dict = {}
    for s in found:
        node, depth = by_id.get(s.parent_id), 1
        while id(s) not in top_ids and node is not None and depth <= MAX_DEPTH:
            if id(node) in top_ids:
                out.setdefault(id(node), []).append((s, depth))
                break
            node, depth = by_id.get(node.parent_id), depth + 1
    return out


def _inside(tops: list[Span], by_id: dict) -> dict:
    """id(top-level retriever) -> [(a top-level retriever that ran inside its time window, depth)]: the
    nesting of a run whose spans lost their parent links (LlamaIndex.TS without a context manager).
    One pass over the spans by start time with a stack of the open ones."""
    timed = [(epoch_seconds(t.start), epoch_seconds(t.end), t) for t in tops if by_id.get(t.parent_id) is None]
    timed = sorted(((a, b, t) for a, b, t in timed if a is not None and b is not None), key=lambda x: (x[0], -x[1]))
    out: dict = {}
    stack: list = []
    for start, end, t in timed:
        while stack and stack[-1][1] < end:  # ends fall along the stack: what is left holds this span
            stack.pop()
        if stack:
            out.setdefault(id(stack[0][2]), []).append((t, len(stack)))
        stack.append((start, end, t))
    return out


def _producers(tops: list[Span], nested: dict, source: str, unmapped: list[str]):
    """The spans whose documents become candidates, with their documents, and the filter steps.

    An outermost retriever whose documents all came from one retriever nested in it (a LlamaIndex
    retriever inside a query engine's retrieve span, a compression retriever around its base) is
    read from the innermost such span: the same list is read once (noted in ``unmapped``), a cut
    or reordered one is a filter step, and so is each span between them. A span that is not of RETRIEVER kind and only repeats
    documents already read is a filter step too, never more candidates."""
    producers, filters, known, absorbed, read = [], [], set(), set(), set()
    for top in tops:
        docs = [] if id(top) in absorbed else _docs_of(top, source)
        if not docs:
            continue
        span, keys = top, match_keys(docs)
        inner = [(s, depth, _docs_of(s, source)) for s, depth in nested.get(id(top), []) if _retrieved(s)]
        inner = [(s, depth, d) for s, depth, d in inner if set(keys) <= set(match_keys(d))]
        if inner:
            inner.sort(key=lambda x: -x[1])  # the innermost first; a stable sort keeps ties in time order
            span, _, inner_docs = inner[0]
            absorbed.update(id(s) for s, _, _ in inner)
            filters += [{"span": s.name, "kept": d} for s, _, d in inner[1:] if match_keys(d) != match_keys(inner_docs)]
            if match_keys(inner_docs) == keys:
                unmapped.append(f"the {top.label()} span repeats the {len(docs)} documents of the {span.label()} "
                                f"span nested in it: read once, from the inner span")
            else:
                filters.append({"span": top.name, "kept": docs})
            docs = inner_docs
        elif top.kind != "RETRIEVER" and known and set(keys) <= known:
            filters.append({"span": top.name, "kept": docs})
            continue
        if id(span) not in read:  # an inner span that started with its outer one was read already
            producers.append((span, docs))
            read.add(id(span))
        known.update(match_keys(docs))
    return producers, filters


def _limit_sources(ordered: list[Span], llm: Optional[Span], reranker: Optional[Span]) -> list:
    """Where a run states its limits, first wins: the LLM call's parameters, the reranker's top_k
    (its top_n), then each span's ``metadata`` in time order."""
    out = []
    if llm is not None:
        out.append((llm.label(), dig(llm.attrs, "llm", "invocation_parameters"), False))
    if reranker is not None:
        out.append((reranker.label(), {"top_n": dig(reranker.attrs, "reranker", "top_k")}, False))
    return out + [(f"{s.label()} metadata", dig(s.attrs, "metadata"), True) for s in ordered]


def _sibling_llm(trace: list[Span], groups: dict, chosen, docs: list[dict]) -> Optional[Span]:
    """An LLM span of another trace that ran inside this run's time window (its prompt holding
    the most of the run's documents), for a run whose LLM call was recorded apart."""
    span = window(trace)
    if span is None:
        return None
    start, end = span
    found = []
    for tid, members in groups.items():
        if tid == chosen:
            continue
        for s in members:
            t = epoch_seconds(s.start)
            if s.kind == "LLM" and t is not None and start - 0.001 <= t <= end + GAP_SECONDS:
                text = _oi_prompt(s)[0]
                if text:
                    found.append((count_docs_in(text, docs), -abs(t - start), s))
    return max(found, key=lambda f: (f[0], f[1]))[2] if found else None


def _oi_messages(items) -> list[tuple[str, str]]:
    out = []
    for m in items if isinstance(items, list) else []:
        if not isinstance(m, dict):
            continue
        msg = m.get("message", m) if isinstance(m.get("message", m), dict) else m
        text = message_text(msg)
        if text is None:
            text = content_text(msg.get("contents"))
        if text is None:
            calls = msg.get("tool_calls")
            text = json.dumps(calls, ensure_ascii=False) if calls else ""
        out.append((str(msg.get("role") or "user"), text))
    return out


def _oi_prompt(span: Span) -> tuple[Optional[str], list[tuple[str, str]]]:
    messages = _oi_messages(dig(span.attrs, "llm", "input_messages"))
    if messages:
        return joined(messages), messages
    prompts = dig(span.attrs, "llm", "prompts")
    if isinstance(prompts, list) and prompts:
        texts = [p if isinstance(p, str) else dig(p, "prompt", "text") for p in prompts]
        texts = [t for t in texts if isinstance(t, str)]
        if texts:
            return "\n\n".join(texts), []
    value = dig(span.attrs, "input", "value")
    parsed = json_value(value)
    if isinstance(parsed, dict) and isinstance(parsed.get("messages"), list):
        messages = [(str(m.get("role") or "user"), message_text(m) or "")
                    for m in parsed["messages"] if isinstance(m, dict)]
        return (joined(messages), messages) if messages else (None, [])
    if not isinstance(parsed, str):  # a JSON input.value (call arguments, a request body) is not the prompt text
        return None, []
    return (value, []) if isinstance(value, str) else (None, [])


def _oi_answer(span: Span) -> Optional[str]:
    """The answer an LLM span logged: ``llm.output_messages`` (content as a string, as multi-part
    ``message.contents``, or as LlamaIndex ``blocks``), else completion choices, else the span's
    ``output.value`` (a leading role prefix like ``assistant:`` dropped)."""
    items = dig(span.attrs, "llm", "output_messages")
    texts = [_said(m.get("message", m) if isinstance(m, dict) else m) for m in items] if isinstance(items, list) else []
    texts = [t for t in texts if t]
    if texts:
        return "\n\n".join(texts)
    choices = dig(span.attrs, "llm", "choices")
    if isinstance(choices, list):
        texts = [dig(c, "completion", "text") for c in choices]
        texts = [t for t in texts if isinstance(t, str)]
        if texts:
            return "\n\n".join(texts)
    return _said(json_value(dig(span.attrs, "output", "value")))


_ROLE_PREFIX = ("assistant:", "ai:", "model:")


def _said(value) -> Optional[str]:
    """Text of one logged output: a string (without a role prefix), a message with ``content``,
    ``contents`` or ``blocks``, a ChatResponse ``{"message": ...}``, or an OpenAI response."""
    if isinstance(value, str):
        text = value.strip()
        head = text[:12].casefold()
        for prefix in _ROLE_PREFIX:
            if head.startswith(prefix):
                return text[len(prefix):].strip()
        return text or None
    if isinstance(value, list):
        said = [_said(m) for m in value if isinstance(m, dict) and m.get("role") in ("assistant", "ai", None)]
        said = [t for t in said if t]
        return said[-1] if said else None
    if not isinstance(value, dict):
        return None
    for key in ("message", "response"):
        if isinstance(value.get(key), dict):
            return _said(value[key])
    if isinstance(dig(value, "choices", 0, "message"), dict):
        return _said(dig(value, "choices", 0, "message"))
    text = content_text(value.get("content"))
    if text is None:
        text = content_text(value.get("contents"))
    if text is None and isinstance(value.get("blocks"), list):  # LlamaIndex ChatMessage blocks
        text = "\n".join(b["text"] for b in value["blocks"] if isinstance(b, dict) and isinstance(b.get("text"), str))
    if text is None:
        return text_of(value)
    return text or None


def _oi_tool(item) -> Optional[str]:
    tool = item.get("tool", item) if isinstance(item, dict) else item
    if isinstance(tool, dict):
        schema = tool.get("json_schema")
        if isinstance(schema, str):
            return schema
        return json.dumps(schema if schema is not None else tool, ensure_ascii=False, indent=2)
    return tool if isinstance(tool, str) else None


def trace_ids(data) -> list[str]:
    """The trace (run) ids of the OpenInference spans in ``data``, in the order they first appear."""
    records = span_records(data)
    if records is None:
        return []
    return [tid for tid in run_groups(parse_spans(records, "input")) if tid is not None]


def run_groups(spans: list[Span]) -> dict:
    """The runs of spans already parsed, as loading groups them: by trace id, or by time when the export lost
    its trace links."""
    return _groups(spans, [])


def load_spans(spans: list[Span], source: str, trace_id: Optional[str], fmt: str,
               texts: Optional[dict] = None) -> Loaded:
    """One run of spans already in the OpenInference shape (any family that converts to it)."""
    return _load(spans, source, trace_id, fmt, texts)


def reader_of(records, convention: str):
    """A family's ``load`` for records that read as OpenInference spans but were logged in another tool's
    own convention (LangSmith runs, MLflow spans): ``records(data)`` gives the span records."""
    def read(data, source: str, trace_id: Optional[str], texts: Optional[dict] = None) -> Loaded:
        spans = parse_spans(records(data), source)
        for s in spans:
            s.convention = convention
        return load_spans(spans, source, trace_id, convention, texts)

    return read


def _read(data, source: str, trace_id: Optional[str], texts: Optional[dict] = None) -> Loaded:
    return _load(parse_spans(span_records(data, source), source), source, trace_id, OPENINFERENCE, texts)


FAMILY = Family(OPENINFERENCE, matches=lambda data, source: span_records(data, source) is not None, load=_read,
                traces=trace_ids)
