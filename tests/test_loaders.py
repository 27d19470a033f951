import json

import pytest

from ctxcore import Config, InputError, load, loads


def test_json_array(tmp_path):
    p = tmp_path / "c.json"
    p.write_text(json.dumps([{"id": "a", "text": "alpha", "score": 0.5}, {"text": "beta"}]))
    got = load(p)
    assert got.format == "json" and [c.id for c in got.candidates] == ["a", "c2"]
    assert got.candidates[1].generated_id and got.candidates[1].score is None


def test_generated_ids_are_reported_in_the_trace(tmp_path):
    p = tmp_path / "c.json"
    p.write_text(json.dumps([{"text": "alpha"}, {"text": "beta"}]))
    t = load(p).build(Config(budget=100))
    assert any("ids were generated" in w for w in t.warnings)


def test_request_object_with_blocks_and_config():
    got = loads(json.dumps({"query": "q?", "system": "sys", "instructions": "inst", "schema": {"type": "object"},
                            "tools": [{"name": "lookup"}], "history": [{"role": "user", "content": "hi"}, "hello"],
                            "config": {"budget": 123}, "scenario": {"title": "x"},
                            "candidates": [{"id": "a", "text": "t", "score": 1}]}), "req.json")
    assert got.query == "q?" and got.inputs.system == "sys" and '"type": "object"' in got.inputs.schema
    assert got.inputs.tools == ('{\n  "name": "lookup"\n}',)
    assert got.inputs.history[1] == {"role": "user", "content": "hello"}
    assert got.settings().budget == 123 and got.extra == {"scenario": {"title": "x"}}


def test_jsonl_errors_name_the_line(tmp_path):
    p = tmp_path / "c.jsonl"
    p.write_text('{"id": "a", "text": "x"}\n{"id": "b", "text": 5}\n')
    with pytest.raises(InputError) as err:
        load(p)
    assert str(err.value) == f"{p}, line 2, field 'text': must be a string, found a number"


def test_csv_with_metadata_columns(tmp_path):
    p = tmp_path / "c.csv"
    p.write_text("id,text,score,doc_id,chunk_index,team\na,\"alpha, with comma\",0.5,d1,0,support\nb,beta,,d1,1,\n")
    got = load(p)
    a, b = got.candidates
    assert (a.text, a.score, a.doc_id, a.chunk_index, a.metadata) == ("alpha, with comma", 0.5, "d1", 0,
                                                                      {"team": "support"})
    assert b.score is None and got.format == "csv"


def test_csv_errors_name_the_row_and_field(tmp_path):
    p = tmp_path / "c.csv"
    p.write_text("id,text,score\na,alpha,0.5\nb,beta,high\n")
    with pytest.raises(InputError, match=r"row 3, field 'score': must be a number, found 'high'"):
        load(p)
    p.write_text("id,body\na,alpha\n")
    with pytest.raises(InputError, match="no 'text' column"):
        load(p)


@pytest.mark.parametrize("content, message", [
    (b"", "the file is empty"),
    (b"   \n ", "the file is empty"),
    (b"[1, 2", "not valid JSON"),
    (b"42", "expected a list of candidates"),
    (b'{"query": "q"}', "needs a 'candidates' list"),
    (b'[{"id": "a", "text": "x", "score": NaN}]', "must be a finite number"),
    (b'[{"id": "a", "text": "x", "score": "0.9"}]', "score': must be a number"),
    (b'[{"id": "a\\u0007b", "text": "x"}]', "control characters"),
    (b'[{"id": "a"}]', r"field 'candidates\[0\]\.text': missing"),
    (b"\xff\xfe\x00\x01", "not UTF-8"),
    (b'{"format": "ctxcore.trace/9"}', "unsupported trace format"),
    (b"[" * 100000 + b"]" * 100000, "nested too deeply"),
])
def test_bad_input_gives_one_clear_error(content, message):
    with pytest.raises(InputError, match=message):
        load(content, name="upload.json")


def test_utf8_bom_is_accepted():
    assert load(b'\xef\xbb\xbf[{"id": "a", "text": "x"}]', name="bom.json").candidates[0].id == "a"


def test_bad_config_in_file_names_the_field():
    with pytest.raises(InputError, match=r"cfg.json, field 'order': must be one of"):
        loads(json.dumps({"candidates": [], "config": {"order": "random"}}), "cfg.json")
    with pytest.raises(InputError, match=r"field 'nonsense': unknown setting"):
        loads(json.dumps({"candidates": [], "config": {"nonsense": 1}}), "cfg.json")


def test_a_repeated_id_is_read_not_refused():
    # issue #15: hybrid retrieval joins give the same id twice; the build settles it (pipeline.unique_ids)
    loaded = load(b'[{"id": "a", "text": "x"}, {"id": "a", "text": "y"}]', name="upload.json")
    assert [c.id for c in loaded.candidates] == ["a", "a"]
    assert [d.id for d in loaded.build().decisions] == ["a", "a#2"]
