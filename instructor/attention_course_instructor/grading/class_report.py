"""The class report of a lab: what a graded batch says about the whole class, for its instructor.

    python -m attention_course_instructor.grading.class_report lab8 --course DIR [--names]

The hardened grader writes it at the end of every batch (local or on Dask); the command writes it
again at any time, say once the teaching assistants have graded the written answers. It reads the
batch's results (``reports/<lab>/report.json``, every cell of every student, as the grader judged
it) and nbgrader's gradebook (manual scores, late penalties, totals), and writes beside them:

- ``class-report.html``: for every graded cell, how many submissions passed its **visible checks**
  (the asserts the student was given, run on their answers: what they saw) and its **hidden
  checks** (the lab's checks, which decide the points), how many passed one and not the other, the
  mean points, the zero scores and the cell's share of all the class's zeros, and its most
  frequent failure messages with counts; the written answers and how many are graded by hand so
  far; the distribution of totals; late submissions; grader faults. Two plots, each with its
  numbers in a table as well.
- ``class-report.csv``: one row per graded cell, the same numbers;
- ``class-report-failures.csv``: one row per cell and failure message, with its count.

A failure message is the lab's own words (its checks' messages, the grader's fixed phrases), never
text of a student's: what a message quotes of a returned value (a shape, a dtype, a device: see
:func:`lab_words`) is replaced by ``…``, and a submission that could not be graded is named by
its kind only. No student's name or id is written unless ``--names`` is given (then the late
submissions and grader faults name them). The population is the batch's: every student with a
submission folder, less those the grader could not grade (grader faults, counted apart).
"""
from __future__ import annotations

import argparse
import csv
import html
import io
import json
import re
import statistics
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from attention_course_instructor.grading import late
from attention_course_instructor.grading.checks import TYPE_WORDS
from attention_course_instructor.grading.hardened.score import CellGrade, SubmissionGrade
from attention_course_instructor.grading.notebook import grade_id, is_autograded_test, is_grade, points

HTML_NAME, CSV_NAME, FAILURES_CSV_NAME = "class-report.html", "class-report.csv", "class-report-failures.csv"
RESULTS_NAME = "report.json"                # the batch's results, written by the hardened grader
TOP_MESSAGES = 5                            # failure messages listed per cell
MORE = re.compile(r"^and \d+ more$")        # score.bounded's note of messages left out
EARLIER = re.compile(r" \(earlier: [^)]*\)$")
# where a check's message quotes what the student's code returned (checks.describe_shape and
# checks.quoted_word): right after "got", "got one on" or "has shape"; a type word (checks.TYPE_WORDS,
# "got a list") is the lab's own and stays
_TYPE_STARTS = "|".join(sorted({re.escape(words.split()[0]) for words in TYPE_WORDS.values()}))
RETURNED = re.compile(rf"\b(got one on|got|has shape) (?!(?:{_TYPE_STARTS})\b)"
                      r"(\([^)]*\)(?: \(rank \d+\))?|[^\s,;]+)")
NOT_DEFINED = re.compile(r"^([A-Za-z_][A-Za-z0-9_.]*) is not defined")
# a submission that could not be graded at all, by kind (its reason may quote a file's name)
VOID_KINDS = (("submission held for review", "held for review: nbgrader metadata tampered with"),
              ("grader error", "the grader failed on this submission (see report.md)"),
              ("no notebook", "no notebook of the lab's name in the submission"))
VOID_OTHERWISE = "the submitted notebook could not be read"
VISIBLE_BLUE, HIDDEN_ORANGE = "#0072B2", "#D55E00"       # Okabe-Ito: apart for every colour vision


# ---- the numbers -----------------------------------------------------------------------------------

@dataclass
class CellSummary:
    """One graded cell over the class (``submissions`` of them)."""

    cell: str
    kind: str                                  # "autograded" or "by hand"
    points: float
    submissions: int
    scored: int = 0                            # with a score (by hand: graded so far)
    total_points: float = 0.0
    zeros: int = 0
    visible_passed: int = 0
    hidden_passed: int = 0
    visible_not_run: int = 0                   # visible checks not run: the probe never completed
    visible_not_hidden: int = 0                # passed the visible checks, failed the hidden ones
    hidden_not_visible: int = 0                # failed the visible checks, passed the hidden ones
    failures: list = field(default_factory=list)   # (message, submissions), most frequent first

    @property
    def autograded(self) -> bool:
        return self.kind == "autograded"

    @property
    def visible_pass_rate(self) -> float:
        return self.visible_passed / self.submissions if self.submissions else 0.0

    @property
    def hidden_pass_rate(self) -> float:
        return self.hidden_passed / self.submissions if self.submissions else 0.0

    @property
    def mean_points(self) -> float | None:
        return self.total_points / self.scored if self.scored else None

    @property
    def zero_share(self) -> float:
        return self.zeros / self.scored if self.scored else 0.0


