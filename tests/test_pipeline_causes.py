"""Causes in the logged pipeline's own terms (issue #28 items 3 and 7): each cause in three export families,
healthy runs that get no cause, fixes proved on the inferred policy (never a change that changes nothing), and
plain words first in every finding."""

import dataclasses
import json
import re
from pathlib import Path

import pytest

from ctxcore import Candidate, Config, Logged, build, load
from ctxcore.analysis import policy as pipeline_policy
from ctxcore.analysis.causes import numbers
from ctxcore.analysis.diagnosis import KINDS, ORDER, diagnose
from ctxcore.settings import SETTINGS

ROOT = Path(__file__).resolve().parents[1]
CAUSES = ROOT / "tests" / "fixtures" / "causes"
CATALOGUES = [ROOT / "tests" / "fixtures" / d for d in ("diagnose", "policy", "causes")]
FIXTURES = sorted(p for d in CATALOGUES for p in d.glob("*.js*") if p.name != "expected.json")


def diagnosed(path):
    trace = load(path).build()
    return trace, diagnose(trace, logged_prompt=trace.logged.prompt_text, answer=trace.logged.answer)


THRESHOLD = ("lower the minimum relevance score from 0.50 to 0.47 and send 4 passages instead of 3 (ctxcore: "
             "min_score 0.47, max_passages 4)")
PER_DOC = ("send the next chunk of the same document, or merge adjacent chunks before the one-per-document cap "
           "(ctxcore: merge_adjacent on)")
HISTORY = ("cap the history at 957 tokens, the most recent turns first, and give the evidence about 502 tokens "
           "(ctxcore: history_share 0.2, budget 502)")
PARAPHRASE = "treat passages that say the same thing in other words as copies (ctxcore: near_dup 0.4)"
CONFLICT = ("when sources disagree, send only the one that should win (refund-official), or drop forum sources like "
            "forum-refund from the index (ctxcore: no setting for this)")
RESETS = ["reset-0", "reset-1", "reset-2", "reset-3"]

# (fixture, root cause, decisive ids, fix, the fix in words): every cause in three families
EXPECTED = [
    ("threshold_oi_nested.json", "threshold_cut", ["express-price"], {"min_score": 0.47, "max_passages": 4}, THRESHOLD),
    ("threshold_langfuse.json", "threshold_cut", ["express-price"], {"min_score": 0.47, "max_passages": 4}, THRESHOLD),
    ("threshold_langsmith.json", "threshold_cut", ["express-price"], {"min_score": 0.47, "max_passages": 4}, THRESHOLD),
    ("per_document_oi_nested.json", "per_document_cap", ["course-terms#12", "course-terms#11"],
     {"merge_adjacent": True}, PER_DOC),
    ("per_document_langfuse.json", "per_document_cap", ["course-terms#12", "course-terms#11"],
     {"merge_adjacent": True}, PER_DOC),
    ("per_document_langsmith.json", "per_document_cap", ["course-terms#12", "course-terms#11"],
     {"merge_adjacent": True}, PER_DOC),
    ("reranker_oi_nested.json", "reranker_cut", ["mattress-trial"], {"max_passages": 3},
     "raise the reranker's top_n from 2 to 3 (ctxcore: max_passages 3)"),
    ("reranker_langfuse.json", "reranker_cut", ["mattress-trial"], {"max_passages": 3, "budget": 159},
     "let your filter step (rerank_top_docs) keep 3 passages instead of 2, and give the evidence about 159 tokens "
     "(ctxcore: max_passages 3, budget 159)"),
    ("reranker_langsmith.json", "reranker_cut", ["mattress-trial"], {"max_passages": 3, "budget": 159},
     "let your filter step (ContextualCompressionRetriever) keep 3 passages instead of 2, and give the evidence "
     "about 159 tokens (ctxcore: max_passages 3, budget 159)"),
    ("history_oi_nested.json", "history_crowding", ["warranty-claims"], {"history_share": 0.2, "budget": 502},
     HISTORY),
    ("history_langfuse.json", "history_crowding", ["warranty-claims"], {"history_share": 0.2, "budget": 502},
     HISTORY),
    ("history_langsmith.json", "history_crowding", ["warranty-claims"], {"history_share": 0.2, "budget": 502},
     HISTORY),
    ("paraphrase_oi_nested.json", "paraphrased_duplicates", ["firmware", *RESETS], {"near_dup": 0.4}, PARAPHRASE),
    ("paraphrase_langfuse.json", "paraphrased_duplicates", ["firmware", *RESETS], {"near_dup": 0.4}, PARAPHRASE),
    ("paraphrase_langsmith.json", "paraphrased_duplicates", ["firmware", *RESETS], {"near_dup": 0.4}, PARAPHRASE),
    ("conflict_oi_nested.json", "conflicting_sources", ["forum-refund", "refund-official"], None, CONFLICT),
    ("conflict_langfuse.json", "conflicting_sources", ["forum-refund", "refund-official"], None, CONFLICT),
    ("conflict_langsmith.json", "conflicting_sources", ["forum-refund", "refund-official"], None, CONFLICT),
]
HEALTHY = sorted(p.name for p in CAUSES.glob("healthy_*.js*"))


