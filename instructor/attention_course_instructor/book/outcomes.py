"""The book's learning outcomes and concepts, from ``book/outcomes.yml``, checked and indexed.

:func:`check` fails the build when an outcome has no page that teaches it or no task that assesses
it, when a page named there is not in the table of contents, or when a page's "Outcomes and
concepts" box disagrees with the data (it must name exactly the outcomes listed for it, and every
concept taught there), or when a section of Chapters 8 and 12 lacks its self-check questions
(:func:`check_self_checks`). :func:`render_index` writes the concept index page ``book/concepts.md``.
"""
from __future__ import annotations

import re
from pathlib import Path

import yaml

from attention_course.tables import markdown_table
from attention_course_instructor import paths

REPO = paths.REPO
DATA = REPO / "book" / "outcomes.yml"
INDEX = REPO / "book" / "concepts.md"


class OutcomeError(ValueError):
    """The outcomes data and the book disagree."""


def load(path: Path = DATA) -> dict:
    return yaml.safe_load(path.read_text())


def toc_pages(repo: Path = REPO) -> set[str]:
    toc = (repo / "_toc.yml").read_text()
    return set(re.findall(r"(?:file|root):\s*(\S+)", toc))


def served_in_box(text: str) -> tuple[set[str], str] | None:
    """The outcome ids and the concepts line of a page's "Outcomes and concepts" box, if it has one."""
    box = re.search(r"```\{admonition\} Outcomes and concepts.*?\n(.*?)```", text, flags=re.S)
    if not box:
        return None
    body = " ".join(box.group(1).split())
    served, _, concepts = body.partition("Concepts:")
    return set(re.findall(r"`([a-z0-9-]+)`", served)), concepts.lower()


def check(data: dict | None = None, repo: Path = REPO) -> None:
    data = data if data is not None else load()
    pages = toc_pages(repo)
    problems = []
    teaches: dict[str, set[str]] = {}
    for oid, o in data["outcomes"].items():
        if not o.get("taught_in"):
            problems.append(f"outcome {oid!r} is taught on no page")
        if not o.get("assessed_by"):
            problems.append(f"outcome {oid!r} is assessed by no exercise or lab task")
        for page in o.get("taught_in", []):
            teaches.setdefault(page, set()).add(oid)
        for page, _ in o.get("assessed_by", []):
            if page not in pages:
                problems.append(f"outcome {oid!r}: {page} is not in _toc.yml")
    concepts_by_page: dict[str, list[str]] = {}
    for term, (page, _) in data["concepts"].items():
        concepts_by_page.setdefault(page, []).append(term)
    for page in sorted(set(teaches) | set(concepts_by_page)):
        if page not in pages:
            problems.append(f"{page} is named in outcomes.yml but not in _toc.yml")
            continue
        box = served_in_box((repo / f"{page}.md").read_text())
        if box is None:
            problems.append(f"{page} has no 'Outcomes and concepts' box")
            continue
        served, concept_line = box
        if served != teaches.get(page, set()):
            problems.append(f"{page}: its box serves {sorted(served)}, outcomes.yml says "
                            f"{sorted(teaches.get(page, set()))}")
        for term in concepts_by_page.get(page, []):
            if term.lower() not in concept_line:
                problems.append(f"{page}: concept {term!r} is not in its box")
    for chapter in ("chapter8", "chapter12"):
        listed = set(re.findall(r"^\| `([a-z0-9-]+)` \|", (repo / f"book/{chapter}/index.md").read_text(),
                                flags=re.M))
        mine = {oid for oid, o in data["outcomes"].items() if o["taught_in"][0].startswith(f"book/{chapter}/")}
        if listed != mine:
            problems.append(f"the outcome table of book/{chapter}/index.md lists {sorted(listed)}, "
                            f"outcomes.yml {sorted(mine)}")
    problems += check_self_checks(data, repo)
    if problems:
        raise OutcomeError("book/outcomes.yml and the book disagree:\n  " + "\n  ".join(problems))


SECTION = re.compile(r"^# (\d+)\.(\d+) ", flags=re.M)      # a numbered section's title: "# 8.4 ..."


def check_self_checks(data: dict, repo: Path = REPO, questions: dict | None = None) -> list[str]:
    """What is wrong with the self-check questions (``self_checks.yml`` of the student package):
    every numbered section of Chapters 8 and 12 has at least one choice and one numeric question,
    numbered after the section; each practises an outcome its section teaches; the page shows
    each of its questions (``self_check("<number>"``) and no other."""
    from attention_course.book.figures.selfcheck import load_questions

    questions = questions if questions is not None else load_questions()
    teaches: dict[str, set[str]] = {}
    for oid, o in data["outcomes"].items():
        for page in o.get("taught_in", []):
            teaches.setdefault(page, set()).add(oid)
    problems = []
    for chapter in ("chapter8", "chapter12"):
        for source in sorted((repo / "book" / chapter).glob("*.md")):
            page = str(source.relative_to(repo).with_suffix(""))
            text = source.read_text()
            title = SECTION.search(text)
            shown = set(re.findall(r'self_check\("([\d.]+)"', text))
            mine = {n: q for n, q in questions.items() if q["page"] == page}
            if title is None:
                if shown or mine:
                    problems.append(f"{page}: self-checks belong to numbered sections only")
                continue
            if {q.get("kind", "choice") for q in mine.values()} != {"choice", "number"}:
                problems.append(f"{page}: needs a choice and a numeric self-check question")
            if shown != set(mine):
                problems.append(f"{page} shows self-checks {sorted(shown)}, "
                                f"self_checks.yml has {sorted(mine)} for it")
            for number, q in mine.items():
                if not number.startswith(f"{title[1]}.{title[2]}."):
                    problems.append(f"self-check {number} is on {page}, section {title[1]}.{title[2]}")
                if q["outcome"] not in teaches.get(page, set()):
                    problems.append(f"self-check {number} practises {q['outcome']!r}, which "
                                    f"{page} does not teach")
    return problems


def _link(page: str, label: str | None = None) -> str:
    return f"{{doc}}`{label} </{page}>`" if label else f"{{doc}}`/{page}`"


def render_index(data: dict | None = None) -> str:
    """The MyST text of ``book/concepts.md``."""
    data = data if data is not None else load()
    lines = ["# Concept and outcome index", "",
             "<!-- generated from book/outcomes.yml by attention_course_instructor.book.outcomes; do not edit -->", "",
             "Every concept links to the section that introduces it; every outcome to where it is",
             "taught and to the exercises and lab tasks that assess it.", "", "## Concepts", "",
             "```{glossary}"]
    for term in sorted(data["concepts"], key=str.lower):
        page, definition = data["concepts"][term]
        lines += [term, f"  {definition[0].upper() + definition[1:]}. Introduced in {_link(page)}.", ""]
    lines += ["```", "", "## Learning outcomes", "", markdown_table(
        ["outcome", "you can", "taught in", "assessed by"],
        [[f"`{oid}`", o["text"], ", ".join(_link(p) for p in o["taught_in"]),
          ", ".join(_link(p, label) for p, label in o["assessed_by"])]
         for oid, o in data["outcomes"].items()])]
    return "\n".join(lines) + "\n"


def write_index(path: Path = INDEX) -> Path:
    """Checks the outcomes, then writes the index page, only if it changed: a page written anew is
    read again by every build (with the PDF after it, a minute of ``make book`` with nothing to do)."""
    check()
    text = render_index()
    if not path.exists() or path.read_text() != text:
        path.write_text(text)
    return path


if __name__ == "__main__":
    print(write_index())
