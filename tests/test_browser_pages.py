"""In a real browser: a saved case's permalink opens in another browser context, no table cell on any page shows
"None", and every reason in the fates and compare tables is drawn whole (wrapped inside its cell, never cut).

Tables are drawn on a canvas, so the page is read by recording every ``fillText`` call (text, width, column).
The server runs with its own CTXCORE_DATA_DIR (a temporary folder), so saving changes nothing in the repository.
"""

from __future__ import annotations

from pathlib import Path

import browserkit
import pytest

import ctxcore
import ctxui

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).resolve().parent / "fixtures"
SAMPLES = sorted((ROOT / "sample_data").glob("*.json"), key=lambda p: p.name)
WAIT = browserkit.WAIT


def _context(browser):
    context = browser.new_context(viewport={"width": 1440, "height": 1400})
    context.add_init_script(browserkit.DRAWN_HOOK)
    return context


def _drawn(pg) -> list[tuple[str, float]]:
    """Every string the page's canvases drew, after scrolling each table through all its rows."""
    pg.wait_for_timeout(600)
    for _ in range(6):
        pg.evaluate(browserkit.SCROLL_TABLES)
        pg.wait_for_timeout(150)
    return [(d[0], d[1]) for d in pg.evaluate("window.__drawn")]


def _reasons_whole(drawn, reasons) -> list[str]:
    """The reasons not drawn whole: neither as one string nor as consecutive wrapped lines; or a line wider
    than its column (so clipped)."""
    texts = [t for t, _ in drawn]
    widths = {t: w for t, w in drawn}
    limit = ctxui.REASON_WIDTH - 16  # the cell's padding
    missing = []
    for reason in reasons:
        if reason in texts:
            if widths[reason] > limit:
                missing.append(f"clipped: {reason}")
            continue
        first = reason.split()[0]
        found = False
        for i, t in enumerate(texts):
            if not reason.startswith(t) or not t.startswith(first):
                continue
            joined, j = t, i
            while len(joined) < len(reason) and j + 1 < len(texts):
                j += 1
                joined += " " + texts[j]
            if joined == reason and all(widths[x] <= limit for x in texts[i:j + 1]):
                found = True
                break
        if not found:
            missing.append(reason)
    return missing


def test_a_permalink_opens_the_uploaded_case_in_a_new_browser_context(browser, server):
    from playwright.sync_api import expect

    first = _context(browser)
    try:
        pg = browserkit.open_page(first, server + "/")
        pg.locator('[data-testid="stFileUploader"] input[type="file"]').set_input_files(
            files=[{"name": "seed.json", "mimeType": "application/json",
                    "buffer": (FIXTURES / "seed.json").read_bytes()}])
        expect(pg.locator('[data-testid="stCaptionContainer"]', has_text="seed.json · 7 candidates")).to_be_visible()
        browserkit.wait_idle(pg, WAIT)
        shown = browserkit.metrics(pg)
        pg.get_by_text("Save this case").first.click()
        pg.get_by_label("Title").fill("Seed refund case")
        pg.get_by_label("Title").press("Enter")
        browserkit.wait_idle(pg, WAIT)
        pg.get_by_role("button", name="Save this case").click()
        link = pg.locator('[data-testid="stMain"] [data-testid="stCode"] code', has_text="?case=").first
        link.wait_for()
        permalink = link.inner_text().strip()
        assert permalink.startswith(server) and "?case=" in permalink
    finally:
        first.close()

    second = _context(browser)  # another person: no cookies, no session, only the link
    try:
        pg = browserkit.open_page(second, permalink)
        expect(pg.locator('[data-testid="stCaptionContainer"]', has_text="seed.json · 7 candidates")).to_be_visible()
        expect(pg.get_by_text("Seed refund case", exact=False).first).to_be_visible()
        browserkit.wait_idle(pg, WAIT)
        assert browserkit.metrics(pg) == shown
        assert "case=" in pg.url
        assert pg.locator('[data-testid="stException"]').count() == 0
    finally:
        second.close()


PAGES = [("", '[data-testid="stMetric"]'), ("compare", '[data-testid="stMetric"]'),
         ("diagnose", "h1"), ("learn", '[data-testid="stMetric"]'), ("budget", '[data-testid="stMetric"]'),
         ("cases", "h1")]


@pytest.mark.parametrize("path,ready", PAGES, ids=[p or "debugger" for p, _ in PAGES])
def test_no_table_cell_shows_none_on_any_page(browser, server, path, ready):
    context = _context(browser)
    try:
        pg = browserkit.open_page(context, f"{server}/{path}", ready)
        if path in ("", "compare"):  # pages with a table from the start (the landing run draws it second)
            pg.locator('[data-testid="stDataFrame"]').first.wait_for()
            browserkit.wait_idle(pg, WAIT)
        drawn = _drawn(pg)
        assert [t for t, _ in drawn if t.strip() in ("None", "nan", "<NA>", "NaN")] == []
        cut = pg.evaluate("""() => [...document.querySelectorAll('[data-testid="stMetricValue"]')]
            .filter(v => [v, ...v.querySelectorAll('*')].some(e => e.scrollWidth > e.clientWidth + 1))
            .map(v => v.innerText)""")
        assert cut == []  # no headline number is cut off
        assert pg.locator('[data-testid="stException"]').count() == 0
    finally:
        context.close()


