"""The feedback page a student fetches (``grading/feedback.py``), made by nbgrader's own
``generate_feedback`` with the course's settings: every score named by its task, and no script,
so that JupyterLab shows it whole without "Trust HTML". Before, every autograded cell was listed
as "Test cell" and the page carried nbgrader's scripts."""
from __future__ import annotations

import re
import shutil

import pytest

import nbgrader_harness as harness
from attention_course_instructor.grading.hardened import GradingRun
from attention_course_instructor.grading.hardened.record import write_autograded, write_feedback, write_gradebook
from attention_course_instructor.grading.hardened.score import SubmissionGrade, zero_cells
from conftest import REPO


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("feedback")
    course = harness.make_course(tmp, REPO / "source" / "lab8", "lab8")
    _, solutions = harness.generate(course, "lab8")
    folder = tmp / "submitted" / "ana" / "lab8"
    folder.mkdir(parents=True)
    shutil.copy(solutions / "lab8.ipynb", folder / "lab8.ipynb")
    run = GradingRun(tmp, "lab8")
    results = [SubmissionGrade("ana", zero_cells(run.source(), "graded elsewhere"))]
    write_gradebook(run, results, write_autograded(run, results))
    write_feedback(run, results)
    assert not results[0].fault, results[0].fault
    return (tmp / "feedback" / "ana" / "lab8" / "lab8.html").read_text()


def scores_list(page: str) -> list[str]:
    toc = page[page.index('<div id="toc">'):]
    toc = toc[:toc.index("</ol>")]
    return [re.sub(r"\s+", " ", re.sub("<[^>]+>", "", li)).strip() for li in re.findall(r"<li.*?</li>", toc, re.S)]


def test_each_score_is_named_by_its_task(page):
    entries = scores_list(page)
    assert len(entries) == 12 and not any("Test cell" in e or "Written response" in e for e in entries)
    assert entries[0] == "Task 1: scores and weights over the columns: checks (task1 scores) (Score: 0.0 / 2.0)"
    assert entries[-1].startswith("Task 7: what the maps show, and what they do not: your written answer (task7c)")


def test_the_page_needs_no_script(page):
    assert "<script" not in page.lower()
    assert "Task 6: attention maps of hits and misses" in page
