"""nbgrader preprocessors of the course."""
from __future__ import annotations

import re

from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Unicode

_MARKER = re.compile(r"^\s*#+\s*(BEGIN|END) SOLUTION\s*$")


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
    the course's own ``source/<lab>``, never the student's submission folder.
    """

    def preprocess(self, nb, resources):
        import os

        from attention_course.grading.checks import CHECKS_DIR_VARIABLE

        coursedir = self.parent.parent.coursedir       # preprocessor -> exporter -> converter
        assignment = resources["nbgrader"]["assignment"]
        os.environ[CHECKS_DIR_VARIABLE] = coursedir.format_path(coursedir.source_directory, ".", assignment)
        return nb, resources
