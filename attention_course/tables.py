"""Markdown tables, written one way everywhere: the labs' results tables, the concept index, the
grader's report and every benchmark's results."""
from __future__ import annotations

from typing import Iterable, Sequence


def markdown_row(cells: Sequence) -> str:
    """One row; a cell is shown as text, with ``|`` escaped and line breaks made spaces (a cell
    may hold anyone's text, a student's name say, and still not break the table)."""
    return "| " + " | ".join(str(c).replace("|", "\\|").replace("\n", " ") for c in cells) + " |"


def markdown_table(header: Sequence, rows: Iterable[Sequence]) -> str:
    """A Markdown table: the header row, the rule, one row per item of ``rows``."""
    return "\n".join([markdown_row(header), "|" + "---|" * len(header),
                      *(markdown_row(row) for row in rows)])
