"""Replay on a real Dask cluster (issue #31): a ``dask scheduler`` and two ``dask worker`` processes started
the way an operator starts them, on machines where ctxcore is not installed (their working directory is a
temporary one and PYTHONPATH is unset), so the replay must ship ctxcore to them itself; the rows must be the
local pool's, row for row."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Optional

import pytest

from conftest import ROOT, free_port

SAMPLE = Path(ROOT) / "sample_data" / "replay_log.jsonl"
DASK = str(Path(sys.executable).with_name("dask"))

pytestmark = pytest.mark.slow


def _bare_env() -> dict:
    """The environment of a machine without ctxcore: no PYTHONPATH pointing at this checkout."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if env.get("MUTANT_UNDER_TEST") == "stats":  # mutmut's coverage run: its hit log is the test process's, and a
        env["MUTANT_UNDER_TEST"] = ""  # worker elsewhere, without mutmut's settings, fails to write one
    return env


def _start(args: list[str], cwd: Path, log: Path, env: Optional[dict] = None) -> subprocess.Popen:
    out = open(log, "wb")
    try:
        return subprocess.Popen([DASK, *args], cwd=cwd, env={**_bare_env(), **(env or {})}, stdout=out,
                                stderr=subprocess.STDOUT)
    finally:
        out.close()


def _stop(procs: list[subprocess.Popen]) -> None:
    for p in procs:
        if p.poll() is None:
            p.terminate()
    for p in procs:
        try:
            p.wait(timeout=15)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(timeout=5)


def _wait_for_workers(address: str, n: int) -> None:
    from distributed import Client

    with Client(address, timeout=30) as client:
        client.wait_for_workers(n, timeout=60)
        where = client.run(importlib.util.find_spec, "ctxcore")
    assert len(where) == n and set(where.values()) == {None}, where  # the workers really lack ctxcore


def _replay(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ctxcore", "replay", str(SAMPLE), "--budget", "250",
                           "--format", "json", *args], cwd=ROOT, capture_output=True, text=True, timeout=180)


@contextmanager
def _cluster(tmp_path: Path, workers: int = 2, env: Optional[dict] = None):
    """A scheduler and single-threaded workers on 127.0.0.1, none of which can import ctxcore."""
    pytest.importorskip("distributed")
    if not Path(DASK).exists():
        pytest.skip(f"no dask command beside {sys.executable}")
    bare = tmp_path / "node"
    bare.mkdir()
    port = free_port()
    address = f"tcp://127.0.0.1:{port}"
    procs = [_start(["scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard"], bare,
                    tmp_path / "scheduler.log")]
    try:
        for i in range(workers):
            procs.append(_start(["worker", address, "--host", "127.0.0.1", "--nworkers", "1", "--nthreads", "1",
                                 "--no-dashboard", "--local-directory", str(bare / f"w{i}")], bare,
                                tmp_path / f"worker{i}.log", env))
        _wait_for_workers(address, workers)
        yield address
    finally:
        _stop(procs[1:])
        _stop(procs[:1])


def test_a_replay_on_workers_without_ctxcore_ships_it_and_gives_the_local_pools_rows(tmp_path):
    started = time.monotonic()
    with _cluster(tmp_path) as address:
        there = _replay("--engine", "dask", "--scheduler", address, "--out", str(tmp_path / "dask"))
    assert there.returncode == 0, there.stderr
    here = _replay("--engine", "local", "--workers", "2", "--out", str(tmp_path / "local"))
    assert here.returncode == 0, here.stderr
    rows = (tmp_path / "dask" / "runs.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(rows) == 30
    assert rows == (tmp_path / "local" / "runs.jsonl").read_text(encoding="utf-8").splitlines()
    report = json.loads(there.stdout)
    assert report == json.loads(here.stdout)
    assert (report["runs"], report["regression_count"]) == (30, 3)
    assert time.monotonic() - started < 300  # a hang guard, not a speed claim


def test_workers_that_cannot_import_the_uploaded_package_get_one_line_naming_the_fix(tmp_path):
    """A worker whose Python cannot import from a zip (its zip importer removed at start-up) stands for any
    worker the upload cannot reach: one line, exit 2, no traceback."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text("import sys, zipimport\n"
                                           "sys.path_hooks[:] = [h for h in sys.path_hooks if h is not "
                                           "zipimport.zipimporter]\n", encoding="utf-8")
    with _cluster(tmp_path, workers=1, env={"PYTHONPATH": str(site)}) as address:
        got = _replay("--engine", "dask", "--scheduler", address, "--out", str(tmp_path / "out"))
    assert got.returncode == 2, got.stderr
    assert got.stderr == (f"error: {address}: its workers cannot import ctxcore, even after uploading it; "
                          "install ctxcore on the workers: pip install ctxcore\n")
