"""Stage 1 of hardened grading: the notebook that runs, rebuilt from the instructor's source.

Only the student's *solution* cells are taken from the submission (matched by nbgrader
``grade_id``, else by cell id), plus the code cells they added; every test, locked cell, point
value and cell type comes from the source, and nothing of the submission's outputs or metadata is
trusted. Differences are recorded as flags; changes that would alter grading fail closed.
"""
from __future__ import annotations

import ast
import os
import stat
from pathlib import Path

import nbformat

from attention_course_instructor.grading import student_code
from attention_course_instructor.grading.checks import Lab, check_seed
from attention_course_instructor.grading.hardened.probes import prelude, probe_cell, visible_cell
from attention_course_instructor.grading.notebook import (Matching, grade_id, is_autograded_test, is_grade,
                                                          is_locked, is_solution, match_submission,
                                                          nbgrader_meta, released_test_source)


class SubmissionError(Exception):
    """The submission cannot be graded at all (unreadable, missing, wrong name)."""


def link_on_path(path: Path, root: Path) -> str:
    """Why the notebook ``path`` (below ``root``, the course's ``submitted/``) must not be read:
    a symbolic link anywhere from ``root`` down to it (the student's folder, the lab's folder, the
    notebook), a notebook that is a hard link (one file under two names: a way to hand in a file
    that is someone else's), or something that is not a file. "" when nothing is wrong (or the
    notebook is simply missing: :func:`read_submission` says so)."""
    try:
        parts = path.relative_to(root).parts
    except ValueError:
        return ""                                   # not a submission (the control, say)
    current = root
    for depth, part in enumerate(parts, start=1):
        current = current / part
        shown = "/".join(parts[:depth])
        try:
            info = os.lstat(current)
        except FileNotFoundError:
            return ""
        if stat.S_ISLNK(info.st_mode):
            return f"{shown} is a symbolic link, which grading never follows: refused"
        if depth < len(parts) and not stat.S_ISDIR(info.st_mode):
            return f"{shown} is not a folder: refused"
        if depth == len(parts) and not stat.S_ISREG(info.st_mode):
            return f"{shown} is not a regular file: refused"
        if depth == len(parts) and info.st_nlink > 1:
            return f"{shown} is a hard link (one file under {info.st_nlink} names): refused"
    return ""


