"""Hand-written tables for the input layer (ctxcore.io.reading): every refusal as its whole message, naming the
file, the line or row and the field, and every accepted candidate as its whole record.

Inputs are written inline as JSON/JSONL/CSV text or bytes and read through ``ctxcore.loads`` / ``ctxcore.load``
(or the reading functions other readers share: ``parse_json``, ``parse_text``, ``too_big``). Records are compared
with ``==`` and by ``repr`` too, so an int left where a float belongs (``1`` for ``1.0``) is told apart.
"""

from __future__ import annotations

import pytest

from conftest import cand, input_error, same

from ctxcore import load, loads
from ctxcore.io.limits import MAX_BYTES, MAX_CANDIDATES, MAX_DEPTH, MAX_FIELD_CHARS
from ctxcore.io.loaders import candidates_from_objects
from ctxcore.io.reading import csv_rows, decode, parse_json, parse_text, too_big

SURROGATE = r"contains a lone surrogate (an escaped \ud800-\udfff), which is not valid Unicode"
NOT_FINITE = "holds a number that is not finite (NaN, Infinity or too large)"
TRUST_LIST = "must be one of system, developer, retrieved, user, tool"
BIG_INT = "1" + "0" * 400  # fits no float


# ---------------------------------------------------------------------------------------------
# one bad candidate in a JSON list: the field is named as candidates[i].field
# ---------------------------------------------------------------------------------------------

def _id(text: str) -> str:
    """A test id of plain ASCII without backslashes: pytest escapes others, and a second collection in the same
    process (mutmut's workers) no longer finds the escaped ids."""
    return text[:50].encode("ascii", "backslashreplace").decode().replace("\\", "/")


