"""Grading submissions: one (:func:`grade_submission`, the stages in order) or a batch
(:func:`grade_batch`, on worker processes of this machine or on a Dask cluster)."""
from __future__ import annotations

import time
from pathlib import Path

from attention_course_instructor.grading.checks import kernel_seed
from attention_course_instructor.grading.hardened.assemble import (SubmissionError, assemble, import_notes,
                                                                   link_on_path, read_submission)
from attention_course_instructor.grading.hardened.executors import LocalWorkers
from attention_course_instructor.grading.hardened.kernel import CellRunner, KernelStartError
from attention_course_instructor.grading.hardened.run import GradingRun
from attention_course_instructor.grading.hardened.sandbox import NoKernelUid
from attention_course_instructor.grading.hardened.score import (SubmissionGrade, error_words, score_cells,
                                                                zero_cells)


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
            what = (error_words(outcome.error) if outcome.status == "error" else
                    f"{outcome.status} ({outcome.error})" if outcome.error else outcome.status)
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
    # a link (to a folder or not) is listed too, so that it is refused with its reason, not skipped
    return {d.name: d / run.assignment / run.notebook for d in sorted(root.iterdir())
            if (d / run.assignment).is_dir() or (d / run.assignment).is_symlink() or d.is_symlink()}


def grade_batch(run: GradingRun, jobs: int = 1, students: dict[str, Path] | None = None,
                executor=None) -> list[SubmissionGrade]:
    """Grade every submission on ``jobs`` local worker processes, or on ``executor`` (a
    :class:`~.dask_workers.DaskWorkers`); one failure never stops the others."""
    students = students if students is not None else find_submissions(run)
    refused = {s: link_on_path(Path(p), run.root / "submitted") for s, p in students.items()}
    refused = {s: why for s, why in refused.items() if why}
    graded = (executor or LocalWorkers(jobs)).grade(run, {s: p for s, p in students.items()
                                                          if s not in refused}) if len(refused) < len(students) else []
    by_student = {r.student: r for r in graded}
    for student, why in refused.items():                 # never read, never sent to a worker
        by_student[student] = SubmissionGrade(student, zero_cells(run.source(), why), error=why)
    return [by_student[s] for s in students]
