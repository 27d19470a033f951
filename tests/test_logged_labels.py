"""The label finder of a logged prompt (answer._MARKER): a message that opens with its first passage."""

import json
import time
from pathlib import Path

import ctxcore
from ctxcore.analysis.answer import _MARKER, check_answer, logged_passages
from ctxcore.analysis.explain import findings

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "traces" / "phoenix_nested.json"


def _opening_with_passage(tmp_path) -> Path:
    """The nested Phoenix fixture, its user message starting with "[1] …" (no "Context:" line before it)."""
    text = FIXTURE.read_text().replace('"content": "Context:\\n[1] Damaged-item', '"content": "[1] Damaged-item')
    assert '"content": "[1] Damaged-item' in text
    path = tmp_path / "phoenix_first_line.json"
    path.write_text(text)
    return path


def test_a_label_on_the_first_line_of_a_message_is_found(tmp_path):
    loaded = ctxcore.load(_opening_with_passage(tmp_path))
    prompt = loaded.logged.prompt_text
    assert "\n\nuser: [1] Damaged-item returns" in prompt
    trace = loaded.build()
    passages = logged_passages(trace, prompt)
    assert {label: cid for label, (cid, _) in passages.items()} == {"1": "kb-207#1", "2": "kb-207#3", "3": "kb-207#2"}


def test_a_correct_answer_citing_it_gets_no_false_finding(tmp_path):
    loaded = ctxcore.load(_opening_with_passage(tmp_path))
    logged, trace = loaded.logged, loaded.build()
    checks = check_answer(trace, logged.answer, logged.prompt_text)
    assert [(c.claim, c.verdict) for c in checks if c.kind == "citation"] == [("[1]", "ok"), ("[2]", "ok")]
    assert all(c.verdict == "ok" for c in checks), [(c.claim, c.verdict, c.detail) for c in checks]
    found = findings(trace, answer_checks=checks, logged_prompt_tokens=logged.prompt_tokens,
                     logged_prompt=logged.prompt_text)
    # the same findings as the fixture as logged (its "[1]" on a line of its own)
    original = ctxcore.load(FIXTURE)
    o_checks = check_answer(original.build(), original.logged.answer, original.logged.prompt_text)
    o_found = findings(original.build(), answer_checks=o_checks,
                       logged_prompt_tokens=original.logged.prompt_tokens,
                       logged_prompt=original.logged.prompt_text)
    assert [(f.kind, f.severity) for f in found] == [(f.kind, f.severity) for f in o_found]
    assert not [f for f in found if f.severity == 3 and f.kind.startswith("answer")]


def test_the_marker_forms():
    text = "system: be brief\n\nuser: [1] first\n[2] second\n  [3] third\nassistant:[4] fourth\nnot [5] inline\n[6x] no"
    assert [m.group(1) for m in _MARKER.finditer(text)] == ["1", "2", "3", "4"]


def test_the_marker_is_linear_on_long_lines():
    for bomb in (" " * 200_000 + "x", "a" * 200_000 + ":", ("user:" + " " * 1000) * 200, "[" * 200_000, "\n" * 200_000):
        t0 = time.perf_counter()
        list(_MARKER.finditer(bomb))
        assert time.perf_counter() - t0 < 0.5, repr(bomb[:20])
