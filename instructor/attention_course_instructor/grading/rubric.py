"""Rubrics for the written answers: defined once per question, in the source notebook.

A manually graded cell of ``source/<lab>/<lab>.ipynb`` carries its rubric in its metadata, beside
nbgrader's (the MyST twin's ``+++ {"nbgrader": {...}, "rubric": {...}}`` line)::

    "rubric": {"grading": "positive",
               "items": [{"id": "numbers", "points": 1, "comment": "Quotes your own table."}, ...]}

- ``grading: positive``: the score is the sum of the items applied, at most the cell's points;
- ``grading: negative``: the score starts at the cell's points and each item applied takes its
  (negative) points off, never below zero.

An item's comment is the reusable text the student reads in their feedback. Rubrics are the
instructor's: the release and the solutions drop them (``preprocessors.DropRubrics``). The grading
page (:mod:`~attention_course_instructor.grading.by_question`) applies them.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from nbgrader import utils as nbgrader_utils

from attention_course_instructor.grading.notebook import points

MODES = ("positive", "negative")
ITEM_ID = re.compile(r"^[a-z0-9][a-z0-9_-]{0,39}$")


class RubricError(ValueError):
    """A rubric in a source notebook that cannot be applied, and why."""


@dataclass(frozen=True)
class RubricItem:
    id: str
    points: float
    comment: str


@dataclass(frozen=True)
class Rubric:
    grade_id: str
    max_points: float
    grading: str                      # "positive" | "negative"
    items: tuple[RubricItem, ...]

    def item(self, item_id: str) -> RubricItem:
        for item in self.items:
            if item.id == item_id:
                return item
        raise RubricError(f"{self.grade_id}: no rubric item {item_id!r}; it has "
                          f"{', '.join(i.id for i in self.items)}")

    def score(self, chosen: list[str] | tuple[str, ...]) -> float:
        """The cell's score with the items ``chosen`` applied (each at most once)."""
        points = sum(self.item(i).points for i in dict.fromkeys(chosen))
        if self.grading == "positive":
            return round(min(self.max_points, max(0.0, points)), 4)
        return round(max(0.0, self.max_points + points), 4)

    def comment(self, chosen: list[str] | tuple[str, ...], note: str = "") -> str:
        """What the student reads: each item applied with its points, then the grader's note."""
        lines = [f"- {self.item(i).comment} ({self.item(i).points:+g})" for i in dict.fromkeys(chosen)]
        if note.strip():
            lines.append(note.strip())
        return "\n".join(lines)


def rubric_of(cell) -> Rubric | None:
    """The rubric of one cell, checked; ``None`` where the cell has none."""
    spec = cell.metadata.get("rubric")
    if spec is None:
        return None
    grade_id = cell.metadata.get("nbgrader", {}).get("grade_id", "?")
    where = f"the rubric of {grade_id}"
    if not (nbgrader_utils.is_grade(cell) and nbgrader_utils.is_solution(cell)):
        raise RubricError(f"{where}: only a cell graded by hand (grade and solution) has a rubric")
    max_points = points(cell)
    if not isinstance(spec, dict) or spec.get("grading") not in MODES:
        raise RubricError(f"{where}: expected {{'grading': 'positive' | 'negative', 'items': [...]}}")
    items, seen = [], set()
    for raw in spec.get("items") or []:
        try:
            item = RubricItem(str(raw["id"]), float(raw["points"]), str(raw["comment"]).strip())
        except (KeyError, TypeError, ValueError):
            raise RubricError(f"{where}: each item is {{'id', 'points', 'comment'}}, not {raw!r}") from None
        if not ITEM_ID.match(item.id) or item.id in seen:
            raise RubricError(f"{where}: item ids are unique, lower case, up to 40 characters: {item.id!r}")
        positive = spec["grading"] == "positive"
        if (item.points <= 0 if positive else item.points >= 0) or abs(item.points) > max_points:
            sign = "above 0" if positive else "below 0"
            raise RubricError(f"{where}: {item.id} gives {item.points:g} points; {spec['grading']} "
                              f"grading expects {sign}, at most {max_points:g} in size")
        if not item.comment:
            raise RubricError(f"{where}: {item.id} has no comment for the student")
        seen.add(item.id)
        items.append(item)
    if not items:
        raise RubricError(f"{where}: no items")
    return Rubric(grade_id, max_points, spec["grading"], tuple(items))


def rubrics(nb) -> dict[str, Rubric]:
    """grade_id -> rubric, for every cell of the notebook that has one."""
    found = {}
    for cell in nb.cells:
        rubric = rubric_of(cell)
        if rubric is not None:
            found[rubric.grade_id] = rubric
    return found
