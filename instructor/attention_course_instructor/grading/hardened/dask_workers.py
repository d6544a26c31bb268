"""Where submissions are graded, on a Dask cluster (``make grade GRADE_ARGS="--scheduler tcp://..."``).

:class:`DaskWorkers` is the cluster twin of :class:`~.executors.LocalWorkers`: one Dask task per
submission. A task carries everything it needs -- the lab's source folder (notebook and checks, sent
to each worker once) and the submission's notebooks as bytes -- so workers share no course folder
with the instructor. On the worker, :func:`grade_on_worker` grades exactly as a local worker does,
kernels in the same sandbox, and returns the result as plain data; the gradebook, the autograded
notebooks, the feedback and the report are written afterwards by the submitting process alone,
once (:mod:`~.record`).

Faults. A worker that dies in the middle of a submission: Dask runs its tasks again on another
worker, and results are collected once per student, so every student is graded exactly once; a
task the scheduler forgets (or whose course copy it forgets; seen once after a worker's death) is
sent again with the course shared again, and after ``RESUBMITS`` tries is the grader's fault, never a
zero. A
submission that kills its kernel or loops is stopped by the sandbox's limits and scored zero with
the reason; the worker carries on. The scheduler unreachable, no worker, or a worker that cannot
sandbox: :class:`ClusterRefused`, raised before anything is graded or written.

Run workers with one thread each (``dask worker ADDRESS --nthreads 1 --nworkers N``): a grading
task sets up the lab's reference in its process, which is not shared between threads.
"""
from __future__ import annotations

import hashlib
import os
import tempfile
import time
import uuid
from dataclasses import asdict
from pathlib import Path

from attention_course_instructor.grading.hardened.executors import (BATCH_PREFIX, result_from_dict,
                                                                   sweep_stale_batches)
from attention_course_instructor.grading.hardened.run import run_from_dict, run_to_dict
from attention_course_instructor.grading.hardened.score import SubmissionGrade

SKIP = ("__pycache__", ".ipynb_checkpoints")
CONNECT_SECONDS = 10
RESUBMITS = 2          # a submission whose task the scheduler lost is sent again at most this often


class ClusterRefused(RuntimeError):
    """The cluster cannot grade this batch (said before anything is graded or written)."""


def course_bundle(run) -> dict[str, bytes]:
    """What a worker needs of the course: the files of ``source/<assignment>``, by relative path."""
    folder = run.root / "source" / run.assignment
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and not any(part in SKIP for part in p.relative_to(folder).parts)}


def submission_files(path: Path) -> dict[str, bytes]:
    """The notebooks of one submission folder, as sent (the grader reads nothing else of it, and
    never a link)."""
    from attention_course_instructor.grading.hardened.assemble import read_regular_file

    files = {}
    for notebook in sorted(path.parent.glob("*.ipynb")) if path.parent.is_dir() else []:
        try:
            files[notebook.name] = read_regular_file(notebook)
        except OSError:
            continue
    return files


def _materialize(bundle: dict[str, bytes], assignment: str) -> Path:
    """The course folder on this worker, one per bundle, written once and reused by later tasks
    (so the lab's checks and reference are loaded once per worker process)."""
    digest = hashlib.sha256(b"".join(k.encode() + b"\0" + v for k, v in sorted(bundle.items()))).hexdigest()
    root = Path(tempfile.gettempdir()) / f"course-grading-dask-{digest[:16]}"
    if not root.exists():
        staging = Path(tempfile.mkdtemp(prefix="course-grading-dask-staging-"))
        for rel, data in bundle.items():
            target = staging / "source" / assignment / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        try:
            staging.rename(root)
        except OSError:                      # another task of this worker was first
            import shutil

            shutil.rmtree(staging, ignore_errors=True)
    return root


def grade_on_worker(bundle: dict[str, bytes], job_run: dict, student: str,
                    files: dict[str, bytes]) -> dict:
    """One submission, graded on a Dask worker; returns :class:`SubmissionGrade` as plain data."""
    import shutil

    from attention_course_instructor.grading.hardened import sandbox
    from attention_course_instructor.grading.hardened.grade import grade_submission

    if job_run["use_sandbox"]:
        missing = sandbox.missing_requirements()
        if missing:
            raise SandboxMissing(f"this worker cannot sandbox kernels: {missing}")
    run = run_from_dict({**job_run, "root": str(_materialize(bundle, job_run["assignment"]))})
    # everything this task writes lives in one batch folder, removed at the end; the folder of a
    # worker that was killed mid-task is removed by the next task on this machine
    sweep_stale_batches()
    work = Path(tempfile.mkdtemp(prefix=BATCH_PREFIX))
    (work / "pid").write_text(str(os.getpid()))
    previous, tempfile.tempdir = tempfile.tempdir, str(work)      # one thread per worker
    try:
        folder = work / "submission" / student / run.assignment
        folder.mkdir(parents=True)
        for name, data in files.items():
            (folder / Path(name).name).write_bytes(data)
        return asdict(grade_submission(run, student, folder / run.notebook))
    finally:
        tempfile.tempdir = previous
        shutil.rmtree(work, ignore_errors=True)


