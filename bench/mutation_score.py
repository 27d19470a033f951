"""Mutation score per module, from the results ``mutmut run`` leaves in ``mutants/`` (issue #20).

    mutmut run --max-children 2            # resumable; hours on 2 cores even without the slow tests (README, "Testing")
    python bench/mutation_score.py         # the table below, from what has been checked so far
    python bench/mutation_score.py --survivors answer   # the surviving mutants of one module, to review
    python bench/mutation_score.py --survivors answer --diff   # each with its diff
    python bench/mutation_score.py --save      # write the results to bench/mutation_results.json (committed)
    python bench/mutation_score.py --restore   # put them back into mutants/, for `mutmut run` to resume from

A whole run takes longer than one working session on two cores, and ``mutants/`` is not kept in git: the results
are committed in ``bench/mutation_results.json`` (each module's function hashes and each mutant's exit code), so
the score in the README can be read again without a run (``--record``), and a run can resume where one stopped
(mutmut keeps a result only while the function's hash is unchanged).

Mutants reviewed as equivalent (no input tells them from the original) are listed in
``bench/mutation_equivalent.txt``, one per line as ``NAME  # why``; they are left out of the score and counted
in their own column, and a listed name that is now caught or gone is reported so the list cannot go stale.

Killed and timed-out mutants count as caught, as in mutmut's own score, except exit code 255: mutmut's worker
says so when pytest could not even start the mutant's tests (a test id it could not find), so such a mutant is
counted as not checked, and reported; survivors, mutants no selected
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
RECORD = os.path.join(ROOT, "bench", "mutation_results.json")
NOT_RUN = 255  # the worker's -1: pytest refused the arguments, no test ran


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
    if code == NOT_RUN:
        return "not checked"
    name = status_by_exit_code[code]
    return "caught" if name in CAUGHT else name


def metas(folder: str) -> dict[str, dict]:
    """Source path -> mutmut's meta record (function hashes, exit codes) for every file mutmut mutated."""
    out = {}
    for meta in sorted(glob.glob(os.path.join(folder, "**", "*.py.meta"), recursive=True)):
        with open(meta) as fh:
            out[os.path.relpath(meta, folder)[:-len(".meta")].replace(os.sep, "/")] = json.load(fh)
    return out


def by_module(records: dict[str, dict]) -> dict[str, dict[str, int | None]]:
    """Module name -> {mutant name: exit code}, from meta records keyed by source path."""
    return {path[:-len(".py")].replace("/", "."): m["exit_code_by_key"] for path, m in records.items()}


def results(folder: str) -> dict[str, dict[str, int | None]]:
    """Module name -> {mutant name: exit code} for every module mutmut mutated."""
    return by_module(metas(folder))


def save(folder: str, record: str = RECORD) -> int:
    """Write the function hashes and exit codes under ``folder`` to the committed record."""
    kept = {path: {"hash_by_function_name": dict(sorted(m["hash_by_function_name"].items())),
                   "exit_code_by_key": dict(sorted(m["exit_code_by_key"].items()))}
            for path, m in metas(folder).items()}
    with open(record, "w") as fh:
        json.dump(kept, fh, indent=1, ensure_ascii=False)
        fh.write("\n")
    return sum(len(m["exit_code_by_key"]) for m in kept.values())


def restore(folder: str, record: str = RECORD) -> int:
    """Write mutmut's meta files under ``folder`` from the record: ``mutmut run`` then keeps every result whose
    function is unchanged and checks the rest. A test map left in ``folder`` (``mutmut-stats.json``) is removed:
    mutmut 3.8 compares the ``[tool.mutmut]`` test selection it was made under with the current one and, when they
    differ, resets every result, the restored ones included; without it mutmut maps the tests afresh and keeps them."""
    with open(record, encoding="utf-8") as fh:
        kept = json.load(fh)
    stale_map = os.path.join(folder, "mutmut-stats.json")
    if os.path.exists(stale_map):
        os.remove(stale_map)
    for path, m in kept.items():
        meta = os.path.join(folder, *path.split("/")) + ".meta"
        os.makedirs(os.path.dirname(meta), exist_ok=True)
        with open(meta, "w") as fh:
            json.dump({**m, "type_check_error_by_key": {}, "durations_by_key": {}, "estimated_durations_by_key": {}},
                      fh, indent=4)
    return sum(len(m["exit_code_by_key"]) for m in kept.values())


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mutants", default=os.path.join(ROOT, "mutants"))
    ap.add_argument("--survivors", metavar="MODULE", help="list the surviving mutants of this module (e.g. answer)")
    ap.add_argument("--diff", action="store_true", help="with --survivors: print each survivor's diff")
    ap.add_argument("--record", action="store_true", help="read the committed results instead of mutants/")
    ap.add_argument("--save", action="store_true", help="write the results under mutants/ to the record")
    ap.add_argument("--restore", action="store_true", help="write the record's results into mutants/")
    args = ap.parse_args(argv)
    if args.save:
        print(f"{save(args.mutants)} results written to {os.path.relpath(RECORD)}")
        return 0
    if args.restore:
        print(f"{restore(args.mutants)} results written under {args.mutants}; `mutmut run` resumes from them")
        return 0
    if args.record:
        with open(RECORD, encoding="utf-8") as fh:
            found = by_module(json.load(fh))
    else:
        found = results(args.mutants)
    if not found:
        print(f"no mutmut results under {args.mutants}: run `mutmut run` first, or read the committed ones (--record)")
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
    not_run = sorted(n for n, code in every.items() if code == NOT_RUN)
    if not_run:
        print(f"{len(not_run)} mutants came back with exit code 255 (pytest could not start their tests); they are "
              f"counted as not checked: re-run them with `mutmut run NAME ...`")
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
