"""#30 in a real browser, at a 1280x800 desktop and a 390x844 phone: nothing a reader looks at first is cut or
covered. One server, one chromium, one context per viewport, four views each (the Debugger on a sample, Compare,
Diagnose on a logged trace with a search, a saved case's link).

* a control's label, a select's shown option and a metric's label are never cut (scrollWidth > clientWidth);
* tables are drawn on a canvas: every ``fillText`` is recorded with where it lands on its canvas, so a line of
  prose (a reason, a why, a note: any string over 200 px) that runs past its column or past the table's visible
  edge is found; on the phone, every fate is drawn whole inside the table;
* a table's toolbar never covers the element above it;
* the prompt maps' axis title, legend and notes never overlap (the plotly SVG's own boxes);
* a case link shows the case's title and note.

Screenshots of each view go to screenshots/ (docs/ with CTXCORE_SCREENSHOTS=docs, see bench/screenshots.py).
"""

from __future__ import annotations

from pathlib import Path

import browserkit
import pytest

import ctxcore
import ctxui
from ctxui import casestore

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[1]
LOGGED = ROOT / "tests" / "fixtures" / "traces" / "phoenix_nested.json"
STALE = ROOT / "sample_data" / "04_stale_policy.json"
WAIT = browserkit.WAIT
VIEWPORTS = {"desktop": (1280, 800), "phone": (390, 844)}
PROSE_PX = 200          # a drawn string wider than this is prose (a reason, a why), never a number or an id

CUT = """() => [...document.querySelectorAll([
    '[data-testid="stMain"] [data-testid="stWidgetLabel"]', '[data-testid="stMain"] [data-testid="stMetricLabel"]',
    '[data-testid="stMain"] [data-baseweb="select"] [value]', '[data-testid="stMain"] [data-baseweb="tab"]'].join(','))]
  .filter(e => e.offsetParent && [e, ...e.querySelectorAll('*')].some(x => x.scrollWidth > x.clientWidth + 1))
  .map(e => e.innerText.trim())"""
COVERED = """() => [...document.querySelectorAll('[data-testid="stMain"] [data-testid="stElementToolbar"]')].flatMap(tb => {
    const box = tb.getBoundingClientRect();
    let above = tb.closest('.stElementContainer');
    do { above = above && above.previousElementSibling; } while (above && !above.getBoundingClientRect().height);
    if (!above || !box.height) return [];
    return above.getBoundingClientRect().bottom > box.top + 1 ? [(above.innerText || above.className).slice(0, 60)] : [];
  })"""
OVERLAPS = """() => [...document.querySelectorAll('.js-plotly-plot')].flatMap((p, i) => {
    const boxes = [...p.querySelectorAll('.xtitle, .legend, .annotation')].map(e => [e.getAttribute('class'),
        e.getBoundingClientRect()]).filter(([, r]) => r.width && r.height);
    const out = [];
    for (let a = 0; a < boxes.length; a++) for (let b = a + 1; b < boxes.length; b++) {
      const [n1, r1] = boxes[a], [n2, r2] = boxes[b];
      if (n1 === 'annotation' && n2 === 'annotation') continue;  // the budget labels are stacked by design
      if (r1.left < r2.right && r2.left < r1.right && r1.top < r2.bottom && r2.top < r1.bottom)
        out.push(`map ${i}: ${n1} over ${n2}`); }
    return out; })"""


def _open(context, url: str, ready: str):
    pg = browserkit.open_page(context, url, ready)
    pg.wait_for_timeout(800)  # plotly and the tables settle into the page's width
    browserkit.wait_idle(pg, WAIT)
    return pg


def _drawn(pg) -> list[tuple[str, float, float, float]]:
    """Every string the tables drew (text, width, right edge, canvas width; CSS px), each table scrolled through."""
    tables = pg.locator('[data-testid="stMain"] [data-testid="stDataFrame"]')
    for i in range(tables.count()):
        if not tables.nth(i).is_visible():
            continue  # in a closed expander or another tab
        tables.nth(i).scroll_into_view_if_needed()
        pg.wait_for_timeout(150)
    for _ in range(4):
        pg.evaluate(browserkit.SCROLL_TABLES)
        pg.wait_for_timeout(150)
    return [tuple(d) for d in pg.evaluate("window.__drawn")]


