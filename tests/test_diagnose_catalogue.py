"""The diagnosis catalogue: logged traces in the OpenInference and Langfuse shapes, each with its expected
first finding (kind and decisive ids) and fix; the sent context; the fate-tied answer checks; the answer
wherever a format puts it; the sample scenarios in their failure state; the Diagnose page."""

import dataclasses
import json
from pathlib import Path

import pytest
from conftest import cli
from streamlit.testing.v1 import AppTest

from ctxcore import Candidate, Config, Logged, Trace, build, load, trace_from_json, trace_schema
from ctxcore.analysis.answer import SUPPORT
from ctxcore.analysis.answer import check_answer as _check_answer
from ctxcore.analysis.diagnosis import KINDS, MAX_PROOFS, ORDER, diagnose
from ctxcore.analysis.explain import explain_text
from ctxcore.analysis.sent import attach, of_trace, reconstruct

ROOT = Path(__file__).resolve().parents[1]
CATALOGUE = ROOT / "tests" / "fixtures" / "diagnose"
EXPECTED = json.loads((CATALOGUE / "expected.json").read_text())
SAMPLES = sorted((ROOT / "sample_data").glob("*.json"))


def _diagnosed(name):
    loaded = load(CATALOGUE / name)
    trace = loaded.build()
    return trace, diagnose(trace, logged_prompt=trace.logged.prompt_text, answer=trace.logged.answer)


def rebuild(trace, fix, base=None):
    """A fresh build of the logged pipeline's policy (``base``: a finding's) plus the fix."""
    return build(trace.candidates, trace.query, trace.config.replace(**{**(base or {}), **fix}), trace.inputs)


def test_the_catalogue_covers_every_root_cause_twice_in_both_formats():
    kinds = {}
    for name, want in EXPECTED.items():
        kinds.setdefault(want["kind"], []).append(name)
    assert len(EXPECTED) >= 14
    for kind in ("duplicates_crowd_out", "buried_in_middle", "outdated_version_sent", "prompt_cut_off",
                 "prompt_over_window", "instruction_followed", "unsupported_answer"):
        names = kinds[kind]
        assert len(names) >= 2, kind
        assert any("langfuse" in n for n in names) and any("_oi_" in n for n in names), (kind, names)


@pytest.mark.parametrize("name", list(EXPECTED))
def test_the_first_finding_is_the_expected_root_cause_with_its_fix_proved(name):
    want = EXPECTED[name]
    trace, dx = _diagnosed(name)
    first = dx.findings[0]
    assert first.role == "cause" and first.severity == 3
    assert first.kind == want["kind"], (first.kind, first.title)
    assert list(first.ids[:len(want["ids"])]) == want["ids"], first.ids
    assert first.ids[0] in first.title  # the sentence names the decisive passage
    if want["fix"] is not None:
        assert first.fix == want["fix"] and first.fix_verified
    # honest: fix_verified is exactly what a fresh build with the fix does
    if first.fix is not None:
        after = rebuild(trace, first.fix, first.base)
        d = after.decision(first.ids[0])
        if first.kind == "buried_in_middle":
            ok = d.fate == "kept" and d.position in (1, len(after.kept()))
        elif first.kind == "outdated_version_sent":
            ok = after.decision(first.ids[1]).fate == "kept" and d.fate != "kept"
        elif first.kind == "unsupported_answer":
            ok = after.abstain
        else:
            ok = d.fate == "kept"
        assert first.fix_verified == ok
    else:
        assert not first.fix_verified
    assert [f.severity for f in dx.findings] == sorted((f.severity for f in dx.findings), reverse=True)
    assert all(f.role == "note" for f in dx.findings if f.severity == 1)


@pytest.mark.slow
def test_cli_explain_json_returns_the_root_cause_first():
    code, out, err = cli("explain", CATALOGUE / "dup_crowd_oi_flat.jsonl", "--format", "json")
    assert code == 0, err
    found = json.loads(out)
    assert found[0]["kind"] == "duplicates_crowd_out" and found[0]["ids"][0] == "warranty-damaged-goods"
    assert found[0]["ids"][1:] == [f"refund-copy-{i}" for i in range(5)]
    assert found[0]["fix"] == {"near_dup": 0.8} and found[0]["fix_verified"] is True
    assert "100% of the sent evidence" in found[0]["title"]
    assert found[0]["after"]["fate"] == "kept"


