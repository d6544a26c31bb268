"""Adversarial submissions through the hardened grader: each must end in the safe outcome.

One batch grades every variant of the Lab 8 solution below (two at a time, as an instructor would),
then each test reads its student's result. Task 6 (``attention_map``, 2 points) is the usual
target because no other task depends on it: a submission that only breaks it scores 23 - 2 = 21.

The same course on a real Dask cluster (the last part): a ``dask scheduler`` and two ``dask
worker`` processes started here on 127.0.0.1, and stopped, with everything they started, at the
end. A cut of the batch's cases -- correct, wrong, broken and hostile -- graded there must come
out as the batch graded them, cell by cell; then one worker is killed in the middle of a batch, a
scheduler that is not there is named, a worker that cannot sandbox is refused, `make grade` runs
end to end on the cluster, and a course shared twice in quick succession stays on the workers.
"""
from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import nbformat
import pytest
import torch
from nbgrader.utils import compute_checksum

import nbgrader_harness as harness
from attention_course_instructor.grading.checks import SEED_FILE
from attention_course_instructor.grading.notebook import grade_id, is_grade, is_solution
from attention_course_instructor.grading.hardened import sandbox
from attention_course_instructor.grading.hardened import GradingRun, Limits, grade_batch
from attention_course_instructor.grading.hardened.dask_workers import ClusterRefused, DaskWorkers
from attention_course_instructor.grading.hardened.executors import BATCH_PREFIX
from attention_course_instructor.grading.hardened.grade import find_submissions
from attention_course_instructor.grading.hardened.record import record_batch, write_autograded, write_gradebook
from conftest import REPO
from dask_helpers import Cluster, comparable
from hub_helpers import free_ports

pytestmark = pytest.mark.slow
FULL, WITHOUT_TASK6 = 23.0, 21.0
# a cell's limit: Lab 8's slowest cell takes 1.8 s alone, but under the suite's load a 10 s limit
# timed out a legitimate cell (a Dask run's instructor cell); t15_loop spins until it, twice
LIMITS = Limits(cell_seconds=15, run_seconds=240, memory_mb=4096)
SPIN = re.compile(r"while True:\n(\s+)pass")


def cell(nb, gid):
    return next(c for c in nb.cells if grade_id(c) == gid)


def with_task6(nb, code):
    cell(nb, "task6_solution").source = code
    return nb


def cuda_checkpoint() -> str:
    """A torch.save file whose tensor claims to live on cuda:0 (as if saved on a GPU machine)."""
    buf = io.BytesIO()
    torch.save({"w": torch.arange(3.0)}, buf, _use_new_zipfile_serialization=False)
    raw = buf.getvalue().replace(b"X\x03\x00\x00\x00cpu", b"X\x06\x00\x00\x00cuda:0")
    return base64.b64encode(raw).decode()


CORRECT_MAP = "    return weights[:min(len(reading) + 1, weights.shape[0]), :n_columns]\n"


