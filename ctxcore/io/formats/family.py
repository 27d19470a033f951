"""The seam every logged-trace format plugs into: a :class:`Family` says whether parsed JSON is
its shape, which traces it holds, and reads one; the helpers here are what every family ends with."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional

from ...errors import InputError
from ..loaded import Loaded
from ...records import Inputs, Logged
from .documents import match_keys, to_candidates
from .values import as_str, listing


@dataclass(frozen=True)
class Family:
    """One logged-trace format, as the dispatch sees it (all three take parsed JSON or JSONL objects)."""

    name: str
    matches: Callable[[Any, str], bool]  # (data, source): is this the family's shape?
    load: Callable[..., Loaded]  # (data, source, trace_id, texts=None): one trace as ctxcore input; texts maps
    #                              document ids to their text, for logs that recorded ids only
    traces: Callable[[Any], list[str]]  # (data): the trace ids it holds, in file order


def select_trace(groups: dict, trace_id: Optional[str], has_docs, what: str, source: str):
    """The trace to show: the one asked for, else the first that retrieved documents."""
    ids = [t for t in groups if t is not None]
    if trace_id is not None:
        if str(trace_id) not in groups:
            raise InputError(f"{what} {trace_id!r} is not in the file; it holds: {listing(ids) or 'no trace ids'}",
                             source=source, field="trace_id")
        return str(trace_id)
    for tid, members in groups.items():
        if has_docs(members):
            return tid
    return next(iter(groups))


def _fill_texts(docs: list[dict], texts: Optional[dict], source: str, warnings: list[str]) -> None:
    """Documents logged by id only take their text from the companion candidates; any still
    without text is refused, naming the first and saying how to supply the rest."""
    bare = [d for d in docs if d.get("content") is None or (isinstance(d.get("content"), str)
                                                            and not d["content"].strip())]
    if not bare:
        return
    filled = 0
    for d in bare:
        key = as_str(d.get("id"))
        if texts and key is not None and key in texts:
            d["content"] = texts[key]
            filled += 1
    if filled:
        warnings.append(f"the log recorded {len(bare)} documents by id only: took the text of {filled} from the "
                        f"candidates file")
    left = [d for d in bare if d.get("content") is None or not str(d["content"]).strip()]
    if left:
        named = [as_str(d.get("id")) for d in left if as_str(d.get("id")) is not None]
        how = (f"; {len(left)} of {len(docs)} documents carry only an id ({listing(named, 5)}): give their text "
               f"in a candidates file (id, text), with --candidates FILE or the app's second uploader"
               if named else "")
        raise InputError("the document has no text (document.content is empty or missing; the export may hide "
                         "retrieval text)" + how, source=source, field=left[0]["where"])


def _filtered(logged: dict, docs: list[dict], cands: tuple, filters: list[dict]) -> dict:
    """Filter steps (a step that took documents and returned some of them, in its order) recorded
    by candidate id: in ``reranker["filters"]``; without a reranker the last filter is the step
    that cut (``reranker`` names it, ``reranked`` is what it kept, ``reranker_cut`` the rest)."""
    id_of: dict = {}
    for key, c in zip(match_keys(docs), cands):
        id_of.setdefault(key, c.id)
    steps = [{"span": f["span"], "kept": [id_of[k] for k in match_keys(f["kept"]) if k in id_of]} for f in filters]
    if logged.get("reranker"):
        return {**logged, "reranker": {**logged["reranker"], "filters": steps}}
    kept = steps[-1]["kept"]
    return {**logged, "reranker": {"span": steps[-1]["span"], "model": None, "top_k": None, "step": "filter",
                                   "filters": steps},
            "reranked": kept, "reranker_cut": [c.id for c in cands if c.id not in set(kept)]}


def to_loaded(fmt: str, source: str, docs: list[dict], query: Optional[str], inputs: Inputs, config: dict,
              logged: dict, warnings: list[str], texts: Optional[dict] = None,
              filters: Optional[list[dict]] = None) -> Loaded:
    """What every family returns: candidates from its ranked documents, and what it could not map."""
    _fill_texts(docs, texts, source, warnings)
    cands = to_candidates(docs, source)
    if any("reranker_rank" in c.metadata for c in cands):
        ranked = sorted((c for c in cands if "reranker_rank" in c.metadata), key=lambda c: c.metadata["reranker_rank"])
        logged = {**logged, "reranked": [c.id for c in ranked],
                  "reranker_cut": [c.id for c in cands if c.metadata.get("reranker") == "not in output"]}
    if filters:
        logged = _filtered(logged, docs, cands, filters)
    if not query:
        warnings.append("the trace holds no question: give one before building")
    if logged["unmapped"]:
        warnings.append(f"not mapped from the {fmt} trace: {listing(logged['unmapped'], 5)}")
    record = Logged(format=fmt, **{k: tuple(v) if isinstance(v, list) else v for k, v in logged.items()})
    return Loaded(cands, query or "", inputs, config, fmt, source, None, {}, tuple(warnings), record)
