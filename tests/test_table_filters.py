"""The filters as whole records: which version of a document is newest (natural version order), the stale
Decisions, the unparsed_date and versions_disagree warnings word for word, permissions and the score threshold."""

import time
from datetime import datetime

import pytest

from conftest import warnings_of

from ctxcore import Candidate, Config, Decision, build

from ctxcore.stages import filters


def _stale(old_id, doc, old, new, new_id):
    return Decision(old_id, "stale", "stale", f"{doc} version {old} is older than {new} (present as {new_id})",
                    superseded_by=new_id)


VERSION_ORDER = {
    "numbers by value": ("v2", "v10"),
    "each dotted part by value": ("1.9", "1.10"),
    "leading zeros do not count": ("v007", "v10"),
    "words alphabetically": ("alpha", "beta"),
    "words ignore case": ("Alpha", "beta"),
    "a number before a word in the same place": ("3.1", "3.x"),
    # "_" sorts before the lower-case letters ("_" is 0x5f, "d" 0x64; upper-case letters come before "_")
    "words compare lower-cased": ("release_candidate", "Released"),
}


@pytest.mark.parametrize("old, new", VERSION_ORDER.values(), ids=VERSION_ORDER.keys())
def test_the_older_version_is_stale_and_names_the_newest(old, new):
    # the older version is given first and scores higher, so input order and rank do not decide
    cands = [Candidate("p-old", "Refunds take five days.", 0.9, doc_id="policy", version=old),
             Candidate("p-new", "Refunds take ten days.", 0.5, doc_id="policy", version=new)]
    t = build(cands, "q", Config(budget=500, near_dup=None))
    assert t.decision("p-old") == _stale("p-old", "policy", old, new, "p-new")
    assert t.decision("p-new").fate == "kept"


def test_versions_equal_but_for_case_are_one_version():
    cands = [Candidate("p-1", "Refunds take five days.", 0.9, doc_id="policy", version="Beta"),
             Candidate("p-2", "Refunds take ten days.", 0.5, doc_id="policy", version="beta")]
    t = build(cands, "q", Config(budget=500, near_dup=None))
    assert [d.fate for d in t.decisions] == ["kept", "kept"]


FORTY = "sometime after the spring review meeting"   # 40 characters: shown whole
FORTY_ONE = FORTY + "s"                               # 41: cut to the first 40, then "…"


def test_an_unreadable_date_is_named_and_shortened_in_the_warning():
    cands = [Candidate("a-new", "Text one.", 0.9, doc_id="doc-a", version="2"),
             Candidate("a-bad", "Text two.", 0.8, doc_id="doc-a", date=FORTY),
             Candidate("b-new", "Text three.", 0.7, doc_id="doc-b", version="2"),
             Candidate("b-bad", "Text four.", 0.6, doc_id="doc-b", date=FORTY_ONE)]
    t = build(cands, "q", Config(budget=500, near_dup=None))
    tail = "could not be read, so it was not compared with the other versions of {}: neither stale nor making " \
           "another stale"
    assert warnings_of(t, "unparsed_date") == [
        (f"the date of a-bad ('{FORTY}') " + tail.format("doc-a"), ("a-bad",)),
        ("the date of b-bad ('sometime after the spring review meeting…') " + tail.format("doc-b"), ("b-bad",))]
    assert [d.fate for d in t.decisions] == ["kept"] * 4


def test_many_unreadable_dates_are_listed_five_then_counted():
    cands = [Candidate("ok", "Text.", 0.9, doc_id="doc", version="1")] + [
        Candidate(f"bad{i}", f"Text {i}.", 0.5, doc_id="doc", date=f"week {i}") for i in range(1, 8)]
    t = build(cands, "q", Config(budget=500, near_dup=None))
    assert warnings_of(t, "unparsed_date") == [(
        "the date of bad1 ('week 1'), bad2 ('week 2'), bad3 ('week 3'), bad4 ('week 4'), bad5 ('week 5') and 2 "
        "more could not be read, so they were not compared with the other versions of doc: neither stale nor "
        "making another stale", tuple(f"bad{i}" for i in range(1, 8)))]


# 7 amounts in the older version, 6 in the newer: listed by their number, at most 6, then "and N more"
OLDER = ("Refunds take 10 days, 5 days for members, 30 days abroad, 2 weeks in December, 3 months for gifts, "
         "1 year for repairs and 20 percent of the fee.")
NEWER = "Refunds take 14 days, 7 days for members, 60 days abroad, 4 weeks in December, 6 months for gifts " \
        "and 2 years for repairs."


