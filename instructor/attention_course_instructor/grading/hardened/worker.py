"""A grading worker: reads jobs as JSON lines on stdin, answers each with one JSON line.

Started by :class:`~attention_course_instructor.grading.hardened.executors.LocalWorkers`; it grades with
:func:`~attention_course_instructor.grading.hardened.grade_submission`. Anything else printed on the way
goes to stderr, so that the answer channel carries results only.
"""
from __future__ import annotations

import json
import os
import sys
from dataclasses import asdict
from pathlib import Path


def main() -> None:
    answers = os.fdopen(os.dup(sys.stdout.fileno()), "w")
    sys.stdout = sys.stderr                       # stray prints must not corrupt the answers
    from attention_course_instructor.grading.hardened import grade_submission
    from attention_course_instructor.grading.hardened.executors import run_from_dict

    for line in sys.stdin:
        job = json.loads(line)
        result = grade_submission(run_from_dict(job["run"]), job["student"], Path(job["path"]))
        answers.write(json.dumps(asdict(result)) + "\n")
        answers.flush()


if __name__ == "__main__":
    main()
