"""Retake the README's screenshots in docs/: ``python bench/screenshots.py`` (about a minute).

Starts ``streamlit run app.py`` on a free port (with a temporary CTXCORE_DATA_DIR, so the saved case it
shows is thrown away) and drives /usr/bin/chromium with Playwright, as the browser tests do. It sets
``CTXCORE_SCREENSHOTS=docs`` for itself, so the pictures go to the tracked docs/ folder; the test suite
never does (its screenshots go to the ignored screenshots/ folder).

    docs/screenshot.png   the Debugger on the first sample, in its failure state
    docs/learn.png        Learn, step 9
    docs/compare.png      Compare on the duplicates scenario, naive against recommended, one shared axis
    docs/diagnose.png     Diagnose on a Phoenix export
    docs/cases.png        Saved cases, with one case saved
    docs/phone.png        the Debugger's fates table on a 390x844 phone (fates whole, the toolbar clear of the filter)
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT)]

import browserkit  # noqa: E402

WAIT = 60_000


def _ready(pg, selector: str = '[data-testid="stMetric"]') -> None:
    pg.locator(selector).first.wait_for(timeout=WAIT)
    browserkit.wait_idle(pg, WAIT)
    pg.wait_for_timeout(1200)  # let plotly settle into the page's width


def _shot(pg, name: str) -> None:
    path = browserkit.screenshot_path(name)
    pg.screenshot(path=str(path))
    print(f"wrote {path.relative_to(ROOT)}")


def main() -> None:
    from playwright.sync_api import sync_playwright

    os.environ[browserkit.SCREENSHOTS_ENV] = "docs"
    with tempfile.TemporaryDirectory() as data:
        os.environ["CTXCORE_DATA_DIR"] = data
        with browserkit.running_app() as url, sync_playwright() as p:
            browser = p.chromium.launch(executable_path=browserkit.CHROMIUM, args=browserkit.ARGS)
            pg = browser.new_context(viewport={"width": 1440, "height": 1500}).new_page()
            pg.goto(url + "/")
            _ready(pg)
            _ready(pg, ".js-plotly-plot")  # the map and the fates table come after the headline's first paint
            _shot(pg, "screenshot.png")

            pg.goto(url + "/learn?step=9")
            _ready(pg)
            _shot(pg, "learn.png")

            pg.set_viewport_size({"width": 1440, "height": 2000})
            pg.goto(url + "/compare?scenario=01_duplicates_crowd_out")
            _ready(pg)
            _shot(pg, "compare.png")

            pg.set_viewport_size({"width": 1440, "height": 1800})
            pg.goto(url + "/diagnose")
            _ready(pg, "h1")
            trace = ROOT / "tests" / "fixtures" / "traces" / "phoenix_flat.jsonl"
            pg.locator('[data-testid="stFileUploader"] input[type="file"]').set_input_files(
                files=[{"name": trace.name, "mimeType": "application/json", "buffer": trace.read_bytes()}])
            pg.locator("h3", has_text="Logged prompt versus replay").wait_for(timeout=WAIT)
            _ready(pg, "h3")
            pg.get_by_text("Save this case").first.click()
            pg.get_by_label("Title").fill("Refund window answered wrong")
            pg.get_by_label("Title").press("Enter")
            browserkit.wait_idle(pg, WAIT)
            pg.get_by_role("button", name="Save this case").click()
            pg.locator('[data-testid="stMain"] [data-testid="stCode"] code', has_text="?case=").first.wait_for()
            link = pg.locator('[data-testid="stMain"] [data-testid="stCode"] code', has_text="?case=").first
            assert "/diagnose?case=" in link.inner_text(), link.inner_text()  # the Diagnose page's own link
            pg.locator("h1").first.scroll_into_view_if_needed()  # the page scrolls in its main block, not the window
            pg.wait_for_timeout(500)
            _shot(pg, "diagnose.png")

            pg.set_viewport_size({"width": 1440, "height": 1000})
            pg.goto(url + "/cases")
            _ready(pg, '[data-testid="stDataFrame"]')
            _shot(pg, "cases.png")

            phone = browser.new_context(viewport={"width": 390, "height": 844}).new_page()
            phone.goto(url + "/?scenario=03_overflow")
            _ready(phone, '[data-testid="stDataFrame"]')
            phone.locator('[data-testid="stDataFrame"]').first.scroll_into_view_if_needed()
            phone.wait_for_timeout(500)
            _shot(phone, "phone.png")
            browser.close()


if __name__ == "__main__":
    main()