@pytest.mark.parametrize("fixture", ["not_sent_oi_nested.json", "dup_crowd_langfuse.json"])
def test_no_table_cell_shows_none_on_diagnose_for_a_logged_trace(browser, server, fixture):
    """A logged trace on Diagnose: candidates the logged prompt lacked have no place sent, candidates the replay
    drops have no replay position; those cells are blank, never "None" (sent passages, claims, logged vs
    replay)."""
    from playwright.sync_api import expect

    context = _context(browser)
    try:
        pg = browserkit.open_page(context, f"{server}/diagnose", "h1")
        pg.locator('[data-testid="stFileUploader"] input[type="file"]').set_input_files(
            files=[{"name": fixture, "mimeType": "application/json",
                    "buffer": (FIXTURES / "diagnose" / fixture).read_bytes()}])
        expect(pg.get_by_role("heading", name="Logged prompt versus replay")).to_be_visible()
        browserkit.wait_idle(pg, WAIT)
        tables = pg.locator('[data-testid="stDataFrame"]')
        assert tables.count() >= 2  # the sent passages and the logged prompt against the replay, at least
        for i in range(tables.count()):
            tables.nth(i).scroll_into_view_if_needed()
        drawn = _drawn(pg)
        assert any(t == "absent" for t, _ in drawn)  # a candidate the logged prompt did not have is listed
        assert [t for t, _ in drawn if t.strip() in ("None", "nan", "<NA>", "NaN")] == []
        assert pg.locator('[data-testid="stException"]').count() == 0
    finally:
        context.close()


def test_no_table_cell_shows_none_on_replay_for_the_sample_log(browser, server):
    """Replay a log: the sample log replayed under a tight direct docs budget (opened by link), which loses
    passages that logged answers cited; the likely regressions table has no "None" cell."""
    from playwright.sync_api import expect

    context = _context(browser)
    try:
        pg = browserkit.open_page(context, f"{server}/replay?budget=120", "h1")
        pg.get_by_role("button", name="Replay").click()
        expect(pg.get_by_role("heading", name="Likely regressions")).to_be_visible()
        browserkit.wait_idle(pg, WAIT)
        tables = pg.locator('[data-testid="stDataFrame"]')
        tables.first.wait_for()  # the likely regressions: under this budget, cited passages are lost
        browserkit.wait_idle(pg, WAIT)
        for i in range(tables.count()):
            tables.nth(i).scroll_into_view_if_needed()
        drawn = _drawn(pg)
        assert drawn  # the tables were drawn and read
        assert [t for t, _ in drawn if t.strip() in ("None", "nan", "<NA>", "NaN")] == []
        assert pg.locator('[data-testid="stException"]').count() == 0
    finally:
        context.close()


@pytest.mark.timeout(1200)
def test_every_reason_is_drawn_whole_and_no_cell_is_none(browser, server):
    """Every reason in the fates table is drawn whole (on one line, or wrapped over lines that all fit the
    row) and no cell says "None": the landing sample in its failure state, then each sample opened by its link
    (the file's own settings)."""
    from playwright.sync_api import expect

    context = _context(browser)
    try:
        problems = {}
        for sample in [None, *SAMPLES]:
            path = sample or SAMPLES[0]
            loaded = ctxcore.load(path)
            settings = ctxui.settings.opening_config(loaded) if sample is None else loaded.settings().to_dict()
            trace = loaded.build(ctxcore.Config.from_dict({**ctxcore.Config().to_dict(), **settings}))
            pg = browserkit.open_page(context, f"{server}/" + ("" if sample is None else f"?scenario={sample.stem}"))
            expect(pg.locator('[data-testid="stCaptionContainer"]', has_text=f"{path.name} · ")).to_be_visible()
            browserkit.wait_idle(pg, WAIT)
            pg.locator('[data-testid="stDataFrame"]').first.wait_for()  # (the landing run draws it second)
            browserkit.wait_idle(pg, WAIT)
            pg.locator('[data-testid="stDataFrame"]').first.scroll_into_view_if_needed()
            drawn = _drawn(pg)
            nones = [t for t, _ in drawn if t.strip() == "None"]
            missing = _reasons_whole(drawn, [d.reason for d in trace.decisions])
            if nones or missing:
                problems[path.name + ("" if sample else " (failure)")] = (nones, missing)
            pg.close()
        assert problems == {}
    finally:
        context.close()
