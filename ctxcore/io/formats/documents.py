"""Logged documents become candidates: unique ids, promoted metadata, and the rank order
(reranker output first, then what it dropped, unscored); see the package docstring for the rules."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any, Optional

from ...errors import InputError
from ..limits import MAX_CANDIDATES
from ..reading import candidate
from ...records import Candidate
from .values import as_number, as_str, first, json_value, squash

_PROMOTED = ("title", "section", "date", "version", "source_type")


def document(item, where: str, source: str) -> dict:
    """One logged document as {content, id, score, metadata, where}."""
    d = item
    if isinstance(item, dict) and isinstance(item.get("document"), dict):
        d = item["document"]
    if isinstance(d, str):
        d = {"content": d}
    if not isinstance(d, dict):
        raise InputError(f"a document must be an object, found {type(d).__name__}", source=source, field=where)
    metadata = json_value(d.get("metadata"), literal=True)
    if metadata is not None and not isinstance(metadata, dict):
        metadata = {"metadata": metadata}
    return from_metadata({"content": d.get("content"), "id": d.get("id"), "score": d.get("score"),
                          "metadata": dict(metadata or {}), "where": where})


_META_SCORES = ("score", "relevance_score", "similarity_score")


def from_metadata(doc: dict) -> dict:
    """``doc`` with its id and score taken from its metadata when it has none of its own: LangChain
    keeps them there (``Document.metadata``), and the OpenInference and OpenLLMetry instrumentors log
    only ``document.content`` and ``document.metadata``."""
    meta = doc["metadata"]
    if as_str(doc.get("id")) is None and isinstance(meta.get("id"), (str, int)) and as_str(meta["id"]) is not None:
        doc["id"] = meta["id"]
    if as_number(doc.get("score")) is None:
        score = first(*(as_number(meta.get(k)) for k in _META_SCORES))
        if score is not None:
            doc["score"] = score
    return doc


def unique_ids(docs: list[dict]) -> list[str]:
    raw = [as_str(d.get("id")) for d in docs]
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


def to_candidates(docs: list[dict], source: str):
    """Candidates from documents (already in rank order); ``extra`` goes into metadata."""
    if len(docs) > MAX_CANDIDATES:
        raise InputError(f"{len(docs)} documents; the limit is {MAX_CANDIDATES} candidates", source=source,
                         field="documents")
    ids = unique_ids(docs)
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
        doc_id = as_str(first(meta.get("doc_id"), meta.get("document_id"), meta.get("ref_doc_id"), d.get("id")))
        if doc_id is not None:
            item["doc_id"] = doc_id
        for name in _PROMOTED:
            v = meta.get(name)
            if isinstance(v, str) and v.strip():
                item[name] = v
            elif name in ("date", "version") and as_number(v) is not None:
                item[name] = as_str(v)
        chunk = meta.get("chunk_index")
        if isinstance(chunk, int) and not isinstance(chunk, bool) and chunk >= 0:
            item["chunk_index"] = chunk
        out.append(candidate(item, i, d["where"], {"source": source, "line": None}, (), Candidate)[0])
    return tuple(out)


def _match_key(d: dict):
    i = as_str(d.get("id"))
    if i is not None:
        return ("id", i)
    c = d.get("content")
    return ("text", squash(c)) if isinstance(c, str) else ("none", id(d))


def match_keys(docs: list[dict]) -> list:
    """How each document is matched to another step's: by id, else by its text."""
    return [_match_key(d) for d in docs]


def rank_documents(retrieved: list[dict], rer_in: list[dict], rer_out: Optional[list[dict]],
                   warnings: list[str]) -> list[dict]:
    """Put documents in rank order and set the score to rank by (``rank_score``); see module doc."""
    if rer_out is None:
        for pos, d in enumerate(retrieved, 1):
            d["rank_score"] = as_number(d.get("score"))
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
        d["rank_score"] = as_number(d.get("score"))
        extra = d.setdefault("extra", {})
        extra["reranker_rank"] = pos
        if waiting.get(_match_key(d)):
            in_pos, src = waiting[_match_key(d)].pop(0)
            consumed.add(id(src))
            extra["retrieval_rank"] = in_pos
            if as_number(src.get("score")) is not None:
                extra["retrieval_score"] = as_number(src.get("score"))
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
        if as_number(d.get("score")) is not None:
            d["extra"]["retrieval_score"] = as_number(d.get("score"))
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
