"""Mutation score per module, from the results ``mutmut run`` leaves in ``mutants/`` (issue #20).

    mutmut run --max-children 2            # about two hours on 2 cores; see README, "Testing"
    python bench/mutation_score.py         # the table below, from what has been checked so far
    python bench/mutation_score.py --survivors answer   # the surviving mutants of one module, to review

Killed and timed-out mutants count as caught, as in mutmut's own score; survivors, mutants no selected
test reaches and suspicious ones count against it; mutants not yet checked are left out (and counted in
their own column). Needs mutmut installed (``pip install "mutmut>=3.2,<4"``): its exit-code table is used.
"""

from __future__ import annotations

import argparse
import collections
import glob
import json
import os

from mutmut.stats import status_by_exit_code

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CAUGHT = ("killed", "timeout")


def status(code) -> str:
    """caught, survived, no tests, skipped, not checked, or what else mutmut calls it."""
    name = status_by_exit_code[code]
    return "caught" if name in CAUGHT else name


def results(folder: str) -> dict[str, dict[str, int | None]]:
    """Module name -> {mutant name: exit code} for every module mutmut mutated."""
    out = {}
    for meta in sorted(glob.glob(os.path.join(folder, "**", "*.py.meta"), recursive=True)):
        module = os.path.relpath(meta, folder)[:-len(".py.meta")].replace(os.sep, ".")
        with open(meta) as fh:
            out[module] = json.load(fh)["exit_code_by_key"]
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mutants", default=os.path.join(ROOT, "mutants"))
    ap.add_argument("--survivors", metavar="MODULE", help="list the surviving mutants of this module (e.g. answer)")
    args = ap.parse_args(argv)
    found = results(args.mutants)
    if not found:
        print(f"no mutmut results under {args.mutants}: run `mutmut run` first")
        return 1
    if args.survivors:
        for module, codes in found.items():
            if module.split(".")[-1] == args.survivors:
                for name, code in codes.items():
                    if status(code) not in ("caught", "skipped", "not checked"):
                        print(f"{status(code):9}  {name}")
        return 0
    total = collections.Counter()
    print(f"{'module':24} {'caught':>7} {'survived':>9} {'no tests':>9} {'score':>7} {'not checked':>12}")
    for module, codes in found.items():
        c = collections.Counter(status(code) for code in codes.values())
        total.update(c)
        judged = sum(n for k, n in c.items() if k not in ("skipped", "not checked"))
        score = f"{c['caught'] / judged:.0%}" if judged else "-"
        print(f"{module:24} {c['caught']:7} {c['survived']:9} {c['no tests']:9} {score:>7} {c['not checked']:12}")
    judged = sum(n for k, n in total.items() if k not in ("skipped", "not checked"))
    score = f"{total['caught'] / judged:.0%}" if judged else "-"
    print(f"{'all':24} {total['caught']:7} {total['survived']:9} {total['no tests']:9} {score:>7} "
          f"{total['not checked']:12}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
