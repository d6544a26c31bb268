"""Due dates, extensions and late penalties, kept where nbgrader keeps them.

- **The due date** is the lab's in the gradebook (``nbgrader db assignment add lab8 --duedate
  "2026-10-01 17:00:00 Europe/London"``, or formgrader's *Manage Assignments*).
- **The time of submission** is ``submitted/<student>/<lab>/timestamp.txt``, which the course's
  collect writes from a clock no student sets; where ``submitted/`` was filled by hand it is read
  with :func:`parse_submission_time`, which takes only a full date and time (nbgrader's form,
  ``2026-10-01 17:00:00.000000 UTC``, or ISO 8601), never in the future, and says why otherwise.
- **An extension** is nbgrader's own record on a student's submission
  (``SubmittedAssignment.extension``). Granted for a class at once, it comes from
  ``extensions.csv`` in the course folder (columns ``student``, ``assignment``, ``hours``), which
  the hardened grader applies each time it records a lab; an extension set in the gradebook by
  other means is kept where the file says nothing of that student. A row that names a student
  or lab the course does not have, repeats another, or gives hours that are not a number >= 0 is
  refused by its line, and nothing is recorded until it is put right.
- **The late policy** is nbgrader's ``LateSubmissionPlugin`` (``AssignLatePenalties.plugin_class``
  in ``nbgrader_config.py``); the course's, :class:`CourseLatePolicy`, adds a penalty per hour to
  nbgrader's ``none`` and ``zero``; its shares outside 0-1 are refused by name. nbgrader's
  ``autograde`` and the hardened grader read the same setting, so both give a late submission the
  same penalty.

A penalty is nbgrader's ``late_submission_penalty`` on each submitted notebook: formgrader, ``nbgrader
export`` and the LMS exports all subtract it from the score. :func:`apply` sets it for one student;
:func:`recorded` reads it back (the class report).
"""
from __future__ import annotations

import csv
import math
import re
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

from nbgrader.plugins import LateSubmissionPlugin
from traitlets import Enum, Float, TraitError, validate

EXTENSIONS = "extensions.csv"
# a date and a time of day, then optionally seconds, a fraction, and a zone (nbgrader's own form
# is "2026-10-01 17:00:00.000000 UTC"; ISO 8601 and "Europe/London" are read the same way)
FULL_TIME = re.compile(r"\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?"
                       r"( ?(Z|UTC|GMT|[+-]\d{2}:?\d{2}|[A-Za-z]+(/[A-Za-z_+-]+)+))?")
CLOCK_SLACK = timedelta(minutes=5)         # how far ahead of this machine's clock a time may be


def parse_submission_time(text: str, now: datetime | None = None) -> datetime:
    """The time a ``timestamp.txt`` holds, read as nbgrader reads it (:func:`nbgrader.utils.parse_utc`:
    UTC, without a zone), or ValueError saying what is wrong: not a full date and time (dateutil
    alone takes "1" for the first of this month), or later than now."""
    from nbgrader.utils import parse_utc

    text = text.strip()
    example = "expected a date and time such as 2026-10-01 17:00:00.000000 UTC"
    if not FULL_TIME.fullmatch(text):
        raise ValueError(f"not a time ({text[:60]!r}): {example}")
    try:
        when = parse_utc(text)
    except (ValueError, OverflowError) as error:
        raise ValueError(f"not a time ({text[:60]!r}: {error}): {example}") from None
    now = now or datetime.now(timezone.utc).replace(tzinfo=None)
    if when > now + CLOCK_SLACK:
        raise ValueError(f"in the future ({text[:60]!r}, after {now:%Y-%m-%d %H:%M} UTC)")
    return when


def late_by(seconds: float) -> str:
    """How late, to the second, as hours:minutes:seconds (one second late is "0:00:01")."""
    return str(timedelta(seconds=math.ceil(seconds)))


class CourseLatePolicy(LateSubmissionPlugin):
    """nbgrader's late policies (``none``, ``zero``) and ``per_hour``: ``per_hour`` of the score
    for each hour or part of an hour late, at most ``cap`` of it."""

    penalty_method = Enum(("none", "zero", "per_hour"), default_value="none",
                          help="none: no penalty; zero: the whole score; per_hour: per_hour of the "
                               "score per hour started, at most cap").tag(config=True)
    per_hour = Float(0.1, help="share of the score lost per hour (or part) late").tag(config=True)
    cap = Float(0.5, help="the most a late submission loses, as a share of its score").tag(config=True)

    @validate("per_hour", "cap")
    def _a_share(self, proposal):
        value = proposal["value"]
        if not 0.0 <= value <= 1.0:                    # NaN fails too
            raise TraitError(f"CourseLatePolicy.{proposal['trait'].name} must be between 0 and 1 "
                             f"(a share of the score), got {value!r}")
        return value

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
    seconds_late: float = 0.0

    @property
    def late_by(self) -> str:
        return late_by(self.seconds_late)


def read_extensions(course: Path, students: set, labs: set) -> dict[tuple[str, str], timedelta]:
    """``extensions.csv`` of the course, {(assignment, student): extension}; {} without the file.
    Every row must be ``student,assignment,hours``: a student of ``students``, a lab of ``labs``,
    hours a number >= 0, once per student and lab; any other row is refused by its line."""
    path = Path(course) / EXTENSIONS
    if not path.exists():
        return {}
    found, lines = {}, {}
    with open(path, newline="", encoding="utf-8-sig") as handle:     # as a spreadsheet saves it
        reader = csv.DictReader(handle)
        if {"student", "assignment", "hours"} - set(reader.fieldnames or []):
            raise ValueError(f"{path}: expected the columns student, assignment, hours; "
                             f"got {reader.fieldnames}")
        for line, row in enumerate(reader, start=2):
            key, hours = _extension_row(path, line, row, students, labs)
            if key in found:
                raise ValueError(f"{path}, line {line}: {key[1]}'s {key[0]} extension is already on "
                                 f"line {lines[key]}")
            found[key], lines[key] = timedelta(hours=hours), line
    return found


def _extension_row(path: Path, line: int, row: dict, students: set, labs: set) -> tuple[tuple, float]:
    student, lab = (row.get("student") or "").strip(), (row.get("assignment") or "").strip()
    where = f"{path}, line {line}"
    if not student or not lab or not (row.get("hours") or "").strip():
        raise ValueError(f"{where}: a student, an assignment and hours are needed, got {dict(row)}")
    try:
        hours = float(row["hours"])
    except ValueError:
        hours = math.nan
    if not (math.isfinite(hours) and hours >= 0):
        raise ValueError(f"{where}: hours must be a number of hours >= 0, got {row['hours']!r}")
    if student not in students:
        raise ValueError(f"{where}: no student {student!r} in the gradebook or among the submissions")
    if lab not in labs:
        raise ValueError(f"{where}: no lab {lab!r} in the gradebook (labs: {', '.join(sorted(labs))})")
    return (lab, student), hours


def late_policy(config) -> LateSubmissionPlugin:
    """The late-submission plugin ``config`` (an nbgrader traitlets Config) names, configured."""
    from traitlets.utils.importstring import import_item

    chosen = config.AssignLatePenalties.get("plugin_class", LateSubmissionPlugin)
    plugin = import_item(chosen) if isinstance(chosen, str) else chosen
    try:
        return plugin(config=config)
    except TraitError as error:                        # a setting out of range: named, refused
        raise ValueError(f"the late policy: {error}") from None


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
    return Late(submission.student.id, round(late / 3600, 2), round(extension, 2), round(penalty, 2), late)
