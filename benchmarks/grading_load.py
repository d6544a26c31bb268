"""A class of honest and hostile students graded together: does anyone break it for the others?

    python -m benchmarks.grading_load          # as root: kernels get uids of their own

Issue 41 asks for a batch of 40 submissions of both labs, 30 honest and 10 hostile, graded at
``--jobs`` equal to the CPU count and at twice that, with every honest score identical to grading
that student alone, every hostile one a zero with a reason, the records complete, and the machine's
free memory above a stated floor. This measures it and writes ``benchmarks/results/grading_load.md``
(times, peak memory of the grader's processes and of the kernels as proportional set sizes, the
lowest available memory).

Honest students (15 per lab): the solution, the released notebook untouched, and the solution with
one task wrong. Hostile students (5 per lab), each answer cell of theirs replaced by: a thread
flood, a fork flood, an output flood (1 GiB printed), a marker comment with no answer, a cell that
sleeps past its time limit. Grading uses the lab's checks with a fixed seed; limits are tighter
than the command's defaults so that the hostile ones end sooner (the outcome is the same).
"""
from __future__ import annotations

import os
import platform
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

import nbformat

from attention_course_instructor.grading.notebook import is_solution
from attention_course_instructor.grading.hardened import GradingRun, grade_batch, sandbox
from attention_course_instructor.grading.hardened.kernel import Limits
from attention_course_instructor.grading.hardened.record import record_batch
from benchmarks.report import markdown_table

# the throw-away nbgrader course of the tests (tests/nbgrader_harness.py)
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
import nbgrader_harness as harness  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "benchmarks" / "results" / "grading_load.md"
LABS = ("lab8", "lab12")
SEED = 41
LIMITS = Limits(cell_seconds=30, run_seconds=90, memory_mb=6144)
FREE_MEMORY_FLOOR_MB = 2048            # the machine must keep at least this much available
HONEST_PER_LAB, HOSTILE = 15, {
    "threads": "import threading, time\n_h = []\nwhile True:\n    try:\n"
               "        _t = threading.Thread(target=time.sleep, args=(60,), daemon=True); _t.start(); _h.append(_t)\n"
               "    except RuntimeError:\n        break\ntime.sleep(60)\n",
    "forks": "import os, time\nwhile True:\n    try:\n        if os.fork() == 0:\n            time.sleep(60)\n"
             "            os._exit(0)\n    except OSError:\n        break\ntime.sleep(60)\n",
    "output": "_l = 'x' * (1 << 20)\nfor _ in range(1024):\n    print(_l, flush=True)\n",
    "marker": "# BEGIN HIDDEN TESTS (and no end)\nraise NotImplementedError\n",
    "slow": "import time\ntime.sleep(600)\n",
}


def answer_cells(nb) -> list:
    return [c for c in nb.cells if is_solution(c) and c.cell_type == "code"]


