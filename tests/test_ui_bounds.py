"""What the page shows for inputs made to mislead or to break it: e-mail-like strings, invisible and
direction-changing characters, deeply nested metadata, no candidates at all (issue #19, item 8)."""

from __future__ import annotations

import json
import re
import time

import pytest

import ctxcore
from ctxui.tables import SHOWN_DEPTH
from ctxui.text import WORD_JOINER, md_escape, visible
from test_app import errors, start, upload
from conftest import cli

# --------------------------------------------------------------------------- md_escape and autolinks

# GitHub's autolink literals, which Streamlit's markdown applies: an e-mail address, www., and http(s)://
# (plus mailto:/xmpp:, which need an e-mail address). Applied to what an escaped string shows once markdown has
# read its backslash escapes (the word joiners stay: they are characters of the text).
_EMAIL = re.compile(r"[A-Za-z0-9._+-]+@[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)+")
_WWW = re.compile(r"(?i)(?:^|[\s*_~(])www\.")
_HTTP = re.compile(r"(?i)https?://")


def _shown(markdown: str) -> str:
    return re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", markdown)


@pytest.mark.parametrize("text", [
    "first-@example.com", "a.@b.co", "x_@y.org", "z+@q.io", "name@example.com", "MAILTO:a-@b.com",
    "xmpp:foo-@bar.baz", "see www.example.com", "WWW.EXAMPLE.COM", "http://evil.test/x", "HTTPS://evil.test",
    "(www.a.b)", "-@-.-", "mail me: -@x.y.z.",
])
def test_md_escape_leaves_no_autolink(text):
    shown = _shown(md_escape(text))
    assert shown.replace(WORD_JOINER, "") == text
    assert not _EMAIL.search(shown) and not _WWW.search(shown) and not _HTTP.search(shown), shown


@pytest.mark.parametrize("bomb", ["-@" * 200_000, "www." * 100_000, "a://" * 100_000, "\\" * 400_000,
                                  "a" * 400_000 + "@", "\u202e" * 200_000])
def test_md_escape_is_linear(bomb):
    t0 = time.perf_counter()
    md_escape(bomb)
    small = time.perf_counter() - t0
    t0 = time.perf_counter()
    md_escape(bomb * 4)
    assert time.perf_counter() - t0 < max(0.05, 8 * small), "md_escape grows faster than the text"


# --------------------------------------------------------------------------- invisible characters

RLO, ZWSP, LRI, PDI = "\u202e", "\u200b", "\u2066", "\u2069"
TRICKY = [
    {"id": f"invoice{RLO}fdp.exe", "text": "Refunds above 500 EUR need manager approval.", "score": 0.9,
     "title": f"Policy{ZWSP} (official)", "doc_id": "pol"},
    {"id": f"plain{LRI}x{PDI}", "text": "Refunds above 500 EUR need manager approval.", "score": 0.8},
    {"id": "b", "text": "Shipping is free over 50 EUR.", "score": 0.5},
]


def test_invisible_characters_are_shown_as_escapes_and_the_prompt_keeps_them():
    at = upload(start(), "tricky.json", json.dumps({"query": "refund approval?", "candidates": TRICKY}).encode())
    frame = at.dataframe[0].value
    ids = list(frame["id"])
    assert ids == ["invoice\\u202efdp.exe", "plain\\u2066x\\u2069", "b"]
    dup = frame[frame["fate"] == "exact_duplicate"].iloc[0]
    assert dup["duplicate_of"] == "invoice\\u202efdp.exe"
    assert "invoice\\u202efdp.exe" in dup["reason"] and RLO not in dup["reason"]
    # the detail view: the picker, the decision and the fields say the same, and no control character is shown
    picker = at.selectbox(key="dbg.detail")
    assert picker.value == f"invoice{RLO}fdp.exe"  # the real id is what is chosen
    assert [picker.format_func(o) for o in picker.options][0].startswith("invoice\\u202efdp.exe")
    codes = [c.value for c in at.code]
    assert any('"id": "invoice\\u202efdp.exe"' in c for c in codes)
    assert any('"title": "Policy\\u200b (official)"' in c for c in codes)
    shown_text = [t.value for t in at.text] + [str(m.value) for m in at.metric]
    assert not [t for t in shown_text if RLO in t or ZWSP in t]
    # the prompt is not a display: it keeps the text
    trace = at.session_state["ctx.trace"]
    assert f'source="invoice{RLO}fdp.exe" doc=pol title="Policy{ZWSP} (official)"' in trace.prompt.text
    assert any(c.id == f"invoice{RLO}fdp.exe" for c in trace.candidates)
    # clicking a row still finds the candidate by its real id
    assert at.session_state["ctx.table_ids"][0] == f"invoice{RLO}fdp.exe"


