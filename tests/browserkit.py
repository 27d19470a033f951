"""The real app in a real browser: start ``streamlit run app.py`` and read the page.

Shared by tests/test_browser.py and bench/browser.py, so the test and the benchmark drive the
same server the same way.
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

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
# without the networking flags chromium keeps calling home, which this machine's closed network refuses
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run"]

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
    caption, and the full run starts a frame or two later (``ctxui.summary.paint_headline_first``): between
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
