"""Sources: a trace named as SCHEME:LOCATION#TRACE wherever a file is accepted (issues #31, #32)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from ctxcore import InputError
from ctxcore.cli import main, run
from ctxcore.io import sources
from ctxcore.io.sources import Reader, Source, parse

ROOT = Path(__file__).resolve().parents[1]
NESTED = ROOT / "tests/fixtures/traces/phoenix_nested.json"


@pytest.mark.parametrize("text, expected", [
    ("phoenix:http://127.0.0.1:6006#abc", Source("phoenix", "http://127.0.0.1:6006", "abc")),
    ("mlflow:http://h:5000/#tr-1", Source("mlflow", "http://h:5000/", "tr-1")),
    ("langsmith:https://api.smith.langchain.com#0f1e", Source("langsmith", "https://api.smith.langchain.com", "0f1e")),
    ("store:/data/cases.db#latest", Source("store", "/data/cases.db", "latest")),
    ("store:#latest", Source("store", "", "latest")),
    ("run.json", None), ("phoenix.json", None), ("logs/a#b.json", None), ("unknown:x#y", None),
])
def test_a_source_is_told_from_a_path(text, expected):
    assert parse(text) == expected


def test_a_source_without_a_trace_id_is_one_line():
    with pytest.raises(InputError) as err:
        parse("phoenix:http://127.0.0.1:6006#")
    assert str(err.value) == "phoenix:http://127.0.0.1:6006#: no trace id after '#': give one, or 'latest'"


def test_a_scheme_with_no_reader_is_one_line_and_exit_2(monkeypatch):
    monkeypatch.setattr(sources, "READERS", {})
    err = io.StringIO()
    monkeypatch.setattr("sys.stderr", err)
    assert main(["build", "langfuse:https://example.invalid#t1"]) == 2
    assert err.getvalue() == ("error: langfuse:https://example.invalid#t1: no reader for 'langfuse' sources in this "
                              "installation\n")


def test_a_fetched_export_imports_as_the_file_would(monkeypatch):
    # a reader that hands back a file's bytes: what a server's client does once it has the export
    monkeypatch.setattr(sources, "READERS", {})
    sources.register(Reader("store", lambda src: (f"run {src.trace}.json", NESTED.read_bytes())))
    from_file, fetched = io.StringIO(), io.StringIO()
    assert run(["build", str(NESTED), "--format", "json"], out=from_file) == 0
    assert run(["build", "store:#latest", "--format", "json"], out=fetched) == 0
    assert fetched.getvalue() == from_file.getvalue()
