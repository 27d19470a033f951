"""Hand-written tables for the loaders' dispatch (ctxcore.io.loaders): which reader a file goes to by its name and
content, request objects (query, config, fixed blocks, history), CSV headers and cells, and saved traces that
are rebuilt rather than trusted. Every refusal is asserted as its whole message; every accepted file as whole
records.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import cand, input_error, same

from ctxcore import Candidate, Config, Inputs, Logged, build, load, loads
from ctxcore.io.limits import MAX_KEYS
from ctxcore.io.loaders import candidates_from_objects, from_object, inputs_from_object, request_from_object

NEEDS_CANDIDATES = (
    "an object needs a 'candidates' list (or use a list of candidates); formats tried: ctxcore trace (no 'format'), "
    "candidates object (no 'candidates'), OpenInference/Phoenix spans (no span_kind or context), OTLP JSON (no "
    "'resourceSpans'), Langfuse trace (no 'observations'), MLflow trace (no 'info' and 'data.spans'), LangSmith run "
    "(no 'run_type')")
DIFFERS = ("the stored trace differs from a rebuild of its candidates and settings ({}); the rebuild is shown, and "
           "the stored prompt is kept as the logged one")


# ---------------------------------------------------------------------------------------------
# which reader: by name and content
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("text, source, fmt, ids", [
    ('[{"id": "a", "text": "x"}]', "in.json", "json", ["a"]),
    ('[{"id": "a", "text": "x"}]', "input", "json", ["a"]),
    ('  \n[{"id": "a", "text": "x"}]', "upload", "json", ["a"]),
    ('{"candidates": [{"id": "a", "text": "x"}]}', "req", "json", ["a"]),
    ('{"id": "a", "text": "x"}\n', "c.jsonl", "jsonl", ["a"]),
    ('{"id": "a", "text": "x"}\n', "C.JSONL", "jsonl", ["a"]),
    ('\n {"id": "a", "text": "x"}\n{"text": "y"}', "c.JSONL", "jsonl", ["a", "c2"]),
    ('{"id": "a", "text": "x"}\n{"text": "y"}', "input", "jsonl", ["a", "c2"]),
    ('[{"id": "a", "text": "x"}]', "c.jsonl", "json", ["a"]),  # a .jsonl file holding one JSON list
    ("text\nx\n", "c.csv", "csv", ["c1"]),
    ("text\nx\n", "C.CSV", "csv", ["c1"]),
    ("text\nx\n", "notes.txt", "csv", ["c1"]),
    ("text\nx\n", "input", "csv", ["c1"]),
])
def test_the_reader_is_chosen_by_name_and_content(text, source, fmt, ids):
    got = loads(text, source)
    assert (got.format, got.source, [c.id for c in got.candidates]) == (fmt, source, ids)


@pytest.mark.parametrize("text, source, message", [
    # a .csv name wins over JSON-looking content
    ('[{"text": "a"}]', "X.CSV",
     "X.CSV, line 1, field 'text': the CSV header has no 'text' column (found: \"[{\\\"text\\\": \\\"a\\\"}]\")"),
    ('{"text": "a"}', "data.csv",
     "data.csv, line 1, field 'text': the CSV header has no 'text' column (found: \"{\\\"text\\\": \\\"a\\\"}\")"),
    # a .json name makes any content JSON
    ("text\nhello", "in.json", "in.json, line 1: not valid JSON: Expecting value (column 1)"),
    ('"a string"', "in.json", "in.json: expected a list of candidates or an object with 'candidates', found a string"),
    ("42", "in.jsonl", "in.jsonl: expected a list of candidates or an object with 'candidates', found a number"),
    ("null", "in.json", "in.json: expected a list of candidates or an object with 'candidates', found null"),
    ("true", "in.json", "in.json: expected a list of candidates or an object with 'candidates', found a boolean"),
    ('{"query": "q"}', "in.json", "in.json, field 'candidates': " + NEEDS_CANDIDATES),
    ('{"id": "a", "text": "x"}', "in.json", "in.json, field 'candidates': " + NEEDS_CANDIDATES),
    ('{"format": "ctxcore.trace/9"}', "t.json",
     "t.json, field 'format': unsupported trace format 'ctxcore.trace/9'; this version reads 'ctxcore.trace/1'"),
    ('{"format": 5, "candidates": []}', "t.json",
     "t.json, field 'format': unsupported trace format 5; this version reads 'ctxcore.trace/1'"),
    ('[{"text": 5}]', "input", "input, field 'candidates[0].text': must be a string, found a number"),
])
def test_content_a_reader_cannot_take_is_refused_whole(text, source, message):
    assert input_error(loads, text, source) == message


def test_loads_names_unnamed_text_input():
    assert input_error(loads, '[{"id": "a"}]') == (
        "input, field 'candidates[0].text': missing: every candidate needs its text")
    assert loads('[{"id": "a", "text": "x"}]').source == "input"


def test_a_file_is_read_with_its_name_for_messages(tmp_path):
    p = tmp_path / "c.csv"
    p.write_text("id,text,score\na,x,high\n")
    assert input_error(load, p) == f"{p}, row 2, field 'score': must be a number, found 'high'"
    assert input_error(load, p, name="shown.csv") == "shown.csv, row 2, field 'score': must be a number, found 'high'"
    got = load(b'{"id": "a", "text": "x"}\n{"id": "b", "text": "y"}\n', name="up.jsonl")
    assert (got.format, got.source) == ("jsonl", "up.jsonl")
    same(got.candidates, (cand("a", "x"), cand("b", "y")))


def test_a_parquet_file_goes_to_the_parquet_reader_by_its_magic_bytes():
    message = ("not a readable parquet file (Parquet magic bytes not found in footer. Either the file is corrupted or "
               "this is not a parquet file.)")
    assert input_error(load, b"PAR1 not really", name="spans.parquet") == "spans.parquet: " + message
    assert input_error(load, b"PAR1 not really") == "input: " + message


# ---------------------------------------------------------------------------------------------
# a request object
# ---------------------------------------------------------------------------------------------

def test_a_whole_request_is_read_whole():
    text = json.dumps({
        "query": "How long do refunds take?", "system": "Be brief.", "instructions": None,
        "schema": {"type": "object", "title": "Réponse"}, "tools": [{"name": "lookup"}, "plain tool"],
        "history": ["hello", {"role": "assistant", "content": "hi", "name": "bot"}, {"content": "again"},
                    {"role": 5}],
        "config": {"budget": 123}, "scenario": {"title": "x"}, "note": "n",
        "candidates": [{"id": "a", "text": "t", "score": 1, "team": "s"}],
    }, ensure_ascii=False)
    got = loads(text, "req.json")
    same(got.candidates, (cand("a", "t", score=1.0, metadata={"team": "s"}),))
    assert got.query == "How long do refunds take?"
    same(got.inputs, Inputs(
        system="Be brief.", instructions="", schema='{\n  "type": "object",\n  "title": "Réponse"\n}',
        tools=('{\n  "name": "lookup"\n}', "plain tool"),
        history=({"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi"},
                 {"role": "user", "content": "again"}, {"role": "5", "content": ""})))
    assert (got.config, got.format, got.source) == ({"budget": 123}, "json", "req.json")
    assert got.extra == {"scenario": {"title": "x"}, "note": "n"}
    assert got.warnings == ("fields team are not candidate fields; they were kept as metadata",)
    assert (got.trace, got.logged) == (None, None)
    assert got.settings().budget == 123


@pytest.mark.parametrize("extra, query, config", [
    ({}, "", {}),
    ({"query": None, "config": None}, "", {}),
    ({"query": "", "config": []}, "", {}),
    ({"query": "q", "config": {"order": "rank"}}, "q", {"order": "rank"}),
])
def test_a_request_without_query_or_config_reads_as_empty(extra, query, config):
    got = loads(json.dumps({"candidates": [{"id": "a", "text": "x"}], **extra}), "req.json")
    assert (got.query, got.config, got.extra, got.inputs) == (query, config, {}, Inputs())


@pytest.mark.parametrize("request_, message", [
    ({"query": 5}, "req.json, field 'query': the query must be a string"),
    ({"query": ["q"]}, "req.json, field 'query': the query must be a string"),
    ({"config": "fast"}, "req.json: settings must be a JSON object"),
    ({"config": {"order": "random"}},
     "req.json, field 'order': must be one of rank, sandwich, lost-in-the-middle, document, original (got 'random')"),
    ({"system": 5}, "req.json, field 'system': must be text or JSON"),
    ({"instructions": True}, "req.json, field 'instructions': must be text or JSON"),
    ({"schema": 1.5}, "req.json, field 'schema': must be text or JSON"),
    ({"tools": ["a", 5]}, "req.json, field 'tools[1]': must be text or JSON"),
    ({"tools": 5}, "req.json, field 'tools[0]': must be text or JSON"),
    ({"history": "hello"}, "req.json, field 'history': history must be a list of turns"),
    ({"history": 5}, "req.json, field 'history': history must be a list of turns"),
    ({"history": ["a", 5]}, "req.json, field 'history[1]': each turn must be a string or {role, content}"),
    ({"history": [["user", "hi"]]}, "req.json, field 'history[0]': each turn must be a string or {role, content}"),
    ({"history": [{"role": "user", "content": 5}]},
     "req.json, field 'history[0]': each turn must be a string or {role, content}"),
    ({"history": [{"content": None}]}, "req.json, field 'history[0]': each turn must be a string or {role, content}"),
])
def test_a_bad_request_field_is_named(request_, message):
    text = json.dumps({"candidates": [{"id": "a", "text": "x"}], **request_})
    assert input_error(loads, text, "req.json") == message


@pytest.mark.parametrize("data, inputs", [
    ({}, Inputs()),
    ({"tools": None, "history": None, "system": None}, Inputs()),
    ({"tools": [], "history": {}}, Inputs()),
    ({"tools": 0, "history": ""}, Inputs()),
    ({"tools": {"name": "é"}}, Inputs(tools=('{\n  "name": "é"\n}',))),
    ({"tools": "search"}, Inputs(tools=("search",))),
    ({"tools": [["a", 1]]}, Inputs(tools=('[\n  "a",\n  1\n]',))),
    ({"system": "s", "instructions": "i", "schema": "sc"}, Inputs(system="s", instructions="i", schema="sc")),
    ({"history": [{"role": "tool"}]}, Inputs(history=({"role": "tool", "content": ""},))),
])
def test_the_fixed_blocks_of_a_request(data, inputs):
    same(inputs_from_object(data, "req.json"), inputs)


def test_request_from_object_keeps_the_format_it_is_given():
    got = request_from_object({"candidates": [{"text": "x"}], "query": "q"}, "log.json", fmt="langfuse")
    assert (got.format, got.source, got.query) == ("langfuse", "log.json", "q")
    same(got.candidates, (cand("c1", "x", generated_id=True),))
    assert request_from_object({"candidates": []}, "r.json").format == "json"


def test_candidates_from_objects_defaults_and_field_name():
    assert input_error(candidates_from_objects, [5]) == (
        "input, field 'candidates[0]': a candidate must be an object, found a number")
    assert input_error(candidates_from_objects, 5) == "input, field 'candidates': must be a list of candidate objects"
    assert input_error(candidates_from_objects, [{"text": 5}], source="s.json", field="docs") == (
        "s.json, field 'docs[0].text': must be a string, found a number")
    same(candidates_from_objects([{"id": "a", "text": "x"}, {"text": "y", "team": 1}]),
         (cand("a", "x"), cand("c2", "y", metadata={"team": 1}, generated_id=True)))


def test_from_object_takes_parsed_json():
    got = from_object([{"id": "a", "text": "x"}], "obj")
    assert (got.format, got.source, got.warnings) == ("json", "obj", ())
    same(got.candidates, (cand("a", "x"),))
    assert from_object([]).candidates == () and from_object([]).source == "input"
    assert input_error(from_object, 5) == (
        "input: expected a list of candidates or an object with 'candidates', found a number")
    assert input_error(from_object, [5], "obj") == (
        "obj, field 'candidates[0]': a candidate must be an object, found a number")


# ---------------------------------------------------------------------------------------------
# CSV
# ---------------------------------------------------------------------------------------------

HEADER = ("id,text,score,doc_id,chunk_index,title,section,date,version,source_type,trust,permissions,team,metadata,"
          "embedding,")


@pytest.mark.parametrize("row, expected", [
    ("a,alpha, 0.5 ,d1, 2 ,T,S,2024-01-01,v2,faq,user,a;b|c,support,m,[1],ignored",
     cand("a", "alpha", score=0.5, doc_id="d1", chunk_index=2, title="T", section="S", date="2024-01-01", version="v2",
          source_type="faq", trust="user", permissions=("a", "b", "c"),
          metadata={"team": "support", "metadata": "m", "embedding": "[1]"})),
    # empty cells are no value; an empty metadata cell is kept as ""
    ("b,beta,,,,,,,,,,,,,,", cand("b", "beta", metadata={"team": "", "metadata": "", "embedding": ""})),
    (",\"multi\nline, with comma\",1,,0,,,,,,,,x,,,",
     cand("c1", "multi\nline, with comma", score=1.0, chunk_index=0,
          metadata={"team": "x", "metadata": "", "embedding": ""}, generated_id=True)),
])
def test_a_csv_row_is_read_whole(row, expected):
    got = loads(HEADER + "\n" + row + "\n", "c.csv")
    same(got.candidates, (expected,))
    assert (got.format, got.source, got.warnings) == ("csv", "c.csv", ())


def test_csv_header_names_are_trimmed_and_rows_numbered():
    got = loads(" id , text ,Score\r\n\r\na,x,1\r\n,y,2\r\n", "c.csv")
    same(got.candidates, (cand("a", "x", metadata={"Score": "1"}), cand("c2", "y", metadata={"Score": "2"},
                                                                         generated_id=True)))
    assert loads("text,id\n", "c.csv").candidates == ()


FIFTEEN = ", ".join(f'"column_{i:02d}"' for i in range(1, 16))  # 15 * 11 + 14 * 2 = 193 characters


@pytest.mark.parametrize("text, message", [
    ("", "c.csv, line 1: the CSV header is empty; the first line must name the columns (text at least)"),
    ("\n\n", "c.csv, line 1: the CSV header is empty; the first line must name the columns (text at least)"),
    (",,\n", "c.csv, line 1: the CSV header is empty; the first line must name the columns (text at least)"),
    ("id,body\na,b\n", "c.csv, line 1, field 'text': the CSV header has no 'text' column (found: \"id\", \"body\")"),
    # blank lines before the header are skipped, and the error names the header's own line
    ("\n\nid,body\na,b\n",
     "c.csv, line 3, field 'text': the CSV header has no 'text' column (found: \"id\", \"body\")"),
    ("id;text\na;b\n", "c.csv, line 1, field 'text': the CSV header has no 'text' column (found: \"id;text\")"),
    ("Text,tëxt\n", "c.csv, line 1, field 'text': the CSV header has no 'text' column (found: \"Text\", \"tëxt\")"),
    # 193 characters, then ', "colu' makes the 200 shown
    (",".join(f"column_{i:02d}" for i in range(1, 31)) + "\n",
     "c.csv, line 1, field 'text': the CSV header has no 'text' column (found: " + FIFTEEN + ', "colu)'),
    ("text,id,id,text,,\n", "c.csv, line 1, field 'id': the column appears twice in the header"),
    ("text, text\n", "c.csv, line 1, field 'text': the column appears twice in the header"),
    ("id,text,score\na,b\n", "c.csv, row 2: has 2 cells but the header has 3"),
    ("id,text,score\na,b,1\n\nc,d,1,e\n", "c.csv, row 4: has 4 cells but the header has 3"),
    ("id,text,score\na,b,high\n", "c.csv, row 2, field 'score': must be a number, found 'high'"),
    ("text,score\nb," + "9x" * 30 + "\n", "c.csv, row 2, field 'score': must be a number, found '" + "9x" * 20 + "'"),
    ("text,score\nb,nan\n", "c.csv, row 2, field 'score': must be a finite number, found nan"),
    ("text,score\nb,1e400\n", "c.csv, row 2, field 'score': must be a finite number, found inf"),
    ("text,chunk_index\nb,\u00b2\n", "c.csv, row 2, field 'chunk_index': must be a whole number, found '\u00b2'"),
    ("text,chunk_index\nb,-1\n", "c.csv, row 2, field 'chunk_index': must be a whole number, found '-1'"),
    ("text,chunk_index\nb,1.5\n", "c.csv, row 2, field 'chunk_index': must be a whole number, found '1.5'"),
    ("text,chunk_index\nb,\u0663\n", "c.csv, row 2, field 'chunk_index': must be a whole number, found '\u0663'"),
    ("text,chunk_index\nb," + "7" * 30 + "x" + "7" * 20 + "\n",
     "c.csv, row 2, field 'chunk_index': must be a whole number, found '" + "7" * 30 + "x" + "7" * 9 + "'"),
    ("id,text\na,\n", "c.csv, row 2, field 'text': missing: every candidate needs its text"),
    ('id,text\n"a\nb",x\n', "c.csv, row 2, field 'id': contains control characters"),
    ("text,trust\nx,admin\n", "c.csv, row 2, field 'trust': must be one of system, developer, retrieved, user, tool"),
    ("text,title\nx,ok\ny,\"\\ud800\"\n", None),  # a backslash-u in CSV is just text: read
])
def test_a_bad_csv_is_refused_with_its_line_or_row(text, message):
    if message is None:
        assert [c.title for c in loads(text, "c.csv").candidates] == ["ok", "\\ud800"]
        return
    assert input_error(loads, text, "c.csv") == message


def test_the_csv_column_limit_is_10000():
    at_limit = "text," + ",".join(f"c{i}" for i in range(MAX_KEYS - 1))  # 1 + 9,999 = 10,000 columns
    assert loads(at_limit + "\n", "c.csv").candidates == ()
    assert input_error(loads, at_limit + ",one_more\n", "c.csv") == (
        "c.csv, line 1: the CSV header names 10001 columns; the limit is 10000")


# ---------------------------------------------------------------------------------------------
# saved traces: rebuilt, never trusted
# ---------------------------------------------------------------------------------------------

CANDS = (Candidate("refund", "Refunds are processed within five business days.", 0.9),
         Candidate("ship", "Return shipping is free for damaged items.", 0.7))
QUERY = "How long do refunds take?"
# a saved trace stores each candidate's token count: 9 and 8 with the default encoding
SAVED = (Candidate("refund", CANDS[0].text, 0.9, tokens=9), Candidate("ship", CANDS[1].text, 0.7, tokens=8))


@pytest.fixture(scope="module")
def saved():
    trace = build(CANDS, QUERY, Config(budget=200))
    return trace, json.loads(trace.to_json())


def test_an_untouched_saved_trace_loads_as_saved(saved):
    trace, data = saved
    got = loads(json.dumps(data), "saved.json")
    same(got.candidates, SAVED)
    assert (got.query, got.inputs, got.config, got.format, got.source) == (
        QUERY, Inputs(), Config(budget=200).to_dict(), "trace", "saved.json")
    assert json.loads(got.trace.to_json()) == data
    assert (got.warnings, got.logged, got.extra) == ((), None, {})


def test_a_saved_trace_with_another_prompt_is_rebuilt_and_the_stored_prompt_kept_as_logged(saved):
    trace, data = saved
    tampered = json.loads(json.dumps(data))
    tampered["prompt"] = {"text": "Approve every refund.", "tokens": 4}
    got = loads(json.dumps(tampered), "saved.json")
    logged = Logged("ctxcore", prompt_text="Approve every refund.", prompt_tokens=4)
    note = DIFFERS.format("the prompt text differs")
    assert (got.warnings, got.warnings[0].kind, got.warnings[0].ids) == ((note,), "replay_differs", ())
    assert got.logged == logged and got.trace.logged == logged
    assert got.trace.prompt == trace.prompt and got.trace.decisions == trace.decisions
    assert got.trace.warnings == (note,) + trace.warnings
    assert (got.query, got.inputs, got.config, got.format, got.source) == (
        QUERY, Inputs(), Config(budget=200).to_dict(), "trace", "saved.json")
    same(got.candidates, SAVED)


def test_a_saved_trace_that_logged_its_prompt_keeps_that_log(saved):
    trace, data = saved
    tampered = {**json.loads(json.dumps(data)),
                "logged": {"format": "langfuse", "prompt_text": "as sent", "model": "m"}}
    tampered["prompt"] = {"text": "edited", "tokens": 1}
    got = loads(json.dumps(tampered), "saved.json")
    assert got.logged == Logged("langfuse", model="m", prompt_text="as sent")
    assert got.trace.logged == got.logged


def test_changed_fates_are_named_at_most_fifty(saved):
    cands = [Candidate(f"d{i:02d}", f"Passage number {i} about refunds.", 0.5) for i in range(52)]
    data = json.loads(build(cands, "q?", Config(budget=5000)).to_json())
    # all 52 were kept; the edited trace says they were over budget
    data["decisions"] = [{**{k: v for k, v in d.items() if k not in ("label", "position")}, "fate": "over_budget"}
                         for d in data["decisions"]]
    got = loads(json.dumps(data), "saved.json")
    assert got.warnings == (DIFFERS.format("52 fates or labels differ"),)
    assert got.warnings[0].ids == tuple(f"d{i:02d}" for i in range(50))
    assert [d.fate for d in got.trace.decisions] == ["kept"] * 52


def test_one_changed_label_is_named(saved):
    trace, data = saved
    tampered = json.loads(json.dumps(data))
    tampered["decisions"][1]["label"] = "S9"
    got = loads(json.dumps(tampered), "saved.json")
    assert (got.warnings, got.warnings[0].ids) == ((DIFFERS.format("1 fates or labels differ"),), ("ship",))
    assert got.logged == Logged("ctxcore", prompt_text=trace.prompt.text, prompt_tokens=trace.prompt.tokens)


def test_a_csv_of_more_than_200000_rows_is_refused_by_its_count():
    assert input_error(loads, "text\n" + "a\n" * 200_001, "c.csv") == (
        "c.csv, field 'row': 200001 candidates; the limit is 200000")


TRACES = Path(__file__).parent / "fixtures" / "traces"


@pytest.mark.parametrize("fixture, fmt", [
    ("phoenix_flat.jsonl", "openinference"),   # JSONL lines of spans
    ("phoenix_nested.json", "openinference"),  # a JSON list of spans
    ("langfuse_trace.json", "langfuse"),       # one JSON object
    ("otlp_openinference.jsonl", "otlp"),
])
def test_a_logged_trace_is_handed_to_its_importer_under_the_files_name(fixture, fmt):
    got = loads((TRACES / fixture).read_text(encoding="utf-8"), "my-" + fixture)
    assert (got.format, got.source) == (fmt, "my-" + fixture)


def test_jsonl_extra_fields_are_said_in_the_warnings():
    got = loads('{"text": "a", "team": "x"}\n{"text": "b", "lang": "en"}\n', "x.jsonl")
    assert got.warnings == ("fields lang, team are not candidate fields; they were kept as metadata",)
    same(got.candidates, (cand("c1", metadata={"team": "x"}, generated_id=True),
                          cand("c2", "b", metadata={"lang": "en"}, generated_id=True)))
    assert loads('{"text": "a"}\n', "x.jsonl").warnings == ()


def test_a_saved_trace_with_fixed_blocks_is_rebuilt_with_them():
    inputs = Inputs(system="Be brief.", instructions="Answer in English.", history=({"role": "user", "content": "hi"},))
    trace = build(CANDS, QUERY, Config(budget=300), inputs)
    got = loads(trace.to_json(), "saved.json")
    assert (got.warnings, got.logged, got.inputs) == ((), None, inputs)
    assert got.trace.prompt == trace.prompt


def test_a_broken_saved_trace_is_refused_naming_the_file(saved):
    trace, data = saved
    broken = {**json.loads(json.dumps(data)), "decisions": data["decisions"][:1]}
    assert input_error(loads, json.dumps(broken), "saved.json") == (
        "saved.json, field 'decisions': the decisions do not name the same ids as the candidates")
