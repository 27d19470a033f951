"""Phoenix's parquet export (ctxcore/io/formats/parquet.py), its size accounting held by hand-valued tables: which
stored columns belong to a span column, the bound the metadata gives, the bytes Python will hold once every
dictionary, list and struct is expanded, and the refusals word for word (issue #29). Tables are written with the
real pyarrow."""

import io
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ctxcore.errors import InputError
from ctxcore.io.formats import parquet


@pytest.mark.parametrize("path, columns, top", [
    ("a", {"a"}, True),
    ("a.b", {"a"}, True),
    ("a.b.c", {"a.b"}, True),
    ("ab", {"a"}, False),
    ("a.b", {"b"}, False),
    ("a", set(), False),
    ("a", {"b", "c"}, False),
    ("aXX.XXb", {"a"}, False),
])
def test_which_stored_columns_belong_to_a_span_column(path, columns, top):
    assert parquet._top(path, columns) is top


def _meta(table, **kw):
    buf = io.BytesIO()
    pq.write_table(table, buf, **kw)
    return pq.ParquetFile(io.BytesIO(buf.getvalue())).metadata


def test_the_metadatas_bound_sums_every_row_group_of_the_chosen_columns():
    meta = _meta(pa.table({"a": ["x" * 10] * 6, "b": list(range(6)), "c.d": [1.5] * 6}), row_group_size=2)
    assert meta.num_row_groups == 3

    def chunk(g, c):
        col = meta.row_group(g).column(c)
        return col.total_uncompressed_size + 8 * col.num_values

    a = sum(chunk(g, 0) for g in range(3))
    b = sum(chunk(g, 1) for g in range(3))
    assert parquet._stored_bound(meta, {"a"}) == a
    assert parquet._stored_bound(meta, {"a", "b"}) == a + b
    assert parquet._stored_bound(meta, set()) == 0
    c = sum(chunk(g, 2) for g in range(3))
    assert parquet._stored_bound(meta, {"c"}) == c  # a stored path under c. is c's, as a struct's leaves are
    assert parquet._stored_bound(meta, {"a", "b", "c"}) == a + b + c


@pytest.mark.parametrize("array, size", [
    (pa.array(["xx", "xx", "y"]).dictionary_encode(), 2 + 2 + 1 + 8 * 3),
    (pa.array(["", None]).dictionary_encode(), 0 + 8 * 2),
    (pa.array([[1, 2], [3]], pa.list_(pa.int64())), 8 * 2 + 3 * 8),
    (pa.array([[], []], pa.list_(pa.int64())), 8 * 2),
    (pa.array([{"x": 1, "y": 2.0}, {"x": 3, "y": 4.0}]), 8 * 2 + 2 * 8 + 2 * 8),
    (pa.chunked_array([pa.array([1, 2], pa.int64()), pa.array([3], pa.int64())]), 3 * 8),
    (pa.array([1, 2, 3, 4], pa.int32()), 4 * 4),
])
def test_the_bytes_python_will_hold_once_everything_is_expanded(array, size):
    assert parquet._decoded(array) == size


def test_a_list_of_repeated_texts_counts_every_copy():
    inner = pa.DictionaryArray.from_arrays(pa.array([0, 0, 0], pa.int32()), pa.array(["abcd"]))
    lists = pa.ListArray.from_arrays(pa.array([0, 2, 3], pa.int32()), inner)
    assert parquet._decoded(lists) == 8 * 2 + (4 * 3 + 8 * 3)


def test_only_text_and_byte_columns_are_read_as_dictionaries():
    meta = _meta(pa.table({"name": ["a"], "n": [1], "b": [b"x"], "s": [{"t": "u", "v": 2}]}))
    assert parquet._text_leaves(meta.schema) == ["name", "b", "s.t"]


@pytest.mark.parametrize("size, how, limit, message", [
    (5 * 2**20, "at least ", 3 * 2**20, "the table would decode to at least 5 MB; the limit is 3 MB"),
    (1536 * 2**20, "", 1024 * 2**20, "the table would decode to 1,536 MB; the limit is 1024 MB"),
    (3 * 2**19, "", 2**21 - 1, "the table would decode to 2 MB; the limit is 1 MB"),
])
def test_a_table_too_big_to_decode_is_refused_in_one_line(size, how, limit, message, monkeypatch):
    monkeypatch.setattr(parquet, "MAX_DECODED_BYTES", limit)
    err = parquet._too_big(size, "p.parquet", how)
    assert (err.message, err.source) == (message + " (a small compressed file can repeat one value many times)",
                                         "p.parquet")


