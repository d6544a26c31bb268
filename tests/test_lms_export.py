"""Grades for Canvas and Moodle (``attention_course_instructor.grading.lms_export``).

A gradebook of two labs and three students -- one who submitted both (with manual scores and a
late penalty on Lab 12), one who submitted Lab 8 only, one who submitted nothing -- exported
through ``nbgrader export`` with each plugin, compared with reference files written by hand from
each LMS's import layout (``tests/fixtures/lms/``).
"""
from __future__ import annotations

import os
import sys
from datetime import datetime
from pathlib import Path

import pytest
from nbgrader.api import Gradebook

from attention_course_instructor.grading import lms_export
from attention_course_instructor.grading.nbgrader_cli import run_nbgrader

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "lms"
MODULE = "attention_course_instructor.grading.lms_export"
# lab -> (due date, {cell: (max score, autograded?)})
LABS = {"lab8": (datetime(2026, 10, 1, 17), {"task1": (6, True), "task2": (4, True)}),
        "lab12": (datetime(2026, 11, 1, 17), {"task4": (20, True), "task7": (7, False)})}
# student -> (first name, last name, Canvas user id: what the hub records as lms_user_id when the
# launch carries canvas_user_id=$Canvas.user.id); di's display name is a spreadsheet formula
STUDENTS = {"ada": ("Ada", "Lovelace", "1001"), "bo": ("Bo", None, "1002"), "cy": (None, "Cyr", "1003"),
            "di": ("Di", '=HYPERLINK("http://evil.example","Cyr")', "1004"), "eve": ("Eve", "Ng", "1005")}
# (lab, student) -> {cell: score (None: still to be graded by hand)}, and the late penalty
SCORES = {("lab8", "ada"): ({"task1": 6, "task2": 3}, 0.0),
          ("lab12", "ada"): ({"task4": 18, "task7": 5}, 2.0),
          ("lab8", "bo"): ({"task1": 4, "task2": 0}, 0.0),
          ("lab12", "eve"): ({"task4": 15, "task7": None}, 0.0)}


@pytest.fixture(scope="module")
def course(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("course")
    # a new gradebook runs `alembic` by name: this environment's (make test puts it on PATH)
    path = os.environ.get("PATH", "")
    os.environ["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), path])
    try:
        fill_gradebook(root)
    finally:
        os.environ["PATH"] = path
    return root


def fill_gradebook(root: Path) -> None:
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        for lab, (due, cells) in LABS.items():
            gb.add_assignment(lab, duedate=due)
            gb.add_notebook(lab, lab)
            for cell, (points, auto) in cells.items():
                gb.add_grade_cell(cell, lab, lab, max_score=points, cell_type="code" if auto else "markdown")
        for student, (first, last, lms) in STUDENTS.items():
            gb.add_student(student, first_name=first, last_name=last, lms_user_id=lms,
                           email=f"{student}@example.edu")
        for (lab, student), (points, penalty) in SCORES.items():
            gb.add_submission(lab, student, timestamp=LABS[lab][0])
            for cell, score in points.items():
                grade = gb.find_grade(cell, lab, lab, student)
                if LABS[lab][1][cell][1]:
                    grade.auto_score = score
                else:                                  # a written answer: graded, or waiting
                    grade.manual_score = score
                grade.needs_manual_grade = score is None   # as nbgrader leaves a graded cell
            gb.find_submission_notebook(lab, lab, student).late_submission_penalty = penalty
            gb.db.commit()


def export(course: Path, plugin: str, out: Path, *options: str) -> str:
    """``nbgrader export`` with the course's configuration and the plugin's settings."""
    settings = [] if plugin == "CsvExportPlugin" else [
        f"--{plugin}.titles", "lab8=Lab 8", f"--{plugin}.titles", "lab12=Lab 12"]
    if plugin == "CanvasCsvExportPlugin":
        settings += [f"--{plugin}.assignment_ids", "lab8=5501", f"--{plugin}.section=Autumn"]
    exporter = f"{MODULE}.{plugin}" if plugin != "CsvExportPlugin" else "nbgrader.plugins.CsvExportPlugin"
    run_nbgrader(course, "export", "--exporter", exporter, "--to", str(out), *settings, *options)
    return out.read_text()


@pytest.mark.parametrize("plugin, reference", [("CanvasCsvExportPlugin", "canvas_grades.csv"),
                                               ("MoodleCsvExportPlugin", "moodle_grades.csv")])
def test_the_export_matches_the_lms_layout(course, tmp_path, plugin, reference):
    assert export(course, plugin, tmp_path / reference) == (FIXTURES / reference).read_text()


def test_a_lab_total_is_automatic_plus_manual_less_the_late_penalty(course):
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        assert lms_export.lab_result(gb, "lab12", "ada").score == 18 + 5 - 2
        assert lms_export.lab_result(gb, "lab12", "bo").score is None          # not submitted: blank
        # the same totals as nbgrader's own export (its score less its penalty)
        ours = {(lab, s): lms_export.lab_result(gb, lab, s).score for lab in LABS for s in STUDENTS}
    rows = export(course, "CsvExportPlugin", course / "nbgrader.csv").splitlines()
    header = rows[0].split(",")
    theirs = {}
    for line in rows[1:]:
        row = dict(zip(header, line.split(",")))
        theirs[(row["assignment"], row["student_id"])] = (float(row["score"]) if row["timestamp"]
                                                          else None)
    assert theirs == ours


def test_one_lab_and_one_student_can_be_chosen(course, tmp_path):
    text = export(course, "MoodleCsvExportPlugin", tmp_path / "one.csv",
                  "--assignment", "lab8", "--student", "bo")
    assert text.splitlines() == ["First name,Last name,ID number,Email address,Username,Lab 8",
                                           "Bo,,1002,bo@example.edu,bo,4"]