def _cut_prose(drawn) -> list[str]:
    """Prose drawn wider than its column, or past the visible edge of its table."""
    limit = ctxui.REASON_WIDTH - ctxui.tables.CELL_PAD_PX  # drawn this far in, a wider line passes the cell's edge
    return sorted({t[:70] for t, w, right, edge in drawn if w > PROSE_PX and (w > limit or right > edge + 1)})


def _cut_fates(drawn) -> list[str]:
    return sorted({t for t, w, right, edge in drawn if t in ctxcore.FATES and right > edge + 1})


def _problems(pg, name: str, *, phone: bool) -> dict:
    """What a reader would find cut or covered on this view (empty when nothing is)."""
    drawn = _drawn(pg)
    first = pg.locator('[data-testid="stMain"] [data-testid="stDataFrame"]').first
    if first.is_visible():
        first.hover()  # the toolbar shows on hover (on a phone, after a tap)
        pg.wait_for_timeout(300)
    found = {"labels cut": pg.evaluate(CUT), "toolbars over": pg.evaluate(COVERED),
             "map overlaps": pg.evaluate(OVERLAPS), "prose cut": [] if phone else _cut_prose(drawn),
             "fates cut": _cut_fates(drawn), "exceptions": pg.locator('[data-testid="stException"]').count()}
    pg.screenshot(path=str(browserkit.screenshot_path(f"layout-{name}.png")))
    return {k: v for k, v in found.items() if v}


@pytest.mark.timeout(900)
@pytest.mark.parametrize("viewport", list(VIEWPORTS))
def test_nothing_a_reader_looks_at_is_cut_or_covered(browser, server, viewport):
    from playwright.sync_api import expect

    phone = viewport == "phone"
    width, height = VIEWPORTS[viewport]
    context = browser.new_context(viewport={"width": width, "height": height})
    context.add_init_script(browserkit.DRAWN_HOOK)
    problems = {}
    try:
        pg = _open(context, f"{server}/?scenario=03_overflow", '[data-testid="stDataFrame"]')
        problems["debugger"] = _problems(pg, f"debugger-{viewport}", phone=phone)
        pg.close()

        pg = _open(context, f"{server}/compare?scenario=01_duplicates_crowd_out", ".js-plotly-plot")
        problems["compare"] = _problems(pg, f"compare-{viewport}", phone=phone)
        pg.close()

        pg = _open(context, f"{server}/diagnose", "h1")
        pg.locator('[data-testid="stFileUploader"] input[type="file"]').first.set_input_files(
            files=[{"name": LOGGED.name, "mimeType": "application/json", "buffer": LOGGED.read_bytes()}])
        expect(pg.locator('[data-testid="stCaptionContainer"]', has_text=f"Showing {LOGGED.name}")).to_be_visible()
        browserkit.wait_idle(pg, WAIT)
        pg.get_by_label("A phrase or number from the right answer").fill("refund")
        pg.get_by_label("A phrase or number from the right answer").press("Enter")
        pg.locator('[data-testid="stDataFrame"]').first.wait_for()
        browserkit.wait_idle(pg, WAIT)
        pg.wait_for_timeout(800)  # plotly and the tables settle into the page's width
        browserkit.wait_idle(pg, WAIT)
        problems["diagnose"] = _problems(pg, f"diagnose-{viewport}", phone=phone)
        pg.close()

        cid = casestore.save_case(STALE.read_bytes(), {
            "name": STALE.name, "sample": STALE.name, "settings": {}, "title": f"Approval limit ({viewport})",
            "note": "The customer was told the old 500 EUR limit.", "tag": "outdated_version_sent",
            "page": "debugger"})
        pg = _open(context, f"{server}/?case={cid}", '[data-testid="stDataFrame"]')
        expect(pg.get_by_text(f"Saved case “Approval limit ({viewport})”", exact=False)).to_be_visible()
        expect(pg.get_by_text("The customer was told the old 500 EUR limit.")).to_be_visible()
        expect(pg.get_by_role("link", name="All saved cases")).to_be_visible()
        problems["case"] = _problems(pg, f"case-{viewport}", phone=phone)
        pg.close()
    finally:
        context.close()
    assert {k: v for k, v in problems.items() if v} == {}
