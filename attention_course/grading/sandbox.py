"""Start a grading kernel in a sandbox: private mounts, no network, limited memory.

The grader launches kernels as

    unshare --user --map-root-user --mount --net -- python -m attention_course.grading.sandbox \\
        --hide PATH ... --read-only PATH ... --memory-mb M -- python -m ipykernel_launcher -f CONN

Inside the new namespaces this module makes every ``--read-only`` tree read-only, covers every
``--hide`` path (an empty, unreadable directory over a folder; an empty file over a file), limits
the address space, and then replaces itself with the kernel. The network namespace has no
interfaces up, so the kernel talks to the grader over Unix sockets (``transport="ipc"``).
"""
from __future__ import annotations

import argparse
import ctypes
import os
import resource
import shutil
import subprocess
import sys


def _mount(*args: str) -> None:
    subprocess.run(["mount", *args], check=True, capture_output=True)


def _bind_fd(fd: int, target: str) -> None:
    """Bind-mount the folder open as ``fd`` on ``target`` (the mount(8) command would resolve the
    /proc/self/fd link to a path first, and that path now names a different folder)."""
    libc = ctypes.CDLL(None, use_errno=True)
    ms_bind = 4096
    if libc.mount(f"/proc/self/fd/{fd}".encode(), target.encode(), None, ms_bind, None) != 0:
        raise OSError(ctypes.get_errno(), f"cannot bind the private folder on {target}")


def available() -> bool:
    """Whether unprivileged user, mount and network namespaces work on this machine."""
    if shutil.which("unshare") is None or shutil.which("mount") is None:
        return False
    probe = subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "--net", "--",
                            "mount", "-t", "tmpfs", "none", "/mnt"], capture_output=True)
    return probe.returncode == 0


def wrap(command: list[str], hide: list[str], read_only: list[str], memory_mb: int,
         private_tmp: str | None = None, keep: list[str] = ()) -> list[str]:
    """The command line that runs ``command`` inside the sandbox."""
    args = ["unshare", "--user", "--map-root-user", "--mount", "--net", "--",
            sys.executable, "-m", "attention_course.grading.sandbox", "--memory-mb", str(memory_mb)]
    if private_tmp:
        args += ["--private-tmp", private_tmp]
    for path in keep:
        args += ["--keep", path]
    for path in read_only:
        args += ["--read-only", path]
    for path in hide:
        args += ["--hide", path]
    return args + ["--", *command]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--hide", action="append", default=[])
    parser.add_argument("--read-only", action="append", default=[])
    parser.add_argument("--memory-mb", type=int, default=0)
    parser.add_argument("--private-tmp", help="the kernel's own folder under /tmp")
    parser.add_argument("--keep", action="append", default=[],
                        help="a folder the kernel needs that may live under /tmp (the package, the venv)")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    _mount("--make-rprivate", "/")
    if args.private_tmp:
        # an empty /tmp, with only the kernel's folder and what it needs brought back; this comes
        # first, so that the read-only and hiding mounts below also apply to what was brought back
        keep = [p for p in [args.private_tmp, *args.keep] if _under_tmp(p) and os.path.isdir(p)]
        fds = [os.open(p, os.O_PATH | os.O_DIRECTORY) for p in keep]
        _mount("-t", "tmpfs", "-o", "mode=1777", "tmp", "/tmp")
        for path, fd in zip(keep, fds):
            os.makedirs(path, exist_ok=True)
            _bind_fd(fd, path)
            os.close(fd)
    for path in args.read_only:
        if os.path.isdir(path):
            _mount("--rbind", path, path)
            _mount("-o", "remount,bind,ro", path)
    for path in args.hide:
        if os.path.isdir(path):
            _mount("-t", "tmpfs", "-o", "size=4k,mode=000", "hidden", path)
        elif os.path.exists(path):
            _mount("--bind", "/dev/null", path)
    if args.memory_mb:
        limit = args.memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    # One more user and mount namespace, with no uid mapped: the kernel runs as "nobody", and the
    # mounts above become locked (they cannot be unmounted or made writable from inside).
    os.execvp("unshare", ["unshare", "--user", "--mount", "--", *command])


def _under_tmp(path: str) -> bool:
    return os.path.realpath(path).startswith("/tmp/")


if __name__ == "__main__":
    main()
