"""Lab 8 time budgets: a student's full run of the notebook, and autograding one submission.

    python -m benchmarks.lab8_notebook_timing

Targets (Lab 8 issue): the complete notebook in <= 5 min on 2 CPU cores; autograding one
submission in <= 20 s. Writes ``benchmarks/results/lab8_timing.md``.
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path


# the throw-away nbgrader course of the tests (tests/nbgrader_harness.py)
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
import nbgrader_harness as harness  # noqa: E402
from benchmarks.report import Target, machine, markdown_table, write  # noqa: E402


HERE = Path(__file__).resolve().parent
REPO = HERE.parent
SOLUTION = REPO / "solutions" / "lab8" / "lab8.ipynb"
STUDENTS = 3


def time_full_run(workdir: Path) -> float:
    env = {k: v for k, v in os.environ.items() if k != "NBGRADER_EXECUTION"}
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "jupyter", "nbconvert", "--to", "notebook", "--execute",
                    "--ExecutePreprocessor.timeout=900", f"--output={workdir / 'run.ipynb'}",
                    str(SOLUTION)], check=True, env=env, cwd=workdir, capture_output=True)
    return time.perf_counter() - start


def time_autograde(workdir: Path) -> float:
    course = harness.make_course(workdir / "course", REPO / "source" / "lab8", "lab8")
    harness.generate(course, "lab8")
    for i in range(STUDENTS):
        harness.submit(course, "lab8", f"student{i}", SOLUTION)
    start = time.perf_counter()
    harness.autograde(course, "lab8")
    return (time.perf_counter() - start) / STUDENTS


BUDGETS = {"complete notebook, as a student runs it": Target(300, unit=" s"),
           f"autograde one submission (mean of {STUDENTS}, nbgrader autograde)": Target(20, unit=" s")}


def report(seconds: dict) -> str:
    return "\n".join([
        "# Lab 8 time budgets", "",
        f"Written by `python -m benchmarks.lab8_notebook_timing` on {machine()}.", "",
        markdown_table(["what", "seconds", "budget", "met"],
                       [[what, f"{s:.0f}", BUDGETS[what], BUDGETS[what].verdict(s)]
                        for what, s in seconds.items()]), ""])


def main():
    with tempfile.TemporaryDirectory() as tmp:
        full = time_full_run(Path(tmp))
        per_submission = time_autograde(Path(tmp))
    write("lab8_timing.md", report(dict(zip(BUDGETS, (full, per_submission)))))


if __name__ == "__main__":
    main()
