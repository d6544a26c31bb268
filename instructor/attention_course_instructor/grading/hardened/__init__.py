"""Hardened autograding: every submission graded on the instructor's checks, in a sandbox.

The stages, one module each (see the instructor guide in the book for the threat model):

1. :mod:`~.assemble` -- **rebuild** the notebook that runs from the instructor's source: only the
   student's answer cells come from the submission; tests, locked cells and points from the source.
2. :mod:`~.probes` -- **probe**: each autograded cell is replaced by a call that runs the kernel
   side of the lab's checks (``source/<lab>/checks.py``: inputs and calls, never comparisons or
   references) and emits plain data. The kernel never sees ``NBGRADER_EXECUTION``.
3. :mod:`~.kernel` and :mod:`~.sandbox` -- **run** the cells in a kernel that sees nothing but the
   interpreter, the package and its own folder, as an unprivileged user in its own namespaces,
   with time and memory limits, surviving exits, crashes and loops.
4. :mod:`~.score` -- **check** each probe's data in the grader's own process against the reference
   (the source notebook's solutions), on inputs rebuilt from the grading seed.
5. :mod:`~.record` -- **record**: only the parent process writes the gradebook, feedback, report.

Where submissions are graded: :mod:`~.executors` (worker processes of this machine) or
:mod:`~.dask_workers` (tasks of a Dask cluster, ``--scheduler``); :mod:`~.cli` is the command.

    python -m attention_course_instructor.grading.hardened lab8 --jobs 2          # or: make grade
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import nbformat

from attention_course_instructor.grading.checks import Lab, kernel_seed, load_lab
from attention_course_instructor.grading.hardened.assemble import (SubmissionError, assemble, import_notes,
                                                        nbgrader_meta, read_submission)
from attention_course_instructor.grading.hardened.kernel import CellRunner, KernelStartError, Limits
from attention_course_instructor.grading.hardened.sandbox import NoKernelUid
from attention_course_instructor.grading.hardened.score import (CellGrade, SubmissionGrade, error_words,
                                                     score_cells, zero_cells)

__all__ = ["GradingRun", "Limits", "CellGrade", "SubmissionGrade", "grade_submission", "grade_batch",
           "find_submissions", "nbgrader_meta"]


@dataclass(frozen=True)
class GradingRun:
    """One assignment of one course directory, graded with one seed and one set of limits."""

    root: Path
    assignment: str
    seed: int = 0
    limits: Limits = Limits()
    tamper: str = "fail"               # "fail": zero and flag; "restore": grade on restored cells
    use_sandbox: bool = True

    @property
    def notebook(self) -> str:
        return f"{self.assignment}.ipynb"

    def lab(self) -> Lab:
        return load_lab(self.root / "source" / self.assignment)

    def source(self) -> nbformat.NotebookNode:
        return nbformat.read(self.root / "source" / self.assignment / self.notebook, as_version=4)


def grade_submission(run: GradingRun, student: str, path: Path) -> SubmissionGrade:
    """Grade one submission; never raises (a failure becomes a zero with a reason)."""
    start = time.monotonic()
    result = SubmissionGrade(student)
    try:
        source, lab = run.source(), run.lab()
        try:
            submitted = read_submission(path)
        except SubmissionError as exc:
            result.error = str(exc)
            result.cells = zero_cells(source, str(exc))
            return result
        seed = kernel_seed(run.seed, run.assignment)          # the kernel never sees run.seed
        sources, roles, flags, tampered = assemble(source, submitted, lab, seed)
        result.flags = flags + tampered + import_notes(source, sources, roles, lab)
        if tampered and run.tamper == "fail":
            result.error = "nbgrader metadata tampered with: " + "; ".join(tampered) + " (needs review)"
            result.cells = zero_cells(source, "submission held for review: metadata tampered")
            return result
        runner = CellRunner(run.limits, use_sandbox=run.use_sandbox)
        outcomes = runner.run(sources)
        result.cells = score_cells(source, roles, outcomes, lab, seed)
        for (role, gid), outcome in zip(roles, outcomes):
            what = error_words(outcome.error) if outcome.status == "error" else outcome.status
            if role == "solution" and outcome.status != "ok":
                result.flags.append(f"answer cell {gid!r}: {what}")
            elif role in ("prelude", "run") and outcome.status != "ok":
                result.flags.append(f"instructor cell {gid or 'prelude'!r}: {what}")
    except (KernelStartError, NoKernelUid) as exc:             # not the student's doing
        result.fault = result.error = f"grader fault: {exc}"
        result.cells = []
    except Exception as exc:                                   # the grader's own failure: say so
        result.error = f"grader error: {type(exc).__name__}: {exc}"
        try:
            result.cells = zero_cells(run.source(), result.error)
        except Exception:
            result.cells = []
    finally:
        result.seconds = round(time.monotonic() - start, 2)
    return result


def find_submissions(run: GradingRun) -> dict[str, Path]:
    """student -> path of the notebook they should have submitted (it may not exist), for every
    student with a submission folder for this assignment (as ``nbgrader autograde`` finds them: a
    student who handed in another lab only is not given a zero for this one)."""
    root = run.root / "submitted"
    if not root.exists():
        return {}
    return {d.name: d / run.assignment / run.notebook for d in sorted(root.iterdir())
            if (d / run.assignment).is_dir()}


def grade_batch(run: GradingRun, jobs: int = 1, students: dict[str, Path] | None = None,
                executor=None) -> list[SubmissionGrade]:
    """Grade every submission on ``jobs`` local worker processes, or on ``executor`` (a
    :class:`~.dask_workers.DaskWorkers`); one failure never stops the others."""
    from attention_course_instructor.grading.hardened.executors import LocalWorkers

    students = students if students is not None else find_submissions(run)
    return (executor or LocalWorkers(jobs)).grade(run, students)
