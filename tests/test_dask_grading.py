"""Hardened grading on a real Dask cluster: a ``dask scheduler`` and two ``dask worker`` processes
started here on 127.0.0.1 (and stopped, with everything they started, at the end).

The batch is a cut of the hardened suite's cases -- correct, wrong, broken and hostile -- graded
on the local worker pool and on the cluster; every cell must come out the same. Then one worker is
killed in the middle of a batch, a scheduler that is not there is named, and a worker that cannot
sandbox is refused.
"""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat
import pytest

import nbgrader_harness as harness
from attention_course_instructor.grading.hardened import GradingRun, Limits, grade_batch, sandbox
from attention_course_instructor.grading.hardened.dask_workers import ClusterRefused, DaskWorkers
from attention_course_instructor.grading.hardened.executors import BATCH_PREFIX
from attention_course_instructor.grading.hardened.grade import find_submissions
from conftest import REPO
from hub_helpers import free_ports
from test_hardened_grading import variants

pytestmark = pytest.mark.slow
# a cell's limit: Lab 8's slowest cell takes 1.8 s alone, but 10 s timed out a Dask run's
# instructor cell under the suite's load (four graders beside the other worker)
LIMITS = Limits(cell_seconds=15, run_seconds=240, memory_mb=4096)
CASES = ("good", "t11_dtype", "t11_equal", "t14_exit", "t14_memory", "t15_asleep", "t18_corrupt",
         "t18_missing", "t18_wrong_name", "t21_kill_all", "t09_traceback", "t04_markdown")
SPIN = re.compile(r"while True:\n(\s+)pass")
DASK = Path(sys.executable).with_name("dask")


class Cluster:
    """A scheduler and its workers, each in a process group of its own."""

    def __init__(self, tmp: Path):
        self.tmp = tmp                      # the workers' TMPDIR: their course copies end there
        self.port = free_ports(1)
        self.address = f"tcp://127.0.0.1:{self.port}"
        self.processes = {}
        self.start("scheduler", [str(DASK), "scheduler", "--host", "127.0.0.1", "--port", str(self.port),
                                 "--no-dashboard"])

    def start(self, name, cmd, env=None):
        env = {**(env or os.environ), "TMPDIR": str(self.tmp)}
        self.processes[name] = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                                start_new_session=True, env=env)

    def add_worker(self, name, env=None):
        self.start(name, [str(DASK), "worker", self.address, "--nthreads", "1", "--name", name,
                          "--no-dashboard", "--death-timeout", "60"], env)

    def kill(self, name):
        process = self.processes.pop(name)
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        process.wait()

    def workers(self) -> set[str]:
        from distributed import Client

        with Client(self.address, timeout=10) as client:
            return {w["name"] for w in client.scheduler_info()["workers"].values()}

    def wait_for(self, names: set[str], timeout=60):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if names <= self.workers():
                    return
            except OSError:
                pass
            time.sleep(0.5)
        raise RuntimeError(f"workers {names} did not join the scheduler")

    def close(self):
        for name in list(self.processes)[::-1]:
            self.kill(name)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    if not sandbox.available():
        pytest.skip("user namespaces are unavailable: the hardened grader refuses to run unsandboxed")
    c = Cluster(tmp_path_factory.mktemp("workers-tmp"))
    try:
        c.add_worker("w1")
        c.add_worker("w2")
        c.wait_for({"w1", "w2"})
        yield c
    finally:
        c.close()


