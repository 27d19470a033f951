"""Phoenix's own span export as a parquet file: ``px.Client().get_spans_dataframe().to_parquet(path)``.

Columns as Phoenix writes the dataframe (Arize-ai/phoenix ``src/phoenix/trace/dsl/query.py``,
``_get_spans_dataframe`` and ``_flatten_semantic_conventions``): ``name``, ``span_kind``,
``parent_id``, ``start_time``, ``end_time`` (timestamps), ``status_code``, ``context.span_id`` (also
the index), ``context.trace_id`` and one ``attributes.<semantic convention>`` column per attribute,
list-valued ones holding structs with the inner keys still dotted
(``attributes.retrieval.documents`` = ``[{"document.content", "document.id", "document.score",
"document.metadata"}]``, ``attributes.llm.input_messages`` = ``[{"message.role", "message.content"}]``).
Read with pyarrow, imported only when a parquet file is read (recognised by its ``PAR1`` magic)."""

from __future__ import annotations

import io
from typing import Optional

from ...errors import InputError
from ..limits import MAX_SPANS
from ..loaded import Loaded
from .openinference import load_spans
from .spans import parse_spans

PHOENIX_PARQUET = "phoenix-parquet"
MAGIC = b"PAR1"


def is_parquet(raw: bytes) -> bool:
    return raw[:4] == MAGIC


def records(raw: bytes, source: str) -> list[dict]:
    """The rows of a parquet file as plain dicts (one per span)."""
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise InputError("this is a parquet file; reading it needs pyarrow (pip install pyarrow)",
                         source=source) from None
    try:
        meta = pq.ParquetFile(io.BytesIO(raw)).metadata
        if meta.num_rows > MAX_SPANS:
            raise InputError(f"a table of {meta.num_rows} rows (spans); the limit is {MAX_SPANS}", source=source)
        table = pq.read_table(io.BytesIO(raw))
    except InputError:
        raise
    except Exception as err:  # noqa: BLE001 - pyarrow raises many types for a damaged file
        raise InputError(f"not a readable parquet file ({str(err)[:120]})", source=source) from None
    return table.to_pylist()


def load(raw: bytes, source: str, trace_id: Optional[str] = None, texts: Optional[dict] = None) -> Loaded:
    rows = records(raw, source)
    if not rows:
        raise InputError("the parquet file holds no rows", source=source)
    if "context.span_id" not in rows[0] and "span_kind" not in rows[0]:
        raise InputError(f"a parquet table that is not a Phoenix span dataframe (no context.span_id or span_kind "
                         f"column; columns: {', '.join(list(rows[0])[:8])})", source=source)
    return load_spans(parse_spans(rows, source), source, trace_id, PHOENIX_PARQUET, texts)
