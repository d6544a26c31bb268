"""A similarity report for a class: every submission's answers against each other's and the course's.

``python -m attention_course_instructor.grading.similarity lab12`` (in the course directory)
writes ``reports/<lab>/similarity.html`` and ``similarity.csv``. With copydetect (winnowed
fingerprints of the tokenised code, in which names become placeholders, so renamed variables
and moved lines still match; it runs here, nothing leaves the machine):

- **the answers** of each submission (``submitted/<student>/<lab>/*.ipynb``): the code of its
  answer cells, by nbgrader's cell roles (:func:`~attention_course_instructor.grading.notebook.is_solution`),
  are compared with every other submission's;
- **and with the course's own code that students can read**: the student package
  (``attention_course/``) and the code cells of the book's pages, several of which teach
  near-equivalents of a lab's tasks (``core/transformer.attention``, ``notes/tokens.train_bpe``);
  such a match is reported as its own kind, for the instructor to read, not as copying;
- **the released notebook is boilerplate**: the code every student was given (the answer cells'
  stubs, signatures and docstrings) is not counted as a match.

Before fingerprinting, every piece of code is normalised (:func:`normalised`): parsed, its
comments and layout dropped, and every statement that does nothing removed (``pass`` where a body
has others, a bare constant, string or name, ``x = x``, ``if False:``, ``assert True``), so that
padding a copy with such statements does not dilute it. Code that does not parse (IPython's
``%magic``, say) is compared as written. The report shows the code as compared.

copydetect hashes its k-grams with Python's ``hash()``, salted anew in every process
(``PYTHONHASHSEED``), which moved every share by 0.01-0.02 from one run to the next, and lists a
folder's files in an order that follows the same seed; the comparison runs with a stable hash
(:func:`stable_fingerprints`) over sorted files, so the same submissions always give the same
report.

A pair is listed when either side's share of matching code reaches ``--threshold`` (default 0.5,
copydetect's "similarity" of that side). The report is for an instructor to read: a high score is
a reason to look, never a verdict.
"""
from __future__ import annotations

import argparse
import ast
import csv
import hashlib
import sys
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import nbformat
import numpy as np

from attention_course_instructor import paths
from attention_course_instructor.grading import student_code
from attention_course_instructor.grading.notebook import is_solution

THRESHOLD = 0.5
NOISE, GUARANTEE = 25, 30              # copydetect's k-gram length and window (tokens, filtered)
STUDENT_PACKAGE = paths.REPO / "attention_course"
BOOK = paths.REPO / "book"


@dataclass(frozen=True)
class Match:
    """One listed pair: ``student`` against ``other`` (a student, or a course file), with the share
    of each side's fingerprints found in the other."""
    student: str
    other: str
    kind: str                      # "student" or "course"
    student_share: float
    other_share: float
    tokens: int


class _DropNoOps(ast.NodeTransformer):
    """Removes the statements that do nothing (see the module note) from every body."""

    def generic_visit(self, node):
        super().generic_visit(node)
        for name in ("body", "orelse", "finalbody"):
            body = getattr(node, name, None)
            if isinstance(body, list) and body and isinstance(body[0], ast.stmt):
                kept = [s for stmt in body for s in self._kept(stmt)]
                setattr(node, name, kept or ([ast.Pass()] if name == "body" else []))
        return node

    @staticmethod
    def _kept(stmt) -> list:
        if isinstance(stmt, ast.Pass):
            return []
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, (ast.Constant, ast.Name)):
            return []
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and \
                isinstance(stmt.targets[0], ast.Name) and isinstance(stmt.value, ast.Name) and \
                stmt.targets[0].id == stmt.value.id:
            return []
        if isinstance(stmt, (ast.If, ast.While)) and isinstance(stmt.test, ast.Constant):
            if not stmt.test.value:
                return stmt.orelse if isinstance(stmt, ast.If) else []
            return stmt.body if isinstance(stmt, ast.If) else [stmt]
        if isinstance(stmt, ast.Assert) and isinstance(stmt.test, ast.Constant) and stmt.test.value:
            return []
        return [stmt]


