"""Memory that is given back (issue #19, item 2): a server that sees many distinct large uploads levels off.

Each "session" is a fresh AppTest (its session state goes with it) that uploads a new ~5 MB candidates file
whose texts no other file has; all run in one process (started by the test, as Streamlit runs every session
in one server process).
What may stay after a session: the app's caches of parsed files and builds (a few entries each, see
ctxui/loading.py), the stage memos (entries for the last ``memo.INPUTS`` inputs) and the caches by text
(bounded by ``CTXCORE_CACHE_MB``, held to 64 MB here). So the process RSS after the 10th upload must be under
the RSS after the 2nd plus 150 MB (the first upload also loads the tokenizer, pandas, plotly and the app's
modules), and it must have levelled off: under the RSS after the 5th plus 50 MB.

Measured (MB after each upload), before the bounds (st.cache_data of 64 parsed files, stage memos holding
any input): 261, 302, 343, 367, 359, 405, 430, 447, 412, 464 (fails: +162 from the 2nd, +105 from the 5th).
After: 260, 278, 297, 312, 324, 329, 333, 328, 312, 345. At 20 MB a file (bench/upload_memory.py --mb 20,
default cache size) before: 542, 734, 992, 1031, 959; after: 558, 594, 678, 814, 818 (three parsed files,
four builds and four inputs' stage results kept)."""

from __future__ import annotations

import gc
import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
UPLOADS, MB, GROWTH_MB, LEVEL_MB, CACHE_MB = 10, 5.0, 150, 50, 64

WORDS = ("refund policy invoice customer account manager approval enterprise shipping warranty order "
         "payment credit note days business within above below limit team support ticket priority region "
         "contract renewal discount tier premium standard basic annual monthly billing cycle").split()


def rss_mb() -> float:
    """This process's resident set (VmRSS), in MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


def candidates_file(seed: int, mb: float = MB) -> bytes:
    """A candidates JSON of about ``mb`` megabytes whose texts appear in no other seed's file."""
    rng = random.Random(seed)
    out, size, i = [], 0, 0
    while size < mb * 1024 * 1024:
        words = [rng.choice(WORDS) for _ in range(rng.randint(60, 140))]
        words.insert(rng.randrange(len(words)), f"s{seed}n{i}")  # unique to this file and chunk
        text = " ".join(words) + "."
        out.append({"id": f"f{seed}-c{i}", "text": text, "score": round(rng.random(), 4),
                    "doc_id": f"doc{i % 400}", "title": f"Doc {i % 400}"})
        size += len(text) + 80
        i += 1
    return json.dumps({"query": "which refund needs manager approval?", "candidates": out}).encode()


def session(data: bytes, name: str) -> int:
    """One browser session: open the app, upload the file, see its build; returns the candidates shown."""
    from streamlit.testing.v1 import AppTest
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180)
    at.run()
    at.file_uploader(key="dbg.upload").set_value((name, data, "application/json"))
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert not [e.value for e in at.error], [e.value for e in at.error]
    return int(next(m.value for m in at.metric if m.label == "Candidates").replace(",", ""))


def measure(uploads: int = UPLOADS, mb: float = MB) -> list[float]:
    """RSS after each of ``uploads`` sessions, each uploading a distinct file of about ``mb`` megabytes."""
    from ctxcore import memo
    rss = []
    for i in range(uploads):
        data = candidates_file(1000 + i, mb)
        assert session(data, f"upload{i + 1}.json") > 5000 * mb / MB
        del data
        gc.collect()
        rss.append(rss_mb())
    assert len(memo._RECENT) <= memo.INPUTS
    return rss


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads VmRSS from /proc (Linux)")
@pytest.mark.timeout(600)
def test_rss_levels_off_over_ten_distinct_large_uploads():
    # in a process of its own: in the suite's, what earlier tests left in the caches is evicted meanwhile. The
    # caches by text are held to a small CTXCORE_CACHE_MB: they are bounded by bytes, not by sessions, and at the
    # default 512 MB they would still be filling after ten 5 MB uploads (each charges them about 15 MB)
    env = {**os.environ, "CTXCORE_CACHE_MB": str(CACHE_MB)}
    proc = subprocess.run([sys.executable, __file__], capture_output=True, text=True, cwd=ROOT, timeout=540, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rss = json.loads(proc.stdout.strip().splitlines()[-1])
    print("RSS after each upload (MB):", ", ".join(f"{r:.0f}" for r in rss))
    assert rss[-1] < rss[1] + GROWTH_MB, f"RSS grew {rss[-1] - rss[1]:.0f} MB from the 2nd to the 10th upload: {rss}"
    assert rss[-1] < rss[4] + LEVEL_MB, f"RSS still grows: {rss[-1] - rss[4]:.0f} MB from the 5th to the 10th: {rss}"


if __name__ == "__main__":  # the measurement, run by the test in a fresh process; prints the RSS list last
    sys.path[:0] = [str(ROOT), str(ROOT / "tests")]
    print(json.dumps([round(r, 1) for r in measure()]))