@dataclass
class ClassReport:
    lab: str
    submissions: int                           # in the batch
    cells: list[CellSummary]
    totals: list[float]                        # each graded student's total after any late penalty
    max_total: float
    partial_totals: int                        # totals still waiting for a written answer's score
    void: dict                                 # kind of ungradable submission -> count
    late: list                                 # late.Late of each late submission
    faults: dict                               # kind of grader fault -> students
    visible_recorded: bool = True              # False: a batch graded before visible checks were kept
    made: str = ""

    @property
    def graded(self) -> int:
        return self.submissions - sum(len(s) for s in self.faults.values())

    @property
    def class_zeros(self) -> int:
        return sum(c.zeros for c in self.cells if c.points > 0)

    def zero_share_of_class(self, cell: CellSummary) -> float:
        return cell.zeros / self.class_zeros if self.class_zeros and cell.points > 0 else 0.0


def lab_words(reason: str, lab_names: set) -> str:
    """A failure message as the class report quotes it: the lab's words, with what it quotes of a
    returned value replaced by ``…`` and a name the lab does not define said generically."""
    text = EARLIER.sub("", reason)
    text = RETURNED.sub(lambda m: f"{m.group(1)} …", text)
    named = NOT_DEFINED.match(text)
    if named and named.group(1) not in lab_names:
        text = "a function the task names" + text[named.end(1):]
    return text


def void_words(reason: str) -> str:
    """Why a submission could not be graded at all, by kind."""
    return next((words for start, words in VOID_KINDS if reason.startswith(start)), VOID_OTHERWISE)


def fault_kind(fault: str) -> str:
    """A grader fault by its kind: its words up to the first detail (no path, no message quoted)."""
    return ": ".join(fault.split(" (", 1)[0].split(": ")[:2])


def cell_failures(cell, lab_names: set) -> set[str]:
    """The distinct failure messages of one student's cell, as the report quotes them."""
    if cell.status == "void":
        return {void_words(cell.reason)}
    return {lab_words(r, lab_names) for r in cell.reasons if not MORE.match(r)}


def summarise_autograded(gid: str, worth: float, results: list[SubmissionGrade], lab_names: set) -> CellSummary:
    summary = CellSummary(gid, "autograded", worth, len(results))
    messages = Counter()
    for result in results:
        cell = next((c for c in result.cells if c.grade_id == gid), None)
        if cell is None:                       # no cell graded at all (a grader error): a zero
            cell = CellGrade(gid, worth, 0.0, "void", [result.error])
        hidden, visible = cell.status == "passed", cell.visible == "passed"
        summary.scored += 1
        summary.total_points += cell.score or 0.0
        summary.zeros += (cell.score or 0.0) == 0
        summary.hidden_passed += hidden
        summary.visible_passed += visible
        summary.visible_not_run += cell.visible not in ("passed", "failed", "")
        summary.visible_not_hidden += visible and not hidden
        summary.hidden_not_visible += hidden and not visible
        if not hidden:
            messages.update(cell_failures(cell, lab_names))
    summary.failures = sorted(messages.items(), key=lambda item: (-item[1], item[0]))
    return summary


def summarise_by_hand(gid: str, worth: float, students: list[str], grades: dict) -> CellSummary:
    """A written answer: its scores in the gradebook (``grades``: (student, cell) -> nbgrader Grade
    values), counted once graded (by hand, or 0 for an answer left as released)."""
    summary = CellSummary(gid, "by hand", worth, len(students))
    for student in students:
        score, waiting = grades.get((student, gid), (None, True))
        if score is None or waiting:
            continue
        summary.scored += 1
        summary.total_points += score
        summary.zeros += score == 0
    return summary


@dataclass
class Gradebook:
    """What the class report reads from nbgrader's gradebook, for the batch's students."""

    grades: dict            # (student, cell) -> (score, needs manual grade)
    totals: dict            # student -> total after the late penalty
    waiting: set            # students with an answer still to grade by hand
    late: list              # late.Late
    max_total: float


