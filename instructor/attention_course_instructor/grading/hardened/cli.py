"""The hardened grader's command line: ``python -m attention_course_instructor.grading.hardened`` (``make grade``)."""
from __future__ import annotations

import argparse
import os
import secrets
import sys
from pathlib import Path

from attention_course_instructor.grading import class_report
from attention_course_instructor.grading.checks import SEED_FILE, SEED_VARIABLE, course_seed, keep_course_seed
from attention_course_instructor.grading.hardened import GradingRun, Limits, cgroups, grade_batch, sandbox
from attention_course_instructor.grading.hardened.dask_workers import ClusterRefused, DaskWorkers
from attention_course_instructor.grading.hardened.record import not_in_gradebook, record_batch


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Grade every submission of one or more assignments, "
                                     "hardened (one after the other, each with its own control).")
    parser.add_argument("assignments", nargs="+", metavar="assignment")
    parser.add_argument("--course", type=Path, default=Path.cwd())
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--seed", type=int, default=None,
                        help="varies the probe inputs (keep it private; default $COURSE_GRADING_SEED, "
                             "else the course's own, kept in <course>/.grading-seed by the first "
                             "run that grades)")
    parser.add_argument("--cell-timeout", type=float, default=Limits.cell_seconds)
    parser.add_argument("--run-timeout", type=float, default=Limits.run_seconds)
    parser.add_argument("--memory-mb", type=int, default=Limits.memory_mb,
                        help="each kernel's memory, its /tmp included (default %(default)s)")
    parser.add_argument("--disk-mb", type=int, default=Limits.disk_mb,
                        help="each kernel's /tmp, and any one file it writes (default %(default)s)")
    parser.add_argument("--tamper", choices=("fail", "restore"), default="fail")
    parser.add_argument("--no-sandbox", action="store_true", help="only where namespaces are unavailable")
    parser.add_argument("--scheduler", metavar="tcp://HOST:PORT",
                        help="grade on the workers of this Dask scheduler instead of local processes")
    args = parser.parse_args(argv)
    args.seed, new_seed = chosen_seed(args.seed, args.course)
    use_sandbox = not args.no_sandbox
    if use_sandbox:
        missing = sandbox.missing_requirements()
        if missing:
            print(f"refusing to grade without the sandbox: {missing} "
                  "(pass --no-sandbox to accept the risk)", file=sys.stderr)
            return 2
    if use_sandbox and not args.scheduler and not cgroups.available():
        print("note: no cgroup per kernel here (" + ("not root" if os.geteuid() else "no writable "
              "cgroup hierarchy") + "): a kernel's memory is bounded per process only; see the "
              "guide's threat model", file=sys.stderr)
    runs = [GradingRun(args.course.resolve(), assignment, args.seed,
                       Limits(args.cell_timeout, args.run_timeout, args.memory_mb, disk_mb=args.disk_mb),
                       args.tamper, use_sandbox)
            for assignment in dict.fromkeys(args.assignments)]
    unready = [why for why in map(not_in_gradebook, runs) if why]
    if unready:
        print("grading stopped before anything was graded: " + "; ".join(unready), file=sys.stderr)
        return 2
    executor = None
    graded = []
    try:
        if args.scheduler:
            try:
                executor = DaskWorkers(args.scheduler)
                executor.check_workers(use_sandbox)
            except ClusterRefused as exc:
                print(f"grading stopped before anything was written: {exc}", file=sys.stderr)
                return 2
        for run in runs:                              # every control first: a broken lab stops all
            fault = control_fault(run, executor)
            if fault:
                print(f"grading stopped before anything was written: {run.assignment}: {fault}",
                      file=sys.stderr)
                return 3
        for run in runs:
            try:
                graded.append((run, grade_batch(run, jobs=args.jobs, executor=executor)))
            except ClusterRefused as exc:               # a worker joined the cluster unsandboxed
                print(f"grading stopped before anything was written: {exc}", file=sys.stderr)
                return 2
    finally:
        if executor is not None:
            executor.close()
    failed, seed_lost = [], False
    if new_seed:                                      # the course's first grading: its seed kept now
        seed_file = args.course.resolve() / SEED_FILE
        try:
            kept = keep_course_seed(args.course.resolve(), args.seed)
        except (OSError, ValueError) as exc:          # the results are recorded all the same
            seed_lost = True
            print(f"the course's new seed could not be kept in {seed_file} ({exc!r}): the results "
                  "are recorded, but a re-grade will check other inputs than this run's",
                  file=sys.stderr)
        else:
            print(f"grading seed: the course's own, kept in {seed_file}" + (
                "" if kept == args.seed else " by another run meanwhile (a re-grade uses that one, "
                "not this run's)"), file=sys.stderr)
    for run, results in graded:                       # written only once every lab has been graded
        try:                                          # each lab on its own: one cannot stop another
            folder = record_batch(run, results)
        except (Exception, SystemExit) as exc:
            failed.append(f"{run.assignment}: its results could not be recorded: {exc}")
            continue
        print(f"{run.assignment}: graded {len(results)} submissions; report in {folder}; feedback in "
              f"{run.root / 'feedback'} (nbgrader release_feedback {run.assignment} delivers it)")
        try:                                          # the class report: for the instructor only
            print(f"{run.assignment}: class report in {class_report.write(run.root, run.assignment)}")
        except Exception as exc:
            print(f"{run.assignment}: the class report could not be written: {exc!r}", file=sys.stderr)
        failed += [f"{run.assignment}: {r.student}: {r.fault}" for r in results if r.fault]
    if failed:
        print("grader faults (not the students' doing; nothing was recorded for these):\n  "
              + "\n  ".join(failed), file=sys.stderr)
        return 4
    return 4 if seed_lost else 0


def chosen_seed(given: int | None, course: Path) -> tuple[int, bool]:
    """The grading seed: ``--seed``, else ``$COURSE_GRADING_SEED``, else the course's own; and
    whether it is a new one for the course, made now and kept (:func:`keep_course_seed`) only
    once its first batch is graded, so that a run stopped early writes nothing. Never a default
    that everyone knows: the checks are public."""
    if given is not None:
        return given, False
    if os.environ.get(SEED_VARIABLE):
        return int(os.environ[SEED_VARIABLE]), False
    seed = course_seed(course.resolve())
    if seed is not None:
        print(f"grading seed: the course's own, kept in {course.resolve() / SEED_FILE}", file=sys.stderr)
        return seed, False
    return secrets.randbits(48), True


def control_fault(run: GradingRun, executor=None) -> str:
    """Grade the instructor's own solution (the source notebook) first, in the same environment
    (on the cluster when there is one): anything short of full marks is the grader's fault, not a
    student's ("" when all is well)."""
    control = grade_batch(run, jobs=1, executor=executor,
                          students={CONTROL: run.root / "source" / run.assignment / run.notebook})[0]
    if control.error:
        return f"the control (the solution) could not be graded: {control.error}"
    wrong = [f"{c.grade_id}: {c.status} ({c.reason})" for c in control.cells
             if c.score is not None and c.score < c.points]
    broken = [f for f in control.flags if f.startswith(("answer cell", "instructor cell"))]
    if wrong or broken:
        return ("the control (the solution) did not get full marks, so the grading environment is "
                "broken: " + "; ".join(wrong + broken))
    return ""


CONTROL = "__control__"
