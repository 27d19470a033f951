"""Issue #27, round two, the replay and the CLI: report.md shows logged text literally whatever it holds, a bad
environment is one line and exit 2, Ctrl-C leaves a partial report, and ``explain --find`` is capped."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings, strategies as st
from markdown_it import MarkdownIt

from ctxcore.escape import WORD_JOINER
from ctxcore.replay.report import Summary, _cell, markdown

from conftest import ROOT, cli

SAMPLE = Path(ROOT) / "sample_data" / "replay_log.jsonl"
WJ = WORD_JOINER

# ---------------------------------------------------------------------------------------------------------------
# 1. report.md: every cell is Markdown text

HOSTILE_CELLS = [
    ("a|b", r"a\|b"),
    ("a\\|b", r"a\\\|b"),                                        # an escaped pipe stays text, its backslash too
    ("x\r# Heading", r"x \# Heading"),                           # CR alone: no new line, no heading
    ("q\u2028## h", r"q \#\# h"),                                # U+2028 LINE SEPARATOR
    ("a\n\nb", "a b"),
    ("line1\r\nline2", "line1 line2"),
    ("tab\there", "tab here"),
    ("<img src=x onerror=alert(1)>", r"\<img src=x onerror=alert(1)\>"),
    ("<script>x</script>", r"\<script\>x\</script\>"),
    ("![p](http://evil.example/t.png)", r"\!\[p\](http" + WJ + "://evil.example/t.png)"),
    ("[click](javascript:x)", r"\[click\](javascript:x)"),
    ("`code`", r"\`code\`"),
    ("*bold* _it_ ~~s~~", r"\*bold\* \_it\_ \~\~s\~\~"),
    ("&lt;b&gt;", r"\&lt;b\&gt;"),                              # an entity stays its text
    ("www.evil.com", "www" + WJ + ".evil.com"),
    ("me@x.org", "me" + WJ + "@x.org"),
    ("$x$", r"\$x\$"),                                          # GitHub's math
    ("x\x1b[31mred", r"x\\u001b\[31mred"),                       # a terminal escape, shown, not obeyed
    ("evil\u202eexe", r"evil\\u202eexe"),                        # a bidi override, shown
    (["c1|x", "c2"], r"c1\|x, c2"),
    (None, ""),
    ("run-00009 refund-001#5: what, now?", r"run-00009 refund-001\#5: what, now?"),  # plain text reads as it is
    ("a" * 250, "a" * 200),                                      # cut to 200 characters, then escaped:
    ("|" * 250, "\\|" * 200),                                    # a cut never leaves half an escape
]


@pytest.mark.parametrize("value, cell", HOSTILE_CELLS, ids=range(len(HOSTILE_CELLS)))
def test_a_report_cell_is_markdown_text(value, cell):
    assert _cell(value) == cell


# CommonMark with GitHub's tables, strikethrough and autolinks (schemes and e-mail addresses; www. is in the table)
_MD = MarkdownIt("commonmark", {"linkify": True}).enable(["table", "strikethrough", "linkify"])
_MD.linkify.set({"fuzzy_link": False, "fuzzy_email": True})
_BREAKS = re.compile("[\t\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]+")


def _tables(md: str) -> list[list[list[tuple[str, list[str]]]]]:
    """Each table of the rendered Markdown: its rows (header included), each a list of cells, each cell as
    (its text as a reader sees it, the kinds of the inline tokens it renders to)."""
    tables, rows, cells = [], None, None
    for tok in _MD.parse(md):
        if tok.type == "table_open":
            rows = []
        elif tok.type == "table_close":
            tables.append(rows)
        elif tok.type == "tr_open":
            cells = []
        elif tok.type == "tr_close":
            rows.append(cells)
            cells = None
        elif tok.type in ("th_open", "td_open"):
            cells.append(("", []))
        elif tok.type == "inline" and cells:
            kids = tok.children or []
            cells[-1] = ("".join(k.content for k in kids if k.type in ("text", "code_inline")),
                         sorted({k.type for k in kids}))
    return tables


def _report(rows: list[dict], unreadable: list[tuple[str, str]]) -> str:
    summary = Summary()
    for i, g in enumerate(rows):
        summary.add({"index": i, "source": g["source"], "ok": True, "row": {
            "index": i, "source": g["source"], "run_id": g["run_id"], "time": None, "query": g["query"],
            "baseline": "trace", "changed": True, "reordered": False, "findings_checked": False,
            "tokens_saved": 0, "evidence_tokens_before": 0, "evidence_tokens_after": 0,
            "prompt_tokens_before": 10, "prompt_tokens_after": 10, "moved": [], "newly_dropped": [],
            "newly_kept": [], "findings_gone": [], "findings_new": [], "regression": True,
            "lost_ids": g["lost"], "lost_labels": ["S1"]}})
    for i, (source, reason) in enumerate(unreadable, len(rows)):
        summary.add({"index": i, "source": source, "ok": False, "reason": reason})
    return markdown(summary.report(new={"caller": "x` <img src=y> `z"}))


_text = st.text(st.one_of(st.characters(codec="utf-8"), st.sampled_from("|\\`*_[]<>!#&\r\n\u2028\x85:/.@w")),
                max_size=60)


@settings(max_examples=150, deadline=None)
@given(rows=st.lists(st.fixed_dictionaries({"source": _text, "run_id": _text, "query": _text,
                                            "lost": st.lists(_text, min_size=1, max_size=3)}), min_size=1, max_size=4),
       unreadable=st.lists(st.tuples(_text, _text), max_size=3))
def test_a_rendered_report_table_keeps_its_cells_whatever_text_they_hold(rows, unreadable):
    md = _report(rows, unreadable)
    tables = _tables(md)
    assert len(tables) == 1 + bool(unreadable)  # regressions and unreadable (no fate moved: a sentence)
    regressions, *rest = tables
    assert all(len(r) == 4 for r in regressions) and len(regressions) == 1 + len(rows)
    for row, g in zip(regressions[1:], rows):
        shown = [text.replace(WJ, "") for text, _ in row]
        assert shown[0] == _plain(g["run_id"] or g["source"]) and shown[3] == _plain(g["query"])
        assert shown[1] == _plain(", ".join(g["lost"]))
        assert all(kinds in ([], ["text"]) for _, kinds in row), row  # no link, image, html, emphasis, code
    for table in rest:
        assert all(len(r) == 2 for r in table) and len(table) == 1 + len(unreadable)
    html = _MD.render(md)
    assert "<img" not in html and "<a " not in html and "<script" not in html.lower()


def _plain(value: str) -> str:
    """What a reader should see of a cell: its first 200 characters on one line, invisible characters and
    other controls as escapes, the cell's outer spaces trimmed (as Markdown trims them)."""
    text = _BREAKS.sub(" ", value[:200])
    text = re.sub("[\x00-\x08\x0e-\x1b\x1f\x7f-\x84\x86-\x9f\u00ad\u061c\u180e\u200b-\u200f\u202a-\u202e"
                  "\u2060-\u2064\u2066-\u2069\ufeff\U000e0000-\U000e007f]",
                  lambda m: f"\\u{ord(m.group()):04x}" if ord(m.group()) <= 0xFFFF else f"\\U{ord(m.group()):08x}",
                  text)
    return text.strip()


