from ctxcore import Candidate, Config, build


def _policy():
    return [
        Candidate("old-1", "Refunds above 500 EUR need manager approval.", 0.9, doc_id="refund-policy",
                  date="2025-03-01"),
        Candidate("old-2", "Enterprise refunds above 500 EUR are approved by a manager.", 0.85,
                  doc_id="refund-policy", date="2025-09-15"),
        Candidate("new", "Enterprise refunds need manager approval only above 1,000 EUR.", 0.8,
                  doc_id="refund-policy", date="2026-07-01"),
        Candidate("other", "Shipping is free over 50 EUR.", 0.7, doc_id="shipping", date="2024-01-01"),
    ]


def test_older_versions_are_stale_and_name_the_newest():
    t = build(_policy(), "650 EUR?", Config(budget=500))
    for cid in ("old-1", "old-2"):
        d = t.decision(cid)
        assert (d.fate, d.stage, d.superseded_by) == ("stale", "stale", "new")
    assert t.decision("new").fate == "kept" and t.decision("other").fate == "kept"


def test_conflicting_versions_are_warned_about_even_when_stale_filter_is_off():
    t = build(_policy(), "650 EUR?", Config(budget=500, prefer_newest=False))
    assert t.fate_counts()["stale"] == 0
    assert ("versions of refund-policy disagree: older (2025-03-01, 2025-09-15) says 500 eur; newest (2026-07-01) "
            "says 1000 eur") in t.warnings


def test_versions_compare_naturally_when_there_is_no_date():
    t = build([Candidate("v9", "limit 9", 0.9, doc_id="d", version="v9"),
               Candidate("v10", "limit 10", 0.5, doc_id="d", version="v10")], "q", Config(budget=500))
    assert t.decision("v9").fate == "stale" and t.decision("v9").superseded_by == "v10"


def test_permissions_exclude_other_callers_only_when_a_caller_is_given():
    cands = [Candidate("hr", "salary bands", 0.9, permissions=("hr",)), Candidate("pub", "office hours", 0.5)]
    assert build(cands, "q", Config(budget=500)).fate_counts()["kept"] == 2
    t = build(cands, "q", Config(budget=500, caller="support"))
    assert t.decision("hr").fate == "not_permitted" and t.decision("pub").fate == "kept"


def test_threshold_drops_low_scores_and_abstains_when_nothing_clears():
    cands = [Candidate("a", "gift cards are not refundable", 0.3), Candidate("b", "unrelated", 0.1)]
    t = build(cands, "Do you refund gift cards bought in Japan?", Config(min_score=0.5))
    assert {d.fate for d in t.decisions} == {"below_threshold"}
    assert t.abstain is True
    assert "no passage cleared the filters" in t.prompt.text
    assert "I cannot answer this from the provided documents." in t.prompt.text
    assert t.decision("a").reason == "score 0.3 is below the minimum 0.5"


def test_unscored_candidates_rank_after_scored_and_are_not_thresholded():
    t = build([Candidate("u", "unscored text"), Candidate("s", "scored text", 0.2)], "q",
              Config(min_score=0.5, budget=500))
    assert t.decision("s").fate == "below_threshold" and t.decision("u").fate == "kept"
    assert any("have no score" in w for w in t.warnings)


def test_no_scores_at_all_means_input_order_is_the_rank():
    t = build([Candidate("first", "alpha text"), Candidate("second", "beta text")], "q",
              Config(budget=500, order="rank"))
    assert [d.id for d in t.kept()] == ["first", "second"]
    assert any("input order is the rank" in w for w in t.warnings)