def variants(solution: nbformat.NotebookNode, course_root: Path) -> dict:
    """student -> notebook (or a callable that writes their submission folder itself)."""
    v = {}

    def copy():
        return nbformat.from_dict(json.loads(json.dumps(solution)))

    v["good"], v["good_again"] = copy(), copy()
    nb = copy(); cell(nb, "task1_scores_test").source = "pass"; v["t01_pass"] = nb
    nb = copy(); c = cell(nb, "task1_scores_test"); c.source = "pass"
    c.metadata.nbgrader["checksum"] = compute_checksum(c); v["t02_checksum"] = nb
    nb = copy(); cell(nb, "task1_scores_test").metadata.nbgrader["points"] = 100; v["t03_points"] = nb
    nb = copy(); c = cell(nb, "task2_context_test")
    nb.cells[nb.cells.index(c)] = nbformat.v4.new_markdown_cell(c.source, metadata=c.metadata, id=c.id)
    v["t04_markdown"] = nb
    nb = copy(); cell(nb, "setup").source += "\nraise SystemExit('the locked cell was edited')"
    v["t04_locked"] = nb
    nb = copy(); nb.cells.remove(cell(nb, "task3_step_test")); v["t05_deleted"] = nb
    nb = copy(); del cell(nb, "task4_edit_test").metadata["nbgrader"]; v["t05_stripped"] = nb
    nb = copy(); cell(nb, "task1_scores_test").metadata.nbgrader["solution"] = True; v["t06_flipped"] = nb
    nb = copy(); nb.cells.append(nbformat.v4.new_code_cell("pass", metadata={"nbgrader": {
        "grade": True, "grade_id": "bonus_test", "points": 50, "locked": True, "solution": False,
        "schema_version": 3, "task": False}})); v["t06_fake"] = nb
    nb = copy(); c = cell(nb, "task2_context_test")
    twin = nbformat.from_dict(json.loads(json.dumps(c))); twin["id"] = "duplicate-of-context-test"
    nb.cells.insert(nb.cells.index(c) + 1, twin); v["t07_duplicate"] = nb
    nb = with_task6(copy(), "def attention_map(weights, reading, n_columns):\n    return weights\n")
    cell(nb, "task6_map_test").outputs = [nbformat.v4.new_output("stream", text="All tests passed!\n")]
    cell(nb, "task6_map_test").execution_count = 1
    v["t08_outputs"] = nb
    v["t09_traceback"] = with_task6(copy(), "get_ipython().showtraceback = lambda *a, **k: None\n"
                                    "get_ipython().showsyntaxerror = lambda *a, **k: None\n"
                                    "def attention_map(weights, reading, n_columns):\n"
                                    "    raise ValueError('hidden failure')\n")
    v["t10_monkeypatch"] = with_task6(copy(), "import numpy, torch\n"
                                      "torch.allclose = lambda *a, **k: True\n"
                                      "torch.equal = lambda *a, **k: True\n"
                                      "torch.testing.assert_close = lambda *a, **k: None\n"
                                      "numpy.testing.assert_allclose = lambda *a, **k: None\n"
                                      "def attention_map(weights, reading, n_columns):\n"
                                      "    return torch.zeros(1, n_columns)\n")
    v["t11_equal"] = with_task6(copy(), "class Anything:\n    shape = (5, 33)\n"
                                "    def __eq__(self, other): return True\n"
                                "def attention_map(weights, reading, n_columns):\n    return Anything()\n")
    v["t11_subclass"] = with_task6(copy(), "class Sneaky(torch.Tensor):\n    def __eq__(self, other): return True\n"
                                   "def attention_map(weights, reading, n_columns):\n"
                                   "    return (weights[:min(len(reading) + 1, weights.shape[0]), :n_columns]).as_subclass(Sneaky)\n")
    v["t11_dtype"] = with_task6(copy(), "def attention_map(weights, reading, n_columns):\n"
                                "    return weights[:min(len(reading) + 1, weights.shape[0]), :n_columns].double()\n")
    v["t11_device"] = with_task6(copy(), "def attention_map(weights, reading, n_columns):\n"
                                 "    return weights[:min(len(reading) + 1, weights.shape[0]), :n_columns].to('meta')\n")
    secrets = [course_root / "source/lab8/lab8.ipynb", course_root / "solutions/lab8/lab8.ipynb",
               course_root / "gradebook.db", REPO / "source/lab8/lab8.md",
               course_root / "submitted/good/lab8/lab8.ipynb"]
    v["t12_read"] = with_task6(copy(), f"LEAKED = []\nfor _p in {[str(p) for p in secrets]!r}:\n"
                               "    try:\n        LEAKED.append(len(open(_p, 'rb').read()) > 0)\n"
                               "    except OSError:\n        pass\n"
                               "def attention_map(weights, reading, n_columns):\n"
                               "    if any(LEAKED):\n        return torch.zeros(1)\n" + CORRECT_MAP)
    v["t13_gradebook"] = with_task6(copy(), "import sqlite3\n"
                                    f"try:\n    _db = sqlite3.connect({str(course_root / 'gradebook.db')!r})\n"
                                    "    _db.execute('update grade set auto_score = 999'); _db.commit()\n"
                                    "except Exception:\n    pass\n"
                                    "def attention_map(weights, reading, n_columns):\n" + CORRECT_MAP)
    v["t14_exit"] = with_task6(copy(), "import os\nos._exit(3)\n")
    v["t14_memory"] = with_task6(copy(), "_hog = bytearray(64 * 2 ** 30)\n")
    nb = with_task6(copy(), "def attention_map(weights, reading, n_columns):\n    while True:\n        pass\n")
    nb.cells.insert(nb.cells.index(cell(nb, "task1_solution")) + 1, nbformat.v4.new_code_cell("while True:\n    pass"))
    v["t15_loop"] = nb
    v["t15_asleep"] = asleep(nb)
    v["t16_warning"] = with_task6(copy(), "import warnings\nwarnings.warn('a deprecation', DeprecationWarning)\n"
                                  "def attention_map(weights, reading, n_columns):\n"
                                  "    warnings.warn('this is fine', UserWarning)\n" + CORRECT_MAP)
    nb = with_task6(copy(), "def attention_map(weights, reading, n_columns):\n    return weights\n")
    cell(nb, "task6_map_test").source += "\n0.5 * 2"
    v["t17_number"] = nb
    nb = copy(); nb.metadata["kernelspec"] = {"name": "bogus", "display_name": "Bogus", "language": "cobol"}
    v["t18_kernelspec"] = nb
    v["t18_corrupt"] = lambda folder: (folder / "lab8.ipynb").write_text('{"cells": [ this is not json')
    v["t18_wrong_name"] = lambda folder: nbformat.write(copy(), folder / "Lab8-final.ipynb")
    v["t18_missing"] = lambda folder: (folder / "notes.txt").write_text("forgot the notebook")
    v["t19_environment"] = with_task6(copy(), "import os\n"
                                      "def attention_map(weights, reading, n_columns):\n"
                                      "    if 'NBGRADER_EXECUTION' in os.environ:\n" + "    " + CORRECT_MAP +
                                      "    return torch.zeros(1)\n")
    v["t20_cuda"] = with_task6(copy(), "import base64, io\n"
                               f"_ckpt = torch.load(io.BytesIO(base64.b64decode({cuda_checkpoint()!r})))\n"
                               "def attention_map(weights, reading, n_columns):\n"
                               "    part = weights.cuda()[:min(len(reading) + 1, weights.shape[0]), :n_columns]\n"
                               "    return part.to('cuda').cpu() + 0 * _ckpt['w'].sum()\n")
    # the real threats: the grader's processes, detached processes, writes and reads outside
    v["t21_kill_pids"] = with_task6(copy(), "import os, signal\n"
                                    f"for _pid in ({os.getpid()}, os.getppid(), 1):\n"
                                    "    try:\n        os.kill(_pid, signal.SIGKILL)\n"
                                    "    except OSError:\n        pass\n"
                                    "def attention_map(weights, reading, n_columns):\n" + CORRECT_MAP)
    v["t21_kill_group"] = with_task6(copy(), "import os, signal\nos.killpg(os.getpgrp(), signal.SIGKILL)\n")
    v["t21_kill_all"] = with_task6(copy(), "import os, signal\nos.kill(-1, signal.SIGKILL)\n")
    v["t22_siblings"] = with_task6(copy(), "import os, signal\n"
                                   "for _pid in [int(p) for p in os.listdir('/proc') if p.isdigit()]:\n"
                                   "    if _pid != os.getpid():\n        try:\n"
                                   "            os.kill(_pid, signal.SIGKILL)\n"
                                   "        except OSError:\n            pass\n"
                                   "def attention_map(weights, reading, n_columns):\n" + CORRECT_MAP)
    v["t23_detached"] = with_task6(copy(), "import subprocess, sys\n"
                                   "subprocess.Popen([sys.executable, '-c', 'import os, time; os.setsid(); "
                                   f"time.sleep(60)  # {DETACHED_MARKER}'], start_new_session=True)\n"
                                   "def attention_map(weights, reading, n_columns):\n" + CORRECT_MAP)
    protected = course_root.parent / "protected"
    v["t24_write"] = with_task6(copy(), "import os\nWROTE = []\n"
                                f"_targets = [{str(protected)!r}, {str(course_root)!r}, '/', '/usr', '/root', '/work']\n"
                                "for _top in list(_targets) + ['/']:\n"
                                "    for _dir, _subdirs, _ in os.walk(_top):\n"
                                "        if (_dir.startswith(('/proc', '/tmp', '/dev')) or _dir.startswith(os.getcwd())\n"
                                "                or _dir.count('/') > 3):\n"
                                "            _subdirs[:] = []\n            continue\n"
                                "        try:\n            open(os.path.join(_dir, 'leak.txt'), 'w').write('x')\n"
                                "            WROTE.append(_dir)\n        except OSError:\n            pass\n"
                                "for _dir in _targets:\n"
                                "    try:\n        open(os.path.join(_dir, 'leak.txt'), 'w').write('x')\n"
                                "        WROTE.append(_dir)\n    except OSError:\n        pass\n"
                                "def attention_map(weights, reading, n_columns):\n"
                                "    if WROTE:\n        return torch.zeros(1)\n" + CORRECT_MAP)
    second = course_root.parent / "second-course" / "source" / "lab8" / "checks.py"
    v["t25_read_elsewhere"] = with_task6(copy(), "import time\n"
                                         f"try:\n    SECRET = open({str(second)!r}).read()\n"
                                         "except OSError:\n    SECRET = ''\n"
                                         "print(SECRET[:200])\n"
                                         "if SECRET:\n    open('smuggled.txt', 'w').write(SECRET)\n    time.sleep(3)\n"
                                         "def attention_map(weights, reading, n_columns):\n"
                                         "    if SECRET:\n"
                                         "        raise type('LEAK_' + str(len(SECRET)), (Exception,), {})()\n" + CORRECT_MAP)
    v["t26_smuggle_name"] = with_task6(copy(), f"class {SMUGGLED_NAME}(Exception):\n    pass\n"
                                       f"print('{SMUGGLED_NAME} in stdout')\n"
                                       "def attention_map(weights, reading, n_columns):\n"
                                       f"    raise {SMUGGLED_NAME}('{SMUGGLED_NAME} in the message')\n")
    nb = with_task6(copy(), "def attention_map(weights, reading, n_columns):\n"
                    "    return first_rows(weights, len(reading) + EXTRA_ROWS)[:, :n_columns]\n")
    nb.cells.insert(nb.cells.index(cell(nb, "task6_solution")) + 1, nbformat.v4.new_code_cell(ADDED_HELPER))
    nb.cells.insert(0, nbformat.v4.new_code_cell(ADDED_AT_TOP))
    v["t27_added"] = nb
    release = course_root / "labs" / "lab8" / "lab8.ipynb"
    v["untouched"] = lambda folder: shutil.copy(release, folder / "lab8.ipynb")
    return v


