"""Lab 8 on a shared machine: two students running the whole notebook at once on 2 cores.

    python -m benchmarks.shared_machine

Runs the solution notebook as a student does (full training, no NBGRADER_EXECUTION) once alone,
then two copies at the same time, and reports the slow-down of the pair against one run (target:
at most 2.5x; two runs that share two cores perfectly take 2x as long as one with both cores). The
lab's first cell sets ``OMP_WAIT_POLICY=PASSIVE`` and one torch thread per CPU it may use
(``attention_course.devices.use_available_cpus``). Writes ``benchmarks/results/shared_machine.md``.
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path


from benchmarks.report import Target, machine, markdown_table, write

HERE = Path(__file__).resolve().parent
SOLUTION = HERE.parent / "solutions" / "lab8" / "lab8.ipynb"


def start_run(workdir: Path) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if k not in ("NBGRADER_EXECUTION", "OMP_NUM_THREADS")}
    workdir.mkdir(parents=True, exist_ok=True)
    return subprocess.Popen([sys.executable, "-m", "jupyter", "nbconvert", "--to", "notebook", "--execute",
                             "--ExecutePreprocessor.timeout=1800", f"--output={workdir / 'run.ipynb'}",
                             str(SOLUTION)], env=env, cwd=workdir, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)


def timed(workdirs: list[Path]) -> float:
    start = time.perf_counter()
    runs = [start_run(w) for w in workdirs]
    if any(r.wait() != 0 for r in runs):
        raise SystemExit("a notebook run failed")
    return time.perf_counter() - start


SLOW_DOWN = Target(2.5, unit="x")      # the pair against one run (2x: two cores shared perfectly)


def report(alone: float, pair: float) -> str:
    ratio = pair / alone
    return "\n".join([
        "# Lab 8 on a shared machine", "",
        f"Written by `python -m benchmarks.shared_machine` on {machine()}.", "",
        markdown_table(["what", "seconds"], [
            ["one student's complete notebook, alone", f"{alone:.0f}"],
            ["two students' notebooks at once (both finished)", f"{pair:.0f}"],
            ["slow-down of the pair against one run",
             f"{ratio:.2f}x (target: {SLOW_DOWN}; {SLOW_DOWN.verdict(ratio)})"]]), ""])


def main():
    with tempfile.TemporaryDirectory() as tmp:
        alone = timed([Path(tmp) / "alone"])
        pair = timed([Path(tmp) / "first", Path(tmp) / "second"])
    write("shared_machine.md", report(alone, pair))


if __name__ == "__main__":
    main()
