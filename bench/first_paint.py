"""Benchmark: the Debugger's first meaningful paint against a hello-world Streamlit app, in the same browser.

    python bench/first_paint.py            # 9 visits each, interleaved
    python bench/first_paint.py --reps 11

Starts two servers on free localhost ports: ``streamlit run app.py`` and a hello-world app (a title and one
st.metric, written to a temporary file), with the same flags. Visits alternate between the two (the order
flips every round), so a burst of load from other processes falls on both. Each visit is a new browser context (a new
session, no cache in the page), driven by Debian's /usr/bin/chromium through Playwright. First meaningful
paint is timed inside the page, from navigation start (``performance.timeOrigin``) to the first animation frame
in which an ``st.metric`` is visible: for the Debugger, the headline numbers of the first sample scenario.
The first visit to each server (Python importing the app's modules) is reported on its own; the table's
medians are over the visits after it. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path[:0] = [os.path.join(ROOT, "tests")]

import browserkit  # noqa: E402

HELLO = 'import streamlit as st\nst.title("Hello")\nst.metric("Hello", 1)\n'
PAINT_JS = """() => new Promise(done => { const look = () => {
    const m = document.querySelector('[data-testid="stMetric"] [data-testid="stMetricValue"]');
    if (m && m.offsetParent !== null && m.innerText.trim()) done(performance.now()); else requestAnimationFrame(look);
  }; look(); })"""


def visit(browser, url: str) -> float:
    context = browser.new_context(viewport={"width": 1440, "height": 1000})
    try:
        pg = context.new_page()
        pg.goto(url, wait_until="commit", timeout=120_000)
        return float(pg.evaluate(PAINT_JS))
    finally:
        context.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=9)
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    results = {}
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as p:
        hello = os.path.join(tmp, "hello.py")
        with open(hello, "w") as f:
            f.write(HELLO)
        browser = p.chromium.launch(executable_path=browserkit.CHROMIUM, args=browserkit.ARGS)
        apps = (("hello world", hello, tmp), ("Debugger (app.py)", "app.py", ROOT))
        with browserkit.running_app(apps[0][1], apps[0][2]) as hello_url, \
                browserkit.running_app(apps[1][1], apps[1][2]) as app_url:
            urls = {apps[0][0]: hello_url + "/", apps[1][0]: app_url + "/"}
            times: dict[str, list[float]] = {name: [] for name in urls}
            for rep in range(args.reps + 1):
                for name in (list(urls) if rep % 2 == 0 else list(urls)[::-1]):
                    times[name].append(visit(browser, urls[name]))
        results = {name: (t[0], t[1:]) for name, t in times.items()}
        browser.close()
    base = statistics.median(results["hello world"][1])
    print(f"First meaningful paint, ms from navigation start ({args.reps} visits after the first; chromium, "
          f"{os.cpu_count()} cores)\n")
    print("| app | first visit | median | min | max | × hello world |")
    print("|---|---|---|---|---|---|")
    for name, (first, rest) in results.items():
        med = statistics.median(rest)
        print(f"| {name} | {first:,.0f} | {med:,.0f} | {min(rest):,.0f} | {max(rest):,.0f} | {med / base:.2f}× |")


if __name__ == "__main__":
    main()
