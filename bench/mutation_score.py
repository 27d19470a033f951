"""Mutation score per module, from the results ``mutmut run`` leaves in ``mutants/`` (issue #20).

    mutmut run --max-children 2            # resumable; hours on 2 cores even without the slow tests (README, "Testing")
    python bench/mutation_score.py         # the table below, from what has been checked so far
    python bench/mutation_score.py --survivors answer   # the surviving mutants of one module, to review
    python bench/mutation_score.py --survivors answer --diff   # each with its diff

Mutants reviewed as equivalent (no input tells them from the original) are listed in
``bench/mutation_equivalent.txt``, one per line as ``NAME  # why``; they are left out of the score and counted
in their own column, and a listed name that is now caught or gone is reported so the list cannot go stale.

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

from mutmut.mutation.diff_apply import get_diff_for_mutant
from mutmut.stats import status_by_exit_code

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CAUGHT = ("killed", "timeout")
EQUIVALENT = os.path.join(ROOT, "bench", "mutation_equivalent.txt")


def equivalents(path: str = EQUIVALENT) -> dict[str, str]:
    """Mutant name -> the one-line reason it is equivalent, from the reviewed list."""
    out = {}
    if os.path.exists(path):
        with open(path, encoding="utf-8") as fh:
            for n, line in enumerate(fh, 1):
                line = line.strip()
                if not line or line.startswith("#"):
                    continue
                name, sep, why = line.partition("#")
                if not sep or not why.strip():
                    raise SystemExit(f"{path}, line {n}: an equivalent mutant needs its reason after '#'")
                out[name.strip()] = why.strip()
    return out


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
    ap.add_argument("--diff", action="store_true", help="with --survivors: print each survivor's diff")
    args = ap.parse_args(argv)
    found = results(args.mutants)
    if not found:
        print(f"no mutmut results under {args.mutants}: run `mutmut run` first")
        return 1
    same = equivalents()
    if args.survivors:
        for module, codes in found.items():
            if module.split(".")[-1] != args.survivors:
                continue
            for name, code in codes.items():
                if status(code) in ("caught", "skipped", "not checked") or name in same:
                    continue
                print(f"{status(code):9}  {name}")
                if args.diff:
                    print(_diff(name, os.path.join(*module.split(".")) + ".py", args.mutants))
        return 0
    total = collections.Counter()
    print(f"{'module':24} {'caught':>7} {'survived':>9} {'no tests':>9} {'equivalent':>11} {'score':>7} "
          f"{'not checked':>12}")
    for module, codes in found.items():
        c = collections.Counter("equivalent" if name in same and status(code) == "survived" else status(code)
                                for name, code in codes.items())
        total.update(c)
        print(f"{module:24} {c['caught']:7} {c['survived']:9} {c['no tests']:9} {c['equivalent']:11} "
              f"{_score(c):>7} {c['not checked']:12}")
    print(f"{'all':24} {total['caught']:7} {total['survived']:9} {total['no tests']:9} {total['equivalent']:11} "
          f"{_score(total):>7} {total['not checked']:12}")
    every = {name: code for codes in found.values() for name, code in codes.items()}
    stale = sorted(n for n in same if n not in every or status(every[n]) not in ("survived", "not checked"))
    if stale:
        print(f"listed as equivalent but caught or gone ({len(stale)}): " + ", ".join(stale))
    return 0


def _score(c: collections.Counter) -> str:
    """Caught over everything judged, equivalents and unchecked mutants left out."""
    judged = sum(n for k, n in c.items() if k not in ("skipped", "not checked", "equivalent"))
    return f"{c['caught'] / judged:.1%}" if judged else "-"


def _diff(name: str, path: str, mutants: str) -> str:
    """The mutant's diff; mutmut reads ``mutants/PATH`` from the folder that holds ``mutants``."""
    here = os.getcwd()
    os.chdir(os.path.dirname(os.path.abspath(mutants)))
    try:
        return get_diff_for_mutant(name, path=path)
    finally:
        os.chdir(here)


if __name__ == "__main__":
    raise SystemExit(main())
