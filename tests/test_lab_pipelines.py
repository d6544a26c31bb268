"""Lab 8 through the nbgrader pipeline: in sync, no leaks, the solution runs, hidden tests pass
silently (the grades of the solution, the release and their variants: test_grading_consistency)."""
from __future__ import annotations

import os
import subprocess
import sys

import jupytext
import pytest

from attention_course.grading import pipeline
from conftest import REPO, load_nb

SOURCE = REPO / "source" / "lab8"
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def lab8(graded_assignment):
    return graded_assignment(SOURCE, "lab8")


def test_text_pair_matches_notebook():
    """source/lab8/lab8.md (the reviewable twin) and lab8.ipynb hold the same cells."""
    text = jupytext.read(SOURCE / "lab8.md")
    nb = load_nb(SOURCE / "lab8.ipynb")
    strip = [(c.cell_type, c.source.strip(), c.metadata.get("nbgrader")) for c in text.cells]
    assert strip == [(c.cell_type, c.source.strip(), c.metadata.get("nbgrader")) for c in nb.cells], \
        "run `jupytext --sync source/lab8/lab8.md` after editing either file"


def test_release_and_solutions_are_in_sync(lab8):
    pipeline.assert_in_sync(lab8.release, REPO / "labs" / "lab8")
    pipeline.assert_in_sync(lab8.solutions, REPO / "solutions" / "lab8")


def test_nothing_leaks(lab8):
    source = load_nb(lab8.source_nb_path)
    pipeline.assert_no_leaks(source, load_nb(REPO / "labs" / "lab8" / "lab8.ipynb"))
    solutions = load_nb(REPO / "solutions" / "lab8" / "lab8.ipynb")
    pipeline.assert_no_leaks(source, solutions, allow_solutions=True)
    assert "BEGIN SOLUTION" not in "".join(c.source for c in solutions.cells)


def test_notebooks_are_nbformat_45_with_unique_ids():
    for path in (SOURCE / "lab8.ipynb", REPO / "labs/lab8/lab8.ipynb",
                 REPO / "solutions/lab8/lab8.ipynb"):
        nb = load_nb(path)
        assert (nb.nbformat, nb.nbformat_minor) >= (4, 5), path
        assert pipeline.cell_ids_unique(nb), path


def test_points_stated_match_metadata():
    nb = load_nb(SOURCE / "lab8.ipynb")
    auto = sum(c.metadata["nbgrader"]["points"] for c in nb.cells
               if c.metadata.get("nbgrader", {}).get("grade") and c.cell_type == "code")
    manual = sum(c.metadata["nbgrader"]["points"] for c in nb.cells
                 if c.metadata.get("nbgrader", {}).get("grade") and c.cell_type == "markdown")
    title = nb.cells[0].source
    assert f"autograded ({auto} points)" in title and f"by hand ({manual} points)" in title


def test_solution_notebook_runs_in_full(tmp_path):
    """The solution, executed as a student would (full training, no NBGRADER_EXECUTION)."""
    env = {k: v for k, v in os.environ.items() if k != "NBGRADER_EXECUTION"}
    out = tmp_path / "lab8-executed.ipynb"
    subprocess.run([sys.executable, "-m", "jupyter", "nbconvert", "--to", "notebook", "--execute",
                    "--ExecutePreprocessor.timeout=600", f"--output={out}",
                    str(REPO / "solutions" / "lab8" / "lab8.ipynb")],
                   check=True, env=env, cwd=tmp_path, capture_output=True)
    nb = load_nb(out)
    errors = [o for c in nb.cells for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert errors == []
    table = next(o["data"]["text/markdown"] for c in nb.cells for o in c.get("outputs", [])
                 if "text/markdown" in o.get("data", {}))
    assert "| 16 |" in table and "attention exact" in table


def test_hidden_tests_pass_without_the_grading_variable(tmp_path):
    """The instructor notebook's tests (hidden ones included) pass, silently, when
    NBGRADER_EXECUTION is not set -- the long training cells are left out, since no test uses them."""
    from nbclient import NotebookClient

    long_running = {"task5_train", "task5_compare", "task6_maps"}
    nb = load_nb(SOURCE / "lab8.ipynb")
    nb.cells = [c for c in nb.cells
                if c.metadata.get("nbgrader", {}).get("grade_id") not in long_running]
    saved = os.environ.pop("NBGRADER_EXECUTION", None)
    try:
        # run where an instructor runs it, in source/lab8 (the hidden tests read checks.py there)
        NotebookClient(nb, timeout=300, kernel_name="python3",
                       resources={"metadata": {"path": str(SOURCE)}}).execute()
    finally:
        if saved is not None:
            os.environ["NBGRADER_EXECUTION"] = saved
    graded = [c for c in nb.cells if c.cell_type == "code" and c.metadata["nbgrader"].get("grade")]
    assert len(graded) == 9
    for cell in graded:
        streams = [o for o in cell.outputs if o.get("output_type") == "stream" and o.get("name") == "stderr"]
        assert streams == [], (cell.metadata["nbgrader"]["grade_id"], streams)
        assert not any(o.get("output_type") == "execute_result" for o in cell.outputs), \
            "a test cell that evaluates to a value could be read as partial credit"
