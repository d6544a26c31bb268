"""Stage 3 of hardened grading: the sandbox a grading kernel runs in (bubblewrap).

Every grading kernel runs under ``bwrap`` (bubblewrap, the sandbox Flatpak is built on) with

- **its own PID, IPC, UTS and network namespaces** and a new session: it cannot see, signal or
  trace the grader or any process but its own, and has no network (only its own loopback);
- **a root filesystem holding only what it needs**, read-only: the system's ``/usr``, the Python
  installation and environment that run it, and the student package; the instructor package
  (this grader) is hidden wherever it is installed; a private folder (the only writable place:
  its connection file and sockets), an empty ``/dev`` and an empty ``/tmp`` of a bounded size
  (``--disk-mb``), which is its home and working folder. Nothing else of the machine exists in
  its view. When the grader is root, the private folder is given back to root once the kernel
  has made its sockets there, so ``/tmp`` is the only place the kernel can write;
- **a real unprivileged user of its own**: when the grader is root each kernel runs as a uid of
  its own, taken from a pool (:func:`kernel_uid`: ``COURSE_KERNEL_UID_BASE`` and the next
  ``KERNEL_UIDS``, held with a lock for the kernel's life; real credentials in the machine's own
  user namespace, not root behind a uid map), with no capabilities and ``no_new_privs``; when the
  grader is an ordinary user the kernel runs as that user, in a user namespace, and sees nothing of
  that user's files beyond the list above;
- **limits**: address space (``--memory-mb``), the size of any file it writes (``RLIMIT_FSIZE``,
  the disk budget) and, as root's kernels, a process count per uid (``NPROC``), so one kernel's
  fork or thread flood cannot use up another kernel's processes. As root, the launcher also puts
  the kernel into a cgroup of its own (:mod:`.cgroups`, made by the grader) before bubblewrap
  starts: memory of all its processes, its ``/tmp`` included, and its process count;
- **an end**: bwrap is the PID namespace's init and dies with its parent, so when the kernel ends
  or is killed, every process the submission started ends with it.

The launcher is this file run as a script (standard library only): it sets the limits, then
replaces itself with ``bwrap``::

    python .../hardened/sandbox.py --memory-mb M --fsize-mb D --nproc P [--cgroup-procs FILE ...] \
        -- bwrap ... -- [setpriv ...] KERNEL
"""
from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys

NOBODY = 65534
NPROC = 256                     # processes and threads of one grading kernel (its own uid)
# the pool of kernel uids: no account has them; one per kernel running at a time, on this machine
KERNEL_UID_BASE = int(os.environ.get("COURSE_KERNEL_UID_BASE", "2900000000"))
KERNEL_UIDS = int(os.environ.get("COURSE_KERNEL_UIDS", "1024"))
UID_LOCKS = os.environ.get("COURSE_KERNEL_UID_LOCKS", "/run/attention-course-kernel-uids")


class NoKernelUid(RuntimeError):
    """Every uid of the pool is held by a running kernel."""


def kernel_uid():
    """A uid of the pool that no running kernel holds, and the open lock that holds it (close it,
    or let the process end, to give the uid back). Locks are ``flock``s on files of ``UID_LOCKS``,
    so kernels of several graders (processes, batches, Dask workers of one machine) never share."""
    import fcntl

    os.makedirs(UID_LOCKS, mode=0o700, exist_ok=True)
    start = os.getpid() % KERNEL_UIDS                 # spread the search: fewer collisions
    for i in range(KERNEL_UIDS):
        uid = KERNEL_UID_BASE + (start + i) % KERNEL_UIDS
        handle = open(os.path.join(UID_LOCKS, f"{uid}.lock"), "w")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.close()
            continue
        return uid, handle
    raise NoKernelUid(f"all {KERNEL_UIDS} kernel uids from {KERNEL_UID_BASE} are in use")


def _ancestors(path: str) -> list[str]:
    parts, out = os.path.abspath(path).strip("/").split("/")[:-1], []
    for i in range(len(parts)):
        out.append("/" + "/".join(parts[: i + 1]))
    return out


