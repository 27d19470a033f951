"""One span's attributes with no envelope (an OpenInference or ``gen_ai.*`` attribute map copied
from a span view): read as that single span when it retrieved documents, otherwise refused with one
line naming the convention it follows and what it lacks."""

from __future__ import annotations

from typing import Optional

from ...errors import InputError
from ..loaded import Loaded
from .family import Family
from .openinference import load_spans
from .spans import parse_spans
from .values import dig

BARE = "span-attributes"
_PREFIXES = ("openinference.", "llm.", "input.", "output.", "retrieval.", "reranker.", "embedding.", "gen_ai.",
             "traceloop.", "session.", "metadata", "tag.", "tool.", "user.")


def _convention(data) -> Optional[str]:
    # a ctxcore input (candidates, format) never reaches here: the dispatch refuses it first
    if not isinstance(data, dict) or "attributes" in data:
        return None
    keys = [k for k in data if isinstance(k, str)]
    known = [k for k in keys if k.startswith(_PREFIXES) or k in ("openinference", "llm", "gen_ai", "retrieval")]
    if len(known) * 2 < len(keys) or not known:
        return None
    if any(k.startswith(("gen_ai", "traceloop")) for k in known) and \
            not any(k.startswith("openinference") for k in known):
        return "OpenTelemetry GenAI span attributes"
    return "OpenInference span attributes"


def _read(data, source: str, trace_id: Optional[str], texts: Optional[dict] = None) -> Loaded:
    name = _convention(data)
    spans = parse_spans([{"name": "span", "attributes": data}], source)
    span = spans[0]
    if dig(span.attrs, "retrieval", "documents") or dig(span.attrs, "reranker", "output_documents"):
        return load_spans(spans, source, trace_id, BARE, texts)
    kind = span.kind or "unknown"
    raise InputError(f"a single span's attributes, not a trace: closest format recognised: {name} (span kind "
                     f"{kind}), which lacks retrieval.documents (a retriever span); export the whole trace with "
                     f"every span (see the README's input formats)", source=source, field="retrieval.documents")


FAMILY = Family(BARE, matches=lambda data, source: _convention(data) is not None, load=_read,
                traces=lambda data: [])
