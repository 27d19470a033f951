"""Input robustness (issue #7): a catalogue of bad and odd files, each with its expected outcome.

``tests/bad_inputs/expected.json`` maps every file in that folder to one of

* ``{"error": SUBSTRING, "line": N, "row": N, "field": NAME}`` (line/row/field optional): loading or
  building raises :class:`ctxcore.InputError` whose one-line message names the file, contains
  SUBSTRING and names the line, row and field given; the CLI exits 2 with exactly that one line
  on stderr and no traceback;
* ``{"ok": true, "candidates": N, "warning": SUBSTRING}`` (candidates/warning optional): it loads
  and builds, the trace has N candidates and a warning containing SUBSTRING; the CLI exits 0.

Cases too big to commit (a 1 MB chunk, 100k tiny chunks, 10k levels of nesting, a file over the
size limit) are generated into ``tmp_path`` and checked the same way. Their times are printed
(``pytest -s``); only the timeout bounds them. The 100k-candidate cases have a generous hang guard
(``HANG_GUARD`` seconds), not a performance claim: on a loaded two-core machine a tight limit only
makes them flaky; the benchmarks in ``bench/`` measure speed.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

import ctxcore
from ctxcore import BuildError, InputError

ROOT = Path(__file__).resolve().parent.parent
CATALOGUE = Path(__file__).resolve().parent / "bad_inputs"
EXPECTED = json.loads((CATALOGUE / "expected.json").read_text(encoding="utf-8"))
CASES = sorted(EXPECTED)
NOT_CASES = {"expected.json", "README.md"}


# --------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------

HANG_GUARD = 240  # seconds: catches a hang, not a slow machine


def run_cli(path, *args, timeout=18):
    """``python -m ctxcore build PATH``; returns (exit code, stdout, stderr, seconds)."""
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "ctxcore", "build", str(path), *args], cwd=ROOT,
                          capture_output=True, timeout=timeout)
    took = time.perf_counter() - start
    return (proc.returncode, proc.stdout.decode("utf-8", "replace"), proc.stderr.decode("utf-8", "replace"),
            took)


def check_error_message(err: BaseException, source: str, exp: dict) -> None:
    """The error is an InputError naming the file (and line/row/field) with the expected text."""
    assert isinstance(err, InputError), f"expected an InputError, got {type(err).__name__}: {err}"
    msg = str(err)
    assert "\n" not in msg and "\r" not in msg, f"the message is not one line: {msg!r}"
    assert msg.startswith(source), f"the message does not name the file first: {msg!r}"
    rest = msg[len(source):]  # the expected text must not match the file name
    assert exp["error"] in rest, f"{exp['error']!r} not in {msg!r}"
    if "line" in exp:
        assert f"line {exp['line']}" in msg, f"line {exp['line']} not named in {msg!r}"
    if "row" in exp:
        assert f"row {exp['row']}" in msg, f"row {exp['row']} not named in {msg!r}"
    if "field" in exp:
        assert f"field '{exp['field']}'" in msg, f"field {exp['field']!r} not named in {msg!r}"


def check_library(path: Path, exp: dict, source: str | None = None):
    """``ctxcore.load(path).build()`` gives the expected outcome; returns (trace or None, seconds)."""
    source = source or str(path)
    start = time.perf_counter()
    if "error" in exp:
        try:
            ctxcore.load(path).build()
        except InputError as err:
            took = time.perf_counter() - start
            check_error_message(err, source, exp)
            return None, took
        except BuildError as err:
            pytest.fail(f"expected an InputError, got BuildError: {err}")
        pytest.fail(f"{path.name} loaded and built, but should fail with {exp['error']!r}")
    loaded = ctxcore.load(path)
    trace = loaded.build()
    took = time.perf_counter() - start
    check_trace(trace, exp)
    return trace, took


def check_trace(trace, exp: dict) -> None:
    if "candidates" in exp:
        assert len(trace.candidates) == exp["candidates"]
    if "warning" in exp:
        assert any(exp["warning"] in w for w in trace.warnings), trace.warnings
    ids = [c.id for c in trace.candidates]
    assert sorted(ids) == sorted(d.id for d in trace.decisions), "every candidate is decided exactly once"
    assert len(set(ids)) == len(ids)
    trace.to_json()  # the trace serialises


def check_cli(path: Path, exp: dict, source: str | None = None, timeout: float = 18) -> float:
    source = source or str(path)
    code, out, err, took = run_cli(path, timeout=timeout)
    assert "Traceback" not in err, err
    if "error" in exp:
        assert code == 2, f"exit {code}, stderr: {err!r}"
        lines = err.rstrip("\n").split("\n")
        assert len(lines) == 1 and "\r" not in err, f"stderr must be exactly one line, got: {err!r}"
        assert lines[0].startswith("error: ")
        assert lines[0].startswith(f"error: {source}"), lines[0]
        assert exp["error"] in lines[0][len(f"error: {source}"):], lines[0]
        for key in ("line", "row"):
            if key in exp:
                assert f"{key} {exp[key]}" in lines[0]
        if "field" in exp:
            assert f"field '{exp['field']}'" in lines[0]
    else:
        assert code == 0, f"exit {code}, stderr: {err!r}"
        assert err == "", err
        if "warning" in exp:
            assert exp["warning"] in out
    return took


# --------------------------------------------------------------------------------------------
# the committed catalogue
# --------------------------------------------------------------------------------------------

def test_the_catalogue_is_complete_and_small():
    files = {p.name for p in CATALOGUE.iterdir() if p.is_file()} - NOT_CASES
    assert files == set(EXPECTED), (files ^ set(EXPECTED))
    assert len(files) >= 32
    for name, exp in EXPECTED.items():
        assert ("error" in exp) != bool(exp.get("ok")), name
        assert (CATALOGUE / name).stat().st_size < 10_000, name


@pytest.mark.timeout(20)
@pytest.mark.parametrize("name", CASES)
def test_library(name):
    check_library(CATALOGUE / name, EXPECTED[name])


@pytest.mark.slow
@pytest.mark.timeout(20)
@pytest.mark.parametrize("name", CASES)
def test_cli(name):
    check_cli(CATALOGUE / name, EXPECTED[name])


@pytest.mark.timeout(20)
@pytest.mark.parametrize("name", [n for n in CASES if "error" in EXPECTED[n]])
def test_bytes_upload_gives_the_same_error(name):
    """The app passes uploads as bytes with the upload's name: same error, named after it."""
    data = (CATALOGUE / name).read_bytes()
    with pytest.raises(InputError) as err:
        ctxcore.load(data, name=name).build()
    check_error_message(err.value, name, EXPECTED[name])


