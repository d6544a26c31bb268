"""Running a notebook's code cells one by one in a (sandboxed) kernel, surviving what cells do.

:func:`run_cells` executes code with a per-cell and a whole-run time limit and reports, for every
cell, what happened: ``ok``, ``error`` (with the exception name), ``timeout`` or ``died`` (the
kernel process ended: ``os._exit``, a crash, the memory limit). After a timeout or a death the
kernel is restarted and the cells that had succeeded are run again, so later cells still run.

What a kernel sends back is bounded on the grader's side (:class:`CappedClient`): the grader keeps
only what grading reads (the probe records and the names of errors) and counts the rest; past
``Caps.output_bytes`` or ``Caps.messages`` the submission is ended as a flood (``flood``), and no
single message may exceed ``Caps.message_bytes`` (ZeroMQ drops the connection of a peer that
sends one). A kernel that cannot start is tried again; if it still cannot, :class:`KernelStartError`
says so, and the submission is the grader's fault, never the student's zero.

What a kernel may hold is bounded too (:class:`Limits`): as root, each kernel has a cgroup of its
own (:mod:`.cgroups`) counting the memory of all its processes, its ``/tmp`` included; its
``/tmp`` (its home and working folder, the only place it can write) has a fixed size. After every
cell the runner looks at both: a kernel ended by its memory limit is reported as ``died`` with that
cause, and one whose ``/tmp`` is full ends the submission there (``disk``), as a flood does.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
import zmq
import zmq.asyncio
from jupyter_client import AsyncKernelManager
from jupyter_core.utils import run_sync
from nbclient import NotebookClient
from nbclient.exceptions import CellTimeoutError, DeadKernelError
from traitlets import default

from attention_course import paths
from attention_course_instructor.grading.hardened import cgroups, sandbox
from attention_course_instructor.grading.hardened.probes import MIME


@dataclass(frozen=True)
class Limits:
    cell_seconds: float = 120.0        # one cell
    run_seconds: float = 600.0         # every cell of one submission, restarts included
    memory_mb: int = 6144              # address space of each kernel process, and (as root) the
                                       # memory of all its processes together, its /tmp included
    startup_seconds: float = 60.0
    disk_mb: int = 1024                # its /tmp (home and working folder), and any file it writes


@dataclass(frozen=True)
class Caps:
    """What one submission's kernel may send back to the grader."""
    output_bytes: int = 32 * 2 ** 20   # every output message together (printed text, displays)
    messages: int = 100_000            # output messages of every cell together
    message_bytes: int = 8 * 2 ** 20   # one message (larger: the connection is dropped)
    queued: int = 32                   # messages waiting to be read (more: the newest are dropped)
    kept_bytes: int = 8 * 2 ** 20      # one kept output (a probe record, an error's name)


START_ATTEMPTS = 3                     # a kernel that does not start is tried this many times

# The kernel's sockets are Unix sockets in its folder, <folder>/kernel-<port>, and a Unix socket's
# path holds at most 107 bytes. When the temporary folder is too deep for that (a Dask worker's
# TMPDIR can be), the kernel's folder goes to SHORT_BASE instead, named after the batch folder
# it belongs to, so that sweeping a dead grader's batch sweeps it too.
SOCKET_PATH_LIMIT = 107
SHORT_BASE = "/tmp"
_FOLDER = "course-grading-"                                   # + mkdtemp's 8 characters
_SOCKET = "/kernel-65535"


def kernel_folder() -> str:
    """A new private folder for one kernel, short enough to hold its sockets."""
    base = tempfile.gettempdir()
    if len(base) + 1 + len(_FOLDER) + 8 + len(_SOCKET) <= SOCKET_PATH_LIMIT:
        return tempfile.mkdtemp(prefix=_FOLDER)
    return tempfile.mkdtemp(prefix=f"{_FOLDER}{batch_tag(Path(base).name)}-", dir=SHORT_BASE)


def batch_tag(folder_name: str) -> str:
    """What names a batch folder's kernel folders outside it: the end of its own name."""
    return folder_name[-8:]


class KernelStartError(RuntimeError):
    """The grading kernel did not start, after every attempt: the grader's fault."""


class OutputFlood(RuntimeError):
    """The submission sent more output than :class:`Caps` allows."""


