"""Attribute values as logged (ctxcore/io/formats/values.py), held by hand-valued tables: the one nested shape
every flattened, nested or OTLP form becomes, the loose readers of numbers, strings and times, and the walks over
parent links. Each row is an input and the exact value a reader must make of it, on both sides of every edge
(issue #29)."""

import time
from datetime import datetime, timedelta, timezone

import pytest

from ctxcore.errors import InputError
from ctxcore.io.limits import MAX_FIELD_CHARS
from ctxcore.io.formats.values import (acyclic, as_int, as_number, as_str, attribute_pairs, cycle_cuts, dig,
                                       epoch_seconds, first, iso_time, json_value, listing, outermost, snippet,
                                       squash, time_order, unflatten)


def _nested(n, leaf="x", make=lambda v: [v]):
    for _ in range(n):
        leaf = make(leaf)
    return leaf


@pytest.mark.parametrize("pairs, expected", [
    ({"a.0": "x", "a.1": "y"}, {"a": ["x", "y"]}),
    ({"a.1": "y", "a.0": "x"}, {"a": ["x", "y"]}),
    ({"a.3": "y"}, {"a": ["y"]}),
    ({"a.b": None, "c": float("nan"), "d": 1, "e": 0.0}, {"d": 1, "e": 0.0}),
    ({"metadata": {"a.b": 1}}, {"metadata": {"a.b": 1}}),
    ({"x": {"metadata": {"a.b": 1}, "y.z": 2}}, {"x": {"metadata": {"a.b": 1}, "y": {"z": 2}}}),
    ({"invocation_parameters": {"top.k": 3}, "variables": [1]}, {"invocation_parameters": {"top.k": 3},
                                                                  "variables": [1]}),
    ({"a": {"b": 1}, "a.c": 2}, {"a": {"b": 1, "c": 2}}),
    ({"a.c": 2, "a": {"b": 1}}, {"a": {"c": 2, "b": 1}}),
    ({"a.c.d": 2, "a": {"c": {"e": 1}}}, {"a": {"c": {"d": 2, "e": 1}}}),
    ({"a": {"c": 1}, "a.c.d": 2}, {"a": {"c": {"d": 2}}}),
    ({"a.c.d": 2, "a": {"c": 1}}, {"a": {"c": 1}}),
    ([("a", {"c": 1}), ("a", {"c": {"d": 2}})], {"a": {"c": {"d": 2}}}),
    ({"a": 1, "a.b": 2}, {"a": {"b": 2}}),
    ({"a.b": 2, "a": 1}, {"a": 1}),
    ({"a": []}, {"a": []}),
    ({"a": [{"b.c": 1}, 2]}, {"a": [{"b": {"c": 1}}, 2]}),
    ({"a": {"0": "x", "1": "y"}}, {"a": ["x", "y"]}),
    ({"a.01": "x"}, {"a": ["x"]}),
    ({"a.\u0661": "x"}, {"a": {"\u0661": "x"}}),
    ({"a.0": "x", "a.b": "y"}, {"a": {"0": "x", "b": "y"}}),
    ({5: "v"}, {}),
    ({"a..b": 1}, {"a": {"": {"b": 1}}}),
    ([("a.b", 1), ("a.c", 2)], {"a": {"b": 1, "c": 2}}),
    ({}, {}),
])
def test_one_nested_shape_for_every_form(pairs, expected):
    assert unflatten(pairs) == expected


DEEP = "attributes nested more than 100 levels deep (each part of a dotted key is a level)"


@pytest.mark.parametrize("pairs, ok", [
    ({".".join(["a"] * 100): 1}, True),
    ({".".join(["a"] * 101): 1}, False),
    ({"a": _nested(99)}, True),
    ({"a": _nested(100)}, False),
    ({"a": _nested(99, 1, lambda v: {"b": v})}, True),
    ({"a": _nested(100, 1, lambda v: {"b": v})}, False),
    ({"a.b": _nested(98)}, True),
    ({"a.b": _nested(99)}, False),
])
def test_nesting_is_refused_past_its_limit_and_read_up_to_it(pairs, ok):
    if ok:
        assert unflatten(pairs) != {}
    else:
        with pytest.raises(InputError) as e:
            unflatten(pairs)
        assert str(e.value).endswith(DEEP)


