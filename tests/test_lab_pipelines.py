"""Each lab through the nbgrader pipeline: in sync, no leaks, the solution runs, hidden tests pass
silently (the grades of the solution, the release and their variants: test_grading_consistency)."""
from __future__ import annotations

import os
import re
from dataclasses import dataclass

import jupytext
import nbformat
import pytest

import nbgrader_harness as harness
from attention_course_instructor.grading.notebook import autograded_test_ids, grade_id
from conftest import REPO, load_nb

pytestmark = pytest.mark.slow


@dataclass(frozen=True)
class LabFacts:
    graded_cells: int                 # autograded code cells
    autograded_points: int
    long_running: frozenset           # locked cells that train or measure (no test depends on them)
    full_run_shows: tuple             # strings a full run of the solution prints or displays
    skipped_when_grading: frozenset   # locked cells the autograder skips, saying so


LABS = {
    "lab8": LabFacts(9, 23, frozenset({"task5_train", "task5_compare", "task6_maps"}),
                     ("| 16 |", "attention exact"),
                     frozenset({"task5_train", "task5_compare", "task6_maps"})),
    "lab12": LabFacts(11, 27, frozenset({"ngram_fit", "train_model", "train_plot", "data_size",
                                         "generate_show", "generate_cost", "task6_maps", "task6_measure",
                                         "verdict", "mixture"}),
                      ("the model to beat", "bits per character", "the heads that matter most", "with it",
                       "characters: your model", "test split", "95% interval", "verdict: ",
                       "the mixture ("),
                      frozenset({"generate_show", "generate_cost", "task6_maps", "task6_measure",
                                 "verdict"})),
}


def source(lab):
    return REPO / "source" / lab


@pytest.fixture(scope="module", params=sorted(LABS))
def graded(request, graded_assignment):
    return request.param, graded_assignment(source(request.param), request.param)


@pytest.mark.parametrize("lab", sorted(LABS))
def test_text_pair_matches_notebook(lab):
    """source/<lab>/<lab>.md (the reviewable twin) and <lab>.ipynb hold the same cells."""
    text = jupytext.read(source(lab) / f"{lab}.md")
    nb = load_nb(source(lab) / f"{lab}.ipynb")
    strip = [(c.cell_type, c.source.strip(), c.metadata.get("nbgrader")) for c in text.cells]
    assert strip == [(c.cell_type, c.source.strip(), c.metadata.get("nbgrader")) for c in nb.cells], \
        f"run `jupytext --sync source/{lab}/{lab}.md` after editing either file"


def test_release_and_solutions_are_in_sync(graded):
    lab, assignment = graded
    harness.assert_in_sync(assignment.release, REPO / "labs" / lab)
    harness.assert_in_sync(assignment.solutions, REPO / "solutions" / lab)


def test_nothing_leaks(graded):
    lab, assignment = graded
    src = load_nb(assignment.source_nb_path)
    harness.assert_no_leaks(src, load_nb(REPO / "labs" / lab / f"{lab}.ipynb"))
    solutions = load_nb(REPO / "solutions" / lab / f"{lab}.ipynb")
    harness.assert_no_leaks(src, solutions, allow_solutions=True)
    assert "BEGIN SOLUTION" not in "".join(c.source for c in solutions.cells)


@pytest.mark.parametrize("lab", sorted(LABS))
def test_notebooks_are_nbformat_45_with_unique_ids(lab):
    for path in (source(lab) / f"{lab}.ipynb", REPO / f"labs/{lab}/{lab}.ipynb",
                 REPO / f"solutions/{lab}/{lab}.ipynb"):
        nb = load_nb(path)
        assert (nb.nbformat, nb.nbformat_minor) >= (4, 5), path
        assert harness.cell_ids_unique(nb), path


@pytest.mark.parametrize("lab", sorted(LABS))
def test_points_stated_match_metadata(lab):
    nb = load_nb(source(lab) / f"{lab}.ipynb")
    auto = sum(c.metadata["nbgrader"]["points"] for c in nb.cells
               if c.metadata.get("nbgrader", {}).get("grade") and c.cell_type == "code")
    manual = sum(c.metadata["nbgrader"]["points"] for c in nb.cells
                 if c.metadata.get("nbgrader", {}).get("grade") and c.cell_type == "markdown")
    title = nb.cells[0].source
    assert f"autograded ({auto} points)" in title and f"by hand ({manual} points)" in title
    for cell in nb.cells:                              # every task heading states its points
        if cell.cell_type == "markdown" and cell.source.startswith("## Task "):
            task = cell.source.split(":")[0].removeprefix("## Task ")
            points = sum(c.metadata["nbgrader"]["points"] for c in nb.cells
                         if c.metadata.get("nbgrader", {}).get("grade")
                         and re.match(rf"task{task}[a-z]?_", c.metadata["nbgrader"]["grade_id"]))
            assert f"({points} points" in cell.source.split("\n")[0], (lab, task, points)