@pytest.mark.slow
def test_cli_check_answer_reports_the_outdated_citation_and_number():
    code, out, err = cli("check-answer", CATALOGUE / "outdated_oi_flat.jsonl", "--format", "json")
    assert code == 0, err
    rows = {(c["verdict"], c["claim"]): c for c in json.loads(out)}
    assert rows[("cites_outdated", "[1]")]["ids"] == ["returns-2024", "returns-2025"]
    assert rows[("number_only_outdated", "30")]["ids"] == ["returns-2024", "returns-2025"]
    assert ("ok", "30") not in rows  # the cited number is not "ok": it is only in the superseded version


def test_the_sent_context_of_a_logged_trace():
    trace, dx = _diagnosed("dup_crowd_oi_flat.jsonl")
    sent = dx.sent
    assert [p.id for p in sent.passages] == [f"refund-copy-{i}" for i in range(5)]
    assert [p.label for p in sent.passages] == [f"[{i}]" for i in range(1, 6)]
    assert all(p.share == 1.0 and p.tokens > 0 for p in sent.passages)
    assert [p.duplicate_of for p in sent.passages] == [None] + ["refund-copy-0"] * 4
    assert sent.passages[1].similarity == 1.0 and 0.8 <= sent.passages[2].similarity < 1.0
    assert "warranty-damaged-goods" in sent.not_sent
    assert sent.question_present and sent.rule_present and not sent.over_window
    _, docs = _diagnosed("dup_crowd_langfuse.json")
    assert [p.label for p in docs.sent.passages] == [f"Document {i}" for i in range(1, 5)]
    _, cut = _diagnosed("cut_mid_passage_oi_nested.json")
    assert not cut.sent.question_present and cut.sent.passage("damaged-returns").cut
    _, window = _diagnosed("over_window_oi_flat.jsonl")
    assert window.sent.over_window and window.sent.limit == 8192 - 7000
    _, old = _diagnosed("outdated_langfuse_versions.json")
    assert old.sent.passage("approval-v1").superseded_by == "approval-v2"
    assert old.sent.passage("approval-v2").superseded_by is None


@pytest.mark.slow
def test_logged_sent_is_in_the_trace_json_the_schema_and_reads_back():
    code, out, err = cli("build", CATALOGUE / "buried_oi_nested.json", "--format", "json")
    assert code == 0, err
    data = json.loads(out)
    sent = data["logged"]["sent"]
    assert len(sent["passages"]) == 15 and sent["passages"][7]["id"] == "locker-redirect"
    assert sent["passages"][7]["position"] == 8 and sent["passages"][7]["label"] == "[8]"
    back = trace_from_json(out)
    assert back.logged.sent.passages[7].id == "locker-redirect"
    assert back.to_json() == out.rstrip("\n")
    schema = trace_schema()
    assert {"Sent", "SentPassage"} <= set(schema["$defs"])
    assert "sent" in schema["$defs"]["Logged"]["properties"]


@pytest.mark.parametrize("name,shape", [("buried_oi_nested.json", "output.value with an assistant: prefix"),
                                        ("unsupported_oi_flat.jsonl", "output.value, flattened"),
                                        ("instruction_oi_nested.json", "LlamaIndex blocks in output.value"),
                                        ("outdated_oi_flat.jsonl", "multi-part message.contents")])
def test_the_logged_answer_is_found_wherever_the_format_puts_it(name, shape):
    loaded = load(CATALOGUE / name)
    answer = loaded.logged.answer
    assert answer and not answer.lower().startswith("assistant"), (shape, answer)
    assert "{" not in answer, (shape, answer)


@pytest.mark.slow
def test_explain_text_says_first_whether_it_was_sent():
    trace = load(CATALOGUE / "dup_crowd_oi_flat.jsonl").build()
    (e,) = explain_text(trace, "photo of the damage")
    # the logged pipeline's own rule that left it out comes with it (issue #28): it ranked 6th of 8, 5 were sent
    said = ("not sent: the logged prompt lacks it (your pipeline appears to send the top 5 passages: sent 5 of the 8 "
            "passages retrieved)")
    assert e.note.startswith(said + "; the replay:")
    assert e.sent == said
    sent = explain_text(trace, "passes an inspection")
    assert sent[0].sent == "sent as [3], at position 3 of 5"
    code, out, _ = cli("explain", CATALOGUE / "dup_crowd_oi_flat.jsonl", "--find", "photo of the damage")
    assert "not sent: the logged prompt lacks it" in out


# the answer checks, by hand --------------------------------------------------------------------------------

def check_answer(trace, answer):
    """With the fate-tied checks: the sent context is the build's own prompt."""
    return _check_answer(trace, answer, sent=of_trace(trace))