def test_the_settings_line_is_one_code_span_whatever_backticks_a_caller_holds():
    md = _report([], [])
    line = next(x for x in md.splitlines() if x.startswith("New settings:"))
    assert line == 'New settings: ``{"caller": "x` <img src=y> `z"}``; baseline: each run\'s logged prompt or own trace'
    assert "<img" not in _MD.render(md)


def test_a_logged_run_id_cannot_forge_the_report(tmp_path):
    """End to end: a run id with a heading, a pipe and an image in the sample log, replayed by the CLI."""
    lines = SAMPLE.read_text(encoding="utf-8").splitlines()
    run = json.loads(lines[9])  # run-00009: a planted regression under --budget 250
    run["logged"]["trace_id"] = "evil|x\r# Owned ![i](http://e.example/p.png)"
    lines[9] = json.dumps(run)
    log = tmp_path / "log.jsonl"
    log.write_text("\n".join(lines) + "\n", encoding="utf-8")
    code, out, err = cli("replay", log, "--budget", "250", "--out", tmp_path / "out", "--workers", "1")
    assert code == 0, err
    md = (tmp_path / "out" / "report.md").read_text(encoding="utf-8")
    assert md == out[:-1]  # stdout is report.md (and a newline)
    assert "| evil\\|x \\# Owned \\!\\[i\\](http" + WJ + "://e.example/p.png) |" in md
    regressions = _tables(md)[0]
    assert [len(r) for r in regressions] == [4, 4, 4, 4]
    assert regressions[1][0][0].replace(WJ, "") == "evil|x # Owned ![i](http://e.example/p.png)"
    assert not [x for x in md.splitlines() if x.startswith("# ") and x != "# Replay report"]


