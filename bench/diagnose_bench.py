"""Benchmark: diagnosing a logged trace at scale, against a cold build of the same input.

    python bench/diagnose_bench.py                  # 3,000 and 10,000 candidates
    python bench/diagnose_bench.py --sizes 1000 10000 --reps 3

The input is ``synth.candidates(n)``; the logged system sent the first 15 in retrieval order as ``[1]`` …
``[15]``, the first paragraph five times over (four copies of it retrieved under other ids, so the diagnosis has duplicates to find and a crowded-out
passage to prove). Measured: a cold build (every cache cleared), then the diagnosis of that trace
(``ctxcore.analysis.diagnosis.diagnose``: reconstructing the sent context, inferring the logged pipeline's policy, the
causes and the re-runs that prove their fixes on that policy), and the whole ``explain`` (build + diagnosis) as the
CLI runs it, best of ``--reps``. The target (issue #28): the diagnosis within 1x a cold build at 10,000 candidates.
Merges the figures into bench/results.json under "diagnose".
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path[:0] = [ROOT, HERE]

import synth  # noqa: E402

from ctxcore import Candidate, Config, Logged, build  # noqa: E402
from ctxcore.analysis.diagnosis import diagnose  # noqa: E402
from ctxcore.pipeline import clear_caches  # noqa: E402


def logged_case(n: int):
    base = synth.candidates(n - 4)
    copies = [Candidate(f"copy-{i}", base[0].text, base[0].score) for i in range(4)]  # four more copies of the first
    cands = base + copies
    query = "how long do refunds take for damaged items?"
    sent = [base[0], *copies] + base[1:11]
    prompt = "system: Answer from the context and cite it.\n\nuser: Context:\n" + "\n\n".join(
        f"[{i}] {c.text}" for i, c in enumerate(sent, 1)) + f"\n\nQuestion: {query}"
    return cands, query, Logged("openinference", prompt_text=prompt, answer="It takes five days [1][2].")


def measure(n: int, reps: int) -> dict:
    cands, query, logged = logged_case(n)
    cold, dx, total, proofs = [], [], [], 0
    for _ in range(reps):
        clear_caches()
        t0 = time.perf_counter()
        trace = build(cands, query, Config())
        t1 = time.perf_counter()
        trace = dataclasses.replace(trace, logged=logged)
        d = diagnose(trace, logged_prompt=logged.prompt_text, answer=logged.answer)
        t2 = time.perf_counter()
        cold.append(t1 - t0)
        dx.append(t2 - t1)
        total.append(t2 - t0)
        proofs = d.proofs
        first = d.findings[0].kind if d.findings else None
    return {"candidates": n, "cold_build_s": round(min(cold), 3), "diagnose_s": round(min(dx), 3),
            "within_target": min(dx) <= min(cold),
            "explain_total_s": round(min(total), 3), "ratio_diagnose_to_cold_build": round(min(dx) / min(cold), 2),
            "reruns": proofs, "first_finding": first}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[3000, 10000])
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--out", default=os.path.join(HERE, "results.json"))
    args = ap.parse_args(argv)
    rows = [measure(n, args.reps) for n in args.sizes]
    print(f"{'n':>7} {'cold build s':>13} {'diagnose s':>11} {'ratio':>6} {'re-runs':>8}  first finding")
    for r in rows:
        print(f"{r['candidates']:>7} {r['cold_build_s']:>13} {r['diagnose_s']:>11} "
              f"{r['ratio_diagnose_to_cold_build']:>6} {r['reruns']:>8}  {r['first_finding']}")
    try:
        with open(args.out) as f:
            results = json.load(f)
    except (OSError, ValueError):
        results = {}
    results["diagnose"] = rows
    with open(args.out, "w") as f:
        json.dump(results, f, indent=2)
        f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