@dataclass
class CellOutcome:
    status: str                        # ok | error | timeout | died | flood | disk | skipped
    error: str = ""                    # exception class name (error); the cause (died, flood, disk)
    outputs: list = field(default_factory=list)


_CONTEXTS: dict = {}


def bounded_context(message_bytes: int, queued: int) -> zmq.asyncio.Context:
    """The ZeroMQ context of this process's grading kernels (one per pair of bounds, kept for the
    process's life): its sockets refuse a message over ``message_bytes`` and queue at most
    ``queued`` unread ones (ZeroMQ's default, 1000, let a flood of 1 MiB messages take a GB)."""
    key = (message_bytes, queued)
    if key not in _CONTEXTS:
        context = zmq.asyncio.Context()
        context.setsockopt(zmq.MAXMSGSIZE, message_bytes)
        context.setsockopt(zmq.RCVHWM, queued)
        _CONTEXTS[key] = context
    return _CONTEXTS[key]


class SandboxedKernelManager(AsyncKernelManager):
    """A kernel manager whose kernel command runs inside :mod:`sandbox` (unless told not to)."""

    sandbox_private: str = ""
    sandbox_memory_mb: int = 0
    sandbox_disk_mb: int = 0
    sandbox_cgroup_procs: tuple = ()
    sandbox_uid: int = sandbox.NOBODY
    use_sandbox: bool = True
    message_bytes: int = Caps.message_bytes
    queued: int = Caps.queued

    @default("context")
    def _bounded_context(self):
        return bounded_context(self.message_bytes, self.queued)

    def client(self, **kwargs):
        """The client talks to the kernel through this manager's bounded context (jupyter_client
        would give it a context of its own)."""
        kwargs.setdefault("context", self.context)
        return super().client(**kwargs)

    def format_kernel_cmd(self, extra_arguments=None):
        cmd = super().format_kernel_cmd(extra_arguments)
        cmd[0] = sys.executable if cmd[0] in ("python", "python3") else cmd[0]
        if cmd[0] == sys.executable:
            cmd.insert(1, "-P")                # nothing importable from the kernel's own folder
        if not self.use_sandbox:
            return cmd
        return sandbox.wrap(cmd, self.sandbox_private, str(paths.PACKAGE), self.sandbox_memory_mb,
                            self.sandbox_uid, self.sandbox_disk_mb, list(self.sandbox_cgroup_procs))

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


def message_size(content: dict) -> int:
    """About how many bytes an output message carries (its text, data, or traceback)."""
    size = len(content.get("text", "") or "")
    for value in (content.get("data") or {}).values():
        size += len(value) if isinstance(value, (str, bytes)) else len(str(value))
    size += len(str(content.get("evalue", ""))) + sum(len(str(x)) for x in content.get("traceback") or [])
    if "comm_id" in content:
        size += len(str(content.get("data", "")))
    return size


