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