def honest(lab: str, i: int, solution, release):
    """The solution, the untouched release, or the solution with answer cell k wrong."""
    if i % 3 == 0:
        return nbformat.from_dict(solution)
    if i % 3 == 1:
        return nbformat.from_dict(release)
    nb = nbformat.from_dict(solution)
    cells = answer_cells(nb)
    wrong = cells[(i // 3) % len(cells)]
    wrong.source = "raise NotImplementedError  # not done yet\n"
    return nb


def hostile(kind: str, solution):
    nb = nbformat.from_dict(solution)
    for cell in answer_cells(nb):
        cell.source = HOSTILE[kind]
    return nb


def make_class(root: Path) -> dict[str, dict[str, str]]:
    """The course with both labs and 40 submissions; lab -> student -> kind."""
    kinds = {}
    for lab in LABS:
        course = harness.make_course(root, REPO / "source" / lab, lab)
        release, solutions = harness.generate(course, lab)
        solution = nbformat.read(solutions / f"{lab}.ipynb", as_version=4)
        released = nbformat.read(release / f"{lab}.ipynb", as_version=4)
        students = {f"{lab}-honest-{i:02d}": honest(lab, i, solution, released) for i in range(HONEST_PER_LAB)}
        students |= {f"{lab}-hostile-{kind}": hostile(kind, solution) for kind in HOSTILE}
        kinds[lab] = {s: ("hostile" if "hostile" in s else "honest") for s in students}
        for student, nb in students.items():
            folder = root / "submitted" / student / lab
            folder.mkdir(parents=True)
            nbformat.write(nb, folder / f"{lab}.ipynb")
    return kinds


def proportional_mb(proc: Path, status: dict) -> float:
    """A process's proportional set size (its share of pages it shares with others, so that a
    fork flood's copies of one kernel are not counted over and over), else its resident size."""
    try:
        for line in (proc / "smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return int(status.get("VmRSS", "0 kB").split()[0]) / 1024


class MemoryWatch:
    """Samples, twice a second: the machine's available memory, the memory (proportional set
    size) of this process and its children (the grader), and of the kernels (every process of a
    pool uid)."""

    def __init__(self):
        self.min_available_mb = float("inf")
        self.grader_mb = self.kernels_mb = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()

    def _run(self):
        me = os.getpid()
        while not self._stop.is_set():
            grader = kernels = 0
            parents = {}
            for proc in Path("/proc").glob("[0-9]*"):
                try:
                    status = dict(line.split(":", 1) for line in (proc / "status").read_text().splitlines()
                                  if ":" in line)
                except OSError:
                    continue
                rss = proportional_mb(proc, status)
                uid = int(status.get("Uid", "0").split()[0])
                parents[int(proc.name)] = (int(status.get("PPid", "0")), rss)
                if sandbox.KERNEL_UID_BASE <= uid < sandbox.KERNEL_UID_BASE + sandbox.KERNEL_UIDS:
                    kernels += rss
            for pid, (ppid, rss) in parents.items():
                seen = pid
                for _ in range(4):                      # this process, its workers, their launchers
                    if seen == me:
                        grader += rss
                        break
                    seen = parents.get(seen, (0, 0))[0]
            self.grader_mb, self.kernels_mb = max(self.grader_mb, grader), max(self.kernels_mb, kernels)
            meminfo = dict(line.split(":", 1) for line in Path("/proc/meminfo").read_text().splitlines())
            self.min_available_mb = min(self.min_available_mb, int(meminfo["MemAvailable"].split()[0]) / 1024)
            self._stop.wait(0.5)


def grade_alone(root: Path, kinds) -> dict[str, float]:
    """Each honest kind of submission graded alone (one per distinct notebook), by student."""
    alone = {}
    for lab in LABS:
        run = GradingRun(root, lab, seed=SEED, limits=LIMITS)
        by_text = {}
        for student, kind in kinds[lab].items():
            if kind == "honest":
                path = root / "submitted" / student / lab / f"{lab}.ipynb"
                by_text.setdefault(path.read_text(), []).append(student)
        for students in by_text.values():
            first = students[0]
            [result] = grade_batch(run, jobs=1, students={first: root / "submitted" / first / lab / f"{lab}.ipynb"})
            alone |= {s: result.score for s in students}
    return alone


def grade_class(root: Path, kinds, jobs: int, alone: dict[str, float]) -> dict:
    for written in ("autograded", "feedback", "reports"):          # what a batch writes, afresh
        shutil.rmtree(root / written, ignore_errors=True)
    start = time.monotonic()
    verdicts = {"honest as alone": 0, "honest": 0, "hostile zero with reason": 0, "hostile": 0,
                "recorded": 0, "faults": 0}
    with MemoryWatch() as watch:
        for lab in LABS:
            run = GradingRun(root, lab, seed=SEED, limits=LIMITS)
            results = grade_batch(run, jobs=jobs)
            record_batch(run, results)
            for r in results:
                kind = kinds[lab][r.student]
                verdicts[kind] += 1
                verdicts["faults"] += bool(r.fault)
                if kind == "honest" and r.score == alone[r.student]:
                    verdicts["honest as alone"] += 1
                reasons = [c.reason for c in r.cells if c.score == 0 and c.points > 0]
                if kind == "hostile" and r.score == 0 and (reasons or r.error):
                    verdicts["hostile zero with reason"] += 1
                feedback = root / "feedback" / r.student / lab / f"{lab}.html"
                verdicts["recorded"] += feedback.exists() and (root / "reports" / lab / "report.md").exists()
    return {"jobs": jobs, "seconds": time.monotonic() - start, "grader_mb": watch.grader_mb,
            "kernels_mb": watch.kernels_mb, "min_available_mb": watch.min_available_mb, **verdicts}


def report(rows: list[dict], alone_seconds: float) -> str:
    total_mb = int(Path("/proc/meminfo").read_text().split()[1]) / 1024
    lines = [
        "# Grading load: 30 honest and 10 hostile students of both labs in one batch", "",
        f"Written by `benchmarks/grading_load.py` on {time.strftime('%Y-%m-%d')}: {platform.node() or 'host'}, "
        f"{os.cpu_count()} CPUs, {total_mb / 1024:.0f} GiB, Python {platform.python_version()}, "
        f"{'as root (a uid per kernel)' if os.geteuid() == 0 else 'not root'}; seed {SEED}; limits "
        f"{LIMITS.cell_seconds:g} s a cell, {LIMITS.run_seconds:g} s a submission, {LIMITS.memory_mb} MB a kernel.",
        "Hostile: thread flood, fork flood, 1 GiB of output, a marker comment, a cell past its time "
        "limit (one of each per lab, in every answer cell).",
        f"Each honest kind graded alone first took {alone_seconds:.0f} s.", "",
        markdown_table(["jobs", "time (s)", "honest as graded alone", "hostile: zero with a reason",
                        "records complete", "grader faults", "peak grader PSS (MB)",
                        "peak kernels PSS (MB)", "lowest available (MB)",
                        f"above the {FREE_MEMORY_FLOOR_MB} MB floor"],
                       [[r["jobs"], f"{r['seconds']:.0f}", f"{r['honest as alone']} / {r['honest']}",
                         f"{r['hostile zero with reason']} / {r['hostile']}",
                         f"{r['recorded']} / {r['honest'] + r['hostile']}", r["faults"],
                         f"{r['grader_mb']:.0f}", f"{r['kernels_mb']:.0f}",
                         f"{r['min_available_mb']:.0f}",
                         "yes" if r["min_available_mb"] >= FREE_MEMORY_FLOOR_MB else "no"]
                        for r in rows])]
    return "\n".join(lines) + "\n"


def main() -> None:
    if not sandbox.available():
        sys.exit(f"the sandbox is not available here: {sandbox.missing_requirements()}")
    cpus = os.cpu_count() or 1
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "course"
        kinds = make_class(root)
        started = time.monotonic()
        alone = grade_alone(root, kinds)
        alone_seconds = time.monotonic() - started
        for jobs in (cpus, 2 * cpus):
            rows.append(grade_class(root, kinds, jobs, alone))
            print(rows[-1], flush=True)
    OUT.write_text(report(rows, alone_seconds))
    print(OUT.read_text())


if __name__ == "__main__":
    main()
