"""Due dates, extensions and late penalties (``attention_course_instructor.grading.late``), applied
when the hardened grader records a lab.

Lab 8 is due at DUE. Four students hand in the same full-marks answers: ``prompt`` an hour
early, ``extended`` ten hours late with a 24-hour extension (``extensions.csv``), ``tardy`` two and
a half hours late, ``photo`` one second late. Two more submissions were placed in ``submitted/``
by hand (an LMS download, say): ``garbled``'s ``timestamp.txt`` is not a time, ``unstamped`` has
none. The course's policy takes 10% of the score per hour started, at most 50%. The grades are
recorded by the hardened grader's record stage (the kernels are not needed: each answer is
scored as passed), then read back from formgrader's API, ``nbgrader export`` and the Canvas
export.
"""
from __future__ import annotations

import csv
import io
from datetime import datetime, timedelta

import nbformat
import pytest

import nbgrader_harness as harness
from attention_course_instructor.grading import late
from attention_course_instructor.grading.hardened import GradingRun
from attention_course_instructor.grading.hardened.record import record_batch
from attention_course_instructor.grading.hardened.score import CellGrade, SubmissionGrade
from attention_course_instructor.grading.nbgrader_cli import run_nbgrader
from attention_course_instructor.grading.notebook import is_autograded_test, is_manual

REPO = harness.REPO
DUE = datetime(2026, 10, 1, 17, 0)
SUBMITTED = {"prompt": DUE - timedelta(hours=1), "extended": DUE + timedelta(hours=10),
             "tardy": DUE + timedelta(hours=2.5), "photo": DUE + timedelta(seconds=1)}
GARBLED = "next Tuesday, honest"                 # garbled's timestamp.txt
POLICY = """c = get_config()
c.CourseLatePolicy.penalty_method = "per_hour"
c.CourseLatePolicy.per_hour = 0.1
c.CourseLatePolicy.cap = 0.5
"""


def full_marks(source: nbformat.NotebookNode, student: str) -> SubmissionGrade:
    cells = []
    for cell in source.cells:
        meta = cell.metadata.get("nbgrader", {})
        if is_autograded_test(cell):
            cells.append(CellGrade(meta["grade_id"], meta["points"], meta["points"], "passed"))
        elif is_manual(cell):
            cells.append(CellGrade(meta["grade_id"], meta["points"], None, "manual"))
    return SubmissionGrade(student, cells)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    from nbgrader.api import Gradebook

    course = harness.make_course(tmp_path_factory.mktemp("late") / "course", REPO / "source" / "lab8", "lab8")
    _, solutions = harness.generate(course, "lab8")
    with Gradebook(f"sqlite:///{course.root / 'gradebook.db'}") as gb:
        gb.update_or_create_assignment("lab8", duedate=DUE)
    (course.root / "nbgrader_config.py").write_text(POLICY)
    (course.root / late.EXTENSIONS).write_text("student,assignment,hours\nextended,lab8,24\n")
    for student, when in SUBMITTED.items():
        folder = harness.submit(course, "lab8", student, solutions / "lab8.ipynb")
        (folder / "timestamp.txt").write_text(when.strftime("%Y-%m-%d %H:%M:%S.%f UTC"))
    folder = harness.submit(course, "lab8", "garbled", solutions / "lab8.ipynb")
    (folder / "timestamp.txt").write_text(GARBLED)
    harness.submit(course, "lab8", "unstamped", solutions / "lab8.ipynb")
    run = GradingRun(course.root, "lab8", seed=0)
    results = [full_marks(run.source(), student) for student in [*SUBMITTED, "garbled", "unstamped"]]
    report = record_batch(run, results, feedback=False)
    return course, results, report


def penalties(course) -> dict[str, float]:
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course.root / 'gradebook.db'}") as gb:
        return {s: gb.find_submission("lab8", s).late_submission_penalty for s in SUBMITTED}


def test_only_the_late_submission_loses_points_and_the_extension_holds(recorded):
    course, results, _ = recorded
    score = results[0].score
    assert score > 0
    assert penalties(course) == {"prompt": 0.0, "extended": 0.0, "tardy": round(0.3 * score, 2),
                                 "photo": round(0.1 * score, 2)}