def normalised(code: str) -> str:
    """``code`` as the report compares it: without comments, layout or statements that do nothing;
    as written when it does not parse."""
    tree = student_code.parse(code)
    if tree is None:
        return code
    return ast.unparse(ast.fix_missing_locations(_DropNoOps().visit(tree)))


def stable_kgram_hashes(string: str, k: int) -> np.ndarray:
    """copydetect's ``hashed_kgrams`` with a hash that is the same in every process (BLAKE2b)."""
    data = string.encode("utf-32-le")                  # one code point, four bytes
    return np.array([int.from_bytes(hashlib.blake2b(data[4 * i:4 * (i + k)], digest_size=8).digest(),
                                    "little", signed=True) for i in range(len(string) - k + 1)],
                    dtype=np.int64)


@contextmanager
def stable_fingerprints():
    """copydetect's fingerprints with :func:`stable_kgram_hashes` while the block runs."""
    import copydetect.utils

    original = copydetect.utils.hashed_kgrams          # copydetect 0.5: get_document_fingerprints'
    copydetect.utils.hashed_kgrams = stable_kgram_hashes   # one hash function, looked up per call
    try:
        yield
    finally:
        copydetect.utils.hashed_kgrams = original


def answer_code(notebook: Path) -> str:
    """The code of a notebook's answer cells, normalised, each headed by its cell id (for the report)."""
    nb = nbformat.read(notebook, as_version=4)
    parts = [f"# cell {cell.get('id', '?')}\n{normalised(cell.source)}\n" for cell in nb.cells
             if cell.cell_type == "code" and is_solution(cell) and cell.source.strip()]
    return "\n".join(parts)


def submissions(course: Path, lab: str) -> dict[str, list[Path]]:
    """Each student's submitted notebooks of ``lab``."""
    found = {}
    for folder in sorted((course / "submitted").glob(f"*/{lab}")):
        notebooks = sorted(folder.glob("*.ipynb"))
        if notebooks:
            found[folder.parent.name] = notebooks
    return found


def course_code(package: Path = STUDENT_PACKAGE, book: Path = BOOK) -> dict[str, str]:
    """What students can read: the student package's modules and the book pages' code cells, by
    name (``attention_course/core/transformer.py``, ``book/chapter8/self-attention.md``)."""
    import jupytext

    code = {}
    for module in sorted(package.rglob("*.py")):
        code[str(module.relative_to(package.parent))] = normalised(module.read_text())
    for page in sorted(book.rglob("*.md")):
        if "kernelspec:" not in page.read_text().split("\n---", 1)[0]:
            continue
        cells = jupytext.read(page).cells
        code[str(page.relative_to(book.parent))] = "\n\n".join(
            normalised(cell.source) for cell in cells if cell.cell_type == "code")
    return code


