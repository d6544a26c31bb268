"""Stage 5 of hardened grading: what is written, by the parent process alone, in nbgrader's layout.

- ``autograded/<student>/<lab>/<lab>.ipynb``: the notebook as graded -- the instructor's cells,
  the student's answers with the outputs they submitted, and in each autograded cell the grader's
  result (every failed check, in the lab's words) -- so that formgrader lists the submission as
  autograded, opens it and takes manual scores;
- nbgrader's gradebook (so ``nbgrader export`` works): automatic scores; a written answer left
  as released scores 0; a manual score and its graded state survive a re-grade unless the answer
  changed;
- ``feedback/<student>/<lab>/<lab>.html``, by nbgrader's own ``generate_feedback`` (hidden tests
  cleared), which ``nbgrader release_feedback`` delivers through the exchange;
- ``reports/<lab>/``: every student and every cell, for the instructor.

The time of each submission is read first (``timestamp.txt``, :func:`submission_times`): one that
is not a time is that student's recorded fault, and the file is kept beside as
``timestamp.txt.unreadable`` so that formgrader, which reads every submitted time to list a lab's
submissions, keeps working for everyone; the gradebook and ``autograded/`` only ever hold a time
nbgrader can read. A submission without a time is graded and listed as "time unknown".

Nothing written quotes text that the grading run's student code produced, a hidden input or a
reference value. nbgrader's markers in a student's cells (``BEGIN HIDDEN TESTS`` in a comment,
say) are neutralised before any nbgrader step reads the notebook. Each student is written on their
own: a failure for one is that student's recorded fault (``SubmissionGrade.fault``, in the report),
and every other student's notebook, scores and feedback are written all the same.
"""
from __future__ import annotations

import copy
import csv
import json
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path

import nbformat

from attention_course.tables import markdown_table, visible
from attention_course_instructor.grading import late
from attention_course_instructor.grading.hardened.assemble import read_regular_file, read_submission
from attention_course_instructor.grading.hardened.score import SubmissionGrade
from attention_course_instructor.grading.nbgrader_cli import NbgraderError, run_nbgrader
from attention_course_instructor.grading.notebook import (grade_id, is_autograded_test, is_solution,
                                                          match_submission, neutralise_markers)


def record_batch(run, results: list[SubmissionGrade], feedback: bool = True) -> Path:
    """Write everything a graded batch leaves, in order; returns the report folder. A student whose
    grading or recording failed is left with ``fault`` set and nothing half-written for them.
    An assignment the gradebook does not hold stops it before anything is written."""
    unready = not_in_gradebook(run)
    if unready:
        raise SystemExit(unready)
    times = submission_times(run, results)
    written = write_autograded(run, results, times)
    write_gradebook(run, results, written)
    if feedback:
        write_feedback(run, results)
    unknown = [TimeUnknown(r.student, times[r.student].problem) for r in results
               if r.student in times and times[r.student].when is None]
    return write_report(run, results, late_work=written.late + unknown)


def _fault(result: SubmissionGrade, step: str, exc: BaseException) -> None:
    result.fault = result.fault or f"grader fault while {step}: {type(exc).__name__}: {str(exc)[:200]}"


def _paths(run, student: str) -> tuple[Path, Path]:
    submitted = run.root / "submitted" / student / run.assignment
    return submitted, run.root / "autograded" / student / run.assignment


def _result_output(grade) -> dict:
    if grade is None:
        return nbformat.v4.new_output("stream", name="stdout", text="not graded\n")
    if grade.status == "passed":
        return nbformat.v4.new_output("stream", name="stdout",
                                      text="passed: every check of this cell (hardened grader)\n")
    reasons = grade.reasons or [grade.status]
    return nbformat.v4.new_output("error", ename="AssertionError", evalue="; ".join(reasons),
                                  traceback=["AssertionError: the checks of this cell failed:",
                                             *[f"  - {r}" for r in reasons]])


