"""What building the hub's course environment costs, copied from the course's ``.venv`` and
installed with pip (``deploy/hub/user_env.py`` and its ``--pip``).

    .venv/bin/python -m benchmarks.hub_env_build      (as root, after `make test` or `make book`)

Each way builds a new environment into a temporary prefix, ``ROUNDS`` times, alternating: the
seconds on the wall and the CPU-seconds of the build and everything it started. ``make test``
builds the environment once on a clean clone (the hub tests' set-up), and ``make hub-env`` once
on a hub machine.
"""
from __future__ import annotations

import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.report import machine, markdown_table, write

REPO = Path(__file__).resolve().parents[1]
ROUNDS = 2
WAYS = {"copied from .venv": [], "installed with pip (--pip)": ["--pip"]}


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def build_once(extra: list[str]) -> tuple[float, float]:
    """(wall seconds, CPU-seconds) of one build into a fresh prefix, removed afterwards."""
    prefix = Path(tempfile.mkdtemp(prefix="hub-env-benchmark-"))
    prefix.chmod(0o755)
    try:
        cpu, start = children_cpu(), time.perf_counter()
        subprocess.run([sys.executable, str(REPO / "deploy" / "hub" / "user_env.py"),
                        "--prefix", str(prefix), *extra], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return time.perf_counter() - start, children_cpu() - cpu
    finally:
        shutil.rmtree(prefix)


def main() -> None:
    if os.geteuid() != 0:
        sys.exit("run as root: the environment is built as make hub-env builds it")
    started = time.strftime("%Y-%m-%d %H:%M")
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, check=True,
                            capture_output=True, text=True).stdout.strip()
    runs = {way: [] for way in WAYS}
    for _ in range(ROUNDS):
        for way, extra in WAYS.items():
            runs[way].append(build_once(extra))
    rows = [[way, " / ".join(f"{w:.0f}" for w, _ in r), " / ".join(f"{c:.0f}" for _, c in r)]
            for way, r in runs.items()]
    write("hub_env_build.md", "\n".join([
        "# Building the hub's course environment", "",
        f"Written by `python -m benchmarks.hub_env_build` on {machine()}, commit {commit}, "
        f"{started}: `deploy/hub/user_env.py` into a new prefix each time, {ROUNDS} rounds, the "
        "two ways alternating (each build also copies the Python and builds the two wheels).", "",
        markdown_table(["way", "seconds", "CPU-seconds"], rows), ""]))


if __name__ == "__main__":
    main()
