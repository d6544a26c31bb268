"""Stage 4 of hardened grading: each graded cell judged in the grader's own process.

The kernel's probe record of a cell goes to the lab's ``compare`` (:meth:`Lab.compare`), which
rebuilds the inputs from the grading seed and compares with the reference. Every failure is kept
as a message in the lab's words; the cell scores all or nothing. What the kernel itself reports
(an exception's name, a crash) is quoted only as Python's own exception names, and every message
is bounded (:func:`bounded`): at most ``MAX_REASONS`` of them per cell, ``MAX_REASON_CHARS`` each.

Beside the score, each autograded cell records what its visible checks (the asserts the student was
given) did when run on the same answers (``CellGrade.visible``; :mod:`~.probes`): the class report
sets what students saw beside what the hidden checks found. It never changes a score.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from attention_course_instructor.grading.checks import QUOTABLE_ERRORS, Lab
from attention_course_instructor.grading.notebook import grade_id, is_grade, is_manual, points
from attention_course_instructor.grading.hardened.probes import probe_record, visible_outcome


MAX_REASONS = 6                  # messages kept per cell
MAX_REASON_CHARS = 300           # characters kept per message


def bounded(reasons: list[str]) -> list[str]:
    """The messages a cell reports, bounded in number and length whatever the checks made."""
    kept = [str(r) if len(str(r)) <= MAX_REASON_CHARS else str(r)[:MAX_REASON_CHARS - 3] + "..."
            for r in reasons[:MAX_REASONS]]
    if len(reasons) > MAX_REASONS:
        kept.append(f"and {len(reasons) - MAX_REASONS} more")
    return kept


@dataclass
class CellGrade:
    grade_id: str
    points: float
    score: float | None                # None: graded by hand
    status: str                        # passed | failed | error | timeout | died | flood | manual | void
    reasons: list = field(default_factory=list)
    visible: str = ""                  # the visible checks: passed | failed | not run | timeout | died
                                       # | flood; "" where none ran (by hand, a void submission)

    @property
    def reason(self) -> str:
        return "; ".join(self.reasons)


@dataclass
class SubmissionGrade:
    student: str
    cells: list[CellGrade] = field(default_factory=list)
    flags: list[str] = field(default_factory=list)
    error: str = ""                    # why the whole submission got zero, if it did
    seconds: float = 0.0
    fault: str = ""                    # the grader's own failure: no score is recorded for it

    @property
    def score(self) -> float:
        return sum(c.score or 0 for c in self.cells)

    @property
    def max_score(self) -> float:
        return sum(c.points for c in self.cells)

    @property
    def auto_max(self) -> float:
        return sum(c.points for c in self.cells if c.score is not None)


ENDINGS = ("timeout", "died", "flood", "disk")      # a cell (or the submission) ended by a bound


def ending_reason(outcome) -> str:
    """Why a cell ended without an answer, naming the bound that ended it where it is known."""
    if outcome.status == "timeout":
        return "the cell ran past its time limit"
    if outcome.status == "died":
        return (f"the kernel died: {outcome.error}" if outcome.error
                else "the kernel died (an exit, a crash or the memory limit)")
    if outcome.status == "flood":
        return f"the submission sent more output than grading accepts ({outcome.error}): its grading stopped there"
    return f"the submission ran out of disk space ({outcome.error}): its grading stopped there"


def error_words(name: str) -> str:
    """An exception reported by the kernel, as it may be quoted back to the student."""
    return f"raised {name}" if name in QUOTABLE_ERRORS else "raised an exception"


def score_cells(source, roles, outcomes, lab: Lab, seed: int) -> list[CellGrade]:
    """One CellGrade per graded cell of the source, in notebook order."""
    broken = [f"{gid or 'an added cell'} {o.status}" + (f": {o.error}" if o.error and o.status != "timeout" else "")
              for (role, gid), o in zip(roles, outcomes)
              if role in ("solution", "run", "prelude", "extra") and o.status in ENDINGS]
    context = f" (earlier: {', '.join(broken)})" if broken else ""
    grades = []
    for cell in source.cells:
        if not is_grade(cell):
            continue
        gid, worth = grade_id(cell), points(cell)
        if is_manual(cell):
            grades.append(CellGrade(gid, worth, None, "manual", ["graded by hand"]))
            continue
        grades.append(_score_cell(gid, worth, outcomes[roles.index(("probe", gid))], lab, seed, context))
        if ("visible", gid) in roles:
            grades[-1].visible = visible_outcome(outcomes[roles.index(("visible", gid))])
    return grades


def _score_cell(gid: str, worth: float, outcome, lab: Lab, seed: int, context: str) -> CellGrade:
    """One autograded cell, from its probe's outcome (``context``: earlier cells a bound ended)."""
    if outcome.status in ENDINGS:
        return CellGrade(gid, worth, 0.0, outcome.status, [ending_reason(outcome) + context])
    if outcome.status == "error":
        return CellGrade(gid, worth, 0.0, "error",
                         [f"the check could not run: your code {error_words(outcome.error)}{context}"])
    record, why = probe_record(outcome.outputs)
    if record is None:
        return CellGrade(gid, worth, 0.0, "error", [why + context])
    try:
        failures = lab.compare(gid, record, seed)
    except Exception:                              # an answer the comparison did not foresee
        failures = ["the answer could not be checked (its structure is not what the task asks for)"]
    if failures and context:                       # a bound ended an earlier cell: say so
        failures = [*failures[:MAX_REASONS - 1], "an earlier cell ended early" + context]
    return CellGrade(gid, worth, 0.0 if failures else worth, "failed" if failures else "passed",
                     bounded(failures))


def zero_cells(source, reason: str) -> list[CellGrade]:
    return [CellGrade(grade_id(cell), points(cell), None if is_manual(cell) else 0.0,
                      "manual" if is_manual(cell) else "void", [reason])
            for cell in source.cells if is_grade(cell)]
