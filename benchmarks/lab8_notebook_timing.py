"""Lab 8 time budgets: a student's full run of the notebook, and autograding one submission.

    .venv/bin/python benchmarks/lab8_notebook_timing.py

Targets (Lab 8 issue): the complete notebook in <= 5 min on 2 CPU cores; autograding one
submission in <= 20 s. Writes ``benchmarks/results/lab8_timing.md``.
"""
from __future__ import annotations

import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

# the throw-away nbgrader course of the tests (tests/nbgrader_harness.py)
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
import nbgrader_harness as harness  # noqa: E402


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


def main():
    with tempfile.TemporaryDirectory() as tmp:
        full = time_full_run(Path(tmp))
        per_submission = time_autograde(Path(tmp))
    machine = f"{platform.machine()}, {os.cpu_count()} cores, torch {torch.__version__}, " \
              f"cuda {'yes' if torch.cuda.is_available() else 'no'}"
    rows = [
        ("complete notebook, as a student runs it", full, 300),
        (f"autograde one submission (mean of {STUDENTS}, nbgrader autograde)", per_submission, 20),
    ]
    text = "\n".join([
        "# Lab 8 time budgets", "",
        f"Written by `benchmarks/lab8_notebook_timing.py` on {machine}.", "",
        "| what | seconds | budget | met |", "|---|---|---|---|",
        *[f"| {what} | {sec:.0f} | {budget} | {'yes' if sec <= budget else '**no**'} |"
          for what, sec, budget in rows], ""])
    (HERE / "results").mkdir(exist_ok=True)
    (HERE / "results" / "lab8_timing.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
