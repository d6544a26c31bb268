"""Hardened autograding: every submission graded on the instructor's tests, in a sandbox.

How a submission is graded (see the instructor guide in the book for the threat model):

1. **Rebuild.** The notebook that runs is assembled from the instructor's source notebook. Only
   the student's *solution* cells are taken from the submission (matched by nbgrader ``grade_id``,
   else by cell id); every test, locked cell, point value and cell type comes from the source, and
   nothing of the submission's outputs or metadata is used. Differences are recorded as flags.
2. **Probe.** Each autograded cell is replaced by a probe (``<lab>_spec.py``) that calls the
   student's functions and emits plain data. Reference values and comparisons never enter the
   kernel; the kernel never sees ``NBGRADER_EXECUTION`` or any other grading variable.
3. **Sandbox.** The kernel runs as an unprivileged user in its own mount and network namespaces
   (:mod:`sandbox`): no network, the repository read-only, ``source/``, ``solutions/``,
   submissions, feedback and the gradebook hidden, a memory limit, per-cell and per-run time
   limits (:mod:`kernel`).
4. **Check.** The grader's own process checks each probe's data against the course's reference
   implementation, on inputs it derives itself from the grading seed.
5. **Record.** Only the parent process writes: the gradebook (nbgrader's, so ``nbgrader export``
   keeps working), per-student feedback (scores and reasons only), and a report of every cell.

    python -m attention_course.grading.hardened lab8 --jobs 2          # or: make grade
"""
from __future__ import annotations

import argparse
import csv
import importlib
import json
import multiprocessing
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field
from pathlib import Path

import nbformat

from attention_course.grading import sandbox
from attention_course.grading.kernel import CellRunner, Limits
from attention_course.grading.pipeline import HIDDEN_BEGIN, HIDDEN_END
from attention_course.grading.probes import MIME, PRELUDE

PACKAGE_ROOT = Path(__file__).resolve().parents[2]      # the course package (and repo, if editable)
# what the kernel must not read: relative to the course root
HIDDEN = ("source", "solutions", "submitted", "autograded", "feedback", "reports", "tests", ".git",
          "gradebook.db", "release", "benchmarks")


@dataclass
class CellGrade:
    grade_id: str
    points: float
    score: float | None                # None: graded by hand
    status: str                        # passed | failed | error | timeout | died | manual | void
    reason: str = ""


@dataclass
class SubmissionGrade:
    student: str
    cells: list[CellGrade] = field(default_factory=list)
    flags: list[str] = field(default_factory=list)
    error: str = ""                    # why the whole submission got zero, if it did
    seconds: float = 0.0

    @property
    def score(self) -> float:
        return sum(c.score or 0 for c in self.cells)

    @property
    def max_score(self) -> float:
        return sum(c.points for c in self.cells)


class SubmissionError(Exception):
    """The submission cannot be graded at all (unreadable, missing, wrong name)."""


def nbgrader_meta(cell) -> dict:
    return cell.get("metadata", {}).get("nbgrader", {}) or {}


def read_submission(path: Path) -> nbformat.NotebookNode:
    """The submitted notebook, or a SubmissionError saying what is wrong with it."""
    if not path.exists():
        folder = path.parent
        found = sorted(p.name for p in folder.glob("*.ipynb")) if folder.exists() else []
        hint = f"; found {found}" if found else ""
        raise SubmissionError(f"no notebook {path.name} in the submission{hint}")
    try:
        nb = nbformat.read(path, as_version=4)
    except Exception as exc:                    # corrupt JSON, not a notebook, bad encoding
        raise SubmissionError(f"{path.name} is not a readable notebook ({type(exc).__name__})") from None
    if not isinstance(nb.get("cells"), list):
        raise SubmissionError(f"{path.name} has no cells")
    return nb


def _index(cells) -> tuple[dict, dict, list[str]]:
    """Cells by grade_id (first wins) and by cell id; flags for duplicates."""
    by_grade, by_id, flags = {}, {}, []
    for cell in cells:
        gid = nbgrader_meta(cell).get("grade_id")
        if gid:
            if gid in by_grade:
                flags.append(f"duplicate cell {gid!r} ignored")
            else:
                by_grade[gid] = cell
        if cell.get("id"):
            by_id.setdefault(cell["id"], cell)
    return by_grade, by_id, flags


