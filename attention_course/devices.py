"""Where the work runs: the GPU when PyTorch sees one, else the CPU."""
from __future__ import annotations


def pick_device(prefer: str | None = None):
    """``torch.device('cuda')`` when a GPU is available (or ``prefer`` names a device), else CPU."""
    import torch

    if prefer is not None:
        return torch.device(prefer)
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def available_cpus() -> int:
    """CPUs this process may really use: its affinity mask, capped by a cgroup CPU quota (a hub's
    or a container's per-user limit) and by ``OMP_NUM_THREADS`` when set; at least 1."""
    import math
    import os
    from pathlib import Path

    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    quota = None
    v2 = Path("/sys/fs/cgroup/cpu.max")                       # cgroup v2: "max 100000" or "200000 100000"
    v1 = Path("/sys/fs/cgroup/cpu/cpu.cfs_quota_us"), Path("/sys/fs/cgroup/cpu/cpu.cfs_period_us")
    try:
        if v2.exists():
            limit, period = v2.read_text().split()[:2]
            quota = None if limit == "max" else int(limit) / int(period)
        elif v1[0].exists() and int(v1[0].read_text()) > 0:
            quota = int(v1[0].read_text()) / int(v1[1].read_text())
    except (OSError, ValueError):
        quota = None
    if quota:
        cpus = min(cpus, max(1, math.floor(quota)))
    asked = os.environ.get("OMP_NUM_THREADS", "")
    if asked.isdigit() and int(asked) > 0:                # an explicit setting (a grader's) wins
        cpus = min(cpus, int(asked))
    return max(1, cpus)


def use_available_cpus(share: float = 0.5) -> int:
    """Give torch ``share`` of the CPUs actually available (see :func:`available_cpus`), at least
    one; returns the thread count.

    The course's models are small: their operations are too short for many threads to pay, and
    threads that spin while they wait steal the cores of anyone sharing the machine. Measured on 2
    cores (Lab 8's attention reader): one thread 0.077 s/step, two 0.072 alone, two with a passive
    wait policy 0.108; with a second process on the cores, two spinning threads were ten times
    slower. The labs' first cell also sets ``OMP_WAIT_POLICY=PASSIVE`` before torch is imported, so
    that extra threads, where there are any, sleep instead of spinning. Lab 12's transformer has
    larger matrix products (d = 128, 128 positions): there two threads on 2 cores train about 1.9x
    as fast as one, so it takes ``share=1``.
    """
    import torch

    if not 0 < share <= 1:
        raise ValueError(f"share must be in (0, 1], got {share}")
    threads = max(1, int(available_cpus() * share))
    torch.set_num_threads(threads)
    return threads
