"""The student edition: ``make edition`` writes ``_build/edition/``, ready to be pushed as the
public student repository and served as the public site (GitHub Pages from its ``docs/``).

The course lives in two repositories. This one is private to the course staff: ``source/`` (the
labs with their solutions and checks), ``solutions/``, the tests, the benchmarks and the instructor
package. The student repository is what this module writes, and nothing else:

- ``docs/``: the book built for students (the staff's part of ``_toc.yml`` left out, and each
  page of ``edition.yml``'s ``after_feedback`` until its lab's feedback is released), its
  repository, Binder and Colab buttons pointing at ``edition.yml``'s ``student_repository``;
- ``book/`` and ``labs/``: the page sources, each page's notebook twin, and the released lab
  notebooks those buttons open;
- ``wheels/``: every released student wheel under its version. The folder is kept from one
  edition to the next (point ``--out`` at a clone of the student repository), so a notebook
  handed out at 0.2 still installs 0.2 after 0.3 is published; the site serves them all at
  ``_static/wheels/``. The edition refuses to be written where a version ``CHANGELOG.md`` names
  has no wheel, or where the wheel published under this version differs from the one built now
  (:func:`check_earlier_wheels`, :func:`check_published_wheel`), unless told to start afresh;
- ``binder/``: the pinned requirements and a ``postBuild`` that installs this version's wheel
  (never a repository) with the student's nbgrader settings;
- a student README, the licences (``LICENSE``, ``LICENSES/``, ``REUSE.toml``), ``CHANGELOG.md``
  and ``CITATION.cff``.

``tests/test_student_edition.py`` reads every file of it, the wheels unpacked and the PDF as text,
as an attacker would, for any solution line, hidden test, line of a lab's ``checks.py``,
reference-only name or run of five words of a model answer.
"""
from __future__ import annotations

import argparse
import re
import shutil
import sys
import zipfile
from pathlib import Path

import nbformat

from attention_course import __version__
from attention_course_instructor import paths
from attention_course_instructor.book import build, leaks
from attention_course_instructor.grading.notebook import grade_id

ROOT = paths.REPO
LABS = ("lab8", "lab12")
KEPT = {".git", "wheels"}                   # what a new edition keeps of the folder it writes into
CHANGELOG = ROOT / "CHANGELOG.md"
_RELEASED = re.compile(r"^## (\d+(?:\.\d+)+)\b", re.M)      # "## 0.6.0 (2026-12-04)", not "## Unreleased"
STAFF_PAGES = "book/instructors"            # page sources of the staff's part
# the licences and notes every edition carries, as they are in this repository
LICENCE_FILES = ("LICENSE", "LICENSES", "CHANGELOG.md", "CITATION.cff")
STUDENT_ROLE = ROOT / "deploy" / "hub" / "roles" / "student"
EDITION_FILES = ROOT / "instructor" / "edition"    # the student README, the edition's licence map


def wheel_name(version: str = __version__) -> str:
    return f"attention_course-{version}-py3-none-any.whl"


def clear(out: Path, afresh: bool = False) -> None:
    """Empty ``out`` for a new edition, keeping its git history and (unless ``afresh``) the wheels
    already published."""
    out.mkdir(parents=True, exist_ok=True)
    for entry in out.iterdir():
        if entry.name in KEPT and not (afresh and entry.name == "wheels"):
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()


class PublishingError(RuntimeError):
    """The edition would break what was published before (the message says what, and how to go on)."""


def released_versions(changelog: str) -> list[str]:
    """The versions ``CHANGELOG.md`` names in its headings, newest first (an "Unreleased" heading
    is none)."""
    return _RELEASED.findall(changelog)


def is_wheel_of(path: Path, version: str) -> bool:
    """Whether ``path`` is a readable student wheel of ``version``."""
    try:
        with zipfile.ZipFile(path) as archive:
            metadata = archive.read(f"attention_course-{version}.dist-info/METADATA").decode()
    except (OSError, KeyError, zipfile.BadZipFile):
        return False
    return f"\nVersion: {version}\n" in metadata


def check_earlier_wheels(out: Path, changelog: str | None = None) -> None:
    """Refuse an edition whose ``wheels/`` lacks a version ``CHANGELOG.md`` says was released: a
    notebook handed out at that version installs it from the site, and would fail."""
    changelog = CHANGELOG.read_text() if changelog is None else changelog
    earlier = [v for v in released_versions(changelog) if v != __version__]
    missing = [v for v in earlier if not is_wheel_of(out / "wheels" / wheel_name(v), v)]
    if missing:
        raise PublishingError(
            f"{out / 'wheels'} lacks the wheel of {', '.join(missing)}, which CHANGELOG.md says "
            "were released: notebooks handed out at those versions install them from the site.\n"
            "Write the edition into a clone of the student repository (make edition "
            "EDITION=<clone>), which keeps every wheel published, or, for a student repository's "
            "first edition, start afresh (make edition AFRESH=1: only this version's wheel).")


