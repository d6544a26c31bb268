"""Reading the student edition as an attacker would: does any file give away an answer?

:func:`secrets` collects, from the instructor's side of the repository, what must never reach a
student: every line of every lab's reference solutions (the code between the solution markers and
the model written answers), nbgrader's hidden-test markers and the lines of the hidden tests, every
line of each lab's ``checks.py``, and the names that exist only in the references and checks.
:func:`find_leaks` reads every file of a folder -- HTML with its tags removed, notebooks cell by
cell, JSON and the search index with their escapes undone, and every member of every wheel or zip
-- and reports each secret it finds, where. ``make edition`` refuses to finish on any finding;
``tests/test_student_edition.py`` runs it on the edition and on planted leaks.

Lines are compared with their whitespace collapsed. Short lines (``return x``) and lines that the
released notebook itself shows (its boilerplate, its visible checks) say nothing and are left out;
so are lines that only import, and names that the public sources (the release, the student
package, the book's pages) use anyway.

A model answer can also be given away in other words. Every run of :data:`RUN_WORDS` or more words
(lower-cased, punctuation dropped) that a file shares with a model answer -- a written answer, or
the prose comments of a code answer -- is reported as a paraphrase, wherever it is, the book's PDF
included. Runs that the released notebook itself holds (the question's own words) and runs of
mostly function words ("one of the two") are not. Text that says the same thing with no five
words in common is not found: that a page which discusses a lab's answers is published only once
the lab's feedback is out (``edition.yml``, :mod:`~attention_course_instructor.book.edition`) is
what protects those answers there.

Some of what a lab asks for, a chapter teaches first, with code in the student package that the
page runs. Those overlaps are allowed only where :data:`TAUGHT_IN_THE_BOOK` names them (the lab's
task, the package's module and the page): the instructor guide lists the same table, so the claim
"the package holds no graded function" is made with its exceptions named.
"""
from __future__ import annotations

import ast
import functools
import html
import io
import json
import re
import shutil
import subprocess
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

from attention_course_instructor.grading.notebook import (MARKERS, cell_parts, grade_id, is_grade,
                                                          is_solution)

MIN_CHARS = 24                           # a shorter line is too generic to be an answer
RUN_WORDS = 5                            # this many words in a row shared with a model answer
RUN_CONTENT_WORDS = 2                    # ... of which at least this many are not function words
HIDDEN_MARKERS = MARKERS[:2]             # nbgrader's hidden-test markers
# names of the hidden tests' machinery that no student file has any reason to hold
INSTRUCTOR_NAMES = ("run_hidden_check", "COURSE_CHECKS_DIR", "reference_namespace")

# (lab, graded answer cell) -> (the student package's module that holds a near-equivalent, the
# page that teaches it and runs that code). Solution lines of that cell found in that module are
# what the book shows; anywhere else they are leaks.
TAUGHT_IN_THE_BOOK = {
    ("lab8", "task3_solution"): ("attention_course/core/seq2seq.py",
                                 "book/chapter8/attention-over-states.md"),
    ("lab12", "task1_solution"): ("attention_course/notes/tokens.py", "book/chapter12/tokens.md"),
    ("lab12", "task2_solution"): ("attention_course/core/transformer.py",
                                  "book/chapter8/self-attention.md"),
    ("lab12", "task3_solution"): ("attention_course/core/char_decoder.py",
                                  "book/chapter12/decoding.md"),
    ("lab12", "task5_solution"): ("attention_course/core/char_decoder.py",
                                  "book/chapter12/decoding.md"),
}
_TAG = re.compile(r"<[^>]+>")
_IMPORT = re.compile(r"^(from \S+ )?import ")
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_INNER_APOSTROPHE = re.compile(r"(?<=\w)['\u2019](?=\w)")
_RUN_WORD = re.compile(r"[a-z0-9]+")
TEXT_SUFFIXES = {".html", ".htm", ".js", ".json", ".ipynb", ".md", ".txt", ".py", ".css", ".cfg",
                 ".toml", ".yml", ".yaml", ".cff", ".inv", ".xml", ".svg", ""}