def test_visible_escapes_every_invisible_kind():
    for ch in ["\u202a", "\u202b", "\u202c", "\u202d", "\u202e", "\u2066", "\u2067", "\u2068", "\u2069",
               "\u200b", "\u200c", "\u200d", "\u200e", "\u200f", "\u2060", "\ufeff", "\u00ad", "\U000e0041"]:
        out = visible(f"a{ch}b")
        assert ch not in out and out.startswith("a\\u") or out.startswith("a\\U"), (hex(ord(ch)), out)
    assert visible("naïve – “quotes” 日本") == "naïve – “quotes” 日本"


def test_md_escape_shows_invisible_characters_too():
    assert _shown(md_escape(f"id {RLO}x")) == "id \\u202ex"


# --------------------------------------------------------------------------- deeply nested metadata

def _nested(depth: int) -> bytes:
    meta = '{"a":' * depth + "1" + "}" * depth
    return ('[{"id":"deep","text":"Refunds take five days.","score":0.9,"metadata":%s},'
            '{"id":"b","text":"Other text here.","score":0.5}]' % meta).encode()


@pytest.mark.parametrize("depth", [60])  # under the 100-level limit (ctxcore/io/limits.py MAX_DEPTH)
def test_deep_metadata_that_the_cli_reads_uploads_too(tmp_path, depth):
    path = tmp_path / "deep.json"
    path.write_bytes(_nested(depth))
    code, out, err = cli("build", path)
    assert code == 0, err
    at = upload(start(), "deep.json", path.read_bytes())
    assert not errors(at)
    assert list(at.dataframe[0].value["id"]) == ["deep", "b"]
    fields = next(c.value for c in at.code if '"metadata"' in c.value)
    assert fields.count('"a"') == SHOWN_DEPTH and '"…"' in fields  # shown to a depth, the trace keeps it all


def test_deep_metadata_beyond_what_is_read_gives_the_same_line_in_cli_and_upload(tmp_path):
    path = tmp_path / "deeper.json"
    path.write_bytes(_nested(50_000))
    code, out, err = cli("build", path)
    assert code == 2
    line = err.strip().removeprefix("error: ")
    assert line.count("\n") == 0 and "nested too deeply" in line
    at = start()
    at.file_uploader(key="dbg.upload").set_value(("deeper.json", path.read_bytes(), "application/json"))
    at.run()
    assert not at.exception
    shown = [_shown(e).replace(WORD_JOINER, "") for e in errors(at)]
    assert shown == [line.replace(str(path), "deeper.json")], (shown, line)


# --------------------------------------------------------------------------- no candidates

def test_a_trace_with_no_candidates_has_an_empty_state():
    trace = ctxcore.build([], "what is the refund window?")
    at = upload(start(), "empty.trace.json", trace.to_json().encode())
    assert not errors(at), errors(at)
    assert [m.value for m in at.metric if m.label == "Candidates"] == ["0"]
    assert any("has no candidates" in i.value for i in at.info)
    assert not [e for e in at.error if "No candidate with id" in e.value]
