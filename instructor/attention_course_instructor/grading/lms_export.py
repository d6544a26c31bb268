"""Grades out of nbgrader's gradebook in the CSV layouts that Canvas and Moodle import.

Two ``nbgrader export`` plugins (nbgrader's own :class:`~nbgrader.plugins.ExportPlugin`):

    nbgrader export --exporter attention_course_instructor.grading.lms_export.CanvasCsvExportPlugin --to canvas.csv
    nbgrader export --exporter attention_course_instructor.grading.lms_export.MoodleCsvExportPlugin --to moodle.csv

Each writes one row per student and one column per lab, holding the lab's total -- automatic
plus manual scores, less nbgrader's late penalty, never below zero -- or nothing where the
student submitted nothing (the LMS then shows the lab as not handed in, not as a zero). A student
is named for the LMS by the LMS's own identifier, nbgrader's ``lms_user_id`` (``nbgrader db
student add <username> --lms-user-id <the LMS's user id>``), with the hub username beside it.

- **Canvas** (Grades > Import): the columns of a gradebook Canvas exports, ``Student``, ``ID``,
  ``SIS User ID``, ``SIS Login ID``, ``Section``, then one column per lab, and a ``Points
  Possible`` row. Canvas matches a row by ``ID`` (its user id); a lab column named ``Lab 8
  (1234)`` updates Canvas assignment 1234, and one without an id is created on import
  (``CanvasCsvExportPlugin.assignment_ids`` maps labs to ids).
- **Moodle** (Grades > Import > CSV file): a header row, ``ID number`` and ``Email address`` to
  map a row to a user, then one column per lab, each mapped to a grade item during the import.
"""
from __future__ import annotations

import csv
from dataclasses import dataclass

from nbgrader.api import Gradebook, MissingEntry
from nbgrader.plugins import ExportPlugin
from traitlets import Dict, Unicode


@dataclass(frozen=True)
class LabResult:
    """A student's lab as the LMS should record it (:func:`lab_result`)."""

    score: float | None            # automatic + manual, less the late penalty; None: not submitted
    pending: tuple = ()            # the cells still to be graded by hand (nbgrader's needs_manual_grade)

    @property
    def final(self) -> bool:
        """Submitted and graded in full: a score the LMS may record as the grade."""
        return self.score is not None and not self.pending


def lab_result(gradebook: Gradebook, assignment: str, student: str) -> LabResult:
    """A student's lab from nbgrader's gradebook: the total less the late penalty (never below
    zero) and which cells still wait for a grader, or a result without a score if nothing was
    submitted."""
    try:
        submission = gradebook.find_submission(assignment, student)
    except MissingEntry:
        return LabResult(None)
    pending = tuple(sorted(grade.name for notebook in submission.notebooks for grade in notebook.grades
                           if grade.needs_manual_grade))
    return LabResult(round(max(0.0, submission.score - submission.late_submission_penalty), 2), pending)


def _number(value: float | None) -> str:
    return "" if value is None else f"{value:g}"


class _LmsCsv(ExportPlugin):
    """What both layouts share: which students and labs, and the lab's column title."""

    titles = Dict({}, help="a column title per lab, e.g. {'lab8': 'Lab 8'} (default: the lab's "
                           "name)").tag(config=True)
    default_to = "grades.csv"

    def labs(self, gradebook: Gradebook) -> list:
        wanted = [str(a) for a in self.assignment]
        return [a for a in sorted(gradebook.assignments, key=lambda a: (a.duedate is None, a.duedate, a.name))
                if not wanted or a.name in wanted]

    def students(self, gradebook: Gradebook) -> list:
        wanted = [str(s) for s in self.student]
        return [s for s in sorted(gradebook.students, key=lambda s: (s.last_name or "", s.first_name or "", s.id))
                if not wanted or s.id in wanted]

    def title(self, lab) -> str:
        return self.titles.get(lab.name, lab.name)

    def export(self, gradebook: Gradebook) -> None:
        destination = self.to or self.default_to
        self.log.info("Exporting grades for the LMS to %s", destination)
        with open(destination, "w", newline="", encoding="utf-8") as handle:
            csv.writer(handle).writerows(self.rows(gradebook))

    def rows(self, gradebook: Gradebook) -> list[list[str]]:
        raise NotImplementedError


class CanvasCsvExportPlugin(_LmsCsv):
    """The gradebook CSV Canvas imports (see the module's docstring)."""

    assignment_ids = Dict({}, help="the Canvas assignment id of each lab, e.g. {'lab8': '1234'}: "
                                   "its column then updates that assignment").tag(config=True)
    section = Unicode("", help="the Section column's value for every row").tag(config=True)
    default_to = "canvas_grades.csv"

    def title(self, lab) -> str:
        number = self.assignment_ids.get(lab.name)
        return f"{super().title(lab)} ({number})" if number else super().title(lab)

    def rows(self, gradebook: Gradebook) -> list[list[str]]:
        labs = self.labs(gradebook)
        rows = [["Student", "ID", "SIS User ID", "SIS Login ID", "Section", *map(self.title, labs)],
                ["Points Possible", "", "", "", "", *(_number(lab.max_score) for lab in labs)]]
        for student in self.students(gradebook):
            name = ", ".join(part for part in (student.last_name, student.first_name) if part) or student.id
            rows.append([name, student.lms_user_id or "", "", student.id, self.section,
                         *(_number(lab_result(gradebook, lab.name, student.id).score) for lab in labs)])
        return rows


class MoodleCsvExportPlugin(_LmsCsv):
    """The grade-import CSV of Moodle (see the module's docstring)."""

    default_to = "moodle_grades.csv"

    def rows(self, gradebook: Gradebook) -> list[list[str]]:
        labs = self.labs(gradebook)
        rows = [["First name", "Last name", "ID number", "Email address", "Username",
                 *map(self.title, labs)]]
        for student in self.students(gradebook):
            rows.append([student.first_name or "", student.last_name or "", student.lms_user_id or "",
                         student.email or "", student.id,
                         *(_number(lab_result(gradebook, lab.name, student.id).score) for lab in labs)])
        return rows
