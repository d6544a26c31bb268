"""One question across the class: its answers, anonymised and shuffled, and grades written to
nbgrader's gradebook.

- :func:`questions` -- every cell graded by hand of every assignment in the gradebook, with its
  task's name and its rubric (read from the source notebook);
- :func:`answers` -- every student's answer to one question, each named by an opaque token (an
  HMAC of the student's id with the course's secret), in an order shuffled once per question and
  kept (the same at every visit, different from question to question, never alphabetical);
- :func:`apply` -- a score and a comment written into the gradebook, as formgrader's own API
  writes them (formgrader, the feedback and the LMS passback read them from there), and one line
  appended to the lab's grading log, ``reports/<lab>/grading-log.jsonl``. Given the answer's
  ``state`` as a page showed it, it refuses (:class:`GradedMeanwhile`) when the grade changed
  since: one teaching assistant never overwrites another's grade unknowingly.
"""
from __future__ import annotations

import fcntl
import hashlib
import hmac
import json
import os
import secrets
import time
from dataclasses import dataclass
from pathlib import Path

import nbformat
from nbgrader import utils as nbgrader_utils
from nbgrader.api import Gradebook, MissingEntry

from attention_course_instructor.grading.feedback import task_names
from attention_course_instructor.grading.notebook import points
from attention_course_instructor.grading.rubric import Rubric, rubrics

SECRET_FILE = ".grading-by-question-secret"


@dataclass(frozen=True)
class Question:
    assignment: str
    notebook: str
    grade_id: str
    name: str                  # the task it belongs to, as the feedback names it
    max_points: float
    rubric: Rubric | None

    @property
    def path(self) -> str:
        return f"{self.assignment}/{self.notebook}/{self.grade_id}"


@dataclass(frozen=True)
class Answer:
    token: str                 # what the page shows instead of a name
    student: str               # never shown on the question page
    text: str                  # the student's cell, as they wrote it (shown escaped)
    cell_type: str
    score: float | None        # the score it has now (manual where set, else nbgrader's own)
    comment: str
    graded: bool
    state: str                 # the grade as read here (see :func:`grade_state`)


class GradedMeanwhile(RuntimeError):
    """The answer's grade changed after the page that applies to it was drawn."""


def grade_state(grade, comment) -> str:
    """A short fingerprint of what a grader sees of an answer's grade: the manual score, whether
    it still needs grading, the comment. Any change to one of them (from these pages, another
    teaching assistant's or formgrader) changes it."""
    seen = [grade.manual_score, bool(grade.needs_manual_grade),
            comment.manual_comment if comment is not None else None]
    return hashlib.sha256(json.dumps(seen).encode()).hexdigest()[:16]


def course_secret(root: Path) -> bytes:
    """The course's key for answer tokens, made once (readable by its owner only)."""
    path = Path(root) / SECRET_FILE
    if not path.exists():
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as out:
            out.write(secrets.token_hex(32))
    return path.read_text().strip().encode()


def token(secret: bytes, assignment: str, student: str) -> str:
    return hmac.new(secret, f"{assignment}\0{student}".encode(), hashlib.sha256).hexdigest()[:12]


def source_notebook(coursedir, assignment: str, notebook: str):
    path = Path(coursedir.format_path(coursedir.source_directory, ".", assignment)) / f"{notebook}.ipynb"
    return nbformat.read(path, as_version=4)


def questions(coursedir, db_url: str, by_hand: bool = True) -> list[Question]:
    """Every cell graded by hand (with ``by_hand=False``: every graded cell), assignment by
    assignment, in the notebook's order."""
    found = []
    with Gradebook(db_url) as gb:
        for assignment in sorted(gb.assignments, key=lambda a: a.name):
            for notebook in assignment.notebooks:
                try:
                    nb = source_notebook(coursedir, assignment.name, notebook.name)
                except FileNotFoundError:
                    continue
                names, kept = task_names(nb), rubrics(nb)
                for cell in nb.cells:
                    if nbgrader_utils.is_grade(cell) and (nbgrader_utils.is_solution(cell) or not by_hand):
                        grade_id = cell.metadata["nbgrader"]["grade_id"]
                        found.append(Question(assignment.name, notebook.name, grade_id,
                                              names.get(grade_id, grade_id),
                                              points(cell), kept.get(grade_id)))
    return found


def question(coursedir, db_url: str, assignment: str, notebook: str | None, grade_id: str,
             by_hand: bool = True) -> Question:
    """One of :func:`questions` (any notebook of the assignment where ``notebook`` is None)."""
    for q in questions(coursedir, db_url, by_hand):
        if (q.assignment, q.grade_id) == (assignment, grade_id) and notebook in (None, q.notebook):
            return q
    raise KeyError(f"no {'question graded by hand' if by_hand else 'graded task'} called "
                   f"{assignment}/{notebook or '*'}/{grade_id}")


def answers(coursedir, db_url: str, q: Question) -> list[Answer]:
    """Every autograded student's answer to ``q``, anonymised, in the question's shuffled order."""
    secret = course_secret(Path(coursedir.root))
    found = []
    with Gradebook(db_url) as gb:
        for submission in gb.assignment_submissions(q.assignment):
            student = submission.student.id
            try:
                grade = gb.find_grade(q.grade_id, q.notebook, q.assignment, student)
                comment = gb.find_comment(q.grade_id, q.notebook, q.assignment, student)
            except MissingEntry:
                continue
            text, cell_type = _answer_text(coursedir, q, student)
            score = grade.manual_score if grade.manual_score is not None else grade.auto_score
            found.append(Answer(token(secret, q.assignment, student), student, text, cell_type,
                                score, comment.manual_comment or "", not grade.needs_manual_grade,
                                grade_state(grade, comment)))
    order = lambda a: hmac.new(secret, f"{q.path}\0{a.token}".encode(), hashlib.sha256).digest()  # noqa: E731
    return sorted(found, key=order)


