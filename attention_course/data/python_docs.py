"""Lab 12's text: Python's own documentation, shipped with the course, split for training.

Two kinds of topic, both from CPython and under the Python Software Foundation licence, which
allows copying them: the help pages of the language reference (``help("if")``, named
``help:if``) and the docstrings of each standard-library module or package (``module:json``).
``attention_course_instructor.lab12_text`` wrote ``texts/python_docs.json.gz`` from Python
:data:`MADE_WITH`, keeping every paragraph only in the first topic that held it. The text is
shipped rather than read from the running Python because it changes between Python releases,
even patch releases, and the lab's numbers depend on every character: so everyone trains and is
measured on the same text.

:func:`split_topics` deals whole topics to train / validation / test (80 / 10 / 10 of the
characters):

- a topic too large to be at most :data:`MOST_OF_A_SPLIT` of a held-out split goes to training;
- the others are dealt in the order of a hash of their names (a fixed shuffle), each to the split
  furthest below its share, so both held-out splits span many modules and help pages;
- a held-out paragraph that shares any :data:`SHINGLE`-character run with the training text is
  dropped (examples repeat lines such as "Traceback (most recent call last):" across modules),
  so nothing a model is measured on was seen in training.
"""
from __future__ import annotations

import gzip
import hashlib
import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np

CORPUS = Path(__file__).resolve().parent / "texts" / "python_docs.json.gz"
SHARES = {"train": 0.8, "val": 0.1, "test": 0.1}
MOST_OF_A_SPLIT = 0.15          # dealt topics are at most this share of a held-out split's target
SHINGLE = 60                    # characters: no run this long of held-out text is in training


@cache
def _corpus() -> dict:
    with gzip.open(CORPUS, "rt", encoding="utf-8") as f:
        return json.load(f)


MADE_WITH = _corpus()["python"]


def load_topics() -> dict[str, str]:
    """Every topic (name -> text), in the order written: help pages, then modules by name."""
    return dict(_corpus()["topics"])


@dataclass(frozen=True)
class TextSplit:
    """The topics of one split and their text: each topic ends with a newline, and one more newline
    joins it to the next; ``starts[i]`` is where topic ``names[i]`` begins in ``text``."""

    names: tuple[str, ...]
    text: str
    starts: tuple[int, ...] = ()

    def __len__(self) -> int:
        return len(self.text)

    def topic_texts(self) -> list[str]:
        """The text topic by topic, each with the newline that joins it to the next: joined
        with nothing between them, they give ``text`` back (Lab 12's verdict scores each)."""
        if len(self.starts) != len(self.names):
            raise ValueError(f"this split knows where {len(self.starts)} of its {len(self.names)} "
                             "topics start (a split cut from another keeps no topics)")
        ends = (*self.starts[1:], len(self.text))
        return [self.text[a:b] for a, b in zip(self.starts, ends)]

    def head(self, share: float) -> "TextSplit":
        """The first topics, whole, that fit in ``share`` of the text (at least the first one)."""
        ends = [*self.starts[1:], len(self.text)]
        kept = max(1, sum(1 for end in ends if end <= share * len(self.text)))
        return TextSplit(self.names[:kept], self.text[:ends[kept - 1]], self.starts[:kept])


def _joined(names, texts) -> TextSplit:
    """Topics joined as a split joins them: by one newline."""
    texts = list(texts)
    starts = np.cumsum([0] + [len(t) + 1 for t in texts[:-1]]).tolist() if texts else []
    return TextSplit(tuple(names), "\n".join(texts), tuple(int(s) for s in starts))


def _runs(text: str, length: int) -> np.ndarray:
    """Hashes of the runs of ``length`` characters of ``text``: [i] for text[i:i + length]."""
    from attention_course.tasks.ngram_baselines import run_hashes, symbol_codes

    return run_hashes(symbol_codes(text), length)


def shingles(text: str, length: int = SHINGLE) -> np.ndarray:
    """Hashes of every run of ``length`` characters of ``text``, sorted, each once."""
    from attention_course.tasks.ngram_baselines import counted

    return counted(_runs(text, length))[0]


def _held_out(topics: dict[str, str], seen: np.ndarray) -> dict[str, str]:
    """The topics with every paragraph dropped that a run in ``seen`` (sorted hashes) touches,
    in their text joined as a split joins it; repeated until no run of the joined text is seen."""
    pieces = [(name, p.rstrip("\n")) for name, text in topics.items()
              for p in text.split("\n\n") if p.strip()]
    while True:
        starts = np.cumsum([0] + [len(p) + 2 for _, p in pieces[:-1]])
        runs = _runs("\n\n".join(p for _, p in pieces) + "\n", SHINGLE)
        at = np.minimum(np.searchsorted(seen, runs), max(len(seen) - 1, 0))
        known = np.flatnonzero(seen[at] == runs) if len(seen) else []
        if not len(known):
            break
        first = np.searchsorted(starts, known, side="right") - 1
        last = np.searchsorted(starts, known + SHINGLE - 1, side="right") - 1
        drop = {i for a, b in zip(first, last) for i in range(a, b + 1)}
        pieces = [piece for i, piece in enumerate(pieces) if i not in drop]
    kept: dict[str, list[str]] = {}
    for name, paragraph in pieces:
        kept.setdefault(name, []).append(paragraph)
    return {name: "\n\n".join(ps) + "\n" for name, ps in kept.items()}


def deal(topics: dict[str, str]) -> dict[str, list[str]]:
    """Topic names per split (see the module's docstring)."""
    total = sum(len(t) for t in topics.values())
    largest = MOST_OF_A_SPLIT * SHARES["val"] * total
    names: dict[str, list[str]] = {s: [] for s in SHARES}
    size = dict.fromkeys(SHARES, 0)
    for name in sorted(topics, key=lambda n: hashlib.sha1(n.encode()).hexdigest()):
        if len(topics[name]) > largest:
            split = "train"
        else:
            split = min(SHARES, key=lambda s: (size[s] - SHARES[s] * total, s))
        names[split].append(name)
        size[split] += len(topics[name])
    return names


def split_topics(topics: dict[str, str] | None = None) -> dict[str, TextSplit]:
    """train / val / test by topic, held-out text never seen in training (the module's docstring)."""
    topics = load_topics() if topics is None else topics
    names = deal(topics)
    train = [topics[name] for name in sorted(names["train"])]
    seen = shingles("\n".join(train))
    splits = {"train": _joined(sorted(names["train"]), train)}
    for split in ("val", "test"):
        kept = _held_out({name: topics[name] for name in sorted(names[split])}, seen)
        splits[split] = _joined(kept, kept.values())
    return splits
