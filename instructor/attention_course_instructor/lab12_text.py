"""Writes Lab 12's text, ``attention_course/data/texts/python_docs.json.gz``, from this Python.

    python -m attention_course_instructor.lab12_text

Two kinds of topic, both part of every CPython and under the Python Software Foundation licence:

- the help pages of the language reference (``pydoc_data.topics``: what ``help("if")`` prints),
  named ``help:<topic>``;
- the docstrings of the standard library's Python sources (``ast.get_docstring`` on every module,
  class and function, in the order of the source), one topic per top-level module or package,
  named ``module:<name>``. Tests, their helpers and ``site-packages`` are left out.

A paragraph that recurs is kept only where it first appears (help pages first, then modules by
name), so no paragraph is in two topics. The text differs a little from one Python release to the
next, even between patch releases, and the lab's numbers depend on every character of it, so the
course ships the file this writes instead of reading the running interpreter's sources: every
student, on any Python, trains on the same text. ``python`` in the file says which release made it.
"""
from __future__ import annotations

import ast
import gzip
import json
import platform
import sysconfig
from pathlib import Path

CORPUS = (Path(__file__).resolve().parents[2] / "attention_course" / "data" / "texts"
          / "python_docs.json.gz")

LEFT_OUT = {"test", "tests", "idle_test", "site-packages", "__pycache__"}


def help_topics() -> dict[str, str]:
    """``help:<name>`` -> the text of that help page."""
    from pydoc_data.topics import topics

    return {f"help:{name}": topics[name] for name in sorted(topics)}


def docstrings(source: str) -> list[str]:
    """Every docstring of a module's source: the module's, then its classes' and functions', in
    the order they appear."""
    tree = ast.parse(source)
    kinds = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    nodes = sorted((n for n in ast.walk(tree) if isinstance(n, kinds)),
                   key=lambda n: getattr(n, "lineno", 0))
    return [doc for node in nodes if (doc := ast.get_docstring(node, clean=True))]


def module_topics(stdlib: Path) -> dict[str, str]:
    """``module:<top-level name>`` -> the docstrings of its sources, a blank line between them."""
    found: dict[str, list[str]] = {}
    for path in sorted(stdlib.rglob("*.py")):
        parts = path.relative_to(stdlib).parts
        if LEFT_OUT & set(parts) or parts[-1].startswith("test_") or parts[0].startswith("__"):
            continue
        top = parts[0].removesuffix(".py")
        found.setdefault(f"module:{top}", []).extend(docstrings(path.read_text(encoding="utf-8")))
    return {name: "\n\n".join(docs) for name, docs in sorted(found.items()) if docs}


def once_each(topics: dict[str, str]) -> dict[str, str]:
    """Each paragraph kept only in the first topic (in the given order) that holds it."""
    seen, kept = set(), {}
    for name, text in topics.items():
        paragraphs = []
        for paragraph in text.strip().split("\n\n"):
            key = paragraph.strip()
            if key and key not in seen:
                seen.add(key)
                paragraphs.append(paragraph.rstrip())
        if paragraphs:
            kept[name] = "\n\n".join(paragraphs) + "\n"
    return kept


def main() -> None:
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    topics = once_each(help_topics() | module_topics(stdlib))
    record = {"python": platform.python_version(), "topics": topics}
    with gzip.GzipFile(CORPUS, "wb", mtime=0) as out:       # mtime 0: the same bytes every time
        out.write(json.dumps(record, ensure_ascii=False, indent=0).encode("utf-8"))
    print(f"{len(topics)} topics, {sum(map(len, topics.values())):,d} characters -> {CORPUS}")


if __name__ == "__main__":
    main()
