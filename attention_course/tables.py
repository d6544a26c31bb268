"""Markdown tables, written one way everywhere: the labs' results tables, the concept index, the
grader's report and every benchmark's results."""
from __future__ import annotations

import unicodedata
from typing import Iterable, Sequence


def visible(text) -> str:
    """``text`` with every character that is not shown as itself -- controls, and the invisible
    format characters such as the right-to-left override U+202E, which reorders what follows it
    on the screen -- written as its escape (``\\u202e``), so that a name cannot disguise a row."""
    return "".join(f"\\u{ord(ch):04x}" if unicodedata.category(ch) in HIDDEN else ch for ch in str(text))


HIDDEN = {"Cc", "Cf", "Co", "Cs", "Cn", "Zl", "Zp"}      # Unicode categories shown escaped


def markdown_row(cells: Sequence) -> str:
    """One row; a cell is shown as text, with line breaks made spaces, ``|`` escaped and hidden
    characters made visible (a cell may hold anyone's text, a student's name say, and still not
    break or disguise the table)."""
    return "| " + " | ".join(visible(str(c).replace("\n", " ")).replace("|", "\\|") for c in cells) + " |"


RULES = {"-": "---", "l": ":---", "r": "---:", "c": ":---:"}


def markdown_table(header: Sequence, rows: Iterable[Sequence], align: str = "") -> str:
    """A Markdown table: the header row, the rule, one row per item of ``rows``. ``align``: a
    letter per column, ``l``, ``r``, ``c`` or ``-`` (the renderer's default, as for columns past
    the letters given)."""
    letters = align.ljust(len(header), "-")
    rule = "|" + "".join(RULES[letter] + "|" for letter in letters)
    return "\n".join([markdown_row(header), rule, *(markdown_row(row) for row in rows)])
