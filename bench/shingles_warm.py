"""The warm rebuild words -> shingles at 10,000 candidates against the tokenizer floor (issue #33).

    python bench/shingles_warm.py --reps 7                      # this checkout
    python bench/shingles_warm.py --reps 7 --against /tmp/old   # and another checkout, interleaved (A/B)

Each repetition is a fresh process, as a user's session is: the floor (``bench/run.py``'s ``floor``: tiktoken
counting every text on two threads), then a cold build with the defaults and the rebuild with
``similarity="shingles"`` timed alone (``run.warm``). Checkouts alternate, so a burst of load from other work
falls on both. Medians and each repetition's ratio are printed; ``--json`` writes them.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_ONE = """
import json, sys
sys.path[:0] = [{root!r} + "/bench", {root!r}]
import synth
from run import floor, warm
from ctxcore import Config
cands = synth.candidates({n})
print(json.dumps({{"floor": floor(cands, 1)["median"], "rebuild": warm(cands, 1, Config(similarity="shingles"))["median"]}}))
"""


def once(root: str, n: int) -> dict:
    out = subprocess.run([sys.executable, "-c", _ONE.format(root=root, n=n)], capture_output=True, text=True,
                         check=True, cwd=root)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--candidates", type=int, default=10_000)
    ap.add_argument("--against", help="another checkout, measured alternately with this one")
    ap.add_argument("--json", help="write the figures here")
    args = ap.parse_args()
    roots = {"this": ROOT} | ({"against": os.path.abspath(args.against)} if args.against else {})
    runs: dict[str, list[dict]] = {name: [] for name in roots}
    for rep in range(args.reps):
        for name, root in roots.items():
            runs[name].append(once(root, args.candidates))
            r = runs[name][-1]
            print(f"rep {rep + 1} {name}: floor {r['floor']:.3f} s, rebuild {r['rebuild']:.3f} s "
                  f"({r['rebuild'] / r['floor']:.2f}x)", flush=True)
    summary = {}
    for name, rs in runs.items():
        f, w = statistics.median(r["floor"] for r in rs), statistics.median(r["rebuild"] for r in rs)
        summary[name] = {"floor_s": round(f, 3), "rebuild_s": round(w, 3), "x_floor": round(w / f, 2),
                         "per_rep_x": [round(r["rebuild"] / r["floor"], 2) for r in rs], "root": roots[name]}
        print(f"{name}: floor {f:.3f} s, rebuild {w:.3f} s, {w / f:.2f}x the floor (medians of {len(rs)})")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(summary, fh, indent=1)


if __name__ == "__main__":
    main()
