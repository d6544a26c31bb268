"""The class report of a lab (``attention_course_instructor.grading.class_report``).

1. **A synthetic class whose numbers are known.** Forty Lab 8 submissions and two grader faults,
   recorded by the hardened grader's own record stage (no kernels: each cell's result is set):
   every autograded cell is failed by a set number of students, its visible checks by a set number
   too (two students fail one cell's visible checks and pass its hidden ones), with known failure
   messages, some quoting a value of the student's; a teaching assistant has graded one written
   answer for thirty students; three submissions are stamped after the due date, one of them within
   its extension. The report, made by its command, must give back each of those numbers exactly,
   quote the lab's words only and name no student unless asked.
2. **The real grader, end to end.** The small fixture lab graded by the hardened command
   (``python -m attention_course_instructor.grading.hardened``), which writes the class report at
   the end of its batch: a softmax that overflows passes the visible check (equal inputs) and fails
   the hidden one (huge inputs), and the report says so.
"""
from __future__ import annotations

import csv
import re
import subprocess
import sys
from datetime import datetime, timedelta

import nbformat
import pytest

import nbgrader_harness as harness
from attention_course_instructor.grading import class_report, late
from attention_course_instructor.grading.hardened import GradingRun, sandbox
from attention_course_instructor.grading.hardened.record import record_batch
from attention_course_instructor.grading.hardened.score import CellGrade, SubmissionGrade, zero_cells
from attention_course_instructor.grading.notebook import grade_id, is_autograded_test, is_manual, points

REPO = harness.REPO
N = 40
STUDENTS = [f"learner{j:02d}x" for j in range(N)]
FAULTY = ["learner40x", "learner41x"]                  # the grader could not grade these two
# cell -> how many students fail it: students 0 .. F-1 fail the hidden checks, 0 .. V-1 the visible
HIDDEN_FAILS = {"task1_scores_test": 1, "task1_weights_test": 2, "task2_context_test": 4,
                "task3_step_test": 10, "task3_greedy_test": 13, "task4_edit_test": 20,
                "task4_rates_test": 27, "task5_results_test": 39, "task6_map_test": 40}
VISIBLE_FAILS = {"task1_scores_test": 1, "task1_weights_test": 1, "task2_context_test": 2,
                 "task3_step_test": 5, "task3_greedy_test": 13, "task4_edit_test": 3,
                 "task4_rates_test": 27, "task5_results_test": 10, "task6_map_test": 40}
VISIBLE_ONLY = {"task4_edit_test": (30, 31)}           # fail the visible checks, pass the hidden
VOID = 0                                               # student 0 handed in no readable notebook
VOID_ERROR = "no notebook lab8.ipynb in the submission; found ['learner00x-private-notes.ipynb']"
GRADED_BY_HAND = range(1, 31)                          # task7a_answer, graded by a TA: j % 3 points
DUE = datetime(2026, 10, 1, 17, 0)
LATE = {5: 2.5, 6: 10.0, 7: 1.0}                       # student -> hours after the due date
EXTENDED = 6                                           # ... with a 24-hour extension
POLICY = """c = get_config()
c.CourseLatePolicy.penalty_method = "per_hour"
c.CourseLatePolicy.per_hour = 0.1
c.CourseLatePolicy.cap = 0.5
"""


def shape_message(gid: str, j: int) -> str:
    """A message that quotes a returned value (its shape, its dtype), as the lab's checks do."""
    return f"{gid}: should have shape (B, N) = (3, 7), got ({j + 2}, 7)"


def dtype_message(gid: str, j: int) -> str:
    return f"{gid}: should return dtype torch.float32, got SecretDtype{j}"


def words_message(gid: str) -> str:
    return f"{gid}: the values differ from those of the task's formula"


TIMEOUT = "the cell ran past its time limit"


def failed_cell(gid: str, worth: float, j: int) -> CellGrade:
    """Student j's failure of one cell: odd j a shape and a dtype message, j % 4 == 2 a timeout
    after an earlier one, j % 4 == 0 the lab's words."""
    if j % 2:
        return CellGrade(gid, worth, 0.0, "failed", [shape_message(gid, j), dtype_message(gid, j)])
    if j % 4 == 2:
        return CellGrade(gid, worth, 0.0, "timeout", [f"{TIMEOUT} (earlier: task1_solution timeout)"])
    return CellGrade(gid, worth, 0.0, "failed", [words_message(gid), "and 2 more"])