BAD_ITEMS = [
    ('5', "candidates[0]", "a candidate must be an object, found a number"),
    ('"a"', "candidates[0]", "a candidate must be an object, found a string"),
    ('null', "candidates[0]", "a candidate must be an object, found null"),
    ('true', "candidates[0]", "a candidate must be an object, found a boolean"),
    ('[1]', "candidates[0]", "a candidate must be an object, found a list"),
    ('{"id": "a"}', "candidates[0].text", "missing: every candidate needs its text"),
    ('{"id": "a", "text": null}', "candidates[0].text", "missing: every candidate needs its text"),
    ('{"text": 5}', "candidates[0].text", "must be a string, found a number"),
    ('{"text": 1.5}', "candidates[0].text", "must be a string, found a number"),
    ('{"text": {}}', "candidates[0].text", "must be a string, found an object"),
    ('{"text": ["a"]}', "candidates[0].text", "must be a string, found a list"),
    ('{"text": false}', "candidates[0].text", "must be a string, found a boolean"),
    ('{"text": "a\\ud800"}', "candidates[0].text", SURROGATE),
    ('{"text": "\\udfff"}', "candidates[0].text", SURROGATE),
    ('{"id": true, "text": "a"}', "candidates[0].id", "must be a string, found a boolean"),
    ('{"id": 1.5, "text": "a"}', "candidates[0].id", "must be a string, found a number"),
    ('{"id": ["a"], "text": "a"}', "candidates[0].id", "must be a string, found a list"),
    ('{"id": {}, "text": "a"}', "candidates[0].id", "must be a string, found an object"),
    ('{"id": "a\\u0007b", "text": "a"}', "candidates[0].id", "contains control characters"),
    ('{"id": "a\\u001f", "text": "a"}', "candidates[0].id", "contains control characters"),
    ('{"id": "\\u007f", "text": "a"}', "candidates[0].id", "contains control characters"),
    ('{"id": "\\ud800x", "text": "a"}', "candidates[0].id", SURROGATE),
    ('{"text": "a", "score": "0.9"}', "candidates[0].score", 'must be a number, found "0.9"'),
    ('{"text": "a", "score": true}', "candidates[0].score", "must be a number, found true"),
    ('{"text": "a", "score": [1]}', "candidates[0].score", "must be a number, found [1]"),
    # json.dumps gives the quote and 51 more characters; the first 40 are shown
    ('{"text": "a", "score": "' + "x" * 50 + '"}', "candidates[0].score", 'must be a number, found "' + "x" * 39),
    ('{"text": "a", "score": NaN}', "candidates[0].score", "must be a finite number, found nan"),
    ('{"text": "a", "score": Infinity}', "candidates[0].score", "must be a finite number, found inf"),
    ('{"text": "a", "score": -Infinity}', "candidates[0].score", "must be a finite number, found -inf"),
    ('{"text": "a", "score": 1e400}', "candidates[0].score", "must be a finite number, found inf"),
    ('{"text": "a", "score": ' + BIG_INT + '}', "candidates[0].score",
     "must be a finite number, found 1" + "0" * 39),
    ('{"text": "a", "chunk_index": -1}', "candidates[0].chunk_index", "must be a whole number, 0 or more"),
    ('{"text": "a", "chunk_index": 1.5}', "candidates[0].chunk_index", "must be a whole number, 0 or more"),
    ('{"text": "a", "chunk_index": true}', "candidates[0].chunk_index", "must be a whole number, 0 or more"),
    ('{"text": "a", "chunk_index": "3"}', "candidates[0].chunk_index", "must be a whole number, 0 or more"),
    ('{"text": "a", "trust": "admin"}', "candidates[0].trust", TRUST_LIST),
    ('{"text": "a", "trust": 5}', "candidates[0].trust", TRUST_LIST),
    ('{"text": "a", "trust": "System"}', "candidates[0].trust", TRUST_LIST),
    ('{"text": "a", "permissions": 5}', "candidates[0].permissions", "must be a list of strings"),
    ('{"text": "a", "permissions": {}}', "candidates[0].permissions", "must be a list of strings"),
    ('{"text": "a", "permissions": ["a", 1]}', "candidates[0].permissions", "must be a list of strings"),
    ('{"text": "a", "embedding": "1,2"}', "candidates[0].embedding", "must be a list of finite numbers"),
    ('{"text": "a", "embedding": {}}', "candidates[0].embedding", "must be a list of finite numbers"),
    ('{"text": "a", "embedding": [1, true]}', "candidates[0].embedding", "must be a list of finite numbers"),
    ('{"text": "a", "embedding": [1, "2"]}', "candidates[0].embedding", "must be a list of finite numbers"),
    ('{"text": "a", "embedding": [NaN]}', "candidates[0].embedding", "must be a list of finite numbers"),
    ('{"text": "a", "embedding": [0.5, 1e400]}', "candidates[0].embedding", "must be a list of finite numbers"),
    ('{"text": "a", "embedding": [' + BIG_INT + ']}', "candidates[0].embedding", "must be a list of finite numbers"),
    ('{"text": "a", "doc_id": true}', "candidates[0].doc_id", "must be a string, found a boolean"),
    ('{"text": "a", "doc_id": [1]}', "candidates[0].doc_id", "must be a string, found a list"),
    ('{"text": "a", "title": 5}', "candidates[0].title", "must be a string, found a number"),
    ('{"text": "a", "section": 1.5}', "candidates[0].section", "must be a string, found a number"),
    ('{"text": "a", "date": {}}', "candidates[0].date", "must be a string, found an object"),
    ('{"text": "a", "date": false}', "candidates[0].date", "must be a string, found a boolean"),
    ('{"text": "a", "version": true}', "candidates[0].version", "must be a string, found a boolean"),
    ('{"text": "a", "source_type": []}', "candidates[0].source_type", "must be a string, found a list"),
    ('{"text": "a", "source_type": 3}', "candidates[0].source_type", "must be a string, found a number"),
    ('{"text": "a", "doc_id": "d\\ud800"}', "candidates[0].doc_id", SURROGATE),
    ('{"text": "a", "title": "\\udbff"}', "candidates[0].title", SURROGATE),
    ('{"text": "a", "section": "s\\udc00"}', "candidates[0].section", SURROGATE),
    ('{"text": "a", "date": "\\ud800"}', "candidates[0].date", SURROGATE),
    ('{"text": "a", "version": "v\\ud800"}', "candidates[0].version", SURROGATE),
    ('{"text": "a", "source_type": "\\ud800"}', "candidates[0].source_type", SURROGATE),
    ('{"text": "a", "metadata": [1]}', "candidates[0].metadata", "must be an object"),
    ('{"text": "a", "metadata": "x"}', "candidates[0].metadata", "must be an object"),
    ('{"text": "a", "metadata": 5}', "candidates[0].metadata", "must be an object"),
    ('{"text": "a", "metadata": {"a": NaN}}', "candidates[0].metadata", NOT_FINITE),
    ('{"text": "a", "metadata": {"a": [1, {"b": -Infinity}]}}', "candidates[0].metadata", NOT_FINITE),
    ('{"text": "a", "metadata": {"a": [[2.5, 1e400]]}}', "candidates[0].metadata", NOT_FINITE),
    ('{"text": "a", "team": NaN}', "candidates[0].team", NOT_FINITE),
    # the first extra key holding a non-finite number is named, in the file's order
    ('{"text": "a", "team": "ok", "x": [Infinity], "y": NaN}', "candidates[0].x", NOT_FINITE),
    ('{"text": "a", "team": {"deep": [NaN]}}', "candidates[0].team", NOT_FINITE),
]


