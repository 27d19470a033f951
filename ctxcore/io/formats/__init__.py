"""Logged traces from other tools, read as ctxcore input: one module per format family, the
pieces they share (:mod:`.values`, :mod:`.messages`, :mod:`.documents`, :mod:`.runs`), the
dispatch (:mod:`.shapes`, whose ``FAMILIES`` lists them; :mod:`.family` is the seam) and the
report of what a file holds (:mod:`.inspect`). Where each shape comes from (repository + path) is
in the family's module docstring and in ``tests/fixtures/traces/README.md``.

Formats are recognised from their content (never from the file name), in this order:

* **Langfuse** (:mod:`.langfuse`): one trace as returned by ``GET /api/public/traces/{id}`` (or
  downloaded from the UI, or the Python SDK's snake_case ``model_dump()``): ``id``, ``input``,
  ``output``, ``metadata`` and ``observations``; also ``{"trace": ..., "observations": [...]}``, a
  list (or ``{"data": [...]}``) of observations, or JSONL of traces.
* **OTLP JSON** (:mod:`.otlp`): ``{"resourceSpans": [...]}`` as the Collector's file exporter and
  the SDK JSON exporters write it, one export request a line in JSONL; and Phoenix's
  ``/v1/projects/{id}/spans/otlpv1`` (``{"data": [...]}`` with ``span_id``/``string_value``).
* **MLflow 3 traces** (:mod:`.mlflow`): ``{"info": ..., "data": {"spans": [...]}}`` with JSON-encoded
  ``mlflow.spanType``/``mlflow.spanInputs``/``mlflow.spanOutputs``; a list or JSONL of them.
* **LangSmith runs** (:mod:`.langsmith`): runs with ``run_type``, ``inputs``, ``outputs``,
  ``parent_run_id``, ``trace_id`` (a list, JSONL, ``{"runs": [...]}`` or nested ``child_runs``).
* **OpenInference** spans (:mod:`.openinference` with :mod:`.spans`), as exported from Arize
  Phoenix: a JSON list of spans, an object holding them under ``"spans"`` or ``"data"`` (Phoenix
  REST), a pandas ``to_json`` of ``get_spans_dataframe()`` (``records``, ``index``, ``columns``,
  ``split`` or ``table`` orient), JSONL with one span a line, or a parquet file of the dataframe
  (:mod:`.parquet`, recognised by its ``PAR1`` magic). Span fields may be nested
  (``"context": {"trace_id": ...}``) or flattened columns (``"context.trace_id"``); attributes may
  be flattened (``"retrieval.documents.0.document.content"``), nested with semantic-convention
  keys (``"retrieval.documents": [{"document.content": ...}]``), fully nested
  (``{"retrieval": {"documents": [{"document": {"content": ...}}]}}``), OTLP key/value lists or
  a JSON string. :func:`unflatten` turns every one of these into the fully nested shape, and
  everything below reads only that shape.
* **A bare attribute map** (:mod:`.bare`): one span's attributes without the span; read as that
  span when it retrieved documents, otherwise refused in one line naming the convention.

OTLP, MLflow, LangSmith and parquet files become OpenInference spans before the mapping, and
OpenTelemetry GenAI (``gen_ai.*``) and OpenLLMetry (``traceloop.*``, ``gen_ai.prompt.N``)
attributes are translated to OpenInference ones (:mod:`.genai`), so the rules below hold for every
span-based family.

Runs: spans group by trace id; when every span is its own trace and no parent is in the file (an
export that lost the links), they group by time (a span starting more than 2 s after the run so
far ended starts the next run), with a warning. The run shown by default is the first with both
retrieval and an LLM call, else the first with retrieval; ``trace_id`` (or the CLI's ``--run N``)
picks another. A run without an LLM call that has a prompt takes the LLM span of another trace
that started inside its time window (a streaming call recorded by another instrumentor), with a
warning. ``Logged`` records every run (``runs``), the chosen run's span tree (``spans``), the
attribute conventions seen, and the reranker's kept ids in order (``reranked``) and cut ids
(``reranker_cut``).

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
* Documents logged by id only (``gen_ai.retrieval.documents`` = ``[{"id", "score"}]``) take their
  text from a companion candidates file (``texts``: the CLI's ``--candidates FILE``); without one
  the file is refused, naming the ids.
* Otherwise the RETRIEVER documents in retrieval order with their scores
  (``metadata.retrieval_rank``). When no document has a score, scores stay ``None`` and the
  warning "documents carry no scores: ranked by retrieval order" is given (the engine then
  ranks by input order, which is the retrieval order). Several outermost retriever spans are
  combined in time order (``metadata.span`` names the span); nested retrievers (an ensemble's
  parts) are skipped in favour of their outermost parent, unless one nested retriever (by parent
  link, or inside its time window when the export lost the links) logged every document the
  outer one did: then the innermost such span is read, and the outer one is a filter step when
  it cut or reordered them, or named in ``unmapped`` when it only repeated them.
* A step that is not a retriever and returns only documents already read (a LangChain
  ``RunnableLambda`` such as ``select_top_docs``, which Langfuse logs as a CHAIN with Documents in
  and out) is a **filter step**, never more candidates: ``Logged.reranker["filters"]`` lists each
  step's kept ids in order; without a reranker, ``reranker`` names the last filter (``"step":
  "filter"``), ``reranked`` is what it kept and ``reranker_cut`` every other candidate.
* A document without its own id or score takes ``id`` and ``score`` (or ``relevance_score``,
  ``similarity_score``) from its metadata, where LangChain keeps them.
* ``doc_id`` is ``metadata.doc_id``/``document_id``/``ref_doc_id`` when present, else the logged
  document id; ``title``, ``section``, ``date``, ``version``, ``source_type`` and ``chunk_index``
  are taken from the document metadata when it has them; the whole metadata is kept.

Query: the reranker query, else the retriever's (or reranker's) input, else the root span's (or
the Langfuse trace's) input; a JSON input gives its ``query``/``question``/``input`` field; a
JSON-encoded string (``"\"What is ...?\""``) is unquoted.

What was actually sent (``extra["logged"]``): the LLM span (Langfuse: GENERATION) whose prompt
contains the most retrieved passages (ties: the latest) gives ``prompt_text`` (messages as
"role: content" separated by blank lines, LlamaIndex text ``blocks`` read as content, or the
completion prompts joined; a JSON ``input.value`` that is not a message list is never taken as
the prompt), ``prompt_tokens``,
``answer`` and ``model``. Its system message becomes ``inputs.system`` and earlier turns become
``inputs.history`` unless they carry retrieved passages (ctxcore builds its own evidence block);
advertised tools become ``inputs.tools``. ``config`` gets ``model`` when the model has a known
tokenizer (otherwise a warning), and ``max_output`` from the logged ``max_tokens`` when it fits
the default window. The limits the log states (the LLM call's parameters, a reranker's ``top_k``,
each span's ``metadata``, ``search_kwargs`` included) go into ``Logged.stated`` by canonical name:
``context_window`` (``context_window``, ``max_model_len``, ``max_context_tokens``), ``max_output``
(``max_tokens`` and its variants, ``ls_max_tokens``), ``min_score`` (``min_relevance_score``,
``score_threshold``, ``similarity_cutoff``), ``top_n`` (``top_n``, a reranker's ``top_k``) and
``top_k`` (``top_k``, ``k``, ``similarity_top_k``); the first source that states one wins, and
other limit-like metadata keys are named in ``unmapped``. Whatever is left is listed in
``extra["logged"]["unmapped"]`` and named in one warning.
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
