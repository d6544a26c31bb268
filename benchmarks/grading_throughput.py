"""What hardened grading costs: one submission, and a batch of 20 over one core and all cores.

    python -m benchmarks.grading_throughput

Target (hardened-grading issue): the hardened path adds at most 50 % to one submission's grading
time compared with plain ``nbgrader autograde``; a batch can use every core. Writes
``benchmarks/results/grading_throughput.md``. The batch is 20 generated submissions: 10 copies of
the solution and 10 with one task broken in different ways (wrong values, an exception, a loop
cut by the time limit, a killed kernel), so restarts are part of the measurement.
"""
from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import nbformat

from attention_course_instructor.grading.notebook import grade_id
from attention_course_instructor.grading.hardened import GradingRun, grade_batch
from attention_course_instructor.grading.hardened.kernel import Limits

# the throw-away nbgrader course of the tests (tests/nbgrader_harness.py)
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
import nbgrader_harness as harness  # noqa: E402
from benchmarks.report import Target, machine, markdown_table, write  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
RATIO = Target(1.5, unit="x")                # hardened against nbgrader, one submission
REPEATS = 3
BROKEN = {
    "wrong": "def attention_map(weights, reading, n_columns):\n    return weights\n",
    "raises": "def attention_map(weights, reading, n_columns):\n    raise ValueError\n",
    "loop": "def attention_map(weights, reading, n_columns):\n    while True:\n        pass\n",
    "exit": "import os\nos._exit(1)\n",
    "dtype": "def attention_map(w, r, n):\n    return w[:min(len(r) + 1, w.shape[0]), :n].double()\n",
}
LIMITS = Limits(cell_seconds=30, run_seconds=300, memory_mb=6144)


def make_batch(course_root: Path, solution: Path, count: int = 20) -> None:
    kinds = list(BROKEN)
    for i in range(count):
        nb = nbformat.read(solution, as_version=4)
        if i % 2:
            kind = kinds[(i // 2) % len(kinds)]
            next(c for c in nb.cells if grade_id(c) == "task6_solution").source = BROKEN[kind]
        folder = course_root / "submitted" / f"student{i:02d}" / "lab8"
        folder.mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, folder / "lab8.ipynb")


def one_submission(root: Path) -> dict:
    """Seconds to grade the Lab 8 solution, ``REPEATS`` times each way:
    ``{"nbgrader": [...], "hardened": [...]}``."""
    plain = harness.make_course(root / "plain", REPO / "source" / "lab8", "lab8")
    _, solutions = harness.generate(plain, "lab8")
    hardened = GradingRun(plain.root, "lab8", limits=LIMITS)
    times = {"nbgrader": [], "hardened": []}
    for i in range(REPEATS):
        student = f"one{i}"
        harness.submit(plain, "lab8", student, solutions / "lab8.ipynb")
        start = time.perf_counter()
        plain.nbgrader("autograde", "lab8", "--force", f"--student={student}")
        times["nbgrader"].append(time.perf_counter() - start)
        notebook = plain.root / "submitted" / student / "lab8" / "lab8.ipynb"
        start = time.perf_counter()
        [result] = grade_batch(hardened, jobs=1, students={student: notebook})
        times["hardened"].append(time.perf_counter() - start)
        assert result.score == 23, result
    return times


def batch(root: Path, jobs_to_try: tuple[int, ...]) -> dict[int, float]:
    """Wall seconds to grade the batch of 20 with each number of workers; every run must give
    every cell the same score and status."""
    course = harness.make_course(root / "batch", REPO / "source" / "lab8", "lab8")
    _, solutions = harness.generate(course, "lab8")
    make_batch(course.root, solutions / "lab8.ipynb")
    run = GradingRun(course.root, "lab8", limits=LIMITS)
    walls, scores = {}, {}
    for jobs in jobs_to_try:
        start = time.perf_counter()
        results = grade_batch(run, jobs=jobs)
        walls[jobs] = time.perf_counter() - start
        assert sum(r.score == 23 for r in results) == 10
        assert all(r.score == 21 for r in results if r.score != 23)
        scores[jobs] = [(r.student, [(c.grade_id, c.score, c.status) for c in r.cells])
                        for r in results]
    assert len({repr(s) for s in scores.values()}) == 1, "the runs graded differently"
    return walls


def report(times: dict, walls: dict[int, float]) -> str:
    """The results page from :func:`one_submission`'s and :func:`batch`'s measurements."""
    one_plain, one_hard = statistics.median(times["nbgrader"]), statistics.median(times["hardened"])
    ratio = one_hard / one_plain
    lines = [
        "# Hardened grading: cost", "",
        f"Measured by `python -m benchmarks.grading_throughput` on {machine()}, "
        f"Python {sys.version.split()[0]}.", "",
        f"## One submission (the Lab 8 solution), median of {REPEATS}", "",
        markdown_table(["path", "seconds"], [
            ["`nbgrader autograde` (NBGRADER_EXECUTION set: the lab's training is cut short)",
             f"{one_plain:.1f}"],
            ["hardened (rebuild, sandboxed kernel, probes, checks in the grader)", f"{one_hard:.1f}"],
            ["hardened / nbgrader", f"{ratio:.2f} (target: {RATIO}; {RATIO.verdict(ratio)})"]]), "",
        "## A batch of 20 submissions (10 correct, 10 with task 6 broken in five ways)", "",
        markdown_table(["workers", "wall seconds", "per submission"],
                       [[jobs, f"{wall:.1f}", f"{wall / 20:.1f}"] for jobs, wall in walls.items()]), "",
        "Every cell's score and status were identical in both runs (asserted). The gradebook is",
        "written once, by the parent process, after the workers finish. The broken submissions",
        "include two loops stopped by the 30 s cell limit and two kernels killed by `os._exit`,",
        "each followed by a kernel restart; the loops' 30 s waits set a floor on the wall time.",
        "Grading kernels run one thread each (`OMP_NUM_THREADS=1` unless set).",
    ]
    return "\n".join(lines)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        times = one_submission(Path(tmp))
        walls = batch(Path(tmp), (1, len(os.sched_getaffinity(0))))
    write("grading_throughput.md", report(times, walls))


if __name__ == "__main__":
    main()