# ---------------------------------------------------------------------------------------------------------------
# 2. a bad environment is one line and exit 2


def _one_error(err: str) -> str:
    assert "Traceback" not in err and "unexpected" not in err, err
    errors = [x for x in err.splitlines() if x.startswith("error:")]
    assert len(errors) == 1, err
    return errors[0]


def test_an_out_folder_under_a_regular_file_is_one_line(tmp_path):
    (tmp_path / "file.txt").write_text("x")
    out = tmp_path / "file.txt" / "sub"
    code, stdout, err = cli("replay", SAMPLE, "--budget", "250", "--out", out, "--workers", "1")
    assert (code, stdout) == (2, "")
    assert _one_error(err) == f"error: {out}: cannot make the output folder (Not a directory)"


def test_an_out_that_is_a_file_is_one_line(tmp_path):
    out = tmp_path / "report.txt"
    out.write_text("keep me")
    code, stdout, err = cli("replay", SAMPLE, "--budget", "250", "--out", out, "--workers", "1")
    assert (code, stdout) == (2, "")
    assert _one_error(err) == f"error: {out}: is a file; --out needs a folder (it is made if missing)"
    assert out.read_text() == "keep me"


def test_an_unwritable_report_md_still_prints_the_summary_and_names_the_file(tmp_path):
    (tmp_path / "report.md").mkdir()  # what root cannot write either
    code, stdout, err = cli("replay", SAMPLE, "--budget", "250", "--out", tmp_path, "--workers", "1")
    assert code == 2
    assert _one_error(err) == f"error: {tmp_path / 'report.md'}: cannot write the file (Is a directory) " \
                              "(the report is on stdout)"
    assert stdout.startswith("# Replay report") and "- runs replayed: 30; changed: 15; unchanged: 15" in stdout
    report = json.loads((tmp_path / "report.json").read_text())  # the other files are written
    assert (report["runs"], report["regression_count"]) == (30, 3)
    assert len((tmp_path / "runs.jsonl").read_text().splitlines()) == 30


def _dask():
    return pytest.importorskip("distributed", reason="Dask distributed is not installed: "
                                                     "pip install -r requirements-dask.txt")


@pytest.mark.parametrize("address, said", [
    ("tcp://127.0.0.1:1", "error: tcp://127.0.0.1:1: cannot reach a Dask scheduler there within 1 s: is it running, "
                          "and is the address right? (--connect-timeout waits longer)"),
    ("not-a-url", "error: not-a-url: not a Dask scheduler address (missing port number in address 'not-a-url'); "
                  "give tcp://HOST:PORT"),
])
def test_a_bad_scheduler_address_is_one_line(address, said):
    _dask()
    code, stdout, err = cli("replay", SAMPLE, "--budget", "250", "--engine", "dask", "--scheduler", address,
                            "--connect-timeout", "1")
    assert (code, stdout) == (2, "")
    assert _one_error(err) == said


BLOCKER = '''"""A Dask worker preload: this worker cannot import ctxcore (as on a machine without it)."""
import sys


class _NoCtxcore:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "ctxcore":
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, _NoCtxcore())
for name in [m for m in sys.modules if m.split(".")[0] == "ctxcore"]:
    del sys.modules[name]
'''


def test_workers_that_cannot_import_ctxcore_are_one_line_saying_the_fix(tmp_path):
    distributed = _dask()
    (tmp_path / "no_ctxcore.py").write_text(BLOCKER)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None,
                                  preload=[str(tmp_path / "no_ctxcore.py")]) as cluster:
        address = cluster.scheduler_address
        code, stdout, err = cli("replay", SAMPLE, "--budget", "250", "--engine", "dask", "--scheduler", address)
    assert (code, stdout) == (2, "")
    # ctxcore is shipped to the cluster first (replay.engines.ship_ctxcore); this worker refuses it even then
    assert _one_error(err) == (f"error: {address}: its workers cannot import ctxcore and uploading it failed "
                               "(ModuleNotFoundError: No module named 'ctxcore'); install ctxcore on the workers: "
                               "pip install ctxcore")


# ---------------------------------------------------------------------------------------------------------------
# 3. Ctrl-C: exit 130, no traceback, the partial report