@pytest.mark.parametrize("item, field, message", BAD_ITEMS, ids=[_id(b[0]) for b in BAD_ITEMS])
def test_a_bad_candidate_in_a_json_list_names_its_index_and_field(item, field, message):
    assert input_error(loads, f"[{item}]", "in.json") == f"in.json, field '{field}': {message}"


def test_the_index_named_is_the_bad_candidates_own():
    text = '[{"id": "a", "text": "x"}, {"id": "b", "text": "y"}, {"id": "c", "text": "z", "score": "high"}]'
    assert input_error(loads, text, "in.json") == (
        "in.json, field 'candidates[2].score': must be a number, found \"high\"")
    assert input_error(loads, '[{"text": "x"}, 7]', "in.json") == (
        "in.json, field 'candidates[1]': a candidate must be an object, found a number")


@pytest.mark.parametrize("item, field, message", [
    ('{"text": 5}', "text", "must be a string, found a number"),
    ('{"text": "a", "score": NaN}', "score", "must be a finite number, found nan"),
    ('{"id": "a\\u0000", "text": "a"}', "id", "contains control characters"),
    ('{"text": "a", "metadata": [0]}', "metadata", "must be an object"),
    ('{"text": "a", "title": "\\ud800"}', "title", SURROGATE),
    ('{"text": "a", "extra": [NaN]}', "extra", NOT_FINITE),
    ('5', "candidate", "a candidate must be an object, found a number"),
])
def test_a_bad_jsonl_line_is_named_by_its_line_and_bare_field(item, field, message):
    # line 1 is good, line 2 blank, line 3 the one under test
    text = '{"id": "first", "text": "ok"}\n\n' + item + "\n"
    assert input_error(loads, text, "x.jsonl") == f"x.jsonl, line 3, field '{field}': {message}"


# ---------------------------------------------------------------------------------------------
# good candidates: whole records
# ---------------------------------------------------------------------------------------------