class CappedClient(NotebookClient):
    """nbclient's client, keeping of a kernel's output only what grading reads, within caps.

    Kept: display data of the probes' own type (a probe record) and error outputs reduced to the
    exception's class name. Everything else (printed text, other displays, widget messages) is
    counted and dropped; past the caps :class:`OutputFlood` ends the cell."""

    caps: Caps = Caps()
    sent_bytes: int = 0
    sent_messages: int = 0
    refused: int = 0                   # output connections dropped (a message over message_bytes)
    _monitor = None

    def watch_dropped_messages(self) -> None:
        """Watch for the output connection being dropped: ZeroMQ drops it when the kernel sends a
        message over ``Caps.message_bytes``, and does not connect again, so every later output of
        the kernel (the probes' answers too) would be lost unseen. One such message ends the
        submission as a flood, with that reason."""
        socket = self.kc.iopub_channel.socket
        address = f"inproc://course-iopub-monitor-{uuid.uuid4().hex}"
        socket.monitor(address, zmq.EVENT_DISCONNECTED)
        self._monitored = socket
        self._monitor = zmq.Context.shadow(socket.context.underlying).socket(zmq.PAIR)
        self._monitor.connect(address)

    def stop_watching(self) -> None:
        if self._monitor is not None:
            self._drain(count=False)                                # the kernel's own end
            try:
                self._monitored.disable_monitor()
            except zmq.ZMQError:
                pass
            self._monitor.close(linger=0)
            self._monitor = None

    def _drain(self, count: bool) -> None:
        """Read the monitor's events; count the drops (not when the kernel itself has ended: its
        connection goes with it, and that is not a refused message)."""
        from zmq.utils.monitor import recv_monitor_message

        while self._monitor is not None and self._monitor.poll(0):
            if recv_monitor_message(self._monitor)["event"] == zmq.EVENT_DISCONNECTED and count:
                self.refused += 1

    def dropped_flood(self, kernel_ended: bool = False) -> str:
        """Why the submission is a flood, a message having been refused ("" while none has)."""
        self._drain(count=not kernel_ended)
        if self.refused:
            return (f"a message over {self.caps.message_bytes // 2 ** 20} MB, which grading refuses; "
                    "its output could no longer be read")
        return ""

    def process_message(self, msg, cell, cell_index):
        kind, content = msg["msg_type"], msg["content"]
        if kind in ("status", "execute_input", "execute_reply") or kind.startswith("debug"):
            return super().process_message(msg, cell, cell_index)
        self.sent_messages += 1
        self.sent_bytes += message_size(content)
        if self.sent_bytes > self.caps.output_bytes or self.sent_messages > self.caps.messages:
            raise OutputFlood(f"more than {self.caps.output_bytes // 2 ** 20} MB or "
                              f"{self.caps.messages} messages of output")
        if kind in ("display_data", "execute_result") and MIME in (content.get("data") or {}):
            record = content["data"][MIME]
            if len(str(record)) <= self.caps.kept_bytes:
                content = {**content, "data": {MIME: record}, "metadata": {}}
                return super().process_message({**msg, "content": content}, cell, cell_index)
            return None
        if kind == "error":
            content = {"ename": str(content.get("ename", "Error"))[:100], "evalue": "", "traceback": []}
            return super().process_message({**msg, "content": content}, cell, cell_index)
        return None                                     # printed text, other displays, comms


