"""Each setting is declared once (ctxcore.settings); Config, the CLI and the README follow it."""

import dataclasses
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT

from ctxcore import Config, InputError
from ctxcore.settings import BY_NAME, MAX_TOKENS, SETTINGS, markdown_table


def test_config_has_exactly_the_declared_settings_with_their_defaults():
    fields = {f.name: f.default for f in dataclasses.fields(Config)}
    assert fields == {s.name: s.default for s in SETTINGS}


def test_the_documented_defaults_are_the_seed_numbers():
    # written by hand: the seed's budget example (8192 window, 1024 answer, 5% safety); history is "auto" since
    # issue #15 (what the history uses, at most the seed's 40%); the seed's split is history_share=0.4, explicit
    assert (Config().window, Config().max_output, Config().safety, Config().history_share) == (8192, 1024, 0.05, "auto")
    assert Config(history_share=0.4).history_share == 0.4
    assert Config().near_dup == 0.8 and Config().order == "sandwich"


def test_link_keys_and_flags_are_unique():
    links = [s.link for s in SETTINGS if s.link]
    flags = [f for s in SETTINGS for f in (s.cli, s.off_flag) if f]
    assert len(links) == len(set(links)) and len(flags) == len(set(flags))


@pytest.mark.slow
def test_the_cli_offers_a_flag_for_every_setting():
    out = subprocess.run([sys.executable, "-m", "ctxcore", "build", "--help"], capture_output=True, text=True,
                         cwd=ROOT, timeout=60)
    assert out.returncode == 0
    for s in SETTINGS:
        assert s.cli in out.stdout, s.name
        if s.off_flag:
            assert s.off_flag in out.stdout


@pytest.mark.parametrize("name,value,message", [
    ("window", MAX_TOKENS + 1, "must be at most 10,000,000 tokens"),
    ("safety", 1.0, "fraction from 0 up to (not including) 1"),
    ("near_dup", 0.0, "above 0 and at most 1"),
    ("near_dup", 1.0, None),
    ("max_passages", 0, "1 or more"),
    ("order", "middle", "must be one of rank, sandwich, lost-in-the-middle, document, original"),
    ("history_share", "auto", None),
    ("history_share", 0.25, None),
    ("history_share", 1.5, "a fraction from 0 to 1 or 'auto'"),
    ("history_share", "half", "a fraction from 0 to 1 or 'auto'"),
    ("drop_unscored", "yes", "true or false"),
    ("label_overhead", "auto", None),
    ("label_overhead", -1, "whole number of tokens or 'auto'"),
    ("prefer_newest", 1, "true or false"),
])
def test_bounds_come_from_the_declaration(name, value, message):
    if message is None:
        assert getattr(Config(**{name: value}), name) == value
        return
    with pytest.raises(InputError, match=re.escape(message)) as err:
        Config(**{name: value})
    assert err.value.field == name


def test_one_token_limit_everywhere():
    # the CLI, the links and Config once disagreed (100M against 10M)
    for s in SETTINGS:
        assert s.hi is None or s.kind == "float" or s.hi <= MAX_TOKENS
    with pytest.raises(InputError):
        Config(budget=MAX_TOKENS + 1)
    assert Config(budget=MAX_TOKENS).budget == MAX_TOKENS


def test_every_choice_is_described():
    for s in SETTINGS:
        if s.kind == "choice":
            assert [c for c, _ in s.meanings] == list(s.choices) and all(m for _, m in s.meanings)


def test_the_readme_table_is_the_declaration():
    readme = (Path(ROOT) / "README.md").read_text(encoding="utf-8")
    assert markdown_table() in readme, "README's settings table is stale: paste ctxcore.settings.markdown_table()"


def test_sandwich_is_described_as_the_seed_defines_it():
    assert "second best last" in BY_NAME["order"].meaning("sandwich")
    assert "weakest in the middle" not in BY_NAME["order"].meaning("sandwich")


@pytest.mark.slow
def test_every_setting_has_a_sidebar_control():
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(Path(ROOT) / "app.py"), default_timeout=60).run()
    assert not at.exception
    keys = {w.key for kind in ("slider", "number_input", "toggle", "checkbox", "selectbox", "radio", "text_input")
            for w in getattr(at, kind)}
    assert "dbg.tokenizer" in keys
    for s in SETTINGS:
        if s.kind not in ("encoding", "model"):
            assert f"dbg.{s.name}" in keys, s.name
            if s.switch:
                assert f"dbg.{s.switch}" in keys, s.switch
