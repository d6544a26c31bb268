"""A grading worker: reads jobs as JSON lines on stdin, answers each with one JSON line.

Started by :class:`~attention_course_instructor.grading.hardened.executors.LocalWorkers`; it grades with
:func:`~attention_course_instructor.grading.hardened.grade.grade_submission`. Anything else printed on the way
goes to stderr, so that the answer channel carries results only. Its own address space is bounded
(``COURSE_WORKER_MEMORY_MB``, default 8192): the grader keeps little of what a kernel sends
(:class:`~attention_course_instructor.grading.hardened.kernel.Caps`), and should that ever fail,
the worker dies alone and its submission is graded again, then zeroed with the reason.

Its torch runs on one thread (``WORKER_THREADS``), as a Dask worker's does (Dask's nanny sets
``OMP_NUM_THREADS=1``): the comparisons are small, and with torch's default of a thread per core
the idle threads of its pool spin between them, on the cores the kernels need. Two workers grading
eight copies of the Lab 8 solution on 2 cores, twice each way: 23.2 and 20.1 s, 9 to 13
CPU-seconds per worker, before; 15.4 and 15.3 s, 5.0 to 5.2, after (one worker alone: no
difference). While a lab's reference is first built, the lab's own setting applies; the worker's
is put back after it (:func:`~attention_course_instructor.grading.checks.reference`).
"""
from __future__ import annotations

import json
import os
import resource
import sys
from dataclasses import asdict
from pathlib import Path


WORKER_MEMORY_MB = int(os.environ.get("COURSE_WORKER_MEMORY_MB", "8192"))
WORKER_THREADS = 1


def main() -> None:
    limit = WORKER_MEMORY_MB * 2 ** 20
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    answers = os.fdopen(os.dup(sys.stdout.fileno()), "w")
    sys.stdout = sys.stderr                       # stray prints must not corrupt the answers
    import torch

    torch.set_num_threads(WORKER_THREADS)
    from attention_course_instructor.grading.hardened.grade import grade_submission
    from attention_course_instructor.grading.hardened.run import run_from_dict

    for line in sys.stdin:
        job = json.loads(line)
        result = grade_submission(run_from_dict(job["run"]), job["student"], Path(job["path"]))
        answers.write(json.dumps(asdict(result)) + "\n")
        answers.flush()


if __name__ == "__main__":
    main()