def autograded_notebook(source, submitted, result: SubmissionGrade, checksums: dict):
    """The notebook as graded (see the module note); ``submitted`` may be None (unreadable).

    Built from the same :func:`~attention_course_instructor.grading.notebook.match_submission` as
    the notebook that ran: the instructor's cells, the student's answers, and the code cells the
    student added, where they ran."""
    matching = match_submission(source, submitted)
    grades = {c.grade_id: c for c in result.cells}
    cells = []
    for index, cell, theirs in matching.pairs():
        cells += [_added_cell(added) for _, added in matching.added.get(index, [])]
        cells.append(_graded_cell(copy.deepcopy(cell), theirs, grades, checksums))
    cells += [_added_cell(added) for _, added in matching.added.get(len(source.cells), [])]
    nb = copy.deepcopy(source)
    nb.cells = cells
    return nb


def _graded_cell(cell, theirs, grades: dict, checksums: dict):
    gid = grade_id(cell)
    same_type = theirs is not None and theirs.cell_type == cell.cell_type
    if is_solution(cell):
        cell.source = neutralise_markers(theirs.source) if same_type else ""
    if cell.cell_type == "code":
        cell.execution_count = None
        if is_autograded_test(cell):
            cell.outputs = [_result_output(grades.get(gid))]
        elif theirs is not None and theirs.cell_type == "code":
            cell.outputs = copy.deepcopy(theirs.get("outputs", []))
        else:
            cell.outputs = []
    if gid in checksums:
        cell.metadata["nbgrader"]["checksum"] = checksums[gid]
    return cell


def _added_cell(added):
    """A code cell the student added, as it ran: their source (markers made inert) and outputs."""
    return nbformat.v4.new_code_cell(neutralise_markers(added.source),
                                     outputs=copy.deepcopy(added.get("outputs", [])))


def _checksums(run) -> dict:
    """grade_id -> checksum of each released graded or answer cell (nbgrader's source cells)."""
    from nbgrader.api import Gradebook

    out = {}
    with Gradebook(_db(run)) as gb:
        for notebook in gb.find_assignment(run.assignment).notebooks:
            for cell in notebook.source_cells:
                if cell.checksum:
                    out[cell.name] = cell.checksum
    return out


def _db(run) -> str:
    return f"sqlite:///{run.root / 'gradebook.db'}"


def not_in_gradebook(run) -> str:
    """Why the gradebook cannot take this assignment's results ("" when it can): the command asks
    before it grades anything, so that a missing step never costs a graded batch, and
    :func:`record_batch` and :func:`write_gradebook` before they write anything."""
    from nbgrader.api import Gradebook, MissingEntry

    if not (run.root / "gradebook.db").exists():
        return (f"the course has no gradebook ({run.root / 'gradebook.db'}): run `nbgrader "
                f"generate_assignment {run.assignment}` in the course folder first")
    with Gradebook(_db(run)) as gb:
        try:
            gb.find_assignment(run.assignment)
        except MissingEntry:
            return (f"{run.assignment} is not in the gradebook {run.root / 'gradebook.db'}: run "
                    f"`nbgrader generate_assignment {run.assignment}` in the course folder first")
    return ""


UNREADABLE = "timestamp.txt.unreadable"        # where a timestamp.txt that is no time is kept


@dataclass(frozen=True)
class SubmissionTime:
    """When a submission was handed in, as far as its ``timestamp.txt`` says."""
    when: object = None                          # a datetime (UTC, as nbgrader keeps it), or None
    problem: str = ""                            # why it is unknown


@dataclass(frozen=True)
class TimeUnknown:
    """A submission the late policy could not judge, as the report lists it."""
    student: str
    problem: str