def test_every_new_cause_has_three_families_and_a_healthy_twin():
    kinds = {}
    for name, kind, *_ in EXPECTED:
        kinds.setdefault(kind, set()).add(name.split("_")[-1].split(".")[0])
    assert set(kinds) == {"threshold_cut", "per_document_cap", "reranker_cut", "history_crowding",
                          "paraphrased_duplicates", "conflicting_sources"}
    assert all(families == {"nested", "langfuse", "langsmith"} for families in kinds.values()), kinds
    assert len(HEALTHY) == 18  # six healthy runs, each in the three families
    assert all(kind in KINDS and kind in ORDER for kind in kinds)


@pytest.mark.parametrize("name,kind,ids,fix,said", EXPECTED, ids=[e[0] for e in EXPECTED])
def test_the_root_cause_in_the_pipelines_terms_with_its_fix_proved_on_the_policy(name, kind, ids, fix, said):
    trace, dx = diagnosed(CAUSES / name)
    root = dx.root
    assert (root.kind, list(root.ids), root.fix, root.fix_said) == (kind, ids, fix, said), root.title
    assert root.ids[0] in root.title
    assert [f.kind for f in dx.causes] == [kind]  # the same passage "never sent" is this cause, not a second one
    assert root.fix_verified == (fix is not None)
    if fix is not None:  # proved by a fresh build of the inferred policy plus the change, not ctxcore's defaults
        config, _ = pipeline_policy.infer(trace).config(Config())
        after = build(trace.candidates, trace.query, config.replace(**fix), trace.inputs)
        d = after.decision(root.ids[0])
        kept = d.merged_into == root.ids[1] if kind == "per_document_cap" else d.fate == "kept"
        assert kept, (d.fate, d.reason)
        before = build(trace.candidates, trace.query, config, trace.inputs).decision(root.ids[0])
        assert kind == "per_document_cap" or before.fate != "kept"  # the policy alone does not send it


@pytest.mark.parametrize("name", HEALTHY)
def test_a_healthy_run_gets_no_cause(name):
    _, dx = diagnosed(CAUSES / name)
    assert dx.root is None and not dx.causes, [(f.kind, f.title) for f in dx.causes]


def test_the_titles_say_what_happened_in_plain_words():
    _, dx = diagnosed(CAUSES / "threshold_oi_nested.json")
    assert dx.root.title == ("express-price scored 0.47, just under your pipeline's minimum relevance score of 0.50, "
                             "so it was never sent; it holds what the question asks about (express, cost) and nothing "
                             "sent does.")
    assert dx.root.technical == "kind: threshold_cut; ctxcore: min_score 0.47, max_passages 4"
    _, dx = diagnosed(CAUSES / "conflict_langfuse.json")
    assert dx.root.title == ("Two passages that were sent disagree (refund-official says 14; forum-refund says 30), "
                             "and the answer used forum-refund, the one that should lose: refund-official is "
                             "official, forum-refund is forum.")
    _, dx = diagnosed(CAUSES / "paraphrase_langsmith.json")
    assert dx.root.evidence == ("reset-0, reset-1, reset-2, reset-3 share at least 73% of their content words, though "
                                "only 0.43 of their word sets (too different for a copy check at 0.8).")
    _, dx = diagnosed(ROOT / "tests" / "fixtures" / "diagnose" / "outdated_oi_flat.jsonl")
    assert dx.root.title == ("The answer used an older version of returns-policy, returns-2024 (2024-02-01); the newer "
                             "returns-2025 (2025-03-01) was retrieved but not sent.")
    assert dx.root.evidence == "Your pipeline kept the 2024-02-01 version of the section and dropped the 2025-03-01 one"
    assert dx.root.technical == "kind: outdated_version_sent; ctxcore: prefer_newest on"


