"""Logged traces shaped to make an import slow or huge (issue #19, items 3-4): the work stays linear
in the file and every structural limit refuses with one line naming the file and the field.

The inputs are generated here (too big to commit); bench/import_scale.py times the same shapes.
"""

from __future__ import annotations

import json
import os
import threading
import time
import tracemalloc

import pytest

from ctxcore import InputError, load
from ctxcore.cli import main
from ctxcore.io.limits import MAX_DEPTH, MAX_FIELD_CHARS, MAX_KEYS, MAX_SPANS

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TRACE = "4b1f" * 8
DOCS = {f"attributes.retrieval.documents.{j}.document.{k}": v for j in range(5)
        for k, v in (("id", f"kb-{j}"), ("content", f"Refund rule {j}: above ${j}00 a team lead approves."),
                     ("score", 0.9 - j / 10))}


def span(i, kind, parent=None, **attrs):
    """One flattened span, as in a Phoenix ``get_spans_dataframe()`` records export."""
    return {"name": f"{kind.lower()} {i}", "span_kind": kind, "parent_id": parent, "context.span_id": f"{i:016x}",
            "context.trace_id": TRACE, "start_time": "2024-05-14T09:21:00+00:00", **attrs}


def one_long_run(spans: int) -> bytes:
    """A root chain, a retriever, an LLM call, and tool spans for the rest, all in one trace."""
    root = f"{0:016x}"
    rows = [span(0, "CHAIN", **{"attributes.input.value": "Who approves a $450 refund?"}),
            span(1, "RETRIEVER", root, **{"attributes.input.value": "Who approves a $450 refund?"}, **DOCS),
            span(2, "LLM", root, **{"attributes.llm.input_messages.0.message.role": "user",
                                    "attributes.llm.input_messages.0.message.content": "[1] Refund rule 4: above "
                                                                                        "$400 a team lead approves."})]
    rows += [span(i, "TOOL", root, **{"attributes.input.value": f"lookup {i}"}) for i in range(3, spans)]
    return json.dumps(rows).encode()


def refused(data: bytes, name: str) -> str:
    with pytest.raises(InputError) as err:
        load(data, name)
    message = str(err.value)
    assert message.startswith(name) and "\n" not in message
    return message


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_100k_spans_in_one_trace_import_in_linear_time():
    data = one_long_run(100_000)
    start = time.perf_counter()
    loaded = load(data, "long_run.json")
    took = time.perf_counter() - start
    print(f"\n[timing] 100,000 spans ({len(data) // 1024} KB): imported in {took:.2f}s")
    assert [c.id for c in loaded.candidates] == [f"kb-{j}" for j in range(5)]
    assert loaded.logged.llm_span == "llm 2"
    assert "spans not used: TOOL 'tool 3'" in " ".join(loaded.warnings)


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_retrievers_under_a_long_parent_chain_are_found_in_linear_time():
    """Each retriever hangs off a deeper link of one chain: its ancestors are walked once, not once per retriever."""
    links = 20_000
    rows = [span(i, "CHAIN", f"{i - 1:016x}" if i else None) for i in range(links)]
    rows += [span(links + i, "RETRIEVER", f"{i:016x}", **{
        "attributes.retrieval.documents.0.document.id": f"d{i}",
        "attributes.retrieval.documents.0.document.content": f"passage {i}"}) for i in range(links)]
    loaded = load(json.dumps(rows).encode(), "chain.json")
    assert len(loaded.candidates) == links  # none nested under another retriever: all outermost
    assert f"{links} retriever spans: their documents are combined in time order" in loaded.warnings


@pytest.mark.slow
@pytest.mark.timeout(60)
def test_a_sparse_columns_orient_table_builds_only_its_cells():
    """pandas ``to_json(orient="columns")`` where each of 5,000 columns names a row of its own: 5,000 cells,
    not 5,000 x 5,000."""
    columns = 5_000
    data = {"span_kind": {"r0": "RETRIEVER"}, "context.trace_id": {"r0": TRACE},
            "attributes.retrieval.documents.0.document.content": {"r0": "Refunds above $400 need a team lead."}}
    data.update({f"attributes.note_{i}": {f"r{i}": i} for i in range(1, columns)})
    raw = json.dumps(data).encode()
    tracemalloc.start()
    try:
        start = time.perf_counter()
        loaded = load(raw, "columns.json")
        took = time.perf_counter() - start
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    print(f"\n[timing] columns bomb {columns:,} x {columns:,} ({len(raw) // 1024} KB): {took:.2f}s, "
          f"peak {peak / 2**20:.0f} MB")
    assert [c.text for c in loaded.candidates] == ["Refunds above $400 need a team lead."]
    assert peak < 64 * 2**20  # the full table would be 25 million cells, gigabytes


def test_too_many_columns_is_refused_before_any_row_is_built():
    data = {"span_kind": {"r0": "TOOL"}, **{f"attributes.c{i}": {f"r{i}": i} for i in range(MAX_KEYS + 1)}}
    message = refused(json.dumps(data).encode(), "wide.json")
    assert f"a table of {MAX_KEYS + 2} columns; the limit is {MAX_KEYS}" in message and "field 'columns'" in message