ARCHIVES = {".whl", ".zip"}


def normalise(line: str) -> str:
    return " ".join(line.split())


def words(text: str) -> list[str]:
    """The words of ``text`` as runs are compared: lower case, punctuation dropped (``reader's``
    reads ``readers``)."""
    return _RUN_WORD.findall(_INNER_APOSTROPHE.sub("", text.lower()))


def windows(text: str) -> set[tuple[str, ...]]:
    """Every run of :data:`RUN_WORDS` words of ``text`` that says something: at least
    :data:`RUN_CONTENT_WORDS` of them are not function words."""
    found = words(text)
    runs = {tuple(found[i:i + RUN_WORDS]) for i in range(len(found) - RUN_WORDS + 1)}
    return {run for run in runs if sum(w not in ENGLISH_STOP_WORDS for w in run) >= RUN_CONTENT_WORDS}


def prose_comments(lines: list[str]) -> str:
    """The comments of code lines that read as prose (``# the last token this window predicts``),
    not the shape notes (``# (B, h, N, d/h)``) that say nothing about an answer."""
    said = []
    for line in lines:
        comment = line.split("#", 1)[1] if "#" in line else ""
        tokens = comment.split()
        if tokens and sum(t.strip(".,:;()").isalpha() and len(t) > 2 for t in tokens) / len(tokens) >= 0.6:
            said.append(comment)
    return "\n".join(said)


@dataclass
class Secrets:
    """What must never reach a student, each with where it comes from ("source/lab8/lab8.ipynb,
    task1_solution, solution"; "source/lab8/checks.py")."""
    lines: dict[str, str] = field(default_factory=dict)      # normalised line -> origin
    markers: tuple[str, ...] = HIDDEN_MARKERS
    names: dict[str, str] = field(default_factory=dict)      # identifier -> origin
    runs: dict[tuple[str, ...], str] = field(default_factory=dict)   # a model answer's words -> origin


@dataclass(frozen=True)
class Leak:
    file: str
    kind: str                 # solution line | hidden test | checks line | marker | name | paraphrase
    secret: str
    origin: str

    def __str__(self) -> str:
        return f"{self.file}: {self.kind} {self.secret!r} (from {self.origin})"


def _worth_keeping(line: str, public: str) -> bool:
    line = normalise(line)
    return len(line) >= MIN_CHARS and line not in public and not _IMPORT.match(line)


def distinctive(name: str) -> bool:
    """A name worth looking for: ``set_parameters``, ``GreedyDecode``; not ``Table`` or ``Model``,
    which any English text holds."""
    return "_" in name.strip("_") or sum(ch.isupper() for ch in name) >= 2


def _defined_names(code: str) -> set[str]:
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return set()
    return {node.name for node in ast.walk(tree)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            and distinctive(node.name)}


def public_words(repo: Path) -> set[str]:
    """The identifiers of what students get on purpose: the student package and the book's pages."""
    files = [*(repo / "attention_course").rglob("*.py"), *(repo / "book").rglob("*.md")]
    return {w for f in files for w in _WORD.findall(f.read_text())}


