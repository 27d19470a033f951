import json

import pytest

from conftest import cli

from ctxcore import Config, Trace, build, load, trace_from_json, trace_schema


def test_trace_round_trips_to_identical_json(seed_candidates):
    t = build(seed_candidates, "how long do refunds take", Config(budget=60))
    again = trace_from_json(t.to_json())
    assert again == t and again.to_json() == t.to_json()


@pytest.mark.slow
def test_replaying_a_saved_trace_gives_the_same_prompt(seed_file, tmp_path):
    code, out, _ = cli("build", seed_file, "--budget", "60", "--order", "rank", "--format", "json")
    saved = tmp_path / "trace.json"
    saved.write_text(out)
    code, replay, _ = cli("build", saved, "--format", "json")
    assert code == 0 and json.loads(replay)["prompt"] == json.loads(out)["prompt"]
    assert replay == out
    code, changed, _ = cli("build", saved, "--budget", "30", "--format", "json")
    assert json.loads(changed)["config"]["budget"] == 30 and json.loads(changed)["config"]["order"] == "rank"


def test_trace_says_which_stage_decided_each_fate(seed_candidates):
    t = build(seed_candidates, "q", Config(budget=60))
    stages = {d.fate: d.stage for d in t.decisions}
    assert stages == {"kept": "select", "exact_duplicate": "exact_dedup", "near_duplicate": "near_dedup",
                      "over_budget": "select"}


def test_blocks_tile_the_prompt_in_trust_order(seed_candidates):
    from ctxcore import Inputs

    t = build(seed_candidates, "q", Config(budget=60, label_overhead=0),
              Inputs(system="sys", instructions="inst", schema="{}", tools=("tool",),
                     history=({"role": "user", "content": "earlier"},)))
    kinds = [b.kind for b in t.blocks]
    firsts = list(dict.fromkeys(kinds))
    assert firsts == ["system", "instructions", "schema", "tool", "evidence", "history", "rule", "question"]
    assert t.blocks[0].start_token == 0 and t.blocks[-1].end_token == t.prompt.tokens
    assert all(a.end_token == b.start_token for a, b in zip(t.blocks, t.blocks[1:]))
    assert [b.label for b in t.blocks if b.label] == ["S1", "S2", "S3", "S4"]


@pytest.mark.slow
def test_schema_is_generated_and_describes_every_fate():
    schema = trace_schema()
    assert schema["properties"]["format"] == {"const": "ctxcore.trace/1"}
    fate = schema["$defs"]["Decision"]["properties"]["fate"]
    assert set(fate["enum"]) >= {"kept", "exact_duplicate", "near_duplicate", "merged", "below_threshold",
                                 "stale", "not_permitted", "over_budget"}
    assert set(schema["$defs"]["Config"]["properties"]) == set(Config().to_dict())
    code, out, _ = cli("schema")
    assert code == 0 and json.loads(out) == schema


def test_trace_validates_against_its_schema(seed_candidates):
    jsonschema = __import__("pytest").importorskip("jsonschema")
    t = build(seed_candidates, "q", Config(budget=60))
    jsonschema.validate(json.loads(t.to_json()), trace_schema())


@pytest.mark.slow
def test_byte_identical_across_processes_and_hash_seeds(seed_file):
    outs = set()
    for seed in ("0", "1", "12345"):
        code, out, _ = cli("build", seed_file, "--budget", "60", "--format", "json", env={"PYTHONHASHSEED": seed})
        assert code == 0
        outs.add(out)
    assert len(outs) == 1


@pytest.mark.slow
def test_loaded_trace_keeps_the_logged_trace(seed_file, tmp_path):
    code, out, _ = cli("build", seed_file, "--format", "json")
    p = tmp_path / "t.json"
    p.write_text(out)
    got = load(p)
    assert got.format == "trace" and got.trace.prompt.text == json.loads(out)["prompt"]["text"]