def assemble(source: nbformat.NotebookNode, student: nbformat.NotebookNode, spec, seed: int):
    """The cells to run, what each one is, and what was found changed in the submission.

    Returns ``(sources, roles, flags, tampered)``: ``roles[i]`` is ``("prelude"|"run"|"solution"|
    "probe", grade_id)``; ``tampered`` lists changes that make a submission fail closed.
    """
    mine, mine_by_id, flags = _index(student.cells)
    sources, roles, tampered = [PRELUDE], [("prelude", "")], []
    source_ids = set()
    for cell in source.cells:
        meta = nbgrader_meta(cell)
        gid = meta.get("grade_id")
        source_ids.add(gid)
        theirs = mine.get(gid) or mine_by_id.get(cell.get("id"))
        their_meta = nbgrader_meta(theirs) if theirs is not None else {}
        if theirs is None:
            flags.append(f"cell {gid!r} missing: {'restored' if not meta.get('solution') else 'left empty'}")
        elif their_meta:
            for key in ("solution", "grade"):
                if bool(their_meta.get(key)) != bool(meta.get(key)):
                    tampered.append(f"cell {gid!r}: nbgrader flag {key!r} changed")
            if meta.get("grade") and their_meta.get("points") != meta.get("points"):
                flags.append(f"cell {gid!r}: points edited; the instructor's {meta.get('points')} used")
            if theirs.cell_type != cell.cell_type:
                flags.append(f"cell {gid!r}: type changed to {theirs.cell_type}; restored")
            elif meta.get("locked") and theirs.source != cell.source and not meta.get("grade"):
                flags.append(f"locked cell {gid!r} edited; restored")
            elif meta.get("grade") and not meta.get("solution") and theirs.source.strip() != _visible(cell.source):
                flags.append(f"test cell {gid!r} edited; the instructor's tests used")
        else:
            flags.append(f"cell {gid!r}: nbgrader metadata removed; matched by cell id")
        if theirs is not None and cell.cell_type == "code" and any(o for o in theirs.get("outputs", [])):
            if meta.get("grade"):
                flags.append(f"outputs of {gid!r} discarded before running")
        if cell.cell_type != "code":
            continue
        if meta.get("solution"):
            code = theirs.source if (theirs is not None and theirs.cell_type == "code") else ""
            sources.append(code)
            roles.append(("solution", gid))
        elif meta.get("grade"):
            if gid not in spec.PROBES:
                raise KeyError(f"the grading spec has no probe for graded cell {gid!r}")
            sources.append(spec.PROBES[gid][0](seed))
            roles.append(("probe", gid))
        elif gid in spec.RUN_CELLS:
            sources.append(cell.source)
            roles.append(("run", gid))
    for cell in student.cells:
        meta = nbgrader_meta(cell)
        if meta.get("grade") and meta.get("grade_id") not in source_ids:
            tampered.append(f"graded cell {meta.get('grade_id')!r} is not in the assignment")
    return _with_extra_cells(student, source, sources, roles, flags, tampered)


def _with_extra_cells(student, source, sources, roles, flags, tampered):
    """Insert the code cells the student added (no nbgrader metadata, unknown id) after the
    solution cell they followed in the submission: their helpers run as they did for them."""
    known_ids = {c.get("id") for c in source.cells}
    known_grades = {nbgrader_meta(c).get("grade_id") for c in source.cells}
    after, anchor = {}, None
    for cell in student.cells:
        gid = nbgrader_meta(cell).get("grade_id")
        if gid in known_grades or cell.get("id") in known_ids:
            anchor = gid or next((nbgrader_meta(c).get("grade_id") for c in source.cells
                                  if c.get("id") == cell.get("id")), None)
        elif cell.cell_type == "code" and not nbgrader_meta(cell) and cell.source.strip():
            after.setdefault(anchor, []).append(cell.source)
    if not after:
        return sources, roles, flags, tampered
    out_sources, out_roles = [], []
    for src, role in zip(sources, roles):
        out_sources.append(src)
        out_roles.append(role)
        if role[0] == "solution":
            for extra in after.pop(role[1], []):
                out_sources.append(extra)
                out_roles.append(("extra", role[1]))
    leftover = [e for cells in after.values() for e in cells]
    if leftover:                                  # added before the first solution cell
        first = next(i for i, r in enumerate(out_roles) if r[0] in ("solution", "probe"))
        out_sources[first:first] = leftover
        out_roles[first:first] = [("extra", "")] * len(leftover)
    flags.append(f"{sum(r[0] == 'extra' for r in out_roles)} code cell(s) you added were run too")
    return out_sources, out_roles, flags, tampered


