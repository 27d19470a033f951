"""The replay's engines on the real things, fast enough for the mutation run (issue #29): a spawned process pool
and an in-process Dask cluster (``LocalCluster(processes=False)``, a real scheduler and worker on Dask's ``inproc``
transport). What is held: how many batches are in flight, results in the batches' order, where a batch runs (a
spawned worker that ignores Ctrl-C, or this process), that a failed or abandoned replay runs no queued batch for
nothing, and each Dask failure as the one line a user reads. The clusters started elsewhere, without ctxcore, are
``tests/test_dask_cluster.py``'s (slow)."""

from __future__ import annotations

import hashlib
import io
import operator
import os
import signal
import sys
import time
import zipfile
from pathlib import Path

import pytest

from ctxcore.errors import InputError
from ctxcore.replay import engines
from test_dask_cluster import _cluster  # the slow file's way of starting a bare scheduler and workers

distributed = pytest.importorskip("distributed")

AS_IMPORTED = "as imported"
_MARK = AS_IMPORTED  # changed by a test in this process; a spawned worker imports this module afresh


def _where(batch):
    """Where a batch ran, as the worker sees it."""
    time.sleep(batch[0])
    return os.getpid(), signal.getsignal(signal.SIGINT) == signal.SIG_IGN, _MARK


def _slow_or_failing(batch):
    """Batch ``[0, path]`` fails at once; any other sleeps, then leaves a mark at ``path``."""
    delay, path = batch
    if delay == 0:
        raise ValueError("batch failed")
    time.sleep(delay)
    Path(path).write_text("ran")
    return path


def _pulled(batches, log):
    for b in batches:
        log.append(b)
        yield b


def _in_flight_at_first_result(**kw) -> int:
    log: list = []
    results = engines.run(len, _pulled([[i] for i in range(20)], log), **kw)
    assert next(results) == 1
    pulled = len(log)
    assert list(results) == [1] * 19
    return pulled


@pytest.mark.parametrize("workers, window", [(1, 3), (2, 5)])
def test_the_pool_reads_two_batches_per_worker_and_one_more_ahead(workers, window):
    assert _in_flight_at_first_result(engine="local", workers=workers) == window


def _once_written(batch):
    """Batch ``[path, first]``: waits (a minute at most) until ``first`` exists, if given, then writes ``path``."""
    path, first = batch
    deadline = time.monotonic() + 60
    while first and not os.path.exists(first) and time.monotonic() < deadline:
        time.sleep(0.01)
    Path(path).write_text("after" if first and os.path.exists(first) else "alone")
    return path


def test_results_come_in_the_batches_order_whichever_finishes_first(tmp_path):
    # the first batch ends only once the second has (not by timing: spawned workers start at their own pace)
    slow, fast = str(tmp_path / "slow"), str(tmp_path / "fast")
    assert list(engines.run(_once_written, [[slow, fast], [fast, None]], engine="local", workers=2)) == [slow, fast]
    assert (Path(slow).read_text(), Path(fast).read_text()) == ("after", "alone")


def test_each_batch_runs_in_a_spawned_worker_that_ignores_ctrl_c(monkeypatch):
    monkeypatch.setattr(sys.modules[__name__], "_MARK", "changed in the parent")
    # a process started in the background inherits SIGINT ignored, and so would its workers, set up or not
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        got = list(engines.run(_where, [[0.2]] * 6, engine="local", workers=1))
    finally:
        signal.signal(signal.SIGINT, before)
    pids = {pid for pid, _, _ in got}
    assert len(pids) == 1 and os.getpid() not in pids  # one worker, and not this process
    assert {(ignored, mark) for _, ignored, mark in got} == {(True, AS_IMPORTED)}


def test_the_inprocess_engine_runs_each_batch_here():
    here = (os.getpid(), signal.getsignal(signal.SIGINT) == signal.SIG_IGN, AS_IMPORTED)  # this process, as it is
    assert list(engines.run(_where, [[0]], engine="inprocess")) == [here]


def test_a_worker_ignores_ctrl_c_once_set_up():
    before = signal.getsignal(signal.SIGINT)
    try:
        engines._ignore_sigint()
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, before)