@pytest.mark.parametrize("prefer_newest", [True, False])
def test_disagreeing_versions_list_their_amounts_by_number(prefer_newest):
    cands = [Candidate("p-1", OLDER, 0.9, doc_id="policy", version="1"),
             Candidate("p-2", NEWER, 0.8, doc_id="policy", version="2")]
    t = build(cands, "q", Config(budget=500, near_dup=None, prefer_newest=prefer_newest))
    assert warnings_of(t, "versions_disagree") == [(
        "versions of policy disagree: older (1) says 1 year, 2 weeks, 3 months, 5 days, 10 days, 20 percent and 1 "
        "more; newest (2) says 2 years, 4 weeks, 6 months, 7 days, 14 days, 60 days", ("p-1", "p-2"))]
    if prefer_newest:
        assert t.decision("p-1") == _stale("p-1", "policy", "1", "2", "p-2")
    else:
        assert t.decision("p-1").fate == "kept"


def test_permissions_name_the_caller_and_who_may_read():
    cands = [Candidate("hr", "Salaries.", 0.9, permissions=("hr", "finance")),
             Candidate("none", "Nobody.", 0.8, permissions=()),
             Candidate("pub", "Public.", 0.7), Candidate("mine", "Mine.", 0.6, permissions=("sales",))]
    t = build(cands, "q", Config(budget=500, caller="sales"))
    assert [t.decision("hr"), t.decision("none")] == [
        Decision("hr", "not_permitted", "permissions", "caller 'sales' is not among the permitted hr, finance"),
        Decision("none", "not_permitted", "permissions", "caller 'sales' is not among the permitted (none)")]
    assert [t.decision(i).fate for i in ("pub", "mine")] == ["kept", "kept"]


THRESHOLD = {
    "scored under the floor": (
        {"min_score": 0.5}, {"low": "score 0.3 is below the minimum 0.5"},
        [("1 unscored candidate was not checked against min_score 0.5: they passed (drop_unscored drops them)",
          "unscored_unchecked", ("u",))]),
    "unscored dropped too": (
        {"min_score": 0.5, "drop_unscored": True},
        {"low": "score 0.3 is below the minimum 0.5",
         "u": "unscored: it cannot be checked against the minimum 0.5, and drop_unscored drops it"}, []),
    "a score equal to the floor passes": ({"min_score": 0.3}, {}, [
        ("1 unscored candidate was not checked against min_score 0.3: they passed (drop_unscored drops them)",
         "unscored_unchecked", ("u",))]),
}


@pytest.mark.parametrize("cfg, dropped, notes", THRESHOLD.values(), ids=THRESHOLD.keys())
def test_threshold_records(cfg, dropped, notes):
    cands = [Candidate("high", "Refunds take five days.", 0.9), Candidate("low", "Shipping is free.", 0.3),
             Candidate("u", "Returns need a receipt.")]
    t = build(cands, "q", Config(budget=500, **cfg))
    assert {d.id: d for d in t.decisions if d.fate == "below_threshold"} == {
        i: Decision(i, "below_threshold", "threshold", r) for i, r in dropped.items()}
    assert [(str(w), w.kind, w.ids) for w in t.warnings
            if w.kind in ("unscored_unchecked", "min_score_unused")] == notes


def test_threshold_unused_when_nothing_has_a_score():
    t = build([Candidate("a", "One."), Candidate("b", "Two.")], "q", Config(budget=500, min_score=0.25))
    assert [d.fate for d in t.decisions] == ["kept", "kept"]
    assert warnings_of(t, "min_score_unused") == [("min_score 0.25 not applied: no candidate has a score", ())]


AMOUNTS = [
    ("", []),
    ("5 days", ["5 days"]),                      # at the very start
    ("$1", ["$1"]), ("$1,000", ["$1,000"]),      # money that ends the text inside a run of digits
    ("$1$", ["$1"]),
    ("$1,", ["$1"]),                             # no word boundary after the last comma: the match gives it back
    ("$1,5days", ["$1,", "5days"]),              # $1, ends at the boundary before 5; 5days is read inside the run
    ("$1,5days or 3 weeks", ["$1,", "5days", "3 weeks"]),  # and the reading goes on after it
    ("EUR11.0,5 days", ["EUR11.0", "5 days"]),   # a money match ending in a decimal, then a run
    ("€ 0,5EUR,10d€", ["€ 0,", "5EUR"]),
    ("SKU 1,2,3,4 costs $1,000x or 5 days", ["$1,", "5 days"]),
    ("1,000 EUR and 10% in 3 weeks", ["1,000 EUR", "10%", "3 weeks"]),  # a % ends where it stands
    ("up to 10%", ["10%"]), ("fee: 15%.", ["15%"]),  # at the end of the text, and before a full stop
    ("pay 20 € or 30 £ now", ["20 €", "30 £"]),      # a symbol after the number, then a space
    ("10%x and 5 daysago", ["10%"]),                 # a unit in letters still ends at a word boundary
    ("12 percentile", []),
]