def synthetic_result(source, j: int) -> SubmissionGrade:
    if j == VOID:
        return SubmissionGrade(STUDENTS[j], zero_cells(source, VOID_ERROR), error=VOID_ERROR)
    cells = []
    for cell in source.cells:
        gid = grade_id(cell)
        if is_manual(cell):
            cells.append(CellGrade(gid, points(cell), None, "manual", ["graded by hand"]))
        elif is_autograded_test(cell):
            hidden = j >= HIDDEN_FAILS[gid]
            visible = j >= VISIBLE_FAILS[gid] and j not in VISIBLE_ONLY.get(gid, ())
            grade = (CellGrade(gid, points(cell), points(cell), "passed") if hidden
                     else failed_cell(gid, points(cell), j))
            grade.visible = "passed" if visible else "not run" if grade.status == "timeout" else "failed"
            cells.append(grade)
    return SubmissionGrade(STUDENTS[j], cells)


def auto_points(j: int) -> float:
    source = nbformat.read(REPO / "source/lab8/lab8.ipynb", as_version=4)
    return sum(points(c) for c in source.cells
               if is_autograded_test(c) and j >= HIDDEN_FAILS[grade_id(c)] and j != VOID)


def expected_penalty(j: int) -> float:
    if j not in LATE or j == EXTENDED:
        return 0.0
    return round(auto_points(j) * min(0.5, 0.1 * -(-LATE[j] // 1)), 2)


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    """The class recorded (no kernels), a TA's hand grading, then the report's command, twice."""
    from nbgrader.api import Gradebook

    course = harness.make_course(tmp_path_factory.mktemp("class") / "course", REPO / "source/lab8", "lab8")
    _, solutions = harness.generate(course, "lab8")
    with Gradebook(f"sqlite:///{course.db}") as gb:
        gb.update_or_create_assignment("lab8", duedate=DUE)
    (course.root / "nbgrader_config.py").write_text(POLICY)
    (course.root / late.EXTENSIONS).write_text(f"student,assignment,hours\n{STUDENTS[EXTENDED]},lab8,24\n")
    for j, student in enumerate(STUDENTS + FAULTY):
        folder = course.root / "submitted" / student / "lab8"
        folder.mkdir(parents=True)
        name = "learner00x-private-notes.ipynb" if j == VOID else "lab8.ipynb"
        (folder / name).write_bytes((solutions / "lab8.ipynb").read_bytes())
        if j in LATE:
            stamp = DUE + timedelta(hours=LATE[j])
            (folder / "timestamp.txt").write_text(stamp.strftime("%Y-%m-%d %H:%M:%S.%f UTC"))
    run = GradingRun(course.root, "lab8", seed=0)
    results = [synthetic_result(run.source(), j) for j in range(N)]
    results += [SubmissionGrade(s, [], error="grader fault", fault=f"grader fault: the grading kernel did "
                                f"not start in 3 attempts (RuntimeError: /tmp/batch/{s}/kernel)")
                for s in FAULTY]
    record_batch(run, results, feedback=False)
    with Gradebook(f"sqlite:///{course.db}") as gb:                  # as formgrader saves a TA's score
        for j in GRADED_BY_HAND:
            grade = gb.find_grade("task7a_answer", "lab8", "lab8", STUDENTS[j])
            grade.manual_score, grade.needs_manual_grade = float(j % 3), False
        gb.db.commit()
    folder = course.root / "reports" / "lab8"
    assert class_report.main(["lab8", "--course", str(course.root), "--names"]) == 0
    out = {"named": (folder / class_report.HTML_NAME).read_text()}
    done = subprocess.run([sys.executable, "-m", "attention_course_instructor.grading.class_report",
                           "lab8", "--course", str(course.root)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]                  # as the instructor runs it
    out["anonymous"] = (folder / class_report.HTML_NAME).read_text()
    with open(folder / class_report.CSV_NAME, newline="") as handle:
        out["cells"] = {row["cell"]: row for row in csv.DictReader(handle)}
    with open(folder / class_report.FAILURES_CSV_NAME, newline="") as handle:
        out["failures"] = list(csv.DictReader(handle))
    out["files"] = [(folder / name).read_text() for name in (class_report.CSV_NAME,
                                                             class_report.FAILURES_CSV_NAME)]
    out["report"] = class_report.summarise(course.root, "lab8")
    return out


def test_every_cell_gives_back_its_pass_rates_exactly(synthetic):
    cells = synthetic["cells"]
    assert set(HIDDEN_FAILS) <= set(cells)
    for gid, failed in HIDDEN_FAILS.items():
        row, seen = cells[gid], VISIBLE_FAILS[gid] + len(VISIBLE_ONLY.get(gid, ()))
        assert int(row["submissions"]) == N, gid
        assert int(row["hidden_passed"]) == N - failed and float(row["hidden_pass_rate"]) == (N - failed) / N, gid
        assert int(row["visible_passed"]) == N - seen and float(row["visible_pass_rate"]) == (N - seen) / N, gid
        assert int(row["visible_not_run"]) == sum(1 for j in range(1, VISIBLE_FAILS[gid]) if j % 4 == 2), gid
        assert int(row["passed_visible_failed_hidden"]) == failed - VISIBLE_FAILS[gid], gid
        assert int(row["failed_visible_passed_hidden"]) == len(VISIBLE_ONLY.get(gid, ())), gid
        assert int(row["zero_scores"]) == failed and float(row["zero_share"]) == failed / N, gid
        worth = float(row["points"])
        assert float(row["mean_points"]) == pytest.approx(worth * (N - failed) / N, abs=1e-6), gid


def test_written_answers_count_what_is_graded_by_hand(synthetic):
    row = synthetic["cells"]["task7a_answer"]
    hand = [j % 3 for j in GRADED_BY_HAND] + [0]               # + the void submission's automatic 0
    assert row["kind"] == "by hand" and row["visible_passed"] == "" and row["hidden_pass_rate"] == ""
    assert int(row["scored"]) == len(hand) and int(row["zero_scores"]) == hand.count(0)
    assert float(row["mean_points"]) == pytest.approx(sum(hand) / len(hand), abs=1e-6)
    assert int(synthetic["cells"]["task7b_answer"]["scored"]) == 1     # the void one only
    zeros = sum(HIDDEN_FAILS.values()) + hand.count(0) + 2              # task7b, task7c: the void one
    for gid, failed in HIDDEN_FAILS.items():
        assert float(synthetic["cells"][gid]["share_of_class_zeros"]) == pytest.approx(failed / zeros, abs=1e-6)


def test_failure_messages_are_counted_in_the_lab_s_words(synthetic):
    counts = {(r["cell"], r["message"]): int(r["submissions"]) for r in synthetic["failures"]}
    for gid, failed in HIDDEN_FAILS.items():
        odd = sum(1 for j in range(1, failed) if j % 2)
        expected = {f"{gid}: should have shape (B, N) = (3, 7), got …": odd,
                    f"{gid}: should return dtype torch.float32, got …": odd,
                    TIMEOUT: sum(1 for j in range(1, failed) if j % 4 == 2),
                    words_message(gid): sum(1 for j in range(1, failed) if j % 4 == 0),
                    "no notebook of the lab's name in the submission": 1}
        got = {message: n for (cell, message), n in counts.items() if cell == gid}
        assert got == {m: n for m, n in expected.items() if n}, gid


def test_no_student_text_and_no_name_unless_asked(synthetic):
    anonymous = synthetic["anonymous"]
    for text in [anonymous, *synthetic["files"]]:
        assert "learner" not in text                           # no id, nor the file a student named
        assert "SecretDtype" not in text and "(3, 7), got (" not in text and "and 2 more" not in text
    named = synthetic["named"]
    for j in (5, 7, 40, 41):                                   # late, and the grader's faults
        assert STUDENTS_AND_FAULTY[j] in named, j
    assert STUDENTS[EXTENDED] not in named                     # on time, within the extension
    assert "/tmp/batch" not in named                           # a fault's detail stays in report.md


STUDENTS_AND_FAULTY = STUDENTS + FAULTY


def test_late_work_totals_and_faults_come_back(synthetic):
    report = synthetic["report"]
    assert report.submissions == N + len(FAULTY) and report.graded == N
    assert [(x.student, x.hours_late, x.extension_hours, x.penalty) for x in report.late] == \
        [(STUDENTS[j], LATE[j], 0.0, expected_penalty(j)) for j in (5, 7)]
    hand = {j: j % 3 for j in GRADED_BY_HAND}
    expected = sorted(auto_points(j) + hand.get(j, 0) - expected_penalty(j) for j in range(N))
    assert sorted(report.totals) == pytest.approx(expected)
    assert report.max_total == 29 and report.partial_totals == N - 1
    assert report.faults == {"grader fault: the grading kernel did not start in 3 attempts": FAULTY}
    assert report.void == {"no notebook of the lab's name in the submission": 1}
    bins = {(lo, hi): n for lo, hi, n in class_report.total_bins(report)}
    assert sum(bins.values()) == N and bins[(0.0, 1.0)] == sum(1 for t in expected if 0 <= t < 1)


def test_the_page_is_accessible(synthetic):
    page = synthetic["anonymous"]
    assert page.count("<h1>") == 1 and '<html lang="en">' in page
    tables = re.findall(r"<table>.*?</table>", page, re.S)
    assert tables and all("<caption>" in t and '<th scope="col"' in t for t in tables)
    figures = re.findall(r"<figure>.*?</figure>", page, re.S)
    assert len(figures) == 2
    for figure in figures:
        svg = re.search(r"<svg [^>]*>", figure).group(0)
        assert 'role="img"' in svg and "aria-labelledby" in svg and "<title id=" in figure
        assert "<figcaption>" in figure


WCAG = {"type": "tag", "values": ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]}


@pytest.mark.parametrize("width", [1280, 320])
def test_axe_finds_nothing_and_the_page_never_scrolls_sideways(synthetic, browser, axe_script, tmp_path,
                                                               width):
    """axe-core (WCAG 2.1 A and AA) on the report as written, at a desktop width and at 320 px,
    where a wide table scrolls within its own region and the page does not (reflow)."""
    page_file = tmp_path / class_report.HTML_NAME
    page_file.write_text(synthetic["anonymous"])
    page = browser.new_page(viewport={"width": width, "height": 900})
    try:
        page.goto(page_file.as_uri())
        page.add_script_tag(path=str(axe_script))
        found = page.evaluate("(only) => axe.run(document, {runOnly: only})", WCAG)
        assert [(v["id"], len(v["nodes"])) for v in found["violations"]] == []
        assert page.evaluate("document.documentElement.scrollWidth") <= width
    finally:
        page.close()


def test_a_batch_graded_before_visible_checks_were_kept_says_so():
    """Results of an older grader hold no visible outcome: the report says so, not 0%."""
    cell = class_report.CellSummary("task1", "autograded", 2.0, 4, scored=4, total_points=4.0, zeros=2,
                                    hidden_passed=2)
    report = class_report.ClassReport("lab", 4, [cell], [2.0, 2.0, 0.0, 0.0], 2.0, 0, {}, [], {},
                                      visible_recorded=False)
    page = class_report.render_html(report)
    assert "not recorded" in page and "grade it again" in page and "Visible (plain)" not in page
    row = dict(zip(class_report.CSV_COLUMNS, class_report.csv_rows(report)[0]))
    assert (row["visible_passed"], row["visible_pass_rate"], row["hidden_passed"]) == ("", "", 2)


# ---- the real grader, end to end ----------------------------------------------------------------

FIXTURE = REPO / "tests" / "fixtures" / "course" / "source" / "fixture"
ANSWERS = {"pupil-good": None,
           "pupil-overflows": "def softmax(x):\n    e = np.exp(x)\n    return e / e.sum()\n",
           "pupil-identity": "def softmax(x):\n    return x\n"}


@pytest.fixture(scope="module")
def graded_fixture(tmp_path_factory):
    if not sandbox.available():
        pytest.skip("user namespaces are unavailable: the hardened grader refuses to run unsandboxed")
    course = harness.make_course(tmp_path_factory.mktemp("fixture") / "course", FIXTURE, "fixture")
    release, solutions = harness.generate(course, "fixture")
    solution = nbformat.read(solutions / "fixture.ipynb", as_version=4)
    for student, code in ANSWERS.items():
        nb = nbformat.from_dict(solution)
        if code is not None:
            next(c for c in nb.cells if grade_id(c) == "softmax").source = code
        folder = course.root / "submitted" / student / "fixture"
        folder.mkdir(parents=True)
        nbformat.write(nb, folder / "fixture.ipynb")
    harness.submit(course, "fixture", "pupil-untouched", release / "fixture.ipynb")
    done = subprocess.run([sys.executable, "-m", "attention_course_instructor.grading.hardened", "fixture",
                           "--course", str(course.root), "--jobs", "2", "--cell-timeout", "60"],
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    folder = course.root / "reports" / "fixture"
    with open(folder / class_report.CSV_NAME, newline="") as handle:
        cells = {row["cell"]: row for row in csv.DictReader(handle)}
    with open(folder / class_report.FAILURES_CSV_NAME, newline="") as handle:
        failures = {r["message"]: int(r["submissions"]) for r in csv.DictReader(handle)}
    return {"stdout": done.stdout, "cells": cells, "failures": failures,
            "html": (folder / class_report.HTML_NAME).read_text()}


def test_a_batch_ends_with_the_class_report(graded_fixture):
    assert "fixture: class report in" in graded_fixture["stdout"]
    row = graded_fixture["cells"]["test_softmax"]
    assert (row["submissions"], row["visible_passed"], row["hidden_passed"]) == ("4", "2", "1")
    assert row["passed_visible_failed_hidden"] == "1" and row["failed_visible_passed_hidden"] == "0"
    assert graded_fixture["failures"] == {
        "softmax is wrong on huge inputs (non-negative, summing to one)": 2,
        "softmax is wrong on equal inputs (non-negative, summing to one)": 1,
        "softmax is wrong on mixed inputs (non-negative, summing to one)": 1,
        "softmax raised NotImplementedError (the answer is not written yet)": 1}
    explain = graded_fixture["cells"]["explain"]
    assert (explain["kind"], explain["scored"]) == ("by hand", "1")    # the untouched answer: 0
    assert "pupil" not in graded_fixture["html"]
