"""OpenInference spans as exported, found in parsed JSON and read into one shape (ctxcore/io/formats/spans.py),
held by hand-valued tables: what is a span, the pandas orients as records, OTLP's nesting, the limits at their
edges, and the Span each record becomes, written out whole (issue #29)."""

import pytest

from ctxcore.errors import InputError
from ctxcore.io.formats.spans import Span, _columns_to_records, _pairs, _short, is_span, parse_spans, read_column, \
    span_records
from ctxcore.io.limits import MAX_KEYS, MAX_SPANS


@pytest.mark.parametrize("obj, span", [
    (5, False),
    ({"text": "x", "span_kind": "LLM"}, False),
    ({"candidates": [], "span_kind": "LLM"}, False),
    ({"span_kind": "LLM"}, True),
    ({"spanKind": 1}, True),
    ({"context.span_id": "a"}, True),
    ({"context.trace_id": "a"}, True),
    ({"spanId": "a"}, True),
    ({"parentSpanId": "a"}, True),
    ({"context": {"span_id": "a"}}, True),
    ({"context": {"trace_id": "a"}}, True),
    ({"context": {"spanId": "a"}}, True),
    ({"context": {"traceId": "a"}}, True),
    ({"context": {"other": 1}}, False),
    ({"context": "x"}, False),
    ({"attributes.llm.model_name": "m"}, True),
    ({5: 1, "attributesx": 1}, False),
    ({"attributes": {"openinference.span.kind": "LLM"}}, True),
    ({"attributes": {"openinference": {"span": {}}}}, True),
    ({"attributes": {"openinference": "x"}}, False),
    ({"attributes": {"other": 1}}, False),
    ({"attributes": [{"key": "openinference.span.kind", "value": {}}]}, True),
    ({"attributes": [{"key": "other"}, 5]}, False),
    ({"attributes": "a string"}, False),
    ({}, False),
    ({"name": "x", "trace_id": "t"}, False),
])
def test_what_is_a_span(obj, span):
    assert is_span(obj) is span


@pytest.mark.parametrize("name, read", [("context.span_id", True), ("attributes.x", True), ("name", True),
                                        ("parent_id", True), ("startTimeUnixNano", True), ("status_code", False),
                                        ("events", False), ("contextx", False)])
def test_which_columns_are_read(name, read):
    assert read_column(name) is read


@pytest.mark.parametrize("data, records", [
    ({"columns": ["name", "span_kind"], "data": [["a", "LLM"], ["b", "CHAIN"]], "index": ["s1"]},
     [{"name": "a", "span_kind": "LLM", "context.span_id": "s1"}, {"name": "b", "span_kind": "CHAIN"}]),
    ({"columns": ["context.span_id", "span_kind"], "data": [["own", "LLM"]], "index": ["s1"]},
     [{"context.span_id": "own", "span_kind": "LLM"}]),
    ({"columns": ["span_kind"], "data": [["LLM"]], "index": "not a list"}, [{"span_kind": "LLM"}]),
    ({"columns": [1, "span_kind"], "data": [["x", "LLM", "extra"]]}, [{"1": "x", "span_kind": "LLM"}]),
    ({"columns": ["x"], "data": [[1]]}, None),
    ({"columns": ["name"], "data": [["a"], "b"]}, None),
    ({"0": {"span_kind": "LLM", "name": None}, "1": {"name": "b"}},
     [{"span_kind": "LLM", "context.span_id": "0"}, {"name": "b", "context.span_id": "1"}]),
    ({"0": {"span_kind": "LLM", "context.span_id": "own"}}, [{"span_kind": "LLM", "context.span_id": "own"}]),
    ({"0": {"name": "a"}}, None),
    ({"span_kind": {"0": "LLM", "1": "CHAIN"}, "name": {"1": "b", "2": None}},
     [{"span_kind": "LLM", "context.span_id": "0"}, {"span_kind": "CHAIN", "name": "b", "context.span_id": "1"},
      {"context.span_id": "2"}]),
    ({"context.span_id": {"0": "s0"}, "parent_id": {"0": None}}, [{"context.span_id": "s0"}]),
    ({"attributes.openinference.span.kind": {"r": "LLM"}}, [{"attributes.openinference.span.kind": "LLM",
                                                            "context.span_id": "r"}]),
    ({"other": {"0": 1}}, None),
    ({"context.trace_id": {"0": "t"}}, [{"context.trace_id": "t", "context.span_id": "0"}]),
    ({"context.span_id": {"0": "s"}}, [{"context.span_id": "s"}]),
    ({"parent_id": {"0": "p"}}, [{"parent_id": "p", "context.span_id": "0"}]),
    ({"columns": ["span_kind"]}, None),
    ({}, None),
])
def test_pandas_orients_as_records(data, records):
    assert _columns_to_records(data, "spans.json") == records