@pytest.mark.slow
def test_too_many_rows_in_a_columns_table_is_refused():
    data = {"span_kind": {f"r{i}": "TOOL" for i in range(MAX_SPANS + 1)}}
    message = refused(json.dumps(data).encode(), "tall.json")
    assert f"a table of {MAX_SPANS + 1} rows (spans); the limit is {MAX_SPANS}" in message


def test_too_many_spans_is_refused():
    message = refused(json.dumps([{"span_kind": "TOOL"}] * (MAX_SPANS + 1)).encode(), "spans.json")
    assert f"{MAX_SPANS + 1} spans; the limit is {MAX_SPANS}" in message and "field 'spans'" in message


def test_too_many_langfuse_observations_is_refused():
    obs = [{"type": "SPAN", "traceId": "t1", "name": "step"}] * (MAX_SPANS + 1)
    message = refused(json.dumps(obs).encode(), "observations.json")
    assert f"{MAX_SPANS + 1} observations; the limit is {MAX_SPANS}" in message


def test_a_span_with_too_many_attributes_is_refused():
    row = span(0, "RETRIEVER", **{f"attributes.extra.k{i}": i for i in range(MAX_KEYS)})
    message = refused(json.dumps([row]).encode(), "keys.json")
    assert f"keys and attributes; the limit is {MAX_KEYS}" in message and "field 'spans[0]'" in message


def test_a_csv_with_too_many_columns_is_refused():
    header = ",".join(["id", "text"] + [f"m{i}" for i in range(MAX_KEYS)])
    message = refused(f"{header}\n".encode(), "wide.csv")
    assert f"the CSV header names {MAX_KEYS + 2} columns; the limit is {MAX_KEYS}" in message


def test_one_huge_attribute_value_is_refused_naming_it():
    row = span(0, "RETRIEVER", **{"attributes.input.value": "x" * (MAX_FIELD_CHARS + 1)})
    message = refused(json.dumps([row]).encode(), "huge.json")
    assert f"a value of {MAX_FIELD_CHARS + 1:,} characters; the limit is {MAX_FIELD_CHARS:,}" in message
    assert "field '[0].attributes.input.value'" in message


def _deep_span(levels: int) -> bytes:
    nest = '{"a": ' * levels + "1" + "}" * levels
    row = json.dumps(span(0, "RETRIEVER", **DOCS)).replace('"name"', f'"attributes.x": {nest}, "name"', 1)
    return f"[{row}]".encode()


def _in_a_thread(data: bytes, name: str) -> str:
    """What the app does with an upload: load it on another thread (Streamlit runs the script on one)."""
    out = {}

    def run():
        try:
            load(data, name)
        except Exception as err:  # noqa: BLE001 - the test reports whatever it was
            out["error"] = f"{type(err).__name__}: {err}"

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    return out.get("error", "")


@pytest.mark.parametrize("levels", [MAX_DEPTH + 1, 600])  # 600 once overflowed the attribute reader's recursion
def test_deep_metadata_is_refused_the_same_way_in_the_cli_and_as_an_upload(tmp_path, capsys, levels):
    data = _deep_span(levels)
    path = tmp_path / "deep.json"
    path.write_bytes(data)
    assert main(["build", str(path)]) == 2
    cli_line = capsys.readouterr().err.strip()
    upload = _in_a_thread(data, str(path))
    assert cli_line == f"error: {upload.removeprefix('InputError: ')}" and upload.startswith("InputError: ")
    assert f"nested too deeply to read (more than {MAX_DEPTH} levels)" in cli_line
    assert "field '[0].attributes.x.a.a" in cli_line and "\n" not in cli_line


def test_nesting_within_the_limit_still_imports():
    assert [c.id for c in load(_deep_span(MAX_DEPTH - 10), "ok.json").candidates] == [f"kb-{j}" for j in range(5)]


def test_a_deep_jsonl_line_is_refused_naming_its_line():
    lines = [json.dumps(span(0, "CHAIN")), _deep_span(MAX_DEPTH + 1).decode()[1:-1]]
    message = refused("\n".join(lines).encode(), "deep.jsonl")
    assert message.startswith("deep.jsonl, line 2, field 'attributes.x.a") and "nested too deeply" in message


def test_deep_metadata_uploaded_to_the_app_shows_the_cli_message(tmp_path, capsys):
    """The real upload path: Streamlit runs the page on its own thread, with its own frames on the stack."""
    from streamlit.testing.v1 import AppTest

    data = _deep_span(600)
    path = tmp_path / "deep.json"
    path.write_bytes(data)
    assert main(["build", str(path)]) == 2
    cli_line = capsys.readouterr().err.strip().removeprefix("error: ").replace(str(path), "deep.json")
    at = AppTest.from_file(os.path.join(ROOT, "app.py"), default_timeout=60)
    at.run()
    at.file_uploader(key="dbg.upload").set_value(("deep.json", data, "application/json"))
    at.run()
    assert not at.exception
    shown = [e.value.replace("\\", "").replace("\u2060", "") for e in at.error]
    assert shown == [cli_line]