def read_regular_file(path: Path, limit: int | None = None) -> bytes:
    """The bytes of ``path`` if it is a regular file that is not a link (``OSError`` otherwise),
    read through one descriptor, so that it cannot be swapped for a link between check and read."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{path.name} is not a regular file")
        with os.fdopen(fd, "rb", closefd=False) as handle:
            return handle.read() if limit is None else handle.read(limit)
    finally:
        os.close(fd)


def read_submission(path: Path) -> nbformat.NotebookNode:
    """The submitted notebook, or a SubmissionError saying what is wrong with it (a link is
    never followed)."""
    if not os.path.lexists(path):
        folder = path.parent
        found = sorted(p.name for p in folder.glob("*.ipynb")) if folder.exists() else []
        hint = f"; found {found}" if found else ""
        raise SubmissionError(f"no notebook {path.name} in the submission{hint}")
    try:
        data = read_regular_file(path)
    except OSError:
        raise SubmissionError(f"{path.name} is a link or not a regular file: refused") from None
    try:
        nb = nbformat.reads(data.decode("utf-8"), as_version=4)
    except Exception as exc:                    # corrupt JSON, not a notebook, bad encoding
        raise SubmissionError(f"{path.name} is not a readable notebook ({type(exc).__name__})") from None
    if not isinstance(nb.get("cells"), list):
        raise SubmissionError(f"{path.name} has no cells")
    return nb


def assemble(source: nbformat.NotebookNode, student: nbformat.NotebookNode, lab: Lab, seed: int,
             matching: Matching | None = None):
    """The cells to run, what each one is, and what was found changed in the submission.

    Returns ``(sources, roles, flags, tampered)``: ``roles[i]`` is ``("prelude"|"run"|"solution"|
    "extra"|"probe"|"visible", grade_id)``; ``tampered`` lists changes that make a submission fail
    closed. The visible cells (each autograded cell's released asserts) come last, after every
    probe, so that nothing they do reaches a score.
    """
    matching = matching or match_submission(source, student)
    flags = [f"duplicate cell {gid!r} ignored" for gid in matching.duplicates]
    sources, roles, tampered = [prelude(lab)], [("prelude", "")], []
    for index, cell, theirs in matching.pairs():
        gid = grade_id(cell)
        flags += _differences(cell, theirs, tampered)
        for anchor, added in matching.added.get(index, []):
            sources.append(added.source)
            roles.append(("extra", anchor))
        if cell.cell_type != "code":
            continue
        if is_solution(cell):
            sources.append(theirs.source if (theirs is not None and theirs.cell_type == "code") else "")
            roles.append(("solution", gid))
        elif is_grade(cell):
            if gid not in lab.checks:
                raise KeyError(f"source/{lab.name}/checks.py has no check for graded cell {gid!r}")
            sources.append(probe_cell(gid, check_seed(seed, gid)))
            roles.append(("probe", gid))
        elif gid in lab.run_cells:
            sources.append(cell.source)
            roles.append(("run", gid))
    for anchor, added in matching.added.get(len(source.cells), []):
        sources.append(added.source)
        roles.append(("extra", anchor))
    for cell in source.cells:
        if is_autograded_test(cell):
            sources.append(visible_cell(grade_id(cell), released_test_source(cell.source)))
            roles.append(("visible", grade_id(cell)))
    source_ids = {grade_id(c) for c in source.cells}
    tampered += [f"graded cell {grade_id(c)!r} is not in the assignment" for c in student.cells
                 if is_grade(c) and grade_id(c) not in source_ids]
    if matching.added_count:
        flags.append(f"{matching.added_count} code cell(s) you added were run too")
    return sources, roles, flags, tampered


def _differences(cell, theirs, tampered: list) -> list[str]:
    """What the student changed in one source cell (flags); a change that would alter grading is
    appended to ``tampered``."""
    gid, meta = grade_id(cell), nbgrader_meta(cell)
    if theirs is None:
        return [f"cell {gid!r} missing: {'restored' if not is_solution(cell) else 'left empty'}"]
    flags = []
    if nbgrader_meta(theirs):
        for key, role in (("solution", is_solution), ("grade", is_grade)):
            if role(theirs) != role(cell):
                tampered.append(f"cell {gid!r}: nbgrader flag {key!r} changed")
        if is_grade(cell) and nbgrader_meta(theirs).get("points") != meta.get("points"):
            flags.append(f"cell {gid!r}: points edited; the instructor's {meta.get('points')} used")
        if theirs.cell_type != cell.cell_type:
            flags.append(f"cell {gid!r}: type changed to {theirs.cell_type}; restored")
        elif is_locked(cell) and not is_grade(cell) and theirs.source != cell.source:
            flags.append(f"locked cell {gid!r} edited; restored")
        elif is_autograded_test(cell) and theirs.source.strip() != released_test_source(cell.source).strip():
            flags.append(f"test cell {gid!r} edited; the instructor's tests used")
    else:
        flags.append(f"cell {gid!r}: nbgrader metadata removed; matched by cell id")
    if cell.cell_type == "code" and is_grade(cell) and any(o for o in theirs.get("outputs", [])):
        flags.append(f"outputs of {gid!r} discarded before running")
    return flags


def answer_imports(cell_source: str) -> list[str]:
    """Modules and names an answer cell imports (``module`` or ``module.name``); unparsable cells
    give nothing (they fail when run)."""
    tree = student_code.parse(cell_source)
    if tree is None:
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
    graded = {n for c in source.cells if is_solution(c) and c.cell_type == "code"
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
    tree = student_code.parse(code)
    return [] if tree is None else [n.name for n in tree.body if isinstance(n, ast.FunctionDef)]