def _refused(call, message):
    with pytest.raises(InputError) as e:
        call()
    assert str(e.value) == message


def test_a_tables_limits_at_their_edges():
    wide = {"columns": ["span_kind"] + [f"c{i}" for i in range(MAX_KEYS - 1)], "data": [["LLM"] + [0] * (MAX_KEYS - 1)]}
    assert len(_columns_to_records(wide, "t.json")[0]) == MAX_KEYS
    wide["columns"].append("one more")
    _refused(lambda: _columns_to_records(wide, "t.json"),
             f"t.json, field 'columns': a table of {MAX_KEYS + 1} columns; the limit is {MAX_KEYS}")
    long = {"columns": ["span_kind"], "data": [["LLM"]] * MAX_SPANS}
    assert len(_columns_to_records(long, "t.json")) == MAX_SPANS
    long["data"] = long["data"] + [["LLM"]]
    _refused(lambda: _columns_to_records(long, "t.json"),
             f"t.json, field 'index': a table of {MAX_SPANS + 1} rows (spans); the limit is {MAX_SPANS}")
    by_row = {str(i): {"span_kind": "LLM"} for i in range(MAX_SPANS + 1)}
    _refused(lambda: _columns_to_records(by_row, "t.json"),
             f"t.json, field 'index': a table of {MAX_SPANS + 1} rows (spans); the limit is {MAX_SPANS}")
    by_column = {"span_kind": {str(i): "LLM" for i in range(MAX_SPANS)}, "name": {"one more": "x"}}
    _refused(lambda: _columns_to_records(by_column, "t.json"),
             f"t.json, field 'index': a table of {MAX_SPANS + 1} rows (spans); the limit is {MAX_SPANS}")
    by_column["name"] = {"0": "x"}
    assert len(_columns_to_records(by_column, "t.json")) == MAX_SPANS


S1, S2, S3 = {"spanId": "1"}, {"spanId": "2"}, {"spanId": "3"}


@pytest.mark.parametrize("data, records", [
    ([S1, {"x": 1}], [S1, {"x": 1}]),
    ([S1, {"text": "x"}], None),
    ([], None),
    ([{"x": 1}], None),
    ({"candidates": [], "spans": [S1]}, None),
    ({"format": "x", "span_kind": "LLM"}, None),
    ({"resourceSpans": [{"scopeSpans": [{"spans": [S1, S2]}, {"spans": "x"}, 5]},
                        {"instrumentationLibrarySpans": [{"spans": [S3]}]}, 7, {"scopeSpans": "x"}]}, [S1, S2, S3]),
    ({"resourceSpans": [{"scopeSpans": [], "instrumentationLibrarySpans": [{"spans": [S3]}]}]}, [S3]),
    ({"resourceSpans": []}, None),
    ({"spans": [S1]}, [S1]),
    ({"spans": [{"x": 1}], "data": [S2]}, [S2]),
    ({"data": "x", "span_kind": "LLM"}, [{"data": "x", "span_kind": "LLM"}]),
    ({"name": "not a span"}, None),
    ("a string", None),
])
def test_the_span_records_in_parsed_json(data, records):
    assert span_records(data, "spans.json") == records