def secrets(repo: Path, labs: tuple[str, ...], feedback_released: tuple[str, ...] = ()) -> Secrets:
    """Every secret of ``labs``: from ``source/<lab>/<lab>.ipynb`` and its ``checks.py``, less what
    the released notebook ``labs/<lab>/<lab>.ipynb`` shows anyway. The written answers of the labs
    in ``feedback_released`` (their feedback is out, and the pages that discuss them published:
    ``edition.yml``) are left out; their code answers, hidden tests and checks stay secret."""
    found = Secrets(names={name: "the hidden tests' machinery" for name in INSTRUCTOR_NAMES})
    known = public_words(repo)
    for lab in labs:
        source = nbformat.read(repo / "source" / lab / f"{lab}.ipynb", as_version=4)
        release = nbformat.read(repo / "labs" / lab / f"{lab}.ipynb", as_version=4)
        public = normalise("\n".join(cell.source for cell in release.cells))
        asked = windows(public)                         # the questions' own words
        shown = known | set(_WORD.findall(public))
        where = f"source/{lab}/{lab}.ipynb"
        for cell in source.cells:
            task, parts = grade_id(cell), cell_parts(cell)
            if is_solution(cell):
                written = cell.cell_type != "code"
                if written and lab in feedback_released:
                    continue
                for line in parts.answer:
                    if _worth_keeping(line, public):
                        found.lines.setdefault(normalise(line), f"{where}, {task}, solution")
                prose = "\n".join(parts.answer) if written else prose_comments(parts.answer)
                for run in windows(prose) - asked:
                    found.runs.setdefault(run, f"{where}, {task}, solution")
                if cell.cell_type == "code":
                    for name in _defined_names("\n".join(parts.answer)) - shown:
                        found.names.setdefault(name, f"{where}, {task}, solution")
            if is_grade(cell) and cell.cell_type == "code":
                for line in parts.hidden:
                    if _worth_keeping(line, public):
                        found.lines.setdefault(normalise(line), f"{where}, {task}, hidden test")
        checks = repo / "source" / lab / "checks.py"
        text = checks.read_text()
        for line in text.splitlines():
            if _worth_keeping(line, public) and not line.lstrip().startswith("#"):
                found.lines.setdefault(normalise(line), f"source/{lab}/checks.py")
        for name in _defined_names(text) - shown:
            found.names.setdefault(name, f"source/{lab}/checks.py")
    return found


def taught_in_the_book(file: str, origin: str) -> bool:
    """Whether a solution line from ``origin`` found in ``file`` is one of the named overlaps: the
    lab's task, in the package module a chapter teaches it with (inside a wheel or not)."""
    parts = origin.split(", ")
    if len(parts) != 3 or parts[2] != "solution":
        return False
    lab = Path(parts[0]).parent.name
    module, _page = TAUGHT_IN_THE_BOOK.get((lab, parts[1]), (None, None))
    return module is not None and (file == module or file.endswith("!" + module))


def _texts(path: Path, data: bytes):
    """(name, text) of a file, or of each member of an archive, in the forms an attacker reads."""
    if path.suffix in ARCHIVES:
        try:
            with zipfile.ZipFile(io.BytesIO(data)) as archive:
                for member in archive.namelist():
                    inner = Path(member)
                    yield from ((f"{path}!{name}", text) for name, text in
                                _texts(inner, archive.read(member)))
        except zipfile.BadZipFile:
            yield str(path), data.decode("utf-8", "replace")
        return
    if path.suffix == ".pdf":
        yield from ((str(path), text) for text in _pdf_texts(data))
        return
    if path.suffix not in TEXT_SUFFIXES:
        return
    text = data.decode("utf-8", "replace")
    yield str(path), text
    if path.suffix in (".html", ".htm", ".svg", ".xml"):
        yield str(path), html.unescape(_TAG.sub("", text))
    if path.suffix == ".ipynb":
        try:
            nb = json.loads(text)
            yield str(path), "\n".join("".join(c.get("source", "")) for c in nb.get("cells", []))
        except (json.JSONDecodeError, AttributeError):
            pass
    if path.suffix in (".js", ".json", ".ipynb"):
        unescaped = text.replace('\\"', '"').replace("\\n", "\n").replace("\\\\", "\\")
        yield str(path), unescaped


def _pdf_texts(data: bytes) -> list[str]:
    """The text of a PDF (the book's edition), page after page, as a reader copies it out: with
    poppler's ``pdftotext`` both as laid out (a line of code comes out whole, its comment
    included) and as flowing text; where poppler is missing, with pypdf (the edition's book:
    17 s with pypdf, under a second with pdftotext, both ways). A PDF that cannot be read stops
    the scan with the reader's error: nothing unread is passed."""
    pdftotext = shutil.which("pdftotext")
    if pdftotext is None:
        from pypdf import PdfReader

        return ["\n".join(page.extract_text() or "" for page in PdfReader(io.BytesIO(data)).pages)]
    texts = []
    for layout in (["-layout"], []):
        done = subprocess.run([pdftotext, *layout, "-enc", "UTF-8", "-", "-"], input=data,
                              capture_output=True)
        if done.returncode != 0:
            raise ValueError(f"pdftotext could not read the PDF (exit {done.returncode}): "
                             f"{done.stderr.decode(errors='replace').strip()[:300]}")
        texts.append(done.stdout.decode("utf-8", "replace"))
    return texts