# --------------------------------------------------------------------------------------------
# generated cases (too big to commit)
# --------------------------------------------------------------------------------------------

_WORDS = ("refund shipping order warranty invoice parcel return policy customer days business payment "
          "method tracking number email holiday warehouse").split()


def _text_of_bytes(n: int) -> str:
    """Plain prose of exactly ``n`` bytes (ASCII, no commas or quotes, so it is a valid CSV cell)."""
    words = []
    size = 0
    i = 0
    while size < n:
        w = _WORDS[(i * 7 + i // 3) % len(_WORDS)]
        words.append(w)
        size += len(w) + 1
        i += 1
    return " ".join(words)[:n]


def write_one_megabyte_chunk(path: Path) -> None:
    text = _text_of_bytes(1_000_000)
    if path.suffix == ".csv":
        path.write_text(f"id,text,score\nbig,{text},0.5\n", encoding="utf-8")
    elif path.suffix == ".jsonl":
        path.write_text(json.dumps({"id": "big", "text": text, "score": 0.5}) + "\n", encoding="utf-8")
    else:
        path.write_text(json.dumps({"query": "what is the refund policy?",
                                    "candidates": [{"id": "big", "text": text, "score": 0.5}]}), encoding="utf-8")


def _tiny_text(i: int, variant: str) -> str:
    """``distinct``: one word of its own per chunk; ``sharing``: that word plus one of 17 common words."""
    return f"w{i}" if variant == "distinct" else f"w{i} {_WORDS[i % len(_WORDS)]}"


def write_tiny_chunks(path: Path, n: int, variant: str = "sharing") -> None:
    with open(path, "w", encoding="utf-8") as f:
        if path.suffix == ".csv":
            f.write("id,text,score\n")
            for i in range(n):
                f.write(f"t{i},{_tiny_text(i, variant)},{(i % 997) / 997:.4f}\n")
        else:
            for i in range(n):
                f.write(json.dumps({"id": f"t{i}", "text": _tiny_text(i, variant),
                                    "score": round((i % 997) / 997, 4)}) + "\n")


@pytest.mark.slow
@pytest.mark.timeout(20)
@pytest.mark.parametrize("ext", [".json", ".jsonl", ".csv"])
def test_one_megabyte_chunk(tmp_path, ext):
    path = tmp_path / f"one_megabyte_chunk{ext}"
    write_one_megabyte_chunk(path)
    assert path.stat().st_size > 1_000_000
    trace, took = check_library(path, {"ok": True, "candidates": 1})
    assert len(trace.candidates[0].text) == 1_000_000
    print(f"\n[timing] 1 MB single chunk ({ext}): load+build {took:.2f}s, fate {trace.decisions[0].fate}")
    took = check_cli(path, {"ok": True})
    print(f"[timing] 1 MB single chunk ({ext}): CLI {took:.2f}s")


@pytest.mark.timeout(HANG_GUARD)
@pytest.mark.parametrize("variant", ["distinct", "sharing"])
def test_hundred_thousand_tiny_chunks(tmp_path, variant):
    """100k two-token chunks build (or are refused clearly), without hanging.

    ``sharing`` chunks each share one of 17 common words, as short real chunks do.
    """
    path = tmp_path / f"tiny_chunks_{variant}.jsonl"
    write_tiny_chunks(path, 100_000, variant)
    start = time.perf_counter()
    loaded = ctxcore.load(path)
    loaded_at = time.perf_counter()
    print(f"\n[timing] 100k tiny chunks ({variant}, .jsonl): load {loaded_at - start:.2f}s", flush=True)
    trace = loaded.build()
    built_at = time.perf_counter()
    check_trace(trace, {"candidates": 100_000})
    kept = sum(d.fate == "kept" for d in trace.decisions)
    print(f"[timing] 100k tiny chunks ({variant}, .jsonl): build {built_at - loaded_at:.2f}s, kept {kept}")


@pytest.mark.timeout(HANG_GUARD)
@pytest.mark.parametrize("variant", ["distinct", "sharing"])
def test_hundred_thousand_tiny_chunks_cli(tmp_path, variant):
    path = tmp_path / f"tiny_chunks_{variant}.jsonl"
    write_tiny_chunks(path, 100_000, variant)
    took = check_cli(path, {"ok": True}, timeout=HANG_GUARD - 10)
    print(f"\n[timing] 100k tiny chunks ({variant}, .jsonl): CLI {took:.2f}s")


@pytest.mark.timeout(HANG_GUARD)
def test_too_many_chunks_are_refused_quickly(tmp_path):
    from ctxcore.io.limits import MAX_CANDIDATES

    path = tmp_path / "too_many_chunks.csv"
    write_tiny_chunks(path, MAX_CANDIDATES + 1)
    exp = {"error": f"the limit is {MAX_CANDIDATES}"}
    _, took = check_library(path, exp)
    print(f"\n[timing] {MAX_CANDIDATES + 1} tiny chunks (.csv): refused in {took:.2f}s")
    took = check_cli(path, exp, timeout=HANG_GUARD / 2 - 10)
    print(f"[timing] {MAX_CANDIDATES + 1} tiny chunks (.csv): CLI refused in {took:.2f}s")


@pytest.mark.slow
@pytest.mark.timeout(20)
def test_a_file_over_the_size_limit_is_refused_before_reading(tmp_path):
    from ctxcore.io.limits import MAX_BYTES

    path = tmp_path / "huge.json"
    with open(path, "wb") as f:  # sparse: nothing is written, so this costs nothing
        f.truncate(MAX_BYTES + 1)
    exp = {"error": f"the limit is {MAX_BYTES // 2**20} MB"}
    check_library(path, exp)
    check_cli(path, exp)


DEEP = 10_000


@pytest.mark.slow
@pytest.mark.timeout(20)
@pytest.mark.parametrize("where", ["top_level.json", "in_metadata.json", "second_line.jsonl", "in_config.json"])
def test_deeply_nested_json(tmp_path, where):
    nest = "[" * DEEP + "]" * DEEP
    exp = {"error": "nested too deeply"}
    if where == "top_level.json":
        content = nest
    elif where == "in_metadata.json":
        content = '[{"id": "a", "text": "alpha", "metadata": {"deep": ' + nest + '}}]'
    elif where == "in_config.json":
        content = '{"candidates": [{"id": "a", "text": "alpha"}], "config": {"order": ' + nest + '}}'
    else:
        content = '{"id": "a", "text": "alpha"}\n{"id": "b", "text": "beta", "metadata": ' + nest + '}\n'
        exp["line"] = 2
    path = tmp_path / f"deep_{where}"
    path.write_text(content, encoding="utf-8")
    check_library(path, exp)
    check_cli(path, exp)


@pytest.mark.slow
@pytest.mark.timeout(20)
def test_a_missing_file_is_one_clear_error(tmp_path):
    path = tmp_path / "does_not_exist.json"
    exp = {"error": "cannot read the file"}
    check_library(path, exp)
    check_cli(path, exp)


@pytest.mark.slow
@pytest.mark.timeout(20)
def test_a_directory_is_one_clear_error(tmp_path):
    exp = {"error": "cannot read the file"}
    check_library(tmp_path, exp)
    check_cli(tmp_path, exp)
