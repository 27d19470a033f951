"""Benchmark: where a build stands against the tokenizer floor, and near-dedup against all pairs.

    python bench/run.py                 # 1k and 10k, 5 repetitions (a few minutes)
    python bench/run.py --sizes 1000 10000 100000 --reps 3
    python bench/run.py --corpora prose templated --sizes 10000 --cli 10000 --reps 5   # issue #18

With ``--corpora``, the sizes are built from bench/corpora.py's corpora instead of bench/synth.py's
set (in process: the tokenizer floor and a cold build), and ``--cli N`` times fresh processes on a
file of N candidates of each corpus (written to a temporary directory): ``python -m ctxcore build FILE
--format json`` against a process that only loads the same file and counts every text once with
tiktoken (per text, two threads, as the issue defines the tokenizer-only process) and against one that
counts the way the build does (a slice of texts per tokenizer call), run alternately, with the peak RSS
of each build process. Every process runs with Python's bytecode cache on.

Prints a table and writes bench/results.json. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.dirname(HERE), HERE]

import corpora  # noqa: E402
import synth  # noqa: E402

from ctxcore import Config, build, get_tokenizer  # noqa: E402
from ctxcore.stages.dedup import near_duplicates_naive, near_matches, words  # noqa: E402
from ctxcore.pipeline import clear_caches  # noqa: E402

QUERY = "Does an enterprise refund above the approval threshold need a manager?"
CHANGES = {
    "budget": Config(budget=3000),
    "threshold": Config(min_score=0.35),
    "order": Config(order="rank"),
    "near_dup_up": Config(near_dup=0.9),     # the join made for 0.8 answers 0.9
    "near_dup_down": Config(near_dup=0.7),   # ... and 0.7
    "near_dup_far": Config(near_dup=0.5),    # ... and 0.5: it reaches down to 0.5 where that is cheap (--near-steps
                                             # goes below: joined again from the remembered word sets, or swept)
}


def timed(fn, reps: int) -> dict:
    runs = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        runs.append(time.perf_counter() - t0)
    return {"median": statistics.median(runs), "min": min(runs), "max": max(runs)}


def floor(cands, reps):
    enc = get_tokenizer("cl100k_base")._encoding
    texts = [c.text for c in cands]
    return timed(lambda: enc.encode_ordinary_batch(texts, num_threads=2), reps)


def cold(cands, reps, config=Config()):
    def once():
        clear_caches()
        build(cands, QUERY, config)
    return timed(once, reps)


def warm(cands, reps, change, base=Config()):
    def once():
        # a cold build with the base settings, as a user would have had them (caches hold what it made,
        # and nothing a change made in an earlier repetition), then the change, timed
        clear_caches()
        build(cands, QUERY, base)
        t0 = time.perf_counter()
        build(cands, QUERY, change)
        return time.perf_counter() - t0
    runs = [once() for _ in range(reps)]
    return {"median": statistics.median(runs), "min": min(runs), "max": max(runs)}


# every setting, changed from the defaults one at a time (the "any single setting change")
EVERY = {"encoding": "o200k_base", "model": "gpt-4o", "window": 16384, "max_output": 500, "safety": 0.1,
         "history_share": 0.2, "budget": 3000, "caller": "guest", "prefer_newest": False, "near_dup": 0.7,
         "similarity": "shingles", "merge_adjacent": True, "min_score": 0.35, "select": "density",
         "order": "rank", "label_overhead": 3, "compress": True, "max_chunk_tokens": 120, "max_passages": 3}


def every_setting(cands, reps, only=None):
    """Warm rebuilds for a change of each setting (a new encoding counts every text: its counts are
    not cached yet), and of the MMR weight with MMR selection on; ``only``: just these settings."""
    out = {}
    for name, value in EVERY.items():
        if not only or name in only:
            out[name] = warm(cands, reps, Config(**{name: value}))
    if not only or "mmr_lambda" in only:
        out["mmr_lambda"] = warm(cands, reps, Config(select="mmr", mmr_lambda=0.3), base=Config(select="mmr"))
    return out


def near_dup_steps(cands, reps, thresholds):
    """Warm rebuilds from near-dup 0.8 to each threshold: within the remembered join, joined again,
    or (where a join would meet most pairs) swept."""
    return {t: warm(cands, reps, Config(near_dup=t)) for t in thresholds}


def dedup_vs_naive(n, reps, threshold=0.8):
    """Near-dedup of n texts as the stage does it (word sets and join or sweep, from the texts) against
    the definition (each text's word set against every earlier survivor's)."""
    texts = [c.text for c in synth.candidates(n)]
    fast = timed(lambda: near_matches(texts, "words", threshold), reps)
    t0 = time.perf_counter()
    naive = near_duplicates_naive([words(t) for t in texts], threshold)
    slow = time.perf_counter() - t0
    words.cache_clear()
    same = naive == near_matches(texts, "words", threshold)
    return {"n": n, "threshold": threshold, "fast": fast, "all_pairs": slow, "speedup": slow / fast["median"],
            "identical": same}


def peak_rss(n: int) -> float:
    """Peak RSS (MB) of a separate process that generates and builds n candidates."""
    code = (f"import sys; sys.path[:0]={[os.path.dirname(HERE), HERE]!r}; import synth; from ctxcore import build, "
            f"Config; build(synth.candidates({n}), {QUERY!r}, Config())")
    subprocess.run([sys.executable, "-c", code], check=True)
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024


ROOT = os.path.dirname(HERE)
# the tokenizer-only process: load the file, count every text once (two threads, as the build counts)
COUNT_ONLY = """
import json, sys
from ctxcore.stages.tokens import get_tokenizer
enc = get_tokenizer("cl100k_base")._encoding
with open(sys.argv[1], encoding="utf-8") as fh:
    texts = [c["text"] for c in json.load(fh)["candidates"]]