GOOD_ITEMS = [
    ('{"text": "café"}', cand("c1", "café", generated_id=True)),
    ('{"id": "", "text": "a"}', cand("c1", generated_id=True)),
    ('{"id": null, "text": "a"}', cand("c1", generated_id=True)),
    ('{"id": 7, "text": "a", "score": 1}', cand("7", score=1.0)),
    ('{"id": 0, "text": "a", "score": 0}', cand("0", score=0.0)),
    ('{"id": "é d\\u2028", "text": "a", "score": -0.5}', cand("é d\u2028", score=-0.5)),
    ('{"id": "x", "text": "", "chunk_index": 0}', cand("x", "", chunk_index=0)),
    ('{"id": "x", "text": "a", "chunk_index": 3}', cand("x", chunk_index=3)),
    ('{"id": "x", "text": "a", "trust": ""}', cand("x")),
    ('{"id": "x", "text": "a", "trust": null}', cand("x")),
    ('{"id": "x", "text": "a", "trust": []}', cand("x")),
    ('{"id": "x", "text": "a", "trust": "system"}', cand("x", trust="system")),
    ('{"id": "x", "text": "a", "trust": "tool"}', cand("x", trust="tool")),
    ('{"id": "x", "text": "a", "permissions": "a, b;c|d"}', cand("x", permissions=("a", "b", "c", "d"))),
    ('{"id": "x", "text": "a", "permissions": " , ;|"}', cand("x", permissions=())),
    ('{"id": "x", "text": "a", "permissions": "team"}', cand("x", permissions=("team",))),
    ('{"id": "x", "text": "a", "permissions": []}', cand("x", permissions=())),
    ('{"id": "x", "text": "a", "permissions": [" a ", "b"]}', cand("x", permissions=(" a ", "b"))),
    ('{"id": "x", "text": "a", "embedding": [1, 2.5, -3]}', cand("x", embedding=(1.0, 2.5, -3.0))),
    ('{"id": "x", "text": "a", "embedding": []}', cand("x", embedding=())),
    ('{"id": "x", "text": "a", "doc_id": 5, "version": 2.5, "date": 20240101}',
     cand("x", doc_id="5", version="2.5", date="20240101")),
    ('{"id": "x", "text": "a", "doc_id": "", "title": "T", "section": "S", "date": "2024-01-01", '
     '"version": "v2", "source_type": "faq"}',
     cand("x", title="T", section="S", date="2024-01-01", version="v2", source_type="faq")),
    ('{"id": "x", "text": "a", "title": "Café ü"}', cand("x", title="Café ü")),
    ('{"id": "x", "text": "a", "metadata": {}}', cand("x")),
    ('{"id": "x", "text": "a", "metadata": null}', cand("x")),
    ('{"id": "x", "text": "a", "metadata": []}', cand("x")),  # an empty list is no metadata at all
    ('{"id": "x", "text": "a", "metadata": {"a": 1, "b": [1.5, {"c": null}]}}',
     cand("x", metadata={"a": 1, "b": [1.5, {"c": None}]})),
    # top-level extra keys join the metadata, and win over a metadata key of the same name
    ('{"id": "x", "text": "a", "team": "top", "metadata": {"team": "m", "k": 1}}',
     cand("x", metadata={"team": "top", "k": 1})),
    ('{"id": "x", "text": "a", "tokens": 5}', cand("x", tokens=5)),
    ('{"id": "x", "text": "a", "tokens": true}', cand("x")),
    ('{"id": "x", "text": "a", "tokens": "5"}', cand("x")),
    ('{"id": "x", "text": "a", "tokens": 5.0}', cand("x")),
    ('{"id": "x", "text": "a", "score": null, "chunk_index": null, "permissions": null, "embedding": null}',
     cand("x")),
]


@pytest.mark.parametrize("item, expected", GOOD_ITEMS, ids=[_id(g[0]) for g in GOOD_ITEMS])
def test_a_good_candidate_is_read_whole(item, expected):
    got = loads(f"[{item}]", "in.json")
    same(got.candidates, (expected,))


def test_extra_keys_are_kept_as_metadata_and_said_once_sorted():
    text = '[{"text": "a", "zeta": 1, "team": "x"}, {"text": "b", "team": "y", "tokens": 3}]'
    got = loads(text, "in.json")
    same(got.candidates, (cand("c1", metadata={"zeta": 1, "team": "x"}, generated_id=True),
                          cand("c2", "b", metadata={"team": "y"}, tokens=3, generated_id=True)))
    assert got.warnings == ("fields team, zeta are not candidate fields; they were kept as metadata",)
    assert loads('[{"text": "a", "tokens": 2}]', "in.json").warnings == ()


@pytest.mark.parametrize("items, ids", [
    # a generated id is c<position>, never one the file gives another candidate
    ('[{"text": "a"}, {"id": "c1", "text": "b"}]', ["c1~", "c1"]),
    ('[{"text": "a"}, {"id": "c1", "text": "b"}, {"id": "c1~", "text": "c"}]', ["c1~~", "c1", "c1~"]),
    ('[{"text": "a"}, {"text": "b"}, {"id": "c2", "text": "c"}]', ["c1", "c2~", "c2"]),
    ('[{"id": "x", "text": "a"}, {"text": "b"}]', ["x", "c2"]),
    ('[{"id": "", "text": "a"}, {"id": null, "text": "b"}]', ["c1", "c2"]),
    ('[{"id": 1, "text": "a"}, {"text": "b"}]', ["1", "c2"]),
])
def test_generated_ids_avoid_the_ids_in_the_file(items, ids):
    got = loads(items, "in.json").candidates
    assert [c.id for c in got] == ids


def test_jsonl_generated_ids_count_candidates_not_lines():
    got = loads('\n{"text": "a"}\n\n{"id": "c1", "text": "b"}\n{"text": "c"}\n', "x.jsonl")
    same(got.candidates, (cand("c1~", generated_id=True), cand("c1", "b"), cand("c3", "c", generated_id=True)))


