"""Version families (issue #28 item 4): versions are versions of ONE passage, one document's same section, never
every chunk that shares a doc_id. Every expected outcome below is written by hand."""

import pytest
from conftest import warnings_of

from ctxcore import Candidate, Config, build
from ctxcore.analysis.diagnosis import diagnose
from ctxcore.analysis.sent import family_members, of_build
from ctxcore.stages.filters import alike, document_name, passage_place

SABBATICAL = "Employees may take a sabbatical of up to six months after five years of service."
VACATION = "Employees get 30 vacation days per year, plus public holidays."


def _fates(t):
    return {d.id: (d.fate, d.superseded_by) for d in t.decisions}


def test_the_only_sabbatical_passage_is_not_stale_because_a_newer_vacation_chunk_shares_its_doc_id():
    # old rule: one family per doc_id, so the 2024 sabbatical chunk was stale, "superseded" by the vacation chunk
    t = build([Candidate("hb-sabbatical", SABBATICAL, 0.9, doc_id="handbook", date="2024-05-01"),
               Candidate("hb-vacation", VACATION, 0.8, doc_id="handbook", date="2026-01-10")],
              "How long can a sabbatical be?", Config(budget=500))
    assert _fates(t) == {"hb-sabbatical": ("kept", None), "hb-vacation": ("kept", None)}
    assert warnings_of(t, "ambiguous_versions") == [(
        "hb-sabbatical (2024-05-01), hb-vacation (2026-01-10) of handbook have no section, chunk index or title to "
        "pair them with the other versions, and their texts differ: not compared as versions, none made stale",
        ("hb-sabbatical", "hb-vacation"))]
    assert warnings_of(t, "versions_disagree") == []  # no longer "older says 6 months; newest says 30 days"


def test_chunks_of_one_document_in_different_sections_are_not_versions_of_each_other():
    t = build([Candidate("hb-sabbatical", SABBATICAL, 0.9, doc_id="handbook", section="Leave > Sabbatical",
                         date="2024-05-01"),
               Candidate("hb-vacation", VACATION, 0.8, doc_id="handbook", section="Leave > Vacation",
                         date="2026-01-10")], "q", Config(budget=500))
    assert _fates(t) == {"hb-sabbatical": ("kept", None), "hb-vacation": ("kept", None)}
    assert t.warnings == [] or all(w.kind not in ("ambiguous_versions", "versions_disagree") for w in t.warnings)


def test_three_dated_versions_of_one_section_the_older_two_stale():
    sec = "Approvals > Thresholds"
    t = build([Candidate("p-2025-03", "Refunds above 500 EUR need approval.", 0.9, doc_id="refund-policy",
                         section=sec, date="2025-03-01"),
               Candidate("p-2025-09", "Refunds above 500 EUR need a manager's approval.", 0.85,
                         doc_id="refund-policy", section=sec, date="2025-09-15"),
               Candidate("p-2026-07", "Refunds above 1,000 EUR need approval.", 0.8, doc_id="refund-policy",
                         section=sec, date="2026-07-01")], "q", Config(budget=500))
    assert _fates(t) == {"p-2025-03": ("stale", "p-2026-07"), "p-2025-09": ("stale", "p-2026-07"),
                         "p-2026-07": ("kept", None)}
    assert t.decision("p-2025-03").reason == ("refund-policy (section Approvals > Thresholds) version 2025-03-01 is "
                                              "older than 2026-07-01 (present as p-2026-07)")


HP = [Candidate("hp-wording-v3.1#7.2", "Section 7.2: water damage is covered up to 2,000 EUR per claim.", 0.9,
                doc_id="hp-wording-v3.1", version="3.1"),
      Candidate("hp-wording-v4.0#7.4", "Section 7.4: theft from a vehicle is covered up to 500 EUR.", 0.8,
                doc_id="hp-wording-v4.0", version="4.0"),
      Candidate("hp-wording-v4.0#7.2", "Section 7.2: water damage is covered up to 5,000 EUR per claim.", 0.5,
                doc_id="hp-wording-v4.0", version="4.0")]