@pytest.mark.parametrize("text,expected", AMOUNTS)
def test_amount_matches_read_what_the_definition_reads(text, expected):
    assert filters.amount_matches(text) == expected == filters._AMOUNT.findall(text)


RFC = "Sat, 01 Mar 2025 10:00:00 +0000"


@pytest.mark.parametrize("text,expected", [
    (RFC + " (" + "c" * 30 + ")", datetime(2025, 3, 1, 10)),   # 64 characters: still read
    (RFC + " (" + "c" * 31 + ")", None),                       # 65: longer than any date this reads
    ("2024-01-01T10:00:00z", datetime(2024, 1, 1, 10)),        # a lower-case zone letter is UTC too
    ("2024-01-01T10:00:00Z", datetime(2024, 1, 1, 10)),
    ("2024-01-01T23:30:00-02:00", datetime(2024, 1, 2, 1, 30)),
    ("2025-03-01", datetime(2025, 3, 1)),
])
def test_dates_are_read_as_utc_whatever_the_machines_zone(text, expected, monkeypatch):
    # on a machine nine hours east of UTC: an aware time is converted to UTC, a naive one is taken as UTC already
    monkeypatch.setenv("TZ", "JST-9")
    time.tzset()
    try:
        assert filters._when(text) == expected
    finally:
        monkeypatch.undo()
        time.tzset()


@pytest.mark.parametrize("k, more", [(5, ""), (6, " and 1 more")])
def test_unreadable_dates_are_listed_five_at_most(k, more):
    cands = [Candidate("ok", "limit 500 EUR", 0.9, doc_id="p", date="2025-01-01")] + [
        Candidate(f"u{i}", f"text {i}", 0.5, doc_id="p", date=f"someday {i}") for i in range(k)]
    t = build(cands, "q", Config(budget=500))
    shown = ", ".join(f"u{i} ('someday {i}')" for i in range(5))
    assert [str(w) for w in t.warnings if w.kind == "unparsed_date"] == [
        f"the date of {shown}{more} could not be read, so they were not compared with the other versions of p: "
        "neither stale nor making another stale"]


@pytest.mark.parametrize("old, new", [
    ("Refunds above 500 EUR need approval.", "Refunds need approval."),   # only the older version names an amount
    ("Refunds need approval.", "Refunds above 800 EUR need approval."),   # only the newest does
])
def test_versions_disagree_only_when_both_name_amounts(old, new):
    t = build([Candidate("old", old, 0.9, doc_id="p", date="2024-01-01"),
               Candidate("new", new, 0.8, doc_id="p", date="2025-01-01")], "q", Config(budget=500))
    assert [w for w in t.warnings if w.kind == "versions_disagree"] == []


def test_unscored_candidates_passed_by_the_threshold_are_named_fifty_at_most():
    cands = [Candidate(f"c{i:02d}", f"text number {i}", None) for i in range(51)] + [Candidate("s", "scored", 0.5)]
    t = build(cands, "q", Config(budget=5000, near_dup=None, min_score=0.3))
    assert [(str(w), w.ids) for w in t.warnings if w.kind == "unscored_unchecked"] == [
        ("51 unscored candidates were not checked against min_score 0.3: they passed (drop_unscored drops them)",
         tuple(f"c{i:02d}" for i in range(50)))]


def test_versions_that_differ_only_in_a_percentage_disagree():
    # the fee is the only amount in each version, and it ends the sentence: 10% before, 15% now
    t = build([Candidate("old", "The restocking fee is 10%.", 0.9, doc_id="fees", version="1"),
               Candidate("new", "The restocking fee is 15%.", 0.8, doc_id="fees", version="2")], "q",
              Config(budget=500))
    assert warnings_of(t, "versions_disagree") == [(
        "versions of fees disagree: older (1) says 10%; newest (2) says 15%", ("old", "new"))]
    assert t.decision("old").fate == "stale"


def test_each_document_family_marks_its_own_older_versions_stale():
    # two documents, each present in two versions: both older chunks are stale, each superseded within its family
    t = build([Candidate("a1", "Refunds take ten days.", 0.9, doc_id="refunds", version="1"),
               Candidate("b1", "Shipping is free over fifty euros.", 0.8, doc_id="shipping", version="1"),
               Candidate("a2", "Refunds take five days.", 0.7, doc_id="refunds", version="2"),
               Candidate("b2", "Shipping is free over forty euros.", 0.6, doc_id="shipping", version="2")], "q",
              Config(budget=500, near_dup=None))
    assert t.decision("a1") == _stale("a1", "refunds", "1", "2", "a2")
    assert t.decision("b1") == _stale("b1", "shipping", "1", "2", "b2")
    assert [d.id for d in t.kept()] == ["a2", "b2"]


