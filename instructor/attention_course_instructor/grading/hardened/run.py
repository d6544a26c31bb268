"""What is graded: one assignment of one course directory, with one seed and one set of limits,
and its round trip through JSON to the worker processes and Dask tasks that grade it."""
from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

import nbformat

from attention_course_instructor.grading.checks import Lab, load_lab
from attention_course_instructor.grading.hardened.kernel import Limits


@dataclass(frozen=True)
class GradingRun:
    """One assignment of one course directory, graded with one seed and one set of limits."""

    root: Path
    assignment: str
    seed: int = 0
    limits: Limits = Limits()
    tamper: str = "fail"               # "fail": zero and flag; "restore": grade on restored cells
    use_sandbox: bool = True

    @property
    def notebook(self) -> str:
        return f"{self.assignment}.ipynb"

    def lab(self) -> Lab:
        return load_lab(self.root / "source" / self.assignment)

    def source(self) -> nbformat.NotebookNode:
        return nbformat.read(self.root / "source" / self.assignment / self.notebook, as_version=4)


def run_to_dict(run) -> dict:
    return {"root": str(run.root), "assignment": run.assignment, "seed": run.seed,
            "limits": asdict(run.limits), "tamper": run.tamper, "use_sandbox": run.use_sandbox}


def run_from_dict(data: dict):
    return GradingRun(Path(data["root"]), data["assignment"], data["seed"], Limits(**data["limits"]),
                      data["tamper"], data["use_sandbox"])
