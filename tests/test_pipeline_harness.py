"""The nbgrader harness, proven on a small fixture assignment (not a user-facing lab)."""
from __future__ import annotations

import shutil

import nbformat
import pytest

import nbgrader_harness as harness
from attention_course_instructor.grading.notebook import autograded_test_ids
from conftest import REPO, load_nb

FIXTURE = REPO / "tests" / "fixtures" / "course"
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def fixture_lab(graded_assignment):
    return graded_assignment(FIXTURE / "source" / "fixture", "fixture")


def test_committed_release_is_in_sync(fixture_lab):
    harness.assert_in_sync(fixture_lab.release, FIXTURE / "labs" / "fixture")


def test_stale_release_is_detected(fixture_lab, tmp_path):
    stale = tmp_path / "fixture"
    shutil.copytree(fixture_lab.release, stale)
    nb = load_nb(stale / "fixture.ipynb")
    nb.cells[2].source += "\n# an edit made to source/ after the release was generated"
    nbformat.write(nb, stale / "fixture.ipynb")
    with pytest.raises(harness.PipelineError, match="stale"):
        harness.assert_in_sync(fixture_lab.release, stale)


def test_release_and_solutions_leak_nothing(fixture_lab):
    source = load_nb(fixture_lab.source_nb_path)
    harness.assert_no_leaks(source, load_nb(fixture_lab.release / "fixture.ipynb"))
    solutions = load_nb(fixture_lab.solutions / "fixture.ipynb")
    harness.assert_no_leaks(source, solutions, allow_solutions=True)
    text = "\n".join(c.source for c in solutions.cells)
    assert "BEGIN SOLUTION" not in text and "shifted / shifted.sum()" in text


@pytest.mark.parametrize("leak", ["hidden", "solution"])
def test_leaks_are_detected(fixture_lab, leak):
    source = load_nb(fixture_lab.source_nb_path)
    release = load_nb(fixture_lab.release / "fixture.ipynb")
    if leak == "hidden":
        release.cells[3].source = source.cells[3].source.replace("### BEGIN HIDDEN TESTS\n", "") \
            .replace("### END HIDDEN TESTS", "")
    else:
        release.cells[2].source = source.cells[2].source.replace("    ### BEGIN SOLUTION\n", "") \
            .replace("    ### END SOLUTION", "")
    with pytest.raises(harness.PipelineError, match=leak):
        harness.assert_no_leaks(source, release)


def test_notebooks_are_nbformat_45_with_unique_ids(fixture_lab):
    for path in (fixture_lab.source_nb_path, fixture_lab.release / "fixture.ipynb",
                 fixture_lab.solutions / "fixture.ipynb"):
        nb = load_nb(path)
        assert (nb.nbformat, nb.nbformat_minor) >= (4, 5), path
        assert harness.cell_ids_unique(nb), path


def test_solution_full_marks_and_release_zero(fixture_lab):
    result = fixture_lab.grade({"solution": fixture_lab.solutions / "fixture.ipynb",
                                "untouched": fixture_lab.release / "fixture.ipynb"})
    auto = autograded_test_ids(load_nb(fixture_lab.source_nb_path))
    assert auto == ["test_softmax"]
    for cell in auto:
        assert result["solution"][cell].score == result["solution"][cell].max_score == 2
        assert result["untouched"][cell].score == 0


def test_a_generation_is_shared_only_with_the_same_source(tmp_path, monkeypatch):
    """Within a test run a source is generated once and copied into later new courses (the
    suite's shortcut, nbgrader_harness.generate); a course whose source differs is generated anew."""
    monkeypatch.setenv(harness.SHARED_VARIABLE, str(tmp_path / "shared"))
    first = harness.make_course(tmp_path / "first", FIXTURE / "source" / "fixture", "fixture")
    release, solutions = harness.generate(first, "fixture")
    copied = harness.make_course(tmp_path / "copied", FIXTURE / "source" / "fixture", "fixture")
    copy_release, copy_solutions = harness.generate(copied, "fixture")
    harness.assert_in_sync(copy_release, release)
    harness.assert_in_sync(copy_solutions, solutions)
    copied.nbgrader("db", "student", "add", "ada")           # the copied gradebook is nbgrader's own
    edited = harness.make_course(tmp_path / "edited", FIXTURE / "source" / "fixture", "fixture")
    path = edited.root / "source" / "fixture" / "fixture.ipynb"
    nb = load_nb(path)
    cell = next(c for c in nb.cells if "shifted / shifted.sum()" in c.source)
    cell.source = cell.source.replace("shifted / shifted.sum()", "shifted / np.sum(shifted)")
    nbformat.write(nb, path)
    _, edited_solutions = harness.generate(edited, "fixture")
    assert "np.sum(shifted)" in (edited_solutions / "fixture.ipynb").read_text()
    assert "np.sum(shifted)" not in (solutions / "fixture.ipynb").read_text()
    assert len(list((tmp_path / "shared" / "generated").glob("fixture-*.lock"))) == 2
