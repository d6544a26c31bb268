"""Hardened grading of a class on Dask against the local worker pool, on this machine.

    python -m benchmarks.dask_grading        # about 8 minutes on 2 cores

40 submissions of Lab 8 (correct, one task wrong, the untouched release, in turn), graded

1. on the local pool with 2 worker processes;
2. on a Dask scheduler with 2 workers (one thread each) on 127.0.0.1;
3. on Dask again, with one worker killed when half the batch is done (its tasks run again on the
   other one);

plus the scheduler's overhead per submission: the round trip of a task that carries a submission's
bytes and does nothing. Every run must give the same scores. Writes
``benchmarks/results/dask_grading.md``.
"""
from __future__ import annotations

import json
import platform
import sys
import tempfile
import threading
import time
from pathlib import Path

import nbformat

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
from dask_helpers import Cluster, comparable  # noqa: E402

import nbgrader_harness as harness  # noqa: E402
from attention_course_instructor.grading.notebook import grade_id  # noqa: E402
from attention_course_instructor.grading.hardened import GradingRun, Limits, grade_batch  # noqa: E402
from attention_course_instructor.grading.hardened.dask_workers import DaskWorkers, submission_files  # noqa: E402
from benchmarks.report import machine, markdown_table, write  # noqa: E402

SUBMISSIONS = 40
WRONG_MAP = "def attention_map(weights, reading, n_columns):\n    return weights[:, :n_columns].flip(0)\n"


def make_course(tmp: Path) -> GradingRun:
    course = harness.make_course(tmp / "course", REPO / "source" / "lab8", "lab8")
    harness.generate(course, "lab8")
    solution = nbformat.read(REPO / "solutions" / "lab8" / "lab8.ipynb", as_version=4)
    wrong = nbformat.from_dict(json.loads(json.dumps(solution)))
    next(c for c in wrong.cells if grade_id(c) == "task6_solution").source = WRONG_MAP
    release = nbformat.read(course.root / "labs" / "lab8" / "lab8.ipynb", as_version=4)
    for i in range(SUBMISSIONS):
        folder = course.root / "submitted" / f"student{i:02d}" / "lab8"
        folder.mkdir(parents=True)
        nbformat.write((solution, wrong, release)[i % 3], folder / "lab8.ipynb")
    return GradingRun(course.root, "lab8", seed=3, limits=Limits(cell_seconds=30, run_seconds=300))


def timed(fn):
    start = time.monotonic()
    out = fn()
    return out, time.monotonic() - start


def kill_half_way(cluster: Cluster, workers: DaskWorkers, name: str) -> threading.Thread:
    """Kill worker ``name`` once half the batch's tasks are known to the scheduler."""
    def watch():
        while len([k for k in workers.client.who_has() if str(k).startswith("grade-")]) \
                < SUBMISSIONS // 2:
            time.sleep(0.2)
        cluster.kill(name)
    killer = threading.Thread(target=watch, daemon=True)
    killer.start()
    return killer


def measure(tmp: Path) -> dict:
    """Seconds and scores of the three runs, and the scheduler's overhead per submission."""
    run = make_course(tmp)
    measured = {}
    measured["local"] = timed(lambda: comparable(grade_batch(run, jobs=2)))
    cluster = Cluster(tmp)
    try:
        for name in ("w1", "w2"):
            cluster.add_worker(name)
        cluster.wait_for({"w1", "w2"})
        with DaskWorkers(cluster.address) as workers:
            sample = submission_files(run.root / "submitted" / "student00" / "lab8" / "lab8.ipynb")
            measured["overhead_ms"] = workers.overhead_ms(sample)
            measured["dask"] = timed(lambda: comparable(grade_batch(run, executor=workers)))
            kill_half_way(cluster, workers, "w2")
            measured["killed"] = timed(lambda: comparable(grade_batch(run, executor=workers)))
    finally:
        cluster.close()
    return measured


def report(measured: dict) -> str:
    """The results page from :func:`measure`'s numbers."""
    (local, local_s), (on_dask, dask_s), (killed, killed_s) = (
        measured["local"], measured["dask"], measured["killed"])
    rows = [("local pool, 2 processes", local_s), ("Dask, 2 workers", dask_s),
            ("Dask, one of 2 workers killed half way", killed_s)]
    same = local == on_dask == killed
    lines = ["# Hardened grading on Dask against the local pool", "",
             f"Measured by `python -m benchmarks.dask_grading` on {machine()}, "
             f"Python {platform.python_version()}: {SUBMISSIONS} Lab 8 submissions (correct, one "
             "task wrong, the untouched release, in turn), sandboxed kernels.", "",
             markdown_table(["run", "seconds", "per submission s", "vs local"],
                            [[name, f"{s:.1f}", f"{s / SUBMISSIONS:.2f}", f"{s / local_s:.2f}x"]
                             for name, s in rows], align="-rrr"), "",
             f"Scheduler overhead per submission (round trip of a task carrying one submission's "
             f"bytes): {measured['overhead_ms']:.1f} ms.", "",
             f"Every run gave the same score in every cell of every submission: "
             f"{'yes' if same else 'NO'}."]
    return "\n".join(lines)


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        measured = measure(Path(tmp))
    write("dask_grading.md", report(measured))
    local, on_dask, killed = (measured[k][0] for k in ("local", "dask", "killed"))
    return 0 if local == on_dask == killed else 1


if __name__ == "__main__":
    sys.exit(main())