# What the full run shortens: the training length only (every cell runs, on the full text, down the
# path a student's run takes). The full length is timed in benchmarks/results/lab8_timing.md and
# lab12.md (a complete run: 118 s and 377 s on a quiet machine; 250 s and 750 s in this suite's
# load); here it would be a quarter of the whole suite's time for no other check.
SHORTER_TRAINING = {
    "lab8": "LAB_TRAINING = {name: replace(config, steps=150) for name, config in LAB_TRAINING.items()}\n"
            "EVAL_COUNT = 40\n",
    "lab12": "TRAIN_STEPS, EVAL_EVERY = 60, 30   # two validation scores\n",
}


@pytest.mark.parametrize("lab", sorted(LABS))
def test_solution_notebook_runs_in_full(lab, tmp_path):
    """The solution, executed as a student would (no NBGRADER_EXECUTION: the full text, every
    training and measuring cell), with shorter training (SHORTER_TRAINING, set just after the
    setup cell; what it leaves out is timed by the benchmarks)."""
    from nbclient import NotebookClient

    nb = load_nb(REPO / "solutions" / lab / f"{lab}.ipynb")
    setup = next(i for i, c in enumerate(nb.cells) if "GRADING = " in c.source)
    nb.cells.insert(setup + 1, nbformat.v4.new_code_cell(SHORTER_TRAINING[lab], id="test-shorter"))
    saved = os.environ.pop("NBGRADER_EXECUTION", None)
    try:
        NotebookClient(nb, timeout=600, kernel_name="python3",
                       resources={"metadata": {"path": str(tmp_path)}}).execute()
    finally:
        if saved is not None:
            os.environ["NBGRADER_EXECUTION"] = saved
    errors = [o for c in nb.cells for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert errors == []
    shown = "".join(str(o.get("text", "")) + str(o.get("data", {}).get("text/markdown", ""))
                    + str(o.get("data", {}).get("text/plain", ""))
                    for c in nb.cells for o in c.get("outputs", []))
    for expected in LABS[lab].full_run_shows:
        assert expected in shown, expected


@pytest.mark.parametrize("lab", sorted(LABS))
def test_hidden_tests_pass_without_the_grading_variable(lab):
    """The instructor notebook's tests (hidden ones included) pass, silently, when
    NBGRADER_EXECUTION is not set -- the long training cells are left out, since no test uses them."""
    from nbclient import NotebookClient

    nb = load_nb(source(lab) / f"{lab}.ipynb")
    nb.cells = [c for c in nb.cells
                if c.metadata.get("nbgrader", {}).get("grade_id") not in LABS[lab].long_running]
    saved = os.environ.pop("NBGRADER_EXECUTION", None)
    try:
        # run where an instructor runs it, in source/<lab> (the hidden tests read checks.py there)
        NotebookClient(nb, timeout=300, kernel_name="python3",
                       resources={"metadata": {"path": str(source(lab))}}).execute()
    finally:
        if saved is not None:
            os.environ["NBGRADER_EXECUTION"] = saved
    graded = [c for c in nb.cells if c.cell_type == "code" and c.metadata["nbgrader"].get("grade")]
    assert len(graded) == LABS[lab].graded_cells
    for cell in graded:
        streams = [o for o in cell.outputs if o.get("output_type") == "stream" and o.get("name") == "stderr"]
        assert streams == [], (cell.metadata["nbgrader"]["grade_id"], streams)
        assert not any(o.get("output_type") == "execute_result" for o in cell.outputs), \
            "a test cell that evaluates to a value could be read as partial credit"


@pytest.fixture(scope="module")
def autograded(graded):
    """The solution and the untouched release through stock `nbgrader autograde` with the
    course's configuration: (lab, the assignment, their scores)."""
    lab, assignment = graded
    scores = assignment.grade({"solution": REPO / "solutions" / lab / f"{lab}.ipynb",
                               "untouched": REPO / "labs" / lab / f"{lab}.ipynb"})
    return lab, assignment, scores


def test_nbgrader_gives_the_solution_full_marks_and_the_release_zero(autograded):
    """The solution gets every autograded point, the untouched release none."""
    lab, _, scores = autograded
    auto = set(autograded_test_ids(load_nb(source(lab) / f"{lab}.ipynb")))
    solution, untouched = ({c: s for c, s in scores[who].items() if c in auto}
                           for who in ("solution", "untouched"))
    assert set(solution) == auto and sum(s.max_score for s in solution.values()) == \
        LABS[lab].autograded_points
    assert sum(s.score for s in solution.values()) == LABS[lab].autograded_points
    assert sum(s.score for s in untouched.values()) == 0


def test_the_autograder_skips_what_an_untrained_model_would_draw_and_says_so(autograded):
    """Under `nbgrader autograde` (NBGRADER_EXECUTION set) the cells that would train, time, draw
    or judge a barely trained model print that they are skipped instead: the solution's
    autograded notebook."""
    lab, assignment, _ = autograded
    path = assignment.course.root / "autograded" / "solution" / lab / f"{lab}.ipynb"
    said = {grade_id(c): "".join(o.get("text", "") for o in c.get("outputs", []))
            for c in load_nb(path).cells if c.cell_type == "code" and grade_id(c)}
    assert {g: said.get(g, "")[:80] for g in LABS[lab].skipped_when_grading
            if "skipped by the autograder" not in said.get(g, "").lower()} == {}