def test_a_failed_batch_ends_the_workers_before_the_queued_batches_run(tmp_path):
    marks = [tmp_path / f"{i}.txt" for i in range(3)]
    with pytest.raises(ValueError, match="batch failed"):
        list(engines.run(_slow_or_failing, [[0, str(marks[0])], [1.0, str(marks[1])], [1.0, str(marks[2])]],
                         engine="local", workers=1))
    time.sleep(1.5)
    assert [m.exists() for m in marks] == [False, False, False]


def test_a_replay_stopped_by_its_reader_runs_no_queued_batch(tmp_path):
    marks = [tmp_path / f"{i}.txt" for i in range(4)]
    results = engines.run(_slow_or_failing, [[0.05, str(marks[0])], *[[1.0, str(m)] for m in marks[1:]]],
                          engine="local", workers=1)
    assert next(results) == str(marks[0])
    results.close()
    time.sleep(1.5)
    assert [m.exists() for m in marks] == [True, False, False, False]


# --- Dask --------------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def cluster():
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as c:
        yield c


def test_dask_hands_each_batch_the_arguments_and_keeps_the_order(cluster):
    got = engines.run(operator.add, [[1], [2, 3], []], ([9],), engine="dask", workers=1,
                      scheduler=cluster.scheduler_address, connect_timeout=5)
    assert list(got) == [[1, 9], [2, 3, 9], [9]]


@pytest.mark.parametrize("workers, window", [(1, 3), (3, 7)])
def test_dask_reads_two_batches_per_worker_and_one_more_ahead(cluster, workers, window):
    assert _in_flight_at_first_result(engine="dask", workers=workers, scheduler=cluster.scheduler_address) == window


def test_dask_counts_the_clusters_own_workers_when_it_has_more():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as two:
        two.wait_for_workers(2)
        assert _in_flight_at_first_result(engine="dask", workers=1, scheduler=two.scheduler_address) == 5


def _dask_worker(batch):
    """This process, its threads, and the cluster's workers, as a Dask worker sees them."""
    me = distributed.get_worker()
    return os.getpid(), me.state.nthreads, len(distributed.get_client().scheduler_info()["workers"])


def _fresh(batch):
    return os.urandom(8).hex()


@pytest.mark.parametrize("workers", [1, 2])
def test_without_a_scheduler_dask_starts_worker_processes_of_one_thread_each(workers):
    got = list(engines.run(_dask_worker, [[0]] * 3, engine="dask", workers=workers))
    assert {(pid == os.getpid(), threads, n) for pid, threads, n in got} == {(False, 1, workers)}


def test_a_local_dask_cluster_reads_two_batches_per_worker_and_one_more_ahead():
    assert _in_flight_at_first_result(engine="dask", workers=1) == 3


def test_a_local_dask_cluster_is_named_when_its_workers_cannot_import_the_batch_function():
    with pytest.raises(InputError) as err:
        list(engines.run(_unimportable, [[1]], engine="dask", workers=1))
    assert (err.value.message.split(" (")[0], err.value.source) == (
        "the Dask workers cannot import ctxcore_nowhere", "the local Dask cluster")


def test_the_same_batch_twice_runs_twice(cluster):
    first, second = engines.run(_fresh, [[1], [1]], engine="dask", scheduler=cluster.scheduler_address)
    assert first != second  # Dask would hand a pure task's result to its twin without running it


@pytest.mark.timeout(60)  # the timeout not handed on, this waits for a worker forever
def test_a_scheduler_no_worker_joins_is_named_within_the_connect_timeout():
    with distributed.LocalCluster(n_workers=0, processes=False, dashboard_address=None) as empty:
        with pytest.raises(InputError) as err:
            list(engines.run(len, [[1]], engine="dask", scheduler=empty.scheduler_address, connect_timeout=0.25))
    assert (err.value.message, err.value.source) == (
        "no Dask worker joined within 0.25 s: start one (dask worker ADDRESS)", empty.scheduler_address)


@pytest.mark.parametrize("address, message", [
    ("nonsense", "not a Dask scheduler address (missing port number in address 'nonsense'); give tcp://HOST:PORT"),
    ("tcp://127.0.0.1:1", "cannot reach a Dask scheduler there within 0.5 s: is it running, and is the address "
                          "right? (--connect-timeout waits longer)"),
])
def test_a_scheduler_that_cannot_be_reached_is_one_line_naming_it(address, message):
    with pytest.raises(InputError) as err:
        list(engines.run(len, [[1]], engine="dask", scheduler=address, connect_timeout=0.5))
    assert (err.value.message, err.value.source) == (message, address)


