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
from ..limits import MAX_DECODED_BYTES, MAX_KEYS, MAX_SPANS
from ..loaded import Loaded
from .openinference import load_spans
from .spans import parse_spans, read_column

PHOENIX_PARQUET = "phoenix-parquet"
MAGIC = b"PAR1"
_VALUE_BYTES = 8  # what one decoded value of a fixed-width column (or one dictionary index) may take


def is_parquet(raw: bytes) -> bool:
    return raw[:4] == MAGIC


def _too_big(size: int, source: str, how: str) -> InputError:
    return InputError(f"the table would decode to {how}{size / 2**20:,.0f} MB; the limit is "
                      f"{MAX_DECODED_BYTES // 2**20} MB (a small compressed file can repeat one value many times)",
                      source=source)


def _stored_bound(meta, columns: set) -> int:
    """Bytes the chosen columns take once their pages are uncompressed, plus a word per value: what
    reading them with their text kept as dictionaries costs, before any dictionary is expanded."""
    total = 0
    for g in range(meta.num_row_groups):
        group = meta.row_group(g)
        for c in range(group.num_columns):
            chunk = group.column(c)
            if _top(chunk.path_in_schema, columns):
                total += chunk.total_uncompressed_size + _VALUE_BYTES * chunk.num_values
    return total


def _top(path: str, columns: set) -> bool:
    return any(path == c or path.startswith(c + ".") for c in columns)


def _decoded(array) -> int:
    """Bytes an Arrow array holds once every dictionary is expanded (what Python will hold, at least)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if isinstance(array, pa.ChunkedArray):
        return sum(_decoded(chunk) for chunk in array.chunks)
    kind = array.type
    if pa.types.is_dictionary(kind):
        lengths = pc.binary_length(array.dictionary)  # only text and byte columns are read as dictionaries
        return (pc.sum(pc.take(lengths, array.indices)).as_py() or 0) + _VALUE_BYTES * len(array)
    if isinstance(array, (pa.ListArray, pa.LargeListArray)):
        return _VALUE_BYTES * len(array) + _decoded(array.flatten())
    if isinstance(array, pa.StructArray):
        return _VALUE_BYTES * len(array) + sum(_decoded(f) for f in array.flatten())
    return array.nbytes


def _text_leaves(schema) -> list[str]:
    """The stored text and byte columns (their paths), read as dictionaries so a value repeated on
    many rows is held once until it is counted."""
    return [schema.column(i).path for i in range(len(schema)) if schema.column(i).physical_type == "BYTE_ARRAY"]


def _table(raw: bytes, source: str):
    import pyarrow.parquet as pq

    meta = pq.ParquetFile(io.BytesIO(raw)).metadata
    if meta.num_rows > MAX_SPANS:
        raise InputError(f"a table of {meta.num_rows} rows (spans); the limit is {MAX_SPANS}", source=source)
    if meta.num_columns > MAX_KEYS:
        raise InputError(f"a table of {meta.num_columns} columns; the limit is {MAX_KEYS}", source=source,
                         field="columns")
    every = pq.ParquetFile(io.BytesIO(raw)).schema_arrow.names
    names = [n for n in every if read_column(n)]
    bound = _stored_bound(meta, set(names))
    if bound > MAX_DECODED_BYTES:
        raise _too_big(bound, source, "at least ")
    leaves = [p for p in _text_leaves(meta.schema) if _top(p, set(names))]
    return pq.ParquetFile(io.BytesIO(raw), read_dictionary=leaves).read(columns=names), every


def _column_values(table, name: str, source: str) -> list:
    """One column as Python values; a value Python cannot hold (a date past year 9999) is one line."""
    column = table.column(name)
    try:
        return column.to_pylist()
    except (ValueError, OverflowError, ArithmeticError) as err:
        for i in range(len(column)):
            try:
                column[i].as_py()
            except (ValueError, OverflowError, ArithmeticError) as bad:
                err = bad
                break
        else:
            i = None
        raise InputError(f"a value Python cannot read ({str(err)[:120]})", source=source,
                         row=None if i is None else i + 1, field=name) from None


def records(raw: bytes, source: str) -> tuple[list[dict], list[str]]:
    """The rows of a parquet file as plain dicts without their empty cells (one per span), and the
    file's columns (only those a span is read from are decoded). The decoded size is checked first, from the metadata and then with every repeated
    value counted, so a file that expands past the limit is refused before Python holds its rows."""
    try:
        import pyarrow  # noqa: F401 - only to say what is missing
    except ImportError:
        raise InputError("this is a parquet file; reading it needs pyarrow (pip install pyarrow)",
                         source=source) from None
    try:
        table, every = _table(raw, source)
        size = sum(_decoded(table.column(i)) for i in range(table.num_columns))
    except InputError:
        raise
    except MemoryError:
        raise InputError(f"not enough memory to read the table (the limit is {MAX_DECODED_BYTES // 2**20} MB "
                         f"decoded)", source=source) from None
    except Exception as err:  # noqa: BLE001 - pyarrow raises many types for a damaged file
        raise InputError(f"not a readable parquet file ({str(err)[:120]})", source=source) from None
    if size > MAX_DECODED_BYTES:
        raise _too_big(size, source, "")
    rows: list[dict] = [{} for _ in range(table.num_rows)]
    for name in table.column_names:
        for row, value in zip(rows, _column_values(table, name, source)):
            if value is not None:
                row[name] = value
    return rows, every


def load(raw: bytes, source: str, trace_id: Optional[str] = None, texts: Optional[dict] = None) -> Loaded:
    rows, columns = records(raw, source)
    if not rows:
        raise InputError("the parquet file holds no rows", source=source)
    if "context.span_id" not in columns and "span_kind" not in columns:
        raise InputError(f"a parquet table that is not a Phoenix span dataframe (no context.span_id or span_kind "
                         f"column; columns: {', '.join(columns[:8])})", source=source)
    return load_spans(parse_spans(rows, source), source, trace_id, PHOENIX_PARQUET, texts)