@pytest.mark.parametrize("obj, path, expected", [
    ({"a": [1, {"b": 2}]}, ("a", 1, "b"), 2),
    ([1, 2], (-1,), 2),
    ([1, 2], (-2,), 1),
    ([1, 2], (-3,), None),
    ([1, 2], (2,), None),
    ([1, 2], (1,), 2),
    ([1, 2], (0,), 1),
    ([1, 2], ("0",), None),
    ({"a": 1}, ("a", "b"), None),
    ({"a": None}, ("a",), None),
    ({"a": 0}, (), {"a": 0}),
    ("text", (0,), None),
])
def test_dig(obj, path, expected):
    assert dig(obj, *path) == expected


@pytest.mark.parametrize("value, expected", [
    ({"stringValue": "x"}, "x"),
    ({"boolValue": False}, False),
    ({"doubleValue": 0.5}, 0.5),
    ({"bytesValue": "AA=="}, "AA=="),
    ({"string_value": "p"}, "p"),
    ({"bool_value": True}, True),
    ({"double_value": 1.5}, 1.5),
    ({"bytes_value": "b"}, "b"),
    ({"intValue": "42"}, 42),
    ({"int_value": 7}, 7),
    ({"intValue": "x"}, "x"),
    ({"intValue": [1]}, [1]),
    ({"intValue": None, "int_value": "3"}, 3),
    ({"stringValue": None, "intValue": "5"}, 5),
    ({"stringValue": "s", "intValue": "1"}, "s"),
    ({"intValue": "1", "arrayValue": {"values": []}}, 1),
    ({"arrayValue": {"values": [{"stringValue": "a"}, {"intValue": "1"}]}}, ["a", 1]),
    ({"arrayValue": {}}, []),
    ({"array_value": {"values": None}}, []),
    ({"arrayValue": None, "array_value": {"values": [{"bool_value": False}]}}, [False]),
    ({"arrayValue": {"values": [{"kvlistValue": {"values": [{"key": "k", "value": {"intValue": "2"}}]}}]}},
     [{"k": 2}]),
    ({"kvlistValue": {"values": [{"key": "k", "value": {"boolValue": True}}]}}, {"k": True}),
    ({"kvlist_value": {"values": [{"key": "k"}]}}, {"k": None}),
    ({"kvlistValue": {}}, {}),
    ({"kvlistValue": None, "arrayValue": None}, None),
    ({}, None),
    ("raw", "raw"),
])
def test_an_otlp_any_value(value, expected):
    assert attribute_pairs([{"key": "k", "value": value}]) == [("k", expected)]


@pytest.mark.parametrize("value, expected", [
    ('{"a": 1}', [("a", 1)]),
    ("not JSON", []),
    ('"a string"', []),
    ('[{"key": "k", "value": {"intValue": "2"}}]', [("k", 2)]),
    ([{"key": "k"}, {"value": 1}, "x"], [("k", None)]),
    ({"a": 1, "b": 2}, [("a", 1), ("b", 2)]),
    (5, []),
    (None, []),
])
def test_attribute_pairs(value, expected):
    assert attribute_pairs(value) == expected


@pytest.mark.parametrize("values, expected", [
    ((None, "", 0), 0),
    ((None, ""), None),
    (("", "a"), "a"),
    ((), None),
    ((False, "a"), False),
    (([], "a"), []),
])
def test_first(values, expected):
    assert first(*values) == expected


@pytest.mark.parametrize("value, as_text, number, integer", [
    (None, None, None, None),
    ("", None, None, None),
    (True, None, None, None),
    (False, None, None, None),
    (2.0, "2", 2.0, 2),
    (2.5, "2.5", 2.5, None),
    (0, "0", 0.0, 0),
    (0.0, "0", 0.0, 0),
    (-3.0, "-3", -3.0, None),
    (-1, "-1", -1.0, None),
    ("x", "x", None, None),
    ("1.5", "1.5", 1.5, None),
    (" 2 ", " 2 ", 2.0, 2),
    ("1e3", "1e3", 1000.0, 1000),
    ("nan", "nan", None, None),
    ("inf", "inf", None, None),
    (float("inf"), "inf", None, None),
    ([1], "[1]", None, None),
])
def test_loose_values(value, as_text, number, integer):
    assert (as_str(value), as_number(value), as_int(value)) == (as_text, number, integer)
    assert type(as_number(value)) in (float, type(None))