def visible_trees(package: str) -> list[str]:
    """What the kernel may read: the interpreter's installation, its environment, the package."""
    trees = {os.path.realpath(sys.base_prefix), os.path.realpath(sys.prefix), sys.prefix, package}
    return sorted(t for t in trees if os.path.isdir(t) and not t.startswith("/usr/"))


# the instructor package (grading, book build): .../attention_course_instructor
INSTRUCTOR_PACKAGE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def hidden_trees(trees: list[str]) -> list[str]:
    """The instructor package, where it lies inside a tree the kernel sees (installed into the
    environment rather than used from the repository): mounted over with an empty folder."""
    hidden = os.path.realpath(INSTRUCTOR_PACKAGE)
    inside = any(hidden == os.path.realpath(t) or hidden.startswith(os.path.realpath(t) + "/")
                 for t in trees)
    return [hidden] if inside else []


KERNEL_HOME = "/tmp"            # the kernel's home and working folder, inside the sandbox


def bwrap_args(private: str, package: str, as_root: bool, disk_mb: int = 0) -> list[str]:
    """The bubblewrap command line (up to its ``--``) for a kernel whose private folder is
    ``private`` and whose course package is ``package``; its ``/tmp`` holds at most ``disk_mb``
    (0: bubblewrap's default, half the machine's memory)."""
    args = ["bwrap", "--unshare-pid", "--unshare-ipc", "--unshare-net", "--unshare-uts",
            "--die-with-parent", "--new-session", "--hostname", "grading"]
    if not as_root:
        args.append("--unshare-user")
    args += ["--ro-bind", "/usr", "/usr"]
    for link in ("bin", "sbin", "lib", "lib64", "lib32", "libx32"):
        target = os.path.join("/", link)
        if os.path.islink(target):
            args += ["--symlink", os.readlink(target), target]
        elif os.path.isdir(target):
            args += ["--ro-bind", target, target]
    made = {"/", "/usr"}

    def place(path: str, flag: str) -> None:
        for parent in _ancestors(path):               # parents readable by the kernel's user
            if parent not in made and not parent.startswith("/usr/"):
                args.extend(["--perms", "0755", "--dir", parent])
                made.add(parent)
        args.extend([flag, path, path])
        made.add(path)

    trees = visible_trees(package)
    for tree in trees:
        if not tree.startswith("/tmp/"):
            place(tree, "--ro-bind")
    args += ["--proc", "/proc", "--dev", "/dev", "--perms", "1777"]
    if disk_mb:
        args += ["--size", str(disk_mb * 2 ** 20)]
    args += ["--tmpfs", "/tmp"]
    made |= {"/proc", "/dev", "/tmp"}
    for tree in trees:                                # a CI checkout under /tmp comes back into it
        if tree.startswith("/tmp/"):
            place(tree, "--ro-bind")
    place(private, "--bind")
    for hidden in hidden_trees(trees):                # the grader's own tooling stays out of view
        args += ["--tmpfs", hidden]
    args += ["--chdir", KERNEL_HOME]
    if as_root:                                        # bwrap keeps just what setpriv needs
        args += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
    return args


def setpriv_args(uid: int = NOBODY) -> list[str]:
    """Become ``uid`` for real, with no capabilities and no way to gain any."""
    return ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups",
            "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs", "--"]


def wrap(command: list[str], private: str, package: str, memory_mb: int, uid: int = NOBODY,
         disk_mb: int = 0, cgroup_procs: list[str] = ()) -> list[str]:
    """The command line that runs ``command`` inside the sandbox (as ``uid`` when the grader is
    root: give each kernel its own, from :func:`kernel_uid`), with ``/tmp`` and every file it
    writes bounded by ``disk_mb``, in the cgroup whose ``cgroup.procs`` files are given."""
    as_root = os.geteuid() == 0
    launcher = [sys.executable, "-P", os.path.abspath(__file__), "--memory-mb", str(memory_mb),
                "--fsize-mb", str(disk_mb), "--nproc", str(NPROC if as_root else 0)]
    for procs in cgroup_procs:
        launcher += ["--cgroup-procs", procs]
    launcher.append("--")
    inner = setpriv_args(uid) if as_root else []
    # the kernel's parent is the namespace's init (pid 1), so ipykernel must not watch its parent
    # pid (it would shut down at once); bwrap ends the kernel when the grader goes instead
    unwatched = ["env", "-u", "JPY_PARENT_PID"]
    return [*launcher, *bwrap_args(private, package, as_root, disk_mb), "--", *inner, *unwatched,
            *command]


