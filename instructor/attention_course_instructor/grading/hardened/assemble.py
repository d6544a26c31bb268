"""Stage 1 of hardened grading: the notebook that runs, rebuilt from the instructor's source.

Only the student's *solution* cells are taken from the submission (matched by nbgrader
``grade_id``, else by cell id), plus the code cells they added; every test, locked cell, point
value and cell type comes from the source, and nothing of the submission's outputs or metadata is
trusted. Differences are recorded as flags; changes that would alter grading fail closed.
"""
from __future__ import annotations

import ast
from pathlib import Path

import nbformat

from attention_course_instructor.grading.checks import Lab
from attention_course_instructor.grading.hardened.probes import prelude, probe_cell
from attention_course_instructor.grading.pipeline import HIDDEN_BEGIN, HIDDEN_END


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


def assemble(source: nbformat.NotebookNode, student: nbformat.NotebookNode, lab: Lab, seed: int):
    """The cells to run, what each one is, and what was found changed in the submission.

    Returns ``(sources, roles, flags, tampered)``: ``roles[i]`` is ``("prelude"|"run"|"solution"|
    "probe", grade_id)``; ``tampered`` lists changes that make a submission fail closed.
    """
    mine, mine_by_id, flags = _index(student.cells)
    sources, roles, tampered = [prelude(lab)], [("prelude", "")], []
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
            if gid not in lab.checks:
                raise KeyError(f"source/{lab.name}/checks.py has no check for graded cell {gid!r}")
            sources.append(probe_cell(gid, seed))
            roles.append(("probe", gid))
        elif gid in lab.run_cells:
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


def answer_imports(cell_source: str) -> list[str]:
    """Modules and names an answer cell imports (``module`` or ``module.name``); unparsable cells
    give nothing (they fail when run)."""
    try:
        tree = ast.parse(cell_source)
    except SyntaxError:
        return []
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            found += [f"{node.module}.{a.name}" for a in node.names]
    return found


def import_notes(source: nbformat.NotebookNode, sources: list, roles: list, lab: Lab) -> list[str]:
    """Report lines for answer cells that import a graded function's name from the course package,
    or a shortcut the lab's checks name for a task (a library or building block that does it)."""
    graded = {n for c in source.cells if nbgrader_meta(c).get("solution") and c.cell_type == "code"
               for n in _defined_functions(c.source)}
    shortcuts = {s for names in lab.shortcuts.values() for s in names}
    notes = []
    for src, (role, gid) in zip(sources, roles):
        if role not in ("solution", "extra"):
            continue
        for name in answer_imports(src):
            leaf = name.rsplit(".", 1)[-1]
            if name.startswith("attention_course") and leaf in graded:
                notes.append(f"answer cell {gid!r} imports {name} from the course package")
            elif any(name == s or name.startswith(s + ".") or leaf == s for s in shortcuts):
                notes.append(f"answer cell {gid!r} imports {name}, which does a graded task's work")
    return notes


def _defined_functions(code: str) -> list[str]:
    try:
        return [n.name for n in ast.parse(code).body if isinstance(n, ast.FunctionDef)]
    except SyntaxError:
        return []