enc.encode_ordinary_batch(texts, num_threads=2)
"""
# the same, counting the way the build does (tokens.count_joined, a slice per call, both cores): the ratio
# to this one is what the build's other stages cost, with the faster counting taken out
COUNT_JOINED = """
import json, sys
from ctxcore.stages.tokens import get_tokenizer, Counting
with open(sys.argv[1], encoding="utf-8") as fh:
    texts = [c["text"] for c in json.load(fh)["candidates"]]
Counting(get_tokenizer("cl100k_base"), texts).result()
"""
# runs one command and prints its wall time, CPU time (user + system) and peak RSS (a fresh child, so
# nothing else is counted). On a shared machine the CPU time moves far less than the wall time.
MEASURED = """
import resource, subprocess, sys, time
t0 = time.perf_counter()
subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL)
use = resource.getrusage(resource.RUSAGE_CHILDREN)
print(time.perf_counter() - t0, use.ru_utime + use.ru_stime, use.ru_maxrss / 1024)
"""


def _process(cmd: list) -> tuple[float, float, float]:
    """(wall seconds, CPU seconds, peak RSS MB) of a fresh process running ``cmd`` from the repository root,
    with Python's bytecode cache on as a user has it (some sandboxes turn it off, and every import is then
    compiled again in every process)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    out = subprocess.run([sys.executable, "-c", MEASURED, *cmd], check=True, capture_output=True, text=True,
                         cwd=ROOT, env={**env, "PYTHONPATH": ROOT})
    wall, cpu, rss = out.stdout.split()
    return float(wall), float(cpu), float(rss)


def cli_ratio(corpus: str, n: int, reps: int, folder: str) -> dict:
    """Fresh CLI builds against fresh tokenizer-only processes on one file, alternately."""
    path = corpora.write(corpus, n, os.path.join(folder, f"{corpus}-{n}.json"))
    count, build_, count_cpu, build_cpu, rss, joined = [], [], [], [], [], []
    for _ in range(reps):
        wall, cpu, _ = _process([sys.executable, "-c", COUNT_ONLY, path])
        count.append(wall)
        count_cpu.append(cpu)
        joined.append(_process([sys.executable, "-c", COUNT_JOINED, path])[0])
        wall, cpu, peak = _process([sys.executable, "-m", "ctxcore", "build", path, "--format", "json"])
        build_.append(wall)
        build_cpu.append(cpu)
        rss.append(peak)
    stats = lambda runs: {"median": statistics.median(runs), "min": min(runs), "max": max(runs)}  # noqa: E731
    return {"n": n, "count_only": stats(count), "cli_build": stats(build_), "peak_rss_mb": max(rss),
            "count_only_cpu": stats(count_cpu), "cli_build_cpu": stats(build_cpu),
            "ratio_median": statistics.median(build_) / statistics.median(count),
            "ratio_min": min(build_) / min(count),
            "cpu_ratio_median": statistics.median(build_cpu) / statistics.median(count_cpu),
            "count_joined": stats(joined), "ratio_to_joined_median": statistics.median(build_) / statistics.median(joined),
            "ratios": [b / c for b, c in zip(build_, count)]}


