"""A pytest plugin for ``benchmarks.dev_loop``: the CPU time each test file costs, counted in the
process tree of the pytest process that runs it (with pytest-xdist, each worker's). From the
repository root, for a few files (an empty FOLDER; the workers' files are summed by
:func:`cpu_by_file`):

    python -m pytest -p benchmarks.suite_cpu --cpu-by-file=FOLDER [-n 2 --dist loadfile] tests/...

Every ``SAMPLE_EVERY`` seconds a thread of each pytest process reads the CPU time (user and
system) of that process and of every process below it -- kernels, sandboxes, servers, browsers,
the processes they start -- each known by (pid, start time in clock ticks since boot: psutil's
``create_time()`` adds the boot time as the clock gives it now, which moves when the clock is
stepped, and every process then looked new and was counted whole again), and adds what each
spent since the last look to the test file running then. A process is counted by its own time
only, never by its children's (which would count them twice once they are reaped). What
escapes: what a process spends after its last look (so a process that lives less than
``SAMPLE_EVERY`` escapes whole), a process whose parent ended first (it leaves the tree),
pytest's start-up before the plugin is configured, and the xdist controller's own time (its tree
holds the workers', which count themselves). At the end each process writes to
``FOLDER/<worker>.json`` its CPU seconds three ways: by test file (``"(between tests)"``: what was
spent outside any test's set-up, call and tear-down; a session fixture's tear-down counts for the
last test's file), by kind of process (:data:`KINDS`: notebook kernels, the browser, the hub's
servers ..., told apart by each process's name and command line when it is first seen), and by
both. :func:`cpu_by_file`, :func:`cpu_by_kind` and :func:`files_by_kind` sum the workers' files.
"""
from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import psutil
import pytest

SAMPLE_EVERY = 0.5                     # seconds between looks at the process tree
BETWEEN = "(between tests)"
# what a process is, by the first of these words found in its name or command line; the pytest
# process itself is "the test processes", any other process "other: <its name>" (for Python, what
# it runs: :func:`program`)
KINDS = (("notebook kernels", ("ipykernel",)),
         ("the browser (Chromium)", ("chrom", "headless_shell")),
         ("hardened grading workers", ("grading.hardened.worker",)),
         ("the hardened grader's command", ("grading.hardened",)),
         ("Dask scheduler and workers", ("dask",)),
         ("JupyterHub, its proxy and users' servers", ("jupyterhub", "configurable-http-proxy",
                                                       "jupyter-server", "jupyter_server")),
         ("nbgrader commands and their gradebook migrations", ("nbgrader", "alembic")),
         ("package installs and builds (pip, venv)", ("-m pip ", "bin/pip ", "-m venv ", "-m build ",
                                                      "_in_process.py")),
         ("book builds (Jupyter Book, Sphinx)", ("jupyter-book", "jupyter_book", "sphinx")),
         ("Node.js (Playwright's driver, npm)", ("node", "npm")))
PYTEST = "the test processes (pytest)"


def kind_of(process: psutil.Process, root: psutil.Process) -> str:
    """Which of :data:`KINDS` a process is (its name and command line as first seen)."""
    if process.pid == root.pid:
        return PYTEST
    try:
        name, cmdline = process.name(), process.cmdline()
    except psutil.Error:
        return "other: ended before it was seen"
    words = " ".join([name, *cmdline, ""]).lower()
    for kind, marks in KINDS:
        if any(mark in words for mark in marks):
            return kind
    return f"other: {program(name, cmdline)}"


def program(name: str, cmdline: list[str]) -> str:
    """A process's name, and for Python what it runs: ``python -m <module>``, ``python <script's
    name>`` or ``python -c``."""
    if not name.startswith("python") or len(cmdline) < 2:
        return name
    args = list(cmdline[1:])
    while args and args[0] in ("-P", "-u", "-E", "-I", "-s", "-S", "-B", "-W", "-X"):
        del args[:2 if args[0] in ("-W", "-X") else 1]        # -W and -X take a value
    if args and args[0] == "-m" and len(args) > 1:
        return f"python -m {args[1]}"
    if args and args[0] == "-c":
        return "python -c"
    return f"python {Path(args[0]).name}" if args else "python"


