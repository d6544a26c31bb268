"""One model of an nbgrader notebook, for everything that grades, releases or records one.

- **Cell roles**, in nbgrader's own vocabulary (:mod:`nbgrader.utils`): :func:`is_grade`,
  :func:`is_solution`, :func:`is_locked`, and what the course derives from them:
  :func:`is_autograded_test` (a graded code cell that is not an answer) and :func:`is_manual`
  (a graded answer, scored by hand). They accept a student's cells too: metadata that is not
  nbgrader's shape (a string, a list) reads as no metadata.
- **Markers** (:data:`SOLUTION_BEGIN` ... :data:`MARKERS`): where an answer or a hidden test
  begins and ends; :func:`neutralise_markers` makes them inert in a student's text;
  :func:`cell_parts` sorts an instructor cell's lines by region (answer, hidden tests, the
  rest), :func:`marked_lines` a whole notebook's.
- **The released form of a test cell**: :func:`released_test_source`, by nbgrader's own
  ``ClearHiddenTests``, for every comparison with what the student received.
- **A submission matched to its source, once**: :func:`match_submission` pairs every source cell
  with the student's (by ``grade_id``, else by cell id) and places the code cells the student
  added, so that the notebook that runs and the notebook shown as graded are built from one
  :class:`Matching`.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from nbformat import NotebookNode
from nbgrader import utils as nbgrader_utils
from nbgrader.preprocessors import ClearHiddenTests

SOLUTION_BEGIN, SOLUTION_END = "### BEGIN SOLUTION", "### END SOLUTION"
HIDDEN_BEGIN, HIDDEN_END = "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"
# every marker nbgrader acts on: in a student's cell, one would make nbgrader's own steps
# (generate_feedback's ClearHiddenTests, say) fail or cut the cell
MARKERS = ("BEGIN HIDDEN TESTS", "END HIDDEN TESTS", "BEGIN SOLUTION", "END SOLUTION",
           "BEGIN MARK SCHEME", "END MARK SCHEME")


# ---- cell roles ---------------------------------------------------------------------------------

def nbgrader_meta(cell) -> dict:
    """A cell's nbgrader metadata, or ``{}`` when it has none of nbgrader's shape."""
    meta = (cell.get("metadata") or {}).get("nbgrader")
    return meta if isinstance(meta, dict) else {}


def _nbgrader_view(cell) -> NotebookNode:
    """The cell as nbgrader.utils reads it (attribute access, metadata of nbgrader's shape)."""
    return NotebookNode(metadata=NotebookNode(nbgrader=nbgrader_meta(cell)) if nbgrader_meta(cell)
                        else NotebookNode())


def is_grade(cell) -> bool:
    return bool(nbgrader_utils.is_grade(_nbgrader_view(cell)))


def is_solution(cell) -> bool:
    return bool(nbgrader_utils.is_solution(_nbgrader_view(cell)))


def is_locked(cell) -> bool:
    """nbgrader's locked: a read-only cell or a test cell (never an answer)."""
    return bool(nbgrader_utils.is_locked(_nbgrader_view(cell)))


def grade_id(cell) -> str | None:
    return nbgrader_meta(cell).get("grade_id")


def points(cell) -> float:
    return float(nbgrader_meta(cell).get("points", 0) or 0)


def is_autograded_test(cell) -> bool:
    """A graded code cell that is not an answer: its tests (hidden ones too) decide the points."""
    return cell.get("cell_type") == "code" and is_grade(cell) and not is_solution(cell)


def is_manual(cell) -> bool:
    """A graded cell scored by hand: a written answer, or a graded answer cell."""
    return is_grade(cell) and (cell.get("cell_type") != "code" or is_solution(cell))


def autograded_test_ids(nb) -> list[str]:
    """grade_ids of a notebook's autograded test cells, in order."""
    return [grade_id(c) for c in nb.cells if is_autograded_test(c)]


# ---- markers and the released form ------------------------------------------------------------------

def neutralise_markers(text: str) -> str:
    """A student's cell source with every nbgrader marker made inert (``BEGIN-HIDDEN-TESTS``)."""
    for marker in MARKERS:
        text = text.replace(marker, marker.replace(" ", "-"))
    return text


def released_test_source(source: str) -> str:
    """A test cell's source as ``generate_assignment`` releases it: the hidden tests removed."""
    cell = NotebookNode(cell_type="code", source=source, metadata={}, outputs=[], execution_count=None)
    ClearHiddenTests()._remove_hidden_test_region(cell)           # edits the cell in place
    return cell.source


@dataclass
class CellParts:
    """A cell's lines by region, marker lines left out: the instructor's ``answer`` (between
    solution markers, or the whole of a written answer: a markdown solution cell, which has no
    markers), the ``hidden`` tests, and every ``other`` line."""

    answer: list[str] = field(default_factory=list)
    hidden: list[str] = field(default_factory=list)
    other: list[str] = field(default_factory=list)


def cell_parts(cell) -> CellParts:
    """An instructor cell's lines sorted by region (:class:`CellParts`)."""
    parts = CellParts()
    whole = cell.cell_type == "markdown" and is_solution(cell)
    region = None
    for line in cell.source.splitlines():
        if SOLUTION_BEGIN in line or HIDDEN_BEGIN in line:
            region = parts.answer if SOLUTION_BEGIN in line else parts.hidden
        elif SOLUTION_END in line or HIDDEN_END in line:
            region = None
        else:
            (region if region is not None else parts.answer if whole else parts.other).append(line)
    return parts


def marked_lines(nb) -> tuple[list[str], list[str], set[str]]:
    """(answer lines, hidden-test lines, every other line) of an instructor notebook
    (:func:`cell_parts`), stripped, blank lines left out and comments left out of the first two."""
    solution, hidden, other = [], [], set()

    def said(lines):
        return [line for line in map(str.strip, lines) if line and not line.startswith("#")]

    for cell in nb.cells:
        parts = cell_parts(cell)
        solution += said(parts.answer)
        hidden += said(parts.hidden)
        other |= {line for line in map(str.strip, parts.other) if line}
    return solution, hidden, other


# ---- a submission matched to its source ---------------------------------------------------------------

@dataclass
class Matching:
    """The student's counterpart of every source cell, and the code cells they added.

    ``theirs[i]`` is the student's cell for ``source.cells[i]`` (None: missing). ``added[k]`` are
    the student's added code cells that run just before source cell ``k`` (``k`` may be the number
    of source cells: at the end), each with the grade_id of the answer it followed (``""``: none).
    """

    source: NotebookNode
    theirs: list
    added: dict = field(default_factory=dict)         # k -> [(anchor grade_id, cell), ...]
    duplicates: list = field(default_factory=list)    # grade_ids the submission holds twice

    @property
    def added_count(self) -> int:
        return sum(len(cells) for cells in self.added.values())

    def pairs(self):
        """(index, source cell, the student's cell or None), in source order."""
        return zip(range(len(self.source.cells)), self.source.cells, self.theirs)


def match_submission(source: NotebookNode, submitted: NotebookNode | None) -> Matching:
    """Pair each source cell with the student's: by ``grade_id`` (the first of duplicates wins),
    else by cell id. A code cell the student added (no nbgrader metadata, an unknown id, not blank)
    runs right after the answer cell it followed; one that followed anything else runs before the
    first answer or autograded test."""
    cells = submitted.cells if submitted is not None else []
    by_grade, by_id, duplicates = {}, {}, []
    for cell in cells:
        gid = grade_id(cell)
        if gid:
            if gid in by_grade:
                duplicates.append(gid)
            else:
                by_grade[gid] = cell
        if cell.get("id"):
            by_id.setdefault(cell["id"], cell)
    theirs = [by_grade.get(grade_id(c)) or by_id.get(c.get("id")) for c in source.cells]
    return Matching(source, theirs, _place_added(source, cells), duplicates)


def _place_added(source: NotebookNode, cells: list) -> dict:
    known_ids = {c.get("id") for c in source.cells} - {None}
    known_grades = {grade_id(c) for c in source.cells} - {None}
    gid_of_id = {c.get("id"): grade_id(c) for c in source.cells}
    answer_at = {}                                   # answer grade_id -> its source index
    for i, c in enumerate(source.cells):
        if c.cell_type == "code" and is_solution(c):
            answer_at.setdefault(grade_id(c), i)
    placed, leftover, anchor = {}, [], None
    for cell in cells:
        gid = grade_id(cell)
        if gid in known_grades or cell.get("id") in known_ids:
            anchor = gid or gid_of_id.get(cell.get("id"))
        elif cell.get("cell_type") == "code" and not nbgrader_meta(cell) and cell.source.strip():
            if anchor in answer_at:
                placed.setdefault(answer_at[anchor] + 1, []).append((anchor, cell))
            else:
                leftover.append(("", cell))
    if leftover:
        first = next((i for i, c in enumerate(source.cells) if c.cell_type == "code"
                      and (is_solution(c) or is_grade(c))), len(source.cells))
        placed[first] = leftover + placed.get(first, [])
    return placed