def test_the_refusals_of_a_table_name_the_file(monkeypatch):
    buf = io.BytesIO()
    pq.write_table(pa.table({"span_kind": ["LLM"], "name": ["n"], "x": [1]}), buf)
    monkeypatch.setattr(parquet, "MAX_KEYS", 2)
    with pytest.raises(InputError) as e:
        parquet.records(buf.getvalue(), "p.parquet")
    assert str(e.value) == "p.parquet, field 'columns': a table of 3 columns; the limit is 2"
    monkeypatch.setattr(parquet, "MAX_KEYS", 3)
    rows, every = parquet.records(buf.getvalue(), "p.parquet")
    assert (rows, every) == ([{"span_kind": "LLM", "name": "n"}], ["span_kind", "name", "x"])


def test_a_parquet_file_without_pyarrow_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    with pytest.raises(InputError) as e:
        parquet.records(b"PAR1", "p.parquet")
    assert str(e.value) == "p.parquet: this is a parquet file; reading it needs pyarrow (pip install pyarrow)"


def _bytes(columns: dict) -> bytes:
    buf = io.BytesIO()
    pq.write_table(pa.table(columns), buf)
    return buf.getvalue()


def test_the_decoded_size_is_refused_past_the_limit_and_read_at_it(monkeypatch):
    """A text repeated on every row is read as a dictionary and counted as Python will hold it: 400 copies of
    5,000 characters plus a word a value (2,003,200 bytes), and "CHAIN" 400 times (5,200): 2,008,400 bytes."""
    raw = _bytes({"name": ["x" * 5000] * 400, "span_kind": ["CHAIN"] * 400})
    monkeypatch.setattr(parquet, "MAX_DECODED_BYTES", 2_008_400)
    rows, _ = parquet.records(raw, "p.parquet")
    assert len(rows) == 400
    monkeypatch.setattr(parquet, "MAX_DECODED_BYTES", 2_008_399)
    with pytest.raises(InputError) as e:
        parquet.records(raw, "p.parquet")
    assert str(e.value) == ("p.parquet: the table would decode to 2 MB; the limit is 1 MB (a small compressed file "
                            "can repeat one value many times)")


def test_running_out_of_memory_while_reading_is_one_line(monkeypatch):
    def no_memory(raw, source):
        raise MemoryError
    monkeypatch.setattr(parquet, "_table", no_memory)  # the real thing would need the machine's memory exhausted
    monkeypatch.setattr(parquet, "MAX_DECODED_BYTES", 3 * 2**20)
    with pytest.raises(InputError) as e:
        parquet.records(b"PAR1", "p.parquet")
    assert str(e.value) == "p.parquet: not enough memory to read the table (the limit is 3 MB decoded)"


def test_a_value_python_cannot_hold_says_why():
    raw = _bytes({"name": ["a", "b"], "span_kind": ["LLM", "LLM"],
                  "start_time": pa.array([0, 400 * 10**12], pa.timestamp("s"))})
    with pytest.raises(InputError) as e:
        parquet.records(raw, "p.parquet")
    assert str(e.value) == ("p.parquet, row 2, field 'start_time': a value Python cannot read (Python int too large "
                            "to convert to C int)")


@pytest.mark.parametrize("columns", [{"span_kind": ["LLM"], "name": ["n"]}, {"context.span_id": ["s"], "name": ["n"]}])
def test_either_span_column_makes_a_span_table(columns):
    with pytest.raises(InputError) as e:
        parquet.load(_bytes(columns), "p.parquet")
    assert "not a Phoenix span dataframe" not in str(e.value)


def test_an_empty_table_is_refused_naming_the_file():
    with pytest.raises(InputError) as e:
        parquet.load(_bytes({"span_kind": pa.array([], pa.string())}), "p.parquet")
    assert str(e.value) == "p.parquet: the parquet file holds no rows"