def read_gradebook(course: Path, lab: str, students: list[str]) -> Gradebook:
    from nbgrader.api import Gradebook as NbgraderGradebook, MissingEntry

    book = Gradebook({}, {}, set(), [], 0.0)
    with NbgraderGradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        book.max_total = gb.find_assignment(lab).max_score
        for student in students:
            try:
                submission = gb.find_submission(lab, student)
            except MissingEntry:
                continue
            for notebook in submission.notebooks:
                for grade in notebook.grades:
                    book.grades[(student, grade.name)] = (grade.score, bool(grade.needs_manual_grade))
            penalty = sum(nb.late_submission_penalty or 0.0 for nb in submission.notebooks)
            book.totals[student] = round(submission.score - penalty, 4)
            if submission.needs_manual_grade:
                book.waiting.add(student)
            found = late.recorded(submission)
            if found is not None:
                book.late.append(found)
    return book


def summarise(course: Path, lab: str) -> ClassReport:
    """The class report's numbers for ``lab`` of the course directory ``course``."""
    from attention_course_instructor.grading.hardened.executors import result_from_dict

    course = Path(course)
    results_path = course / "reports" / lab / RESULTS_NAME
    if not results_path.exists():
        raise FileNotFoundError(f"{results_path} does not exist: grade {lab} with the hardened grader first")
    results = [result_from_dict(r) for r in json.loads(results_path.read_text())]
    source = nbformat.read(course / "source" / lab / f"{lab}.ipynb", as_version=4)
    lab_names = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", "\n".join(c.source for c in source.cells)))
    graded = [r for r in results if not r.fault]
    students = [r.student for r in graded]
    book = read_gradebook(course, lab, students)
    cells = []
    for cell in source.cells:
        if not is_grade(cell):
            continue
        if is_autograded_test(cell):
            cells.append(summarise_autograded(grade_id(cell), points(cell), graded, lab_names))
        else:
            cells.append(summarise_by_hand(grade_id(cell), points(cell), students, book.grades))
    void = Counter(void_words(r.error) for r in graded if r.error)
    faults: dict = {}
    for r in results:
        if r.fault:
            faults.setdefault(fault_kind(r.fault), []).append(r.student)
    return ClassReport(lab, len(results), cells, [book.totals[s] for s in students if s in book.totals],
                       book.max_total, len(book.waiting), dict(void),
                       sorted(book.late, key=lambda x: (-x.seconds_late, x.student)), faults,
                       any(c.visible for r in graded for c in r.cells), time.strftime("%Y-%m-%d %H:%M"))


# ---- the files ---------------------------------------------------------------------------------------

CSV_COLUMNS = ["cell", "kind", "points", "submissions", "visible_passed", "visible_pass_rate",
               "visible_not_run", "hidden_passed", "hidden_pass_rate", "passed_visible_failed_hidden",
               "failed_visible_passed_hidden", "scored", "mean_points", "zero_scores",
               "zero_share", "share_of_class_zeros"]


def _number(value) -> str:
    return "" if value is None else f"{round(value, 6):g}"


def csv_rows(report: ClassReport) -> list[list[str]]:
    rows = []
    for c in report.cells:
        visible = [c.visible_passed, _number(c.visible_pass_rate), c.visible_not_run] \
            if report.visible_recorded else [""] * 3
        both = [c.visible_not_hidden, c.hidden_not_visible] if report.visible_recorded else [""] * 2
        auto = [*visible, c.hidden_passed, _number(c.hidden_pass_rate), *both] if c.autograded else [""] * 7
        rows.append([c.cell, c.kind, _number(c.points), c.submissions, *auto, c.scored,
                     _number(c.mean_points), c.zeros, _number(c.zero_share),
                     _number(report.zero_share_of_class(c))])
    return rows


