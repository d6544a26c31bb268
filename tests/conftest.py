"""Shared fixtures: the nbgrader pipeline harness, usable by every lab's tests."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import nbformat
import pytest

from attention_course.grading import pipeline

REPO = pipeline.REPO


def load_nb(path) -> nbformat.NotebookNode:
    return nbformat.read(str(path), as_version=4)


class GradedAssignment:
    """One assignment taken through the pipeline in a temporary course.

    ``release`` and ``solutions`` are generated afresh from ``source/``; ``grade(notebook)``
    submits a notebook as a new student, autogrades and returns the gradebook scores.
    """

    def __init__(self, tmp: Path, source: Path, assignment: str):
        self.assignment = assignment
        self.source_nb_path = source / f"{assignment}.ipynb"
        self.course = pipeline.make_course(tmp, source, assignment)
        self.release, self.solutions = pipeline.generate(self.course, assignment)
        self.notebook = f"{assignment}.ipynb"

    def grade(self, submissions: dict[str, Path]) -> dict[str, dict[str, pipeline.CellScore]]:
        for student, nb in submissions.items():
            pipeline.submit(self.course, self.assignment, student, nb)
        pipeline.autograde(self.course, self.assignment)
        return {s: pipeline.scores(self.course, self.assignment, s) for s in submissions}


@pytest.fixture(scope="session")
def graded_assignment(tmp_path_factory):
    """Factory: ``graded_assignment(source_dir, name)`` -> GradedAssignment (cached per session)."""
    cache = {}

    def make(source: Path, assignment: str) -> GradedAssignment:
        key = (str(source), assignment)
        if key not in cache:
            cache[key] = GradedAssignment(tmp_path_factory.mktemp(assignment), Path(source),
                                          assignment)
        return cache[key]

    return make


@pytest.fixture
def no_grading_env(monkeypatch):
    monkeypatch.delenv("NBGRADER_EXECUTION", raising=False)


def require_tool(name: str) -> str:
    """Path of an executable; skip locally when missing, fail in CI (where set-up installs it)."""
    path = shutil.which(name)
    if path is None:
        if os.environ.get("CI"):
            pytest.fail(f"{name} is required in CI (make test installs it)")
        pytest.skip(f"{name} is not installed")
    return path


@pytest.fixture(scope="session")
def built_book():
    """The book built once per session, exactly as `make book` builds it (strict, cached)."""
    from attention_course.build import HTML, build_book

    index = build_book()
    assert index.exists()
    return HTML
