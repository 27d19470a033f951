"""Where the batches of a replay run: in this process, on a local process pool, or on Dask.

Each engine maps one module-level function over batches and yields the results **in the batches'
order**, whatever order they finish in, with a bounded number of batches in flight (so memory does
not grow with the log). The function and its arguments are pickled by reference: it must live in an
importable module (worker processes are spawned; Dask workers may be other machines, which need
ctxcore installed). Nothing here knows what a run is.
"""

from __future__ import annotations

import hashlib
import importlib.util
import io
import os
import tempfile
import zipfile
from collections import deque
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path
from typing import Callable, Iterable, Iterator, Optional

from ..errors import InputError

ENGINES = ("local", "inprocess", "dask")


def default_workers() -> int:
    """One worker per core this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def run(fn: Callable, batches: Iterable[list], args: tuple = (), *, engine: str = "local",
        workers: Optional[int] = None, scheduler: Optional[str] = None) -> Iterator:
    """``fn(batch, *args)`` for every batch, yielded in order."""
    if engine not in ENGINES:
        raise InputError(f"unknown engine {engine!r}; choose one of {', '.join(ENGINES)}", field="engine")
    workers = workers or default_workers()
    if workers < 1:
        raise InputError("needs at least one worker", field="workers")
    if scheduler and engine != "dask":
        raise InputError("--scheduler is for the dask engine (add --engine dask)", field="scheduler")
    if engine == "inprocess":
        return (fn(batch, *args) for batch in batches)
    if engine == "local":
        return _pool(fn, batches, args, workers)
    return _dask(fn, batches, args, workers, scheduler)


def _ordered(submit: Callable, result: Callable, batches: Iterable[list], window: int) -> Iterator:
    """Keep ``window`` batches in flight; yield their results first in, first out."""
    flight: deque = deque()
    for batch in batches:
        flight.append(submit(batch))
        if len(flight) >= window:
            yield result(flight.popleft())
    while flight:
        yield result(flight.popleft())


def _pool(fn, batches, args, workers: int) -> Iterator:
    # spawn: a fresh interpreter per worker (no forked locks or threads of the parent, e.g. Streamlit's)
    with ProcessPoolExecutor(max_workers=workers, mp_context=get_context("spawn")) as pool:
        yield from _ordered(lambda b: pool.submit(fn, b, *args), lambda f: f.result(), batches, 2 * workers + 1)


def _dask(fn, batches, args, workers: int, scheduler: Optional[str]) -> Iterator:
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        raise InputError("the dask engine needs Dask distributed: pip install -r requirements-dask.txt",
                         field="engine") from None
    cluster = None
    if scheduler:
        client = Client(scheduler)
        ship_ctxcore(client, scheduler)
    else:
        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None)
        client = Client(cluster)
    try:
        window = 2 * max(workers, len(client.scheduler_info().get("workers", {}))) + 1
        yield from _ordered(lambda b: client.submit(fn, b, *args, pure=False), lambda f: f.result(), batches,
                            window)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


PACKAGE = Path(__file__).resolve().parents[1]  # the ctxcore package this process runs
_NO_CTXCORE = "install ctxcore on the workers: pip install ctxcore"


def ship_ctxcore(client, scheduler: str) -> None:
    """Make ctxcore importable on a running cluster that lacks it, with Dask's own ``upload_file``.

    Tasks name ``replay_batch`` by reference, so the scheduler (which unpickles the task graph) and
    every worker must import ctxcore; a cluster started elsewhere usually cannot. A zip of this
    process's package goes to the scheduler and the workers (and to workers that join later)."""
    if _importable(client):
        return
    try:
        data = package_zip()
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, f"ctxcore-{hashlib.sha256(data).hexdigest()[:12]}.zip")
            Path(path).write_bytes(data)
            client.upload_file(path, load=True)
    except Exception as err:  # noqa: BLE001 - any failure of the upload is the same advice
        raise InputError(f"its workers cannot import ctxcore and uploading it failed "
                         f"({type(err).__name__}: {str(err)[:200]}); {_NO_CTXCORE}", source=scheduler) from None
    if not _importable(client):
        raise InputError(f"its workers cannot import ctxcore, even after uploading it; {_NO_CTXCORE}",
                         source=scheduler)


def _importable(client) -> bool:
    """Can the scheduler and every worker import ctxcore? (``find_spec`` is pickled by reference: the
    question itself needs nothing of ours on the other side.)"""
    found = client.run(importlib.util.find_spec, "ctxcore")
    return client.run_on_scheduler(importlib.util.find_spec, "ctxcore") is not None and \
        all(spec is not None for spec in found.values())


def package_zip() -> bytes:
    """The ctxcore package's Python files as a zip, byte for byte the same for the same sources (fixed
    times, sorted names), so its name (from its hash) is stable and a re-upload overwrites the same file."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for path in sorted(PACKAGE.rglob("*.py")):
            name = path.relative_to(PACKAGE.parent).as_posix()
            z.writestr(zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0)), path.read_bytes(),
                       zipfile.ZIP_DEFLATED)
    return buf.getvalue()
