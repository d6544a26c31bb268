"""Due dates, extensions and late penalties (``attention_course_instructor.grading.late``), applied
when the hardened grader records a lab.

Lab 8 is due at DUE. Three students hand in the same full-marks answers: ``prompt`` an hour
early, ``extended`` ten hours late with a 24-hour extension (``extensions.csv``), ``tardy`` two and
a half hours late. The course's policy takes 10% of the score per hour started, at most 50%. The
grades are recorded by the hardened grader's record stage (the kernels are not needed: each
answer is scored as passed), then read back from formgrader's API, ``nbgrader export`` and the
Canvas export.
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
             "tardy": DUE + timedelta(hours=2.5)}
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
    run = GradingRun(course.root, "lab8", seed=0)
    results = [full_marks(run.source(), student) for student in SUBMITTED]
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
    assert penalties(course) == {"prompt": 0.0, "extended": 0.0, "tardy": round(0.3 * score, 2)}


def test_formgrader_export_and_lms_agree_on_each_total(recorded):
    from nbgrader.apps import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory
    from traitlets.config import Config

    from nbgrader.api import Gradebook

    course, _, _ = recorded
    with Gradebook(f"sqlite:///{course.root / 'gradebook.db'}") as gb:   # the written answers,
        for student in SUBMITTED:                                        # graded (0) in formgrader
            for notebook in gb.find_submission("lab8", student).notebooks:
                for grade in notebook.grades:
                    if grade.needs_manual_grade:
                        grade.manual_score, grade.needs_manual_grade = 0.0, False
        gb.db.commit()
    config = Config()
    config.CourseDirectory.root = str(course.root)
    config.CourseDirectory.db_url = f"sqlite:///{course.root / 'gradebook.db'}"
    api = NbGraderAPI(CourseDirectory(config=config), config=config)
    # formgrader lists the score before the penalty; the gradebook holds the penalty beside it
    formgrader = {s["student"]: s["score"] - penalties(course)[s["student"]]
                  for s in api.get_submissions("lab8")}
    exported = run_nbgrader(course.root, "export", "--to", str(course.root / "grades.csv"))
    assert exported.returncode == 0
    rows = csv.DictReader(io.StringIO((course.root / "grades.csv").read_text()))
    nbgrader_csv = {row["student_id"]: float(row["score"]) for row in rows}
    canvas_ids = {student: str(2000 + n) for n, student in enumerate(SUBMITTED)}
    for student, number in canvas_ids.items():         # as the hub's roster records them
        run_nbgrader(course.root, "db", "student", "add", student, f"--lms-user-id={number}")
    run_nbgrader(course.root, "export", "--exporter",
                 "attention_course_instructor.grading.lms_export.CanvasCsvExportPlugin",
                 "--to", str(course.root / "canvas.csv"))
    by_id = {number: student for student, number in canvas_ids.items()}
    canvas = {by_id[row[1]]: float(row[5]) for row in
              list(csv.reader(io.StringIO((course.root / "canvas.csv").read_text())))[2:]}
    assert formgrader == nbgrader_csv == canvas
    assert canvas["tardy"] < canvas["extended"] == canvas["prompt"]


def test_the_report_names_each_late_submission_and_its_deduction(recorded):
    course, results, report = recorded
    text = (report / "report.md").read_text()
    section = text.split("## Late submissions (1)", 1)[1]
    assert "| tardy | 2.5 | 0 | " + f"{round(0.3 * results[0].score, 2):g}" in section
    assert "extended" not in section and "prompt" not in section


def test_the_policy_per_hour_is_capped_and_nbgraders_own_policies_remain():
    policy = late.CourseLatePolicy(penalty_method="per_hour", per_hour=0.1, cap=0.5)
    assert policy.late_submission_penalty("s", 40.0, 1) == 4.0             # a second late: 1 hour
    assert policy.late_submission_penalty("s", 40.0, 3 * 3600 + 1) == 16.0  # 4 hours started
    assert policy.late_submission_penalty("s", 40.0, 30 * 3600) == 20.0     # capped at half
    assert late.CourseLatePolicy(penalty_method="zero").late_submission_penalty("s", 40.0, 5) == 40.0
    assert late.CourseLatePolicy().late_submission_penalty("s", 40.0, 5) is None


def test_a_malformed_extensions_file_is_refused_by_line(tmp_path):
    (tmp_path / late.EXTENSIONS).write_text("student,assignment,hours\nana,lab8,two days\n")
    with pytest.raises(ValueError, match="line 2: expected a student, an assignment and hours"):
        late.read_extensions(tmp_path)
    (tmp_path / late.EXTENSIONS).write_text("who,lab,hours\n")
    with pytest.raises(ValueError, match="expected the columns student, assignment, hours"):
        late.read_extensions(tmp_path)