def write_csvs(report: ClassReport, folder: Path) -> None:
    with open(folder / CSV_NAME, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(CSV_COLUMNS)
        writer.writerows(csv_rows(report))
    with open(folder / FAILURES_CSV_NAME, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["cell", "message", "submissions", "share"])
        for c in report.cells:
            for message, count in c.failures:
                writer.writerow([c.cell, message, count, _number(count / c.submissions)])


def _svg(fig, title: str, desc: str, key: str) -> str:
    """A matplotlib figure as inline SVG, named for assistive technology (role, title, desc)."""
    buffer = io.StringIO()
    fig.savefig(buffer, format="svg", metadata={"Date": None})
    text = buffer.getvalue()
    text = text[text.index("<svg"):]
    opening = text.index(">") + 1
    return (text[:opening - 1].replace("<svg", f'<svg role="img" aria-labelledby="{key}-title {key}-desc"', 1)
            + f'><title id="{key}-title">{html.escape(title)}</title><desc id="{key}-desc">'
            + f"{html.escape(desc)}</desc>" + text[opening:])


def _figure(width: float, height: float):
    """A figure of its own (no pyplot state), its SVG text kept as text and its ids stable."""
    import matplotlib
    from matplotlib.figure import Figure

    matplotlib.rcParams.update({"svg.fonttype": "none", "svg.hashsalt": "class-report"})
    return Figure(figsize=(width, height), layout="constrained")


def pass_rate_plot(report: ClassReport) -> str:
    cells = [c for c in report.cells if c.autograded]
    fig = _figure(7.5, 0.5 * len(cells) + 1.4)
    ax = fig.add_subplot()
    rows = range(len(cells))
    if report.visible_recorded:
        ax.barh([r - 0.2 for r in rows], [100 * c.visible_pass_rate for c in cells], height=0.38,
                color=VISIBLE_BLUE, label="visible checks passed")
    ax.barh([r + 0.2 for r in rows], [100 * c.hidden_pass_rate for c in cells], height=0.38,
            color=HIDDEN_ORANGE, hatch="//", edgecolor="white", label="hidden checks passed")
    ax.set_yticks(list(rows), [c.cell for c in cells])
    ax.invert_yaxis()
    ax.set_xlim(0, 100)
    ax.set_xlabel("% of graded submissions")
    ax.grid(axis="x", alpha=0.3)
    ax.legend(loc="lower right", fontsize=8)
    return _svg(fig, f"{report.lab}: visible and hidden checks passed, by cell",
                "For each autograded cell, two bars: the share of submissions that passed its "
                "visible checks and the share that passed its hidden checks. The numbers are in "
                "the table of graded cells.", "pass-rates")


def total_bins(report: ClassReport) -> list[tuple[float, float, int]]:
    """(low, high, count) bins of the totals: one point wide up to 40 points, else 20 bins; a bin
    holds low <= total < high, the last one its high end too."""
    top = max([report.max_total, *report.totals, 1.0])
    width = 1.0 if top <= 40 else top / 20
    edges = [i * width for i in range(int(top // width) + 1)]
    if edges[-1] < top:
        edges.append(edges[-1] + width)
    bins = []
    for low, high in zip(edges, edges[1:]):
        last = high == edges[-1]
        bins.append((low, high, sum(low <= t < high or (last and t == high) for t in report.totals)))
    return bins


def totals_plot(report: ClassReport, bins) -> str:
    fig = _figure(7.5, 3.2)
    ax = fig.add_subplot()
    ax.bar([low for low, _, _ in bins], [n for _, _, n in bins], width=[h - low for low, h, _ in bins],
           align="edge", color=VISIBLE_BLUE, edgecolor="white")
    ax.set_xlabel(f"total points (of {report.max_total:g}), after any late penalty")
    ax.set_ylabel("submissions")
    ax.grid(axis="y", alpha=0.3)
    return _svg(fig, f"{report.lab}: distribution of totals",
                "A histogram of the graded submissions' totals; its bins and counts are in the "
                "table below it.", "totals")


STYLE = """body{font-family:system-ui,sans-serif;max-width:62rem;margin:2rem auto;padding:0 1rem;
color:#1a1a1a;line-height:1.45}table{border-collapse:collapse;margin:0.5rem 0 1.5rem}
th,td{border:1px solid #999;padding:0.25rem 0.5rem;text-align:left;vertical-align:top}
td.n,th.n{text-align:right}caption{text-align:left;font-weight:600;padding:0.25rem 0}
figure{margin:1rem 0}svg{max-width:100%;height:auto}figcaption{font-size:0.95rem}
.wide{overflow-x:auto;max-width:100%}.wide:focus{outline:2px solid #0072B2}code{overflow-wrap:anywhere}"""


def _table(caption: str, header: list[str], rows: list[list], numeric: set[int] = frozenset()) -> str:
    head = "".join(f'<th scope="col"{" class=n" if i in numeric else ""}>{html.escape(h)}</th>'
                   for i, h in enumerate(header))
    body = "".join("<tr>" + "".join(
        (f'<th scope="row">{html.escape(str(v))}</th>' if i == 0 else
         f'<td{" class=n" if i in numeric else ""}>{html.escape(str(v))}</td>')
        for i, v in enumerate(row)) + "</tr>" for row in rows)
    # a wide table scrolls inside its own region (reachable by keyboard), never the page at 320 px
    return (f'<div class="wide" role="region" tabindex="0" aria-label="{html.escape(caption)}">'
            f"<table><caption>{html.escape(caption)}</caption><thead><tr>{head}</tr></thead>"
            f"<tbody>{body}</tbody></table></div>")


def _count(n: int, of: int) -> str:
    return f"{n} ({100 * n / of:.1f}%)" if of else str(n)


def _points(value) -> str:
    return "" if value is None else f"{value:.2f}"


def _visible_columns(report: ClassReport, cell: CellSummary, n: int) -> list[str]:
    """The visible checks' columns of a cell's row: passed, and the two disagreements."""
    if not report.visible_recorded:
        return ["not recorded"] * 3
    return [_count(cell.visible_passed, n), str(cell.visible_not_hidden), str(cell.hidden_not_visible)]


def render_html(report: ClassReport, names: bool = False) -> str:
    """The report as one accessible HTML page; student ids only when ``names``."""
    n, e = report.graded, html.escape
    auto = [c for c in report.cells if c.autograded]
    by_hand = [c for c in report.cells if not c.autograded]
    parts = [f"<h1>Class report: {e(report.lab)}</h1>",
             f"<p>{report.submissions} submissions in the last graded batch, {n} graded "
             f"({report.submissions - n} not graded: grader faults, below). Made {e(report.made)} "
             f"from <code>reports/{e(report.lab)}/{RESULTS_NAME}</code> and nbgrader's gradebook. "
             "Visible checks are the asserts the released notebook gave students, run on their "
             "answers: what they saw. Hidden checks are the lab's checks, which decide the points. "
             "Failure messages are the lab's own words; a value a message quotes from a student's "
             "answer is shown as …."
             + ("" if names else " No student is named in this report (<code>--names</code> names "
                "them).") + "</p>",
             "<h2>Submissions</h2>",
             _table("Submissions in the batch", ["submissions", "count"],
                    [["graded", n], *[[kind, count] for kind, count in sorted(report.void.items())],
                     ["late", len(report.late)], ["grader faults (not graded)", report.submissions - n]],
                    {1}),
             "<h2>Autograded cells</h2>",
             _table(f"Autograded cells of {report.lab}, over {n} graded submissions",
                    ["cell", "points", "visible checks passed", "hidden checks passed",
                     "passed visible, failed hidden", "failed visible, passed hidden", "mean points",
                     "zero scores", "share of the class's zeros"],
                    [[c.cell, f"{c.points:g}", *_visible_columns(report, c, n)[:1],
                      _count(c.hidden_passed, n), *_visible_columns(report, c, n)[1:],
                      _points(c.mean_points), _count(c.zeros, c.scored),
                      f"{100 * report.zero_share_of_class(c):.1f}%"] for c in auto], set(range(1, 9))),
             "<p>A submission that passed the visible checks and failed the hidden ones was told "
             "nothing was wrong; one that failed the visible checks and passed the hidden ones "
             "points to a case the hidden checks do not cover. Visible checks that were not run "
             "(the cell's hidden checks timed out or its kernel died) count as not passed"
             + (f" ({sum(c.visible_not_run for c in auto)} in all)." if report.visible_recorded else
                ". This batch was graded before the grader kept the visible checks' outcome: "
                "grade it again to see them.") + "</p>",
             f'<figure>{pass_rate_plot(report)}<figcaption>Figure 1. '
             + ("Visible (plain) and hidden (hatched)" if report.visible_recorded else "Hidden")
             + " checks passed, by cell, as a share of graded submissions; the numbers are in the "
             "table above.</figcaption></figure>"]
    if by_hand:
        parts += ["<h2>Written answers (graded by hand)</h2>",
                  _table(f"Written answers of {report.lab}", ["cell", "points", "graded so far",
                                                              "waiting", "mean points (graded)",
                                                              "zero scores (graded)"],
                         [[c.cell, f"{c.points:g}", _count(c.scored, n), n - c.scored,
                           _points(c.mean_points), _count(c.zeros, c.scored)] for c in by_hand],
                         set(range(1, 6))),
                  "<p>An answer left as released scores 0 without waiting for a grader.</p>"]
    parts.append("<h2>Most frequent failure messages</h2>")
    for c in auto:
        parts.append(f"<h3>{e(c.cell)}</h3>")
        if not c.failures:
            parts.append("<p>No submission failed this cell.</p>")
            continue
        shown = c.failures[:TOP_MESSAGES]
        more = len(c.failures) - len(shown)
        parts.append(_table(f"{c.cell}: the {len(shown)} most frequent of {len(c.failures)} messages "
                            "(a submission counts once per message)",
                            ["message", "submissions"], [[m, _count(k, n)] for m, k in shown], {1}))
        if more:
            parts.append(f"<p>{more} more in <code>{FAILURES_CSV_NAME}</code>.</p>")
    bins = total_bins(report)
    totals = report.totals
    if totals:
        quartiles = statistics.quantiles(totals, n=4) if len(totals) > 1 else [totals[0]] * 3
        summary = (f"Mean {statistics.fmean(totals):.2f}, median {statistics.median(totals):g}, "
                   f"quartiles {quartiles[0]:g} and {quartiles[2]:g}, lowest {min(totals):g}, highest "
                   f"{max(totals):g}, of {report.max_total:g} points.")
    else:
        summary = "No total is recorded yet."
    partial = (f" {report.partial_totals} totals are partial: a written answer is still waiting to be "
               "graded by hand." if report.partial_totals else "")
    parts += ["<h2>Totals</h2>",
              f"<p>Each graded submission's total in the gradebook (autograded and hand-graded "
              f"points, less any late penalty), as <code>nbgrader export</code> gives it. "
              f"{summary}{partial}</p>",
              f'<figure>{totals_plot(report, bins)}<figcaption>Figure 2. Distribution of totals; '
              "the bins are in the table below.</figcaption></figure>",
              _table("Totals by bin (low included, high excluded except in the last bin)",
                     ["points", "submissions"], [[f"{lo:g} to {hi:g}", k] for lo, hi, k in bins], {1}),
              f"<h2>Late submissions ({len(report.late)})</h2>"]
    if report.late:
        rows = [[x.student if names else str(i), x.late_by, f"{x.extension_hours:g}",
                 f"{x.penalty:g}"] for i, x in enumerate(report.late, start=1)]
        parts += ["<p>Late after any extension, latest first; the penalty is the course's late "
                  "policy.</p>",
                  _table("Late submissions", ["student" if names else "late submission", "late by (h:mm:ss)",
                                              "extension (hours)", "points deducted"], rows, {1, 2, 3})]
    else:
        parts.append("<p>None.</p>")
    fault_count = sum(len(s) for s in report.faults.values())
    parts.append(f"<h2>Grader faults ({fault_count})</h2>")
    if report.faults:
        header = ["fault", "submissions"] + (["students"] if names else [])
        rows = [[kind, len(students)] + ([", ".join(students)] if names else [])
                for kind, students in sorted(report.faults.items())]
        parts += ["<p>Not the students' doing: no score was recorded for them. Fix the cause and "
                  "grade the lab again; <code>report.md</code> has each fault in full.</p>",
                  _table("Grader faults by kind", header, rows, {1})]
    else:
        parts.append("<p>None.</p>")
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>Class report: {e(report.lab)}</title><style>{STYLE}</style></head>"
            f"<body><main>{''.join(parts)}</main></body></html>\n")


def write(course: Path, lab: str, names: bool = False) -> Path:
    """Write the class report of ``lab`` (HTML and CSVs) into ``reports/<lab>/``; returns the HTML."""
    report = summarise(course, lab)
    folder = Path(course) / "reports" / lab
    write_csvs(report, folder)
    path = folder / HTML_NAME
    path.write_text(render_html(report, names))
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("labs", nargs="+", metavar="lab", help="the assignment, e.g. lab8")
    parser.add_argument("--course", type=Path, default=Path.cwd(), help="the course directory")
    parser.add_argument("--names", action="store_true",
                        help="name the students of late submissions and grader faults")
    args = parser.parse_args(argv)
    for lab in args.labs:
        try:
            path = write(args.course.resolve(), lab, args.names)
        except FileNotFoundError as error:
            print(error, file=sys.stderr)
            return 2
        print(f"{lab}: class report in {path} (and {CSV_NAME}, {FAILURES_CSV_NAME})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