@pytest.mark.parametrize("value, pairs", [
    ('{"a": 1}', [("a", 1)]),
    (' [{"key": "k", "value": {"intValue": "2"}}]', [("k", 2)]),
    ("{bad", []),
    ("plain", []),
    ({"a": 1}, [("a", 1)]),
    (None, []),
])
def test_a_spans_attribute_pairs(value, pairs):
    assert _pairs(value, "run.json", 3) == pairs


def test_a_too_deep_attributes_string_is_refused_naming_the_span_and_where():
    _refused(lambda: _pairs("[" * 200_000, "run.json", 3),
             "run.json, field 'spans[3].attributes': its JSON string: JSON is nested too deeply to read")
    _refused(lambda: _pairs('{"a": ' + "[" * 200 + "]" * 200 + "}", "run.json", 3),
             "run.json, field 'spans[3].attributes.a" + "[0]" * 18 + "[0...': its JSON string: JSON is nested too "
             "deeply to read (more than 100 levels)")


@pytest.mark.parametrize("field, short", [("x" * 80, "x" * 80), ("x" * 81, "x" * 77 + "..."), ("", "")])
def test_short_fields(field, short):
    assert _short(field) == short


def _span(**kw):
    base = dict(index=0, trace_id=None, span_id=None, parent_id=None, name="span 1", kind="", start=None, attrs={},
                end=None, convention=None)
    return Span(**{**base, **kw})


DOCS = [{"document.content": "a"}]


