"""The Debugger's first screen in a real browser (issue #33): a session's first run sends the headline alone.

At the first frame that shows a metric, the page holds the title, the scenario and its headline numbers, and
none of the controls (the sidebar's settings, Open from…, the pickers, the query box): each kind of element is
a script the browser fetches and runs before it draws, and sent first they held the headline back. The full run
that follows shows the same numbers, with every control, and the headline where it was painted (empty space
held the controls' place). ``bench/first_paint.py`` measures the time; this test holds what is shown.
"""

from __future__ import annotations

import browserkit
import pytest

import ctxcore

pytestmark = pytest.mark.browser

WAIT = browserkit.WAIT
# the page at the first animation frame in which a metric's value is visible
AT_PAINT = """() => new Promise(done => { const look = () => {
    const m = document.querySelector('[data-testid="stMetric"] [data-testid="stMetricValue"]');
    if (!(m && m.offsetParent !== null && m.innerText.trim())) { requestAnimationFrame(look); return; }
    const q = s => document.querySelectorAll(s).length;
    done({top: Math.round(m.closest('[data-testid="stMetric"]').getBoundingClientRect().top),
          metrics: Object.fromEntries([...document.querySelectorAll('[data-testid="stMetric"]')].map(e => [
            e.querySelector('[data-testid="stMetricLabel"]').innerText.trim(),
            e.querySelector('[data-testid="stMetricValue"]').innerText.trim()])),
          sidebar: q('[data-testid="stSidebarUserContent"] [data-testid="stElementContainer"]'),
          expanders: q('[data-testid="stMain"] [data-testid="stExpander"]'),
          widgets: q('[data-testid="stMain"] [data-testid="stWidgetLabel"]')
                   + q('[data-testid="stMain"] [data-testid="stFileUploader"]'),
          pending: [...document.querySelectorAll('[data-testid="stCaptionContainer"]')].some(
            c => c.innerText.startsWith('Drawing the prompt map'))});
  }; look(); })"""
TOP = """() => Math.round(document.querySelector('[data-testid="stMetric"]').getBoundingClientRect().top)"""


@pytest.mark.parametrize("link, sample, budget", [("/", "01_duplicates_crowd_out", None),
                                                  ("/?scenario=03_overflow&budget=300", "03_overflow", "300")])
def test_the_first_paint_is_the_headline_alone_and_the_full_run_keeps_it(browser, server, link, sample, budget):
    from playwright.sync_api import expect

    context = browser.new_context(viewport={"width": 1440, "height": 1000})
    try:
        pg = context.new_page()
        pg.set_default_timeout(WAIT)
        pg.goto(server + link, wait_until="commit")
        painted = pg.evaluate(AT_PAINT)
        assert painted["pending"], painted  # the headline run: the rest is still to come
        assert (painted["sidebar"], painted["expanders"], painted["widgets"]) == (0, 0, 0), painted

        pg.locator(".js-plotly-plot").first.wait_for()
        browserkit.wait_idle(pg, WAIT)
        assert browserkit.metrics(pg) == painted["metrics"]
        assert pg.evaluate(TOP) == painted["top"]  # at this width the controls fill the space held for them
        for label in ("Sample scenario", "Query (prefilled from the file; edit to rebuild)", "Docs budget (tokens)"):
            expect(pg.get_by_text(label, exact=True).first).to_be_visible()
        expect(pg.get_by_text("Open from…")).to_be_visible()
        expect(pg.get_by_text("Share this view")).to_be_visible()
        loaded = ctxcore.load(browserkit.ROOT / "sample_data" / f"{sample}.json")
        assert painted["metrics"]["Candidates"] == str(len(loaded.candidates))
        if budget:  # the link's settings are in the headline's numbers already
            assert painted["metrics"]["Evidence / budget"].endswith(f"/ {budget}"), painted
    finally:
        context.close()
