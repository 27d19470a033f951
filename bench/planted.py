"""Break, run, restore: the bugs #20 planted in the engine, each put back in a copy of the tree and run
against the tests that must catch it.

Each bug is one textual change to one module (the exact line as it stands, and the plausible wrong one). For each,
the script writes the change into a scratch copy of the tracked files, runs the named tests there (stopping at the
first failure), then puts the module back. A bug counts as caught when its run fails, with no test skipped
(the tenth bug was a skip computed from the production code). Finally the same tests run on the restored copy and
must all pass. Nothing in the working tree is touched.

    python bench/planted.py                 # every bug; exit 1 if any is not caught or the restored run fails
    python bench/planted.py --only 4 7      # some of them
    python bench/planted.py --list          # what each bug is, where, and which tests must catch it
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Plant:
    what: str        # the behaviour a user sees, as the issue names it
    path: str        # the module, relative to the repository
    line: str        # exactly as it stands in the module (must occur once; may span lines)
    wrong: str       # the planted bug
    tests: tuple[str, ...]


PLANTS = (
    Plant("labels numbered over the kept list instead of prompt order", "ctxcore/stages/assemble.py",
          'labels = {d.id: f"S{i}" for i, d in enumerate(ordered, 1)}',
          'labels = {d.id: f"S{i}" for i, d in enumerate(kept, 1)}',
          ("tests/test_invariants.py",)),
    Plant("every member of a version family but one survivor marked stale", "ctxcore/stages/filters.py",
          "older = [c for c in members if version_key(c) != top]",
          "older = [c for c in members if c is not survivor]",
          ("tests/test_invariants.py",)),
    Plant("CSV error rows counted per record instead of per line", "ctxcore/io/reading.py",
          "start = reader.line_num + 1",
          "start += 1",
          ("tests/test_parsing_tables.py",)),
    Plant("a freeing fix reported verified without running the engine", "ctxcore/analysis/explain.py",
          "if any(getattr(case.config, k) != v for k, v in fix.items()) and _kept(case.run(**fix), cid):",
          "if any(getattr(case.config, k) != v for k, v in fix.items()):",
          ("tests/test_fix_honesty.py",)),
    Plant("one label read per bracket ([S1, S9] leaves S9 unchecked)", "ctxcore/analysis/answer.py",
          'for label in re.split(r"\\s*[,;]\\s*", m.group(1).upper()):',
          'for label in re.split(r"\\s*[,;]\\s*", m.group(1).upper())[:1]:',
          ("tests/test_parsing_tables.py",)),
    Plant("duplicate_of naming the latest copy instead of the survivor", "ctxcore/stages/dedup.py",
          "earlier = first.setdefault(c.text, c.id)",
          "earlier, first[c.text] = first.get(c.text, c.id), c.id",
          ("tests/test_invariants.py",)),
    Plant("a fix's budget fallback verified unconditionally", "ctxcore/analysis/explain.py",
          "            return fix, _kept(case.run(**fix), cid)\n    return fix, False\n",
          "            return fix, True\n    return fix, True\n",
          ("tests/test_fix_honesty.py",)),
    Plant("the final trim dropping the highest-ranked passage", "ctxcore/stages/assemble.py",
          "worst = max(kept, key=lambda d: state.rank[d.id])",
          "worst = min(kept, key=lambda d: state.rank[d.id])",
          ("tests/test_invariants.py",)),
    Plant("history trimming keeping the oldest turns", "ctxcore/stages/assemble.py",
          "for turn in reversed(state.inputs.history):",
          "for turn in state.inputs.history:",
          ("tests/test_invariants.py",)),
    Plant("an importer unwired (the tenth: its tests once skipped)", "ctxcore/io/formats/shapes.py",
          "    langsmith.FAMILY,\n",
          "",
          ("tests/test_importers.py", "tests/test_import_families.py")),
)


def _copy_tree(into: Path) -> None:
    """The tracked files as they are in the working tree (uncommitted edits included)."""
    names = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    for name in filter(None, names.decode().split("\0")):
        source = ROOT / name
        if source.is_file():
            target = into / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)


_SUMMARY = re.compile(r"(\d+) (passed|failed|skipped|errors?|deselected)")


def _pytest(tree: Path, tests: tuple[str, ...], stop_first: bool) -> tuple[int, dict, str, float]:
    """(exit code, counts by outcome, the first failing test or "", seconds)."""
    args = [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider", "-rfE",
            "-m", "not browser", *(["-x"] if stop_first else []), *tests]
    started = time.perf_counter()
    done = subprocess.run(args, cwd=tree, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    lines = done.stdout.splitlines()
    tail = next((line for line in reversed(lines) if _SUMMARY.search(line)), "")
    counts = {kind.rstrip("s") if kind.startswith("error") else kind: int(n) for n, kind in _SUMMARY.findall(tail)}
    first = next((line.split(" ", 1)[1].split(" - ", 1)[0] for line in lines if line.startswith(("FAILED ", "ERROR "))),
                 "")
    return done.returncode, counts, first, seconds


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", type=int, nargs="+", metavar="N", help="the bugs to plant, numbered from 1")
    ap.add_argument("--list", action="store_true", help="list the bugs and exit")
    args = ap.parse_args(argv)
    chosen = [(n, p) for n, p in enumerate(PLANTS, 1) if not args.only or n in args.only]
    if args.list:
        for n, p in chosen:
            print(f"{n:>2}. {p.what}\n    {p.path}: {p.line.strip()!r} -> {p.wrong.strip()!r}\n"
                  f"    caught by: {' '.join(p.tests)}")
        return 0
    missed = 0
    with tempfile.TemporaryDirectory(prefix="planted-") as scratch:
        tree = Path(scratch)
        _copy_tree(tree)
        print(f"{'#':>2}  {'bug':<64} the run with the bug in place")
        for n, p in chosen:
            module = tree / p.path
            original = module.read_text(encoding="utf-8")
            if original.count(p.line) != 1:
                print(f"{n:>2}  {p.what:<64} the line is not in {p.path} exactly once: update the plant")
                missed += 1
                continue
            module.write_text(original.replace(p.line, p.wrong), encoding="utf-8")
            try:
                code, counts, first, seconds = _pytest(tree, p.tests, stop_first=True)
            finally:
                module.write_text(original, encoding="utf-8")
            caught = code == 1 and counts.get("failed", 0) + counts.get("error", 0) > 0 and not counts.get("skipped")
            missed += not caught
            verdict = (f"caught by {first.split('::')[-1]}" if caught
                       else f"NOT CAUGHT (exit {code}, {counts})")
            print(f"{n:>2}  {p.what:<64} {verdict} ({seconds:.0f} s)")
        tests = tuple(dict.fromkeys(t for _, p in chosen for t in p.tests))
        code, counts, first, seconds = _pytest(tree, tests, stop_first=False)
        print(f"restored, {' '.join(tests)}: exit {code}, "
              f"{', '.join(f'{v} {k}' for k, v in sorted(counts.items()))} ({seconds:.0f} s)")
    if code != 0:
        print(f"the restored tree fails: {first}")
    print(f"{len(chosen) - missed} of {len(chosen)} planted bugs caught")
    return 1 if missed or code != 0 else 0


if __name__ == "__main__":
    raise SystemExit(main())