def _visible(source: str) -> str:
    """A test cell as the student saw it (the hidden block removed)."""
    out, hidden = [], False
    for line in source.splitlines():
        if line.strip() == HIDDEN_BEGIN:
            hidden = True
        elif line.strip() == HIDDEN_END:
            hidden = False
        elif not hidden:
            out.append(line)
    return "\n".join(out).strip()


def probe_data(outputs: list) -> tuple[dict | None, str]:
    """The one probe record of a probe cell's outputs, or None and why there is none."""
    records = [o for o in outputs if o.get("output_type") in ("display_data", "execute_result")
               and MIME in o.get("data", {})]
    if len(records) != 1:
        return None, "the probe produced no answer" if not records else "the probe output was tampered with"
    try:
        data = records[0]["data"][MIME]
        return (json.loads(data) if isinstance(data, str) else dict(data)), ""
    except (ValueError, TypeError):
        return None, "the probe output was unreadable"


def score_cells(source, roles, outcomes, spec, seed) -> list[CellGrade]:
    """One CellGrade per graded cell of the source, in notebook order."""
    points = {nbgrader_meta(c).get("grade_id"): float(nbgrader_meta(c).get("points", 0))
              for c in source.cells if nbgrader_meta(c).get("grade")}
    broken = [f"{gid} {o.status}" for (role, gid), o in zip(roles, outcomes)
              if role in ("solution", "run", "prelude", "extra") and o.status in ("timeout", "died")]
    grades = []
    for cell in source.cells:
        meta = nbgrader_meta(cell)
        gid = meta.get("grade_id")
        if not meta.get("grade"):
            continue
        if cell.cell_type != "code" or meta.get("solution"):
            grades.append(CellGrade(gid, points[gid], None, "manual", "graded by hand"))
            continue
        outcome = outcomes[roles.index(("probe", gid))]
        context = f" (earlier: {', '.join(broken)})" if broken else ""
        if outcome.status in ("timeout", "died"):
            reason = {"timeout": "the cell ran past its time limit",
                      "died": "the kernel died (exit, crash or memory limit)"}[outcome.status]
            grades.append(CellGrade(gid, points[gid], 0.0, outcome.status, reason + context))
            continue
        if outcome.status == "error":
            grades.append(CellGrade(gid, points[gid], 0.0, "error",
                                    f"{outcome.error} while calling your code{context}"))
            continue
        data, why = probe_data(outcome.outputs)
        if data is None:
            grades.append(CellGrade(gid, points[gid], 0.0, "error", why + context))
            continue
        try:
            ok, reason = spec.PROBES[gid][1](data, seed)
        except Exception as exc:                       # a malformed answer the check did not expect
            ok, reason = False, f"the answer could not be checked ({type(exc).__name__})"
        grades.append(CellGrade(gid, points[gid], points[gid] if ok else 0.0,
                                "passed" if ok else "failed", "" if ok else reason))
    return grades


@dataclass(frozen=True)
class Course:
    root: Path
    assignment: str
    seed: int = 0
    limits: Limits = Limits()
    tamper: str = "fail"               # "fail": zero and flag; "restore": grade on restored cells
    use_sandbox: bool = True

    @property
    def notebook(self) -> str:
        return f"{self.assignment}.ipynb"

    def spec(self):
        return importlib.import_module(f"attention_course.grading.{self.assignment}_spec")

    def source(self) -> nbformat.NotebookNode:
        return nbformat.read(self.root / "source" / self.assignment / self.notebook, as_version=4)

    def hidden_paths(self) -> list[str]:
        roots = {self.root, PACKAGE_ROOT}
        return sorted(str(r / p) for r in roots for p in HIDDEN if (r / p).exists())


