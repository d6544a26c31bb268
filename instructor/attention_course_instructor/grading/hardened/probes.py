"""Stage 2 of hardened grading: what runs in the kernel in place of each graded cell.

:func:`prelude` is the first cell of every grading kernel. It defines the functions of
:mod:`~attention_course_instructor.grading.kernel_runtime` and, inside a closure, the *kernel side*
of the lab's checks (every check's ``inputs`` and ``probe``, never its ``compare`` nor the
reference), and exposes ``_course_probe(grade_id, seed)``, which makes a check's inputs, calls the
student's functions and publishes the results as plain JSON under a private MIME type, and
``_course_visible`` (below). It also makes CUDA requests land on
the CPU when the grader has no GPU. Each graded cell is replaced by :func:`probe_cell`; the grader
reads the record back with :func:`probe_record` and judges it in its own process.

After every probe, each graded cell's **visible checks** (the asserts the released notebook gave the
student) run once more, as the student's notebook ran them, in cells of their own at the end
(:func:`visible_cell`): whether they pass is what the student saw, which the class report sets
beside the hidden checks' outcome. They run after the probes, so they cannot change a score; a
cell whose probe did not complete (a timeout, a dead kernel) does not have its visible checks run.
The grader keeps only whether they passed (:func:`visible_outcome`), never their messages, which
quote the student's values.
"""
from __future__ import annotations

import json

from attention_course_instructor.grading import kernel_runtime
from attention_course_instructor.grading.checks import Lab, kernel_source

MIME = "application/x-course-probe+json"
VISIBLE_NOT_RUN = "CourseVisibleChecksNotRun"      # the exception a visible cell raises when skipped


def prelude(lab: Lab) -> str:
    """The first cell of a grading kernel for ``lab``."""
    return "\n".join([kernel_runtime.runtime_source(),
                      f"_course_probe = _course_make_probe({kernel_source(lab)!r}, {MIME!r})",
                      f"_course_visible = _course_make_visible(_course_probe.completed, {VISIBLE_NOT_RUN!r})",
                      "_course_cpu_only()",
                      "del _course_runtime, _course_make_probe, _course_make_visible, _course_cpu_only"])


def probe_cell(grade_id: str, seed: int) -> str:
    return f"_course_probe({grade_id!r}, {int(seed)})"


def visible_cell(grade_id: str, released_source: str) -> str:
    """The cell that runs a graded cell's visible checks (its source as released)."""
    return f"_course_visible({grade_id!r}, {released_source!r})"


def visible_outcome(outcome) -> str:
    """What a visible cell's outcome says the student saw: ``passed``, ``failed`` (an assert or any
    error), ``not run`` (the cell's probe had not completed), or ``timeout``/``died``/``flood``."""
    if outcome.status == "ok":
        return "passed"
    if outcome.status == "error":
        return "not run" if outcome.error == VISIBLE_NOT_RUN else "failed"
    return outcome.status


def probe_record(outputs: list) -> tuple[dict | None, str]:
    """The one probe record of a probe cell's outputs, or None and why there is none."""
    records = [o for o in outputs if o.get("output_type") in ("display_data", "execute_result")
               and MIME in o.get("data", {})]
    if len(records) != 1:
        return None, "the check produced no answer" if not records else "the check's output was tampered with"
    try:
        data = records[0]["data"][MIME]
        record = json.loads(data) if isinstance(data, str) else dict(data)
    except (ValueError, TypeError):
        return None, "the check's output was unreadable"
    return (record, "") if isinstance(record, dict) else (None, "the check's output was unreadable")
