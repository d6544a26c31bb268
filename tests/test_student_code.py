"""A student's code parsed on the grader's side (:mod:`~attention_course_instructor.grading.student_code`).

CI once gave a student who killed their kernel a zero with ``grader error: SystemError: AST
constructor recursion depth mismatch`` instead of the zero for that task alone: on CPython 3.11 a
garbage collection that runs a parsing finaliser in the middle of :func:`ast.parse` breaks it.
The plant below makes that happen on purpose.
"""
from __future__ import annotations

import ast
import gc
import sys

import pytest

from attention_course_instructor.grading import similarity, student_code
from attention_course_instructor.grading.hardened.assemble import answer_imports

SOURCE = "\n".join(f"import mod{i}\ndef f{i}(x):\n    return [y * {i} for y in x if y]"
                   for i in range(1500))                       # a tree long enough to collect in


class _ParsesWhenCollected:
    def __del__(self):                      # as asyncio's leftover futures do, through traceback
        ast.parse("result = (1 + 2) * [a for a in b]")


def _parse_while_finalisers_parse(parse, rounds: int = 12) -> list[Exception]:
    """``parse(SOURCE)`` ``rounds`` times, each with cycles of parsing finalisers to collect."""
    errors, threshold = [], gc.get_threshold()
    gc.set_threshold(50)
    try:
        for _ in range(rounds):
            for _ in range(200):
                doomed = _ParsesWhenCollected()
                doomed.cycle = doomed                   # freed by the collector only
            del doomed
            try:
                parse(SOURCE)
            except SystemError as exc:
                errors.append(exc)
    finally:
        gc.set_threshold(*threshold)
        gc.collect()
    return errors


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="the plant is CPython 3.11's fault")
def test_the_plant_breaks_a_plain_parse():
    errors = _parse_while_finalisers_parse(ast.parse)
    assert errors and "recursion depth mismatch" in str(errors[0])


def test_a_collection_during_a_parse_cannot_break_the_graders_parse():
    assert _parse_while_finalisers_parse(student_code.parse) == []
    assert _parse_while_finalisers_parse(answer_imports) == []
    assert gc.isenabled()


@pytest.mark.parametrize("code", ["def f(:\n", "x = 1\0", "(" * 300 + ")" * 300,
                                  "-" * 100_000 + "1", "[" * 5000 + "]" * 5000])
def test_code_that_does_not_parse_is_none_and_leaves_the_collector_on(code):
    assert student_code.parse(code) is None
    assert answer_imports(code) == []
    assert similarity.normalised(code) == code
    assert gc.isenabled()


def test_a_paused_collector_stays_paused():
    gc.disable()
    try:
        assert isinstance(student_code.parse("import torch"), ast.Module)
        assert not gc.isenabled()
    finally:
        gc.enable()
    assert answer_imports("import torch.nn as nn\nfrom math import sqrt") == ["torch.nn", "math.sqrt"]
