"""What one student costs the course hub, and how the hub copes with a class arriving at once.

    python -m benchmarks.hub_capacity        # as root (it makes accounts); about 5 minutes
    python -m benchmarks.hub_capacity --tables-only   # rewrite the tables from the committed JSON

1. One student running the whole of Lab 8 (the solution, full-length training, as a student runs it):
   peak resident memory and CPU seconds of the kernel and the tools around it.
2. The hub on this machine: one instructor releases Lab 8; then ten students log in, have their
   servers spawned and fetch the lab, all at once. Seconds from spawn request to a server that
   answers, p50 and p95, and how many failed.

Writes ``benchmarks/results/hub_capacity.md`` and ``.json``; the Kubernetes values
(``deploy/kubernetes/values.yaml``) size each student's limits from the JSON.
"""
from __future__ import annotations

import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
import hub_helpers  # noqa: E402
from hub_helpers import COURSE_ID, Hub  # noqa: E402

sys.path.insert(0, str(REPO / "deploy" / "kubernetes"))
import sizing  # noqa: E402
from benchmarks.report import markdown_table  # noqa: E402

RESULTS = REPO / "benchmarks" / "results"
STUDENTS = 10


def one_student_running_the_lab() -> dict:
    """Execute the solution notebook at full length in a child process; its descendants' rusage."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    with tempfile.TemporaryDirectory() as tmp:
        start = time.monotonic()
        subprocess.run([sys.executable, "-m", "nbconvert", "--to", "notebook", "--execute",
                        "--ExecutePreprocessor.timeout=900", "--output-dir", tmp,
                        str(REPO / "solutions" / "lab8" / "lab8.ipynb")],
                       check=True, capture_output=True, cwd=tmp)
        wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall_s": round(wall, 1), "cpu_s": round(cpu, 1),
            "peak_rss_mb": round(after.ru_maxrss / 1024)}      # the largest descendant (the kernel)


def class_arriving_at_once() -> dict:
    tag = os.urandom(2).hex()
    students = [f"bs{tag}{k:02d}" for k in range(STUDENTS)]
    instructor = f"bi{tag}"
    with Hub([instructor], students) as hub:
        hub.start_server(instructor)
        hub.wait_ready(instructor)
        hub.formgrader(instructor, "POST", "assignment/lab8/assign")
        hub.formgrader(instructor, "POST", "assignment/lab8/release")
        for s in students:
            hub.token(s)                                 # log in first: measure spawning, not login

        def arrive(student: str):
            start = time.monotonic()
            try:
                hub.start_server(student)
                hub.wait_ready(student, timeout=300)
                ready = time.monotonic() - start
                fetched = hub.nbgrader_action(student, "fetch", "lab8")["success"]
                return ready, time.monotonic() - start, fetched
            except Exception as exc:                      # a failure is a result here
                return None, None, repr(exc)

        with ThreadPoolExecutor(STUDENTS) as pool:
            outcomes = list(pool.map(arrive, students))
        idle = [server_rss_mb(s) for s in students]
    spawned = sorted(o[0] for o in outcomes if o[0] is not None)
    fetched = sorted(o[1] for o in outcomes if o[2] is True)
    failures = [o[2] for o in outcomes if o[2] is not True]
    return {"students": STUDENTS, "idle_server_rss_mb": round(statistics.median(idle)),
            "spawn_p50_s": round(statistics.median(spawned), 1),
            "spawn_p95_s": round(percentile(spawned, 95), 1),
            "spawn_and_fetch_p95_s": round(percentile(fetched, 95), 1) if fetched else None,
            "failures": len(failures), "failure_reasons": failures}


def server_rss_mb(user: str) -> float:
    """Resident memory of everything the user's server runs (no kernel open yet)."""
    import psutil

    total = 0
    for p in psutil.process_iter(["username", "memory_info"]):
        if p.info["username"] == user and p.info["memory_info"] is not None:
            total += p.info["memory_info"].rss
    return total / 2**20


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered) - 1, round(q / 100 * len(ordered) + 0.5) - 1))]


def write(results: dict) -> None:
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "hub_capacity.json").write_text(json.dumps(results, indent=2) + "\n")
    lab, hub = results["one_student"], results["class_at_once"]
    lines = [
        "# The course hub: one student's cost, a class arriving at once",
        "",
        f"Measured by `benchmarks/hub_capacity.py` on {results['machine']}.",
        "",
        "## One student running the whole of Lab 8 (full-length training)",
        "",
        markdown_table(["wall s", "CPU s", "peak memory MB"],
                       [[lab["wall_s"], lab["cpu_s"], lab["peak_rss_mb"]]], align="rrr"),
        "",
        f"## {hub['students']} students spawning and fetching Lab 8 at once (this machine's hub)",
        "",
        markdown_table(["spawn p50 s", "spawn p95 s", "spawn + fetch p95 s", "failures", "idle server MB"],
                       [[hub["spawn_p50_s"], hub["spawn_p95_s"], hub["spawn_and_fetch_p95_s"],
                         hub["failures"], hub["idle_server_rss_mb"]]], align="rrrrr"),
        "",
        "## What that means for a cluster (`deploy/kubernetes/sizing.py`)",
        "",
        "Each student: " + ", ".join(f"{k} {v}" for k, v in sizing.student_limits(results).items())
        + " (`deploy/kubernetes/values.yaml` sets these). Every student running the lab at once:",
        "",
        sizing.capacity_table(results),
    ]
    (RESULTS / "hub_capacity.md").write_text("\n".join(lines) + "\n")


def main() -> int:
    if sys.argv[1:] == ["--tables-only"]:        # the sizing rule changed: rewrite from the JSON
        write(json.loads((RESULTS / "hub_capacity.json").read_text()))
        return 0
    missing = hub_helpers.missing_requirements()
    if missing:
        sys.exit(missing)
    hub_helpers.prepare()
    results = {"machine": f"{os.cpu_count()} CPUs, {platform.machine()}, Python {platform.python_version()}",
               "course_id": COURSE_ID, "one_student": one_student_running_the_lab(),
               "class_at_once": class_arriving_at_once()}
    write(results)
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
