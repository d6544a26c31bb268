"""Where submissions are graded: worker processes of this machine, replaced when they die.

:class:`LocalWorkers` keeps ``jobs`` worker processes (``python -m
attention_course_instructor.grading.hardened.worker``), each grading one submission at a time and answering
with its result as one JSON line. A worker that dies in the middle of a submission (the machine's
memory killer, a crash of the grading stack) is replaced, and the submission is graded again once;
if it dies twice the submission gets a zero with the reason, and every other submission is graded
as usual. All temporary folders of a batch live in one folder that the batch removes on every exit
path it survives; a batch folder left by a grader that was itself killed is removed by the next.
"""
from __future__ import annotations

import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from attention_course_instructor.grading.hardened.kernel import SHORT_BASE, batch_tag
from attention_course_instructor.grading.hardened.run import run_to_dict
from attention_course_instructor.grading.hardened.score import CellGrade, SubmissionGrade

BATCH_PREFIX = "course-grading-batch-"
ATTEMPTS = 2


def result_from_dict(data: dict) -> SubmissionGrade:
    cells = [CellGrade(**c) for c in data.get("cells", [])]
    return SubmissionGrade(data["student"], cells, list(data.get("flags", [])), data.get("error", ""),
                           float(data.get("seconds", 0.0)), str(data.get("fault", "")))


def sweep_stale_batches(tmp: str | None = None) -> list[str]:
    """Remove the batch folders of graders that no longer run, the kernel folders they had to
    keep outside (:func:`~.kernel.kernel_folder`) and the cgroups of their kernels; returns what
    was removed."""
    from attention_course_instructor.grading.hardened.cgroups import sweep_stale_cgroups

    sweep_stale_cgroups()                                # kernels' cgroups of dead graders
    removed = []
    for folder in Path(tmp or tempfile.gettempdir()).glob(BATCH_PREFIX + "*"):
        try:
            pid = int((folder / "pid").read_text())
            os.kill(pid, 0)
            continue                                   # its grader is still running
        except (OSError, ValueError):
            outside = Path(SHORT_BASE).glob(f"course-grading-{batch_tag(folder.name)}-*")
            for stale in [folder, *outside]:
                shutil.rmtree(stale, ignore_errors=True)
                removed.append(str(stale))
    return removed


class LocalWorkers:
    """Grade submissions on ``jobs`` worker processes of this machine."""

    def __init__(self, jobs: int = 1):
        self.jobs = max(1, jobs)

    def grade(self, run, students: dict[str, Path]) -> list[SubmissionGrade]:
        sweep_stale_batches()
        batch = tempfile.mkdtemp(prefix=BATCH_PREFIX)
        (Path(batch) / "pid").write_text(str(os.getpid()))
        previous = signal.getsignal(signal.SIGTERM)
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, _exit_on_term)   # so that the finally below runs
        try:
            return self._grade(run, students, batch)
        finally:
            if threading.current_thread() is threading.main_thread():
                signal.signal(signal.SIGTERM, previous)
            shutil.rmtree(batch, ignore_errors=True)

    def _grade(self, run, students, batch) -> list[SubmissionGrade]:
        jobs: queue.Queue = queue.Queue()
        for student, path in students.items():
            jobs.put((student, str(path), 1))
        results: dict[str, SubmissionGrade] = {}
        lock = threading.Lock()
        job_run = run_to_dict(run)

        def serve():
            worker = _Worker(batch)
            try:
                while True:
                    try:
                        student, path, attempt = jobs.get_nowait()
                    except queue.Empty:
                        return
                    answer = worker.grade({"run": job_run, "student": student, "path": path})
                    if answer is None:                         # the worker died: a fresh one
                        worker.close()
                        worker = _Worker(batch)
                        if attempt < ATTEMPTS:
                            jobs.put((student, path, attempt + 1))
                            continue
                        answer = SubmissionGrade(student, error="the grader's worker died twice while "
                                                 "grading this submission: zero, to be reviewed")
                    with lock:
                        results[student] = answer
            finally:
                worker.close()

        threads = [threading.Thread(target=serve, daemon=True) for _ in range(min(self.jobs, len(students)))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return [results[s] for s in students]


def _exit_on_term(signum, frame):
    raise SystemExit(128 + signum)


class _Worker:
    """One worker process and its pipe."""

    def __init__(self, batch: str):
        env = {**os.environ, "TMPDIR": batch}
        # -P: the installed grader, never a copy in the folder the grader was started from
        self.process = subprocess.Popen([sys.executable, "-P", "-m",
                                         "attention_course_instructor.grading.hardened.worker"],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.DEVNULL, text=True, env=env)

    def grade(self, job: dict) -> SubmissionGrade | None:
        try:
            self.process.stdin.write(json.dumps(job) + "\n")
            self.process.stdin.flush()
            line = self.process.stdout.readline()
        except (BrokenPipeError, OSError):
            return None
        if not line:
            return None
        try:
            return result_from_dict(json.loads(line))
        except (ValueError, KeyError, TypeError):
            return None

    def close(self) -> None:
        if self.process.poll() is None:
            try:
                self.process.stdin.close()
                self.process.wait(timeout=30)
            except (OSError, subprocess.TimeoutExpired):
                self.process.kill()
                self.process.wait()
