"""Lab 12 through the hardened grader, graded in one `make grade` batch with Lab 8.

The held-out attack cases of ``test_hardened_grading`` that do not depend on Lab 8's cells, aimed
at Lab 12's task 6 (``head_ablation``, 2 points, on which no other task depends): a submission
that only breaks it scores 27 - 2 = 25. Run through the command line with both labs at once, as an
instructor grades a class.
"""
from __future__ import annotations

import csv
import json
import subprocess
import sys

import nbformat
import pytest

import nbgrader_harness as harness
from attention_course_instructor.grading import class_report
from attention_course_instructor.grading.notebook import grade_id
from attention_course_instructor.grading.hardened import sandbox
from conftest import REPO

pytestmark = pytest.mark.slow
FULL, WITHOUT_TASK6, LAB8_FULL = 27.0, 25.0, 23.0


def cell(nb, gid):
    return next(c for c in nb.cells if grade_id(c) == gid)


def variants(solution, course_root):
    def copy():
        return nbformat.from_dict(json.loads(json.dumps(solution)))

    def with_task6(code):
        nb = copy()
        right = cell(nb, "task6_solution").source.replace("def head_ablation(", "def _right(", 1)
        cell(nb, "task6_solution").source = right + "\n\n" + code
        return nb

    secrets = [course_root / "source/lab12/lab12.ipynb", course_root / "source/lab12/checks.py",
               course_root / "solutions/lab12/lab12.ipynb", course_root / "gradebook.db"]
    v = {"good": copy()}
    nb = copy(); cell(nb, "task2_mask_test").source = "pass"; v["t01_pass"] = nb
    nb = copy(); cell(nb, "task1_learn_test").metadata.nbgrader["points"] = 100; v["t03_points"] = nb
    v["t10_monkeypatch"] = with_task6("torch.allclose = lambda *a, **k: True\n"
                                      "torch.isclose = lambda a, b, **k: torch.ones_like(a, dtype=torch.bool)\n"
                                      "def head_ablation(model, ids):\n"
                                      "    return torch.zeros(model.config.layers, model.config.heads)\n")
    v["t11_subclass"] = with_task6("class Sneaky(torch.Tensor):\n    def __eq__(self, other): return True\n"
                                   "def head_ablation(model, ids):\n"
                                   "    return _right(model, ids).as_subclass(Sneaky)\n")
    v["t11_dtype"] = with_task6("def head_ablation(model, ids):\n    return _right(model, ids).double()\n")
    v["t12_read"] = with_task6(f"LEAKED = []\nfor _p in {[str(p) for p in secrets]!r}:\n"
                               "    try:\n        LEAKED.append(len(open(_p, 'rb').read()) > 0)\n"
                               "    except OSError:\n        pass\n"
                               "def head_ablation(model, ids):\n"
                               "    if any(LEAKED):\n        return torch.zeros(1)\n"
                               "    return _right(model, ids)\n")
    v["t14_exit"] = with_task6("import os\nos._exit(3)\n")
    # never returns, asleep (test_hardened_grading's t15_loop spins: here that would only hold a
    # core for the cell's 20 s limit)
    v["t15_asleep"] = with_task6("import time\ndef head_ablation(model, ids):\n    while True:\n"
                                 "        time.sleep(0.5)\n")
    v["t19_environment"] = with_task6("import os\ndef head_ablation(model, ids):\n"
                                      "    if 'NBGRADER_EXECUTION' in os.environ:\n"
                                      "        return _right(model, ids)\n"
                                      "    return torch.zeros(1)\n")
    v["t21_kill_all"] = with_task6("import os, signal\nos.kill(-1, signal.SIGKILL)\n")
    release = nbformat.read(course_root / "labs/lab12/lab12.ipynb", as_version=4)
    nb = copy(); cell(nb, "mixture_solution").source = cell(release, "mixture_solution").source
    v["optional_undone"] = nb                       # every task but the optional last part
    v["gates_left_off"] = with_task6("def head_ablation(model, ids):\n"
                                     "    out = _right(model, ids)\n"
                                     "    model.blocks[0].attn.head_gate[0] = 0.0\n    return out\n")
    return v


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    if not sandbox.available():
        pytest.skip("user namespaces are unavailable: the hardened grader refuses to run unsandboxed")
    root = tmp_path_factory.mktemp("hardened12") / "course"
    course = harness.make_course(root, REPO / "source" / "lab12", "lab12")
    harness.make_course(root, REPO / "source" / "lab8", "lab8")
    _, solutions = harness.generate(course, "lab12")
    harness.generate(course, "lab8")
    for student, nb in variants(nbformat.read(solutions / "lab12.ipynb", as_version=4), root).items():
        folder = root / "submitted" / student / "lab12"
        folder.mkdir(parents=True)
        nbformat.write(nb, folder / "lab12.ipynb")
    untouched = root / "submitted" / "untouched" / "lab12"
    untouched.mkdir(parents=True)
    (untouched / "lab12.ipynb").write_bytes((root / "labs/lab12/lab12.ipynb").read_bytes())
    for student in ("good", "untouched"):       # two of the same class hand in Lab 8 too
        folder = root / "submitted" / student / "lab8"
        folder.mkdir(parents=True)
        source = root / ("solutions" if student == "good" else "labs") / "lab8" / "lab8.ipynb"
        (folder / "lab8.ipynb").write_bytes(source.read_bytes())
    done = subprocess.run([sys.executable, "-m", "attention_course_instructor.grading.hardened", "lab8", "lab12",
                           "--course", str(root), "--jobs", "2", "--seed", "11", "--cell-timeout", "20",
                           "--run-timeout", "240"], capture_output=True, text=True, timeout=1500)
    assert done.returncode == 0, done.stderr[-3000:]
    return {"course": harness.TempCourse(root), "stdout": done.stdout}


