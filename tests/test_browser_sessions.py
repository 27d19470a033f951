"""Two browser sessions on one server (issue #19): while one uploads a regex bomb, the other still renders a
settings change within twice its normal time (its time while the other session uploads an ordinary file of
the same size). Streamlit runs every session as a thread of one process, so a scan that took quadratic time
on one chunk would hold up every other user.

Also, on the same page: an e-mail-like file name ending in "-@…" is shown as text, not as a mailto link.
Skipped (with the reason printed) when chromium is not installed, except under CI=true, as tests/test_browser.py.
Screenshots go to pytest's temporary directory, never into docs/."""

from __future__ import annotations

import json
import statistics
import time

import pytest

from test_browser import WAIT, caption, upload, wait_metrics

pytestmark = pytest.mark.browser

# Sized so that the old quadratic patterns would hold the server for many seconds (measured on the patterns of
# 8598153^: the fence and markup scans of "<" + 20,000 spaces 50 s; the image scan of 30,000 "![" about 9 s),
# while the work any linear scan must do (parse, count, draw 20-60 KB of text) stays small beside a change.
BOMBS = {
    "fence-bomb.json": "<" + " " * 20_000,         # made the old fence and markup patterns backtrack
    "image-bomb.json": "![" * 30_000,              # made the old markdown-image pattern backtrack
}
# An ordinary upload of the same size: its cost to the other session (two browsers and the server share two
# cores, and the uploading page draws its whole result) is the normal time a bomb is held to.
ORDINARY = {"ordinary.json": "word " * 4_000}
TIMES = 2.0  # the other session's change may take at most this many times its normal time
# Tries per bomb; the best counts. Both browsers and the server share this machine's cores, and other work on
# it can slow any one change down; a server held up by a scan (as the old quadratic patterns did, for minutes
# at this size) is slow on every try.
ATTEMPTS = 5


def _bomb_file(chunk: str) -> bytes:
    return json.dumps({"query": "what does the policy say?", "candidates": [
        {"id": "bomb", "text": chunk, "score": 0.9},
        {"id": "policy", "text": "Refunds above 500 EUR need manager approval.", "score": 0.8}]}).encode()


def _session(browser, server, link: str = "/", shows: str = "docs budget"):  # noqa: F811
    context = browser.new_context(viewport={"width": 1440, "height": 1000})
    pg = context.new_page()
    pg.set_default_timeout(WAIT)
    pg.goto(server + link)
    wait_metrics(pg)
    caption(pg, shows)
    return context, pg


START = 300  # the observer opens by a link with this direct docs budget (a link's settings apply at once)
OBSERVER = f"/?scenario=01_duplicates_crowd_out&budget={START}&order=sandwich"


class Budget:
    """The observer's settings change: a new direct docs budget, timed from Enter to the page showing it."""

    def __init__(self, pg):
        self.pg, self.value = pg, START
        self.box = pg.locator('[data-testid="stNumberInput"]', has_text="Docs budget (tokens)").locator("input")

    def change(self, before=None) -> float:
        self.value += 7
        self.box.fill(str(self.value))
        if before is not None:
            before()
        start = time.perf_counter()
        self.box.press("Enter")
        caption(self.pg, f"docs budget {self.value} (direct)")
        return time.perf_counter() - start


def test_a_regex_bomb_in_one_session_does_not_hold_up_another(browser, server, tmp_path):  # noqa: F811
    from playwright.sync_api import expect

    attacker_ctx, attacker = _session(browser, server)
    observer_ctx, observer = _session(browser, server, OBSERVER, f"docs budget {START} (direct)")
    try:
        budget = Budget(observer)
        budget.change()  # the first change also draws the direct-budget controls: not counted
        idle = statistics.median(budget.change() for _ in range(5))
        timings: dict[str, list[float]] = {}
        for name, chunk in {**ORDINARY, **BOMBS}.items():
            for attempt in range(ATTEMPTS):  # each a new file (one character differs): no cache has it
                data = _bomb_file(chunk + "x" * attempt)
                started = {}

                def attack():
                    upload(attacker, f"{attempt}-{name}", data)
                    started["at"] = time.perf_counter()

                timings.setdefault(name, []).append(budget.change(before=attack))
                caption(attacker, f"{attempt}-{name} · 2 candidates")
                timings.setdefault(name + " (attacker's page)", []).append(time.perf_counter() - started["at"])
                assert attacker.locator('[data-testid="stException"]').count() == 0
                assert attacker.locator('[data-testid="stCode"]').filter(has_text="Refunds above 500 EUR").count()
        normal = statistics.median(timings["ordinary.json"])
        print(f"\nobserver's settings change: idle {idle * 1000:.0f} ms (median of 5), while the other session "
              f"uploads an ordinary file {normal * 1000:.0f} ms (median of {ATTEMPTS}); " + "; ".join(
            f"{k} {', '.join(f'{v * 1000:.0f}' for v in vs)} ms" for k, vs in timings.items()))
        for name in BOMBS:
            assert min(timings[name]) <= TIMES * normal, (name, timings[name], normal)

        # an e-mail-like name ending in "-@": shown in the error line as text, not as a mailto link
        observer.get_by_role("button", name="Reset to defaults").click()
        caption(observer, "(from the split)")
        upload(observer, "first-@example.com.json", b"{not json")
        error = observer.locator('[data-testid="stAlertContentError"]').first
        expect(error).to_be_visible(timeout=WAIT)
        assert "first-@example.com.json" in error.inner_text().replace("\u2060", "")
        assert observer.locator('a[href^="mailto:"]').count() == 0
        assert observer.locator('[data-testid="stAlertContentError"] a').count() == 0
    finally:
        for who, pg in (("attacker", attacker), ("observer", observer)):
            pg.screenshot(path=str(tmp_path / f"two_sessions_{who}.png"))
        print(f"screenshots in {tmp_path}")
        attacker_ctx.close()
        observer_ctx.close()
