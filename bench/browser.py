"""Benchmark: the app's control round trip in a real browser, for a small and a large input.

    python bench/browser.py                     # 10 and 10,000 candidates, 5 changes each (about a minute)
    python bench/browser.py --sizes 10 1000 10000 --reps 7

Writes two deterministic JSONL inputs from ``synth.candidates(n)``, starts ``streamlit run app.py`` on a
free port and drives Debian's /usr/bin/chromium with Playwright (the same setup as tests/test_browser.py).
For each size: open the debugger, reset the controls, upload the file, wait for the first build, switch on
"Direct docs budget", then change the docs budget ``--reps`` times. Each change is timed inside the page,
from the Enter keydown in the budget box to the first animation frame in which the "Kept" metric shows the
count ctxcore.build gives for that budget (and the "Evidence / budget" metric shows the new
budget, so a stale element cannot match). Every budget is new, so each change is a real rebuild (no
Streamlit cache hit), and consecutive budgets give different kept counts, so the change is visible.

Also reported, from Python: the wall time from the change until the script run has finished (the page is
idle again: table and charts included), and the time from upload to the first build's metrics.

Prints a table and merges the figures into bench/results.json under "browser_round_trip" (other keys
are kept). Not part of the test suite.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path[:0] = [ROOT, HERE, os.path.join(ROOT, "tests")]

import synth  # noqa: E402

import ctxcore  # noqa: E402
from ctxcore import Config  # noqa: E402

import browserkit  # noqa: E402
from browserkit import ARGS, CHROMIUM, METRICS_JS, running_app  # noqa: E402
WAIT = 180_000  # ms; a 10k-candidate first build renders a 10k-row table and two charts
LOWS = list(range(150, 2000, 50))        # budgets tried in turn, low and high interleaved, so that
HIGHS = list(range(2000, 20000, 100))    # consecutive changes give different kept counts


# --------------------------------------------------------------------------- inputs and expectations

def write_jsonl(n: int, directory: str) -> str:
    path = os.path.join(directory, f"bench_{n}.jsonl")
    with open(path, "w", encoding="utf-8") as fh:
        for c in synth.candidates(n):
            fh.write(json.dumps({"id": c.id, "text": c.text, "score": c.score, "doc_id": c.doc_id,
                                 "chunk_index": c.chunk_index, "title": c.title, "section": c.section,
                                 "date": c.date}) + "\n")
    return path


def expected(loaded, budget) -> tuple[int, str]:
    """(kept, "Evidence / budget" metric text) that the page must show for this budget."""
    trace = loaded.build(Config() if budget is None else Config(budget=budget))
    return trace.fate_counts().get("kept", 0), f"{ctxcore.evidence_cost(trace):,} / {trace.budget.docs:,}"


def plan(loaded, start: int, reps: int) -> list[tuple[int, int, str]]:
    """``reps`` new budgets (never ``start``), each giving a kept count different from the one before."""
    order = [b for pair in zip(LOWS, HIGHS) for b in pair]
    prev = expected(loaded, start)[0]
    out, used = [], {start}
    while len(out) < reps:
        for b in order:
            if b in used:
                continue
            kept, evidence = expected(loaded, b)
            if kept != prev:
                out.append((b, kept, evidence))
                used.add(b)
                prev = kept
                break
        else:
            raise SystemExit(f"no budget in the grid changes the kept count after {prev} (input too small?)")
    return out


# --------------------------------------------------------------------------- the app and the page

def wait_idle(pg) -> None:
    browserkit.wait_idle(pg, WAIT)


def wait_caption(pg, text: str) -> None:
    pg.locator('[data-testid="stCaptionContainer"]', has_text=text).first.wait_for(timeout=WAIT)
    wait_idle(pg)


# Arms a watcher: t0 at the Enter keydown in the budget box, t1 at the first animation frame after the
# metrics show the expected values. Both on the page's own clock (performance.now()).
ARM_JS = """([kept, evidence]) => {
    const rt = window.__rt = {t0: null, t1: null, hit: false};
    const box = [...document.querySelectorAll('[data-testid="stNumberInput"]')]
        .find(e => e.innerText.includes('Docs budget (tokens)')).querySelector('input');
    box.addEventListener('keydown', e => { if (e.key === 'Enter' && rt.t0 === null) rt.t0 = performance.now(); },
                         {capture: true});
    const shown = () => {
        const m = {};
        for (const el of document.querySelectorAll('[data-testid="stMetric"]')) {
            const label = el.querySelector('[data-testid="stMetricLabel"]');
            const value = el.querySelector('[data-testid="stMetricValue"]');
            if (label && value) m[label.innerText.trim()] = value.innerText.trim();
        }
        return m['Kept'] === kept && m['Evidence / budget'] === evidence;
    };
    const obs = new MutationObserver(() => {
        if (rt.hit || rt.t0 === null || !shown()) return;
        rt.hit = true;
        obs.disconnect();
        requestAnimationFrame(() => { rt.t1 = performance.now(); });
    });
    obs.observe(document.body, {subtree: true, childList: true, characterData: true, attributes: true});
}"""


def measure(browser, url: str, path: str, reps: int) -> dict:
    name = os.path.basename(path)
    loaded = ctxcore.load(path)
    n = len(loaded.candidates)
    start = 1000  # the number box's default, the budget in force when the toggle goes on
    budgets = plan(loaded, start, reps)

    context = browser.new_context(viewport={"width": 1440, "height": 1000})
    pg = context.new_page()
    pg.set_default_timeout(WAIT)
    try:
        pg.goto(url + "/")
        pg.locator('[data-testid="stMetric"]').first.wait_for()
        wait_idle(pg)
        pg.get_by_role("button", name="Reset to defaults").click()
        wait_caption(pg, "(from the split)")

        kept0, evidence0 = expected(loaded, None)
        t = time.perf_counter()
        pg.locator('[data-testid="stFileUploader"] input[type="file"]').set_input_files(path)
        pg.wait_for_function(f"""() => {{ const m = ({METRICS_JS})();
            return m['Candidates'] === {json.dumps(str(n))} && m['Kept'] === {json.dumps(str(kept0))}
                   && m['Evidence / budget'] === {json.dumps(evidence0)}; }}""", timeout=WAIT)
        first_build = time.perf_counter() - t
        wait_caption(pg, f"{name} · {n} candidates")

        pg.locator('[data-testid="stSidebar"]').get_by_text("Direct docs budget").click()
        wait_caption(pg, f"docs budget {start:,} (direct)")
        shown = pg.evaluate(METRICS_JS)
        want = expected(loaded, start)
        assert (shown["Kept"], shown["Evidence / budget"]) == (str(want[0]), want[1]), shown

        box = pg.locator('[data-testid="stNumberInput"]', has_text="Docs budget (tokens)").locator("input")
        runs, idle = [], []
        for budget, kept, evidence in budgets:
            pg.evaluate(ARM_JS, [str(kept), evidence])
            box.fill(str(budget))
            t = time.perf_counter()
            box.press("Enter")
            pg.wait_for_function("() => window.__rt.t1 !== null", timeout=WAIT)
            wait_caption(pg, f"docs budget {budget:,} (direct)")
            idle.append(time.perf_counter() - t)
            rt = pg.evaluate("() => window.__rt")
            runs.append((rt["t1"] - rt["t0"]) / 1000)
            shown = pg.evaluate(METRICS_JS)  # still right once the run is over
            assert shown["Kept"] == str(kept) and shown["Evidence / budget"] == evidence, shown
        assert pg.locator('[data-testid="stException"]').count() == 0
    finally:
        context.close()
    return {"round_trip": summary(runs), "until_idle": summary(idle), "first_build": first_build,
            "runs": runs, "budgets": [b for b, _, _ in budgets], "kept": [k for _, k, _ in budgets],
            "bytes": os.path.getsize(path)}


def summary(xs: list[float]) -> dict:
    return {"median": statistics.median(xs), "min": min(xs), "max": max(xs)}


# --------------------------------------------------------------------------- main

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10, 10_000])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--out", default=os.path.join(HERE, "results.json"))
    args = ap.parse_args(argv)
    if not os.path.exists(CHROMIUM):
        raise SystemExit(f"{CHROMIUM} is not installed (apt-get install -y chromium)")
    from playwright.sync_api import sync_playwright
    import streamlit

    sizes = {}
    with tempfile.TemporaryDirectory() as tmp, running_app() as url, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            version = browser.version
            for n in args.sizes:
                path = write_jsonl(n, tmp)
                print(f"{n:>7,} candidates: measuring {args.reps} budget changes…", flush=True)
                sizes[str(n)] = measure(browser, url, path, args.reps)
        finally:
            browser.close()

    print()
    print(f"{'candidates':>10}  {'first build':>11}  {'round trip median':>17}  {'min':>7}  {'max':>7}  "
          f"{'until idle median':>17}")
    for n, r in sizes.items():
        rt, idle = r["round_trip"], r["until_idle"]
        print(f"{int(n):>10,}  {r['first_build']:>10.2f}s  {rt['median'] * 1000:>15.0f}ms  "
              f"{rt['min'] * 1000:>5.0f}ms  {rt['max'] * 1000:>5.0f}ms  {idle['median'] * 1000:>15.0f}ms")
    result = {"machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                          "platform": platform.platform()},
              "chromium": version, "streamlit": streamlit.__version__, "reps": args.reps,
              "measured": "Enter keydown in the docs budget box -> first frame with the new Kept metric",
              "sizes": sizes}
    lo, hi = str(min(args.sizes)), str(max(args.sizes))
    if lo != hi:
        key = f"ratio_{hi}_{lo}"
        result[key] = {"round_trip": sizes[hi]["round_trip"]["median"] / sizes[lo]["round_trip"]["median"],
                       "until_idle": sizes[hi]["until_idle"]["median"] / sizes[lo]["until_idle"]["median"]}
        print(f"\nmedian ratio {int(hi):,}/{int(lo):,}: round trip {result[key]['round_trip']:.1f}x, "
              f"until idle {result[key]['until_idle']:.1f}x")

    existing = {}
    if os.path.exists(args.out):
        with open(args.out, encoding="utf-8") as fh:
            existing = json.load(fh)
    existing["browser_round_trip"] = result
    with open(args.out, "w", encoding="utf-8") as fh:
        json.dump(existing, fh, indent=2)
        fh.write("\n")
    print(f"merged into {os.path.relpath(args.out, ROOT)} under 'browser_round_trip'")


if __name__ == "__main__":
    main()
