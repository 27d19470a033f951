"""Logged traces from other tools, read as ctxcore input.

Two formats are recognised from their content (never from the file name):

* **OpenInference** spans, as exported from Arize Phoenix: a JSON list of spans, an object
  holding them under ``"spans"`` or ``"data"`` (Phoenix REST), a pandas ``to_json`` of
  ``get_spans_dataframe()`` (``records``, ``columns``, ``split`` or ``table`` orient), JSONL with
  one span a line, or OTLP JSON (``resourceSpans``). Span fields may be nested
  (``"context": {"trace_id": ...}``) or flattened columns (``"context.trace_id"``); attributes may
  be flattened (``"retrieval.documents.0.document.content"``), nested with semantic-convention
  keys (``"retrieval.documents": [{"document.content": ...}]``), fully nested
  (``{"retrieval": {"documents": [{"document": {"content": ...}}]}}``), OTLP key/value lists or
  a JSON string. :func:`unflatten` turns every one of these into the fully nested shape, and
  everything below reads only that shape.
* **Langfuse**: one trace as returned by ``GET /api/public/traces/{id}`` (or downloaded from the
  UI): ``id``, ``input``, ``output``, ``metadata`` and ``observations``; also ``{"trace": ...,
  "observations": [...]}``, a list (or ``{"data": [...]}``) of observations, or JSONL of traces.

Mapping rules
-------------
Candidates (one per logged document, ids unique: the document id when present and unique; a
repeated id gets ``#2``, ``#3`` ... on its later occurrences; no id gives ``doc-N``, N the
1-based position):

* With a RERANKER span, its **output** documents come first, in reranker order, scored with the
  reranker score (``metadata.reranker_rank``, and ``retrieval_rank``/``retrieval_score`` from the
  matching input document). Input documents the reranker did **not** return follow, in their
  input order, with ``score=None`` and ``metadata.reranker = "not in output"``: the engine ranks
  them after every reranked one, so they only survive if the budget has room, which answers
  "would it have fitted had the reranker kept it?". Documents are matched by id, else by text.
* Otherwise the RETRIEVER documents in retrieval order with their scores
  (``metadata.retrieval_rank``). When no document has a score, scores stay ``None`` and the
  warning "documents carry no scores: ranked by retrieval order" is given (the engine then
  ranks by input order, which is the retrieval order). Several outermost retriever spans are
  combined in time order (``metadata.span`` names the span); nested retrievers (an ensemble's
  parts) are skipped in favour of their outermost parent.
* ``doc_id`` is ``metadata.doc_id``/``document_id``/``ref_doc_id`` when present, else the logged
  document id; ``title``, ``section``, ``date``, ``version``, ``source_type`` and ``chunk_index``
  are taken from the document metadata when it has them; the whole metadata is kept.

Query: the reranker query, else the retriever's (or reranker's) input, else the root span's (or
the Langfuse trace's) input; a JSON input gives its ``query``/``question``/``input`` field.

What was actually sent (``extra["logged"]``): the LLM span (Langfuse: GENERATION) whose prompt
contains the most retrieved passages (ties: the latest) gives ``prompt_text`` (messages as
"role: content" separated by blank lines, or the completion prompts joined), ``prompt_tokens``,
``answer`` and ``model``. Its system message becomes ``inputs.system`` and earlier turns become
``inputs.history`` unless they carry retrieved passages (ctxcore builds its own evidence block);
advertised tools become ``inputs.tools``. ``config`` gets ``model`` when the model has a known
tokenizer (otherwise a warning), and ``max_output`` from the logged ``max_tokens`` when it fits
the default window. Whatever is left is listed in ``extra["logged"]["unmapped"]`` and named in
one warning.
"""

from __future__ import annotations

import ast
import json
import math
import os
import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Optional

from .errors import InputError
from .loaders import Loaded, candidate, decode
from .records import Config, Inputs
from .tokens import encoding_for_model

OPENINFERENCE = "openinference"
LANGFUSE = "langfuse"

__all__ = ["OPENINFERENCE", "LANGFUSE", "detect", "detect_any", "detect_lines", "load_trace", "load_file",
           "openinference_traces", "langfuse_traces", "unflatten"]


# --------------------------------------------------------------------------------------------
# Entry points called by ctxcore.loaders
# --------------------------------------------------------------------------------------------

def detect(data, source: str = "input") -> Optional[Loaded]:
    """A logged trace in a parsed JSON object, or None when the object is not one."""
    if not isinstance(data, dict):
        return None
    return detect_any(data, source)


def detect_any(data, source: str = "input") -> Optional[Loaded]:
    """Like :func:`detect`, for any parsed JSON value (lists of spans or observations too)."""
    if isinstance(data, dict) and ("candidates" in data or "format" in data):
        return None
    if _langfuse_traces(data, source) is not None:
        return load_trace(data, source)
    if _span_records(data) is not None:
        return load_trace(data, source)
    return None


def detect_lines(items, source: str = "input") -> Optional[Loaded]:
    """A logged trace in the parsed objects of a JSONL file, or None."""
    return detect_any(list(items), source)


def load_trace(data, source: str = "input", trace_id: Optional[str] = None) -> Loaded:
    """Read a logged trace (OpenInference or Langfuse) from parsed JSON or the objects of a JSONL file.

    ``trace_id`` picks one trace when the file holds several; by default the first one that
    retrieved documents is shown.
    """
    if isinstance(data, dict) and ("candidates" in data or "format" in data):
        raise InputError("this is a ctxcore input file, not a logged trace", source=source)
    traces = _langfuse_traces(data, source)
    if traces is not None:
        return _load_langfuse(traces, source, trace_id)
    records = _span_records(data)
    if records is not None:
        return _load_openinference(_parse_spans(records, source), source, trace_id)
    raise InputError("not a logged trace: expected OpenInference spans (Arize Phoenix export) or a Langfuse "
                     "trace with observations", source=source)


def load_file(path, trace_id: Optional[str] = None, name: Optional[str] = None) -> Loaded:
    """Read a logged trace file (JSON or JSONL; a path or its bytes), choosing ``trace_id`` when it
    holds several."""
    if isinstance(path, (bytes, bytearray)):
        source, raw = name or "input", bytes(path)
    else:
        source = name or os.fspath(path)
        try:
            with open(path, "rb") as f:
                raw = f.read()
        except OSError as err:
            raise InputError(f"cannot read the file ({err.strerror})", source=source) from None
    return load_trace(_parse_text(decode(raw, source), source), source, trace_id)


