"""Due dates, extensions and late penalties, kept where nbgrader keeps them.

- **The due date** is the lab's in the gradebook (``nbgrader db assignment add lab8 --duedate
  "2026-10-01 17:00:00 Europe/London"``, or formgrader's *Manage Assignments*).
- **An extension** is nbgrader's own record on a student's submission
  (``SubmittedAssignment.extension``). Granted for a class at once, it comes from
  ``extensions.csv`` in the course folder (columns ``student``, ``assignment``, ``hours``), which
  the hardened grader applies each time it records a lab; an extension set in the gradebook by
  other means is kept where the file says nothing of that student.
- **The late policy** is nbgrader's ``LateSubmissionPlugin`` (``AssignLatePenalties.plugin_class``
  in ``nbgrader_config.py``); the course's, :class:`CourseLatePolicy`, adds a penalty per hour to
  nbgrader's ``none`` and ``zero``. nbgrader's ``autograde`` and the hardened grader read the same
  setting, so both give a late submission the same penalty.

A penalty is nbgrader's ``late_submission_penalty`` on each submitted notebook: formgrader, ``nbgrader
export`` and the LMS exports all subtract it from the score. :func:`apply` sets it for one student;
:func:`recorded` reads it back (the class report).
"""
from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from nbgrader.plugins import LateSubmissionPlugin
from traitlets import Enum, Float

EXTENSIONS = "extensions.csv"


class CourseLatePolicy(LateSubmissionPlugin):
    """nbgrader's late policies (``none``, ``zero``) and ``per_hour``: ``per_hour`` of the score
    for each hour or part of an hour late, at most ``cap`` of it."""

    penalty_method = Enum(("none", "zero", "per_hour"), default_value="none",
                          help="none: no penalty; zero: the whole score; per_hour: per_hour of the "
                               "score per hour started, at most cap").tag(config=True)
    per_hour = Float(0.1, help="share of the score lost per hour (or part) late").tag(config=True)
    cap = Float(0.5, help="the most a late submission loses, as a share of its score").tag(config=True)

    def late_submission_penalty(self, student_id: str, score: float, total_seconds_late: float):
        if self.penalty_method != "per_hour":
            return super().late_submission_penalty(student_id, score, total_seconds_late)
        hours = math.ceil(total_seconds_late / 3600)
        return round(score * min(self.cap, self.per_hour * hours), 2)


@dataclass(frozen=True)
class Late:
    """One late submission as the report states it."""
    student: str
    hours_late: float
    extension_hours: float
    penalty: float


def read_extensions(course: Path) -> dict[tuple[str, str], timedelta]:
    """``extensions.csv`` of the course, {(assignment, student): extension}; {} without the file.
    A row that is not ``student,assignment,hours`` with hours a number >= 0 is refused by name."""
    path = Path(course) / EXTENSIONS
    if not path.exists():
        return {}
    found = {}
    with open(path, newline="") as handle:
        reader = csv.DictReader(handle)
        if {"student", "assignment", "hours"} - set(reader.fieldnames or []):
            raise ValueError(f"{path}: expected the columns student, assignment, hours; "
                             f"got {reader.fieldnames}")
        for line, row in enumerate(reader, start=2):
            try:
                hours = float(row["hours"])
            except (TypeError, ValueError):
                hours = -1.0
            if hours < 0 or not row["student"] or not row["assignment"]:
                raise ValueError(f"{path}, line {line}: expected a student, an assignment and hours "
                                 f">= 0, got {dict(row)}")
            found[(row["assignment"].strip(), row["student"].strip())] = timedelta(hours=hours)
    return found


def late_policy(config) -> LateSubmissionPlugin:
    """The late-submission plugin ``config`` (an nbgrader traitlets Config) names, configured."""
    from traitlets.utils.importstring import import_item

    chosen = config.AssignLatePenalties.get("plugin_class", LateSubmissionPlugin)
    plugin = import_item(chosen) if isinstance(chosen, str) else chosen
    return plugin(config=config)


def course_config(course: Path):
    """nbgrader's configuration for a course: the repository's ``nbgrader_config.py``, then the
    course folder's own, if it has one (its settings win)."""
    from traitlets.config.loader import Config, PyFileConfigLoader

    from attention_course_instructor.grading.nbgrader_cli import CONFIG

    config = Config()
    for path in dict.fromkeys(p.resolve() for p in (CONFIG, Path(course) / "nbgrader_config.py")):
        if path.exists():
            config.merge(PyFileConfigLoader(path.name, str(path.parent)).load_config())
    return config


def apply(gb, assignment: str, student: str, policy: LateSubmissionPlugin,
          extensions: dict) -> Late | None:
    """Set the extension (from ``extensions``, when it names this student) and each notebook's
    late penalty of ``student``'s ``assignment`` in the gradebook, as nbgrader's own
    ``AssignLatePenalties`` does; returns the late submission, or None when it was on time."""
    submission = gb.find_submission(assignment, student)
    if (assignment, student) in extensions:
        submission.extension = extensions[(assignment, student)] or None
    late = submission.total_seconds_late
    for notebook in submission.notebooks:
        notebook.late_submission_penalty = None
        if late > 0:
            value = policy.late_submission_penalty(student, notebook.score, late)
            if value is not None:                  # as AssignLatePenalties: within [0, score]
                notebook.late_submission_penalty = min(max(value, 0.0), notebook.score)
    return recorded(submission)


def recorded(submission) -> Late | None:
    """A submission's lateness as the gradebook holds it (nbgrader's ``SubmittedAssignment``, its
    penalties set by :func:`apply`), or None when it was on time."""
    late = submission.total_seconds_late
    if late <= 0:
        return None
    extension = submission.extension.total_seconds() / 3600 if submission.extension else 0.0
    penalty = sum(notebook.late_submission_penalty or 0.0 for notebook in submission.notebooks)
    return Late(submission.student.id, round(late / 3600, 2), round(extension, 2), round(penalty, 2))