def test_the_versions_of_a_numbered_section_pair_across_version_ids():
    t = build(HP, "Is water damage covered?", Config(budget=500))
    assert _fates(t) == {"hp-wording-v3.1#7.2": ("stale", "hp-wording-v4.0#7.2"),
                         "hp-wording-v4.0#7.4": ("kept", None), "hp-wording-v4.0#7.2": ("kept", None)}
    assert warnings_of(t, "versions_disagree") == [(
        "versions of hp-wording (#7.2) disagree: older (3.1) says 2000 eur; newest (4.0) says 5000 eur",
        ("hp-wording-v3.1#7.2", "hp-wording-v4.0#7.2"))]


@pytest.mark.parametrize("doc_ids", [("hp-wording-v3.1", "hp-wording-v4.0", "hp-wording-v4.0"),
                                     ("hp-wording",) * 3])  # one doc_id for all: the old rule named #7.4
def test_the_outdated_version_finding_names_the_same_section_of_the_new_version(doc_ids):
    cands = [Candidate(c.id, c.text, c.score, doc_id=d, version=c.version) for c, d in zip(HP, doc_ids)]
    t = build(cands, "Is water damage covered?", Config(budget=500, prefer_newest=False))
    sent = of_build(t)
    assert sent.passage("hp-wording-v3.1#7.2").superseded_by == "hp-wording-v4.0#7.2"
    assert sent.passage("hp-wording-v4.0#7.4").superseded_by is None
    assert [c.id for c in family_members(t, "hp-wording-v3.1#7.2")] == ["hp-wording-v4.0#7.2", "hp-wording-v3.1#7.2"]
    root = diagnose(t, sent=sent).root
    assert (root.kind, root.ids) == ("outdated_version_sent", ("hp-wording-v3.1#7.2", "hp-wording-v4.0#7.2"))
    # (near-dedup dropped the newer #7.2 as a copy of the older one: the stale filter was off)
    assert root.title == ("The prompt carried an older version of hp-wording (#7.2), hp-wording-v3.1#7.2 (3.1); the "
                          "newer hp-wording-v4.0#7.2 (4.0) was retrieved but not sent.")


@pytest.mark.parametrize("newer, stale", [
    ("alpha beta gamma delta", True),          # identical words: one passage
    ("alpha beta epsilon zeta", True),         # 2 of 4 words shared: 0.5, at SAME_PASSAGE
    ("alpha eta epsilon zeta", False),         # 1 of 4: 0.25, below
    ("alpha beta gamma delta 2026 99", True),  # numbers aside: the figures are what versions change
])
def test_unplaced_chunks_are_one_passage_when_their_words_are_alike(newer, stale):
    t = build([Candidate("old", "alpha beta gamma delta", 0.9, doc_id="d", date="2024-01-01"),
               Candidate("new", newer, 0.8, doc_id="d", date="2025-01-01")], "q", Config(budget=500, near_dup=None))
    assert t.decision("old").fate == ("stale" if stale else "kept")
    assert bool(warnings_of(t, "ambiguous_versions")) is not stale


@pytest.mark.parametrize("a, b, expected", [
    ("limit 9", "limit 10", True), ("Text one.", "Text two.", True), ("one two three", "four five six", False),
    ("12 34", "12 34", False),  # no words but numbers: nothing to compare
])
def test_alike(a, b, expected):
    assert alike(a, b) is expected


@pytest.mark.parametrize("doc_id, name", [
    ("hp-wording-v3.1", "hp-wording"), ("hp-wording-v4.0", "hp-wording"), ("policy_v2", "policy"),
    ("policy version 3", "policy"), ("handbook-2024", "handbook"), ("handbook-2024-03-01", "handbook"),
    ("doc-1", "doc-1"), ("doc-12", "doc-12"), ("v2", "v2"), ("kb-207", "kb-207"), ("covid-19", "covid-19"),
])
def test_document_name_drops_only_a_version_marker(doc_id, name):
    assert document_name(doc_id) == name


@pytest.mark.parametrize("kw, place", [
    ({"id": "hp#7.2", "section": " Leave >  Sabbatical "}, ("section", "leave > sabbatical")),
    ({"id": "hp-wording-v3.1#7.2"}, ("part", "7.2")),
    ({"id": "policy#2024-03", "chunk_index": 4}, ("chunk", "4")),   # a date after '#' is no place
    ({"id": "policy#v2", "title": "Refunds"}, ("title", "refunds")),
    ({"id": "policy"}, None),
])
def test_passage_place(kw, place):
    assert passage_place(Candidate(kw.pop("id"), "text", **kw)) == place
