"""What every benchmark's report shares: the machine it ran on, targets kept as data with their
verdicts computed, tables (:func:`attention_course.tables.markdown_table`, the course's one way to
write one), and writing the report to ``benchmarks/results/``."""
from __future__ import annotations

import os
import platform
from dataclasses import dataclass
from pathlib import Path

from attention_course.tables import markdown_table

__all__ = ["RESULTS", "Target", "machine", "markdown_table", "write"]

RESULTS = Path(__file__).resolve().parent / "results"


@dataclass(frozen=True)
class Target:
    """What a measured value should be: at most ``limit`` (or at least, with ``at_most=False``)."""

    limit: float
    at_most: bool = True
    unit: str = ""

    def met(self, value: float) -> bool:
        return value <= self.limit if self.at_most else value >= self.limit

    def verdict(self, value: float) -> str:
        return "met" if self.met(value) else "**missed**"

    def __str__(self) -> str:
        return f"{'at most' if self.at_most else 'at least'} {self.limit:g}{self.unit}"


def machine() -> str:
    """The machine a benchmark ran on, in words: architecture, CPUs it may use, memory, torch."""
    import torch

    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2 ** 30
    return (f"{platform.machine()}, {len(os.sched_getaffinity(0))} CPUs available, {memory:.0f} GiB, "
            f"torch {torch.__version__}, cuda {'yes' if torch.cuda.is_available() else 'no'}")


def write(name: str, text: str, folder: Path = RESULTS) -> Path:
    """Write ``benchmarks/results/<name>`` (or ``<folder>/<name>``) and print it; returns its path."""
    folder.mkdir(exist_ok=True)
    path = folder / name
    path.write_text(text if text.endswith("\n") else text + "\n")
    print(text)
    return path