def test_formgrader_export_and_lms_agree_on_each_total(recorded):
    from nbgrader.api import Gradebook

    course, _, _ = recorded
    graded = [*SUBMITTED, "unstamped"]                 # garbled has no score: its time is unknown
    with Gradebook(f"sqlite:///{course.root / 'gradebook.db'}") as gb:   # the written answers,
        for student in graded:                                           # graded (0) in formgrader
            for notebook in gb.find_submission("lab8", student).notebooks:
                for grade in notebook.grades:
                    if grade.needs_manual_grade:
                        grade.manual_score, grade.needs_manual_grade = 0.0, False
        gb.db.commit()
        penalty = {s: gb.find_submission("lab8", s).late_submission_penalty for s in graded}
    # formgrader lists the score before the penalty; the gradebook holds the penalty beside it
    formgrader = {s["student"]: s["score"] - penalty[s["student"]]
                  for s in formgrader_api(course).get_submissions("lab8") if s["student"] in graded}
    exported = run_nbgrader(course.root, "export", "--to", str(course.root / "grades.csv"))
    assert exported.returncode == 0
    rows = csv.DictReader(io.StringIO((course.root / "grades.csv").read_text()))
    nbgrader_csv = {row["student_id"]: float(row["score"]) for row in rows}
    canvas_ids = {student: str(2000 + n) for n, student in enumerate(graded)}
    for student, number in canvas_ids.items():         # as the hub's roster records them
        run_nbgrader(course.root, "db", "student", "add", student, f"--lms-user-id={number}")
    run_nbgrader(course.root, "export", "--exporter",
                 "attention_course_instructor.grading.lms_export.CanvasCsvExportPlugin",
                 "--to", str(course.root / "canvas.csv"))
    by_id = {number: student for student, number in canvas_ids.items()}
    canvas = {by_id[row[1]]: float(row[5]) for row in
              list(csv.reader(io.StringIO((course.root / "canvas.csv").read_text())))[2:]}
    assert formgrader == nbgrader_csv == canvas
    assert canvas["tardy"] < canvas["photo"] < canvas["extended"] == canvas["prompt"] == canvas["unstamped"]


def test_the_report_names_each_late_submission_and_its_deduction(recorded):
    course, results, report = recorded
    text = (report / "report.md").read_text()
    section = text.split("## Late submissions (4)", 1)[1].split("## Grader faults")[0]
    assert "| tardy | 2:30:00 | 0 | " + f"{round(0.3 * results[0].score, 2):g} |" in section
    assert "| photo | 0:00:01 | 0 | " + f"{round(0.1 * results[0].score, 2):g} |" in section
    assert "| garbled | time unknown | " in section and "| unstamped | time unknown | " in section
    assert "extended" not in section and "prompt" not in section


def test_the_policy_per_hour_is_capped_and_nbgraders_own_policies_remain():
    policy = late.CourseLatePolicy(penalty_method="per_hour", per_hour=0.1, cap=0.5)
    assert policy.late_submission_penalty("s", 40.0, 1) == 4.0             # a second late: 1 hour
    assert policy.late_submission_penalty("s", 40.0, 3 * 3600 + 1) == 16.0  # 4 hours started
    assert policy.late_submission_penalty("s", 40.0, 30 * 3600) == 20.0     # capped at half
    assert late.CourseLatePolicy(penalty_method="zero").late_submission_penalty("s", 40.0, 5) == 40.0
    assert late.CourseLatePolicy().late_submission_penalty("s", 40.0, 5) is None


def test_a_timestamp_that_is_not_a_time_is_that_students_fault_and_nobody_elses(recorded):
    """garbled's timestamp.txt is not a time: stock ``nbgrader autograde`` stops the whole batch,
    and formgrader's list of submissions fails for everyone (it parses every submitted time).
    Here garbled alone gets no score, with the reason and the fix; the file is kept beside, so
    formgrader lists every submission; the gradebook and autograded/ hold only real times."""
    from nbgrader.api import Gradebook, MissingEntry
    from nbgrader.utils import parse_utc

    course, results, report = recorded
    garbled = next(r for r in results if r.student == "garbled")
    assert "timestamp.txt is not a time" in garbled.fault and GARBLED in garbled.fault
    assert "grade the lab again" in garbled.fault
    kept = course.root / "submitted" / "garbled" / "lab8"
    assert not (kept / "timestamp.txt").exists() and (kept / "timestamp.txt.unreadable").read_text() == GARBLED
    with Gradebook(f"sqlite:///{course.root / 'gradebook.db'}") as gb:
        with pytest.raises(MissingEntry):
            gb.find_submission("lab8", "garbled")
        assert gb.find_submission("lab8", "unstamped").timestamp is None
    listed = {s["student"]: s for s in formgrader_api(course).get_submissions("lab8")}
    assert set(SUBMITTED) | {"garbled", "unstamped"} <= set(listed)
    assert all(listed[s]["autograded"] for s in [*SUBMITTED, "unstamped"])
    for stamp in (course.root / "autograded").glob("*/lab8/timestamp.txt"):
        parse_utc(stamp.read_text())
    assert "garbled" in (report / "report.md").read_text().split("## Grader faults")[1]