def test_python_objects_that_are_not_json_are_named_by_their_type():
    assert input_error(candidates_from_objects, [(1,)], source="py") == (
        "py, field 'candidates[0]': a candidate must be an object, found tuple")
    assert input_error(candidates_from_objects, [{"text": ("a",)}], source="py") == (
        "py, field 'candidates[0].text': must be a string, found tuple")
    assert input_error(candidates_from_objects, [{"text": "a", "doc_id": b"d"}], source="py") == (
        "py, field 'candidates[0].doc_id': must be a string, found bytes")


def test_a_list_of_candidates_is_needed_and_its_size_is_limited():
    assert input_error(loads, '{"candidates": 5}', "in.json") == (
        "in.json, field 'candidates': must be a list of candidate objects")
    assert input_error(loads, '{"candidates": {"text": "a"}}', "in.json") == (
        "in.json, field 'candidates': must be a list of candidate objects")
    assert input_error(candidates_from_objects, [0] * (MAX_CANDIDATES + 1), source="big.json") == (
        "big.json, field 'candidates': 200001 candidates; the limit is 200000")
    # exactly at the limit the count passes, and the first item is the one refused
    assert input_error(candidates_from_objects, [0] * MAX_CANDIDATES, source="big.json") == (
        "big.json, field 'candidates[0]': a candidate must be an object, found a number")


# ---------------------------------------------------------------------------------------------
# bytes to text
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("data, message", [
    # '[{"text": "caf' is 14 bytes, so the é of Latin-1 sits at offset 14
    (b'[{"text": "caf\xe9"}]', "in.json, line 1: not UTF-8 text (byte 0xe9 at offset 14); save the file as UTF-8"),
    # 2 bytes of '[\n' + 15 of '{"text": "a"},\n' + 10 of '{"text": "' = offset 27, on line 3
    (b'[\n{"text": "a"},\n{"text": "\xff"}]',
     "in.json, line 3: not UTF-8 text (byte 0xff at offset 27); save the file as UTF-8"),
    (b'\xff\xfe[\x00]\x00', "in.json, line 1: not UTF-8 text (byte 0xff at offset 0); save the file as UTF-8"),
    (b'[{"text": "\x00"}]', "in.json, line 1: binary data (NUL bytes), not a text file"),
    (b'{"text": "a"}\n\n{"text": "\x00"}', "in.json, line 3: binary data (NUL bytes), not a text file"),
    (b"", "in.json: the file is empty"),
    (b" \n\t\n", "in.json: the file is empty"),
    (b"\xef\xbb\xbf  \n", "in.json: the file is empty"),
])
def test_bytes_that_are_not_utf8_text_are_refused_with_where(data, message):
    assert input_error(load, data, name="in.json") == message


def test_a_utf8_bom_is_dropped_and_a_bytearray_read():
    same(load(b'\xef\xbb\xbf[{"id": "a", "text": "x"}]', name="bom.json").candidates, (cand("a", "x"),))
    same(load(bytearray(b'[{"id": "a", "text": "\xc3\xa9"}]'), name="b.json").candidates, (cand("a", "é"),))


def test_parse_json_takes_bytes_too():
    assert parse_json(b'\xef\xbb\xbf[1, {"a": "\xc3\xa9"}]', "b.json") == [1, {"a": "é"}]
    assert input_error(parse_json, b'[1, "\xe9"]', "b.json") == (
        "b.json, line 1: not UTF-8 text (byte 0xe9 at offset 5); save the file as UTF-8")


@pytest.mark.parametrize("size, message", [
    (MAX_BYTES + 1, "big.json: the file is 67.1 MB; the limit is 64 MB"),  # 67,108,865 bytes / 10^6
    (67_150_001, "big.json: the file is 67.2 MB; the limit is 64 MB"),
    (10**9, "big.json: the file is 1000.0 MB; the limit is 64 MB"),
])
def test_a_file_over_64_mib_is_refused_with_its_size(size, message):
    assert input_error(too_big, size, "big.json") == message


def test_a_file_of_exactly_64_mib_is_not_too_big():
    assert too_big(MAX_BYTES, "big.json") is None
    assert too_big(0, "big.json") is None


def test_too_big_is_checked_on_paths_before_reading_and_on_bytes(tmp_path):
    p = tmp_path / "big.json"
    with open(p, "wb") as f:
        f.truncate(MAX_BYTES + 1)  # sparse: nothing is written
    assert input_error(load, p) == f"{p}: the file is 67.1 MB; the limit is 64 MB"
    assert input_error(load, p, name="shown.json") == "shown.json: the file is 67.1 MB; the limit is 64 MB"
    assert input_error(load, bytes(MAX_BYTES + 1), name="up.json") == "up.json: the file is 67.1 MB; the limit is 64 MB"


