"""Running a notebook's code cells one by one in a (sandboxed) kernel, surviving what cells do.

:func:`run_cells` executes code with a per-cell and a whole-run time limit and reports, for every
cell, what happened: ``ok``, ``error`` (with the exception name), ``timeout`` or ``died`` (the
kernel process ended: ``os._exit``, a crash, the memory limit). After a timeout or a death the
kernel is restarted and the cells that had succeeded are run again, so later cells still run.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field

import nbformat
from jupyter_client import AsyncKernelManager
from jupyter_core.utils import run_sync
from nbclient import NotebookClient
from nbclient.exceptions import CellTimeoutError, DeadKernelError

from attention_course import paths
from attention_course_instructor.grading.hardened import sandbox


@dataclass(frozen=True)
class Limits:
    cell_seconds: float = 120.0        # one cell
    run_seconds: float = 600.0         # every cell of one submission, restarts included
    memory_mb: int = 6144              # address space of the kernel process
    startup_seconds: float = 60.0


@dataclass
class CellOutcome:
    status: str                        # ok | error | timeout | died | skipped
    error: str = ""                    # exception class name, for status == "error"
    outputs: list = field(default_factory=list)


class SandboxedKernelManager(AsyncKernelManager):
    """A kernel manager whose kernel command runs inside :mod:`sandbox` (unless told not to)."""

    sandbox_private: str = ""
    sandbox_memory_mb: int = 0
    use_sandbox: bool = True

    def format_kernel_cmd(self, extra_arguments=None):
        cmd = super().format_kernel_cmd(extra_arguments)
        cmd[0] = sys.executable if cmd[0] in ("python", "python3") else cmd[0]
        if not self.use_sandbox:
            return cmd
        return sandbox.wrap(cmd, self.sandbox_private, str(paths.PACKAGE), self.sandbox_memory_mb)

    def write_connection_file(self, **kwargs):
        super().write_connection_file(**kwargs)
        os.chmod(self.connection_file, 0o644)          # the kernel may run as another user


def kernel_environment(home: str) -> dict:
    """A clean environment for the kernel: no grading variables, nothing of the grader's own."""
    keep = ("PATH", "LANG", "LC_ALL", "PYTHONHASHSEED", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
    env = {k: v for k, v in os.environ.items() if k in keep}
    env.setdefault("OMP_NUM_THREADS", "1")      # probes are small; parallel graders share the cores
    env.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    env.update(HOME=home, IPYTHONDIR=os.path.join(home, ".ipython"), MPLCONFIGDIR=home,
               JUPYTER_RUNTIME_DIR=home, MPLBACKEND="agg", PYDEVD_DISABLE_FILE_VALIDATION="1")
    return env


class CellRunner:
    """A kernel for one submission; :meth:`run` executes code cells and never raises for them."""

    def __init__(self, limits: Limits, use_sandbox: bool = True):
        self.limits = limits
        self.workdir = tempfile.mkdtemp(prefix="course-grading-")
        if use_sandbox:
            sandbox.prepare_private(self.workdir)
        self.use_sandbox = use_sandbox
        self.client = None

    def _start(self):
        km = SandboxedKernelManager(kernel_name="python3", transport="ipc",
                                    ip=os.path.join(self.workdir, "kernel"))
        km.connection_file = os.path.join(self.workdir, "connection.json")
        km.sandbox_private, km.sandbox_memory_mb = self.workdir, self.limits.memory_mb
        km.use_sandbox = self.use_sandbox
        nb = nbformat.v4.new_notebook()
        self.client = NotebookClient(nb, km=km, timeout=int(self.limits.cell_seconds),
                                     startup_timeout=int(self.limits.startup_seconds),
                                     allow_errors=True, interrupt_on_timeout=False,
                                     record_timing=False, kernel_name="python3")
        # the kernel's own stdout and stderr (not its cells' outputs) go nowhere: nothing a
        # submission writes to a file descriptor reaches the grader's terminal or logs
        self.client.start_new_kernel(cwd=self.workdir, env=kernel_environment(self.workdir),
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.client.start_new_kernel_client()

    def _stop(self):
        if self.client is not None:
            try:
                self.client._cleanup_kernel()
            except Exception:                                       # already gone
                pass
            try:
                run_sync(self.client.km.shutdown_kernel)(now=True)
            except Exception:
                pass
            self.client = None

    def _execute(self, source: str, timeout: float) -> CellOutcome:
        cell = nbformat.v4.new_code_cell(source)
        self.client.timeout = max(1, int(timeout))
        self.client.nb.cells = [cell]
        try:
            self.client.execute_cell(cell, 0)
        except CellTimeoutError:
            return CellOutcome("timeout")
        except DeadKernelError:
            return CellOutcome("died")
        errors = [o for o in cell.outputs if o.get("output_type") == "error"]
        if errors:
            return CellOutcome("error", errors[0].get("ename", "Error"), cell.outputs)
        if not run_sync(self.client.kc.is_alive)():
            return CellOutcome("died", outputs=cell.outputs)
        return CellOutcome("ok", outputs=cell.outputs)

    def run(self, sources: list[str]) -> list[CellOutcome]:
        """Execute each source in order; a timeout or death restarts the kernel and replays the
        cells that had succeeded, then carries on with the next cell."""
        deadline = time.monotonic() + self.limits.run_seconds
        outcomes: list[CellOutcome] = []
        succeeded: list[str] = []
        try:
            self._start()
            for source in sources:
                left = deadline - time.monotonic()
                if left <= 1:
                    outcomes.append(CellOutcome("timeout", "the submission's time limit was reached"))
                    continue
                outcome = self._execute(source, min(self.limits.cell_seconds, left))
                outcomes.append(outcome)
                if outcome.status == "ok":
                    succeeded.append(source)
                elif outcome.status in ("timeout", "died"):
                    self._stop()
                    self._start()
                    for earlier in succeeded:                        # rebuild the state
                        left = deadline - time.monotonic()
                        if left <= 1 or self._execute(earlier, min(self.limits.cell_seconds, left)).status in ("timeout", "died"):
                            break
        finally:
            self._stop()
            shutil.rmtree(self.workdir, ignore_errors=True)
        return outcomes