def corpus_rss(corpus: str, n: int) -> float:
    """Peak RSS (MB) of a fresh process that generates n candidates of a corpus and builds them."""
    code = (f"import sys; sys.path[:0]={[ROOT, HERE]!r}; import corpora; from ctxcore import build, Config; "
            f"from ctxcore.io.loaders import candidates_from_objects; "
            f"build(candidates_from_objects(corpora.candidates({corpus!r}, {n})), {QUERY!r}, Config())")
    return _process([sys.executable, "-c", code])[2]


def corpus_rows(args, result):
    """In process, per corpus and size: the tokenizer floor, a cold build, and the build without near-dedup."""
    from ctxcore.io.loaders import candidates_from_objects

    result["corpora"] = {}
    for corpus in args.corpora:
        rows = result["corpora"][corpus] = {}
        for n in args.sizes:
            cands = candidates_from_objects(corpora.candidates(corpus, n))
            row = {"floor": floor(cands, args.reps), "cold": cold(cands, args.reps),
                   "cold_no_near_dup": cold(cands, args.reps, Config(near_dup=None))}
            row["ratios"] = {k: v["median"] / row["floor"]["median"] for k, v in row.items() if k != "floor"}
            rows[n] = row
            print(f"{corpus} {n:,}: floor {row['floor']['median'] * 1000:.0f} ms, cold build "
                  f"{row['cold']['median'] * 1000:.0f} ms ({row['ratios']['cold']:.2f}x), without near-dedup "
                  f"{row['cold_no_near_dup']['median'] * 1000:.0f} ms ({row['ratios']['cold_no_near_dup']:.2f}x)"
                  f" [medians of {args.reps}]", flush=True)
        if args.rss:
            rows[f"peak_rss_mb_{args.rss}"] = r = corpus_rss(corpus, args.rss)
            print(f"{corpus} {args.rss:,}: peak RSS of a build in a fresh process {r:.0f} MB (beyond the loaders' "
                  f"file limit, so built from the generated candidates)", flush=True)
        if args.cli:
            with tempfile.TemporaryDirectory(prefix="ctxcore-bench-") as folder:
                for n in args.cli:
                    r = rows[f"cli_{n}"] = cli_ratio(corpus, n, args.reps, folder)
                    print(f"{corpus} {n:,} fresh processes: count-only {r['count_only']['median']:.2f} s (min "
                          f"{r['count_only']['min']:.2f}), CLI build {r['cli_build']['median']:.2f} s (min "
                          f"{r['cli_build']['min']:.2f}): {r['ratio_median']:.2f}x of medians, "
                          f"{r['ratio_min']:.2f}x of minimums; CPU {r['count_only_cpu']['median']:.2f} s against "
                          f"{r['cli_build_cpu']['median']:.2f} s ({r['cpu_ratio_median']:.2f}x); counting as the build "
                          f"does {r['count_joined']['median']:.2f} s ({r['ratio_to_joined_median']:.2f}x); peak RSS "
                          f"{r['peak_rss_mb']:.0f} MB [{args.reps} of each, alternately]", flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--dedup-sizes", type=int, nargs="*", default=[2000, 5000])
    ap.add_argument("--rss", type=int, default=None, help="also measure peak RSS of a build of this many")
    ap.add_argument("--near-steps", type=float, nargs="*", default=[0.6, 0.5, 0.4, 0.3, 0.2, 0.15, 0.1, 0.05, 0.01],
                    help="near-dup thresholds to step to from 0.8, at the largest size")
    ap.add_argument("--near-reps", type=int, default=3)
    ap.add_argument("--dedup-low", type=float, default=0.1, help="also compare near-dedup at this threshold")
    ap.add_argument("--every-setting", action="store_true", help="warm rebuilds for every setting, at the largest size")
    ap.add_argument("--only", nargs="+", help="with --every-setting: just these settings (e.g. similarity)")
    ap.add_argument("--corpora", nargs="+", choices=corpora.CORPORA,
                    help="build bench/corpora.py's corpora at --sizes (and only those)")
    ap.add_argument("--cli", type=int, nargs="*", default=[],
                    help="with --corpora: fresh CLI builds of this many candidates against fresh tokenizer-only "
                         "processes")
    ap.add_argument("--out", default=os.path.join(HERE, "results.json"))
    args = ap.parse_args(argv)
    result = {"machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                          "platform": platform.platform()}, "sizes": {}}
    if args.corpora:
        corpus_rows(args, result)
        return _write(args, result)
    for n in args.sizes:
        cands = synth.candidates(n)
        row = {"floor": floor(cands, args.reps), "cold": cold(cands, args.reps)}
        for name, change in CHANGES.items():
            row[f"warm_{name}"] = warm(cands, args.reps, change)
        f = row["floor"]["median"]
        row["ratios"] = {k: v["median"] / f for k, v in row.items() if k != "floor" and isinstance(v, dict)}
        result["sizes"][n] = row
        print(f"{n:,} candidates            median       min       max   x floor", flush=True)
        for k, v in row.items():
            if k != "ratios":
                ratio = f"{row['ratios'][k]:8.2f}x" if k in row["ratios"] else ""
                print(f"  {k:<22}{v['median'] * 1000:8.1f} ms{v['min'] * 1000:7.1f} ms{v['max'] * 1000:7.1f} ms{ratio}",
                      flush=True)
    if args.near_steps:
        n = max(args.sizes)
        f = result["sizes"][n]["floor"]["median"]
        steps = near_dup_steps(synth.candidates(n), args.near_reps, args.near_steps)
        result["near_dup_steps"] = {"n": n, "from": 0.8, "steps": steps}
        print(f"{n:,} candidates, near-dup from 0.8 to   median       min       max   x floor", flush=True)
        for t, v in steps.items():
            print(f"  {t:<22g}{v['median'] * 1000:8.1f} ms{v['min'] * 1000:7.1f} ms{v['max'] * 1000:7.1f} ms"
                  f"{v['median'] / f:8.2f}x", flush=True)
    if args.every_setting:
        n = max(args.sizes)
        f = result["sizes"][n]["floor"]["median"]
        every = every_setting(synth.candidates(n), args.near_reps, args.only)
        result["every_setting"] = {"n": n, "changes": {k: {"to": EVERY.get(k, 0.3), **v} for k, v in every.items()}}
        print(f"{n:,} candidates, one setting changed   median       min       max   x floor", flush=True)
        for name, v in every.items():
            print(f"  {name + ' ' + str(EVERY.get(name, 0.3)):<22}{v['median'] * 1000:8.1f} ms{v['min'] * 1000:7.1f} ms"
                  f"{v['max'] * 1000:7.1f} ms{v['median'] / f:8.2f}x", flush=True)
    result["dedup"] = [dedup_vs_naive(n, args.reps, t) for t in (0.8, args.dedup_low) if t
                       for n in args.dedup_sizes]
    for d in result["dedup"]:
        print(f"near-dedup {d['n']:>6} at {d['threshold']:g}: stage {d['fast']['median'] * 1000:.1f} ms, all pairs "
              f"{d['all_pairs'] * 1000:.0f} ms, {d['speedup']:.0f}x, identical={d['identical']}", flush=True)
    if args.rss:
        result["peak_rss_mb"] = {args.rss: peak_rss(args.rss)}
        print(f"peak RSS building {args.rss} candidates: {result['peak_rss_mb'][args.rss]:.0f} MB")
    _write(args, result)
    if not all(d["identical"] for d in result["dedup"]):
        sys.exit("near-dedup survivors differ from the all-pairs definition")


def _write(args, result):
    if os.path.exists(args.out):  # keep what other scripts (bench/browser.py) wrote there
        with open(args.out) as fh:
            result = {**json.load(fh), **result}
    if "corpora" in result and args.corpora:
        result["corpora"] = {**result.get("corpora", {}), **result["corpora"]}
    with open(args.out, "w") as fh:
        json.dump(result, fh, indent=2)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