@pytest.mark.parametrize("value, literal, expected", [
    ('"hi"', False, "hi"),
    ('""', False, ""),
    ('"{\'a\': 1}"', True, {"a": 1}),
    ('"{\'a\': 1}"', False, "{'a': 1}"),
    ("[" * 100 + "'x'" + "]" * 100, True, _nested(100)),
    ("[" * 101 + "'x'" + "]" * 101, True, "[" * 101 + "'x'" + "]" * 101),
    ('"\\"twice\\""', False, "twice"),
    (' "x" ', False, "x"),
    ('"{\\"a\\": 1}"', False, {"a": 1}),
    ('"[1]"', False, [1]),
    ('"a"b"', False, '"a"b"'),
    ('"', False, '"'),
    ('{"a": 1}', False, {"a": 1}),
    (' [1, 2]', False, [1, 2]),
    ("{bad", False, "{bad"),
    ("{'a': 1}", False, "{'a': 1}"),
    ("{'a': 1}", True, {"a": 1}),
    ("{bad", True, "{bad"),
    ("[1, 2", True, "[1, 2"),
    ("{'a': '" + "x" * 99_990 + "'}", True, {"a": "x" * 99_990}),
    ("{'a': '" + "x" * 99_991 + "'}", True, "{'a': '" + "x" * 99_991 + "'}"),
    ("[" * 100 + "]" * 100, False, _nested(99, [])),
    ("[" * 101 + "]" * 101, False, "[" * 101 + "]" * 101),
    ("[" * 101 + "]" * 101, True, "[" * 101 + "]" * 101),
    ('"' + "[" * 101 + "]" * 101 + '"', False, "[" * 101 + "]" * 101),
    ("plain", False, "plain"),
    (5, False, 5),
    (None, True, None),
])
def test_json_values(value, literal, expected):
    assert json_value(value, literal) == expected


def test_a_long_string_inside_a_long_text_is_read_as_its_part():
    """The strings of a parsed value are parts of the text, whose length the caller bounded: only its depth is
    checked, however long the text."""
    long = "x" * (MAX_FIELD_CHARS + 1)
    assert json_value('["' + long + '"]') == [long]
    assert json_value('"' + '[\\"' + long + '\\"]' + '"') == [long]


def test_squash_and_snippet():
    assert squash("  a \n\t b  ") == "a b"
    assert snippet(" x" * 50) == ("x " * 40)[:80]
    assert len(snippet("y" * 81)) == 80


@pytest.mark.parametrize("value, seconds", [
    (1e11 - 1, 1e11 - 1),
    (1e11, 1e8),
    (1e14 - 1000, 1e11 - 1),
    (1e14, 1e8),
    (1e17 - 1e6, 1e11 - 1),
    (1e17, 1e8),
    (-1e11, -1e8),
    (-1e11 + 1, -1e11 + 1),
    ("1700000000", 1.7e9),
    ("1700000000000", 1.7e9),
    (" 12 ", 12.0),
    ("1.5", 1.5),
    ("-5", None),
    ("2024-01-02T03:04:05Z", 1704164645.0),
    ("2024-01-02 03:04:05", 1704164645.0),
    ("2024-01-02t03:04:05z", 1704164645.0),
    ("2024-01-02 03:04:05 Z", 1704164645.0),
    ("2024-01-02T03:04:05+01:00", 1704161045.0),
    (datetime(2024, 1, 2, 3, 4, 5), 1704164645.0),
    (datetime(2024, 1, 2, 4, 4, 5, tzinfo=timezone(timedelta(hours=1))), 1704164645.0),
    ("not a time", None),
    (True, None),
    (None, None),
    ([1], None),
])
def test_epoch_seconds(value, seconds):
    assert epoch_seconds(value) == seconds


@pytest.fixture
def kolkata(monkeypatch):
    """The machine's own zone 5.5 hours from UTC: a logged time without a zone must still be read as UTC."""
    monkeypatch.setenv("TZ", "Asia/Kolkata")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


