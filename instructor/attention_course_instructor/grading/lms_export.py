"""Grades out of nbgrader's gradebook in the CSV layouts that Canvas and Moodle import.

Two ``nbgrader export`` plugins (nbgrader's own :class:`~nbgrader.plugins.ExportPlugin`):

    nbgrader export --exporter attention_course_instructor.grading.lms_export.CanvasCsvExportPlugin --to canvas.csv
    nbgrader export --exporter attention_course_instructor.grading.lms_export.MoodleCsvExportPlugin --to moodle.csv

Each writes one row per student and one column per lab, holding the lab's total -- automatic
plus manual scores, less nbgrader's late penalty, never below zero -- or nothing where the
student submitted nothing, or where written answers still wait for a grader (the LMS then shows
the lab as not graded, never a partial total as the grade; the log names each such student). A
student is named for the LMS by nbgrader's ``lms_user_id``, which must be the identifier the LMS
matches rows by: a file the LMS would match to nobody, or to someone else, is not written;
instead every student whose id is unusable is named, with what is expected.

- **Canvas** (Grades > Import), in the layout of Canvas's own gradebook export and read as its
  importer reads it (``app/models/gradebook_importer.rb``): ``Student``, ``ID``, ``SIS User
  ID``, ``SIS Login ID``, ``Section``, then one column per lab, and a ``    Points Possible``
  row. Canvas finds a row's student by ``ID`` (its numeric user id, which it reads as Ruby's
  ``to_i`` does: a UUID that starts with digits names another user), else by SIS user id, else
  by SIS login id, else by name. ``match_by`` says which column ``lms_user_id`` fills: ``id``
  (default; digits only: the hub records it from the custom field ``canvas_user_id=
  $Canvas.user.id``), ``sis_user_id`` or ``sis_login_id``. A lab column named ``Lab 8 (1234)``
  updates Canvas assignment 1234, one without an id is created on import
  (``CanvasCsvExportPlugin.assignment_ids`` maps labs to ids).
- **Moodle** (Grades > Import > CSV file): ``First name``, ``Last name``, ``User ID``, ``Email
  address``, ``Course hub username``, then one column per lab. The import maps "User ID" to
  Moodle's *User ID* (the LTI ``sub`` of a Moodle launch is the Moodle user id, digits only), or
  with ``match_by = "email"``, "Email address" to *Email address*; each lab column to its grade
  item.

Text a spreadsheet would run as a formula (a cell starting with ``=``, ``+``, ``-``, ``@``, a tab
or a carriage return: an LMS display name such as ``=HYPERLINK(...)``) is written as a string
literal, ``="..."``, as Canvas's own export writes such names: a spreadsheet shows the text and
runs nothing, and the log names the student.
"""
from __future__ import annotations

import csv
from dataclasses import dataclass

from nbgrader.api import Gradebook, MissingEntry
from nbgrader.plugins import ExportPlugin
from traitlets import Dict, Enum, Unicode


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


FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def formula_like(text: str) -> bool:
    """Whether a spreadsheet opening a CSV would take ``text`` for a formula (OWASP's list)."""
    return bool(text) and (text.startswith(FORMULA_START) or text.lstrip().startswith("="))


def spreadsheet_text(text: str) -> str:
    """``text`` as a CSV cell a spreadsheet shows as it is: formula-like text as a string literal."""
    return '="' + text.replace('"', '""') + '"' if formula_like(text) else text


def display_name(student) -> str:
    """"Last, First" as Canvas lists students, or the username when the gradebook has no name."""
    return ", ".join(part for part in (student.last_name, student.first_name) if part) or student.id


class RefusedExport(SystemExit):
    """The file would name students the LMS cannot find: it is not written (exit status 1)."""


class _LmsCsv(ExportPlugin):
    """What both layouts share: which students and labs, the lab's column title, each student's
    cells, and the refusal of students the LMS could not match."""

    titles = Dict({}, help="a column title per lab, e.g. {'lab8': 'Lab 8'} (default: the lab's "
                           "name)").tag(config=True)
    default_to = "grades.csv"
    lms = ""

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

    def id_problem(self, student) -> str:
        """Why the LMS could not find ``student`` by the id written for them, or ""."""
        raise NotImplementedError

    def how_to_fix(self) -> str:
        raise NotImplementedError

    def grades(self, gradebook: Gradebook, student, labs: list) -> list[str]:
        """The student's cell for each lab: the total when it is final, else empty (logged)."""
        cells = []
        for lab in labs:
            result = lab_result(gradebook, lab.name, student.id)
            if result.pending:
                self.log.warning("%s: %s left blank: written answers still to be graded (%s)",
                                 student.id, lab.name, ", ".join(result.pending))
            cells.append(_number(result.score if result.final else None))
        return cells

    def text(self, student, value: str | None) -> str:
        """A text cell of ``student``'s row, safe to open in a spreadsheet (logged if changed)."""
        value = value or ""
        if formula_like(value):
            self.log.warning("%s: %r would be a spreadsheet formula: written as the text =\"...\"",
                             student.id, value[:60])
        return spreadsheet_text(value)

    def export(self, gradebook: Gradebook) -> None:
        destination = self.to or self.default_to
        students = self.students(gradebook)
        problems = [f"  {s.id} ({display_name(s)}): {why}" for s in students if (why := self.id_problem(s))]
        if problems:
            message = (f"{destination} not written: {len(problems)} student(s) could not be matched "
                       f"by {self.lms}:\n" + "\n".join(problems) + "\n" + self.how_to_fix())
            raise RefusedExport(message)
        self.log.info("Exporting grades for %s to %s", self.lms, destination)
        rows = self.rows(gradebook, students)
        with open(destination, "w", newline="", encoding="utf-8") as handle:
            csv.writer(handle, lineterminator="\n").writerows(rows)

    def rows(self, gradebook: Gradebook, students: list) -> list[list[str]]:
        raise NotImplementedError


