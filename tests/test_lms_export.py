"""Grades for Canvas and Moodle (``attention_course_instructor.grading.lms_export``).

A gradebook of two labs and five students -- ada submitted both (manual scores, a late penalty
on Lab 12), bo Lab 8 only, cy and di nothing (di's LMS display name is a spreadsheet formula),
eve Lab 12 with a written answer still to be graded -- exported through ``nbgrader export`` with
each plugin. Each file is compared with a reference file (``tests/fixtures/lms/``), then read
back the way the LMS reads it (``lms_importers``: Canvas's and Moodle's importers restated from
their source) against the course as Canvas's own gradebook export shows it
(``fixtures/lms/canvas_export.csv``, in the layout of Canvas's ``GradebookExporter``: SIS columns,
``    Points Possible`` with its leading spaces, read-only totals, the test student). No live
Canvas or Moodle reads these files here.
"""
from __future__ import annotations

import csv
import io
import os
import re
import sys
from datetime import datetime
from pathlib import Path

import pytest
from nbgrader.api import Gradebook

import lms_importers
from attention_course_instructor.grading import lms_export
from attention_course_instructor.grading.nbgrader_cli import NbgraderError, run_nbgrader

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
    fill_gradebook(root)
    return root


def fill_gradebook(root: Path, ids: dict | None = None) -> None:
    """The gradebook of the module note; ``ids`` replaces some students' LMS user ids."""
    # a new gradebook runs `alembic` by name: this environment's (make test puts it on PATH)
    path = os.environ.get("PATH", "")
    os.environ["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), path])
    try:
        _fill_gradebook(root, ids or {})
    finally:
        os.environ["PATH"] = path


def _fill_gradebook(root: Path, ids: dict) -> None:
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        for lab, (due, cells) in LABS.items():
            gb.add_assignment(lab, duedate=due)
            gb.add_notebook(lab, lab)
            for cell, (points, auto) in cells.items():
                gb.add_grade_cell(cell, lab, lab, max_score=points, cell_type="code" if auto else "markdown")
        for student, (first, last, lms) in STUDENTS.items():
            gb.add_student(student, first_name=first, last_name=last, lms_user_id=ids.get(student, lms),
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
    """``nbgrader export`` with the course's configuration and the plugin's settings; the file."""
    settings = [] if plugin == "CsvExportPlugin" else [
        f"--{plugin}.titles", "lab8=Lab 8", f"--{plugin}.titles", "lab12=Lab 12"]
    if plugin == "CanvasCsvExportPlugin":
        settings += [f"--{plugin}.assignment_ids", "lab8=5501", f"--{plugin}.section=Autumn"]
    exporter = f"{MODULE}.{plugin}" if plugin != "CsvExportPlugin" else "nbgrader.plugins.CsvExportPlugin"
    done = run_nbgrader(course, "export", "--exporter", exporter, "--to", str(out), *settings, *options)
    export.log = done.stdout + done.stderr
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
    assert text.splitlines() == ["First name,Last name,User ID,Email address,Course hub username,Lab 8",
                                 "Bo,,1002,bo@example.edu,bo,4"]


CANVAS_COURSE = lms_importers.canvas_course((FIXTURES / "canvas_export.csv").read_text())
CANVAS_ID = {student: int(lms) for student, (_, _, lms) in STUDENTS.items()}


def test_canvas_reads_every_row_as_its_student_and_lab_8_as_its_assignment(course, tmp_path):
    text = export(course, "CanvasCsvExportPlugin", tmp_path / "canvas.csv")
    got = lms_importers.canvas_import(text, CANVAS_COURSE)
    assert got["unmatched"] == []
    assert got["grades"] == {(CANVAS_ID["ada"], 5501): "9", (CANVAS_ID["ada"], "new: Lab 12"): "21",
                             (CANVAS_ID["bo"], 5501): "4"}
    assert got["points"] == {5501: "10", "new: Lab 12": "27"}


def test_an_lti_sub_is_refused_as_a_canvas_user_id(tmp_path):
    """On Canvas the LTI ``sub`` is a UUID; Canvas reads an ``ID`` as Ruby's ``to_i`` does, so a
    sub that starts with digits names another user (1001c2d4-... is user 1001). The export is
    refused, naming each student, and nothing is written."""
    subs = {"ada": "1003c2d4-5e6f-4a7b-8c9d-0e1f2a3b4c5d", "bo": "f81d4fae-7dec-11d0-a765-00a0c91e6bf6"}
    assert lms_importers.ruby_to_i(subs["ada"]) == CANVAS_ID["cy"]       # cy would get ada's grade
    fill_gradebook(tmp_path, ids=subs)
    out = tmp_path / "canvas.csv"
    with pytest.raises(NbgraderError) as refused:
        export(tmp_path, "CanvasCsvExportPlugin", out)
    message = str(refused.value)
    assert "not written" in message and not out.exists()
    for student, sub in subs.items():
        assert re.search(rf"{student} \(.*\): lms_user_id '{sub}' is not a Canvas user id", message), message
    assert "canvas_user_id=$Canvas.user.id" in message and "cy" not in message.split("not written")[1]


def test_a_student_without_an_lms_user_id_is_refused(tmp_path):
    fill_gradebook(tmp_path, ids={"cy": None})
    with pytest.raises(NbgraderError, match=r"cy \(Cyr\): no lms_user_id"):
        export(tmp_path, "CanvasCsvExportPlugin", tmp_path / "canvas.csv")


def test_the_sis_login_route_fills_the_column_canvas_matches_logins_by(tmp_path):
    """Where the launch cannot carry the Canvas user id, the gradebook's lms_user_id may hold each
    student's Canvas login (SIS Login ID): Canvas then finds them by it."""
    logins = {s: CANVAS_COURSE["students"][i]["sis_login_id"] for s, i in CANVAS_ID.items()}
    fill_gradebook(tmp_path, ids=logins)
    text = export(tmp_path, "CanvasCsvExportPlugin", tmp_path / "canvas.csv",
                  "--CanvasCsvExportPlugin.match_by=sis_login_id")
    rows = list(csv.reader(io.StringIO(text)))
    assert [r[1] for r in rows[2:]] == [""] * len(STUDENTS)               # no Canvas id guessed
    got = lms_importers.canvas_import(text, CANVAS_COURSE)
    assert got["unmatched"] == [] and got["grades"][(CANVAS_ID["ada"], 5501)] == "9"


def test_a_display_name_that_is_a_formula_is_shown_not_run(course, tmp_path):
    """di's LMS display name is =HYPERLINK(...): each file writes it as a spreadsheet's string
    literal (="...", as Canvas's own export does), which shows the name and runs nothing; the
    log names her."""
    for plugin in ("CanvasCsvExportPlugin", "MoodleCsvExportPlugin"):
        rows = list(csv.reader(io.StringIO(export(course, plugin, tmp_path / f"{plugin}.csv"))))
        cells = [cell for row in rows for cell in row]
        assert all(spreadsheet_reads_as_text(cell) for cell in cells), plugin
        shown = [spreadsheet_value(cell) for cell in cells if cell.startswith("=")]
        assert any(STUDENTS["di"][1] in value for value in shown), (plugin, shown)
        assert "di: " in export.log and "formula" in export.log


def spreadsheet_reads_as_text(cell: str) -> bool:
    """A cell no spreadsheet runs: not starting with =, +, -, @, tab or CR, or one string literal."""
    return not re.match(r"[=+\-@\t\r]", cell) or re.fullmatch(r'="(?:[^"]|"")*"', cell) is not None


def spreadsheet_value(cell: str) -> str:
    return cell[2:-1].replace('""', '"') if cell.startswith('="') else cell


def test_written_answers_still_to_grade_leave_the_lab_blank(course, tmp_path):
    """eve's Lab 12 has 15 automatic points and a written answer no one has graded: neither file
    holds 15 as her grade; the log says why her cell is empty."""
    for plugin, who in (("CanvasCsvExportPlugin", "1005"), ("MoodleCsvExportPlugin", "1005")):
        rows = list(csv.reader(io.StringIO(export(course, plugin, tmp_path / f"{plugin}.csv"))))
        eve = next(row for row in rows if who in row)
        assert eve[-1] == "" and "15" not in eve
        assert "eve: lab12 left blank: written answers still to be graded (task7)" in export.log


def test_moodle_maps_each_row_to_its_user_by_user_id(course, tmp_path):
    """In Moodle the LTI sub is the user's id (mod/lti/locallib.php: user_id -> sub): the import
    maps "User ID" to Moodle's user id field."""
    text = export(course, "MoodleCsvExportPlugin", tmp_path / "moodle.csv")
    users = {int(lms): {"email": f"{s}@example.edu"} for s, (_, _, lms) in STUDENTS.items()}
    got = lms_importers.moodle_import(text, users, "User ID", "id", ("Lab 8", "Lab 12"))
    assert {k: v for k, v in got.items() if v is not None} == {
        (1001, "Lab 8"): 9, (1001, "Lab 12"): 21, (1002, "Lab 8"): 4}


def test_moodle_refuses_an_id_that_is_not_a_moodle_user_id(tmp_path):
    fill_gradebook(tmp_path, ids={"bo": "f81d4fae-7dec-11d0-a765-00a0c91e6bf6"})
    with pytest.raises(NbgraderError, match=r"bo \(Bo\): lms_user_id 'f81d4fae.*' is not a Moodle user id"):
        export(tmp_path, "MoodleCsvExportPlugin", tmp_path / "moodle.csv")