def _write(folder: Path, name: str, text: str) -> Path:
    path = folder / (name.replace("/", "__") + ".py")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def compare(course: Path, lab: str, out: Path, threshold: float = THRESHOLD,
            readable: dict[str, str] | None = None) -> list[Match]:
    """Compare every submission of ``lab`` in ``course`` (see the module's docstring); write the
    HTML and CSV reports into ``out`` and return the listed pairs, highest share first."""
    from copydetect import CopyDetector

    students = submissions(course, lab)
    if len(students) < 1:
        raise FileNotFoundError(f"no submissions of {lab} under {course / 'submitted'}")
    released = sorted((course / "labs" / lab).glob("*.ipynb")) or \
        sorted((course / "release" / lab).glob("*.ipynb"))
    if not released:
        raise FileNotFoundError(f"the released {lab} notebook is needed as boilerplate: "
                                f"none under {course / 'labs' / lab}")
    readable = course_code() if readable is None else {n: normalised(t) for n, t in readable.items()}
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="similarity-") as scratch:
        scratch = Path(scratch)
        origin = {}
        for student, notebooks in students.items():
            path = _write(scratch / "students" / student, lab,
                          "\n".join(answer_code(nb) for nb in notebooks))
            origin[str(path)] = (student, "student")
        for name, text in readable.items():
            origin[str(_write(scratch / "course", name, text))] = (name, "course")
        for notebook in released:            # every cell handed out, answers' stubs included
            nb = nbformat.read(notebook, as_version=4)
            _write(scratch / "released", notebook.stem,
                   "\n\n".join(normalised(c.source) for c in nb.cells if c.cell_type == "code"))
        detector = CopyDetector(
            test_dirs=[str(scratch / "students")],
            ref_dirs=[str(scratch / "students"), str(scratch / "course")],
            boilerplate_dirs=[str(scratch / "released")], extensions=["py"],
            noise_t=NOISE, guarantee_t=GUARANTEE, display_t=threshold, autoopen=False,
            silent=True, out_file=str(out / "similarity.html"))
        # copydetect lists the files of a folder through a set (an order that follows the hash
        # seed), and which of a pair it compares first decides the pair's token count: sort them
        for files in ("test_files", "ref_files", "boilerplate_files"):
            setattr(detector, files, sorted(getattr(detector, files)))
        with stable_fingerprints():
            detector.run()
        matches = _listed(detector, origin, threshold)
        if matches:
            _report_on_own_figures(detector)
        else:
            (out / "similarity.html").write_text(
                f"<!DOCTYPE html><title>{lab}: similarity</title><p>No pair of {lab}'s "
                f"{len(students)} submissions, and none with the course's code, reaches "
                f"{threshold:.0%}.</p>")
    _write_csv(out / "similarity.csv", matches)
    return matches


def _report_on_own_figures(detector) -> None:
    """copydetect's HTML report draws with pyplot's current figure: set the caller's open figures
    aside while it runs (one made with another layout engine makes its colorbar fail), then put
    them back."""
    import matplotlib.pyplot as plt
    from matplotlib._pylab_helpers import Gcf

    theirs = dict(Gcf.figs)
    Gcf.figs.clear()
    try:
        detector.generate_html_report()
    finally:
        plt.close("all")
        Gcf.figs.update(theirs)


def _listed(detector, origin: dict, threshold: float) -> list[Match]:
    """The pairs at or above ``threshold``, each once, in an order that depends on nothing but the
    shares and the names (copydetect's own order of files does not)."""
    matrix, overlap = detector.similarity_matrix, detector.token_overlap_matrix
    tests = sorted(range(len(detector.test_files)), key=lambda i: origin[detector.test_files[i]])
    refs = sorted(range(len(detector.ref_files)), key=lambda j: origin[detector.ref_files[j]])
    seen, matches = set(), []
    for i in tests:
        for j in refs:
            share, other_share = matrix[i, j]
            if share < 0 or max(share, other_share) < threshold:
                continue
            (student, _), (other, kind) = origin[detector.test_files[i]], origin[detector.ref_files[j]]
            if student == other or frozenset((student, other)) in seen:
                continue
            seen.add(frozenset((student, other)))
            matches.append(Match(student, other, kind, round(float(share), 3),
                                 round(float(other_share), 3), int(overlap[i, j])))
    return sorted(matches, key=lambda m: (-max(m.student_share, m.other_share), m.student, m.other))


def _write_csv(path: Path, matches: list[Match]) -> None:
    with open(path, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["student", "matches", "kind", "student_share", "other_share", "tokens"])
        for m in matches:
            writer.writerow([m.student, m.other, m.kind, m.student_share, m.other_share, m.tokens])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("lab", help="the assignment, e.g. lab12")
    parser.add_argument("--course", type=Path, default=Path.cwd(), help="the course directory")
    parser.add_argument("--threshold", type=float, default=THRESHOLD,
                        help="list a pair when either side's matching share reaches this")
    args = parser.parse_args(argv)
    out = args.course / "reports" / args.lab
    try:
        matches = compare(args.course, args.lab, out, args.threshold)
    except FileNotFoundError as error:
        sys.exit(str(error))
    print(f"{len(matches)} pair(s) at or above {args.threshold:.0%}: {out / 'similarity.html'}")
    for m in matches:
        print(f"  {m.student} ~ {m.other} ({m.kind}): {m.student_share:.0%} / {m.other_share:.0%}")


if __name__ == "__main__":
    main()
