"""Hardened autograding: every submission graded on the instructor's checks, in a sandbox.

The stages, one module each (see the instructor guide in the book for the threat model):

1. :mod:`~.assemble` -- **rebuild** the notebook that runs from the instructor's source: only the
   student's answer cells come from the submission; tests, locked cells and points from the source.
2. :mod:`~.probes` -- **probe**: each autograded cell is replaced by a call that runs the kernel
   side of the lab's checks (``source/<lab>/checks.py``: inputs and calls, never comparisons or
   references) and emits plain data. The kernel never sees ``NBGRADER_EXECUTION``.
3. :mod:`~.kernel` and :mod:`~.sandbox` -- **run** the cells in a kernel that sees nothing but the
   interpreter, the package and its own folder, as an unprivileged user in its own namespaces,
   with time and memory limits, surviving exits, crashes and loops.
4. :mod:`~.score` -- **check** each probe's data in the grader's own process against the reference
   (the source notebook's solutions), on inputs rebuilt from the grading seed.
5. :mod:`~.record` -- **record**: only the parent process writes the gradebook, feedback, report.

:mod:`~.run` says what is graded (:class:`GradingRun`); :mod:`~.grade` grades one submission
through the stages, or a batch. Where submissions are graded: :mod:`~.executors` (worker processes of this machine) or
:mod:`~.dask_workers` (tasks of a Dask cluster, ``--scheduler``); :mod:`~.cli` is the command.

    python -m attention_course_instructor.grading.hardened lab8 --jobs 2          # or: make grade
"""
from __future__ import annotations

from attention_course_instructor.grading.hardened.grade import find_submissions, grade_batch, grade_submission
from attention_course_instructor.grading.hardened.kernel import Limits
from attention_course_instructor.grading.hardened.run import GradingRun
from attention_course_instructor.grading.hardened.score import CellGrade, SubmissionGrade

__all__ = ["GradingRun", "Limits", "CellGrade", "SubmissionGrade", "grade_submission", "grade_batch",
           "find_submissions"]