def test_a_cut_passage_the_pipeline_would_send_whole_gets_no_setting_that_changes_nothing():
    _, dx = diagnosed(ROOT / "tests" / "fixtures" / "diagnose" / "cut_mid_passage_oi_nested.json")
    assert (dx.root.kind, dx.root.fix, dx.root.fix_verified) == ("prompt_cut_off", None, False)
    assert dx.root.proof == "the replay of your pipeline's rules sends it whole, with the question last"
    _, dx = diagnosed(ROOT / "tests" / "fixtures" / "diagnose" / "over_window_oi_flat.jsonl")
    assert dx.root.fix == {"max_output": 6200} and dx.root.fix_verified
    assert dx.root.fix_said == ("reserve fewer tokens for the answer, 6,200 instead of 7,000, so the prompt fits the "
                                "window (ctxcore: max_output 6200)")


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_no_fix_is_a_setting_the_pipeline_already_has(path):
    trace, dx = diagnosed(path)
    config, _ = pipeline_policy.infer(trace).config(Config())
    for f in dx.findings:
        if f.fix:
            assert any(getattr(config, k) != v for k, v in f.fix.items()), (f.kind, f.fix)
            assert all(getattr(config, k) != v for k, v in f.fix.items() if k != "budget"), (f.kind, f.fix)


SETTING_NAMES = sorted(s.name for s in SETTINGS if "_" in s.name)  # "window", "budget", "model" are English too
JARGON = [re.compile(r"\w=\S"), re.compile(r"\b(?:%s)\b" % "|".join(map(re.escape, SETTING_NAMES))),
          re.compile(r"\b(?:%s)\b" % "|".join(map(re.escape, list(KINDS)))),
          re.compile(r"weak middle|recounted against"),
          re.compile(r"\b(?:cites_outdated|number_only_outdated|not_supported_by|not_supporting|over_budget)\b")]


def lead(text: str) -> str:
    """What a reader sees first: the text before the ctxcore setting, if it names one."""
    return text.split(" (ctxcore:")[0]


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_finding_leads_with_plain_words(path):
    _, dx = diagnosed(path)
    for f in dx.findings:
        for part in (f.title, f.evidence, lead(f.fix_said)):
            hits = [m.group(0) for p in JARGON for m in p.finditer(part)]
            assert not hits, (f.kind, part, hits)
        if f.fix:
            assert f.fix_said.endswith(")") and "(ctxcore: " in f.fix_said, f.fix_said


def test_sentences_without_a_citation_are_one_note_that_quotes_each():
    cands = [Candidate("a", "Refunds are issued within five business days after the parcel reaches us.", 0.9),
             Candidate("b", "Exchanges are free within thirty days when the tags are still attached.", 0.8)]
    prompt = ("system: Answer from the context and cite it like [1].\n\nuser: Context:\n[1] " + cands[0].text
              + "\n\n[2] " + cands[1].text + "\n\nQuestion: How do refunds and exchanges work?")
    answer = ("Refunds are issued within five business days [1]. Exchanges are free within thirty days when the tags "
              "are attached and the receipt is kept. Store credit never expires and can be used in every shop "
              "worldwide. Gift cards are refunded to the original payment method within ten days.")
    trace = dataclasses.replace(build(cands, "How do refunds and exchanges work?", Config()),
                                logged=Logged("openinference", prompt_text=prompt, answer=answer))
    dx = diagnose(trace, logged_prompt=prompt, answer=answer)
    uncited = [f for f in dx.notes if f.kind == "answer_uncited"]
    assert len(uncited) == 1
    assert uncited[0].title == (
        '3 sentences of the answer cite no passage: "Exchanges are free within thirty days when the tags are atta…"; '
        '"Store credit never expires and can be used in every shop wor…"; "Gift cards are refunded to the original '
        'payment method withi…".')
    assert all(len(q) == 60 for q in re.findall(r'"([^"]*)…"', uncited[0].title))  # the first 60 characters


