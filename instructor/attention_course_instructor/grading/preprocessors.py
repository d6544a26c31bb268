"""nbgrader preprocessors of the course."""
from __future__ import annotations

import re

from nbgrader.api import MissingEntry
from nbgrader.preprocessors import NbGraderPreprocessor, OverwriteCells
from traitlets import Unicode

from attention_course_instructor.grading.notebook import grade_id, released_test_source

_MARKER = re.compile(r"^\s*#+\s*(BEGIN|END) SOLUTION\s*$")
# the lab's install cell names the student wheel it installs where its version is not installed,
# and the site it downloads it from
_COURSE_WHEEL = re.compile(r'(COURSE_WHEEL = "attention_course-)[^"-]+(-py3-none-any\.whl")')
_BOOK_WHEELS = re.compile(r'(BOOK_WHEELS = ")[^"]*(")')


class StampCourseVersion(NbGraderPreprocessor):
    """Name this course version's wheel in the lab's install cell (``COURSE_WHEEL = ...``), so a
    notebook released at one version keeps installing that version: the student edition serves
    every released wheel. The site it downloads them from (``BOOK_WHEELS = ...``) is the student
    site of the course's ``edition.yml``: the one in the nbgrader course folder (a course on the
    hub, ``deploy/hub/course.py``), else the repository's
    (:func:`~attention_course_instructor.book.build.site_url`). Runs first in
    ``generate_assignment`` and ``generate_solution``, before nbgrader records the cells'
    checksums."""

    def edition_settings(self) -> dict:
        from pathlib import Path

        import yaml

        from attention_course_instructor.book import build

        own = Path(str(self.config.CourseDirectory.get("root") or ".")) / "edition.yml"
        if own.is_file() and own.resolve() != build.SETTINGS.resolve():
            return yaml.safe_load(own.read_text()) or {}
        if not build.SETTINGS.is_file():
            raise FileNotFoundError(
                f"edition.yml is neither in the course folder ({own.parent.resolve()}) nor in the "
                f"repository ({build.SETTINGS.parent}): the release names the student site from "
                "it; copy the repository's edition.yml into the course folder")
        return build.settings()

    def preprocess_cell(self, cell, resources, index):
        from attention_course import __version__
        from attention_course_instructor.book.build import site_url

        if cell.cell_type == "code" and "COURSE_WHEEL" in cell.source:
            cell.source = _COURSE_WHEEL.sub(rf"\g<1>{__version__}\g<2>", cell.source)
            site = site_url(self.edition_settings())
            wheels = f"{site}_static/wheels/" if site else ""
            cell.source = _BOOK_WHEELS.sub(lambda m: m[1] + wheels + m[2], cell.source)
        return cell, resources


class DropTextTwin(NbGraderPreprocessor):
    """Drop the notebook's jupytext pairing (``metadata.jupytext``): the MyST twin is the
    instructor's, for review. Kept in a release, it made Jupyter (where jupytext is installed, as
    on the course hub) write a ``<lab>.md`` beside the student's notebook at every save, which was
    then submitted with it."""

    def preprocess(self, nb, resources):
        nb.metadata.pop("jupytext", None)
        return nb, resources


class DropRubrics(NbGraderPreprocessor):
    """Drop the written answers' rubrics (``metadata.rubric``, :mod:`..rubric`): they are the
    graders', read from the source notebook; no student gets them with the release."""

    def preprocess_cell(self, cell, resources, index):
        cell.metadata.pop("rubric", None)
        return cell, resources


class StripSolutionMarkers(NbGraderPreprocessor):
    """Remove the ``### BEGIN SOLUTION`` / ``### END SOLUTION`` lines, keeping the code between them
    (and ``BEGIN/END SOLUTION`` lines in markdown answer cells)."""

    marker = Unicode(_MARKER.pattern).tag(config=True)

    def preprocess_cell(self, cell, resources, index):
        pattern = re.compile(self.marker)
        if any(pattern.match(line) for line in cell.source.splitlines()):
            kept = [line for line in cell.source.splitlines() if not pattern.match(line)]
            cell.source = "\n".join(kept)
        return cell, resources


class ExposeLabChecks(NbGraderPreprocessor):
    """During ``nbgrader autograde``, tell the hidden tests where ``source/<lab>/`` is.

    The hidden-test block of a graded cell calls ``run_hidden_check``, which reads the lab's
    ``checks.py`` and reference from the folder named by ``COURSE_CHECKS_DIR``; the kernel
    inherits the variable from this process, as it inherits ``NBGRADER_EXECUTION``. The folder is
    the course's own ``source/<lab>``, never the student's submission folder. Unless
    ``COURSE_GRADING_SEED`` is set, the course's own seed (``.grading-seed``, which the hardened
    grader makes) is given too, so both graders check the same inputs.
    """

    def preprocess(self, nb, resources):
        import os

        from attention_course_instructor.grading.checks import CHECKS_DIR_VARIABLE, SEED_VARIABLE, course_seed

        coursedir = self.parent.parent.coursedir       # preprocessor -> exporter -> converter
        assignment = resources["nbgrader"]["assignment"]
        os.environ[CHECKS_DIR_VARIABLE] = coursedir.format_path(coursedir.source_directory, ".", assignment)
        seed = course_seed(coursedir.root)             # the course's own, as the hardened grader's
        if SEED_VARIABLE not in os.environ and seed is not None:
            os.environ[SEED_VARIABLE] = str(seed)
        return nb, resources


class QuietOverwriteCells(OverwriteCells):
    """nbgrader's OverwriteCells, without the false alarm on every test cell with hidden tests.

    The gradebook keeps each test cell as the instructor wrote it, hidden tests included, while the
    student received it with them removed, so nbgrader warns "checksum has changed" for every such
    cell of every submission, the untouched release included, and a real edit drowns. Here a test
    cell that matches its released form is restored silently; any other change is still reported
    (and the cell restored, as nbgrader does).
    """

    def preprocess_cell(self, cell, resources, index):
        self._as_released = False
        gid = grade_id(cell)
        if gid is not None:
            try:
                source = self.gradebook.find_source_cell(gid, self.notebook_id, self.assignment_id)
                self._as_released = cell.source.strip() == released_test_source(source.source).strip()
            except MissingEntry:
                pass
        return super().preprocess_cell(cell, resources, index)

    def report_change(self, name, attr, old, new):
        if attr == "checksum" and self._as_released:
            return
        super().report_change(name, attr, old, new)

