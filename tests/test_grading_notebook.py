"""The one notebook model of grading (``grading/notebook.py``): cell roles, the released form of a
test cell, and a submission matched to its source once, for the notebook that runs and the
notebook shown as graded alike. Fast: nothing here starts a kernel."""
from __future__ import annotations

import copy
import itertools

import nbformat
import pytest
from nbgrader import utils as nbgrader_utils

from attention_course_instructor.grading.checks import load_lab
from attention_course_instructor.grading.hardened.assemble import assemble
from attention_course_instructor.grading.hardened.record import autograded_notebook
from attention_course_instructor.grading.hardened.score import SubmissionGrade
from attention_course_instructor.grading.notebook import (autograded_test_ids, grade_id, is_grade,
                                                          is_locked, is_solution, match_submission,
                                                          released_test_source)
from conftest import REPO, load_nb

LABS = ("lab8", "lab12")


def source(lab):
    return load_nb(REPO / "source" / lab / f"{lab}.ipynb")


def cell(nb, gid):
    return next(c for c in nb.cells if grade_id(c) == gid)


@pytest.mark.parametrize("lab", LABS)
def test_the_roles_are_nbgraders_own(lab):
    """Every cell of the lab reads as nbgrader reads it, and the lab has cells of every role (a
    check over cells that all read False would prove nothing)."""
    roles = set()
    for c in source(lab).cells:
        mine = (is_grade(c), is_solution(c), is_locked(c))
        assert mine == (bool(nbgrader_utils.is_grade(c)), bool(nbgrader_utils.is_solution(c)),
                        bool(nbgrader_utils.is_locked(c))), c.get("id")
        roles.add((c.cell_type, *mine))
    assert {("code", True, False, True), ("code", False, True, False),
            ("markdown", True, True, False), ("code", False, False, True)} <= roles, roles


@pytest.mark.parametrize("flags", list(itertools.product([True, False, None], repeat=3)))
def test_every_combination_of_flags_reads_as_nbgrader_reads_it(flags):
    """grade, solution and locked each set, cleared or missing (None): nbgrader's locked is also
    true of any test cell, and false of any answer, whatever the cell says."""
    meta = {k: v for k, v in zip(("grade", "solution", "locked"), flags) if v is not None}
    c = nbformat.v4.new_code_cell("x = 1", metadata={"nbgrader": {"grade_id": "q", **meta}})
    assert (is_grade(c), is_solution(c), is_locked(c)) == (
        bool(nbgrader_utils.is_grade(c)), bool(nbgrader_utils.is_solution(c)),
        bool(nbgrader_utils.is_locked(c)))


@pytest.mark.parametrize("metadata", [{"nbgrader": "grade"}, {"nbgrader": ["solution"]},
                                      {"nbgrader": None}, {}])
def test_a_student_cell_of_any_shape_reads_as_no_role(metadata):
    c = nbformat.v4.new_code_cell("x = 1", metadata=metadata)
    assert (is_grade(c), is_solution(c), is_locked(c), grade_id(c)) == (False, False, False, None)


@pytest.mark.parametrize("lab", LABS)
def test_the_released_form_of_every_test_cell_is_what_nbgrader_released(lab):
    released = load_nb(REPO / "labs" / lab / f"{lab}.ipynb")
    for gid in autograded_test_ids(source(lab)):
        assert released_test_source(cell(source(lab), gid).source).strip() == \
            cell(released, gid).source.strip(), gid


def with_added_cells(lab="lab8"):
    """The lab's solutions with three added code cells: one above everything, one after an answer,
    one after a test cell; and one added markdown cell (never run)."""
    nb = load_nb(REPO / "solutions" / lab / f"{lab}.ipynb")
    nb.cells.insert(0, nbformat.v4.new_code_cell("TOP = 1"))
    at = nb.cells.index(cell(nb, "task2_solution"))
    nb.cells.insert(at + 1, nbformat.v4.new_code_cell("AFTER_ANSWER = 2"))
    at = nb.cells.index(cell(nb, "task4_edit_test"))
    nb.cells.insert(at + 1, nbformat.v4.new_code_cell("AFTER_TEST = 3"))
    nb.cells.insert(at + 2, nbformat.v4.new_markdown_cell("my notes"))
    return nb


def test_a_submission_is_matched_by_grade_id_then_by_cell_id():
    src, nb = source("lab8"), with_added_cells()
    del cell(nb, "task1_scores_test").metadata["nbgrader"]          # found by its cell id still
    twin = copy.deepcopy(cell(nb, "task2_solution"))
    twin["id"] = "a-copy"
    nb.cells.append(twin)
    matching = match_submission(src, nb)
    assert all(theirs is not None for _, _, theirs in matching.pairs())
    assert matching.duplicates == ["task2_solution"]
    assert matching.added_count == 3


def test_the_graded_notebook_shows_the_added_cells_where_they_ran():
    src, nb, lab = source("lab8"), with_added_cells(), load_lab(REPO / "source" / "lab8")
    sources, roles, flags, _ = assemble(src, nb, lab, seed=1)
    assert "3 code cell(s) you added were run too" in flags

    def order(cells_and_roles):
        """The added cells and the answers, in the order given."""
        return [text if role == "extra" else gid for text, (role, gid) in cells_and_roles
                if role in ("extra", "solution")]

    ran = order(zip(sources, roles))
    graded = autograded_notebook(src, nb, SubmissionGrade("ann"), {})
    shown = order((c.source, ("solution", grade_id(c)) if is_solution(c) and c.cell_type == "code"
                   else ("extra", "") if grade_id(c) is None else ("other", ""))
                  for c in graded.cells)
    assert ran == shown
    assert ran[0] == "TOP = 1" and ran[ran.index("task2_solution") + 1] == "AFTER_ANSWER = 2"
    assert "my notes" not in [c.source for c in graded.cells]


def test_the_kernel_runtime_is_a_module_and_the_prelude_leaves_two_names():
    """The kernel runtime runs here as imported code, and the prelude that carries it into a
    grading kernel leaves the student's namespace holding ``_course_probe`` and
    ``_course_visible`` (a cell's visible checks, run after the probes) only."""
    from attention_course_instructor.grading import kernel_runtime
    from attention_course_instructor.grading.hardened.probes import prelude

    run_probe, dumps = kernel_runtime._course_runtime()

    def probe(answer, x, out):
        out["sum"], out["boom"] = answer.add(x, 1), answer.explode()

    namespace = {"add": lambda a, b: a + b, "explode": lambda: 1 / 0}
    record = run_probe(lambda seed: seed * 2, probe, namespace, 3)
    assert '"value": 7' in dumps(record) and '"name": "ZeroDivisionError"' in dumps(record)
    import torch

    patched = [(torch.Tensor, "to"), (torch.nn.Module, "to"), (torch.Tensor, "cuda"),
               (torch.nn.Module, "cuda"), (torch, "load")]        # the prelude's CPU-only patches
    saved = [getattr(owner, name) for owner, name in patched]
    names = {}
    try:
        exec(compile(prelude(load_lab(REPO / "source" / "lab8")), "prelude", "exec"), names)
    finally:
        for (owner, name), original in zip(patched, saved):
            setattr(owner, name, original)
    assert set(names) - {"__builtins__"} == {"_course_probe", "_course_visible"}