def check_published_wheel(out: Path, wheel: Path) -> None:
    """Refuse to replace the wheel published under this version with other bytes: students who
    installed it would hold another package under the same version. Wheels are reproducible
    (:func:`~attention_course_instructor.book.build.build_wheel`), so the same sources give the
    same bytes; other bytes mean the package changed."""
    published = out / "wheels" / wheel.name
    if published.exists() and published.read_bytes() != wheel.read_bytes():
        raise PublishingError(
            f"{published} differs from the wheel built now under the same version, {__version__}: "
            "the package changed since it was published.\nPublish a new version (CONTRIBUTING.md: "
            "bump attention_course/_version.py and say what changed in CHANGELOG.md), or, if no "
            f"notebook was handed out at {__version__}, remove {published.name} from the clone.")


def publish_wheel(out: Path, wheel: Path) -> list[Path]:
    """Add ``wheel`` to ``out/wheels`` beside every earlier version; return them all, oldest first."""
    folder = out / "wheels"
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy2(wheel, folder / wheel.name)
    return sorted(folder.glob("attention_course-*.whl"), key=_version_key)


def _version_key(wheel: Path) -> tuple:
    version = wheel.name.split("-")[1]
    return tuple(int(p) if p.isdigit() else p for p in version.split("."))


def serve_wheels(site: Path, wheels: list[Path]) -> None:
    """Every published wheel at the site's ``_static/wheels/``, where the labs' first cell looks."""
    target = site / "_static" / "wheels"
    target.mkdir(parents=True, exist_ok=True)
    for wheel in wheels:
        shutil.copy2(wheel, target / wheel.name)


def copy_sources(out: Path, toc_files: set[str]) -> None:
    """The page sources of the student book and the released lab notebooks. Each Markdown page
    with code also gets its notebook twin, which the page's Colab button opens
    (:func:`notebook_twin`)."""
    for page in sorted(toc_files):
        for source in (ROOT / f"{page}.md", ROOT / f"{page}.ipynb"):
            if source.exists():
                target = out / source.relative_to(ROOT)
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, target)
                if source.suffix == ".md" and (twin := notebook_twin(source)) is not None:
                    nbformat.write(twin, target.with_suffix(".ipynb"))
    for lab in LABS:                      # the released notebook, never the source or solution
        target = out / "labs" / lab / f"{lab}.ipynb"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / "labs" / lab / f"{lab}.ipynb", target)


def notebook_twin(page: Path):
    """A MyST page with code as a notebook for Colab (unexecuted), or None for a page of prose.
    Its first cell is the released labs' install cell, which installs the course package where it
    is missing."""
    import jupytext

    nb = jupytext.read(page)
    if not any(cell.cell_type == "code" for cell in nb.cells):
        return None
    lab = nbformat.read(ROOT / "labs" / LABS[0] / f"{LABS[0]}.ipynb", as_version=4)
    install = next(cell for cell in lab.cells if grade_id(cell) == "install")
    nb.cells.insert(0, nbformat.v4.new_code_cell(install.source))
    return nb


def withheld_pages(options: dict) -> list[str]:
    """The pages of ``edition.yml``'s ``after_feedback`` whose lab is not in ``feedback_released``:
    pages that discuss a lab's answers, held back until its feedback is out."""
    released = set(options.get("feedback_released") or [])
    return sorted(page for page, lab in (options.get("after_feedback") or {}).items()
                  if lab not in released)


def toc_files(toc: dict) -> set[str]:
    files = {toc["root"]}
    stack = list(toc.get("parts", []))
    while stack:
        entry = stack.pop()
        if "file" in entry:
            files.add(entry["file"])
        stack.extend(entry.get("chapters", []))
        stack.extend(entry.get("sections", []))
    return files


BINDER_POSTBUILD = """#!/bin/bash
# repo2docker runs this after binder/requirements.txt: the course package from its wheel (this
# edition's version), and a student's nbgrader tools only (no formgrader, no create-assignment).
set -euo pipefail
python -m pip install --quiet --no-deps wheels/{wheel}
etc="$(python -c 'import sys; print(sys.prefix)')/etc/jupyter"
mkdir -p "$etc/jupyter_server_config.d" "$etc/labconfig"
cp binder/student/jupyter_server_config.json "$etc/jupyter_server_config.d/zz-course-student.json"
cp binder/student/page_config.json "$etc/labconfig/page_config.json"
cp binder/student/nbgrader_config.py "$etc/nbgrader_config.py"
"""