def prepare_private(folder: str, uid: int = NOBODY) -> None:
    """The kernel's private folder: its own (``uid``'s when the grader is root), mode 0700, so that
    the kernel can make its sockets there."""
    if os.geteuid() == 0:
        os.chown(folder, uid, uid)
    os.chmod(folder, 0o700)


def seal_private(folder: str) -> None:
    """Once the kernel's sockets are made: the private folder back to root (0755), so that the
    kernel can no longer write into it, only use its sockets. An ordinary user's grader cannot
    take it back from a kernel that runs as that same user (the guide says so)."""
    if os.geteuid() == 0:
        os.chown(folder, 0, 0)
        os.chmod(folder, 0o755)


def sandbox_view(launcher_pid: int) -> int | None:
    """A process inside the sandbox that the launcher ``launcher_pid`` started (bubblewrap's
    child, in the kernel's own mount namespace), or None when there is none any more."""
    for stat in os.scandir("/proc"):
        if not stat.name.isdigit():
            continue
        try:
            with open(f"/proc/{stat.name}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == launcher_pid:
            return int(stat.name)
    return None


def tmp_usage(launcher_pid: int) -> tuple[int, int, int] | None:
    """``(bytes used, bytes in all, files)`` of the sandbox's ``/tmp``, seen from outside through
    ``/proc/<pid>/root``; None when the sandbox has ended or cannot be seen."""
    inside = sandbox_view(launcher_pid)
    if inside is None:
        return None
    try:
        st = os.statvfs(f"/proc/{inside}/root{KERNEL_HOME}")
    except OSError:
        return None
    return (st.f_blocks - st.f_bfree) * st.f_frsize, st.f_blocks * st.f_frsize, st.f_files - st.f_ffree


def missing_requirements() -> str:
    """Why grading kernels cannot be sandboxed here ("" when they can)."""
    if shutil.which("bwrap") is None:
        return "bubblewrap (bwrap) is not installed: apt-get install bubblewrap"
    if os.geteuid() == 0 and shutil.which("setpriv") is None:
        return "setpriv (util-linux) is not installed"
    import tempfile

    private = tempfile.mkdtemp(prefix="course-sandbox-check-")
    try:
        prepare_private(private)
        from attention_course.paths import PACKAGE

        probe = wrap([sys.executable, "-c", "import os; print(os.getuid())"], private, str(PACKAGE), 0)
        done = subprocess.run(probe, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"the sandbox could not start ({type(exc).__name__})"
    finally:
        shutil.rmtree(private, ignore_errors=True)
    if done.returncode != 0:
        reason = (done.stderr.strip().splitlines() or ["no message"])[-1]
        return f"the sandbox could not start: {reason} (are user namespaces enabled?)"
    if os.geteuid() == 0 and done.stdout.strip() != str(NOBODY):
        return "the sandboxed kernel did not run as nobody"
    return ""


def available() -> bool:
    """Whether grading kernels can be sandboxed on this machine."""
    return missing_requirements() == ""


def main(argv=None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--memory-mb", type=int, default=0)
    parser.add_argument("--fsize-mb", type=int, default=0)
    parser.add_argument("--nproc", type=int, default=0)
    parser.add_argument("--cgroup-procs", action="append", default=[])
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    for procs in args.cgroup_procs:                   # join the kernel's cgroup: everything the
        with open(procs, "w") as fh:                  # sandbox starts is counted there
            fh.write(str(os.getpid()))
    if args.memory_mb:
        limit = args.memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    if args.fsize_mb:
        limit = args.fsize_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    if args.nproc:
        resource.setrlimit(resource.RLIMIT_NPROC, (args.nproc, args.nproc))
    os.execvp(command[0], command)


if __name__ == "__main__":
    main()