def grade_submission(course: Course, student: str, path: Path) -> SubmissionGrade:
    """Grade one submission; never raises (a failure becomes a zero with a reason)."""
    start = time.monotonic()
    result = SubmissionGrade(student)
    try:
        source, spec = course.source(), course.spec()
        try:
            submitted = read_submission(path)
        except SubmissionError as exc:
            result.error = str(exc)
            result.cells = _zero_cells(source, str(exc))
            return result
        sources, roles, flags, tampered = assemble(source, submitted, spec, course.seed)
        result.flags = flags + tampered
        if tampered and course.tamper == "fail":
            result.error = "nbgrader metadata tampered with: " + "; ".join(tampered) + " (needs review)"
            result.cells = _zero_cells(source, "submission held for review: metadata tampered")
            return result
        runner = CellRunner(course.limits, hide=course.hidden_paths(),
                            read_only=[str(course.root), str(PACKAGE_ROOT)],
                            use_sandbox=course.use_sandbox)
        outcomes = runner.run(sources)
        result.cells = score_cells(source, roles, outcomes, spec, course.seed)
        for (role, gid), outcome in zip(roles, outcomes):
            if role == "solution" and outcome.status != "ok":
                result.flags.append(f"solution cell {gid!r}: {outcome.status} {outcome.error}".strip())
    except Exception as exc:                                   # the grader's own failure: say so
        result.error = f"grader error: {type(exc).__name__}: {exc}"
        try:
            result.cells = _zero_cells(course.source(), result.error)
        except Exception:
            result.cells = []
    finally:
        result.seconds = round(time.monotonic() - start, 2)
    return result


def _zero_cells(source, reason: str) -> list[CellGrade]:
    cells = []
    for cell in source.cells:
        meta = nbgrader_meta(cell)
        if meta.get("grade"):
            manual = cell.cell_type != "code" or meta.get("solution")
            cells.append(CellGrade(meta["grade_id"], float(meta.get("points", 0)),
                                   None if manual else 0.0, "manual" if manual else "void", reason))
    return cells


def find_submissions(course: Course) -> dict[str, Path]:
    """student -> path of the notebook they should have submitted (it may not exist)."""
    root = course.root / "submitted"
    if not root.exists():
        return {}
    return {d.name: d / course.assignment / course.notebook
            for d in sorted(root.iterdir()) if d.is_dir()}


def _grade_job(args):
    course, student, path = args
    return grade_submission(course, student, path)


def grade_batch(course: Course, jobs: int = 1, students: dict[str, Path] | None = None) -> list[SubmissionGrade]:
    """Grade every submission, ``jobs`` at a time; one failure never stops the others."""
    students = students if students is not None else find_submissions(course)
    work = [(course, s, p) for s, p in students.items()]
    if jobs <= 1:
        return [_grade_job(w) for w in work]
    results = {}
    # "spawn", not fork: a forked worker can inherit locks held by the parent's threads (ZeroMQ,
    # torch) and hang for ever -- it did once the parent had graded a notebook itself
    with ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = {pool.submit(_grade_job, w): w[1] for w in work}
        for future in as_completed(futures):
            student = futures[future]
            try:
                results[student] = future.result()
            except Exception as exc:                               # a worker process was lost
                results[student] = SubmissionGrade(student, error=f"grader worker failed: {type(exc).__name__}")
    return [results[s] for s in students]


def write_gradebook(course: Course, results: list[SubmissionGrade], db_url: str | None = None) -> None:
    """Record the automatic scores in nbgrader's gradebook (the parent process is its only writer)."""
    from nbgrader.api import Gradebook, MissingEntry

    import warnings

    from sqlalchemy.exc import SAWarning

    db_url = db_url or f"sqlite:///{course.root / 'gradebook.db'}"
    with warnings.catch_warnings(), Gradebook(db_url) as gb:
        warnings.simplefilter("ignore", SAWarning)          # nbgrader's own add_submission
        try:
            gb.find_assignment(course.assignment)
        except MissingEntry:
            raise SystemExit(f"{course.assignment} is not in the gradebook {db_url}: run "
                             f"`nbgrader generate_assignment {course.assignment}` first") from None
        for result in results:
            gb.update_or_create_student(result.student)
            try:
                submission = gb.find_submission(course.assignment, result.student)
            except MissingEntry:
                submission = gb.add_submission(course.assignment, result.student)
            scores = {c.grade_id: c for c in result.cells}
            for notebook in submission.notebooks:
                for grade in notebook.grades:
                    cell = scores.get(grade.name)
                    if cell is not None and cell.score is not None:
                        grade.auto_score = cell.score
                        grade.needs_manual_grade = False
                    elif cell is not None and cell.status == "manual":
                        grade.needs_manual_grade = True
            gb.db.commit()