def write_binder(out: Path) -> None:
    """Binder's files: the course's exact pins (CPU torch) and a postBuild that installs the wheel."""
    binder = out / "binder"
    (binder / "student").mkdir(parents=True)
    pins = (ROOT / "requirements.txt").read_text()
    (binder / "requirements.txt").write_text(
        "# The course's exact pins; binder/postBuild then installs the course wheel.\n"
        "--extra-index-url https://download.pytorch.org/whl/cpu\n" + pins)
    shutil.copy2(ROOT / "binder" / "runtime.txt", binder / "runtime.txt")
    post = binder / "postBuild"
    post.write_text(BINDER_POSTBUILD.format(wheel=wheel_name()))
    post.chmod(0o755)
    shutil.copy2(STUDENT_ROLE / "jupyter_server_config.json", binder / "student")
    shutil.copy2(STUDENT_ROLE / "labconfig" / "page_config.json", binder / "student")
    shutil.copy2(STUDENT_ROLE / "nbgrader_config.py", binder / "student")


def write_notes(out: Path, repository: str) -> None:
    """The student README, the licences, the changelog and the citation file."""
    readme = (EDITION_FILES / "README.md").read_text()
    (out / "README.md").write_text(readme.format(version=__version__, repository=repository,
                                                 wheel=wheel_name()))
    shutil.copy2(EDITION_FILES / "REUSE.edition.toml", out / "REUSE.toml")
    for name in LICENCE_FILES:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, out / name)
        else:
            shutil.copy2(source, out / name)
    shutil.copy2(EDITION_FILES / "LicenseRef-Bundled.txt", out / "LICENSES")


def build_edition(out: Path = paths.EDITION, strict: bool = True, afresh: bool = False) -> Path:
    """Write the student edition into ``out``; return ``out``. ``afresh``: the first edition of a
    student repository, whose ``wheels/`` then holds this version's wheel only."""
    options = build.settings()
    if not afresh:
        check_earlier_wheels(out)               # before the long build
    repository = options.get("student_repository", "")
    toc = build.student_toc(staff=options.get("staff_parts", []), leave_out=withheld_pages(options))
    scratch = paths.BUILD / "edition-book"
    shutil.rmtree(scratch / "_build" / "html", ignore_errors=True)
    index = build.build_book(strict=strict, output=scratch, repository=repository, toc=toc)
    wheel = build.WHEELS / wheel_name()
    if not afresh:
        check_published_wheel(out, wheel)
    clear(out, afresh=afresh)
    shutil.copytree(index.parent, out / "docs", ignore=shutil.ignore_patterns(".buildinfo"))
    (out / "docs" / ".nojekyll").touch()           # serve _static/ and _sources/ as they are
    shutil.rmtree(out / "docs" / "reports", ignore_errors=True)
    wheels = publish_wheel(out, wheel)
    serve_wheels(out / "docs", wheels)
    copy_sources(out, toc_files(toc))
    write_binder(out)
    write_notes(out, repository)
    check_for_answers(out, feedback_released=tuple(options.get("feedback_released") or ()))
    return out


class AnswerInEditionError(RuntimeError):
    """The edition holds something of the instructors' (the message lists each finding)."""


def check_for_answers(out: Path, feedback_released: tuple[str, ...] = ()) -> None:
    """Refuse an edition that holds a private file, a solution line, a hidden test, a line of a
    lab's checks, a reference-only name or a paraphrase of a model answer
    (:mod:`~attention_course_instructor.book.leaks`). The written answers of the labs in
    ``feedback_released`` are no longer secret."""
    findings = leaks.forbidden_files(out)
    found = leaks.secrets(ROOT, LABS, feedback_released=feedback_released)
    findings += [str(leak) for leak in leaks.find_leaks(out, found)]
    if findings:
        raise AnswerInEditionError(f"the student edition in {out} gives away {len(findings)} "
                                   "thing(s) of the instructors':\n  " + "\n  ".join(findings[:50]))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=paths.EDITION,
                        help="the folder to write (e.g. a clone of the student repository); "
                             "its .git and wheels/ are kept")
    parser.add_argument("--afresh", action="store_true",
                        help="the first edition of a student repository: publish this version's "
                             "wheel only, without the earlier ones CHANGELOG.md names")
    args = parser.parse_args(argv)
    try:
        out = build_edition(args.out.resolve(), afresh=args.afresh)
    except (build.BookBuildError, AnswerInEditionError, PublishingError) as error:
        sys.exit(f"\n{error}")
    print(f"\nThe student edition {__version__} is in {out}: push it to the student repository "
          "(its docs/ folder is the site).")


if __name__ == "__main__":
    main()