def test_not_sent_names_the_rule_that_left_it_out():
    _, dx = diagnosed(ROOT / "tests" / "fixtures" / "policy" / "threshold_oi_nested.json")
    note = next(f for f in dx.findings if f.kind == "not_sent")
    assert note.role == "note"  # the rule left out a passage the question did not need: not a cause
    assert note.title == ("address (score 0.47) was retrieved but never sent: your pipeline appears to send only "
                          "passages scoring 0.50 or more (all 4 sent scored >= 0.50; the 2 not sent scored 0.47 and "
                          "0.31).")
    _, dx = diagnosed(ROOT / "tests" / "fixtures" / "diagnose" / "not_sent_oi_nested.json")
    assert dx.root.title == ("invoices-pdf (score 0.92) was retrieved but never sent: none of the rules your pipeline "
                             "appears to follow explains why.")
    assert dx.root.fix is None  # the replay of the policy already sends it: a setting would change nothing
    assert dx.root.proof == "the replay of your pipeline's rules sends it: something the log does not show left it out"


def _threshold_run(express_score):
    """Passages scoring 0.50 or more sent; the express price (which the question needs) scored ``express_score``."""
    cands = [Candidate("ship-standard", "Standard shipping is free on orders over 40 EUR.", 0.78),
             Candidate("express-price", "Express shipping costs 9.90 EUR for next-day delivery.", express_score),
             Candidate("gift", "Gift wrapping is available at checkout for every item.", 0.55),
             Candidate("orders", "Orders placed before noon leave the warehouse the same day.", 0.62)]
    sent = [cands[0], cands[2], cands[3]]
    q = "How much does express shipping cost?"
    prompt = "user: Context:\n" + "\n\n".join(f"[{i}] {c.text}" for i, c in enumerate(sent, 1)) + f"\n\nQuestion: {q}"
    trace = dataclasses.replace(build(cands, q, Config()), logged=Logged("openinference", prompt_text=prompt))
    return diagnose(trace, logged_prompt=prompt)


@pytest.mark.parametrize("score,kind", [(0.49, "threshold_cut"), (0.35, "threshold_cut"), (0.34, "not_sent")])
def test_just_under_the_threshold_is_at_most_fifteen_hundredths_below_it(score, kind):
    dx = _threshold_run(score)
    assert dx.root.kind == kind and dx.root.ids[0] == "express-price"


@pytest.mark.parametrize("text,found", [
    ("Refunds up to 1,500 EUR within 14 days [2].", ["14", "1500"]),
    ("See [S3] and Document 2.", ["2"]),
    ("No numbers here.", []),
    ("Version 2.5 since 2025-03-01.", ["01", "03", "2.5", "2025"]),
])
def test_the_numbers_a_passage_states_leave_out_citation_labels(text, found):
    assert sorted(numbers(text)) == found


def test_the_fixture_readme_names_every_file():
    readme = (CAUSES / "README.md").read_text()
    for p in CAUSES.glob("*.js*"):
        assert f"`{p.name}`" in readme or p.name.split("_")[0] in readme, p.name
    assert json.loads((CAUSES / "reranker_langsmith.json").read_text())[1]["name"] == "ContextualCompressionRetriever"


def _diagnose_page(path):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.run()
    at.switch_page("pages/diagnose.py")
    at.run()
    at.file_uploader(key="dbg.upload").set_value((path.name, path.read_bytes(), "application/json"))
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_the_page_starts_from_the_pipelines_policy_and_apply_changes_exactly_the_fix():
    at = _diagnose_page(CAUSES / "threshold_oi_nested.json")
    # the controls are the inferred policy, not ctxcore's defaults (no minimum score, no passage limit)
    assert at.toggle(key="dbg.min_score_on").value is True and at.number_input(key="dbg.min_score").value == 0.5
    assert at.toggle(key="dbg.max_passages_on").value is True and at.number_input(key="dbg.max_passages").value == 3
    assert at.selectbox(key="dbg.order").value == "original"
    page = " ".join(str(m.value) for m in at.markdown).replace("\\", "")
    assert "**Verified fix**: lower the minimum relevance score from 0.50 to 0.47 and send 4 passages" in page
    at.button(key="dx.fix.root").click()
    at.run()
    assert not at.exception
    assert at.number_input(key="dbg.min_score").value == 0.47 and at.number_input(key="dbg.max_passages").value == 4
    assert at.selectbox(key="dbg.order").value == "original"  # nothing else moved
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Before: express-price in the prompt that was sent"] == "not sent"
    assert metrics["After: express-price in the replay"] == "[S2] · position 2 of 4"
    texts = [t.value for t in at.text]
    assert "(not in the prompt that was sent)" in texts
    assert "Express shipping costs 9.90 EUR and arrives the next working day when you order before 2 pm." in texts
    assert any("Resolved in the replay" in str(m.value) for m in at.markdown)
