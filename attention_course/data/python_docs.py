"""Lab 12's text: the help topics that Python itself ships (``pydoc_data.topics``).

Every CPython installation carries the text of ``help("if")``, ``help("assignment")`` and the other
topics of the language reference, under the Python Software Foundation licence that allows
copying it: no download, nothing to licence separately. Its topics overlap (the page on compound
statements repeats the pages on ``if``, ``while`` and ``try``), so a paragraph is kept only in the
first topic, by name, that holds it; a held-out split then never contains text seen in training.

Topics are then dealt, in the order of a hash of their names (a fixed shuffle), to whichever
split is furthest below its share of the characters (80 / 10 / 10): deterministic, balanced, and
split by document. The text differs a
little between Python versions (:data:`PYTHON_VERSION` says which one made the numbers).
"""
from __future__ import annotations

import hashlib
import platform
from dataclasses import dataclass

SHARES = {"train": 0.8, "val": 0.1, "test": 0.1}
PYTHON_VERSION = platform.python_version()


def load_topics() -> dict[str, str]:
    """Every help topic (name -> text), each paragraph kept in the first topic that holds it."""
    from pydoc_data.topics import topics

    seen, kept = set(), {}
    for name in sorted(topics):
        paragraphs = []
        for paragraph in topics[name].strip().split("\n\n"):
            key = paragraph.strip()
            if key and key not in seen:
                seen.add(key)
                paragraphs.append(paragraph.rstrip())
        if paragraphs:
            kept[name] = "\n\n".join(paragraphs) + "\n"
    return kept


@dataclass(frozen=True)
class TextSplit:
    """The topics of one split and their text, joined by blank lines."""

    names: tuple[str, ...]
    text: str

    def __len__(self) -> int:
        return len(self.text)


def split_topics(topics: dict[str, str] | None = None) -> dict[str, TextSplit]:
    """train / val / test by topic (see the module's docstring)."""
    topics = load_topics() if topics is None else topics
    total = sum(len(t) for t in topics.values())
    names: dict[str, list[str]] = {s: [] for s in SHARES}
    size = dict.fromkeys(SHARES, 0)
    for name in sorted(topics, key=lambda n: hashlib.sha1(n.encode()).hexdigest()):
        split = min(SHARES, key=lambda s: (size[s] - SHARES[s] * total, s))
        names[split].append(name)
        size[split] += len(topics[name])
    return {s: TextSplit(tuple(sorted(n)), "\n".join(topics[k] for k in sorted(n)))
            for s, n in names.items()}
