"""Before and after: the old and new scanning of untrusted text on strings built to make the old
patterns backtrack (issue #19). The old patterns are the verbatim copies the tests hold.

    python bench/regex_bombs.py            # 200 KB bombs; old runs capped near --cap seconds

The new code runs on the full size. The old one runs on sizes doubling from 1 KB and stops before
a run expected to take longer than --cap (its time grows with the square of the size); the table
then gives the largest size measured and a quadratic estimate for the full size, marked "est.".
Not part of the test suite.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.dirname(HERE), os.path.join(os.path.dirname(HERE), "tests")]

from test_linear_scanning import (OLD_AMOUNT, OLD_CITE, OLD_FENCE, OLD_NUMERIC_CITE, OLD_SUSPECT,  # noqa: E402
                                  old_neutralise, old_suspicious)

from ctxcore.analysis import answer  # noqa: E402

from ctxcore.stages import assemble, filters


def _fresh_neutralise(text):
    assemble._scan.cache_clear()
    return assemble.neutralise(text)


OLD = dict((what, p) for what, p in OLD_SUSPECT)
BOMBS = [  # (name, old, new, the bomb of n characters)
    ("fence in neutralise: '<' + spaces", old_neutralise, _fresh_neutralise, lambda n: "<" + " " * (n - 1)),
    ("fence pattern alone: '<' + spaces", OLD_FENCE.findall, assemble._FENCE.findall, lambda n: "<" + " " * (n - 1)),
    ("suspicious: '<' + spaces", old_suspicious, assemble.suspicious.__wrapped__, lambda n: "<" + " " * (n - 1)),
    ("role marker: PDF blank lines '\\n '", OLD["a role marker"].search, assemble._ROLE.search,
     lambda n: "\n " * (n // 2)),
    ("role marker: '\\n' only", OLD["a role marker"].search, assemble._ROLE.search, lambda n: "\n" * n),
    ("suspicious: PDF blank lines '\\n '", old_suspicious, assemble.suspicious.__wrapped__,
     lambda n: "\n " * (n // 2)),
    ("markdown image: '![' repeated", OLD["a remote markdown image"].search, assemble._IMAGE.search,
     lambda n: "![" * (n // 2)),
    ("amounts: digits, no spaces", OLD_AMOUNT.findall, filters.amount_matches, lambda n: "1234567890" * (n // 10)),
    ("amounts: SKU list '00000001,…'", OLD_AMOUNT.findall, filters.amount_matches,
     lambda n: "".join(f"{i:08d}," for i in range(n // 9))),
    ("amounts: '1,' repeated", OLD_AMOUNT.findall, filters.amount_matches, lambda n: "1," * (n // 2)),
    ("answer citation: '[S' + digits", OLD_CITE.findall, answer._CITE.findall, lambda n: "[S" + "1" * (n - 2)),
    ("answer numeric citation: '[1,1,…'", OLD_NUMERIC_CITE.findall, answer._NUMERIC_CITE.findall,
     lambda n: "[1" + ",1" * (n // 2 - 1)),
]


def _time(fn, text, reps=3):
    best = float("inf")
    for _ in range(reps):
        start = time.perf_counter()
        fn(text)
        best = min(best, time.perf_counter() - start)
    return best


def _old(fn, make, size, cap):
    """(largest size run, its time, the time at ``size``, measured or estimated)."""
    n, last = 1_000, None
    while True:
        t = _time(fn, make(n), reps=1)
        last = (n, t)
        if n >= size:
            return n, t, t, False
        nxt = min(size, n * 2)
        if t * (nxt / n) ** 2 > cap:
            return n, t, t * (size / n) ** 2, True
        n = nxt


def _fmt(seconds: float) -> str:
    return f"{seconds:.1f} s" if seconds >= 1 else f"{seconds * 1000:.1f} ms"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=200_000)
    ap.add_argument("--cap", type=float, default=5.0, help="longest old run, in seconds (at most 30)")
    args = ap.parse_args(argv)
    cap = min(args.cap, 30.0)
    print(f"{'bomb':<40} {'old: measured':>22} {'old at ' + str(args.size // 1000) + ' KB':>16} "
          f"{'new at ' + str(args.size // 1000) + ' KB':>14}")
    for name, old, new, make in BOMBS:
        n, t, at_size, estimated = _old(old, make, args.size, cap)
        t_new = _time(new, make(args.size))
        shown = _fmt(at_size) + (" est." if estimated else "")
        print(f"{name:<40} {_fmt(t) + f' at {n // 1000} KB':>22} {shown:>16} {_fmt(t_new):>14}")
    print(f"\nold runs stop before one expected to pass {cap:g} s; 'est.' scales the last one by (size/n)^2")


if __name__ == "__main__":
    main()