class CellRunner:
    """A kernel for one submission; :meth:`run` executes code cells and never raises for them."""

    DISK_FULL_BYTES = 2 ** 20                          # less free than this in /tmp: it is full

    def __init__(self, limits: Limits, use_sandbox: bool = True, caps: Caps = Caps()):
        self.limits, self.caps = limits, caps
        self.workdir = kernel_folder()
        self.uid, self._uid_lock, self.cgroup = sandbox.NOBODY, None, None
        if use_sandbox:
            try:
                if os.geteuid() == 0:
                    self.uid, self._uid_lock = sandbox.kernel_uid()  # this kernel's own uid
                    self.cgroup = cgroups.kernel_cgroup(
                        cgroups.cgroup_name(self.uid, Path(self.workdir).name[-8:]),
                        limits.memory_mb, sandbox.NPROC)
                sandbox.prepare_private(self.workdir, self.uid)
            except Exception:
                self._release()
                raise
        self.use_sandbox = use_sandbox
        self.client = None
        self.sent = (0, 0, 0)                        # output bytes, messages, refused so far
        self._oom_kills = 0

    @property
    def bounds(self) -> str:
        """What bounds this kernel's memory, in the words of the report."""
        if not self.use_sandbox:
            return "none (no sandbox)"
        if self.cgroup is not None:
            return (f"cgroup v{self.cgroup.version}: {self.limits.memory_mb} MB for all its processes "
                    f"and /tmp; /tmp {self.limits.disk_mb} MB")
        return (f"address space {self.limits.memory_mb} MB per process; /tmp {self.limits.disk_mb} MB "
                "(no cgroup: see the guide)")

    def _start(self):
        """Start the kernel, trying again when it does not come up (a machine short of processes,
        a slow start); :class:`KernelStartError` after ``START_ATTEMPTS``."""
        why = ""
        for attempt in range(START_ATTEMPTS):
            try:
                return self._start_once()
            except Exception as exc:                          # died before kernel_info, timed out
                why = f"{type(exc).__name__}: {str(exc)[:200]}"
                self._stop()
                if attempt + 1 < START_ATTEMPTS:
                    time.sleep(1 + 2 * attempt)
        raise KernelStartError(f"the grading kernel did not start in {START_ATTEMPTS} attempts ({why})")

    def _start_once(self):
        km = SandboxedKernelManager(kernel_name="python3", transport="ipc",
                                    ip=os.path.join(self.workdir, "kernel"))
        km.connection_file = os.path.join(self.workdir, "connection.json")
        km.sandbox_private, km.sandbox_memory_mb = self.workdir, self.limits.memory_mb
        km.sandbox_disk_mb = self.limits.disk_mb
        km.sandbox_cgroup_procs = tuple(self.cgroup.procs_files) if self.cgroup else ()
        km.sandbox_uid, km.use_sandbox = self.uid, self.use_sandbox
        km.message_bytes, km.queued = self.caps.message_bytes, self.caps.queued
        nb = nbformat.v4.new_notebook()
        self.client = CappedClient(nb, km=km, timeout=int(self.limits.cell_seconds),
                                   startup_timeout=int(self.limits.startup_seconds),
                                   allow_errors=True, interrupt_on_timeout=False,
                                   record_timing=False, kernel_name="python3")
        self.client.caps = self.caps
        self.client.sent_bytes, self.client.sent_messages, self.client.refused = self.sent
        if self.use_sandbox:
            sandbox.prepare_private(self.workdir, self.uid)  # the kernel makes its sockets here
        home = sandbox.KERNEL_HOME if self.use_sandbox else self.workdir
        # the kernel's own stdout and stderr (not its cells' outputs) go nowhere: nothing a
        # submission writes to a file descriptor reaches the grader's terminal or logs
        self.client.start_new_kernel(cwd=self.workdir, env=kernel_environment(home),
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.client.start_new_kernel_client()
        self.client.watch_dropped_messages()
        if self.use_sandbox:
            sandbox.seal_private(self.workdir)             # sockets made: nothing more to write

    def _stop(self):
        if self.client is not None:
            self.client.stop_watching()
            self.sent = (self.client.sent_bytes, self.client.sent_messages, self.client.refused)
            try:
                self.client._cleanup_kernel()
            except Exception:                                       # already gone
                pass
            try:
                run_sync(self.client.km.shutdown_kernel)(now=True)
            except Exception:
                pass
            self.client = None

    def _release(self):
        shutil.rmtree(self.workdir, ignore_errors=True)
        if self.cgroup is not None:
            self.cgroup.remove()
        if self._uid_lock is not None:
            self._uid_lock.close()                             # the uid goes back to the pool

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
        except OutputFlood as flood:
            return CellOutcome("flood", str(flood))
        errors = [o for o in cell.outputs if o.get("output_type") == "error"]
        if errors:
            return CellOutcome("error", errors[0].get("ename", "Error"), cell.outputs)
        if not run_sync(self.client.kc.is_alive)():
            return CellOutcome("died", outputs=cell.outputs)
        return CellOutcome("ok", outputs=cell.outputs)

    def _bounded(self, outcome: CellOutcome) -> CellOutcome:
        """The outcome, told apart when a bound ended it: the memory limit (the cgroup's count of
        kills went up), a full ``/tmp``, or messages too large to be delivered."""
        if self.cgroup is not None and outcome.status in ("died", "timeout"):
            kills = self.cgroup.oom_kills()
            if kills > self._oom_kills:
                self._oom_kills = kills
                return CellOutcome("died", f"it reached its memory limit ({self.limits.memory_mb} MB, "
                                           "its /tmp included)")
        if self.client is not None:
            flood = self.client.dropped_flood(kernel_ended=outcome.status in ("died", "timeout"))
            if flood:
                return CellOutcome("flood", flood)
        if self.use_sandbox and self.client is not None and outcome.status != "died":
            usage = sandbox.tmp_usage(self.client.km.provisioner.pid)
            if usage is not None and usage[1] - usage[0] < self.DISK_FULL_BYTES:
                return CellOutcome("disk", f"it filled its {self.limits.disk_mb} MB of disk space "
                                           f"(/tmp: {usage[2]} files)")
        return outcome

    def run(self, sources: list[str]) -> list[CellOutcome]:
        """Execute each source in order; a timeout or death restarts the kernel and replays the
        cells that had succeeded, then carries on with the next cell. A flood or a full disk ends
        the submission there."""
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
                outcome = self._bounded(self._execute(source, min(self.limits.cell_seconds, left)))
                outcomes.append(outcome)
                if outcome.status in ("flood", "disk"):        # the submission ends here
                    outcomes += [CellOutcome(outcome.status, outcome.error)] * (len(sources) - len(outcomes))
                    break
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
            self._release()
        return outcomes