class CanvasCsvExportPlugin(_LmsCsv):
    """The gradebook CSV Canvas imports (see the module's docstring)."""

    assignment_ids = Dict({}, help="the Canvas assignment id of each lab, e.g. {'lab8': '1234'}: "
                                   "its column then updates that assignment").tag(config=True)
    section = Unicode("", help="the Section column's value for every row").tag(config=True)
    match_by = Enum(("id", "sis_user_id", "sis_login_id"), default_value="id",
                    help="the Canvas column lms_user_id fills: id (Canvas's numeric user id), "
                         "sis_user_id or sis_login_id").tag(config=True)
    default_to = "canvas_grades.csv"
    lms = "Canvas"

    def title(self, lab) -> str:
        number = self.assignment_ids.get(lab.name)
        return f"{super().title(lab)} ({number})" if number else super().title(lab)

    def id_problem(self, student) -> str:
        value = student.lms_user_id or ""
        if not value:
            return "no lms_user_id in the gradebook (Canvas would look for the student by name)"
        if self.match_by == "id" and not value.isdigit():
            return (f"lms_user_id {value!r} is not a Canvas user id (digits only; Canvas reads it as "
                    f"{_ruby_to_i(value)})")
        if value != value.strip() or formula_like(value) or any(c < " " for c in value):
            return f"lms_user_id {value!r} has spaces, control characters or a formula's first character"
        if "," in value and all(c in "0123456789.,%-" for c in value):
            return f"lms_user_id {value!r}: Canvas reads a comma in a number as a decimal point"
        return ""

    def how_to_fix(self) -> str:
        if self.match_by == "id":
            return ("Canvas matches the ID column by its numeric user id. With the LTI login, register "
                    "the custom field canvas_user_id=$Canvas.user.id in the Canvas developer key, have "
                    "each student launch once and import the hub's lms-roster.csv again; or set the id "
                    "by hand: nbgrader db student add <username> --lms-user-id <Canvas user id>; or put "
                    "SIS ids in lms_user_id and export with --CanvasCsvExportPlugin.match_by=sis_user_id "
                    "(or sis_login_id). Remove course staff from the gradebook (nbgrader db student "
                    "remove <username>).")
        return (f"Set each student's {self.match_by.replace('_', ' ')} as lms_user_id: nbgrader db "
                f"student add <username> --lms-user-id <value>.")

    def rows(self, gradebook: Gradebook, students: list) -> list[list[str]]:
        labs = self.labs(gradebook)
        column = {"id": 1, "sis_user_id": 2, "sis_login_id": 3}[self.match_by]
        rows = [["Student", "ID", "SIS User ID", "SIS Login ID", "Section", *map(self.title, labs)],
                # as Canvas writes it (gradebook_exporter.rb); its importer finds "Points Possible"
                ["    Points Possible", "", "", "", "", *(_number(lab.max_score) for lab in labs)]]
        for student in students:
            ids = ["", "", ""]
            ids[column - 1] = student.lms_user_id
            rows.append([self.text(student, display_name(student)), *ids, self.text(student, self.section),
                         *self.grades(gradebook, student, labs)])
        return rows


class MoodleCsvExportPlugin(_LmsCsv):
    """The grade-import CSV of Moodle (see the module's docstring)."""

    match_by = Enum(("user_id", "email"), default_value="user_id",
                    help="the column the import maps to a Moodle user: user_id (the LTI sub, "
                         "which Moodle sets to its user id) or email").tag(config=True)
    default_to = "moodle_grades.csv"
    lms = "Moodle"

    def id_problem(self, student) -> str:
        if self.match_by == "email":
            return "" if student.email and "@" in student.email else "no email address in the gradebook"
        value = student.lms_user_id or ""
        if not value:
            return "no lms_user_id in the gradebook"
        return "" if value.isdigit() else f"lms_user_id {value!r} is not a Moodle user id (digits only)"

    def how_to_fix(self) -> str:
        return ("Moodle's LTI launches carry the Moodle user id as the LTI sub, which the hub records "
                "as lms_user_id: import the hub's lms-roster.csv again, or set it by hand (nbgrader db "
                "student add <username> --lms-user-id <Moodle user id>), or export with "
                "--MoodleCsvExportPlugin.match_by=email. Remove course staff from the gradebook "
                "(nbgrader db student remove <username>).")

    def rows(self, gradebook: Gradebook, students: list) -> list[list[str]]:
        labs = self.labs(gradebook)
        rows = [["First name", "Last name", "User ID", "Email address", "Course hub username",
                 *map(self.title, labs)]]
        for student in students:
            rows.append([self.text(student, student.first_name), self.text(student, student.last_name),
                         self.text(student, student.lms_user_id), self.text(student, student.email),
                         self.text(student, student.id), *self.grades(gradebook, student, labs)])
        return rows


def _ruby_to_i(text: str) -> int:
    """How Ruby's ``to_i`` (Canvas's importer) reads an ID: its leading digits, else 0."""
    digits = ""
    for char in text.strip():
        if not char.isdigit():
            break
        digits += char
    return int(digits or 0)
