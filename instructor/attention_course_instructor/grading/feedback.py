"""The feedback page a student fetches: nbgrader's, with two things changed (``nbgrader_config.py``
selects :class:`CourseFeedbackExporter` for ``generate_feedback``).

- nbgrader's list of scores at the top names every autograded cell "Test cell"; here each entry is
  named by the task the cell belongs to, the nearest heading above it ("Task 6: the attention map:
  checks").
- On the course hub (``JUPYTERHUB_BASE_URL`` and ``COURSE_SUBMISSIONS_URL`` set, as on every
  server there), each entry also links to the student's regrade page for that task, through the
  hub's ``user-redirect`` (the reader's own server: ``deploy/hub/regrade_requests.py``).
- JupyterLab opens an HTML file *untrusted*: it shows it without running its scripts until one
  presses "Trust HTML". Nothing on this page needs a script, so none is kept (formulas stay as TeX).
"""
from __future__ import annotations

import html
import os
import re
from urllib.parse import urlencode

from nbconvert.exporters import HTMLExporter

SCRIPT = re.compile(r"<script\b.*?</script\s*>", re.IGNORECASE | re.DOTALL)


def task_names(nb) -> dict[str, str]:
    """grade_id -> "<task heading>: <what the cell is>", for every graded or task cell; where one
    task has several, each also says which ("Task 1: scores and weights over the columns: checks
    of task1 scores")."""
    found, heading = [], ""
    for cell in nb.cells:
        if cell.cell_type == "markdown" and cell.source.lstrip().startswith("#"):
            heading = POINTS.sub("", cell.source.lstrip().splitlines()[0].lstrip("#")).strip()
        meta = cell.metadata.get("nbgrader", {})
        if not (meta.get("grade") or meta.get("task")) or not meta.get("grade_id"):
            continue
        if meta.get("grade") and not meta.get("solution"):
            kind = "checks"
        elif meta.get("task"):
            kind = "task"
        else:
            kind = "your code" if cell.cell_type == "code" else "your written answer"
        found.append((meta["grade_id"], heading or meta["grade_id"], kind))
    per_heading = {}
    for _, heading, _ in found:
        per_heading[heading] = per_heading.get(heading, 0) + 1
    names = {}
    for grade_id, heading, kind in found:
        part = re.sub(r"_(test|tests|answer|solution)$", "", grade_id).replace("_", " ")
        names[grade_id] = f"{heading}: {kind}" + (f" ({part})" if per_heading[heading] > 1 else "")
    return names


POINTS = re.compile(r"\s*\([^()]*points?[^()]*\)\s*$")   # "(6 points, autograded)" after a heading


def named_scores(page: str, nb) -> str:
    """nbgrader's list of scores with each entry named by its task."""
    for grade_id, name in task_names(nb).items():
        anchor = re.escape(f'<a href="#{grade_id}">')
        page = re.sub(anchor + r"(Test cell|Coding free-response|Written response|Task)</a>",
                      f'<a href="#{html.escape(grade_id)}">{html.escape(name)}</a>', page)
    return page


SCORE_ENTRY = re.compile(r'(<li><a href="#([^"]+)">[^<]*</a> \(Score: [^)]*\))</li>')


def regrade_links(page: str, assignment: str, hub_base: str) -> str:
    """A link after every score of the list, to ask for a regrade of that task."""
    def link(found):
        query = urlencode({"assignment": assignment, "task": html.unescape(found.group(2))})
        href = f"{hub_base.rstrip('/')}/hub/user-redirect/course-regrade?{query}"
        return f'{found.group(1)} <a href="{html.escape(href)}">Ask for a regrade of this task</a></li>'
    return SCORE_ENTRY.sub(link, page)


class CourseFeedbackExporter(HTMLExporter):
    """nbgrader's feedback exporter (HTML with its ``feedback`` template), see the module note."""

    def from_notebook_node(self, nb, resources=None, **kw):
        page, resources = super().from_notebook_node(nb, resources, **kw)
        page = named_scores(page, nb)
        assignment = (resources or {}).get("nbgrader", {}).get("assignment")
        if assignment and os.environ.get("JUPYTERHUB_BASE_URL") and os.environ.get("COURSE_SUBMISSIONS_URL"):
            page = regrade_links(page, assignment, os.environ["JUPYTERHUB_BASE_URL"])
        return SCRIPT.sub("", page), resources