def submission_times(run, results: list[SubmissionGrade]) -> dict:
    """Each graded student's :class:`SubmissionTime`. A ``timestamp.txt`` that is not a time (or
    one that was, and has not been replaced) makes that student's fault, with the reason and what
    to do; the file is kept as ``timestamp.txt.unreadable``, so that nothing in ``submitted/`` stops
    formgrader from listing the lab. A submission with no ``timestamp.txt`` has an unknown time."""
    times = {}
    for result in results:
        if result.fault:
            continue
        folder, _ = _paths(run, result.student)
        try:
            times[result.student] = _submission_time(folder)
        except ValueError as exc:                      # not recorded: listed as time unknown
            result.fault = str(exc)
            times[result.student] = SubmissionTime(None, "timestamp.txt is not a time: not recorded "
                                                         "(see the grader faults)")
    return times


def _submission_time(folder: Path) -> SubmissionTime:
    stamp, kept = folder / "timestamp.txt", folder / UNREADABLE
    fix = ("write the time the work was submitted into timestamp.txt (nbgrader's form, e.g. "
           "2026-10-01 17:00:00.000000 UTC) and grade the lab again")
    if not stamp.exists() and not stamp.is_symlink():
        if kept.exists():
            raise ValueError(f"timestamp.txt was not a time (it is kept as {UNREADABLE}) and has not "
                             f"been replaced: {fix}")
        return SubmissionTime(None, "no timestamp.txt in the submission")
    try:
        text = read_regular_file(stamp, limit=4096).decode("utf-8", "replace")
        return SubmissionTime(late.parse_submission_time(text))
    except OSError as exc:                          # a link, or unreadable: never followed
        raise ValueError(f"timestamp.txt could not be read ({exc}): {fix}") from None
    except ValueError as exc:
        stamp.replace(kept)
        raise ValueError(f"timestamp.txt is not a time of submission: {exc}; it is kept as "
                         f"{UNREADABLE}: {fix}") from None


@dataclass
class Written:
    """What :func:`write_gradebook` needs to know of the autograded notebooks just written."""

    previous: dict = field(default_factory=dict)     # student -> {grade_id: answer} before this run
    unreadable: set = field(default_factory=set)     # students whose notebook could not be read
    notebooks: dict = field(default_factory=dict)    # student -> the autograded notebook written
    late: list = field(default_factory=list)          # late.Late of each late submission recorded
    times: dict = field(default_factory=dict)         # student -> SubmissionTime


def write_autograded(run, results: list[SubmissionGrade], times: dict | None = None) -> Written:
    """Write every autograded notebook; returns each student's answers as they were before (to
    tell a changed answer from a re-grade of the same one), who had no readable notebook, and
    each submission's time (``times``, else read here by :func:`submission_times`)."""
    times = submission_times(run, results) if times is None else times
    source, checksums, written = run.source(), _checksums(run), Written(times=times)
    for result in results:
        if result.fault:
            continue                                   # not graded: nothing to show as graded
        try:
            _write_one_autograded(run, result, source, checksums, written)
        except Exception as exc:
            _fault(result, "writing the autograded notebook", exc)
    return written


def _write_one_autograded(run, result, source, checksums, written: Written) -> None:
    submitted_dir, folder = _paths(run, result.student)
    target = folder / run.notebook
    if target.exists():
        old = nbformat.read(target, as_version=4)
        written.previous[result.student] = {grade_id(c): c.source for c in old.cells}
    try:
        submitted = read_submission(submitted_dir / run.notebook)
    except Exception:                                  # unreadable or missing: graded as empty
        submitted = None
        written.unreadable.add(result.student)
    folder.mkdir(parents=True, exist_ok=True)
    graded = autograded_notebook(source, submitted, result, checksums)
    nbformat.write(graded, target)
    written.notebooks[result.student] = graded
    when = written.times.get(result.student, SubmissionTime()).when
    if when is None:                                   # the time as read, in nbgrader's own form
        (folder / "timestamp.txt").unlink(missing_ok=True)
    else:
        (folder / "timestamp.txt").write_text(when.strftime(TIMESTAMP_FORMAT))
    try:                                               # a regular file only: a link is never read
        (folder / SECRET).write_bytes(read_regular_file(submitted_dir / SECRET, limit=4096))
    except OSError:
        (folder / SECRET).unlink(missing_ok=True)