def openinference_traces(data) -> list[str]:
    """The trace ids of the OpenInference spans in ``data``, in the order they first appear."""
    records = _span_records(data)
    if records is None:
        return []
    spans = _parse_spans(records, "input")
    return [tid for tid in dict.fromkeys(s.trace_id for s in spans) if tid is not None]


def langfuse_traces(data) -> list[str]:
    """The trace ids of a Langfuse export, in file order."""
    traces = _langfuse_traces(data, "input")
    return [t.id for t in traces or () if t.id is not None]


def _parse_text(text: str, source: str):
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        pass
    except (RecursionError, ValueError) as err:
        raise InputError(f"not valid JSON: {type(err).__name__}", source=source) from None
    from .loaders import parse_jsonl

    return parse_jsonl(text, source)[0]


# --------------------------------------------------------------------------------------------
# The attribute normaliser: every accepted shape becomes one nested shape
# --------------------------------------------------------------------------------------------

# Values under these names are free-form objects (or JSON strings): their keys are not split.
_OPAQUE = frozenset({"metadata", "invocation_parameters", "variables", "parameters", "json_schema",
                     "modelParameters", "usageDetails", "costDetails"})


class _Raw:
    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value


def _segment(part: str):
    return int(part) if part.isascii() and part.isdigit() else part


def _tree(value, name: Optional[str] = None):
    if name in _OPAQUE:
        return _Raw(value)
    if isinstance(value, dict):
        node: dict = {}
        for key, v in value.items():
            _put(node, str(key).split("."), v)
        return node
    if isinstance(value, list) and value:
        return {i: _tree(v) for i, v in enumerate(value)}
    return value


def _put(node: dict, parts: list, value) -> None:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return  # pandas writes absent columns as null/NaN
    for part in parts[:-1]:
        key = _segment(part)
        nxt = node.get(key)
        if not isinstance(nxt, dict):
            nxt = node[key] = {}
        node = nxt
    key, new = _segment(parts[-1]), _tree(value, parts[-1])
    if isinstance(node.get(key), dict) and isinstance(new, dict):
        _merge(node[key], new)
    else:
        node[key] = new


def _merge(a: dict, b: dict) -> None:
    for key, v in b.items():
        if isinstance(a.get(key), dict) and isinstance(v, dict):
            _merge(a[key], v)
        else:
            a[key] = v


def _finish(node):
    if isinstance(node, _Raw):
        return node.value
    if isinstance(node, dict):
        if node and all(isinstance(k, int) for k in node):
            return [_finish(node[k]) for k in sorted(node)]
        return {str(k): _finish(v) for k, v in node.items()}
    return node


def unflatten(pairs) -> dict:
    """One nested shape for flattened, partly nested or nested attributes.

    Keys are split at dots, digit segments index lists, and nested objects are split too,
    except free-form values such as ``document.metadata``.

    >>> unflatten({"retrieval.documents.0.document.content": "A", "retrieval.documents.1.document.id": 7})
    {'retrieval': {'documents': [{'document': {'content': 'A'}}, {'document': {'id': 7}}]}}
    >>> unflatten({"retrieval.documents": [{"document.content": "A", "document.metadata": {"a.b": 1}}]})
    {'retrieval': {'documents': [{'document': {'content': 'A', 'metadata': {'a.b': 1}}}]}}
    """
    node: dict = {}
    for key, value in (pairs.items() if isinstance(pairs, dict) else pairs):
        _put(node, str(key).split("."), value)
    out = _finish(node)
    return out if isinstance(out, dict) else {}


def _dig(obj, *path):
    for key in path:
        if isinstance(obj, dict):
            obj = obj.get(key)
        elif isinstance(obj, list) and isinstance(key, int) and -len(obj) <= key < len(obj):
            obj = obj[key]
        else:
            return None
    return obj


def _any_value(v):
    """An OTLP JSON AnyValue as a plain value."""
    if not isinstance(v, dict):
        return v
    for key in ("stringValue", "boolValue", "doubleValue", "bytesValue"):
        if key in v:
            return v[key]
    if "intValue" in v:
        try:
            return int(v["intValue"])
        except (TypeError, ValueError):
            return v["intValue"]
    if "arrayValue" in v:
        return [_any_value(x) for x in (v["arrayValue"] or {}).get("values") or []]
    if "kvlistValue" in v:
        return {kv.get("key"): _any_value(kv.get("value")) for kv in (v["kvlistValue"] or {}).get("values") or []}
    return None


def _attribute_pairs(value) -> list:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return []
    if isinstance(value, dict):
        return list(value.items())
    if isinstance(value, list):
        return [(a["key"], _any_value(a.get("value"))) for a in value if isinstance(a, dict) and "key" in a]
    return []


# --------------------------------------------------------------------------------------------
# Small readers
# --------------------------------------------------------------------------------------------

def _first(*values):
    for v in values:
        if v is not None and v != "":
            return v
    return None


def _str(v) -> Optional[str]:
    if v is None or v == "" or isinstance(v, bool):
        return None
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    return str(v)


def _number(v) -> Optional[float]:
    if isinstance(v, bool) or v is None:
        return None
    if isinstance(v, str):
        try:
            v = float(v)
        except ValueError:
            return None
    if isinstance(v, (int, float)) and math.isfinite(v):
        return float(v)
    return None


def _int(v) -> Optional[int]:
    n = _number(v)
    return int(n) if n is not None and n.is_integer() and n >= 0 else None


def _json(v, literal: bool = False):
    """A JSON string parsed (with ``literal``, a Python literal too); other values unchanged."""
    if isinstance(v, str) and v.strip()[:1] in ("{", "["):
        try:
            return json.loads(v)
        except (ValueError, RecursionError):
            if literal and len(v) < 100_000:
                try:
                    return ast.literal_eval(v)
                except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                    pass
    return v


def _squash(text: str) -> str:
    return " ".join(text.split())


def _snippet(text: str) -> str:
    return _squash(text)[:80]


_QUERY_KEYS = ("query", "question", "input", "query_str", "user_input", "q", "text", "message")