def test_an_unreadable_path_is_one_line(tmp_path):
    missing = tmp_path / "missing.json"
    assert input_error(load, missing) == f"{missing}: cannot read the file (No such file or directory)"
    assert input_error(load, str(missing), name="up.json") == (
        "up.json: cannot read the file (No such file or directory)")
    assert input_error(load, tmp_path) == f"{tmp_path}: cannot read the file (Is a directory)"


def test_a_path_is_read_and_named_by_its_path(tmp_path):
    p = tmp_path / "c.jsonl"
    p.write_bytes(b'{"text": "a"}\n{"text": 5}\n')
    assert input_error(load, p) == f"{p}, line 2, field 'text': must be a string, found a number"
    assert input_error(load, str(p), name="nice.jsonl") == (
        "nice.jsonl, line 2, field 'text': must be a string, found a number")
    p.write_bytes(b'[{"id": "a", "text": "x"}]')
    got = load(p)
    assert (got.source, got.format) == (str(p), "json")
    same(got.candidates, (cand("a", "x"),))


# ---------------------------------------------------------------------------------------------
# JSON: syntax, depth and size
# ---------------------------------------------------------------------------------------------

def nest(n: int) -> str:
    return "[" * n + "]" * n


DEEP_PATH = "[0]" * 25 + "[0" + "..."  # a path of 100 "[0]" is cut to its first 77 characters


@pytest.mark.parametrize("text, message", [
    ("[1, 2", "in.json, line 1: not valid JSON: Expecting ',' delimiter (column 6)"),
    ('[{"text": "a"},\n]', "in.json, line 2: not valid JSON: Expecting value (column 1)"),
    ('{"candidates": [] // none\n}', "in.json, line 1: not valid JSON: Expecting ',' delimiter (column 19)"),
    (nest(MAX_DEPTH + 1),
     f"in.json, field '{DEEP_PATH}': JSON is nested too deeply to read (more than 100 levels)"),
    ("[" * 100_000 + "]" * 100_000, "in.json: JSON is nested too deeply to read"),
    ("[" + "1" * 5000 + "]",
     "in.json: not valid JSON: Exceeds the limit (4300 digits) for integer string conversion: value has 5000 digits;"
     " use sys.set_int_max_str_digits() to increase the limit"),
])
def test_json_that_cannot_be_read_says_why_and_where(text, message):
    assert input_error(loads, text, "in.json") == message


@pytest.mark.parametrize("line2, message", [
    ('{"text": ', "x.jsonl, line 2: not valid JSON: Expecting value (column 10)"),
    (nest(MAX_DEPTH + 1),
     f"x.jsonl, line 2, field '{DEEP_PATH}': JSON is nested too deeply to read (more than 100 levels)"),
    ("[" * 100_000, "x.jsonl, line 2: JSON is nested too deeply to read"),
    ("1" * 5000, "x.jsonl, line 2: not valid JSON: Exceeds the limit (4300 digits) for integer string conversion: "
                 "value has 5000 digits; use sys.set_int_max_str_digits() to increase the limit"),
])
def test_a_jsonl_line_that_cannot_be_read_names_its_line(line2, message):
    assert input_error(loads, '{"text": "a"}\n' + line2 + "\n", "x.jsonl") == message


def test_nesting_of_exactly_the_limit_is_read():
    value = parse_json(nest(MAX_DEPTH), "in.json")
    depth = 0
    while isinstance(value, list):
        value, depth = (value[0] if value else None), depth + 1
    assert depth == 100
    # 101 levels of an object (202 characters and more) are refused just the same
    assert input_error(parse_json, '{"a": ' * 101 + "1" + "}" * 101, "in.json") == (
        "in.json, field '" + "a" + ".a" * 38 + "...': "
        "JSON is nested too deeply to read (more than 100 levels)")


def test_the_path_named_is_the_first_too_deep_branch():
    # "a" holds 99 nested lists (levels 2..100: allowed), "Xb" holds 100 (levels 2..101: one too many)
    text = '{"a": ' + nest(99) + ', "Xb": ' + nest(100) + "}"
    assert input_error(parse_json, text, "in.json") == (
        "in.json, field 'Xb" + "[0]" * 25 + "...': JSON is nested too deeply to read (more than 100 levels)")