def find_runs(name: str, text: str, found: Secrets) -> list[Leak]:
    """Each longest run of words of ``text`` made of :data:`RUN_WORDS`-word windows of a model
    answer, as one paraphrase."""
    if not found.runs:
        return []
    said, firsts = words(text), {run[0] for run in found.runs}
    hits = [i for i in range(len(said) - RUN_WORDS + 1)
            if said[i] in firsts and tuple(said[i:i + RUN_WORDS]) in found.runs]
    leaks, start = [], 0
    while start < len(hits):
        end = start
        while end + 1 < len(hits) and hits[end + 1] <= hits[end] + RUN_WORDS - 1:
            end += 1                            # overlapping windows: one longer run
        first, last = hits[start], hits[end] + RUN_WORDS
        origin = found.runs[tuple(said[first:first + RUN_WORDS])]
        if not taught_in_the_book(name, origin):
            leaks.append(Leak(name, "paraphrase", " ".join(said[first:last]), origin))
        start = end + 1
    return leaks


@functools.lru_cache(maxsize=None)
def _inner_words(line: str) -> frozenset:
    """The names of a line but its first and last: wherever the line is in a text, these are
    whole names of that text too (the first and last may run on into the text around it)."""
    return frozenset(_WORD.findall(line)[1:-1])


def find_in_text(name: str, text: str, found: Secrets) -> list[Leak]:
    leaks = []
    lines = {normalise(line) for line in text.splitlines()}
    flat = normalise(text)
    present = set(_WORD.findall(text))
    for line, origin in found.lines.items():
        if not _inner_words(line) <= present:          # cannot be in the text: no search needed
            continue
        if (line in lines or line in flat) and not taught_in_the_book(name, origin):
            kind = "checks line" if origin.endswith("checks.py") else origin.rsplit(", ", 1)[-1]
            leaks.append(Leak(name, kind if kind != "solution" else "solution line", line, origin))
    for marker in found.markers:
        if marker in text:
            leaks.append(Leak(name, "marker", marker, "nbgrader"))
    for word in present & found.names.keys():
        leaks.append(Leak(name, "name", word, found.names[word]))
    return leaks + find_runs(name, text, found)


def find_leaks(folder: Path, found: Secrets) -> list[Leak]:
    """Every secret found in any file under ``folder`` (archives read member by member)."""
    leaks: list[Leak] = []
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and ".git" not in p.parts):
        seen = set()
        for name, text in _texts(path.relative_to(folder), path.read_bytes()):
            for leak in find_in_text(name, text, found):
                if (leak.file, leak.secret) not in seen:
                    seen.add((leak.file, leak.secret))
                    leaks.append(leak)
    return leaks


# folders of the private repository and modules of the instructor side, by the names they carry
PRIVATE_FOLDERS = ("source", "solutions", "tests", "benchmarks", "instructor", "deploy")
INSTRUCTOR_MODULES = ("attention_course_instructor/", "attention_course/grading/",
                      "attention_course/book/build.py", "attention_course/book/outcomes.py",
                      "attention_course/book/sphinx_fixes.py", "checks.py")


def forbidden_files(folder: Path) -> list[str]:
    """Files of ``folder`` (and members of its wheels) that the student edition must not hold: the
    private repository's folders, the labs' checks, the grader and the book's build tooling."""
    found = []
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and ".git" not in p.parts):
        relative = path.relative_to(folder)
        names = [str(relative)]
        if relative.parts[0] in PRIVATE_FOLDERS:
            found.append(str(relative))
        if path.suffix in ARCHIVES:
            with zipfile.ZipFile(path) as archive:
                names += [f"{relative}!{member}" for member in archive.namelist()]
        found += [name for name in names
                  if any(module in name.split("!")[-1] for module in INSTRUCTOR_MODULES)]
    return found
