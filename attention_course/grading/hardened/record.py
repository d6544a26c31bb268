"""Stage 5 of hardened grading: what is written, by the parent process alone.

nbgrader's gradebook (so ``nbgrader export`` and formgrader keep working), per-student feedback
(scores and the lab's own words, never a hidden input, a reference value or text the student's
code produced), and a report of every cell for the instructor.
"""
from __future__ import annotations

import csv
import json
from dataclasses import asdict
from pathlib import Path

from attention_course.grading.hardened.score import SubmissionGrade


def write_gradebook(course, results: list[SubmissionGrade], db_url: str | None = None) -> None:
    """Record the automatic scores in nbgrader's gradebook (the parent process is its only writer)."""
    from nbgrader.api import Gradebook, MissingEntry

    import warnings

    from sqlalchemy.exc import SAWarning

    db_url = db_url or f"sqlite:///{course.root / 'gradebook.db'}"
    with warnings.catch_warnings(), Gradebook(db_url) as gb:
        warnings.simplefilter("ignore", SAWarning)          # nbgrader's own add_submission
        try:
            gb.find_assignment(course.assignment)
        except MissingEntry:
            raise SystemExit(f"{course.assignment} is not in the gradebook {db_url}: run "
                             f"`nbgrader generate_assignment {course.assignment}` first") from None
        for result in results:
            gb.update_or_create_student(result.student)
            try:
                submission = gb.find_submission(course.assignment, result.student)
            except MissingEntry:
                submission = gb.add_submission(course.assignment, result.student)
            scores = {c.grade_id: c for c in result.cells}
            for notebook in submission.notebooks:
                for grade in notebook.grades:
                    cell = scores.get(grade.name)
                    if cell is not None and cell.score is not None:
                        grade.auto_score = cell.score
                        grade.needs_manual_grade = False
                    elif cell is not None and cell.status == "manual":
                        grade.needs_manual_grade = True
            gb.db.commit()


def write_feedback(course, result: SubmissionGrade) -> Path:
    """A student's feedback: every graded cell with its score and the reason for a zero."""
    folder = course.root / "feedback" / result.student / course.assignment
    folder.mkdir(parents=True, exist_ok=True)
    lines = [f"# {course.assignment}: automatic grading", "",
             f"Automatic score: **{result.score:g}** of {result.auto_max:g} "
             "(cells graded by hand are added later).", ""]
    if result.error:
        lines += [f"**Your submission could not be graded:** {result.error}", ""]
    lines += ["| cell | score | result |", "|---|---|---|"]
    for c in result.cells:
        score = "by hand" if c.score is None else f"{c.score:g} / {c.points:g}"
        why = "<br>".join(c.reasons) if c.status != "passed" else ""
        lines.append(f"| {c.grade_id} | {score} | {c.status}{': ' + why if why else ''} |")
    if result.flags:
        lines += ["", "Notes on your notebook:", *[f"- {f}" for f in result.flags]]
    path = folder / "feedback.md"
    path.write_text("\n".join(lines) + "\n")
    return path


def write_report(course, results: list[SubmissionGrade], folder: Path | None = None) -> Path:
    """``report.csv`` (one row per student and cell), ``report.json`` and ``report.md``."""
    folder = folder or course.root / "reports" / course.assignment
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "report.csv", "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["student", "cell", "points", "score", "status", "reason"])
        for r in results:
            for c in r.cells:
                writer.writerow([r.student, c.grade_id, c.points, "" if c.score is None else c.score,
                                 c.status, c.reason])
    (folder / "report.json").write_text(json.dumps(
        [asdict(r) | {"score": r.score, "max_score": r.max_score} for r in results], indent=1))
    def cell(text: str) -> str:                      # student-controlled text must not break the table
        return str(text).replace("|", "\\|").replace("\n", " ")

    lines = [f"# Grading report: {course.assignment}", "",
             f"{len(results)} submissions, seed {course.seed}, sandbox "
             f"{'on' if course.use_sandbox else 'OFF'}.", "",
             "| student | auto score | zeros and reasons | flags |", "|---|---|---|---|"]
    for r in results:
        zeros = "; ".join(f"{c.grade_id}: {c.status} {c.reason}".strip() for c in r.cells
                          if c.score == 0 and c.points > 0)
        lines.append(f"| {cell(r.student)} | {r.score:g} / {r.auto_max:g} | "
                     f"{cell(r.error or zeros)} | {cell('; '.join(r.flags))} |")
    (folder / "report.md").write_text("\n".join(lines) + "\n")
    return folder