def _two_versions():
    cands = [Candidate("old", "Returns are accepted within 30 days of delivery.", 0.9, doc_id="r", date="2024-01-01"),
             Candidate("new", "Returns are accepted within 14 days of delivery.", 0.8, doc_id="r", date="2025-01-01"),
             Candidate("ship", "Standard shipping takes three to five working days.", 0.7)]
    return build(cands, "How long is the return window?", Config(prefer_newest=False, order="rank"))


def test_not_supporting_is_a_quarter_of_the_claims_words():
    t = _two_versions()  # [S1] old, [S2] new, [S3] ship
    checks = check_answer(t, "The return window is 14 days from delivery [S3].")
    bad = [c for c in checks if c.verdict == "not_supporting"]
    assert [c.claim for c in bad] == ["[S3]"] and "0%" in bad[0].detail
    ok = check_answer(t, "The return window is 14 days from delivery [S2].")
    assert not [c for c in ok if c.verdict == "not_supporting"]
    # claim words: return, window, 14, days, delivery, shipping, slow -> [S3] holds "shipping" and "days" (2/7 < a
    # quarter? no: 2/7 = 0.29 >= 0.25, supported); one word fewer in common falls under the threshold
    assert SUPPORT == 0.25
    assert not [c for c in check_answer(t, "Return window 14 days delivery shipping slow [S3].")
                if c.verdict == "not_supporting"]
    assert [c for c in check_answer(t, "Return window 14 delivery shipping slow refund [S3].")
            if c.verdict == "not_supporting"]


def test_outdated_duplicate_uncited_and_abstention_checks():
    t = _two_versions()
    checks = {(c.verdict, c.claim) for c in check_answer(t, "You have 30 days [S1]. Items must be unused and "
                                                           "in their original packaging with all labels attached.")}
    assert ("cites_outdated", "[S1]") in checks and ("number_only_outdated", "30") in checks
    assert any(v == "uncited" for v, _ in checks)
    dup = build([Candidate("a", "Refunds take five business days to reach the card.", 0.9),
                 Candidate("b", "Refunds take five business days to reach the card.", 0.8, doc_id="x")],
                "q", Config(near_dup=None, order="rank"))
    assert dup.decision("b").fate == "exact_duplicate"
    near = build([Candidate("a", "Refunds take five business days to reach the card.", 0.9),
                  Candidate("b", "Refunds take five business days to reach your card.", 0.8)],
                 "refund time", Config(near_dup=None, order="rank"))
    assert ("duplicate_citation", "[S1], [S2]") in {(c.verdict, c.claim) for c in
                                                     check_answer(near, "Five business days [S1][S2].")}
    nothing = build([Candidate("a", "text", 0.1)], "q", Config(min_score=0.5))
    assert nothing.abstain
    assert "ignored_abstention" in {c.verdict for c in check_answer(nothing, "It takes two weeks.")}


# the sample scenarios in their failure state ----------------------------------------------------------------

SAMPLE_ROOTS = {"01_duplicates_crowd_out.json": ("duplicates_crowd_out", "returns-shipping-damaged"),
                "02_buried_in_middle.json": ("buried_in_middle", "wty-marketplace-sellers"),
                "03_overflow.json": ("prompt_over_window", "x500-9.5-5ghz-daily-drops"),
                "04_stale_policy.json": ("outdated_version_sent", "refund-approval-2025-03"),
                "05_hidden_instruction.json": ("instruction_in_content", "forum-cracked-jug"),
                "06_unanswerable.json": ("nothing_relevant", "giftcard-balance"),
                "07_density_vs_score.json": ("not_sent", "pd65-power-split-two"),
                "08_adjacent_chunks.json": ("fragmented_document", "reset-guide-part1")}


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.name)
def test_each_sample_in_its_failure_state_shows_its_root_cause(path):
    loaded = load(path)
    trace = loaded.build(loaded.settings(**loaded.extra["scenario"]["naive_config"]))
    cfg = loaded.settings()
    dx = diagnose(trace, limit=cfg.window - cfg.max_output)
    first = dx.findings[0]
    assert (first.kind, first.ids[0]) == SAMPLE_ROOTS[path.name]
    assert first.fix is None or first.fix_verified == (first.kind != "instruction_in_content")
    assert not first.resolved  # the failure state does not already do what the fix claims


def test_every_kind_is_documented_in_the_readme():
    readme = (ROOT / "README.md").read_text()
    for kind in KINDS:
        assert f"`{kind}`" in readme, kind
    assert set(ORDER) == set(KINDS)


# scale -------------------------------------------------------------------------------------------------

