"""The real app in a real browser: start ``streamlit run app.py`` and read the page.

Shared by every tests/test_browser_*.py and the benches (bench/browser.py, bench/first_paint.py), so tests and
benchmarks drive the same server the same way. The pytest fixtures (``browser``, ``server``, ``cases_dir``) are
registered for every test by tests/conftest.py; the benches use ``running_app`` alone.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
# without the networking flags chromium keeps calling home, which this machine's closed network refuses
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run"]

WAIT = 60_000  # ms: every wait on a page, and every expect (a busy machine's rerun)

# Tables are drawn on a canvas: this init script records every fillText as [text, width, right edge, canvas width]
# (CSS px), so a test can read what a table shows and whether it fits (tests/test_browser_pages.py, _layout.py).
DRAWN_HOOK = """(() => { window.__drawn = []; const f = CanvasRenderingContext2D.prototype.fillText;
  CanvasRenderingContext2D.prototype.fillText = function (t, x, y, ...rest) {
    try { const m = this.getTransform(), w = this.measureText(String(t)).width;
          window.__drawn.push([String(t), w, (m.a * (x + w) + m.e) / m.a, this.canvas.width / m.a]); } catch (e) {}
    return f.call(this, t, x, y, ...rest); }; })()"""
SCROLL_TABLES = """() => { for (const s of document.querySelectorAll('.dvn-scroller')) { s.scrollTop += 300; } }"""

METRICS_JS = """() => Object.fromEntries([...document.querySelectorAll('[data-testid="stMetric"]')].map(m => [
    m.querySelector('[data-testid="stMetricLabel"]').innerText.trim(),
    m.querySelector('[data-testid="stMetricValue"]').innerText.trim()]))"""


SCREENSHOTS_ENV = "CTXCORE_SCREENSHOTS"


def screenshot_path(name: str) -> Path:
    """Where a screenshot goes: the ignored ``screenshots/`` folder, so a test run never rewrites
    tracked files; the tracked ``docs/`` images only when ``CTXCORE_SCREENSHOTS=docs`` asks for it."""
    folder = ROOT / ("docs" if os.environ.get(SCREENSHOTS_ENV, "").strip().lower() == "docs" else "screenshots")
    folder.mkdir(exist_ok=True)
    return folder / name


class AppDidNotStart(RuntimeError):
    pass


@contextlib.contextmanager
def running_app(script: str = "app.py", cwd=None):
    """``streamlit run SCRIPT`` (the app by default) on a free port; yields its base URL. Raises AppDidNotStart."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = tempfile.TemporaryFile(mode="w+")
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", script, "--server.port", str(port),
         "--server.address", "127.0.0.1", "--server.headless", "true", "--server.fileWatcherType", "none",
         "--browser.gatherUsageStats", "false"],
        cwd=cwd or ROOT, stdout=log, stderr=subprocess.STDOUT, text=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 90
    try:
        while True:
            if proc.poll() is not None:
                log.seek(0)
                raise AppDidNotStart(f"streamlit exited early: {log.read()[-2000:]}")
            try:
                with urllib.request.urlopen(url + "/_stcore/health", timeout=2) as r:
                    if r.read().strip() == b"ok":
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise AppDidNotStart("streamlit did not answer on /_stcore/health within 90 s")
            time.sleep(0.3)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def wait_idle(pg, timeout: int) -> None:
    """Wait until Streamlit reports no script run in progress, shows no stale element, and the Debugger's
    first paint has been followed by its full run.

    The status widget says "Running" only some time into a run; until the run is over, the elements it has
    not redrawn yet are still there, marked data-stale. Call it after a sign that the run has started. On a
    session's first visit the Debugger's first run ends after the headline with a "Drawing the prompt map…"
    caption, and the full run starts a frame or two later (``ctxui.firstpaint``): between
    the two the page looks idle, so the caption's presence counts as a run in progress."""
    pg.wait_for_function(
        """() => (!document.querySelector('[data-testid="stStatusWidget"]')
                  || !document.querySelector('[data-testid="stStatusWidget"]').innerText.includes('Running'))
                 && !document.querySelector('[data-stale="true"]')
                 && ![...document.querySelectorAll('[data-testid="stCaptionContainer"]')].some(
                        c => c.innerText.startsWith('Drawing the prompt map'))""",
        timeout=timeout)


def metrics(pg) -> dict[str, str]:
    """Every st.metric on the page: label -> shown value."""
    return pg.evaluate(METRICS_JS)


def open_page(context, url: str, ready: str = '[data-testid="stMetric"]'):
    """A new page of ``context`` at ``url``, once ``ready`` shows and the app's runs are over."""
    pg = context.new_page()
    pg.set_default_timeout(WAIT)
    pg.goto(url)
    pg.locator(ready).first.wait_for()
    wait_idle(pg, WAIT)
    return pg


# --------------------------------------------------------------------------- pytest fixtures (tests/conftest.py)

def unavailable(reason: str):
    """Skip a browser test for ``reason`` (printed), or fail it under CI=true, where the browser must be there."""
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"browser test cannot run under CI: {reason}")
    print(f"\nskipping browser tests: {reason}")
    pytest.skip(reason)


@contextlib.contextmanager
def app_or_fail(script: str = "app.py", cwd=None):
    """``running_app`` for a test: a server that does not start fails the test, with the end of its log."""
    try:
        with running_app(script, cwd) as url:
            yield url
    except AppDidNotStart as err:
        pytest.fail(str(err))


@pytest.fixture(scope="module")
def cases_dir(tmp_path_factory):
    """The saved cases of the module's server: a folder of its own, never the repository's."""
    return tmp_path_factory.mktemp("cases")


@pytest.fixture(scope="module")
def server(cases_dir):
    """``streamlit run app.py`` for the module, with its own CTXCORE_DATA_DIR; its base URL."""
    name = "CTXCORE_DATA_DIR"  # ctxui.casestore.DATA_DIR_ENV, read by the server when it starts
    old = os.environ.get(name)
    os.environ[name] = str(cases_dir)
    try:
        with app_or_fail() as url:
            yield url
    finally:
        if old is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = old


@pytest.fixture(scope="module")
def browser():
    """Debian's chromium through Playwright, one for the module; every expect waits WAIT."""
    if not os.path.exists(CHROMIUM):
        unavailable(f"{CHROMIUM} is not installed (apt-get install -y chromium)")
    try:
        from playwright.sync_api import expect, sync_playwright
    except ImportError:
        unavailable("the playwright package is not installed")
    expect.set_options(timeout=WAIT)
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()