# beside a submitted notebook nbgrader keeps when it was submitted (timestamp.txt) and the secret
# that names its feedback in the exchange (generate_feedback and release_feedback read both from
# autograded/)
SECRET = "submission_secret.txt"
TIMESTAMP_FORMAT = "%Y-%m-%d %H:%M:%S.%f UTC"


def write_gradebook(run, results: list[SubmissionGrade], written: Written | None = None) -> None:
    """Record the automatic scores in nbgrader's gradebook (the parent process is its only writer)."""
    from nbgrader.api import Gradebook
    from sqlalchemy.exc import SAWarning

    unready = not_in_gradebook(run)
    if unready:
        raise SystemExit(unready)
    written = written or Written()
    with warnings.catch_warnings(), Gradebook(_db(run)) as gb:
        warnings.simplefilter("ignore", SAWarning)          # nbgrader's own add_submission
        students = {s.id for s in gb.students} | {p.name for p in (run.root / "submitted").glob("*")}
        try:                                           # the course's late policy and extensions
            policy = late.late_policy(late.course_config(run.root))
            extensions = late.read_extensions(run.root, students, {a.name for a in gb.assignments})
        except ValueError as exc:
            raise SystemExit(f"{run.assignment}: nothing recorded: {exc}") from None
        for result in results:
            if result.fault:
                continue                               # a grader fault is never a student's zero
            try:
                _write_one_grade(run, gb, result, written)
                gb.db.flush()                          # the penalty reads the scores just set:
                gb.db.expire_all()                     # reload them (one commit: all or nothing)
                found = late.apply(gb, run.assignment, result.student, policy, extensions)
                gb.db.commit()
                if found is not None:
                    written.late.append(found)
            except Exception as exc:
                gb.db.rollback()
                _fault(result, "writing the gradebook", exc)


def _write_one_grade(run, gb, result: SubmissionGrade, written: Written) -> None:
    """One student's rows (committed by the caller, or rolled back on a failure)."""
    from nbgrader.utils import compute_checksum

    gb.update_or_create_student(result.student)
    _, folder = _paths(run, result.student)
    stamp = written.times.get(result.student, SubmissionTime()).when
    submission = gb.update_or_create_submission(run.assignment, result.student, timestamp=stamp)
    graded = written.notebooks.get(result.student) or nbformat.read(folder / run.notebook, as_version=4)
    cells = {grade_id(c): c for c in graded.cells if grade_id(c)}
    scores = {c.grade_id: c for c in result.cells}
    before = written.previous.get(result.student, {})
    for notebook in submission.notebooks:
        for grade in notebook.grades:
            cell, score = cells.get(grade.name), scores.get(grade.name)
            if score is None or cell is None:
                continue
            if score.status != "manual":
                grade.auto_score, grade.needs_manual_grade = score.score, False
                continue
            checksum = cell.metadata.get("nbgrader", {}).get("checksum")
            blank = checksum is not None and checksum == compute_checksum(cell)
            if blank or result.student in written.unreadable:
                grade.auto_score, grade.needs_manual_grade = 0.0, False   # nothing to grade
                continue
            grade.auto_score = None
            changed = before.get(grade.name) != cell.source
            if grade.manual_score is None or changed:
                grade.needs_manual_grade = True
        for comment in notebook.comments:
            cell = cells.get(comment.name)
            if cell is not None and is_solution(cell):
                checksum = cell.metadata.get("nbgrader", {}).get("checksum")
                blank = checksum is not None and checksum == compute_checksum(cell)
                comment.auto_comment = "No response." if blank else None