def asleep(looping: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """t15_loop (a cell that never ends, and an attention_map that never returns) asleep instead
    of spinning: the same time-outs, restart and replay of the earlier cells, without holding a
    core for the limit each time (the Dask cluster grades this one; the batch grades both)."""
    nb = nbformat.from_dict(json.loads(json.dumps(looping)))
    for c in nb.cells:
        if SPIN.search(c.source):
            c.source = "import time\n" + SPIN.sub(r"while True:\n\1time.sleep(0.5)", c.source)
    assert sum("time.sleep(0.5)" in c.source for c in nb.cells) == 2, "t15_loop has changed"
    return nb


ADDED_AT_TOP = "EXTRA_ROWS = 1                     # a cell the student added above everything"
ADDED_HELPER = "def first_rows(weights, n):\n    return weights[:min(n, weights.shape[0])]\n"


DETACHED_MARKER = "course-detached-marker-4242"
SMUGGLED_NAME = "SecretMarkerXYZ"


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    if not sandbox.available():
        pytest.skip("user namespaces are unavailable: the hardened grader refuses to run unsandboxed")
    root = tmp_path_factory.mktemp("hardened")
    course = harness.make_course(root / "course", REPO / "source" / "lab8", "lab8")
    # outside the kernel's view: a root-owned 755 folder and a second copy of the course's checks
    (root / "protected").mkdir(mode=0o755)
    shutil.copytree(REPO / "source" / "lab8", root / "second-course" / "source" / "lab8")
    _, solutions = harness.generate(course, "lab8")
    solution = nbformat.read(solutions / "lab8.ipynb", as_version=4)
    for student, nb in variants(solution, course.root).items():
        folder = course.root / "submitted" / student / "lab8"
        folder.mkdir(parents=True)
        nb(folder) if callable(nb) else nbformat.write(nb, folder / "lab8.ipynb")
    hardened = GradingRun(course.root, "lab8", seed=5, limits=LIMITS)
    gradebook = course.root / "gradebook.db"
    before = hashlib.sha256(gradebook.read_bytes()).hexdigest()
    temporary = set(Path(tempfile.gettempdir()).glob("course-grading-*"))
    # one submission graded alone in this process first: a separate run to compare with, and the
    # parallel batch below then starts from a parent that has run kernels (forked workers hung so)
    [alone] = grade_batch(hardened, jobs=1, students={"good": course.root / "submitted/good/lab8/lab8.ipynb"})
    results = {r.student: r for r in grade_batch(hardened, jobs=2)}
    after = hashlib.sha256(gradebook.read_bytes()).hexdigest()
    report = record_batch(hardened, list(results.values()))
    leftovers = sorted(set(Path(tempfile.gettempdir()).glob("course-grading-*")) - temporary)
    survivors = [p for p in Path("/proc").glob("[0-9]*")
                 if DETACHED_MARKER in _cmdline(p)]
    return {"results": results, "course": hardened, "gradebook_untouched": before == after,
            "report": report, "alone": alone, "root": root, "leftovers": leftovers,
            "survivors": survivors}


def _cmdline(proc: Path) -> str:
    try:
        return (proc / "cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return ""


def score(graded, student):
    return graded["results"][student].score


def by_cell(graded, student):
    return {c.grade_id: c for c in graded["results"][student].cells}


def test_cells_a_student_added_run_and_show_where_they_ran_in_the_autograded_notebook(graded):
    """An added helper runs right after the answer it followed; one added above everything runs
    before the first answer; the autograded notebook shows both, where they ran."""
    result = graded["results"]["t27_added"]
    assert result.score == FULL, [c for c in result.cells if c.score != c.points]
    assert "2 code cell(s) you added were run too" in result.flags
    course = graded["course"]
    nb = nbformat.read(course.root / "autograded" / "t27_added" / "lab8" / "lab8.ipynb", as_version=4)
    sources = [c.source for c in nb.cells]
    top, helper = sources.index(ADDED_AT_TOP), sources.index(ADDED_HELPER)
    first_answer = next(i for i, c in enumerate(nb.cells)
                        if c.cell_type == "code" and (is_grade(c) or is_solution(c)))
    assert top == first_answer - 1
    assert grade_id(nb.cells[helper - 1]) == "task6_solution"
    assert nb.cells[top].metadata.get("nbgrader") is None


def test_the_solution_gets_full_marks_and_grading_is_deterministic(graded):
    good, again, alone = graded["results"]["good"], graded["results"]["good_again"], graded["alone"]
    assert good.score == FULL and good.error == "" and good.flags == []
    cells = [(c.grade_id, c.score, c.status, c.reason) for c in good.cells]
    assert cells == [(c.grade_id, c.score, c.status, c.reason) for c in again.cells]
    assert cells == [(c.grade_id, c.score, c.status, c.reason) for c in alone.cells]


@pytest.mark.parametrize("student, flag", [("t01_pass", "edited"), ("t02_checksum", "edited"),
                                           ("t04_markdown", "type changed"), ("t04_locked", "locked cell"),
                                           ("t05_deleted", "missing"), ("t05_stripped", "metadata removed"),
                                           ("t07_duplicate", "duplicate")])
def test_tampered_tests_are_restored_and_graded_in_full(graded, student, flag):
    result = graded["results"][student]
    assert result.score == FULL and result.error == ""
    assert any(flag in f for f in result.flags), result.flags


def test_edited_points_are_ignored(graded):
    cells = by_cell(graded, "t03_points")
    assert cells["task1_scores_test"].points == 2 and cells["task1_scores_test"].score == 2
    assert score(graded, "t03_points") == FULL


@pytest.mark.parametrize("student", ["t06_flipped", "t06_fake"])
def test_flipped_flags_and_fake_tests_fail_closed(graded, student):
    result = graded["results"][student]
    assert result.score == 0 and "tampered" in result.error and result.flags
    assert all(c.score in (0, None) for c in result.cells)


@pytest.mark.parametrize("student", ["t08_outputs", "t09_traceback", "t10_monkeypatch", "t11_equal",
                                     "t11_subclass", "t11_dtype", "t11_device", "t17_number",
                                     "t19_environment"])
def test_wrong_answers_get_nothing_however_they_are_dressed(graded, student):
    cells = by_cell(graded, student)
    assert cells["task6_map_test"].score == 0 and cells["task6_map_test"].reason
    assert score(graded, student) == WITHOUT_TASK6


def test_reasons_name_what_was_wrong(graded):
    assert "raised ValueError" in by_cell(graded, "t09_traceback")["task6_map_test"].reason
    assert "plain torch.Tensor" in by_cell(graded, "t11_subclass")["task6_map_test"].reason
    assert "dtype" in by_cell(graded, "t11_dtype")["task6_map_test"].reason
    assert "CPU" in by_cell(graded, "t11_device")["task6_map_test"].reason
    assert "should return a torch.Tensor" in by_cell(graded, "t11_equal")["task6_map_test"].reason


def test_visible_checks_are_recorded_beside_the_score(graded):
    """Each cell's visible checks (the released asserts, run on the same answers after every probe)
    are recorded for the class report: what the student saw, apart from the score."""
    def visible(student):
        return {c.grade_id: c.visible for c in graded["results"][student].cells if c.score is not None}

    assert set(visible("good").values()) == {"passed"}
    assert visible("t01_pass")["task1_scores_test"] == "passed"      # the released checks, not the edit
    assert visible("t11_dtype")["task6_map_test"] == "passed"        # the shape they check is right ...
    assert by_cell(graded, "t11_dtype")["task6_map_test"].status == "failed"   # ... the dtype is not
    assert visible("t10_monkeypatch")["task6_map_test"] == "failed"
    assert visible("t15_loop")["task6_map_test"] == "not run"        # its probe ran out of time
    assert set(visible("t18_corrupt").values()) == {""}               # nothing ran


def test_course_files_cannot_be_read_or_the_gradebook_written(graded):
    assert score(graded, "t12_read") == FULL            # every read failed, so the answer stayed right
    assert score(graded, "t13_gradebook") == FULL
    assert graded["gradebook_untouched"]


def test_exits_memory_blowups_and_loops_cost_only_their_cells(graded):
    for student, status in (("t14_exit", "died"), ("t14_memory", "MemoryError"), ("t15_loop", "timeout"),
                            ("t15_asleep", "timeout")):
        cells = by_cell(graded, student)
        assert cells["task6_map_test"].score == 0, student
        assert score(graded, student) == WITHOUT_TASK6, (student, graded["results"][student].cells)
        text = cells["task6_map_test"].status + cells["task6_map_test"].reason + " ".join(graded["results"][student].flags)
        assert status in text, (student, text)


def test_warnings_cuda_and_bogus_kernelspecs_do_not_cost_points(graded):
    for student in ("t16_warning", "t18_kernelspec", "t20_cuda"):
        assert score(graded, student) == FULL, (student, graded["results"][student].cells)


@pytest.mark.parametrize("student, words", [("t18_corrupt", "not a readable notebook"),
                                            ("t18_wrong_name", "Lab8-final.ipynb"),
                                            ("t18_missing", "no notebook lab8.ipynb")])
def test_unreadable_submissions_get_a_clear_zero(graded, student, words):
    result = graded["results"][student]
    assert result.score == 0 and words in result.error
    assert len([c for c in result.cells if c.score == 0]) == 9


def test_the_untouched_release_gets_nothing_and_says_why(graded):
    result = graded["results"]["untouched"]
    assert result.score == 0 and result.error == ""
    cells = [c for c in result.cells if c.score is not None]
    assert cells and all(c.score == 0 and c.reason for c in cells)


def test_gradebook_feedback_and_report_agree(graded):
    from nbgrader.api import Gradebook

    course = graded["course"]
    with Gradebook(f"sqlite:///{course.root / 'gradebook.db'}") as gb:
        for student in ("good", "t11_dtype", "t06_flipped"):
            assert gb.find_submission("lab8", student).score == score(graded, student)
    feedback = (course.root / "feedback/t11_dtype/lab8/lab8.html").read_text()
    assert "should return dtype torch.float32, got torch.float64" in feedback
    assert "run_hidden_check" not in feedback and "BEGIN HIDDEN" not in feedback
    rows = (graded["report"] / "report.csv").read_text().splitlines()
    assert len(rows) == 1 + 12 * len(graded["results"])
    assert "t18_corrupt" in (graded["report"] / "report.md").read_text()


def test_formgrader_sees_hardened_grades_and_keeps_manual_scores(graded):
    """After the hardened grader alone (no nbgrader autograde), formgrader's API lists every
    submission as autograded with its score; a manual score survives a re-grade of the same
    answer; a written answer left as released scores 0 without waiting for a grader."""
    from nbgrader.api import Gradebook
    from nbgrader.apps import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory
    from traitlets.config import Config

    course = graded["course"]
    config = Config()
    config.CourseDirectory.root = str(course.root)
    config.CourseDirectory.db_url = f"sqlite:///{course.root / 'gradebook.db'}"
    api = NbGraderAPI(CourseDirectory(config=config), config=config)
    submissions = {s["student"]: s for s in api.get_submissions("lab8")}
    assert all(s["autograded"] for s in submissions.values())
    assert submissions["good"]["score"] == FULL and submissions["good"]["needs_manual_grade"]
    notebooks = api.get_notebook_submissions("lab8", "lab8")
    assert {n["student"] for n in notebooks} == set(graded["results"])
    with Gradebook(config.CourseDirectory.db_url) as gb:
        blank = gb.find_grade("task7a_answer", "lab8", "lab8", "t18_missing")
        assert blank.auto_score == 0 and not blank.needs_manual_grade
        grade = gb.find_grade("task7a_answer", "lab8", "lab8", "good")
        grade.manual_score, grade.needs_manual_grade = 1.5, False        # as formgrader saves it
        gb.db.commit()
    again = [graded["results"]["good"]]                                  # a re-grade, same answers
    write_gradebook(course, again, write_autograded(course, again))
    with Gradebook(config.CourseDirectory.db_url) as gb:
        grade = gb.find_grade("task7a_answer", "lab8", "lab8", "good")
        assert grade.manual_score == 1.5 and not grade.needs_manual_grade
        assert gb.find_submission("lab8", "good").score == FULL + 1.5


# ---- the sandbox holds (the threats of the sandbox issue) ----------------------------------------

def test_the_grader_and_the_batch_survive_kill_attempts(graded):
    assert score(graded, "t21_kill_pids") == FULL             # no pid outside its namespace reachable
    assert score(graded, "t22_siblings") == FULL
    for student in ("t21_kill_group", "t21_kill_all"):        # it can only end its own kernel
        cells = by_cell(graded, student)
        assert cells["task6_map_test"].score == 0 and score(graded, student) == WITHOUT_TASK6, student
    assert len(graded["results"]) == len(list((graded["course"].root / "submitted").iterdir()))
    assert graded["results"]["good"].score == FULL and graded["results"]["good_again"].score == FULL


def test_no_process_of_a_submission_outlives_its_grading(graded):
    assert score(graded, "t23_detached") == FULL
    assert graded["survivors"] == []


def test_nothing_is_written_outside_the_kernels_own_folder(graded):
    lost = [(c.grade_id, c.status, c.reason) for c in graded["results"]["t24_write"].cells
            if c.score is not None and c.score < c.points]     # says why, should it ever fail
    assert score(graded, "t24_write") == FULL, lost
    assert list((graded["root"] / "protected").iterdir()) == []
    assert not (graded["root"] / "course" / "leak.txt").exists()
    assert graded["leftovers"] == []                          # temporary folders removed


def test_files_elsewhere_cannot_be_read_nor_anything_smuggled_back(graded):
    assert score(graded, "t25_read_elsewhere") == FULL        # the second copy was not readable
    cells = by_cell(graded, "t26_smuggle_name")
    assert cells["task6_map_test"].score == 0
    assert "raised an exception of a class defined in your notebook" in cells["task6_map_test"].reason
    course = graded["course"]
    # the grader's own words: reasons, flags, the results it put in autograded test cells, the report
    words = [w for r in graded["results"].values() for c in r.cells for w in c.reasons]
    words += [f for r in graded["results"].values() for f in r.flags]
    for path in (course.root / "autograded").rglob("*.ipynb"):
        for cell in nbformat.read(path, as_version=4).cells:
            if is_grade(cell) and cell.cell_type == "code":
                words += [json.dumps(o) for o in cell.outputs]
    words += [p.read_text() for p in graded["report"].iterdir()]
    for text in words:
        assert SMUGGLED_NAME not in text and "LEAK_" not in text and "def compare" not in text, text


@pytest.fixture
def first_grading(tmp_path, monkeypatch):
    """A course graded for the first time, as an instructor without COURSE_GRADING_SEED set grades
    it: one honest submission (the solution) of Lab 8."""
    monkeypatch.delenv("COURSE_GRADING_SEED", raising=False)
    if not sandbox.available():
        pytest.skip("user namespaces are unavailable")
    course = harness.make_course(tmp_path, REPO / "source" / "lab8", "lab8")
    _, solutions = harness.generate(course, "lab8")
    harness.submit(course, "lab8", "honest", solutions / "lab8.ipynb")
    return course


def test_a_broken_grading_environment_stops_the_batch_before_anything_is_written(first_grading,
                                                                                  capsys):
    """The control (the solution) is graded first: when the environment cannot give it full marks
    -- here the lab's first cell needs a package the grading environment lacks -- the command
    exits non-zero naming the fault, and writes nothing for anyone (not the course's seed)."""
    from attention_course_instructor.grading.hardened.cli import main

    course = first_grading
    source_path = course.root / "source/lab8/lab8.ipynb"
    nb = nbformat.read(source_path, as_version=4)
    cell(nb, "setup").source = "import a_package_the_grader_lacks\n" + cell(nb, "setup").source
    nbformat.write(nb, source_path)
    gradebook = (course.root / "gradebook.db").read_bytes()
    assert main(["lab8", "--course", str(course.root), "--jobs", "1", "--cell-timeout", "30"]) == 3
    err = capsys.readouterr().err
    assert "control" in err and "instructor cell 'setup'" in err
    assert not (course.root / "autograded").exists() and not (course.root / "feedback").exists()
    assert not (course.root / "reports").exists() and not (course.root / SEED_FILE).exists()
    assert (course.root / "gradebook.db").read_bytes() == gradebook


def test_a_seed_that_cannot_be_kept_loses_no_result(first_grading, capsys, monkeypatch):
    """The course's first grading keeps its new seed after the batch: where that fails, the
    results are recorded all the same, and the command says so and exits non-zero."""
    from attention_course_instructor.grading.hardened import cli

    course = first_grading

    def full_disk(*args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(cli, "keep_course_seed", full_disk)
    assert cli.main(["lab8", "--course", str(course.root), "--jobs", "1", "--cell-timeout", "30"]) == 4
    assert "the course's new seed could not be kept" in capsys.readouterr().err
    assert sum(s.score for s in harness.scores(course, "lab8", "honest").values()) == FULL
    assert not (course.root / SEED_FILE).exists()


def test_a_worker_that_dies_is_replaced_and_its_submission_graded_again(graded):
    """Kill the worker process itself in the middle of a submission (as the machine's memory
    killer would): a fresh worker grades it again, and every submission is graded once."""
    from attention_course_instructor.grading.hardened.executors import LocalWorkers

    course = graded["course"]
    # a quick wrong answer and a right one (t15_loop's timeouts made this test a minute long)
    students = {s: course.root / "submitted" / s / "lab8" / "lab8.ipynb" for s in ("t11_dtype", "good")}
    killed = []

    def kill_the_first_worker():
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not killed:
            for proc in Path("/proc").glob("[0-9]*"):
                if "attention_course_instructor.grading.hardened.worker" in _cmdline(proc):
                    os.kill(int(proc.name), 9)
                    killed.append(int(proc.name))
                    return
            time.sleep(0.5)

    killer = threading.Thread(target=kill_the_first_worker)
    killer.start()
    results = {r.student: r for r in LocalWorkers(jobs=1).grade(course, students)}
    killer.join()
    assert killed, "no worker was found to kill"
    assert set(results) == set(students)
    assert results["good"].score == FULL
    assert results["t11_dtype"].score == WITHOUT_TASK6 and results["t11_dtype"].error == ""


# ---- the instructor package stays out of the kernel's view -----------------------------------------

def sandboxed_python(code: str, private: Path, env: dict | None = None):
    from attention_course.paths import PACKAGE

    private.mkdir(exist_ok=True)
    sandbox.prepare_private(str(private))
    command = sandbox.wrap([sys.executable, "-c", code], str(private), str(PACKAGE), 0)
    return subprocess.run(command, capture_output=True, text=True, timeout=120,
                          env={"PATH": "/usr/bin:/bin", **(env or {})})


@pytest.mark.parametrize("installed", [False, True], ids=["editable", "installed-in-the-environment"])
def test_a_grading_kernel_cannot_import_the_grader(installed, tmp_path, monkeypatch):
    """Editable (the repository's instructor/ is not in the kernel's view) or installed into the
    environment the kernel runs in (the hub's <env>/instructor): the grader's modules cannot be
    imported in the sandbox, while the student package can."""
    if not sandbox.available():
        pytest.skip("user namespaces are unavailable")
    env = {}
    if installed:
        from attention_course_instructor.book.build import build_wheel

        target = Path(tempfile.mkdtemp(prefix="instructor-probe-", dir=sys.prefix))
        try:
            wheel = build_wheel(REPO / "instructor", tmp_path / "wheel")
            subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target",
                            str(target), str(wheel)], check=True)
            for path in [target, *target.rglob("*")]:
                path.chmod(0o755 if path.is_dir() else 0o644)
            monkeypatch.setattr(sandbox, "INSTRUCTOR_PACKAGE", str(target / "attention_course_instructor"))
            env = {"PYTHONPATH": str(target)}
            done = sandboxed_python(PROBE_IMPORTS, tmp_path / "private", env)
            planted = sandbox.hidden_trees(sandbox.visible_trees(str(REPO / "attention_course")))
        finally:
            shutil.rmtree(target, ignore_errors=True)
    else:
        done = sandboxed_python(PROBE_IMPORTS, tmp_path / "private", env)
    assert done.stdout.split() == ["student", "no-grader"], done.stdout + done.stderr
    if installed:
        assert planted == [os.path.realpath(target / "attention_course_instructor")]


PROBE_IMPORTS = """
import attention_course.core.readers
print("student")
try:
    import attention_course_instructor.grading.checks
    print("grader")
except ImportError:
    print("no-grader")
"""


def test_the_sandbox_hides_an_instructor_package_inside_what_the_kernel_sees(monkeypatch):
    inside = os.path.join(sys.prefix, "instructor", "attention_course_instructor")
    monkeypatch.setattr(sandbox, "INSTRUCTOR_PACKAGE", inside)
    trees = sandbox.visible_trees(str(REPO / "attention_course"))
    assert sandbox.hidden_trees(trees) == [os.path.realpath(inside)]
    args = sandbox.bwrap_args("/tmp/private", str(REPO / "attention_course"), as_root=False)
    assert args[args.index(os.path.realpath(inside)) - 1] == "--tmpfs"
    monkeypatch.setattr(sandbox, "INSTRUCTOR_PACKAGE", str(REPO / "instructor" / "attention_course_instructor"))
    assert sandbox.hidden_trees(trees) == []            # editable: not in view, nothing to hide


# ---- the same course on a real Dask cluster ---------------------------------------------------------

# a cut of the batch: correct, wrong, broken and hostile (t15_asleep waits out two time-outs)
CASES = ("good", "t11_dtype", "t11_equal", "t14_exit", "t14_memory", "t15_asleep", "t18_corrupt",
         "t18_missing", "t18_wrong_name", "t21_kill_all", "t09_traceback", "t04_markdown", "untouched")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    if not sandbox.available():
        pytest.skip("user namespaces are unavailable: the hardened grader refuses to run unsandboxed")
    c = Cluster(tmp_path_factory.mktemp("workers-tmp"))
    try:
        c.add_worker("w1")
        c.add_worker("w2")
        c.wait_for({"w1", "w2"})
        yield c
    finally:
        c.close()


def submitted(graded, students) -> dict[str, Path]:
    return {s: p for s, p in find_submissions(graded["course"]).items() if s in students}


def test_the_cluster_grades_every_cell_as_the_batch_did(cluster, graded):
    with DaskWorkers(cluster.address) as workers:
        remote = comparable(grade_batch(graded["course"], students=submitted(graded, CASES),
                                        executor=workers))
    local = comparable(graded["results"][s] for s in CASES)
    assert remote.keys() == local.keys() == set(CASES)
    for student in local:
        assert remote[student] == local[student], student
    assert local["good"][2] and all(score == points for _, score, points, *_ in local["good"][2]
                                    if score is not None)
    assert local["t15_asleep"][2] != local["good"][2]         # the hostile ones really lost points


# the course's own seed, as an instructor without COURSE_GRADING_SEED set grades
WITHOUT_A_SEED = {k: v for k, v in os.environ.items() if k != "COURSE_GRADING_SEED"}


def folder_state(root: Path) -> dict:
    return {str(p.relative_to(root)): p.stat().st_mtime_ns for p in root.rglob("*")}


def test_a_lab_missing_from_the_gradebook_is_named_before_anything_is_graded(tmp_path, capsys):
    """The step a newcomer skipped (the lab generated into the gradebook): said, with the command
    that does it, before any submission is graded; nothing is written. It was said only after the
    whole batch had been graded, as nbgrader's "No such assignment". Recording a batch
    directly says the same before it writes anything."""
    from attention_course_instructor.grading.hardened import cli

    course = harness.make_course(tmp_path / "course", REPO / "source" / "lab8", "lab8")
    harness.make_course(tmp_path / "course", REPO / "source" / "lab12", "lab12")
    folder = course.root / "submitted" / "ann" / "lab8"
    folder.mkdir(parents=True)
    shutil.copy(REPO / "solutions" / "lab8" / "lab8.ipynb", folder / "lab8.ipynb")
    before = folder_state(course.root)
    assert cli.main(["lab8", "--course", str(course.root), "--seed", "1"]) == 2
    assert "run `nbgrader generate_assignment lab8` in the course folder first" in capsys.readouterr().err
    assert folder_state(course.root) == before
    harness.generate(course, "lab8")                       # lab8 in the gradebook, lab12 not
    before = folder_state(course.root)
    assert cli.main(["lab8", "lab12", "--course", str(course.root), "--seed", "1"]) == 2
    said = capsys.readouterr().err
    assert "lab12 is not in the gradebook" in said and "lab8 is not" not in said, said
    assert folder_state(course.root) == before
    with pytest.raises(SystemExit, match="lab12 is not in the gradebook .* generate_assignment"):
        record_batch(GradingRun(course.root, "lab12", seed=1), [])     # as a script would call it
    assert folder_state(course.root) == before


def test_an_unreachable_scheduler_is_named_before_anything_is_written(graded):
    """Not even the course's own seed, which a first run that grades keeps."""
    root = graded["course"].root
    before = folder_state(root)
    address = f"tcp://127.0.0.1:{free_ports(1)}"
    done = subprocess.run([sys.executable, "-m", "attention_course_instructor.grading.hardened", "lab8", "--course",
                           str(root), "--scheduler", address], capture_output=True, text=True,
                          timeout=120, env=WITHOUT_A_SEED)
    assert done.returncode == 2
    assert f"the Dask scheduler at {address} is unreachable" in done.stderr
    assert folder_state(root) == before


def test_a_worker_that_cannot_sandbox_is_refused(cluster):
    env = {**os.environ, "PATH": str(Path(sys.executable).parent)}      # no bwrap on its PATH
    cluster.add_worker("bare", env=env)
    cluster.wait_for({"bare"})
    try:
        with DaskWorkers(cluster.address) as workers, pytest.raises(ClusterRefused, match="bare|bubblewrap"):
            workers.check_workers(use_sandbox=True)
    finally:
        cluster.kill("bare")


def test_make_grade_with_a_scheduler_writes_what_a_local_run_writes(cluster, tmp_path):
    """The command line end to end: the control and the batch on the cluster, the gradebook,
    autograded notebooks, feedback and the course's new seed written here."""
    course = harness.make_course(tmp_path / "course", REPO / "source" / "lab8", "lab8")
    harness.generate(course, "lab8")
    solution = (REPO / "solutions" / "lab8" / "lab8.ipynb").read_bytes()
    for student, data in (("ann", solution),
                          ("bea", (course.root / "labs" / "lab8" / "lab8.ipynb").read_bytes())):
        folder = course.root / "submitted" / student / "lab8"
        folder.mkdir(parents=True)
        (folder / "lab8.ipynb").write_bytes(data)
    done = subprocess.run([sys.executable, "-m", "attention_course_instructor.grading.hardened", "lab8", "--course",
                           str(course.root), "--scheduler", cluster.address], capture_output=True,
                          text=True, timeout=600, env=WITHOUT_A_SEED)
    assert done.returncode == 0, done.stderr[-3000:]
    assert sum(s.score for s in harness.scores(course, "lab8", "ann").values()) == 23
    assert sum(s.score for s in harness.scores(course, "lab8", "bea").values()) == 0
    assert (course.root / "autograded" / "ann" / "lab8" / "lab8.ipynb").exists()
    assert (course.root / "feedback" / "bea" / "lab8" / "lab8.html").exists()
    assert (course.root / SEED_FILE).stat().st_mode & 0o777 == 0o600     # its first batch kept one


def test_the_lab_shared_again_right_after_its_release_stays_on_the_workers(cluster, graded):
    """The control and then the batch share the same course folder in quick succession; the
    second copy must not be forgotten when the first one's release reaches the scheduler late
    (with content-hashed keys it was, and a batch was cancelled for "lost dependencies")."""
    with DaskWorkers(cluster.address) as workers:
        for _ in range(20):
            bundle = workers.share_course(graded["course"])
            time.sleep(0.05)                             # the earlier copy's release arrives
            assert workers.client.who_has([bundle])[bundle.key], "the shared course was forgotten"
            assert bundle.status == "finished"
            del bundle


# the killed-worker batch: honest, wrong, hostile and blank submissions, enough for the
# third worker to be busy when it dies (the whole cut is compared in the test above)
KILL_BATCH = ("good", "t11_dtype", "t14_exit", "t21_kill_all", "untouched")


def test_a_worker_killed_mid_batch_loses_nobody(cluster, graded):
    cluster.add_worker("w3")
    cluster.wait_for({"w3"})
    outcome = {}
    batch_of = submitted(graded, KILL_BATCH)
    assert set(batch_of) == set(KILL_BATCH)
    with DaskWorkers(cluster.address) as workers:
        batch = threading.Thread(target=lambda: outcome.update(
            results=grade_batch(graded["course"], students=batch_of, executor=workers)), daemon=True)
        batch.start()
        address = next(a for a, w in workers.client.scheduler_info()["workers"].items() if w["name"] == "w3")
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:                    # kill it while it grades someone
            if any(str(k).startswith("grade-") for k in workers.client.processing().get(address, ())):
                break
            time.sleep(0.2)
        else:
            pytest.fail("w3 never received a submission")
        cluster.kill("w3")
        batch.join(timeout=600)
    assert comparable(outcome["results"]) == comparable(graded["results"][s] for s in KILL_BATCH)
    assert not list(cluster.tmp.glob(BATCH_PREFIX + "*"))    # w3's folder was swept by the others


def test_a_course_copy_the_scheduler_forgets_mid_batch_loses_nobody(cluster, tmp_path):
    """The course's copy forgotten by the scheduler while a batch runs (a worker's death racing
    the count of its copies did it once in CI: the batch stopped on "cancelled for reason: already
    forgotten"): the tasks that went with it are sent again, with the course shared again, and
    every student is graded once, in full."""
    from distributed import Future

    course = harness.make_course(tmp_path / "course", REPO / "source" / "lab8", "lab8")
    harness.generate(course, "lab8")
    solution = REPO / "solutions" / "lab8" / "lab8.ipynb"
    students = {s: harness.submit(course, "lab8", s, solution) / "lab8.ipynb" for s in ("ann", "bea", "cy")}
    run = GradingRun(course.root, "lab8", seed=5, limits=LIMITS)
    outcome = {}
    with DaskWorkers(cluster.address) as workers:
        batch = threading.Thread(target=lambda: outcome.update(
            results=grade_batch(run, students=students, executor=workers)), daemon=True)
        batch.start()
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not any(
                str(k).startswith("grade-") for keys in workers.client.processing().values() for k in keys):
            time.sleep(0.2)
        copies = [k for k in workers.client.who_has() if not str(k).startswith("grade-")]
        assert copies, "the course was not shared"
        workers.client.cancel([Future(k, workers.client) for k in copies], force=True)
        batch.join(timeout=600)
        again = workers.client.run_on_scheduler(lambda dask_scheduler: sorted(
            {str(t[0]) for t in dask_scheduler.transition_log if "-again" in str(t[0])}))
    assert again, "no submission was sent again"
    results = {r.student: r for r in outcome["results"]}
    assert set(results) == set(students)
    assert all(r.score == FULL and not r.fault and r.error == "" for r in results.values()), results
