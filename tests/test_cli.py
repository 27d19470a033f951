import json

import pytest

from conftest import cli


@pytest.mark.slow
def test_bad_setting_is_one_line_and_exit_2(seed_file):
    code, out, err = cli("build", seed_file, "--near-dup", "1.5")
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "near_dup" in err and "Traceback" not in err


@pytest.mark.slow
def test_bad_file_is_one_line_and_exit_2(tmp_path):
    p = tmp_path / "broken.jsonl"
    p.write_text('{"id": "a", "text": "x"}\n{"id": \n')
    code, _, err = cli("build", p)
    assert code == 2 and err.startswith(f"error: {p}, line 2") and err.count("\n") == 1


@pytest.mark.slow
def test_unknown_option_is_one_line(seed_file):
    code, _, err = cli("build", seed_file, "--frobnicate")
    assert code == 2 and err.count("\n") == 1


@pytest.mark.slow
def test_prompt_format_prints_the_prompt(seed_file):
    code, out, _ = cli("build", seed_file, "--format", "prompt", "--query", "Where is my order?")
    assert code == 0 and out.rstrip().endswith("Question: Where is my order?")


@pytest.mark.slow
def test_every_setting_flag_reaches_the_config(seed_file, tmp_path):
    cfg = tmp_path / "settings.json"
    cfg.write_text(json.dumps({"min_score": 0.6, "order": "document"}))
    code, out, err = cli("build", seed_file, "--config", cfg, "--window", "4096", "--max-output", "512",
                         "--safety", "0.1", "--history-share", "0.3", "--model", "gpt-4o", "--no-near-dup",
                         "--select", "mmr", "--mmr-lambda", "0.5", "--label-overhead", "7", "--compress",
                         "--max-chunk-tokens", "50", "--merge-adjacent", "--no-prefer-newest", "--format", "json")
    assert code == 0, err
    c = json.loads(out)["config"]
    assert (c["min_score"], c["order"], c["window"], c["max_output"], c["safety"], c["history_share"]) == (
        0.6, "document", 4096, 512, 0.1, 0.3)
    assert (c["encoding"], c["near_dup"], c["select"], c["mmr_lambda"], c["label_overhead"]) == (
        "o200k_base", None, "mmr", 0.5, 7)
    assert (c["compress"], c["max_chunk_tokens"], c["merge_adjacent"], c["prefer_newest"]) == (True, 50, True, False)