@pytest.mark.slow
def test_verification_reruns_are_bounded_at_scale():
    cands = [Candidate(f"c{i}", f"passage {i} about topic {i % 97} with words w{i % 13} w{i % 7} refunds", 1 - i / 4000)
             for i in range(3000)]
    trace = build(cands, "how long do refunds take?", Config())
    prompt = "user: Context:\n" + "\n\n".join(f"[{i}] {c.text}" for i, c in enumerate(cands[:12], 1))
    trace = dataclasses.replace(trace, logged=Logged("openinference", prompt_text=prompt))
    seen = []
    dx = diagnose(trace, logged_prompt=prompt, progress=lambda done, total, what: seen.append(done))
    assert dx.proofs <= MAX_PROOFS + 3
    assert seen and seen[-1] == MAX_PROOFS + 2
    assert len([f for f in dx.findings if f.kind == "missing_from_logged_prompt"]) <= MAX_PROOFS
    assert len(of_trace(trace, prompt).passages) == 12
    assert attach(trace).logged.sent == reconstruct(trace, prompt)


# the Diagnose page ---------------------------------------------------------------------------------------

def _page(upload=None, sample=None) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.run()
    at.switch_page("pages/diagnose.py")
    at.run()
    if upload:
        at.file_uploader(key="dbg.upload").set_value((upload.name, upload.read_bytes(), "application/json"))
    if sample:
        at.selectbox(key="dbg.sample").select(sample)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _order(at):
    """The main area's element types and values, in page order."""
    return [(type(e).__name__, getattr(e, "value", None)) for e in at.main]


def test_the_page_leads_with_the_root_cause_and_applies_its_fix():
    at = _page(upload=CATALOGUE / "buried_oi_nested.json")
    order = _order(at)
    first_table = next(i for i, (kind, _) in enumerate(order) if kind == "Dataframe")
    root = next(i for i, (kind, v) in enumerate(order) if kind == "Markdown" and "middle of the prompt" in str(v))
    assert root < first_table
    texts = [t.value for t in at.text]
    assert any(t.startswith("Parcel locker deliveries cannot be redirected") for t in texts)  # as text
    at.button(key="dx.fix.root").click()
    at.run()
    assert not at.exception
    assert at.selectbox(key="dbg.order").value == "rank"  # the replay of the policy already sandwiches
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Before: locker-redirect in the prompt that was sent"] == "position 8 of 15"
    assert metrics["After: locker-redirect in the replay"].endswith("position 1 of 15")
    assert any("Resolved in the replay" in str(m.value) for m in at.markdown)
    sent = next(df.value for df in at.dataframe if "marks" in df.value.columns)
    assert dict(zip(sent["id"], sent["marks"]))["locker-redirect"] == "buried"


def test_a_sample_opens_in_its_failure_state_and_apply_resolves_it():
    at = _page(sample="01_duplicates_crowd_out.json")
    assert at.toggle(key="dbg.near_dup_on").value is False  # the scenario's naive_config: its failure state
    heads = [str(m.value) for m in at.markdown]
    assert any("returns\\-shipping\\-damaged" in h and "copies of one passage" in h for h in heads), heads[:5]
    assert not any("Resolved in the replay" in h for h in heads)
    at.button(key="dx.fix.root").click()
    at.run()
    assert not at.exception
    heads = [str(m.value) for m in at.markdown]
    assert any("Resolved in the replay" in h for h in heads)
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Before: returns-shipping-damaged in the prompt that was sent"] == "not sent"
    assert "position" in metrics["After: returns-shipping-damaged in the replay"]


@pytest.mark.slow
def test_the_page_is_interactive_with_3000_candidates(tmp_path):
    """A hang guard, not a timing: the page's runs (upload, then a search) each finish within AppTest's timeout,
    because the diagnosis proves only the passages its causes name."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("make_catalogue", CATALOGUE / "make.py")
    make = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(make)
    topics = ["refund", "shipping", "warranty", "invoice", "account", "locker", "returns", "gift"]
    docs = [make.doc(f"c{i:04d}", f"{topics[i % 8]} note {i}: " + " ".join(f"w{(i * 7 + j) % 997}" for j in range(40)),
                     round(1 - i / 3500, 4)) for i in range(3000)]
    query = "how long do refunds take for damaged items?"
    msgs = [("system", make.SYSTEM_CITE), ("user", make.user_message(query, docs[:12], "brackets"))]
    path = tmp_path / "big.json"
    path.write_text(make.nested(make.oi_spans("ee" * 16, query, docs, msgs, "Five days [1].")))
    at = _page(upload=path)
    assert any("Root cause" in str(h.value) for h in at.subheader)
    at.text_input(key="dx.find").set_value("refund note")
    at.run()
    assert not at.exception
    found = next(df.value for df in at.dataframe if "why" in df.value.columns)
    assert 0 < len(found) <= 25 and "sent?" in found.columns
