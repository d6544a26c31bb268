"""Parsing a student's code on the grader's side: :func:`parse` never raises on what a student
wrote, and is safe from CPython 3.11's shared AST-conversion state.

In 3.11 a garbage collection that starts while :func:`ast.parse` builds its tree can run a
finaliser that parses too (an asyncio future left over from a kernel the student killed logs its
error, and the traceback module parses the failing line); the outer parse then fails with
``SystemError: AST constructor recursion depth mismatch`` (CPython issue 106905 and its kin).
A grader must never turn that into a student's zero, so the collector is paused while a tree is
built.
"""
from __future__ import annotations

import ast
import gc

UNPARSABLE = (SyntaxError, ValueError, RecursionError, MemoryError)   # null bytes, deep nesting


def parse(code: str) -> ast.Module | None:
    """The syntax tree of ``code``, or None when it does not parse (it fails when run)."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        return ast.parse(code)
    except UNPARSABLE:
        return None
    finally:
        if collecting:
            gc.enable()
