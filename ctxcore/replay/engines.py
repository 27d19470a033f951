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
import signal
import tempfile
import zipfile
from collections import deque
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path
from typing import Callable, Iterable, Iterator, Optional

from ..errors import InputError

ENGINES = ("local", "inprocess", "dask")
CONNECT_TIMEOUT = 10.0  # seconds to reach a Dask scheduler, and for a first worker to be there (--connect-timeout)


def default_workers() -> int:
    """One worker per core this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def run(fn: Callable, batches: Iterable[list], args: tuple = (), *, engine: str = "local",
        workers: Optional[int] = None, scheduler: Optional[str] = None,
        connect_timeout: float = CONNECT_TIMEOUT) -> Iterator:
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
    return _dask(fn, batches, args, workers, scheduler, connect_timeout)


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
    """The batches on a local process pool. Stopped early (Ctrl-C, a failed batch, the consumer closing the
    generator), the workers are ended at once: no queued batch is run for nothing, and no worker prints a
    traceback (workers ignore SIGINT; the parent, which a terminal's Ctrl-C reaches too, ends them)."""
    # spawn: a fresh interpreter per worker (no forked locks or threads of the parent, e.g. Streamlit's)
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=get_context("spawn"), initializer=_ignore_sigint)
    try:
        yield from _ordered(lambda b: pool.submit(fn, b, *args), lambda f: f.result(), batches, 2 * workers + 1)
    except BaseException:
        _end(pool)
        raise
    pool.shutdown()


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _end(pool: ProcessPoolExecutor) -> None:
    """End the pool's workers now and drop the batches queued for them (Python 3.14 says so in public; before,
    the pool's own list of its processes)."""
    terminate = getattr(pool, "terminate_workers", None)
    if terminate is not None:
        terminate()
        return
    for process in list((getattr(pool, "_processes", None) or {}).values()):
        process.terminate()
    pool.shutdown(wait=True, cancel_futures=True)


def _dask(fn, batches, args, workers: int, scheduler: Optional[str], timeout: float) -> Iterator:
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        raise InputError("the dask engine needs Dask distributed: pip install -r requirements-dask.txt",
                         field="engine") from None
    cluster = None
    if scheduler:
        client = _connect(Client, scheduler, timeout)
    else:
        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None)
        client = Client(cluster)
    try:
        where = scheduler or "the local Dask cluster"
        _wait_for_workers(client, where, timeout)
        if scheduler:  # a cluster started elsewhere may lack ctxcore: ship it once a worker is there to ask
            ship_ctxcore(client, scheduler)
        _check_imports(client, fn, where)
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
    try:
        found = client.run(importlib.util.find_spec, "ctxcore")
        return client.run_on_scheduler(importlib.util.find_spec, "ctxcore") is not None and \
            all(spec is not None for spec in found.values())
    except ImportError:  # an import hook on the other side refused the name itself
        return False


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


def _connect(client_class, scheduler: str, timeout: float):
    """A client of the scheduler at ``scheduler``; a malformed or unreachable address is one line."""
    try:
        return client_class(scheduler, timeout=timeout)
    except (ValueError, TypeError) as err:
        raise InputError(f"not a Dask scheduler address ({err}); give tcp://HOST:PORT", source=scheduler) from None
    except OSError:
        raise InputError(f"cannot reach a Dask scheduler there within {timeout:g} s: is it running, and is the "
                         "address right? (--connect-timeout waits longer)", source=scheduler) from None


def _wait_for_workers(client, where: str, timeout: float) -> None:
    """At least one worker, or one line saying none joined."""
    try:
        client.wait_for_workers(1, timeout=timeout)
    except (OSError, TimeoutError):
        raise InputError(f"no Dask worker joined within {timeout:g} s: start one (dask worker ADDRESS)",
                         source=where) from None


def _check_imports(client, fn: Callable, where: str) -> None:
    """Every worker can import the module of ``fn``: a worker that cannot fails to unpickle the task, and its
    result would never come."""
    try:
        client.run(exec, f"import {fn.__module__}")  # a builtin: it travels by name, whatever the worker has
    except ImportError as err:
        raise InputError(f"the Dask workers cannot import {fn.__module__} ({err}): install ctxcore on the "
                         "workers (pip install ctxcore, the same version as here)", source=where) from None