def test_a_client_reaches_the_scheduler_named(cluster):
    client = engines._connect(distributed.Client, cluster.scheduler_address, 5)
    try:
        assert client.scheduler.address == cluster.scheduler_address
    finally:
        client.close()


def test_a_cluster_no_worker_joins_is_one_line():
    with distributed.LocalCluster(n_workers=0, processes=False, dashboard_address=None) as empty, \
            distributed.Client(empty) as client:
        with pytest.raises(InputError) as err:
            engines._wait_for_workers(client, "the cluster", 0.25)
    assert (err.value.message, err.value.source) == (
        "no Dask worker joined within 0.25 s: start one (dask worker ADDRESS)", "the cluster")


def _unimportable(batch):
    return batch


_unimportable.__module__ = "ctxcore_nowhere"


def test_workers_that_cannot_import_the_batch_function_are_one_line(cluster):
    with distributed.Client(cluster) as client:
        engines._check_imports(client, operator.add, "here")  # importable: nothing said
        with pytest.raises(InputError) as err:
            engines._check_imports(client, _unimportable, "here")
    assert (err.value.message, err.value.source) == (
        "the Dask workers cannot import ctxcore_nowhere (No module named 'ctxcore_nowhere'): install ctxcore on "
        "the workers (pip install ctxcore, the same version as here)", "here")


def test_a_cluster_that_imports_ctxcore_is_sent_nothing(cluster):
    with distributed.Client(cluster) as client:
        assert engines._importable(client) is True
        engines.ship_ctxcore(client, cluster.scheduler_address)
        files = client.run(lambda dask_worker: sorted(os.listdir(dask_worker.local_directory)))
    assert [f for names in files.values() for f in names if f.endswith(".zip")] == []


def test_without_distributed_the_dask_engine_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "distributed", None)  # what an environment without it gives `import`
    with pytest.raises(InputError) as err:
        list(engines.run(len, [[1]], engine="dask"))
    assert (err.value.message, err.value.field) == (
        "the dask engine needs Dask distributed: pip install -r requirements-dask.txt", "engine")


def test_the_package_zip_is_every_python_file_byte_for_byte_and_the_same_each_time():
    data = engines.package_zip()
    assert engines.package_zip() == data
    files = sorted(engines.PACKAGE.rglob("*.py"))
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        infos = z.infolist()
        assert [i.filename for i in infos] == [p.relative_to(engines.PACKAGE.parent).as_posix() for p in files]
        assert infos[0].filename == "ctxcore/__init__.py"
        assert {(i.date_time, i.compress_type) for i in infos} == {((1980, 1, 1, 0, 0, 0), zipfile.ZIP_DEFLATED)}
        assert all(z.read(i) == p.read_bytes() for i, p in zip(infos, files))


# --- a cluster started elsewhere, without ctxcore: shipped to it (a scheduler and a worker process, bare) --------

def test_a_cluster_without_ctxcore_is_sent_it_once_and_then_imports_it(tmp_path, monkeypatch):
    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)
    with _cluster(tmp_path, workers=1) as address, distributed.Client(address, timeout=30) as client:
        assert engines._importable(client) is False
        engines.ship_ctxcore(client, address)
        assert engines._importable(client) is True
        files = client.run(lambda dask_worker: sorted(os.listdir(dask_worker.local_directory)))
    name = f"ctxcore-{hashlib.sha256(engines.package_zip()).hexdigest()[:12]}.zip"
    assert [f for names in files.values() for f in names if f.endswith(".zip")] == [name]
    assert os.listdir(here) == []  # the zip was made in a temporary folder, not where the replay runs


def test_workers_that_cannot_import_the_upload_are_one_line(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text("import sys, zipimport\nsys.path_hooks[:] = [h for h in sys.path_hooks "
                                           "if h is not zipimport.zipimporter]\n", encoding="utf-8")
    with _cluster(tmp_path, workers=1, env={"PYTHONPATH": str(site)}) as address, \
            distributed.Client(address, timeout=30) as client:
        with pytest.raises(InputError) as err:
            engines.ship_ctxcore(client, address)
    assert (err.value.message, err.value.source) == (
        "its workers cannot import ctxcore, even after uploading it; install ctxcore on the workers: pip install "
        "ctxcore", address)
