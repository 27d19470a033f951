"""In a real browser (issue #28, Apply on an uploaded trace): the Diagnose page's controls start from the policy
the logged pipeline appears to follow, Apply switches them to the proved fix, and the decisive passage is shown
before (in the prompt that was sent) and after (in the replay). The server and browser fixtures are tests/browserkit.py's."""

from __future__ import annotations

from pathlib import Path

import browserkit
import pytest


pytestmark = pytest.mark.browser

FIXTURES = Path(__file__).resolve().parent / "fixtures"
WAIT = browserkit.WAIT


def _diagnose(browser, server, path: Path):
    """A fresh session on the Diagnose page with ``path`` uploaded, once its root cause is shown."""
    from playwright.sync_api import expect

    context = browser.new_context(viewport={"width": 1440, "height": 1600})
    pg = context.new_page()
    pg.set_default_timeout(WAIT)
    pg.goto(server)
    pg.locator('[data-testid="stMetric"]').first.wait_for()
    browserkit.wait_idle(pg, WAIT)
    pg.locator('[data-testid="stSidebarNav"] a', has_text="Diagnose").click()
    expect(pg.locator("h1", has_text="Diagnose a wrong answer")).to_be_visible()
    browserkit.wait_idle(pg, WAIT)
    pg.locator('[data-testid="stFileUploader"] input[type="file"]').set_input_files(
        files=[{"name": path.name, "mimeType": "application/json", "buffer": path.read_bytes()}])
    return context, pg


def _value(pg, label: str) -> str:
    return pg.get_by_label(label, exact=True).first.input_value()


def _texts(pg) -> list[str]:
    return [t.strip() for t in pg.locator('[data-testid="stMain"] [data-testid="stText"]').all_inner_texts()]


def test_apply_on_an_uploaded_trace_moves_the_controls_from_the_policy_to_the_fix(browser, server):
    from playwright.sync_api import expect

    context, pg = _diagnose(browser, server, FIXTURES / "causes" / "threshold_oi_nested.json")
    try:
        main = pg.locator('[data-testid="stMain"]')
        expect(main.get_by_text("just under your pipeline's minimum relevance score of 0.50").first).to_be_visible()
        browserkit.wait_idle(pg, WAIT)
        # the controls are the pipeline's policy: a minimum score of 0.50 and 3 passages (ctxcore's defaults: none)
        assert _value(pg, "Drop candidates scoring below") == "0.500"
        assert _value(pg, "Max passages") == "3"
        assert "(not in the prompt that was sent)" not in _texts(pg)

        main.get_by_role("button", name="Apply").first.click()
        expect(main.get_by_text("Resolved in the replay.").first).to_be_visible()
        browserkit.wait_idle(pg, WAIT)
        assert _value(pg, "Drop candidates scoring below") == "0.470"
        assert _value(pg, "Max passages") == "4"
        metrics = browserkit.metrics(pg)
        assert metrics["Before: express-price in the prompt that was sent"] == "not sent"
        assert metrics["After: express-price in the replay"] == "[S2] · position 2 of 4"
        texts = _texts(pg)
        assert "(not in the prompt that was sent)" in texts
        assert "Express shipping costs 9.90 EUR and arrives the next working day when you order before 2 pm." in texts
        assert pg.locator('[data-testid="stException"]').count() == 0
    finally:
        context.close()


def test_apply_shows_the_passage_the_model_read_and_the_one_the_replay_sends(browser, server):
    from playwright.sync_api import expect

    context, pg = _diagnose(browser, server, FIXTURES / "diagnose" / "outdated_oi_flat.jsonl")
    try:
        main = pg.locator('[data-testid="stMain"]')
        expect(main.get_by_text("The answer used an older version of returns-policy").first).to_be_visible()
        browserkit.wait_idle(pg, WAIT)
        newest = pg.get_by_label("Prefer newest version (drop stale)", exact=True).first
        assert not newest.is_checked()  # the pipeline sent the outdated version: its policy keeps versions
        main.get_by_role("button", name="Apply").first.click()
        expect(main.get_by_text("Resolved in the replay.").first).to_be_visible()
        browserkit.wait_idle(pg, WAIT)
        assert newest.is_checked()
        texts = _texts(pg)
        assert "Return window: unused items can be returned within 30 days of delivery for a full refund." in texts
        assert ("Return window: from 1 March 2025, unused items can be returned within 14 days of delivery for a full "
                "refund; after that only store credit is offered.") in texts  # the newer version, in the replay
        assert pg.locator('[data-testid="stException"]').count() == 0
    finally:
        context.close()
