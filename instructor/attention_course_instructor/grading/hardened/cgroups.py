"""A control group for each grading kernel: its memory (``/tmp`` included) and its processes, bounded
by the Linux kernel itself.

An address-space limit (``RLIMIT_AS``) bounds what one process maps, not what a kernel holds: pages
of its ``/tmp`` (a tmpfs, so memory), shared memory it has unmapped, and the memory of every process
it forks each escape it. A cgroup's memory limit counts all of them, for every process of the
kernel together; when they reach it the machine's memory killer ends a process of *that kernel*,
never a worker or another student's kernel, and the cgroup's ``oom_kill`` count says it happened.

Both cgroup layouts are supported: the unified one (cgroup v2, ``memory.max``, ``pids.max``) and
the v1 ``memory`` and ``pids`` hierarchies (as on the course's build machines). Cgroups need root;
:func:`kernel_cgroup` returns None where they cannot be made (an ordinary user, a read-only
``/sys/fs/cgroup``), and the grader says so in its report (see the instructor guide's threat model).

    group = kernel_cgroup(cgroup_name(uid, tag), memory_mb=6144, pids=256)
    ... the launcher writes its pid into group.procs_files before it starts bubblewrap ...
    group.oom_kills(); group.remove()
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

CGROUP_ROOT = Path(os.environ.get("COURSE_CGROUP_ROOT", "/sys/fs/cgroup"))
PARENT = "attention-course-kernels"          # every kernel's cgroup is made under this one


@dataclass(frozen=True)
class KernelCgroup:
    """One kernel's cgroup: a folder per hierarchy (one for v2; ``memory`` and ``pids`` for v1)."""

    version: int
    folders: tuple[Path, ...]

    @property
    def procs_files(self) -> list[str]:
        """Where a process writes its pid to join (the launcher does, before bubblewrap starts)."""
        return [str(f / "cgroup.procs") for f in self.folders]

    def _memory_folder(self) -> Path:
        return self.folders[0]

    def oom_kills(self) -> int:
        """How many processes of this kernel the memory killer has ended (0 if it cannot be read)."""
        name = "memory.events" if self.version == 2 else "memory.oom_control"
        try:
            for line in (self._memory_folder() / name).read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "oom_kill":
                    return int(value)
        except (OSError, ValueError):
            pass
        return 0

    def processes(self) -> list[int]:
        try:
            return [int(p) for p in (self._memory_folder() / "cgroup.procs").read_text().split()]
        except (OSError, ValueError):
            return []

    def remove(self, seconds: float = 10.0) -> None:
        """Remove the cgroup once its processes are gone (a killed kernel takes a moment)."""
        deadline = time.monotonic() + seconds
        for folder in self.folders:
            while True:
                try:
                    folder.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        break                         # left for sweep_stale_cgroups
                    time.sleep(0.05)


def _v2_root() -> Path | None:
    controllers = CGROUP_ROOT / "cgroup.controllers"
    try:
        found = set(controllers.read_text().split())
    except OSError:
        return None
    return CGROUP_ROOT if {"memory", "pids"} <= found else None


def _v1_folder(controller: str) -> Path | None:
    """The v1 hierarchy of ``controller``, at this process's own place in it (so that a kernel
    stays inside whatever limits the grader itself runs under)."""
    mount = CGROUP_ROOT / controller
    if not (mount / "cgroup.procs").exists():
        return None
    try:
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _, names, path = line.split(":", 2)
            if controller in names.split(","):
                return mount / path.lstrip("/")
    except (OSError, ValueError):
        pass
    return mount


def _write(path: Path, value: str) -> None:
    path.write_text(value)


def _make_v2(root: Path, name: str, memory: int, pids: int) -> KernelCgroup:
    parent = root / PARENT
    parent.mkdir(exist_ok=True)
    # the controllers must be handed down at each level (the root's and this folder's)
    for level in (root, parent):
        enabled = set((level / "cgroup.subtree_control").read_text().split())
        missing = {"memory", "pids"} - enabled
        if missing:
            _write(level / "cgroup.subtree_control", " ".join(f"+{c}" for c in sorted(missing)))
    folder = parent / name
    folder.mkdir()
    _write(folder / "memory.max", str(memory))
    if (folder / "memory.swap.max").exists():
        _write(folder / "memory.swap.max", "0")
    _write(folder / "pids.max", str(pids))
    return KernelCgroup(2, (folder,))


def _make_v1(memory_root: Path, pids_root: Path, name: str, memory: int, pids: int) -> KernelCgroup:
    made = []
    try:
        folder = memory_root / PARENT / name
        folder.mkdir(parents=True)
        made.append(folder)
        _write(folder / "memory.limit_in_bytes", str(memory))
        if (folder / "memory.memsw.limit_in_bytes").exists():     # memory and swap together
            _write(folder / "memory.memsw.limit_in_bytes", str(memory))
        tasks = pids_root / PARENT / name
        tasks.mkdir(parents=True)
        made.append(tasks)
        _write(tasks / "pids.max", str(pids))
    except BaseException:
        KernelCgroup(1, tuple(made)).remove(seconds=0)
        raise
    return KernelCgroup(1, (folder, tasks))


def kernel_cgroup(name: str, memory_mb: int, pids: int) -> KernelCgroup | None:
    """A new cgroup for one kernel, limited to ``memory_mb`` of memory (no swap) and ``pids``
    processes and threads; None where cgroups cannot be made here."""
    if os.geteuid() != 0 or memory_mb <= 0:
        return None
    memory = memory_mb * 2 ** 20
    try:
        root = _v2_root()
        if root is not None:
            return _make_v2(root, name, memory, pids)
        memory_root, pids_root = _v1_folder("memory"), _v1_folder("pids")
        if memory_root is None or pids_root is None:
            return None
        return _make_v1(memory_root, pids_root, name, memory, pids)
    except OSError:
        return None


def available() -> bool:
    """Whether each grading kernel gets a cgroup of its own on this machine."""
    group = kernel_cgroup(cgroup_name(0, "probe"), 64, 16)
    if group is None:
        return False
    group.remove()
    return True


def cgroup_name(uid: int, tag: str) -> str:
    """A kernel cgroup's name: its kernel's uid, the grading process that made it, and a tag."""
    return f"kernel-{uid}-{os.getpid()}-{tag}"


def _maker_alive(name: str) -> bool:
    try:
        os.kill(int(name.split("-")[2]), 0)
        return True
    except (IndexError, ValueError, ProcessLookupError):
        return False
    except PermissionError:
        return True


def sweep_stale_cgroups() -> list[str]:
    """Remove the kernel cgroups of grading processes that no longer run (a grader killed before
    it could remove them), once no process is left in them."""
    removed = []
    parents = [p / PARENT for p in filter(None, (_v2_root(), _v1_folder("memory"), _v1_folder("pids")))]
    for parent in parents:
        for folder in parent.glob("kernel-*") if parent.is_dir() else []:
            if not folder.is_dir() or _maker_alive(folder.name):
                continue
            try:
                if (folder / "cgroup.procs").read_text().strip():
                    continue
                folder.rmdir()
                removed.append(str(folder))
            except OSError:
                pass
    return removed