@pytest.mark.parametrize("a, b", [("", "refunds within five days"), ("refunds within five days", ""), ("", ""),
                                  ("12 34", "refunds within five days")])
def test_a_text_without_words_is_no_version_of_another(a, b):
    assert filters.alike(a, b) is False
    assert filters.alike("refunds within 5 days", "refunds within 7 days") is True


# --- rows written against the survivors of the twelfth run (issue #29) ---------------------------------------------

from datetime import date, timedelta  # noqa: E402


def _unplaced_versions(k):
    """k chunks of document p, each dated a day apart, with no section, chunk index or title, none alike."""
    tag = lambda i: chr(97 + i // 26) + chr(97 + i % 26)  # noqa: E731 - aa, ab, ...: letters, so no two texts share a word
    return [Candidate(f"c{i}", f"{tag(i)}alpha {tag(i)}beta {tag(i)}gamma", 0.5, doc_id="p",
                      date=(date(2024, 1, 1) + timedelta(days=i)).isoformat()) for i in range(k)]


@pytest.mark.parametrize("k, more, ids", [(5, "", 5), (6, " and 1 more", 6), (51, " and 46 more", 50)])
def test_unpaired_versions_are_listed_five_then_counted_and_named_fifty_at_most(k, more, ids):
    t = build(_unplaced_versions(k), "q", Config(budget=50000))
    shown = ", ".join(f"c{i} (2024-01-0{i + 1})" for i in range(5))
    assert [(str(w), w.ids) for w in t.warnings if w.kind == "ambiguous_versions"] == [(
        f"{shown}{more} of p have no section, chunk index or title to pair them with the other versions, and their "
        "texts differ: not compared as versions, none made stale", tuple(f"c{i}" for i in range(ids)))]


def _older(**where):
    t = build([Candidate("a", "Refunds take 5 days.", 0.9, date="2024-01-01", **where),
               Candidate("b", "Refunds take 7 days.", 0.8, date="2025-01-01", **where)], "q", Config(budget=500))
    return t.decision("a").reason


@pytest.mark.parametrize("where, name", [
    # one doc_id is shown as it is, version marker and all
    ({"doc_id": "refunds-v2", "section": "Refunds"}, "refunds-v2 (section Refunds)"),
    # a family placed by its title is named by its document alone
    ({"doc_id": "pol", "title": "Refund Policy"}, "pol"),
    ({"doc_id": "pol", "chunk_index": 4}, "pol"),
    ({"doc_id": "pol"}, "pol"),  # no place: the two texts are alike
])
def test_a_version_family_is_named_by_its_document_and_place(where, name):
    assert _older(**where) == f"{name} version 2024-01-01 is older than 2025-01-01 (present as b)"


def test_a_section_is_shown_as_the_first_version_wrote_it():
    """The versions' sections match casefolded ("Refunds  Policy", "refunds policy"): one family, named by the first."""
    t = build([Candidate("a", "Refunds take 5 days.", 0.9, doc_id="pol", date="2024-01-01", section="Refunds  Policy"),
               Candidate("b", "Refunds take 7 days.", 0.8, doc_id="pol", date="2025-01-01", section="refunds policy")],
              "q", Config(budget=500))
    assert t.decision("a").reason == "pol (section Refunds  Policy) version 2024-01-01 is older than 2025-01-01 " \
                                     "(present as b)"


@pytest.mark.parametrize("cid, place", [("kb#3#2", ("part", "2")), ("kb#7", ("part", "7")), ("kb#v2", None)])
def test_a_place_in_the_id_is_its_part_after_the_last_hash(cid, place):
    assert filters.passage_place(Candidate(cid, "x")) == place


def test_a_chunk_without_a_document_before_them_leaves_a_documents_unread_date_reported():
    t = build([Candidate("x", "unrelated", 0.95), Candidate("a", "Refunds take 5 days.", 0.9, doc_id="pol", date="someday"),
               Candidate("b", "Refunds take 7 days.", 0.8, doc_id="pol", date="2025-01-01")], "q", Config(budget=500))
    assert [str(w) for w in t.warnings if w.kind == "unparsed_date"] == [
        "the date of a ('someday') could not be read, so it was not compared with the other versions of pol: neither "
        "stale nor making another stale"]