def test_an_unreadable_timestamp_stays_a_fault_until_it_is_replaced(recorded):
    course, _, _ = recorded
    run = GradingRun(course.root, "lab8", seed=0)
    again = [full_marks(run.source(), "garbled")]
    record_batch(run, again, feedback=False)
    assert "has not been replaced" in again[0].fault


def formgrader_api(course):
    from nbgrader.apps import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory
    from traitlets.config import Config

    config = Config()
    config.CourseDirectory.root = str(course.root)
    config.CourseDirectory.db_url = f"sqlite:///{course.root / 'gradebook.db'}"
    return NbGraderAPI(CourseDirectory(config=config), config=config)


@pytest.mark.parametrize("text, why", [
    ("next Tuesday", "not a time"),
    ("1", "not a time"),                                # dateutil reads it as the 1st of this month
    ("2026-13-45 10:00:00 UTC", "not a time"),
    ("2999-01-01 00:00:00.000000 UTC", "in the future"),
])
def test_a_submission_time_is_refused_unless_it_is_a_full_date_and_time(text, why):
    with pytest.raises(ValueError, match=why):
        late.parse_submission_time(text, now=DUE)


def test_a_submission_time_in_nbgraders_forms_is_read_as_nbgrader_reads_it():
    from nbgrader.utils import parse_utc

    for text in ("2026-10-01 17:00:00.000000 UTC", "2026-10-01 18:00:00 Europe/London",
                 "2026-10-01T17:00:00+00:00", "2026-10-01 17:00:00"):
        assert late.parse_submission_time(text, now=DUE + timedelta(days=1)) == parse_utc(text)


def test_every_fault_of_an_extensions_file_is_refused_by_line(tmp_path):
    known = ({"ana", "bo"}, {"lab8"})
    cases = {"ana,lab8,two days\n": "line 2: hours must be a number of hours >= 0",
             "ana,lab8,-3\n": "line 2: hours must be a number of hours >= 0",
             "ana,lab8,nan\n": "line 2: hours must be a number of hours >= 0",
             "ana,lab8,inf\n": "line 2: hours must be a number of hours >= 0",
             "anna,lab8,24\n": "line 2: no student 'anna'",
             "ana,lab9,24\n": "line 2: no lab 'lab9'",
             "ana,lab8,24\nbo,lab8,1\nana,lab8,48\n": "line 4: ana's lab8 extension is already on line 2",
             ",lab8,24\n": "line 2: a student, an assignment and hours are needed"}
    for rows, message in cases.items():
        (tmp_path / late.EXTENSIONS).write_text("student,assignment,hours\n" + rows)
        with pytest.raises(ValueError, match=message):
            late.read_extensions(tmp_path, *known)
    (tmp_path / late.EXTENSIONS).write_text("who,lab,hours\n")
    with pytest.raises(ValueError, match="expected the columns student, assignment, hours"):
        late.read_extensions(tmp_path, *known)
    # as a spreadsheet saves it: a byte-order mark and CRLF line ends
    (tmp_path / late.EXTENSIONS).write_bytes("\ufeffstudent,assignment,hours\r\nana,lab8,24\r\n".encode())
    assert late.read_extensions(tmp_path, *known) == {("lab8", "ana"): timedelta(hours=24)}


@pytest.mark.parametrize("setting, value", [("per_hour", -0.1), ("per_hour", 1.5), ("cap", 1.5),
                                            ("cap", -1.0)])
def test_a_late_policy_outside_its_range_is_refused_by_name(setting, value):
    from traitlets.config import Config

    config = Config()
    config.AssignLatePenalties.plugin_class = "attention_course_instructor.grading.late.CourseLatePolicy"
    config.CourseLatePolicy.penalty_method = "per_hour"
    config.CourseLatePolicy[setting] = value
    with pytest.raises(ValueError, match=rf"CourseLatePolicy.{setting} must be between 0 and 1.*{value}"):
        late.late_policy(config)