LONG = "x" * (MAX_FIELD_CHARS + 1)  # 8,388,609 characters


@pytest.mark.parametrize("key, field", [
    ("k" * 80, "k" * 80),  # a path of 80 characters is shown whole
    ("k" * 81, "k" * 77 + "..."),
    ("Xk", "Xk"),
])
def test_a_value_over_8_mib_of_characters_is_refused_by_its_path(key, field):
    text = '{"%s": "%s"}' % (key, LONG)
    assert input_error(parse_json, text, "in.json") == (
        f"in.json, field '{field}': a value of 8,388,609 characters; the limit is 8,388,608")


def test_long_values_deeper_in_are_named_by_their_path():
    text = '{"candidates": [{"text": "ok"}, {"text": "%s"}]}' % LONG
    assert input_error(loads, text, "in.json") == (
        "in.json, field 'candidates[1].text': a value of 8,388,609 characters; the limit is 8,388,608")
    assert input_error(parse_json, '"%s"' % LONG, "in.json") == (
        "in.json: a value of 8,388,609 characters; the limit is 8,388,608")


def test_a_value_of_exactly_8_mib_of_characters_is_read():
    assert parse_json('["%s"]' % ("y" * MAX_FIELD_CHARS), "in.json") == ["y" * MAX_FIELD_CHARS]


def test_parse_text_reads_json_or_else_jsonl_and_names_the_file():
    assert parse_text('[1, {"a": 2}]', "t.json") == [1, {"a": 2}]
    assert parse_text('{"a": 1}\n\n{"b": 2}\n', "t.jsonl") == [{"a": 1}, {"b": 2}]
    assert input_error(parse_text, '{"a": 1}\n{"b": \n', "t.jsonl") == (
        "t.jsonl, line 2: not valid JSON: Expecting value (column 7)")
    assert input_error(parse_text, nest(101), "deep.json") == (
        f"deep.json, field '{DEEP_PATH}': JSON is nested too deeply to read (more than 100 levels)")
    assert input_error(parse_text, "[" + "1" * 5000 + "]", "t.json") == (
        "t.json: not valid JSON: Exceeds the limit (4300 digits) for integer string conversion: value has 5000 digits;"
        " use sys.set_int_max_str_digits() to increase the limit")


# ---------------------------------------------------------------------------------------------
# JSONL: lines, and telling JSONL from JSON without the .jsonl name
# ---------------------------------------------------------------------------------------------

def test_jsonl_lines_are_split_on_newlines_only():
    # U+2028 inside a string is not a line break; \r\n endings are
    got = loads('{"id": "a", "text": "one\u2028two"}\r\n{"id": "b", "text": "x\u0085y"}\r\n', "x.jsonl")
    same(got.candidates, (cand("a", "one\u2028two"), cand("b", "x\u0085y")))
    assert got.format == "jsonl"


@pytest.mark.parametrize("text, ids", [
    ('{"text": "a"}\n{"text": "b"}', ["c1", "c2"]),
    ('  \n {"text": "a"} \n\n{"id": "z", "text": "b"}\n', ["c1", "z"]),
    ('{"text": "a"}\n{"text": "b"}\n{"text": "c"}', ["c1", "c2", "c3"]),
])
def test_several_object_lines_are_jsonl_without_the_name(text, ids):
    got = loads(text, "in.json")
    assert ([c.id for c in got.candidates], got.format) == (ids, "jsonl")


@pytest.mark.parametrize("text, message", [
    # a broken JSON array whose first line ends in "}" is not JSONL: its real error line is named
    ('[{"a": 1}\n, 5}', "in.json, line 2: not valid JSON: Expecting ',' delimiter (column 4)"),
    # a pretty-printed object is one JSON value: its error is on line 2, not line 1's unclosed brace
    ('{"text": "a",\n"score": }', "in.json, line 2: not valid JSON: Expecting value (column 10)"),
    # one object and a line of no-break space is one line, so not JSONL
    ('{"text": "a"}\n\u00a0', "in.json, line 2: not valid JSON: Extra data (column 1)"),
    # the first line is not a whole object: the text is read as one JSON value
    ('{"text":\n"a"}\n{"text": "b"}', "in.json, line 3: not valid JSON: Extra data (column 1)"),
    # the first line is a whole object: JSONL, and its second line is the bad one
    ('{"text": "a"}\n{"text":\n"b"}', "in.json, line 2: not valid JSON: Expecting value (column 9)"),
    ('{"text": "a"} {"text": "b"}', "in.json, line 1: not valid JSON: Extra data (column 15)"),
])
def test_text_that_is_not_one_json_value_is_jsonl_only_when_it_looks_it(text, message):
    assert input_error(loads, text, "in.json") == message