@pytest.mark.parametrize("value", ["2024-01-02T03:04:05", "2024-01-02 03:04:05", datetime(2024, 1, 2, 3, 4, 5)])
def test_a_time_without_a_zone_is_utc_whatever_the_machines_zone(kolkata, value):
    assert time.strftime("%z") == "+0530"
    assert epoch_seconds(value) == 1704164645.0
    assert iso_time(value) == "2024-01-02T03:04:05.000Z"


@pytest.mark.parametrize("value, text", [
    (1704164645, "2024-01-02T03:04:05.000Z"),
    (1704164645123, "2024-01-02T03:04:05.123Z"),
    ("2024-01-02T03:04:05.5+00:00", "2024-01-02T03:04:05.500Z"),
    (1e300, None),
    ("x", None),
])
def test_iso_time(value, text):
    assert iso_time(value) == text


def test_time_order_by_start_then_file_order_and_file_order_when_a_time_is_missing():
    items = [("b", 2, 0), ("a", 1, 1), ("c", 1, 2)]
    assert [x[0] for x in time_order(items, lambda x: x[1], lambda x: x[2])] == ["a", "c", "b"]
    items[1] = ("a", "no time", 1)
    assert [x[0] for x in time_order(items[::-1], lambda x: x[1], lambda x: x[2])] == ["b", "a", "c"]


@pytest.mark.parametrize("items, most, text", [
    (["a", "b"], None, "a, b"),
    ([str(i) for i in range(8)], None, "0, 1, 2, 3, 4, 5, 6, 7"),
    ([str(i) for i in range(9)], None, "0, 1, 2, 3, 4, 5, 6, 7 and 1 more"),
    ([str(i) for i in range(10)], None, "0, 1, 2, 3, 4, 5, 6, 7 and 2 more"),
    (["a", "b", "c"], 2, "a, b and 1 more"),
    (["a", "b"], 2, "a, b"),
    ([], None, ""),
])
def test_listing(items, most, text):
    assert (listing(items) if most is None else listing(items, most)) == text


def _spans(links):
    items = [{"id": i, "parent": p} for i, p in links]
    return items, {x["id"]: x for x in items}, (lambda x: x["parent"])


@pytest.mark.parametrize("links, cut", [
    ([("A", "B"), ("B", "A"), ("C", "A")], ["B"]),
    ([("C", "A"), ("A", "B"), ("B", "A")], ["B"]),
    ([("D", "D"), ("E", None), ("F", "E")], ["D"]),
    ([("A", "B"), ("B", "C"), ("C", "A"), ("X", "Y"), ("Y", "X")], ["C", "Y"]),
    ([("A", "gone"), ("B", "A")], []),
])
def test_a_cycle_of_parents_is_cut_once(links, cut):
    items, by_id, parent_of = _spans(links)
    assert [x["id"] for x in cycle_cuts(items, by_id, parent_of)] == cut
    warnings = []
    parent = acyclic(items, by_id, parent_of, lambda x: f"span {x['id']}", warnings)
    assert warnings == [f"span {c}: its parent {dict(links)[c]} closes a cycle of parents; read as a root"
                        for c in cut]
    assert [parent(x) for x in items] == [None if i in cut else p for i, p in links]


@pytest.mark.parametrize("links, members, out", [
    ([("R", None), ("X", "R"), ("Y", "X")], ["X", "Y"], ["X"]),
    ([("R", None), ("X", "R"), ("Y", "X")], ["Y", "R"], ["R"]),
    ([("R", None), ("X", "R"), ("Y1", "X"), ("Y2", "X")], ["Y1", "Y2"], ["Y1", "Y2"]),
    ([("R", None), ("X", "R"), ("Y1", "X"), ("Y2", "X"), ("Z", "Y1")], ["X", "Z", "Y2"], ["X"]),
    ([("R", None), ("A", "R"), ("B1", "A"), ("B2", "A")], ["R", "B1", "B2"], ["R"]),
    ([("R", None), ("A", "R"), ("B1", "A"), ("B2", "A")], ["B1", "B2"], ["B1", "B2"]),
    ([("A", "B"), ("B", "A")], ["A"], []),
    ([("C", "A"), ("A", "B"), ("B", "A")], ["C"], []),
    ([("A", "gone")], ["A"], ["A"]),
])
def test_outermost_members(links, members, out):
    items, by_id, parent_of = _spans(links)
    assert [m["id"] for m in outermost([by_id[m] for m in members], by_id, parent_of)] == out
