"""A real Dask cluster for the tests and the Dask benchmark: a ``dask scheduler`` and ``dask worker``
processes started on 127.0.0.1, each in a process group of its own, and stopped with everything
they started (``Cluster.close``); ``comparable`` puts grading results in a form two runs can be
compared in, cell by cell.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from hub_helpers import free_ports

DASK = Path(sys.executable).with_name("dask")


class Cluster:
    """A scheduler and its workers, each in a process group of its own."""

    def __init__(self, tmp: Path):
        self.tmp = tmp                      # the workers' TMPDIR: their course copies end there
        self.port = free_ports(1)
        self.address = f"tcp://127.0.0.1:{self.port}"
        self.processes = {}
        self.start("scheduler", [str(DASK), "scheduler", "--host", "127.0.0.1", "--port", str(self.port),
                                 "--no-dashboard"])

    def start(self, name, cmd, env=None):
        env = {**(env or os.environ), "TMPDIR": str(self.tmp)}
        self.processes[name] = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                                start_new_session=True, env=env)

    def add_worker(self, name, env=None):
        self.start(name, [str(DASK), "worker", self.address, "--nthreads", "1", "--name", name,
                          "--no-dashboard", "--death-timeout", "60"], env)

    def kill(self, name):
        process = self.processes.pop(name)
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        process.wait()

    def workers(self) -> set[str]:
        from distributed import Client

        with Client(self.address, timeout=10) as client:
            return {w["name"] for w in client.scheduler_info()["workers"].values()}

    def wait_for(self, names: set[str], timeout=60):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if names <= self.workers():
                    return
            except OSError:
                pass
            time.sleep(0.5)
        raise RuntimeError(f"workers {names} did not join the scheduler")

    def close(self):
        for name in list(self.processes)[::-1]:
            self.kill(name)


def comparable(results) -> dict:
    """student -> (error, flags, every cell's id, score, points, status and reason)."""
    return {r.student: (r.error, sorted(r.flags),
                        [(c.grade_id, c.score, c.points, c.status, c.reason) for c in r.cells])
            for r in results}