# ---------------------------------------------------------------------------------------------
# CSV rows
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("text, message", [
    ('id,text\na,"open\nb,c\n', "x.csv, row 2: not valid CSV: a quoted cell is never closed (unclosed quote)"),
    ('text\n"a"b\n', "x.csv, row 2: not valid CSV: ',' expected after '\"'"),
    # the second record starts on line 4: the first spans lines 2 and 3
    ('text\n"line1\nline2"\n"a"b\n', "x.csv, row 4: not valid CSV: ',' expected after '\"'"),
    # blank and all-empty records are skipped but still counted as lines
    ("text,score\n\n,\n  ,  \na,x\n", "x.csv, row 5, field 'score': must be a number, found 'x'"),
])
def test_csv_errors_name_the_line_the_record_starts_on(text, message):
    assert input_error(loads, text, "x.csv") == message


def test_csv_cells_longer_than_the_csv_modules_default_limit_are_read():
    got = loads("id,text\na," + "w" * 200_000 + "\n", "x.csv")
    same(got.candidates, (cand("a", "w" * 200_000),))


def test_a_quoted_csv_cell_keeps_its_own_line_breaks():
    # the file's \r\n ends records; the \r\n and the lone \r inside quotes are the cell's own
    got = loads('id,text\r\na,"one\r\ntwo\rthree"\r\nb,x\r\n', "x.csv")
    same(got.candidates, (cand("a", "one\r\ntwo\rthree"), cand("b", "x")))


def test_csv_with_bare_carriage_returns_is_read_record_by_record():
    # old Mac line ends: each \r ends a line, one inside quotes is kept in the cell, and a record's line counts
    # them (b's cell spans lines 3-4, the blank-id row starts on line 5); a row of three cells is named by its line
    text = 'id,text\ra,x\rb,"y\rz"\r,w\r'
    assert csv_rows(text, "c.csv") == [(1, ["id", "text"]), (2, ["a", "x"]), (3, ["b", "y\rz"]), (5, ["", "w"])]
    assert [(c.id, c.text) for c in loads(text, "c.csv").candidates] == [("a", "x"), ("b", "y\rz"), ("c3", "w")]
    assert input_error(loads, "id,text\ra,x\rb,y,z\r", "c.csv") == "c.csv, row 3: has 3 cells but the header has 2"


def test_bytes_are_decoded_or_refused_naming_the_first_bad_line():
    assert input_error(decode, b"\xff") == "input, line 1: not UTF-8 text (byte 0xff at offset 0); save the file as UTF-8"
    # the first NUL names the line, wherever the others are
    assert input_error(decode, b"a\nb\x00\x00\nc\x00", "f.txt") == "f.txt, line 2: binary data (NUL bytes), not a text file"
    assert decode(b"\xef\xbb\xbfcaf\xc3\xa9", "f.txt") == "café"  # a UTF-8 BOM is dropped


def test_a_value_of_exactly_the_limit_is_not_the_one_named():
    # "a" holds exactly 8 MiB of characters (allowed), "b" one more: the path named is b's
    text = '{"a": "%s", "b": "%s"}' % ("x" * MAX_FIELD_CHARS, LONG)
    assert input_error(parse_json, text, "in.json") == (
        "in.json, field 'b': a value of 8,388,609 characters; the limit is 8,388,608")


def test_nesting_of_exactly_the_limit_is_read_from_a_text_long_enough_to_be_scanned():
    # 100 levels with a ten-character string inside: 212 characters, past the 202 a text needs before its
    # depth is counted at all; 101 levels are refused
    inner = '"' + "x" * 10 + '"'
    assert parse_json("[" * 100 + inner + "]" * 100, "in.json") is not None
    assert input_error(parse_json, "[" * 101 + inner + "]" * 101, "in.json") == (
        f"in.json, field '{DEEP_PATH}': JSON is nested too deeply to read (more than 100 levels)")


def test_json_read_without_a_source_names_its_input():
    assert input_error(parse_json, "[1") == "input, line 1: not valid JSON: Expecting ',' delimiter (column 3)"