def _query_from(value) -> Optional[str]:
    """The question in a logged input: a string, or the usual field of a JSON object."""
    value = _json(value)
    if isinstance(value, str):
        return value.strip() or None
    if isinstance(value, dict):
        for key in _QUERY_KEYS:
            found = _query_from(value[key]) if key in value and not isinstance(value[key], dict) else None
            if found:
                return found
        if "messages" in value:
            return _query_from(value["messages"])
        args = value.get("args")
        if isinstance(args, list):  # Langfuse @observe: {"args": [...], "kwargs": {...}}
            for a in args:
                if isinstance(a, str) and a.strip():
                    return a.strip()
        if isinstance(value.get("kwargs"), dict):
            return _query_from(value["kwargs"])
        return None
    if isinstance(value, list):
        users = [m for m in value if isinstance(m, dict) and m.get("role") in ("user", "human")]
        if users:
            return _content_text(users[-1].get("content"))
    return None


def _content_text(content) -> Optional[str]:
    """Message content as text: a string, or the text parts of a content list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            part = part.get("message_content", part) if isinstance(part, dict) else part
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, dict) and isinstance(part.get("text"), str):
                parts.append(part["text"])
        return "\n".join(parts) if parts else None
    if isinstance(content, dict) and isinstance(content.get("text"), str):
        return content["text"]
    return None


def _joined(messages: list[tuple[str, str]]) -> str:
    return "\n\n".join(f"{role}: {text}" for role, text in messages)


def _count_docs_in(text: Optional[str], docs: list[dict]) -> int:
    if not text:
        return 0
    flat = _squash(text)
    return sum(1 for d in docs if isinstance(d.get("content"), str) and _snippet(d["content"])
               and _snippet(d["content"]) in flat)


def _timestamp(v) -> Optional[float]:
    if isinstance(v, bool):
        return None
    if isinstance(v, (int, float)):
        return float(v)
    if isinstance(v, str):
        s = v.strip()
        if re.fullmatch(r"\d+(\.\d+)?", s):
            return float(s)
        try:
            dt = datetime.fromisoformat(s.replace("Z", "+00:00").replace(" ", "T", 1))
        except ValueError:
            return None
        if dt.tzinfo is None:
            dt = dt.replace(tzinfo=timezone.utc)
        return dt.timestamp()
    return None


def _time_order(items: list, start, index) -> list:
    """``items`` by start time when every one has a readable time, else in file order."""
    times = [_timestamp(start(x)) for x in items]
    if all(t is not None for t in times):
        return [x for _, x in sorted(zip(times, items), key=lambda tx: (tx[0], index(tx[1])))]
    return sorted(items, key=index)


def _listing(items: list[str], most: int = 8) -> str:
    return ", ".join(items[:most]) + (f" and {len(items) - most} more" if len(items) > most else "")


# --------------------------------------------------------------------------------------------
# Documents -> candidates (shared by both formats)
# --------------------------------------------------------------------------------------------

_PROMOTED = ("title", "section", "date", "version", "source_type")


def _document(item, where: str, source: str) -> dict:
    """One logged document as {content, id, score, metadata, where}."""
    d = item
    if isinstance(item, dict) and isinstance(item.get("document"), dict):
        d = item["document"]
    if isinstance(d, str):
        d = {"content": d}
    if not isinstance(d, dict):
        raise InputError(f"a document must be an object, found {type(d).__name__}", source=source, field=where)
    metadata = _json(d.get("metadata"), literal=True)
    if metadata is not None and not isinstance(metadata, dict):
        metadata = {"metadata": metadata}
    return {"content": d.get("content"), "id": d.get("id"), "score": d.get("score"),
            "metadata": dict(metadata or {}), "where": where}


def _unique_ids(docs: list[dict]) -> list[str]:
    raw = [_str(d.get("id")) for d in docs]
    counts = Counter(r for r in raw if r is not None)
    used = {r for r in raw if r is not None and counts[r] == 1}
    seen: Counter = Counter()
    out = []
    for n, r in enumerate(raw, 1):
        if r is not None and counts[r] == 1:
            out.append(r)
            continue
        if r is None:
            base = f"doc-{n}"
        else:
            seen[r] += 1
            base = r if seen[r] == 1 else f"{r}#{seen[r]}"
        cid, k = base, 2
        while cid in used:
            cid, k = f"{base}#{k}", k + 1
        used.add(cid)
        out.append(cid)
    return out


def _candidates(docs: list[dict], source: str):
    """Candidates from documents (already in rank order); ``extra`` goes into metadata."""
    ids = _unique_ids(docs)
    out = []
    for i, (d, cid) in enumerate(zip(docs, ids)):
        text = d.get("content")
        if text is None or (isinstance(text, str) and not text.strip()):
            raise InputError("the document has no text (document.content is empty or missing; the export may "
                             "hide retrieval text)", source=source, field=d["where"])
        if not isinstance(text, str):
            text = json.dumps(text, ensure_ascii=False)
        meta = d["metadata"]
        item: dict[str, Any] = {"id": cid, "text": text, "score": d.get("rank_score"),
                                "metadata": {**meta, **d.get("extra", {})}}
        doc_id = _str(_first(meta.get("doc_id"), meta.get("document_id"), meta.get("ref_doc_id"), d.get("id")))
        if doc_id is not None:
            item["doc_id"] = doc_id
        for name in _PROMOTED:
            v = meta.get(name)
            if isinstance(v, str) and v.strip():
                item[name] = v
            elif name in ("date", "version") and _number(v) is not None:
                item[name] = _str(v)
        chunk = meta.get("chunk_index")
        if isinstance(chunk, int) and not isinstance(chunk, bool) and chunk >= 0:
            item["chunk_index"] = chunk
        cand, _, _ = candidate(item, i, d["where"], {"source": source, "line": None})
        out.append(cand)
    return tuple(out)


def _match_key(d: dict):
    i = _str(d.get("id"))
    if i is not None:
        return ("id", i)
    c = d.get("content")
    return ("text", _squash(c)) if isinstance(c, str) else ("none", id(d))


def _rank_documents(retrieved: list[dict], rer_in: list[dict], rer_out: Optional[list[dict]],
                    warnings: list[str]) -> list[dict]:
    """Put documents in rank order and set the score to rank by (``rank_score``); see module doc."""
    if rer_out is None:
        for pos, d in enumerate(retrieved, 1):
            d["rank_score"] = _number(d.get("score"))
            d.setdefault("extra", {})["retrieval_rank"] = pos
        scored = [d["rank_score"] for d in retrieved if d["rank_score"] is not None]
        if retrieved and not scored:
            warnings.append("documents carry no scores: ranked by retrieval order")
        elif len(scored) >= 3 and len(scored) == len(retrieved) and all(a < b for a, b in zip(scored, scored[1:])):
            warnings.append("document scores rise along the retrieval order: they may be distances (lower is "
                            "closer), in which case ranking by score reverses the retriever's order")
        return retrieved
    inputs = rer_in or retrieved
    waiting: dict = {}  # match key -> input documents not yet matched, in input order
    for pos, d in enumerate(inputs, 1):
        waiting.setdefault(_match_key(d), []).append((pos, d))
    out, consumed = [], set()
    for pos, d in enumerate(rer_out, 1):
        d["rank_score"] = _number(d.get("score"))
        extra = d.setdefault("extra", {})
        extra["reranker_rank"] = pos
        if waiting.get(_match_key(d)):
            in_pos, src = waiting[_match_key(d)].pop(0)
            consumed.add(id(src))
            extra["retrieval_rank"] = in_pos
            if _number(src.get("score")) is not None:
                extra["retrieval_score"] = _number(src.get("score"))
            if not d["metadata"] and src["metadata"]:
                d["metadata"] = dict(src["metadata"])
            if d.get("content") is None:
                d["content"] = src.get("content")
        out.append(d)
    if rer_out and all(d["rank_score"] is None for d in rer_out):
        warnings.append("the reranker output carries no scores: ranked by reranker order")
    dropped = 0
    for in_pos, d in enumerate(inputs, 1):
        if id(d) in consumed:
            continue
        d["rank_score"] = None
        d.setdefault("extra", {}).update({"reranker": "not in output", "retrieval_rank": in_pos})
        if _number(d.get("score")) is not None:
            d["extra"]["retrieval_score"] = _number(d.get("score"))
        out.append(d)
        dropped += 1
    if rer_in:  # retrieved documents the reranker never saw
        seen = {_match_key(d) for d in rer_in} | {_match_key(d) for d in rer_out}
        for pos, d in enumerate(retrieved, 1):
            if _match_key(d) not in seen:
                d["rank_score"] = None
                d.setdefault("extra", {}).update({"reranker": "not in input", "retrieval_rank": pos})
                out.append(d)
    if dropped:
        warnings.append(f"the reranker dropped {dropped} of {len(inputs)} documents: they follow the reranked "
                        f"ones, unscored (metadata reranker = 'not in output')")
    return out


# --------------------------------------------------------------------------------------------
# Model, messages and the parts of a request (shared)
# --------------------------------------------------------------------------------------------

_MAX_TOKENS = ("max_tokens", "max_completion_tokens", "max_output_tokens", "maxTokens", "max_new_tokens")


def _settings(model: Optional[str], params, unmapped: list[str], warnings: list[str]) -> dict:
    config: dict = {}
    if model:
        try:
            encoding_for_model(model)
        except KeyError:
            warnings.append(f"model {model!r} has no known tokenizer: token counts use the default "
                            f"{Config().encoding} encoding")
            unmapped.append(f"model {model!r} (no known tokenizer)")
        else:
            config["model"] = model
    params = _json(params)
    if isinstance(params, dict):
        rest = []
        for key, value in params.items():
            if key in _MAX_TOKENS and "max_output" not in config:
                n = _int(value)
                if n and n < Config().window:
                    config["max_output"] = n
                    continue
            if key in ("model", "model_name") or value is None:
                continue
            rest.append(key)
        if rest:
            unmapped.append(f"model parameters {', '.join(rest)}")
    return config


def _request_parts(messages: list[tuple[str, str]], docs: list[dict], unmapped: list[str]):
    """System text and earlier turns of the logged request, unless they carry retrieved passages."""
    system, history = "", ()
    sys_msgs = [text for role, text in messages if role in ("system", "developer")]
    if sys_msgs:
        joined = "\n\n".join(sys_msgs)
        if _count_docs_in(joined, docs):
            unmapped.append("the system message (it carries the retrieved passages; ctxcore builds its own "
                            "evidence block)")
        else:
            system = joined
    users = [i for i, (role, _) in enumerate(messages) if role in ("user", "human")]
    if users:
        turns = [(role, text) for role, text in messages[: users[-1]] if role not in ("system", "developer")]
        if turns:
            if any(_count_docs_in(text, docs) for _, text in turns):
                unmapped.append(f"{len(turns)} earlier chat turns (they carry retrieved passages)")
            else:
                history = tuple({"role": "assistant" if role in ("assistant", "ai") else "user", "content": text}
                                for role, text in turns)
    return system, history


def _finish_loaded(fmt: str, source: str, docs: list[dict], query: Optional[str], inputs: Inputs, config: dict,
                   logged: dict, warnings: list[str]) -> Loaded:
    cands = _candidates(docs, source)
    if not query:
        warnings.append("the trace holds no question: give one before building")
    if logged["unmapped"]:
        warnings.append(f"not mapped from the {fmt} trace: {_listing(logged['unmapped'], 5)}")
    return Loaded(cands, query or "", inputs, config, fmt, source, None, {"logged": logged}, tuple(warnings))


# --------------------------------------------------------------------------------------------
# OpenInference
# --------------------------------------------------------------------------------------------

@dataclass
class _Span:
    index: int
    trace_id: Optional[str]
    span_id: Optional[str]
    parent_id: Optional[str]
    name: str
    kind: str
    start: Any
    attrs: dict = field(default_factory=dict)

    def label(self) -> str:
        return f"{self.kind or 'span'} '{self.name}'"


_SPAN_FIELDS = ("span_kind", "spanKind", "context.span_id", "context.trace_id", "spanId", "parentSpanId")


def _is_span(obj) -> bool:
    if not isinstance(obj, dict) or "text" in obj or "candidates" in obj:
        return False
    if any(k in obj for k in _SPAN_FIELDS):
        return True
    ctx = obj.get("context")
    if isinstance(ctx, dict) and {"span_id", "trace_id", "spanId", "traceId"} & set(ctx):
        return True
    if any(isinstance(k, str) and k.startswith("attributes.") for k in obj):
        return True
    attrs = obj.get("attributes")
    if isinstance(attrs, dict):
        return "openinference.span.kind" in attrs or isinstance(attrs.get("openinference"), dict)
    if isinstance(attrs, list):
        return any(isinstance(a, dict) and a.get("key") == "openinference.span.kind" for a in attrs)
    return False


_INDEX_FIELD = "context.span_id"  # the index of get_spans_dataframe()


def _columns_to_records(data: dict) -> Optional[list]:
    """pandas ``to_json`` in ``columns`` or ``split`` orient, as records."""
    if isinstance(data.get("columns"), list) and isinstance(data.get("data"), list) \
            and all(isinstance(r, list) for r in data["data"]):
        cols = [str(c) for c in data["columns"]]
        index = data.get("index") if isinstance(data.get("index"), list) else None
        rows = []
        for i, row in enumerate(data["data"]):
            rec = dict(zip(cols, row))
            if index is not None and _INDEX_FIELD not in rec and i < len(index):
                rec[_INDEX_FIELD] = index[i]
            rows.append(rec)
        return rows if any(_is_span(r) for r in rows) else None
    if data and all(isinstance(v, dict) for v in data.values()) \
            and any(k in data for k in ("span_kind", "context.trace_id", "context.span_id", "parent_id",
                                        "attributes.openinference.span.kind")):
        index = list(dict.fromkeys(k for col in data.values() for k in col))
        rows = []
        for idx in index:
            rec = {col: values.get(idx) for col, values in data.items()}
            if _INDEX_FIELD not in data:
                rec[_INDEX_FIELD] = idx
            rows.append(rec)
        return rows
    return None


def _span_records(data) -> Optional[list]:
    """The span objects in parsed JSON (or JSONL objects), or None when it holds none."""
    if isinstance(data, list):
        if data and any(_is_span(x) for x in data) and not any(isinstance(x, dict) and "text" in x for x in data):
            return data
        return None
    if not isinstance(data, dict) or "candidates" in data or "format" in data:
        return None
    if isinstance(data.get("resourceSpans"), list):  # OTLP JSON
        spans = []
        for rs in data["resourceSpans"]:
            for ss in (rs or {}).get("scopeSpans") or (rs or {}).get("instrumentationLibrarySpans") or []:
                spans.extend((ss or {}).get("spans") or [])
        return spans or None
    for key in ("spans", "data"):
        if isinstance(data.get(key), list):
            found = _span_records(data[key])
            if found is not None:
                return found
    rows = _columns_to_records(data)
    if rows is not None:
        return rows
    return [data] if _is_span(data) else None


def _parse_spans(records: list, source: str) -> list[_Span]:
    spans = []
    for i, raw in enumerate(records):
        if not isinstance(raw, dict):
            raise InputError(f"span {i + 1} is a {type(raw).__name__}, not an object", source=source,
                             field=f"spans[{i}]")
        top: dict = {}
        attrs: dict = {}
        for key, value in raw.items():
            key = str(key)
            if key == "attributes":
                for k, v in _attribute_pairs(value):
                    _put(attrs, str(k).split("."), v)
            elif key.startswith("attributes."):
                _put(attrs, key[len("attributes."):].split("."), value)
            else:
                _put(top, key.split("."), value)
        top, attrs = _finish(top), _finish(attrs)
        top = top if isinstance(top, dict) else {}
        ctx = top.get("context") if isinstance(top.get("context"), dict) else {}
        kind = _first(top.get("span_kind"), top.get("spanKind"), _dig(attrs, "openinference", "span", "kind"))
        kind = str(kind).upper() if kind is not None else ""
        spans.append(_Span(
            index=i,
            trace_id=_str(_first(ctx.get("trace_id"), ctx.get("traceId"), top.get("trace_id"), top.get("traceId"))),
            span_id=_str(_first(ctx.get("span_id"), ctx.get("spanId"), top.get("span_id"), top.get("spanId"))),
            parent_id=_str(_first(top.get("parent_id"), top.get("parentId"), top.get("parent_span_id"),
                                  top.get("parentSpanId"))),
            name=str(_first(top.get("name"), kind.lower(), f"span {i + 1}")),
            kind=kind,
            start=_first(top.get("start_time"), top.get("startTime"), top.get("startTimeUnixNano")),
            attrs=attrs if isinstance(attrs, dict) else {}))
    return spans


def _retrieved(span: _Span) -> list:
    docs = _dig(span.attrs, "retrieval", "documents")
    return docs if isinstance(docs, list) else []


def _reranked(span: _Span, which: str) -> Optional[list]:
    docs = _dig(span.attrs, "reranker", which)
    return docs if isinstance(docs, list) else None


def _is_retriever(span: _Span) -> bool:
    return span.kind == "RETRIEVER" or bool(_retrieved(span))


def _is_reranker(span: _Span) -> bool:
    return span.kind == "RERANKER" or _dig(span.attrs, "reranker") is not None


def _has_documents(span: _Span) -> bool:
    return bool(_retrieved(span) or _reranked(span, "output_documents") or _reranked(span, "input_documents"))


def _outermost(spans: list[_Span], members: list[_Span]) -> list[_Span]:
    """``members`` without those nested under another member."""
    by_id = {s.span_id: s for s in spans if s.span_id is not None}
    ids = {id(m) for m in members}
    out = []
    for m in members:
        parent, hops = by_id.get(m.parent_id), 0
        while parent is not None and id(parent) not in ids and hops < len(spans):
            parent, hops = by_id.get(parent.parent_id), hops + 1
        if parent is None:
            out.append(m)
    return out


def _select(groups: dict, trace_id: Optional[str], has_docs, what: str, source: str):
    """The trace to show: the one asked for, else the first that retrieved documents."""
    ids = [t for t in groups if t is not None]
    if trace_id is not None:
        if str(trace_id) not in groups:
            raise InputError(f"{what} {trace_id!r} is not in the file; it holds: {_listing(ids) or 'no trace ids'}",
                             source=source, field="trace_id")
        return str(trace_id)
    for tid, members in groups.items():
        if has_docs(members):
            return tid
    return next(iter(groups))


def _load_openinference(spans: list[_Span], source: str, trace_id: Optional[str]) -> Loaded:
    for s in spans:
        for path in (("retrieval", "documents"), ("reranker", "input_documents"), ("reranker", "output_documents")):
            docs = _dig(s.attrs, *path)
            if docs is not None and not isinstance(docs, list):
                raise InputError(f"{s.label()}: the documents must be a list (indexed 0, 1, 2, ...)",
                                 source=source, field=".".join(path))
    groups: dict = {}
    for s in spans:
        groups.setdefault(s.trace_id, []).append(s)
    chosen = _select(groups, trace_id, lambda ss: any(
        (_is_retriever(s) or _is_reranker(s)) and _has_documents(s) for s in ss), "trace", source)
    trace = groups[chosen]
    warnings: list[str] = []
    unmapped: list[str] = []
    ids = [t for t in groups if t is not None]
    if len(groups) > 1:
        warnings.append(f"file holds {len(groups)} traces; showing {chosen}")

    ordered = _time_order(trace, lambda s: s.start, lambda s: s.index)
    retrievers = _outermost(trace, [s for s in ordered if _is_retriever(s)])
    rerankers = [s for s in ordered if _is_reranker(s)]
    if not retrievers and not rerankers:
        scope = trace if trace_id is not None else spans
        kinds = list(dict.fromkeys(s.kind or "unknown" for s in scope))
        where = f" in trace {chosen}" if trace_id is not None and len(groups) > 1 else ""
        raise InputError(f"no RETRIEVER or RERANKER span with documents{where}; found span kinds: "
                         f"{', '.join(kinds)} (without a retriever step there are no candidates to replay)",
                         source=source)
    with_docs = [s for s in retrievers if _retrieved(s)]
    if len(with_docs) > 1:
        warnings.append(f"{len(with_docs)} retriever spans: their documents are combined in time order")
    for s in retrievers:
        if not _retrieved(s):
            warnings.append(f"the {s.label()} span holds no documents")

    retrieved: list[dict] = []
    for s in with_docs:
        for j, item in enumerate(_retrieved(s)):
            d = _document(item, f"{s.name}.retrieval.documents[{j}]", source)
            if len(with_docs) > 1:
                d["metadata"].setdefault("span", s.name)
            retrieved.append(d)
    reranker = next((s for s in reversed(rerankers) if _reranked(s, "output_documents")), None)
    reranker = reranker or next((s for s in reversed(rerankers) if _reranked(s, "input_documents")), None)
    rer_in, rer_out, rer_info = [], None, None
    if reranker is not None:
        rer_in = [_document(item, f"{reranker.name}.reranker.input_documents[{j}]", source)
                  for j, item in enumerate(_reranked(reranker, "input_documents") or [])]
        out_items = _reranked(reranker, "output_documents")
        if out_items is not None:
            rer_out = [_document(item, f"{reranker.name}.reranker.output_documents[{j}]", source)
                       for j, item in enumerate(out_items)]
        else:
            warnings.append(f"the {reranker.label()} span records no output documents: its input is ranked as "
                            f"retrieved")
            retrieved = retrieved or rer_in
            rer_in = []
        rer_info = {"span": reranker.name, "model": _dig(reranker.attrs, "reranker", "model_name"),
                    "top_k": _dig(reranker.attrs, "reranker", "top_k")}
    all_docs = retrieved + rer_in + (rer_out or [])

    # the question
    roots = [s for s in ordered if s.parent_id is None or s.parent_id not in {t.span_id for t in trace}]
    root = roots[0] if roots else (ordered[0] if ordered else None)
    query_from = None
    query = _query_from(_dig(reranker.attrs, "reranker", "query")) if reranker is not None else None
    if query:
        query_from = f"{reranker.name}: reranker.query"
    for s in ([*with_docs, *retrievers, *([reranker] if reranker else [])] if not query else []):
        query = _query_from(_dig(s.attrs, "input", "value"))
        if query:
            query_from = f"{s.name}: input.value"
            break
    if not query and root is not None:
        query = _query_from(_dig(root.attrs, "input", "value"))
        query_from = f"{root.name}: input.value" if query else None

    # what was sent and received
    llms = [s for s in ordered if s.kind == "LLM"]
    prompts = {id(s): _oi_prompt(s) for s in llms}
    llm = max(llms, key=lambda s: (_count_docs_in(prompts[id(s)][0], all_docs), ordered.index(s)), default=None)
    prompt_text = answer = model = prompt_tokens = None
    inputs = Inputs()
    config: dict = {}
    if llm is not None:
        prompt_text, messages = prompts[id(llm)]
        answer = _oi_answer(llm)
        attrs = llm.attrs
        params = _json(_dig(attrs, "llm", "invocation_parameters"))
        model = _str(_first(_dig(attrs, "llm", "model_name"), _dig(attrs, "llm", "response", "model_name"),
                            _dig(attrs, "llm", "request", "model_name"),
                            params.get("model") if isinstance(params, dict) else None,
                            params.get("model_name") if isinstance(params, dict) else None))
        prompt_tokens = _int(_dig(attrs, "llm", "token_count", "prompt"))
        config = _settings(model, params, unmapped, warnings)
        system, history = _request_parts(messages, all_docs, unmapped)
        tools = tuple(_oi_tool(t) for t in _dig(attrs, "llm", "tools") or [] if _oi_tool(t))
        inputs = Inputs(system=system, history=history, tools=tools)
        if _dig(attrs, "llm", "prompt_template", "template") is not None:
            unmapped.append(f"the prompt template of the {llm.label()} span")
        if prompt_text is None:
            unmapped.append(f"the prompt of the {llm.label()} span (no llm.input_messages or llm.prompts)")
    else:
        unmapped.append("the prompt and answer (no LLM span in the trace)")
    if answer is None and root is not None:
        answer = _text_of(_dig(root.attrs, "output", "value"))

    used = {id(s) for s in [*retrievers, *rerankers, *([llm] if llm else []), *([root] if root else [])]}
    spare = [s.label() for s in ordered if id(s) not in used]
    if spare:
        unmapped.append(f"spans not used: {_listing(spare)}")

    docs = _rank_documents(retrieved, rer_in, rer_out, warnings)
    logged = {"prompt_text": prompt_text, "prompt_tokens": prompt_tokens, "answer": answer, "model": model,
              "trace_id": chosen, "traces": ids, "unmapped": unmapped, "query_from": query_from,
              "llm_span": llm.name if llm else None, "retriever_spans": [s.name for s in with_docs],
              "reranker": rer_info}
    return _finish_loaded(OPENINFERENCE, source, docs, query, inputs, config, logged, warnings)


def _oi_messages(items) -> list[tuple[str, str]]:
    out = []
    for m in items if isinstance(items, list) else []:
        if not isinstance(m, dict):
            continue
        msg = m.get("message", m) if isinstance(m.get("message", m), dict) else m
        text = _content_text(msg.get("content"))
        if text is None:
            text = _content_text(msg.get("contents"))
        if text is None:
            calls = msg.get("tool_calls")
            text = json.dumps(calls, ensure_ascii=False) if calls else ""
        out.append((str(msg.get("role") or "user"), text))
    return out


def _oi_prompt(span: _Span) -> tuple[Optional[str], list[tuple[str, str]]]:
    messages = _oi_messages(_dig(span.attrs, "llm", "input_messages"))
    if messages:
        return _joined(messages), messages
    prompts = _dig(span.attrs, "llm", "prompts")
    if isinstance(prompts, list) and prompts:
        texts = [p if isinstance(p, str) else _dig(p, "prompt", "text") for p in prompts]
        texts = [t for t in texts if isinstance(t, str)]
        if texts:
            return "\n\n".join(texts), []
    value = _dig(span.attrs, "input", "value")
    parsed = _json(value)
    if isinstance(parsed, dict) and isinstance(parsed.get("messages"), list):
        messages = [(str(m.get("role") or "user"), _content_text(m.get("content")) or "")
                    for m in parsed["messages"] if isinstance(m, dict)]
        return (_joined(messages), messages) if messages else (None, [])
    return (value, []) if isinstance(value, str) else (None, [])


def _oi_answer(span: _Span) -> Optional[str]:
    messages = _oi_messages(_dig(span.attrs, "llm", "output_messages"))
    if messages:
        return "\n\n".join(text for _, text in messages)
    choices = _dig(span.attrs, "llm", "choices")
    if isinstance(choices, list):
        texts = [_dig(c, "completion", "text") for c in choices]
        texts = [t for t in texts if isinstance(t, str)]
        if texts:
            return "\n\n".join(texts)
    return _text_of(_dig(span.attrs, "output", "value"))


def _oi_tool(item) -> Optional[str]:
    tool = item.get("tool", item) if isinstance(item, dict) else item
    if isinstance(tool, dict):
        schema = tool.get("json_schema")
        if isinstance(schema, str):
            return schema
        return json.dumps(schema if schema is not None else tool, ensure_ascii=False, indent=2)
    return tool if isinstance(tool, str) else None


def _text_of(value) -> Optional[str]:
    """An answer from an output value: the text, or the usual field of JSON output."""
    parsed = _json(value)
    if isinstance(parsed, str):
        return parsed
    if isinstance(parsed, dict):
        for key in ("content", "answer", "output", "text", "response", "result", "completion"):
            if isinstance(parsed.get(key), str):
                return parsed[key]
        msg = _dig(parsed, "choices", 0, "message")
        if isinstance(msg, dict):
            return _content_text(msg.get("content"))
        if isinstance(parsed.get("message"), dict):
            return _content_text(parsed["message"].get("content"))
        return json.dumps(parsed, ensure_ascii=False)
    if isinstance(parsed, list):
        said = [m for m in parsed if isinstance(m, dict) and m.get("role") in ("assistant", "ai")]
        if said:
            return _content_text(said[-1].get("content"))
        return json.dumps(parsed, ensure_ascii=False)
    return None


# --------------------------------------------------------------------------------------------
# Langfuse
# --------------------------------------------------------------------------------------------

_LF_TYPES = frozenset({"SPAN", "GENERATION", "EVENT", "AGENT", "TOOL", "CHAIN", "RETRIEVER", "EVALUATOR",
                       "EMBEDDING", "GUARDRAIL"})


@dataclass
class _LfTrace:
    id: Optional[str]
    trace: dict
    observations: list


def _is_observation(obj) -> bool:
    return (isinstance(obj, dict) and isinstance(obj.get("type"), str) and obj["type"].upper() in _LF_TYPES
            and ("traceId" in obj or "parentObservationId" in obj or "startTime" in obj)
            and "text" not in obj and not _is_span(obj))


def _is_lf_trace(obj) -> bool:
    return isinstance(obj, dict) and isinstance(obj.get("observations"), list) and "candidates" not in obj \
        and "format" not in obj


def _langfuse_traces(data, source: str) -> Optional[list[_LfTrace]]:
    """The Langfuse traces in parsed JSON, or None when it is not a Langfuse export."""
    if isinstance(data, dict) and isinstance(data.get("data"), list) and "observations" not in data:
        return _langfuse_traces(data["data"], source)
    if _is_lf_trace(data):
        trace = data["trace"] if isinstance(data.get("trace"), dict) else data
        obs = data["observations"]
        if obs and all(isinstance(o, str) for o in obs):
            raise InputError("this Langfuse trace lists observation ids only; export it with its observations "
                             "(GET /api/public/traces/{traceId})", source=source, field="observations")
        if obs and not any(_is_observation(o) for o in obs):
            return None
        return [_LfTrace(_str(trace.get("id")), trace, [o for o in obs if isinstance(o, dict)])]
    if isinstance(data, list) and data:
        if all(_is_lf_trace(x) for x in data):
            return [t for x in data for t in _langfuse_traces(x, source) or []] or None
        if any(_is_observation(x) for x in data) and all(isinstance(x, dict) and "text" not in x for x in data):
            groups: dict = {}
            for o in data:
                groups.setdefault(_str(o.get("traceId")), []).append(o)
            return [_LfTrace(tid, {"id": tid} if tid else {}, obs) for tid, obs in groups.items()]
    return None


def _lf_name(o: dict) -> str:
    return f"{str(o.get('type') or 'observation').upper()} '{o.get('name') or o.get('id') or '?'}'"


def _lf_documents(value) -> Optional[list]:
    """The documents in a retriever output, or None when it does not look like documents."""
    value = _json(value)
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
        text = _first(*(node.get(k) for k in ("page_content", "pageContent", "text", "content", "document", "chunk")
                        if isinstance(node.get(k), str)))
        metadata = _json(node.get("metadata"), literal=True)
        if not isinstance(metadata, dict):
            metadata = {} if metadata is None else {"metadata": metadata}
        metadata = dict(metadata)  # a copy: the caller's parsed JSON is never changed
        score = _first(_number(item.get("score")), _number(node.get("score")), _number(item.get("relevance_score")),
                       _number(metadata.get("relevance_score")), _number(metadata.get("score")))
        docs.append({"content": text, "id": _first(node.get("id"), node.get("id_"), node.get("doc_id")),
                     "score": score, "metadata": metadata})
    return docs


def _lf_is_retriever(o: dict) -> bool:
    if str(o.get("type", "")).upper() == "RETRIEVER":
        return True
    if "retriev" in str(o.get("name") or "").lower() and _lf_documents(o.get("output")) is not None:
        return True
    out = _json(o.get("output"))  # LangChain documents are unmistakable whatever the observation is called
    return isinstance(out, list) and bool(out) and all(isinstance(d, dict) and "page_content" in d for d in out)


def _lf_messages(value) -> Optional[list[tuple[str, str]]]:
    value = _json(value)
    if isinstance(value, dict) and isinstance(value.get("messages"), list):
        value = value["messages"]
    if isinstance(value, list) and value and all(isinstance(m, dict) and "role" in m for m in value):
        return [(str(m.get("role")), _content_text(m.get("content")) or
                 (json.dumps(m.get("tool_calls"), ensure_ascii=False) if m.get("tool_calls") else ""))
                for m in value]
    return None


def _lf_prompt(o: dict) -> tuple[Optional[str], list[tuple[str, str]]]:
    value = o.get("input")
    messages = _lf_messages(value)
    if messages is not None:
        return _joined(messages), messages
    value = _json(value)
    if isinstance(value, str):
        return value, []
    if isinstance(value, dict) and isinstance(value.get("prompt"), str):
        return value["prompt"], []
    if value is None:
        return None, []
    return json.dumps(value, ensure_ascii=False, indent=2), []


def _lf_tokens(o: dict) -> Optional[int]:
    details = _json(o.get("usageDetails"))
    usage = o.get("usage") if isinstance(o.get("usage"), dict) else {}
    details = details if isinstance(details, dict) else {}
    return _first(_int(details.get("input")), _int(details.get("prompt_tokens")), _int(details.get("input_tokens")),
                  _int(usage.get("input")), _int(usage.get("promptTokens")), _int(o.get("promptTokens")),
                  _int(o.get("inputUsage")))


def _load_langfuse(traces: list[_LfTrace], source: str, trace_id: Optional[str]) -> Loaded:
    groups = {t.id: t for t in traces}
    if len(groups) < len(traces):  # repeated or missing ids: key by position instead
        groups = {t.id if t.id is not None else f"#{i + 1}": t for i, t in enumerate(traces)}
    chosen = _select(groups, trace_id, lambda t: any(_lf_is_retriever(o) for o in t.observations), "trace", source)
    lf = groups[chosen]
    warnings: list[str] = []
    unmapped: list[str] = []
    if len(groups) > 1:
        warnings.append(f"file holds {len(groups)} traces; showing {chosen}")
    trace, index = lf.trace, {id(o): i for i, o in enumerate(lf.observations)}
    obs = _time_order(lf.observations, lambda o: o.get("startTime"), lambda o: index[id(o)])
    by_id = {o.get("id"): o for o in obs if o.get("id") is not None}

    members = [o for o in obs if _lf_is_retriever(o)]
    ids = {id(o) for o in members}
    retrievers = []
    for o in members:  # outermost only
        parent, hops = by_id.get(o.get("parentObservationId")), 0
        while parent is not None and id(parent) not in ids and hops < len(obs):
            parent, hops = by_id.get(parent.get("parentObservationId")), hops + 1
        if parent is None:
            retrievers.append(o)
    if not retrievers:
        kinds = list(dict.fromkeys(_lf_name(o) for o in obs))
        raise InputError(f"no RETRIEVER observation (or span named like 'retrieve…') with documents; found: "
                         f"{_listing(kinds) or 'no observations'}", source=source, field="observations")
    retrieved: list[dict] = []
    with_docs, origin = [], []
    for o in retrievers:
        found = _lf_documents(o.get("output"))
        if found is None:
            raise InputError(f"the output of {_lf_name(o)} is not a list of documents (expected strings, "
                             f"LangChain documents or objects with content/text)", source=source,
                             field=f"observations[{index[id(o)]}].output")
        if not found:
            warnings.append(f"{_lf_name(o)} returned no documents")
            continue
        with_docs.append(o)
        for j, d in enumerate(found):
            d["where"] = f"observations[{index[id(o)]}].output[{j}]"
            retrieved.append(d)
            origin.append(o.get("name"))
    if len(with_docs) > 1:
        warnings.append(f"{len(with_docs)} retriever observations: their documents are combined in time order")
        for d, name in zip(retrieved, origin):
            d["metadata"].setdefault("span", name)

    query, query_from = None, None
    for o in retrievers:
        query = _query_from(o.get("input"))
        if query:
            query_from = f"{o.get('name')}: input"
            break
    if not query:
        query = _query_from(trace.get("input"))
        query_from = "trace input" if query else None

    gens = [o for o in obs if str(o.get("type", "")).upper() == "GENERATION"]
    prompts = {id(g): _lf_prompt(g) for g in gens}
    gen = max(gens, key=lambda g: (_count_docs_in(prompts[id(g)][0], retrieved), obs.index(g)), default=None)
    prompt_text = answer = model = prompt_tokens = None
    inputs, config = Inputs(), {}
    if gen is not None:
        prompt_text, messages = prompts[id(gen)]
        answer = _text_of(gen.get("output"))
        model = _str(gen.get("model"))
        prompt_tokens = _lf_tokens(gen)
        config = _settings(model, gen.get("modelParameters"), unmapped, warnings)
        system, history = _request_parts(messages, retrieved, unmapped)
        inputs = Inputs(system=system, history=history)
        if gen.get("promptName"):
            unmapped.append(f"the managed prompt {gen['promptName']!r} (version {gen.get('promptVersion')})")
    else:
        unmapped.append("the prompt and answer (no GENERATION observation)")
    if answer is None:
        answer = _text_of(trace.get("output"))

    used = {id(o) for o in [*retrievers, *([gen] if gen else [])]}
    spare = [_lf_name(o) for o in obs if id(o) not in used]
    if spare:
        unmapped.append(f"observations not used: {_listing(spare)}")
    meta = _json(trace.get("metadata"))
    if isinstance(meta, dict) and meta:
        unmapped.append(f"trace metadata ({', '.join(map(str, meta))})")
    scores = trace.get("scores")
    if isinstance(scores, list) and scores:
        names = [f"{s.get('name')}={s.get('value', s.get('stringValue'))}" for s in scores if isinstance(s, dict)]
        unmapped.append(f"scores ({_listing(names)})")
    if trace.get("tags"):
        unmapped.append(f"tags ({', '.join(map(str, trace['tags']))})")

    docs = _rank_documents(retrieved, [], None, warnings)
    logged = {"prompt_text": prompt_text, "prompt_tokens": prompt_tokens, "answer": answer, "model": model,
              "trace_id": lf.id, "traces": [t for t in groups if t is not None], "unmapped": unmapped,
              "query_from": query_from, "llm_span": gen.get("name") if gen else None,
              "retriever_spans": [o.get("name") for o in with_docs], "reranker": None}
    return _finish_loaded(LANGFUSE, source, docs, query, inputs, config, logged, warnings)