def progress(db_url: str, q: Question) -> tuple[int, int]:
    """(answers, graded) of ``q``, from the gradebook alone (no notebook is read)."""
    with Gradebook(db_url) as gb:
        cell = gb.find_grade_cell(q.grade_id, q.notebook, q.assignment)
        return len(cell.grades), sum(not g.needs_manual_grade for g in cell.grades)


def _answer_text(coursedir, q: Question, student: str) -> tuple[str, str]:
    path = Path(coursedir.format_path(coursedir.autograded_directory, student, q.assignment)) / f"{q.notebook}.ipynb"
    try:
        nb = nbformat.read(path, as_version=4)
    except (OSError, ValueError):
        return "", "markdown"
    for cell in nb.cells:
        if cell.metadata.get("nbgrader", {}).get("grade_id") == q.grade_id:
            return cell.source, cell.cell_type
    return "", "markdown"


def grade_now(db_url: str, q: Question, student: str) -> tuple[float, str] | None:
    """``student``'s grade of ``q`` now and its :func:`grade_state` (None: they have none)."""
    with Gradebook(db_url) as gb:
        try:
            grade = gb.find_grade(q.grade_id, q.notebook, q.assignment, student)
        except MissingEntry:
            return None
        try:
            comment = gb.find_comment(q.grade_id, q.notebook, q.assignment, student)
        except MissingEntry:
            comment = None
        return float(grade.score or 0.0), grade_state(grade, comment)


def apply(coursedir, db_url: str, q: Question, student: str, score: float, comment: str | None,
          grader: str, why: str = "graded by question", items: tuple[str, ...] = (),
          seen: str | None = None, note: str = "") -> dict:
    """Write ``score`` (and ``comment``, unless None) for ``student``'s answer to ``q``; returns
    the log line, which says what the score was before (None: not graded yet). ``seen``: the
    answer's :attr:`Answer.state` where the grader read it (``note``: what the grader wrote beside
    the items, kept in the log for the next page); when the grade has changed since,
    nothing is written and :class:`GradedMeanwhile` says who changed it, when, and to what.
    Applying holds the lab's grading log locked, from the check to the log's line, so that two
    graders' servers on one course folder never interleave."""
    if not 0 <= score <= q.max_points:
        raise ValueError(f"{q.grade_id}: a score from 0 to {q.max_points:g}, not {score:g}")
    log = grading_log(coursedir.root, q.assignment)
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "a") as out:
        fcntl.flock(out, fcntl.LOCK_EX)                      # released when the file closes
        with Gradebook(db_url) as gb:
            grade = gb.find_grade(q.grade_id, q.notebook, q.assignment, student)
            try:
                held = gb.find_comment(q.grade_id, q.notebook, q.assignment, student)
            except MissingEntry:
                held = None
            if seen is not None and seen != grade_state(grade, held):
                raise GradedMeanwhile(changed_since(coursedir.root, q, student, grade, held))
            before = grade.manual_score if grade.manual_score is not None else grade.auto_score
            grade.manual_score = score
            grade.needs_manual_grade = False
            if comment is not None and held is not None:
                held.manual_comment = comment
            gb.db.commit()
            after = grade_state(grade, held)
        line = {"at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "by": grader, "what": why,
                "assignment": q.assignment, "notebook": q.notebook, "task": q.grade_id,
                "student": student, "items": list(items), "score_before": before,
                "score_after": score, "note": note, "state": after}
        out.write(json.dumps(line) + "\n")
    return line


def grading_log(root: Path, assignment: str) -> Path:
    return Path(root) / "reports" / assignment / "grading-log.jsonl"


def last_lines(root: Path, q: Question) -> dict[str, dict]:
    """student -> the grading log's last line for their answer to ``q`` (none: never applied)."""
    log, last = grading_log(root, q.assignment), {}
    for line in log.read_text().splitlines() if log.exists() else []:
        entry = json.loads(line)
        if (entry["task"], entry["notebook"]) == (q.grade_id, q.notebook):
            last[entry["student"]] = entry
    return last


def changed_since(root: Path, q: Question, student: str, grade, comment) -> str:
    """What a grader is told when the answer's grade changed after their page was drawn: its
    grade now and, from the grading log, who applied it and when -- where the log's last line for
    the answer left it as it is now; a change made elsewhere (formgrader, autograding again)
    leaves no line."""
    last = last_lines(root, q).get(student)
    now = ("not graded" if grade.needs_manual_grade else
           f"{grade.score or 0:g} of {q.max_points:g}")
    said = " ".join((comment.manual_comment or "").split()) if comment is not None else ""
    said = said if len(said) <= 200 else said[:199].rstrip() + "…"
    here = last is not None and last.get("state") == grade_state(grade, comment)
    when = last["at"].replace("T", " ").replace("Z", " UTC") if last else ""
    who = (f"{last['by']} applied {last['score_after']:g} at {when}" if here else
           "it was changed outside these pages (in formgrader, or by autograding again: the "
           "grading log has no line for it)")
    return (f"The grade changed after your page was opened: {who}. It is {now} now"
            + (f", with the comment “{said}”" if said else "") + ". Nothing was written: "
            "open the question again to read it, and apply again if it should change.")