def write_feedback(run, results: list[SubmissionGrade] | None = None) -> None:
    """HTML feedback for every autograded submission, by nbgrader's own ``generate_feedback``
    (hidden tests cleared), where ``nbgrader release_feedback`` finds it. One run for the batch;
    should it fail, each student still without feedback is tried alone, and a student whose
    feedback cannot be made has that recorded as their fault."""
    try:
        run_nbgrader(run.root, "generate_feedback", run.assignment, "--force")
        return
    except NbgraderError:
        pass
    for result in results or []:
        html = run.root / "feedback" / result.student / run.assignment / run.notebook.replace(".ipynb", ".html")
        if result.fault or html.exists():
            continue
        try:
            run_nbgrader(run.root, "generate_feedback", run.assignment, "--force", "--student", result.student)
        except NbgraderError as exc:
            _fault(result, "making the feedback", exc)


def limits_line(course) -> str:
    """The bounds each kernel of this run had, as the report states them."""
    limits = course.limits
    line = (f"limits {limits.cell_seconds:g} s a cell, {limits.run_seconds:g} s a submission, "
            f"{limits.memory_mb} MB of memory and {limits.disk_mb} MB of disk (/tmp) a kernel")
    if course.use_sandbox:
        from attention_course_instructor.grading.hardened import cgroups

        line += ("; memory counted per kernel by a cgroup" if cgroups.available() else
                 "; no cgroup on this machine: memory bounded per process only")
    return line


def _late_row(x) -> list:
    if isinstance(x, TimeUnknown):
        return [x.student, "time unknown", "", "", x.problem]
    return [x.student, x.late_by, f"{x.extension_hours:g}", f"{x.penalty:g}", ""]


def write_report(course, results: list[SubmissionGrade], folder: Path | None = None,
                 late_work: list | None = None) -> Path:
    """``report.csv`` (one row per student and cell), ``report.json`` and ``report.md``, which also
    names every late submission and what it lost (``late_work``: :class:`late.Late` records), and
    every submission whose time is unknown (:class:`TimeUnknown`)."""
    folder = folder or course.root / "reports" / course.assignment
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "report.csv", "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["student", "cell", "points", "score", "status", "reason"])
        for r in results:
            for c in r.cells:
                writer.writerow([visible(r.student), c.grade_id, c.points, "" if c.score is None else c.score,
                                 c.status, c.reason])
    (folder / "report.json").write_text(json.dumps(
        [asdict(r) | {"score": r.score, "max_score": r.max_score} for r in results], indent=1))
    def row(r: SubmissionGrade) -> list:
        zeros = "; ".join(f"{c.grade_id}: {c.status} {c.reason}".strip() for c in r.cells
                          if c.score == 0 and c.points > 0)
        score = "not recorded" if r.fault else f"{r.score:g} / {r.auto_max:g}"
        return [r.student, score, r.fault or r.error or zeros, "; ".join(r.flags)]

    # markdown_table escapes every cell: student-controlled text cannot break the table
    lines = [f"# Grading report: {course.assignment}", "",
             f"{len(results)} submissions, seed {course.seed}, sandbox "
             f"{'on' if course.use_sandbox else 'OFF'}; {limits_line(course)}.", "",
             markdown_table(["student", "auto score", "zeros and reasons", "flags"], map(row, results))]
    if late_work:
        lines += ["", f"## Late submissions ({len(late_work)})", "",
                  "Late after any extension (hours:minutes:seconds); the penalty is the course's "
                  "late policy (`AssignLatePenalties.plugin_class` in nbgrader_config.py). `nbgrader "
                  "export` and the LMS exports subtract it; formgrader shows the score before it. A "
                  "submission whose time is unknown has no penalty until its time is known.", "",
                  markdown_table(["student", "late by", "extension (hours)", "points deducted", "note"],
                                 map(_late_row, late_work))]
    faults = [r for r in results if r.fault]
    if faults:
        lines += ["", f"## Grader faults ({len(faults)})", "",
                  "Not the students' doing: no score was recorded for them. Fix the cause and grade "
                  "the lab again (a re-grade keeps the manual scores of unchanged answers).", ""]
        lines += [visible(f"- {r.student}: {r.fault}".replace("\n", " ")) for r in faults]
    (folder / "report.md").write_text("\n".join(lines) + "\n")
    return folder
