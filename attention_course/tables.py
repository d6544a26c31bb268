"""Markdown tables, written one way everywhere: the labs' results tables, the concept index, the
grader's report and every benchmark's results."""
from __future__ import annotations

from typing import Iterable, Sequence


def markdown_row(cells: Sequence) -> str:
    """One row; a cell is shown as text, with ``|`` escaped and line breaks made spaces (a cell
    may hold anyone's text, a student's name say, and still not break the table)."""
    return "| " + " | ".join(str(c).replace("|", "\\|").replace("\n", " ") for c in cells) + " |"


RULES = {"-": "---", "l": ":---", "r": "---:", "c": ":---:"}


def markdown_table(header: Sequence, rows: Iterable[Sequence], align: str = "") -> str:
    """A Markdown table: the header row, the rule, one row per item of ``rows``. ``align``: a
    letter per column, ``l``, ``r``, ``c`` or ``-`` (the renderer's default, as for columns past
    the letters given)."""
    letters = align.ljust(len(header), "-")
    rule = "|" + "".join(RULES[letter] + "|" for letter in letters)
    return "\n".join([markdown_row(header), rule, *(markdown_row(row) for row in rows)])