def total(graded, lab, student):
    return sum(s.score for s in harness.scores(graded["course"], lab, student).values())


def test_one_batch_grades_both_labs(graded):
    assert "lab8: graded 2 submissions" in graded["stdout"]
    assert "lab12: graded 14 submissions" in graded["stdout"]
    assert total(graded, "lab8", "good") == LAB8_FULL and total(graded, "lab8", "untouched") == 0
    assert total(graded, "lab12", "good") == FULL
    assert total(graded, "lab12", "untouched") == 0


@pytest.mark.parametrize("student", ["t01_pass", "t03_points"])
def test_edited_test_cells_are_restored(graded, student):
    assert total(graded, "lab12", student) == FULL


def test_the_optional_part_left_undone_costs_nothing(graded):
    """Its message, when left undone, is checked in test_lab12_parts."""
    assert total(graded, "lab12", "optional_undone") == FULL


def test_the_course_files_are_out_of_a_submission_s_reach(graded):
    """t12_read answers wrongly if it could read the sources, checks, solutions or gradebook."""
    assert total(graded, "lab12", "t12_read") == FULL


@pytest.mark.parametrize("student", ["t10_monkeypatch", "t11_subclass", "t11_dtype",
                                     "t14_exit", "t15_asleep", "t19_environment", "t21_kill_all",
                                     "gates_left_off"])
def test_attacks_on_one_task_lose_only_that_task(graded, student):
    scores = harness.scores(graded["course"], "lab12", student)
    assert scores["task6_ablation_test"].score == 0
    assert sum(s.score for s in scores.values()) == WITHOUT_TASK6


def test_feedback_names_the_failed_check_without_the_hidden_tests(graded):
    feedback = (graded["course"].root / "feedback/gates_left_off/lab12/lab12.html").read_text()
    assert "switch every head back on" in feedback
    assert "run_hidden_check" not in feedback and "set_parameters" not in feedback


def test_the_batch_ends_with_each_lab_s_class_report(graded):
    root = graded["course"].root
    for lab in ("lab8", "lab12"):
        assert f"{lab}: class report in" in graded["stdout"]
        assert (root / "reports" / lab / class_report.HTML_NAME).exists()
    results = {r["student"]: r for r in json.loads((root / "reports/lab12/report.json").read_text())}
    assert {c["visible"] for c in results["good"]["cells"] if c["score"] is not None} == {"passed"}
    dtype = next(c for c in results["t11_dtype"]["cells"] if c["grade_id"] == "task6_ablation_test")
    assert (dtype["visible"], dtype["status"]) == ("passed", "failed")
    with open(root / "reports/lab12" / class_report.CSV_NAME, newline="") as handle:
        row = next(r for r in csv.DictReader(handle) if r["cell"] == "task6_ablation_test")
    assert (row["submissions"], row["hidden_passed"]) == ("14", "5")   # good, t01, t03, t12_read, optional
