"""Check mutmut's unchecked mutants in one warm pytest session, fastest tests first (issue #20).

    python bench/mutation_fast.py                 # every mutant mutmut has not checked yet, in mutants/
    python bench/mutation_fast.py --verify 200    # re-check 200 that mutmut decided (half survivors), compare
    python bench/mutation_fast.py NAME ...        # re-check these (after a new test)
    python bench/mutation_fast.py --stats tests/test_guard_sent.py NAME ...   # first map these tests' coverage
    python bench/mutation_fast.py --stats tests/test_diagnose.py            # only map them (no NAME: no check)

It runs mutmut's own mutants (``mutants/``, made by ``mutmut run``) with mutmut's own map of which tests cover
which function and how long each took (``mutants/mutmut-stats.json``), and writes each verdict into mutmut's meta
files with mutmut's exit codes (1 killed, 0 survived, 36 timeout), so ``mutmut results`` and
``bench/mutation_score.py`` read them as their own. Why: mutmut 3.8 hands a worker the covering tests in set
order and the worker collects them again; a mutant most tests kill is then often run for seconds before the
first failing test. Here the tests are collected once, in a session inside ``mutants/`` with the options and
test files of ``[tool.mutmut]``; each mutant gets a forked worker that sets ``MUTANT_UNDER_TEST`` and runs the
covering tests (those that caught the function's, then the module's, earlier mutants first; then shortest first),
stopping at the first failure, under mutmut's time limit (CPU seconds: ten times the covering tests' time plus ten:
a timeout, caught) and a limit of each test's own (ten times its time plus ``PER_TEST``), so a hang costs
seconds; a worker past three times the first limit in wall time is stopped and its mutant left unchecked (a starved worker and a sleeping hang look alike; a busy machine must not make a survivor
look caught). No test runs in
the parent, so every worker sets its fixtures up afresh under its own mutant.

``--stats PREFIX ...`` first adds to mutmut's map the functions each test whose id starts with a prefix reaches
(run once, in a forked worker, with mutmut's own ``stats`` trampolines) and writes the map back. mutmut itself
only maps tests it has not seen, after collecting every test again (minutes here); and a test added to a file
it has seen is still new to it, so ``mutmut run`` later maps nothing twice and resets nothing.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import resource
import signal
import sys
import tempfile
import time
import tomllib
from typing import Optional

import pytest
from _pytest.runner import runtestprotocol

from mutation_score import metas  # bench/ is this script's own folder on sys.path

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KILLED, SURVIVED, TIMEOUT = 1, 0, 36
# A worker is stopped after this many wall seconds per CPU second of its limit. Only the CPU limit (RLIMIT_CPU)
# says "timeout": at nice 19 on a shared machine a worker may get a twentieth of a core, and a survivor running
# all its tests slowly must not pass for a caught mutant. A worker stopped by the wall clock is left unchecked.
WALL_PER_CPU = 3
_SCRATCH = tempfile.gettempdir()
# CPU seconds a test may take over ten times its mapped time before its mutant is a timeout: room for the
# module fixtures a forked worker sets up afresh (the selection leaves out every test over a second)
PER_TEST = 10.0


def _covering(stats: dict, name: str, killers: Optional[dict] = None) -> list[str]:
    """The tests that cover the mutant's function, shortest first (ties by id); with ``killers`` (function: the
    tests that caught its earlier mutants, latest first; module: how many each test caught), those first: the
    mutants of one function, and of one module, are mostly caught by the same few tests, and a caught mutant
    ends at its first failing test."""
    function = name.rsplit("__mutmut_", 1)[0]
    tests = sorted(set(stats["tests_by_mangled_function_name"].get(function, [])),
                   key=lambda t: (stats["duration_by_test"].get(t, 0.0), t))
    killers = killers or {}
    module = function.rsplit(".", 1)[0]
    by_module = sorted(killers.get(module, {}).items(), key=lambda tc: -tc[1])  # the module's best killers next
    first = list(dict.fromkeys([t for t in killers.get(function, ()) if t in tests] +
                               [t for t, _ in by_module if t in tests]))
    return first + [t for t in tests if t not in set(first)]


def _killer_file(pid: int) -> str:
    return os.path.join(_SCRATCH, f"mutation_fast_killer_{pid}")  # fixed: a test may change the working folder


class _Checker:
    """A pytest plugin: after collection, fork one worker per mutant instead of running the session's tests."""

    def __init__(self, todo: list[str], stats: dict, workers: int, on_verdict, map_tests=(), on_map=None):
        self.todo, self.stats, self.workers, self.on_verdict = todo, stats, workers, on_verdict
        self.map_tests, self.on_map = tuple(map_tests), on_map
        self.items: dict[str, pytest.Item] = {}
        self.killers: dict = {}  # function -> the tests that caught its mutants, latest first; module -> {test: count}

    def pytest_collection_modifyitems(self, items):
        self.items = {item.nodeid: item for item in items}

    def _map(self) -> None:
        """Run the tests named by ``map_tests`` under mutmut's ``stats`` mode in a forked worker; hand the parent
        {test: [functions reached]} and {test: seconds}, as mutmut's own stats run records them."""
        items = [i for n, i in self.items.items() if n.startswith(self.map_tests)]
        out = os.path.join(os.getcwd(), f".mutation_fast_map_{os.getpid()}.json")
        pid = os.fork()
        if pid == 0:
            from mutmut.state import state
            os.environ["MUTANT_UNDER_TEST"] = "stats"
            reached, took = {}, {}
            for i, item in enumerate(items):
                state()._stats.clear()
                start = time.monotonic()
                runtestprotocol(item, nextitem=items[i + 1] if i + 1 < len(items) else None, log=False)
                took[item.nodeid] = time.monotonic() - start
                reached[item.nodeid] = sorted(state()._stats)
            with open(out, "w") as fh:
                json.dump({"reached": reached, "took": took}, fh)
            os._exit(0)
        os.waitpid(pid, 0)
        with open(out) as fh:
            found = json.load(fh)
        os.remove(out)
        self.on_map(found["reached"], found["took"])

    def pytest_runtestloop(self, session):
        if self.map_tests:
            self._map()
        running: dict[int, tuple[str, float, float]] = {}  # pid -> (mutant, start, wall limit)
        stopped: set[int] = set()  # workers stopped by the wall clock
        queue = list(self.todo)
        while queue or running:
            while queue and len(running) < self.workers:
                name = queue.pop(0)
                items = [self.items[t] for t in _covering(self.stats, name, self.killers) if t in self.items]
                if not items:
                    self.on_verdict(name, 33)  # no test reaches it
                    continue
                cpu = math.ceil((sum(self.stats["duration_by_test"].get(i.nodeid, 0.0) for i in items) + 1) * 10)
                pid = os.fork()
                if pid == 0:
                    self._work(name, items, cpu, [self.stats["duration_by_test"].get(i.nodeid, 0.0) * 10 + PER_TEST
                                                  for i in items])
                running[pid] = (name, time.monotonic(), cpu * WALL_PER_CPU)
            pid, status = os.waitpid(-1, os.WNOHANG)
            if pid == 0:
                now = time.monotonic()
                for p, (name, start, wall) in list(running.items()):
                    if now - start > wall and p not in stopped:
                        os.kill(p, 9)
                        stopped.add(p)
                time.sleep(0.05)
                continue
            name, _, _ = running.pop(pid)
            code = os.waitstatus_to_exitcode(status)
            self._learn(name, pid)
            if pid in stopped:  # out of wall time, not CPU time: a starved worker looks the same as a hang
                stopped.discard(pid)
                self.on_verdict(name, None)
                continue
            self.on_verdict(name, code if code in (KILLED, SURVIVED) else TIMEOUT)
        return True

    def _learn(self, name: str, pid: int) -> None:
        """Put the test that caught ``name`` (the worker left its id in a file) first for its function."""
        path = _killer_file(pid)
        if not os.path.exists(path):
            return
        with open(path) as fh:
            test = fh.read()
        os.remove(path)
        function = name.rsplit("__mutmut_", 1)[0]
        self.killers[function] = [test] + [t for t in self.killers.get(function, []) if t != test]
        counts = self.killers.setdefault(function.rsplit(".", 1)[0], {})
        counts[test] = counts.get(test, 0) + 1

    @staticmethod
    def _work(name: str, items: list, cpu: int, limits: list[float]) -> None:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
        os.environ["MUTANT_UNDER_TEST"] = name
        # a hang shows in its first test: each test gets its own CPU limit, so a mutant that loops forever is a
        # timeout in seconds, not after the whole covering set's limit (minutes)
        signal.signal(signal.SIGPROF, lambda *_: os._exit(TIMEOUT))
        try:
            for i, item in enumerate(items):
                signal.setitimer(signal.ITIMER_PROF, limits[i])
                reports = runtestprotocol(item, nextitem=items[i + 1] if i + 1 < len(items) else None, log=False)
                if any(r.failed for r in reports):
                    with open(_killer_file(os.getpid()), "w") as fh:
                        fh.write(item.nodeid)
                    os._exit(KILLED)
        except BaseException:  # noqa: BLE001 - the mutant broke the run itself: pytest would report an error
            os._exit(KILLED)
        os._exit(SURVIVED)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("names", nargs="*", help="mutants to re-check (default: every unchecked one)")
    ap.add_argument("--mutants", default=os.path.join(ROOT, "mutants"))
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--verify", type=int, metavar="N", help="re-check N mutants mutmut decided; write nothing")
    ap.add_argument("--stats", nargs="+", metavar="PREFIX", default=(),
                    help="first map the functions these tests reach (test ids starting with a prefix)")
    args = ap.parse_args(argv)
    folder = os.path.abspath(args.mutants)
    stats_path = os.path.join(folder, "mutmut-stats.json")
    with open(stats_path) as fh:
        stats = json.load(fh)
    records = {os.path.join(folder, *path.split("/")) + ".meta": m for path, m in metas(folder).items()}
    meta_of = {name: path for path, m in records.items() for name in m["exit_code_by_key"]}
    code_of = {name: records[path]["exit_code_by_key"][name] for name, path in meta_of.items()}
    if args.verify:
        pick = random.Random(20)
        todo = []
        for verdict in (SURVIVED, KILLED):  # survivors are few: up to half of the sample, the rest killed
            those = sorted(n for n, c in code_of.items() if c == verdict)
            todo += pick.sample(those, min(len(those), args.verify // 2 if verdict == SURVIVED else
                                           args.verify - len(todo)))
    else:
        todo = args.names or ([] if args.stats else [n for n, c in code_of.items() if c is None])
    todo.sort(key=lambda n: sum(stats["duration_by_test"].get(t, 0.0) for t in _covering(stats, n)))
    done, differ, started = [0], [], time.monotonic()

    def on_verdict(name: str, code: int) -> None:
        done[0] += 1
        if args.verify:
            if code != code_of[name]:
                differ.append((name, code_of[name], code))
        else:
            records[meta_of[name]]["exit_code_by_key"][name] = code
            with open(meta_of[name], "w") as fh:
                json.dump(records[meta_of[name]], fh, indent=4)
        if done[0] % 10 == 0 or done[0] == len(todo):
            print(f"{done[0]}/{len(todo)} checked in {time.monotonic() - started:.0f} s", file=sys.__stdout__,
                  flush=True)

    def on_map(reached: dict, took: dict) -> None:
        with open(stats_path) as fh:  # afresh: another run may have mapped other tests since this one started
            on_disk = json.load(fh)
        for record in (stats, on_disk):
            covered = record["tests_by_mangled_function_name"]
            for test, functions in reached.items():
                for function in functions:
                    covered[function] = sorted(set(covered.get(function, [])) | {test})
            record["duration_by_test"].update(took)
        with open(stats_path + ".new", "w") as fh:
            json.dump(on_disk, fh, indent=4)
        os.replace(stats_path + ".new", stats_path)
        print(f"mapped {len(reached)} tests to the functions they reach", file=sys.__stdout__, flush=True)

    cfg = tomllib.load(open(os.path.join(ROOT, "pyproject.toml"), "rb"))["tool"]["mutmut"]
    os.environ["MUTANT_UNDER_TEST"] = ""
    os.chdir(folder)
    sys.path.insert(0, folder)  # the mutated ctxcore, as mutmut's own runs import it
    pytest.main(["--rootdir=.", "-q"] + cfg["pytest_add_cli_args"]
                + cfg["pytest_add_cli_args_test_selection"],
                plugins=[_Checker(todo, stats, args.workers, on_verdict, args.stats, on_map)])
    if done[0] != len(todo):
        print(f"only {done[0]} of {len(todo)} mutants were checked: the test session did not start (see above)")
        return 1
    if args.verify:
        print(f"{len(todo) - len(differ)} of {len(todo)} verdicts agree with mutmut's")
        for name, theirs, ours in differ:
            print(f"  {name}: mutmut {theirs}, here {ours}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