@pytest.mark.parametrize("record, span", [
    ({"name": "n", "span_kind": "UNKNOWN", "context": {"trace_id": "t", "span_id": "s"}, "parent_id": "p",
      "start_time": 1, "end_time": 2, "__index_level_0__": 5,
      "attributes": {"openinference.span.kind": "RETRIEVER", "retrieval.documents": DOCS}},
     _span(trace_id="t", span_id="s", parent_id="p", name="n", kind="RETRIEVER", start=1, end=2,
           attrs={"openinference": {"span": {"kind": "RETRIEVER"}},
                  "retrieval": {"documents": [{"document": {"content": "a"}}]}}, convention="openinference")),
    ({"name": "", "spanKind": "llm", "traceId": "t", "spanId": 5, "parentSpanId": "", "startTimeUnixNano": "10",
      "endTimeUnixNano": "20", "attributes": [{"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}}]},
     _span(trace_id="t", span_id="5", name="llm", kind="LLM", start="10", end="20",
           attrs={"gen_ai": {"operation": {"name": "chat"}}, "openinference": {"span": {"kind": "LLM"}}},
           convention="gen_ai")),
    ({"span_kind": "chain", "trace_id": 7, "span_id": 8.0, "parentId": "q", "startTime": "a", "endTime": "b",
      "context": {"traceId": "ct", "spanId": "cs"}},
     _span(trace_id="ct", span_id="cs", parent_id="q", name="chain", kind="CHAIN", start="a", end="b")),
    ({"span_kind": "chain", "trace_id": 7, "span_id": 8.0, "parent_span_id": "r", "start_time_unix_nano": 3,
      "end_time_unix_nano": 4, "context": "not an object"},
     _span(trace_id="7", span_id="8", parent_id="r", name="chain", kind="CHAIN", start=3, end=4)),
    ({"context.span_id": "s"}, _span(span_id="s")),
    ({"context.span_id": "s", "attributes.openinference.span.kind": "LLM", "attributes.llm.model_name": "m"},
     _span(span_id="s", name="llm", kind="LLM", attrs={"openinference": {"span": {"kind": "LLM"}},
                                                        "llm": {"model_name": "m"}}, convention="openinference")),
    ({"span_kind": "UNKNOWN", "spanKind": "UNKNOWN"}, _span(name="unknown", kind="UNKNOWN")),
    ({"spanKind": "AGENT", "span_kind": "UNKNOWN", "attributes": {"openinference.span.kind": "TOOL"}},
     _span(name="agent", kind="AGENT", attrs={"openinference": {"span": {"kind": "TOOL"}}},
           convention="openinference")),
    ({"span_kind": "LLM", "attributes": {"openinference.span.kind": "LLM", "gen_ai.request.model": "m"}},
     _span(name="llm", kind="LLM", attrs={"openinference": {"span": {"kind": "LLM"}},
                                          "gen_ai": {"request": {"model": "m"}}}, convention="openinference")),
    ({"span_kind": "CHAIN", "attributes": {"openinference.span.kind": "CHAIN", "output.value": '[{"content": "d"}]'}},
     _span(name="chain", kind="CHAIN", attrs={"openinference": {"span": {"kind": "CHAIN"}},
                                              "output": {"value": '[{"content": "d"}]'},
                                              "retrieval": {"documents": [{"document": {"content": "d"}}]}},
           convention="openinference")),
    ({"span_kind": "LLM", "attributes": "{bad"}, _span(name="llm", kind="LLM")),
])
def test_the_span_each_record_becomes(record, span):
    assert parse_spans([record], "run.json") == [span]


def test_spans_keep_their_place_and_their_count_is_bounded():
    spans = parse_spans([{"span_kind": "LLM"}, {"name": "b"}], "run.json")
    assert [(s.index, s.name, s.label()) for s in spans] == [(0, "llm", "LLM 'llm'"), (1, "b", "span 'b'")]
    _refused(lambda: parse_spans([{}] * (MAX_SPANS + 1), "run.json"),
             f"run.json, field 'spans': {MAX_SPANS + 1} spans; the limit is {MAX_SPANS}")
    assert len(parse_spans([{}] * 3, "run.json")) == 3


@pytest.mark.parametrize("record, message", [
    ([1], "run.json, field 'spans[1]': span 2 is a list, not an object"),
    ({f"k{i}": i for i in range(MAX_KEYS + 1)},
     f"run.json, field 'spans[1]': span 2 has {MAX_KEYS + 1} keys and attributes; the limit is {MAX_KEYS}"),
    ({"span_kind": "LLM", "attributes": {f"a{i}": i for i in range(MAX_KEYS - 1)}},
     f"run.json, field 'spans[1]': span 2 has {MAX_KEYS + 1} keys and attributes; the limit is {MAX_KEYS}"),
    ({"span_kind": "LLM", "attributes": {".".join(["a"] * 101): 1}},
     "run.json, field '" + ("spans[1].attributes." + ".".join(["a"] * 101))[:77] + "...': attributes nested more "
     "than 100 levels deep (each part of a dotted key is a level)"),
    ({"span_kind": "LLM", ".".join(["b"] * 101): 1},
     "run.json, field '" + ("spans[1]." + ".".join(["b"] * 101))[:77] + "...': attributes nested more than 100 "
     "levels deep (each part of a dotted key is a level)"),
    ({"span_kind": "LLM", "attributes." + ".".join(["c"] * 101): 1},
     "run.json, field '" + ("spans[1].attributes." + ".".join(["c"] * 101))[:77] + "...': attributes nested more "
     "than 100 levels deep (each part of a dotted key is a level)"),
])
def test_a_span_past_a_limit_is_refused_by_its_place(record, message):
    _refused(lambda: parse_spans([{"span_kind": "LLM"}, record], "run.json"), message)


def test_a_span_at_the_key_limit_is_read():
    record = {"span_kind": "LLM", "attributes": {f"a{i}": i for i in range(MAX_KEYS - 2)}}
    assert len(parse_spans([record], "run.json")[0].attrs) == MAX_KEYS - 2