def _as_from_a_terminal() -> None:
    """Ctrl-C as a terminal's shell leaves it: a test run started in the background of a non-interactive shell
    (`cmd &`) inherits SIGINT ignored, and a Python started so never installs its KeyboardInterrupt handler."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_ctrl_c_stops_cleanly_and_writes_the_partial_report(tmp_path):
    log = tmp_path / "log.jsonl"
    log.write_text(SAMPLE.read_text(encoding="utf-8") * 100, encoding="utf-8")  # 3,000 runs: still running at Ctrl-C
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-m", "ctxcore", "replay", str(log), "--budget", "250", "--out",
                             str(out), "--workers", "2"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True, preexec_fn=_as_from_a_terminal)
    try:
        first = proc.stderr.readline()
        assert first.startswith("replay: ") and "runs/s" in first, first
        os.killpg(proc.pid, signal.SIGINT)  # as a terminal's Ctrl-C: the CLI and its workers alike
        stdout, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "unexpected" not in err, err
    report = json.loads((out / "report.json").read_text())
    done, of, exact = (report["interrupted"][k] for k in ("runs", "of", "of_exact"))
    # the runs not yet read are counted by reading on; a Ctrl-C that lands while the log is being read breaks that
    # read off, and then the count is a lower bound (said so), never a wrong total
    assert 1 <= done <= of <= 3000 and exact == (of == 3000) and done < 3000
    assert report["runs"] + report["unreadable_count"] == done
    total = "3,000" if exact else f"at least {of:,}"
    assert err.splitlines()[-1] == f"replay: interrupted after {done} of {total} runs; the partial report is in {out}"
    md = (out / "report.md").read_text()
    assert md.splitlines()[2] == f"**Interrupted after {done} of {total} runs** (Ctrl-C): every figure below covers " \
                                 "only the runs done."
    assert stdout[:-1] == md
    assert len((out / "runs.jsonl").read_text().splitlines()) == report["runs"]
    assert pq.read_table(out / "runs.parquet").num_rows == report["runs"]


# ---------------------------------------------------------------------------------------------------------------
# 4. explain --find: the app's cap, and how many more


def _matching(tmp_path: Path, n: int) -> Path:
    """``n`` candidates that all contain "refund", the strongest first (c000 scores 0.99, c001 0.98 ...), and
    one that does not."""
    cands = [{"id": f"c{i:03d}", "text": f"Refund case {i}: item {i * 7} is paid back within {i + 2} days.",
              "score": round(0.99 - i * 0.005, 3)} for i in range(n)]
    cands.append({"id": "other", "text": "Shipping takes three days.", "score": 0.995})
    path = tmp_path / f"refunds{n}.json"
    path.write_text(json.dumps({"query": "How are refunds paid?", "candidates": cands}), encoding="utf-8")
    return path


@pytest.mark.parametrize("matches, listed, more", [
    (24, 24, None),
    (25, 25, None),
    (26, 25, "and 1 more containing 'refund' (the 25 strongest are listed; narrow the phrase to see others)"),
    (100, 25, "and 75 more containing 'refund' (the 25 strongest are listed; narrow the phrase to see others)"),
])
def test_explain_find_lists_the_apps_cap_and_says_how_many_more(tmp_path, matches, listed, more):
    path = _matching(tmp_path, matches)
    code, out, err = cli("explain", path, "--find", "refund")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].split()[:3] == ["id", "fate", "stage"]
    rows = lines[1:-1] if more else lines[1:]
    assert [r.split()[0] for r in rows] == [f"c{i:03d}" for i in range(listed)]  # the strongest, in input order
    assert (lines[-1] if more else None) == more
    code, out, err = cli("explain", path, "--find", "refund", "--format", "json")
    assert code == 0 and [e["id"] for e in json.loads(out)] == [f"c{i:03d}" for i in range(listed)]
    assert err == (f"explain: {more}\n" if more else "")


def test_the_cli_and_the_app_share_the_find_cap_and_the_readme_states_the_limits():
    import ctxui
    from ctxcore.analysis.explain import FIND_LIMIT
    from ctxcore.replay.engines import CONNECT_TIMEOUT

    assert ctxui.SEARCH_LIMIT == FIND_LIMIT == 25
    readme = (Path(ROOT) / "README.md").read_text(encoding="utf-8")
    assert f"| {FIND_LIMIT} (the strongest; \"and N more\") | `ctxcore/analysis/explain.py` `FIND_LIMIT`" in readme
    assert f"| {CONNECT_TIMEOUT:g} s, set with `--connect-timeout` | `ctxcore/replay/engines.py` `CONNECT_TIMEOUT`" \
        in readme
