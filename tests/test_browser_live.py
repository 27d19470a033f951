"""The Live page in a real browser (issue #32): the app started with the OTLP endpoint beside it
(``CTXCORE_OTLP_PORT``, what ``ctxcore app --otlp`` sets), a LangChain pipeline traced with the real SDK exporter,
and the run on the page after a refresh, with its diagnosis."""

from __future__ import annotations

import re
import socket

import browserkit
import pytest

import live_pipeline as lp

pytestmark = pytest.mark.browser
WAIT = browserkit.WAIT


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def app_with_endpoint(tmp_path, monkeypatch):
    port = _free_port()
    monkeypatch.setenv("CTXCORE_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("CTXCORE_OTLP_PORT", str(port))
    with browserkit.app_or_fail() as url:
        yield url, port


def test_a_run_sent_live_appears_on_the_live_page_with_its_diagnosis(browser, app_with_endpoint):
    from playwright.sync_api import expect

    url, port = app_with_endpoint
    pg = browser.new_page(viewport={"width": 1400, "height": 1000})
    try:
        pg.goto(url, timeout=WAIT)          # the entry point runs once (out of pages-directory mode)
        pg.get_by_text("Live runs").first.wait_for(timeout=WAIT)
        pg.get_by_role("link", name="Live runs").click()
        # the page keeps a URL from turning into a link (a word joiner after "http")
        expect(pg.get_by_text(re.compile(rf"^Receiving at http\W*://127\.0\.0\.1:{port}/v1/traces$"))).to_be_visible()
        expect(pg.get_by_text("No run received yet.")).to_be_visible()
        assert lp.send(f"http://127.0.0.1:{port}/v1/traces", "protobuf") == lp.ANSWER
        pg.get_by_role("button", name="Refresh", exact=True).click()
        expect(pg.get_by_text(f"Query: {lp.QUERY}")).to_be_visible()
        browserkit.wait_idle(pg, WAIT)
        # an element kind the page has not drawn before waits for its script: idle is not yet drawn
        expect(pg.locator('[data-testid="stMetric"]', has_text="Passages sent")).to_be_visible()
        shown = browserkit.metrics(pg)
        assert [shown.get(k) for k in ("Verdict", "Documents", "Passages sent")] == ["not_sent", "3", "2"], (shown, pg.url)
        expect(pg.get_by_text(f"Answer: {lp.ANSWER}")).to_be_visible()
    finally:
        pg.close()