def asleep(looping: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The hardened suite's t15_loop (a cell that never ends, and an attention_map that never
    returns), asleep instead of spinning: the same time-outs, restart and replay of the earlier
    cells on both paths, without holding a core for the limit each time (that suite keeps the
    spinning one)."""
    nb = nbformat.from_dict(json.loads(json.dumps(looping)))
    for cell in nb.cells:
        if SPIN.search(cell.source):
            cell.source = "import time\n" + SPIN.sub(r"while True:\n\1time.sleep(0.5)", cell.source)
    assert sum("time.sleep(0.5)" in c.source for c in nb.cells) == 2, "t15_loop has changed"
    return nb


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    course = harness.make_course(tmp_path_factory.mktemp("dask") / "course", REPO / "source" / "lab8", "lab8")
    harness.generate(course, "lab8")
    solution = nbformat.read(REPO / "solutions" / "lab8" / "lab8.ipynb", as_version=4)
    cases = variants(solution, course.root)
    cases["t15_asleep"] = asleep(cases["t15_loop"])
    for student in CASES:
        folder = course.root / "submitted" / student / "lab8"
        folder.mkdir(parents=True)
        nb = cases[student]
        if callable(nb):
            nb(folder)
        else:
            nbformat.write(nb, folder / "lab8.ipynb")
    release = course.root / "submitted" / "untouched" / "lab8"
    release.mkdir(parents=True)
    (release / "lab8.ipynb").write_bytes((course.root / "labs" / "lab8" / "lab8.ipynb").read_bytes())
    return GradingRun(course.root, "lab8", seed=7, limits=LIMITS)


def comparable(results) -> dict:
    return {r.student: (r.error, sorted(r.flags),
                        [(c.grade_id, c.score, c.points, c.status, c.reason) for c in r.cells])
            for r in results}


@pytest.fixture(scope="module")
def local(course):
    """The local worker pool's results (``local.result()``), graded in the background from the
    first test that asks: the cluster grades the same batch meanwhile, so that the hostile cases'
    time-outs (t15_asleep waits out two) run on both at once instead of one after the other."""
    with ThreadPoolExecutor(1) as pool:
        yield pool.submit(lambda: comparable(grade_batch(course, jobs=2)))


def test_the_cluster_grades_every_cell_as_the_local_pool_does(cluster, course, local):
    with DaskWorkers(cluster.address) as workers:
        remote = comparable(grade_batch(course, executor=workers))
    local = local.result()
    assert remote.keys() == local.keys()
    for student in local:
        assert remote[student] == local[student], student
    assert local["good"][2] and all(score == points for _, score, points, *_ in local["good"][2]
                                    if score is not None)
    assert local["t15_asleep"][2] != local["good"][2]         # the hostile ones really lost points


def test_an_unreachable_scheduler_is_named_before_anything_is_written(course):
    address = f"tcp://127.0.0.1:{free_ports(1)}"
    done = subprocess.run([sys.executable, "-m", "attention_course_instructor.grading.hardened", "lab8", "--course",
                           str(course.root), "--scheduler", address], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 2
    assert f"the Dask scheduler at {address} is unreachable" in done.stderr
    assert not (course.root / "autograded").exists() and not (course.root / "reports").exists()


def test_a_worker_that_cannot_sandbox_is_refused(cluster):
    env = {**os.environ, "PATH": str(Path(sys.executable).parent)}      # no bwrap on its PATH
    cluster.add_worker("bare", env=env)
    cluster.wait_for({"bare"})
    try:
        with DaskWorkers(cluster.address) as workers, pytest.raises(ClusterRefused, match="bare|bubblewrap"):
            workers.check_workers(use_sandbox=True)
    finally:
        cluster.kill("bare")


def test_make_grade_with_a_scheduler_writes_what_a_local_run_writes(cluster, tmp_path):
    """The command line end to end: the control and the batch on the cluster, the gradebook,
    autograded notebooks and report written here."""
    course = harness.make_course(tmp_path / "course", REPO / "source" / "lab8", "lab8")
    harness.generate(course, "lab8")
    solution = (REPO / "solutions" / "lab8" / "lab8.ipynb").read_bytes()
    for student, data in (("ann", solution),
                          ("bea", (course.root / "labs" / "lab8" / "lab8.ipynb").read_bytes())):
        folder = course.root / "submitted" / student / "lab8"
        folder.mkdir(parents=True)
        (folder / "lab8.ipynb").write_bytes(data)
    done = subprocess.run([sys.executable, "-m", "attention_course_instructor.grading.hardened", "lab8", "--course",
                           str(course.root), "--scheduler", cluster.address], capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert sum(s.score for s in harness.scores(course, "lab8", "ann").values()) == 23
    assert sum(s.score for s in harness.scores(course, "lab8", "bea").values()) == 0
    assert (course.root / "autograded" / "ann" / "lab8" / "lab8.ipynb").exists()
    assert (course.root / "feedback" / "bea" / "lab8" / "lab8.html").exists()


def test_the_lab_shared_again_right_after_its_release_stays_on_the_workers(cluster, course):
    """The control and then the batch share the same course folder in quick succession; the
    second copy must not be forgotten when the first one's release reaches the scheduler late
    (with content-hashed keys it was, and a batch was cancelled for "lost dependencies")."""
    with DaskWorkers(cluster.address) as workers:
        for _ in range(20):
            bundle = workers.share_course(course)
            time.sleep(0.05)                             # the earlier copy's release arrives
            assert workers.client.who_has([bundle])[bundle.key], "the shared course was forgotten"
            assert bundle.status == "finished"
            del bundle


# the killed-worker batch: honest, wrong, hostile and blank submissions, enough for the
# third worker to be busy when it dies (the whole class is compared in the test above)
KILL_BATCH = ("good", "t11_dtype", "t14_exit", "t21_kill_all", "untouched")


def test_a_worker_killed_mid_batch_loses_nobody(cluster, course, local):
    cluster.add_worker("w3")
    cluster.wait_for({"w3"})
    outcome = {}
    batch_of = {s: p for s, p in find_submissions(course).items() if s in KILL_BATCH}
    assert set(batch_of) == set(KILL_BATCH)
    with DaskWorkers(cluster.address) as workers:
        batch = threading.Thread(target=lambda: outcome.update(
            results=grade_batch(course, students=batch_of, executor=workers)), daemon=True)
        batch.start()
        address = next(a for a, w in workers.client.scheduler_info()["workers"].items() if w["name"] == "w3")
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:                    # kill it while it grades someone
            if any(str(k).startswith("grade-") for k in workers.client.processing().get(address, ())):
                break
            time.sleep(0.2)
        else:
            pytest.fail("w3 never received a submission")
        cluster.kill("w3")
        batch.join(timeout=600)
    assert comparable(outcome["results"]) == {s: local.result()[s] for s in KILL_BATCH}
    assert not list(cluster.tmp.glob(BATCH_PREFIX + "*"))    # w3's folder was swept by the others
