"""Logged traces from other tools, read as ctxcore input: one module per format family
(:mod:`.openinference` with :mod:`.spans`, :mod:`.langfuse`), the pieces they share
(:mod:`.values`, :mod:`.messages`, :mod:`.documents`), and the dispatch (:mod:`.shapes`, whose
``FAMILIES`` lists them; :mod:`.family` is the seam).

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

from .family import Family
from .langfuse import LANGFUSE
from .langfuse import trace_ids as langfuse_traces
from .openinference import OPENINFERENCE
from .openinference import trace_ids as openinference_traces
from .shapes import FAMILIES, detect, detect_any, detect_lines, family_of, load_file, load_run, load_trace
from .values import unflatten

__all__ = ["FAMILIES", "Family", "LANGFUSE", "OPENINFERENCE", "detect", "detect_any", "detect_lines", "family_of",
           "langfuse_traces", "load_file", "load_run", "load_trace", "openinference_traces", "unflatten"]