class SandboxMissing(RuntimeError):
    """Raised on a worker that cannot sandbox: the batch stops instead of grading unsandboxed."""


def _worker_requirements() -> str:
    from attention_course_instructor.grading.hardened import sandbox

    return sandbox.missing_requirements()


def _echo(files: dict[str, bytes]) -> int:
    return len(files)


class DaskWorkers:
    """Grade submissions as tasks of the Dask scheduler at ``address``."""

    def __init__(self, address: str, connect_seconds: float = CONNECT_SECONDS):
        from distributed import Client

        self.address = address
        try:
            self.client = Client(address, timeout=connect_seconds)
        except (OSError, TimeoutError) as exc:
            raise ClusterRefused(f"the Dask scheduler at {address} is unreachable ({exc})") from None

    def check_workers(self, use_sandbox: bool, wait_seconds: float = 30) -> dict[str, str]:
        """Every worker now connected, and whether it can sandbox; refuses a batch it cannot grade."""
        try:
            self.client.wait_for_workers(1, timeout=wait_seconds)
        except (TimeoutError, OSError):
            raise ClusterRefused(f"the Dask scheduler at {self.address} has no workers") from None
        missing = self.client.run(_worker_requirements) if use_sandbox else {}
        refused = {worker: why for worker, why in missing.items() if why}
        if refused:
            raise ClusterRefused("refusing to grade without the sandbox on every worker: " + "; ".join(
                f"{worker}: {why}" for worker, why in sorted(refused.items())))
        return missing

    def grade(self, run, students: dict[str, Path]) -> list[SubmissionGrade]:
        from concurrent.futures import CancelledError

        from distributed import KilledWorker

        self.check_workers(run.use_sandbox)
        bundle = self.share_course(run)
        job_run, batch = run_to_dict(run), uuid.uuid4().hex[:8]
        sent_files = {student: submission_files(Path(path)) for student, path in students.items()}

        def submit(student: str, attempt: int = 0):               # a task sent again: same bytes
            return self.client.submit(grade_on_worker, bundle, job_run, student,
                                      sent_files[student], pure=False,
                                      key=f"grade-{run.assignment}-{student}-{batch}"
                                          + (f"-again{attempt}" if attempt else ""))

        futures = {student: submit(student) for student in students}
        sent = dict.fromkeys(students, 0)                # how often each was sent again
        results = {}
        try:
            for student in students:
                while student not in results:
                    try:
                        results[student] = result_from_dict(futures[student].result())
                    except KilledWorker:
                        results[student] = SubmissionGrade(
                            student, error="Dask workers died repeatedly while grading this submission: "
                                           "zero, to be reviewed")
                    except SandboxMissing as exc:
                        raise ClusterRefused(f"a worker that joined during the batch was refused: {exc}") from None
                    except CancelledError as exc:
                        # the scheduler forgot the task or the course copy it needs (seen once
                        # in CI right after a worker was killed: "already forgotten"): the course
                        # is shared again and every submission whose task is gone sent again --
                        # after RESUBMITS, the grader's fault (no score recorded), never a zero
                        if sent[student] >= RESUBMITS:
                            why = f"grader fault: the Dask scheduler lost this submission's task ({exc})"
                            results[student] = SubmissionGrade(student, fault=why, error=why)
                            continue
                        bundle = self.share_course(run)
                        for other in students:
                            if other not in results and (other == student or futures[other].cancelled()):
                                self.client.cancel([futures[other]])
                                sent[other] += 1
                                futures[other] = submit(other, sent[other])
        finally:
            self.client.cancel(list(futures.values()))
        return [results[s] for s in students]

    def share_course(self, run):
        """The lab's source folder, sent to every worker once per batch; returns its future.

        Its key is fresh each time (``hash=False``). A content-hashed key would be the same for
        the control and the batch that follows it, and the scheduler may then forget the second
        copy when the release of the first arrives after it: the batch's tasks are cancelled
        for "lost dependencies" (dask/distributed#3703, #8576); it happened once in a local CI run.
        """
        # a list of one, so the folder travels as one piece (a dict would be split by file)
        [bundle] = self.client.scatter([course_bundle(run)], broadcast=True, hash=False)
        return bundle

    def overhead_ms(self, files: dict[str, bytes], n: int = 40) -> float:
        """Milliseconds one task costs the scheduler round trip, carrying a submission's bytes."""
        start = time.perf_counter()
        futures = [self.client.submit(_echo, files, pure=False) for _ in range(n)]
        self.client.gather(futures)
        return (time.perf_counter() - start) * 1000 / n

    def close(self) -> None:
        self.client.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
