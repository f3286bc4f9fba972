"""The Dask executor against a real cluster: a scheduler and two workers
started here as separate processes on loopback."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator

import pytest

import tessera
from tessera.sweeps import DaskExecutor, run_sweep

distributed = pytest.importorskip("distributed")

pytestmark = [
    # distributed's own shutdown chatter (closed comms, lost heartbeats) is not ours to fail on.
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    pytest.mark.filterwarnings("ignore::ResourceWarning"),
    pytest.mark.filterwarnings("ignore::UserWarning"),
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Cluster:
    def __init__(self, tmp: Path, workers: int) -> None:
        self.port = _free_port()
        self.address = f"tcp://127.0.0.1:{self.port}"
        env = dict(os.environ, DASK_DISTRIBUTED__WORKER__DAEMON="False", PYTHONWARNINGS="ignore")
        log = open(tmp / "dask.log", "w")
        self.procs: list[subprocess.Popen[bytes]] = []
        self.scheduler = subprocess.Popen(
            [sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1", "--port", str(self.port),
             "--no-dashboard"], stdout=log, stderr=subprocess.STDOUT, env=env)
        self.workers = []
        for i in range(workers):
            # --no-nanny: killing the worker process really loses the worker (a nanny would restart it).
            w = subprocess.Popen(
                [sys.executable, "-m", "distributed.cli.dask_worker", self.address, "--nthreads", "1",
                 "--no-nanny", "--no-dashboard", "--name", f"w{i}", "--local-directory", str(tmp / f"w{i}")],
                stdout=log, stderr=subprocess.STDOUT, env=env)
            self.workers.append(w)
        self.procs = [self.scheduler, *self.workers]
        self._wait(workers)

    def _wait(self, n: int) -> None:
        from distributed import Client

        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                with Client(self.address, timeout=5, set_as_default=False) as c:
                    c.wait_for_workers(n, timeout=50)
                    return
            except (OSError, TimeoutError):
                time.sleep(0.5)
        raise RuntimeError("the test Dask cluster did not come up")

    def close(self) -> None:
        for p in reversed(self.procs):
            if p.poll() is None:
                p.terminate()
        for p in self.procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    c = Cluster(tmp_path, workers=2)
    try:
        yield c
    finally:
        c.close()


def grid(n_seeds: int, accesses: int = 20_000) -> dict:
    return {"name": "dask", "machine": "tlb_only",
            "source": {"synthetic": {"pattern": "uniform", "accesses": accesses, "footprint": "256MiB"}},
            "axes": {"mmu.tlb.l2_tlb.entries": [256, 1024], "seed": list(range(n_seeds))}}


def stored(store: Path) -> dict[str, str]:
    import sqlite3

    with sqlite3.connect(store) as c:
        rows = c.execute("SELECT run_id, result FROM runs").fetchall()
    ids = [r for r, _ in rows]
    assert len(ids) == len(set(ids))
    return dict(rows)


def test_dask_cluster_matches_local_executor(cluster: Cluster, tmp_path: Path):
    spec = grid(3)
    dk = tessera.sweep(spec, store=tmp_path / "dask.sqlite", executor=cluster.address)
    lo = tessera.sweep(spec, store=tmp_path / "local.sqlite", jobs=2)
    assert dk.attrs["sweep"]["computed"] == 6 and dk.attrs["sweep"]["failed"] == 0
    assert "Dask" in dk.attrs["sweep"]["executor"]
    assert stored(tmp_path / "dask.sqlite") == stored(tmp_path / "local.sqlite")
    # Both workers took part.
    import sqlite3

    with sqlite3.connect(tmp_path / "dask.sqlite") as c:
        assert len({h for (h,) in c.execute("SELECT host FROM runs")}) == 2


def test_killing_a_worker_mid_sweep_still_stores_every_run_once(cluster: Cluster, tmp_path: Path):
    spec = grid(6, accesses=300_000)  # 12 runs of a few tenths of a second
    store = tmp_path / "dask.sqlite"
    killed = []

    def kill_one(done: int, total: int, failed: int) -> None:
        if done == 2 and not killed:
            victim = cluster.workers[0]
            victim.send_signal(signal.SIGKILL)
            victim.wait(timeout=10)
            killed.append(victim.pid)

    rep = run_sweep(spec, store=store, executor=DaskExecutor(cluster.address), progress=kill_one)
    assert killed, "the worker was never killed"
    assert (rep.computed, rep.failed) == (12, 0), rep.failures
    got = stored(store)
    assert len(got) == 12
    # And every result is the deterministic one.
    ref = tessera.sweep(spec, store=tmp_path / "local.sqlite", jobs=2)
    assert len(ref) == 12
    assert got == stored(tmp_path / "local.sqlite")


def test_unreachable_scheduler_is_a_clear_error(tmp_path: Path):
    addr = f"tcp://127.0.0.1:{_free_port()}"
    with pytest.raises(tessera.TesseraError, match="cannot reach the Dask scheduler"):
        run_sweep(grid(1), store=tmp_path / "s.sqlite", executor=DaskExecutor(addr, timeout=2))
