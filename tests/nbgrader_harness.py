"""A throw-away nbgrader course for the tests and the benchmarks: release, solutions, autograde,
gradebook scores, and the checks that a release is in step with ``source/`` and holds no answer.

Each step runs the real ``nbgrader`` command (:func:`~attention_course_instructor.grading.
nbgrader_cli.run_nbgrader`) on a *temporary* course directory that uses the course's
``nbgrader_config.py``, so the repository is never written to, and scores are read from the
gradebook API -- not from ``nbgrader validate``, which exits 0 even when tests fail. Not part of
any package: graders use the hardened grader, and ``make release`` runs nbgrader itself.

Generating a lab (two nbgrader runs) gives the same release, solutions and gradebook for the same
source, so a test run generates each source once: when ``$COURSE_TEST_SHARED`` names a folder
(the test suite's, shared by its pytest-xdist workers: ``tests/conftest.py``), the first
:func:`generate` of a source into a new course runs nbgrader and keeps what it wrote there, under a
file lock, and later ones copy it. Benchmarks and scripts, without the variable, always run nbgrader.
"""
from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import nbformat

from attention_course_instructor import paths
from attention_course_instructor.grading.nbgrader_cli import NbgraderError, run_nbgrader
from attention_course_instructor.grading.notebook import (HIDDEN_BEGIN, HIDDEN_END, SOLUTION_BEGIN,
                                                          SOLUTION_END, marked_lines)

REPO = paths.REPO
SHARED_VARIABLE = "COURSE_TEST_SHARED"     # a folder shared by every worker of one test run
GENERATED = ("labs", "solutions")            # what generate writes per assignment, beside the gradebook
__all__ = ["NbgraderError", "PipelineError", "TempCourse", "make_course", "generate", "submit",
           "autograde", "scores", "assert_in_sync", "assert_no_leaks"]


class PipelineError(AssertionError):
    """A pipeline check failed (a stale release, a leaked solution or hidden test)."""


@dataclass
class TempCourse:
    """A throw-away nbgrader course directory."""

    root: Path

    @property
    def db(self) -> Path:
        return self.root / "gradebook.db"

    def nbgrader(self, *args: str, timeout: float = 1800, env: dict | None = None) -> subprocess.CompletedProcess:
        """Run ``nbgrader ARGS`` in this course with the course's configuration (``env``: extra
        environment variables, e.g. the grading seed)."""
        return run_nbgrader(self.root, *args, timeout=timeout, env=env)


def make_course(tmp: Path, source: Path, assignment: str) -> TempCourse:
    """A course in ``tmp`` whose ``source/<assignment>`` is a copy of ``source``: the notebooks and
    the lab's checks file (not the MyST twins)."""
    target = Path(tmp) / "source" / assignment
    target.mkdir(parents=True, exist_ok=True)
    for path in [*Path(source).glob("*.ipynb"), *Path(source).glob("checks.py")]:
        shutil.copy2(path, target / path.name)
    return TempCourse(Path(tmp))


def generate(course: TempCourse, assignment: str) -> tuple[Path, Path]:
    """Generate the student release and the solutions; return their folders. Into a new course
    (no gradebook yet) of a source this test run has generated before, a copy of that generation
    (see the module's note)."""
    shared = os.environ.get(SHARED_VARIABLE)
    if not shared or course.db.exists():
        _run_generate(course, assignment)
    else:
        kept = Path(shared) / "generated" / f"{assignment}-{_generation_key(course, assignment)}"
        with _locked(kept.with_name(kept.name + ".lock")):
            if (kept / "gradebook.db").exists():
                _copy_generation(kept, course.root, assignment)
            else:
                _run_generate(course, assignment)
                _copy_generation(course.root, kept, assignment)
    return course.root / "labs" / assignment, course.root / "solutions" / assignment


def _run_generate(course: TempCourse, assignment: str) -> None:
    course.nbgrader("generate_assignment", assignment, "--force")
    course.nbgrader("generate_solution", assignment, "--force")


def _generation_key(course: TempCourse, assignment: str) -> str:
    """What a generation depends on: the assignment's source files and the course's nbgrader
    settings (the repository's, and the course folder's own if it has one)."""
    digest = hashlib.sha256()
    inputs = sorted((course.root / "source" / assignment).rglob("*")) + \
        [REPO / "nbgrader_config.py", course.root / "nbgrader_config.py"]
    for path in inputs:
        if path.is_file():
            digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def _copy_generation(source: Path, target: Path, assignment: str) -> None:
    """Copy one assignment's release, solutions and the gradebook from one course folder to another
    (the gradebook last: it marks a kept generation complete)."""
    for folder in GENERATED:
        shutil.copytree(source / folder / assignment, target / folder / assignment, dirs_exist_ok=True)
    shutil.copy2(source / "gradebook.db", target / "gradebook.db.part")
    os.replace(target / "gradebook.db.part", target / "gradebook.db")