def write_feedback(course: Course, result: SubmissionGrade) -> Path:
    """A student's feedback: every graded cell with its score and the reason for a zero."""
    folder = course.root / "feedback" / result.student / course.assignment
    folder.mkdir(parents=True, exist_ok=True)
    lines = [f"# {course.assignment}: automatic grading", "",
             f"Automatic score: **{result.score:g}** of {sum(c.points for c in result.cells if c.score is not None):g} "
             "(cells graded by hand are added later).", ""]
    if result.error:
        lines += [f"**Your submission could not be graded:** {result.error}", ""]
    lines += ["| cell | score | result |", "|---|---|---|"]
    for c in result.cells:
        score = "by hand" if c.score is None else f"{c.score:g} / {c.points:g}"
        lines.append(f"| {c.grade_id} | {score} | {c.status}{': ' + c.reason if c.reason else ''} |")
    if result.flags:
        lines += ["", "Notes on your notebook:", *[f"- {f}" for f in result.flags]]
    path = folder / "feedback.md"
    path.write_text("\n".join(lines) + "\n")
    return path


def write_report(course: Course, results: list[SubmissionGrade], folder: Path | None = None) -> Path:
    """``report.csv`` (one row per student and cell), ``report.json`` and ``report.md``."""
    folder = folder or course.root / "reports" / course.assignment
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "report.csv", "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["student", "cell", "points", "score", "status", "reason"])
        for r in results:
            for c in r.cells:
                writer.writerow([r.student, c.grade_id, c.points, "" if c.score is None else c.score,
                                 c.status, c.reason])
    (folder / "report.json").write_text(json.dumps(
        [asdict(r) | {"score": r.score, "max_score": r.max_score} for r in results], indent=1))
    def cell(text: str) -> str:                      # student-controlled text must not break the table
        return str(text).replace("|", "\\|").replace("\n", " ")

    lines = [f"# Grading report: {course.assignment}", "",
             f"{len(results)} submissions, seed {course.seed}, sandbox "
             f"{'on' if course.use_sandbox else 'OFF'}.", "",
             "| student | auto score | zeros and reasons | flags |", "|---|---|---|---|"]
    for r in results:
        zeros = "; ".join(f"{c.grade_id}: {c.status} {c.reason}".strip() for c in r.cells
                          if c.score == 0 and c.points > 0)
        lines.append(f"| {cell(r.student)} | {r.score:g} / {sum(c.points for c in r.cells if c.score is not None):g} | "
                     f"{cell(r.error or zeros)} | {cell('; '.join(r.flags))} |")
    (folder / "report.md").write_text("\n".join(lines) + "\n")
    return folder


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Grade every submission of an assignment, hardened.")
    parser.add_argument("assignment")
    parser.add_argument("--course", type=Path, default=Path.cwd())
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--seed", type=int, default=int(os.environ.get("COURSE_GRADING_SEED", "0")),
                        help="varies the probe inputs (keep it private; default $COURSE_GRADING_SEED or 0)")
    parser.add_argument("--cell-timeout", type=float, default=Limits.cell_seconds)
    parser.add_argument("--run-timeout", type=float, default=Limits.run_seconds)
    parser.add_argument("--memory-mb", type=int, default=Limits.memory_mb)
    parser.add_argument("--tamper", choices=("fail", "restore"), default="fail")
    parser.add_argument("--no-sandbox", action="store_true", help="only where namespaces are unavailable")
    args = parser.parse_args(argv)
    use_sandbox = not args.no_sandbox
    if use_sandbox and not sandbox.available():
        print("user namespaces are unavailable here: refusing to grade without the sandbox "
              "(pass --no-sandbox to accept the risk)", file=sys.stderr)
        return 2
    course = Course(args.course.resolve(), args.assignment, args.seed,
                    Limits(args.cell_timeout, args.run_timeout, args.memory_mb), args.tamper, use_sandbox)
    results = grade_batch(course, jobs=args.jobs)
    write_gradebook(course, results)
    for r in results:
        write_feedback(course, r)
    folder = write_report(course, results)
    print(f"graded {len(results)} submissions; report in {folder}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
