"""Dates of document versions: the common formats are read, and a date that cannot be read is compared with
nothing (it is neither stale nor makes another stale) and named in an ``unparsed_date`` warning.

Every expected outcome below is written by hand: which candidate is stale and which one supersedes it."""

from datetime import datetime

import pytest

from ctxcore import Candidate, Config, build
from ctxcore.stages.filters import _natural, _when


def _family(*dated, doc="refund-policy"):
    """Candidates of one document, best score first, as (id, date)."""
    return [Candidate(cid, f"Refund rule number {i}.", 0.9 - i * 0.1, doc_id=doc, date=when)
            for i, (cid, when) in enumerate(dated)]


def _fates(trace):
    return {d.id: (d.fate, d.superseded_by) for d in trace.decisions}


@pytest.mark.parametrize("text, expected", [
    ("2025-03-01", datetime(2025, 3, 1)),
    ("2025-03-01T10:00:00Z", datetime(2025, 3, 1, 10)),
    ("2025-03-01T12:00:00+02:00", datetime(2025, 3, 1, 10)),      # converted to UTC
    ("2025-03-01 10:00", datetime(2025, 3, 1, 10)),
    ("Sat, 01 Mar 2025 10:00:00 +0000", datetime(2025, 3, 1, 10)),
    ("Sat, 01 Mar 2025 11:30:00 +0130", datetime(2025, 3, 1, 10)),
    ("1 March 2025", datetime(2025, 3, 1)),
    ("15 Sept 2025", datetime(2025, 9, 15)),
    ("March 1, 2025", datetime(2025, 3, 1)),
    ("Mar. 1st, 2025", datetime(2025, 3, 1)),
    ("March 2025", datetime(2025, 3, 1)),
    ("march 2025", datetime(2025, 3, 1)),
    ("2025/03/01", datetime(2025, 3, 1)),
    ("2025-03", datetime(2025, 3, 1)),
    ("2025", datetime(2025, 1, 1)),
    ("  2025-03-01\n", datetime(2025, 3, 1)),
])
def test_common_date_formats_are_read(text, expected):
    assert _when(text) == expected


@pytest.mark.parametrize("text", ["soon", "Q3 2025", "2025-02-30", "2025-13", "31 Smarch 2025", "v2",
                                  "2025-03-01 " + "note " * 20, "1" * 5000, "", "Marchember 2025"])
def test_what_is_no_date_is_not_read_as_one(text):
    assert _when(text) is None


def test_the_issue_case_a_2026_policy_is_newer_than_march_2025():
    # before: "March 2025" was compared as a string with "2026-07-01T00:00:00" and won ("M" > "2"),
    # so the 2026 policy was dropped as the older one
    t = build(_family(("policy-2025", "March 2025"), ("policy-2026", "2026-07-01")), "refund?", Config(budget=500))
    assert _fates(t) == {"policy-2025": ("stale", "policy-2026"), "policy-2026": ("kept", None)}
    assert "refund-policy version March 2025 is older than 2026-07-01 (present as policy-2026)" == \
        t.decision("policy-2025").reason
    assert not [w for w in t.warnings if w.kind == "unparsed_date"]


def test_formats_mix_within_one_family():
    t = build(_family(("rfc", "Sat, 01 Mar 2025 10:00:00 +0000"), ("written", "15 September 2025"),
                      ("us", "July 1, 2026"), ("slash", "2025/12/31"), ("month", "2026-06")),
              "refund?", Config(budget=500))
    assert _fates(t) == {"rfc": ("stale", "us"), "written": ("stale", "us"), "us": ("kept", None),
                         "slash": ("stale", "us"), "month": ("stale", "us")}


def test_same_moment_in_two_formats_is_one_version():
    # the same day written twice is the same version: neither is stale (the best-ranked is the survivor of none)
    t = build(_family(("iso", "2025-03-01"), ("written", "1 March 2025"), ("old", "2024-12-31")),
              "refund?", Config(budget=500))
    assert _fates(t) == {"iso": ("kept", None), "written": ("kept", None), "old": ("stale", "iso")}


def test_time_zones_decide_which_is_newer():
    # 10:00 at +0000 is after 11:00 at +0200 (09:00 UTC)
    t = build(_family(("utc", "2025-03-01T10:00:00Z"), ("cest", "2025-03-01T11:00:00+02:00")),
              "refund?", Config(budget=500))
    assert _fates(t) == {"utc": ("kept", None), "cest": ("stale", "utc")}


def test_an_unreadable_date_is_neither_stale_nor_makes_others_stale():
    t = build(_family(("garbled", "next Tuesday-ish"), ("old", "2025-03-01"), ("new", "2026-07-01")),
              "refund?", Config(budget=500))
    assert _fates(t) == {"garbled": ("kept", None), "old": ("stale", "new"), "new": ("kept", None)}
    [w] = [w for w in t.warnings if w.kind == "unparsed_date"]
    assert w.ids == ("garbled",)
    assert "garbled ('next Tuesday-ish')" in w and "refund-policy" in w


def test_an_unreadable_date_alone_against_one_readable_makes_no_family():
    # before: "later" > "2026-07-01" as strings, so the 2026 version was stale
    t = build(_family(("new", "2026-07-01"), ("later", "later")), "refund?", Config(budget=500))
    assert _fates(t) == {"new": ("kept", None), "later": ("kept", None)}
    [w] = [w for w in t.warnings if w.kind == "unparsed_date"]
    assert list(w.ids) == ["later"]


def test_unparsed_dates_are_warned_even_with_prefer_newest_off_and_only_where_a_family_exists():
    cands = _family(("a", "someday"), ("b", "2025-01-01")) + _family(("alone", "whenever"), doc="faq")
    t = build(cands, "refund?", Config(budget=500, prefer_newest=False))
    [w] = [w for w in t.warnings if w.kind == "unparsed_date"]
    assert list(w.ids) == ["a"]     # "alone" is the only version of its document: nothing to compare it with
    assert t.fate_counts()["stale"] == 0


def test_a_document_with_only_unreadable_dates_keeps_every_version():
    t = build(_family(("x", "draft"), ("y", "final")), "refund?", Config(budget=500))
    assert _fates(t) == {"x": ("kept", None), "y": ("kept", None)}
    [w] = [w for w in t.warnings if w.kind == "unparsed_date"]
    assert list(w.ids) == ["x", "y"]


def test_explain_ignores_unreadable_dates():
    from ctxcore.analysis.explain import findings
    t = build(_family(("garbled", "n/a"), ("new", "2026-07-01")), "refund?", Config(budget=500))
    assert not [f for f in findings(t) if f.kind in ("stale_version_kept", "newest_version_dropped")]


def test_versions_with_huge_numbers_compare_without_converting_them():
    big = "9" * 6000
    assert _natural(f"v{big}") > _natural("v10") > _natural("v9") and _natural("v09") == _natural("v9")
    t = build([Candidate("v10", "limit ten", 0.9, doc_id="d", version="v10"),
               Candidate("vbig", "limit big", 0.5, doc_id="d", version=f"v1{big}")], "q", Config(budget=5000))
    assert _fates(t) == {"v10": ("stale", "vbig"), "vbig": ("kept", None)}