@contextlib.contextmanager
def _locked(path: Path):
    """An exclusive lock on ``path`` across processes (the xdist workers)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _comparable(nb) -> list[tuple]:
    """The parts of a notebook that matter to a student: cell type, source, nbgrader metadata."""
    return [(c.cell_type, c.source, json.dumps(c.metadata.get("nbgrader", {}), sort_keys=True))
            for c in nb.cells]


def assert_in_sync(generated: Path, committed: Path) -> None:
    """Fail if the committed notebooks differ from freshly generated ones (a stale release)."""
    names = sorted(p.name for p in Path(generated).glob("*.ipynb"))
    committed_names = sorted(p.name for p in Path(committed).glob("*.ipynb"))
    if names != committed_names:
        raise PipelineError(f"{committed} holds {committed_names}, the source generates {names}")
    for name in names:
        fresh, old = (nbformat.read(Path(d) / name, as_version=4) for d in (generated, committed))
        a, b = _comparable(fresh), _comparable(old)
        if a != b:
            diff = next(i for i, (x, y) in enumerate(zip(a + [None], b + [None])) if x != y)
            raise PipelineError(f"{committed / name} is stale: cell {diff} differs from what "
                                f"source/ generates; regenerate it (make release)")


def solution_lines(source_nb) -> list[str]:
    """Non-blank, non-comment lines the instructor wrote as solutions."""
    return marked_lines(source_nb)[0]


def hidden_test_lines(source_nb) -> list[str]:
    """Non-blank, non-comment lines between hidden-test markers."""
    return marked_lines(source_nb)[1]


def assert_no_leaks(source_nb, released_nb, *, allow_solutions: bool = False) -> None:
    """Fail if a generated notebook holds hidden tests, markers, or (unless allowed) solutions.

    A marked line counts as leaked only if it appears in the generated notebook and nowhere
    outside the marked regions of the source (shared lines such as ``return out`` are ignored).
    Solution lines shorter than 13 characters are not checked.
    """
    solution, hidden, other = marked_lines(source_nb)
    released = "\n".join(c.source for c in released_nb.cells)
    released_lines = {line.strip() for line in released.splitlines()}
    markers = [m for m in (HIDDEN_BEGIN, HIDDEN_END) if m in released]
    if not allow_solutions:
        markers += [m for m in (SOLUTION_BEGIN, SOLUTION_END) if m in released]
    if markers:
        raise PipelineError(f"release contains nbgrader markers {markers}")
    leaked = [line for line in hidden if line in released_lines and line not in other]
    if leaked:
        raise PipelineError(f"release contains hidden-test lines, e.g. {leaked[:3]}")
    if not allow_solutions:
        leaked = [line for line in solution
                  if line in released_lines and line not in other and len(line) > 12]
        if leaked:
            raise PipelineError(f"release contains solution lines, e.g. {leaked[:3]}")


def submit(course: TempCourse, assignment: str, student: str, notebook: Path) -> Path:
    """Place ``notebook`` as ``student``'s submission of ``assignment``."""
    target = course.root / "submitted" / student / assignment
    target.mkdir(parents=True, exist_ok=True)
    shutil.copy2(notebook, target / Path(notebook).name)
    return target


def autograde(course: TempCourse, assignment: str, seed: int | None = None) -> str:
    """``nbgrader autograde`` of every submission (``seed``: the checks' grading seed); returns
    nbgrader's log."""
    env = {} if seed is None else {"COURSE_GRADING_SEED": str(seed)}
    done = course.nbgrader("autograde", assignment, "--force", env=env)
    return done.stdout + done.stderr


def warnings_by_student(log: str, assignment: str) -> dict[str, list[str]]:
    """nbgrader autograde's WARNING lines, grouped by the submission being graded."""
    out, student = {}, None
    for line in log.splitlines():
        if "Sanitizing " in line and "/submitted/" in line:
            student = line.split("/submitted/")[1].split("/")[0]
            out.setdefault(student, [])
        elif "WARNING" in line and student is not None:
            out[student].append(line)
    return out


@dataclass
class CellScore:
    cell: str
    score: float
    max_score: float


def scores(course: TempCourse, assignment: str, student: str) -> dict[str, CellScore]:
    """Autograded scores of every graded cell of a student's submission, from the gradebook."""
    from nbgrader.api import Gradebook

    out = {}
    with Gradebook(f"sqlite:///{course.db}") as gb:
        submission = gb.find_submission(assignment, student)
        for notebook in submission.notebooks:
            for grade in notebook.grades:
                out[grade.name] = CellScore(grade.name, grade.score, grade.max_score)
    return out


def cell_ids_unique(nb) -> bool:
    ids = [c.get("id") for c in nb.cells]
    return None not in ids and len(set(ids)) == len(ids)
