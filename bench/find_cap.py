"""How long ``python -m ctxcore explain FILE --find TEXT`` takes on a large candidate set (issue #27 item 4):
every match is explained, and each explanation re-builds the context to verify its fix, so the time grows with
the number of matches unless the CLI caps them (``ctxcore.analysis.explain.FIND_LIMIT``, as the app does).

    python bench/find_cap.py [--candidates 3000] [--find refund] [--budget 4000]

Prints the matches, the CLI's wall time for ``explain --find`` and for a ``build`` of the same file.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))

from synth import candidates  # noqa: E402
from ctxcore.analysis.reach import normalise  # noqa: E402


def _timed(*args: str) -> tuple[float, str]:
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "ctxcore", *args], capture_output=True, text=True,
                          cwd=os.path.dirname(HERE))
    if proc.returncode != 0:
        raise SystemExit(proc.stderr)
    return time.perf_counter() - t0, proc.stdout


def _row(c) -> dict:
    return {k: v for k, v in (("id", c.id), ("text", c.text), ("score", c.score), ("doc_id", c.doc_id),
                              ("chunk_index", c.chunk_index), ("title", c.title), ("section", c.section),
                              ("date", c.date)) if v is not None}


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--candidates", type=int, default=3000)
    p.add_argument("--find", default="refund")
    p.add_argument("--budget", type=int, default=4000)
    args = p.parse_args()
    cands = candidates(args.candidates)
    needle = normalise(args.find)
    matches = sum(needle in normalise(c.text) for c in cands)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "candidates.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump({"query": f"What is the {args.find} policy?", "config": {"budget": args.budget},
                       "candidates": [_row(c) for c in cands]}, f)
        build, _ = _timed("build", path, "--format", "prompt")
        find, out = _timed("explain", path, "--find", args.find)
    listed = len(out.splitlines()) - 1 - (out.splitlines()[-1].startswith("and ") if out else 0)
    print(json.dumps({"candidates": args.candidates, "find": args.find, "matches": matches, "listed": listed,
                      "build_s": round(build, 2), "explain_find_s": round(find, 2)}))


if __name__ == "__main__":
    main()