class TreeCpu:
    """CPU seconds spent by a process and its descendants, handed to whatever is running."""

    def __init__(self, root: psutil.Process | None = None):
        self.root = root or psutil.Process()
        self.seen: dict[tuple[int, int], float] = {}
        self.by_file: dict[str, float] = {}
        self.by_kind: dict[str, float] = {}
        self.kinds: dict[tuple[int, int], str] = {}
        self.by_file_kind: dict[str, dict[str, float]] = {}     # file -> kind -> seconds
        self.running = BETWEEN
        self.lock = threading.Lock()
        self._own_start = self._cpu(self.root)           # the root's time before we looked

    @staticmethod
    def _started(process: psutil.Process) -> int:
        """The process's start, in clock ticks since boot (``/proc/<pid>/stat``'s 22nd field)."""
        try:
            with open(f"/proc/{process.pid}/stat", "rb") as stat:
                return int(stat.read().rsplit(b")", 1)[1].split()[19])
        except (OSError, IndexError, ValueError):
            raise psutil.NoSuchProcess(process.pid) from None

    @staticmethod
    def _cpu(process: psutil.Process) -> float:
        times = process.cpu_times()
        return times.user + times.system

    def sample(self) -> None:
        with self.lock:                                   # the timer and a new test both look
            self._sample()

    def _sample(self) -> None:
        try:
            processes = [self.root, *self.root.children(recursive=True)]
        except psutil.Error:
            return
        spent = 0.0
        for process in processes:
            try:
                key, seconds = (process.pid, self._started(process)), self._cpu(process)
            except psutil.Error:
                continue                                  # ended meanwhile
            before = self.seen.get(key, self._own_start if process is self.root else 0.0)
            self.seen[key] = seconds
            if key not in self.kinds:
                self.kinds[key] = kind_of(process, self.root)
            kind, delta = self.kinds[key], max(0.0, seconds - before)
            self.by_kind[kind] = self.by_kind.get(kind, 0.0) + delta
            of_file = self.by_file_kind.setdefault(self.running, {})
            of_file[kind] = of_file.get(kind, 0.0) + delta
            spent += delta
        self.by_file[self.running] = self.by_file.get(self.running, 0.0) + spent

    def now_running(self, name: str) -> None:
        with self.lock:
            self._sample()                                # what came before goes to the previous
            self.running = name


def pytest_addoption(parser):
    parser.addoption("--cpu-by-file", metavar="FOLDER", default=None,
                     help="write each test file's CPU seconds (its process tree) to FOLDER/<worker>.json")


def pytest_configure(config):
    folder = config.getoption("--cpu-by-file")
    if not folder:
        return
    worker = hasattr(config, "workerinput")
    if not worker:                                # this run's counts only: earlier ones go
        for old in Path(folder).glob("*.json"):
            old.unlink()
    distributing = bool(getattr(config.option, "numprocesses", 0) or getattr(config.option, "tx", None))
    if distributing and not worker:               # the controller's tree holds the workers' trees
        return
    tree, stop = TreeCpu(), threading.Event()

    def loop():
        while not stop.wait(SAMPLE_EVERY):
            tree.sample()

    thread = threading.Thread(target=loop, name="suite-cpu", daemon=True)
    thread.start()
    config._suite_cpu = (tree, stop, thread, Path(folder))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    state = getattr(item.config, "_suite_cpu", None)
    if state:
        state[0].now_running(item.path.name)
    yield                                         # set-up, call, and the tear-downs this test ends
    if state:
        state[0].now_running(BETWEEN)


def pytest_unconfigure(config):
    state = getattr(config, "_suite_cpu", None)
    if not state:
        return
    tree, stop, thread, folder = state
    stop.set()
    thread.join()
    tree.sample()
    folder.mkdir(parents=True, exist_ok=True)
    name = os.environ.get("PYTEST_XDIST_WORKER", "controller")
    counts = {part: {k: round(v, 2) for k, v in seconds.items()}
              for part, seconds in (("by_file", tree.by_file), ("by_kind", tree.by_kind))}
    counts["by_file_kind"] = {f: {k: round(v, 2) for k, v in kinds.items()}
                              for f, kinds in tree.by_file_kind.items()}
    (folder / f"{name}.json").write_text(json.dumps(counts))


def _summed(folder: Path, part: str) -> dict[str, float]:
    totals: dict[str, float] = {}
    for path in sorted(Path(folder).glob("*.json")):
        for name, seconds in json.loads(path.read_text()).get(part, {}).items():
            totals[name] = totals.get(name, 0.0) + seconds
    return dict(sorted(totals.items(), key=lambda item: -item[1]))


def cpu_by_file(folder: Path) -> dict[str, float]:
    """Each test file's CPU seconds, summed over the workers' files in ``folder``, largest first."""
    return _summed(folder, "by_file")


def cpu_by_kind(folder: Path) -> dict[str, float]:
    """Each kind of process's CPU seconds (:data:`KINDS`), summed over the workers, largest first."""
    return _summed(folder, "by_kind")


def files_by_kind(folder: Path) -> dict[str, dict[str, float]]:
    """kind of process -> test file -> the CPU seconds that kind spent in that file's tests,
    the files largest first."""
    found: dict[str, dict[str, float]] = {}
    for path in sorted(Path(folder).glob("*.json")):
        for file, kinds in json.loads(path.read_text()).get("by_file_kind", {}).items():
            for kind, seconds in kinds.items():
                files = found.setdefault(kind, {})
                files[file] = files.get(file, 0.0) + seconds
    return {kind: dict(sorted(files.items(), key=lambda item: -item[1])) for kind, files in found.items()}
