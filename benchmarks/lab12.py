"""Lab 12 measured: the notebook's time, grading one submission both ways, and the model's held-out
bits per character against character n-gram models (interpolated Kneser-Ney, orders 1-6).

    python -m benchmarks.lab12            # about 8 minutes on 2 cores

The model is the one the notebook trains (the solution run in full, as a student runs it, with one
cell appended that scores the trained model on the validation and test splits). The n-gram models
are fitted on the same training split; the order and discount are chosen on the validation split
and the chosen one is scored on the test split. Writes ``benchmarks/results/lab12.md`` and
``lab12.json``.
"""
from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

import nbformat

from attention_course.data.python_docs import PYTHON_VERSION, split_topics
from attention_course_instructor.grading.hardened import GradingRun, Limits, grade_batch
from attention_course.tasks.ngram_baselines import KneserNey, best_kneser_ney
from benchmarks.report import Target, machine, markdown_table, write

# the throw-away nbgrader course of the tests (tests/nbgrader_harness.py)
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
import nbgrader_harness as harness  # noqa: E402

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
SOLUTION = REPO / "solutions" / "lab12" / "lab12.ipynb"
STUDENTS = 3
SCORE_CELL = """\
import json
print("LAB12-SCORES", json.dumps({name: bits_per_character(model, ids[name], chars[name])
                                  for name in ("val", "test")} | {"train_seconds": record["train_seconds"]}))
"""


def run_notebook(workdir: Path) -> dict:
    """The solution in full (no NBGRADER_EXECUTION) plus the scoring cell; its time without it."""
    nb = nbformat.read(SOLUTION, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell(SCORE_CELL))
    path = workdir / "lab12.ipynb"
    nbformat.write(nb, path)
    env = {k: v for k, v in os.environ.items() if k != "NBGRADER_EXECUTION"}
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "jupyter", "nbconvert", "--to", "notebook", "--execute",
                    "--ExecutePreprocessor.timeout=900", "--output=ran.ipynb", str(path)],
                   check=True, env=env, cwd=workdir, capture_output=True)
    total = time.perf_counter() - start
    ran = nbformat.read(workdir / "ran.ipynb", as_version=4)
    last = ran.cells[-1]
    text = "".join(o.get("text", "") for o in last.outputs if o.get("output_type") == "stream")
    scores = json.loads(text.split("LAB12-SCORES", 1)[1])
    timing = last.metadata.get("execution", {})
    began, ended = (datetime.fromisoformat(timing[k].replace("Z", "+00:00"))
                    for k in ("iopub.execute_input", "shell.execute_reply"))
    return scores | {"notebook_seconds": total - (ended - began).total_seconds()}


def time_grading(workdir: Path) -> dict:
    course = harness.make_course(workdir / "course", REPO / "source" / "lab12", "lab12")
    harness.generate(course, "lab12")
    for i in range(STUDENTS):
        harness.submit(course, "lab12", f"student{i}", SOLUTION)
    start = time.perf_counter()
    harness.autograde(course, "lab12")
    nbgrader_seconds = (time.perf_counter() - start) / STUDENTS
    run = GradingRun(course.root, "lab12", seed=0, limits=Limits())
    start = time.perf_counter()
    results = grade_batch(run, jobs=1)
    hardened_seconds = (time.perf_counter() - start) / len(results)
    assert all(r.score == 27 for r in results), [r.score for r in results]
    return {"nbgrader_seconds": nbgrader_seconds, "hardened_seconds": hardened_seconds}


def measure() -> dict:
    """Every number of the report: the n-gram grid, the notebook's model and times, grading."""
    splits = split_topics()
    began = time.perf_counter()
    ngrams = best_kneser_ney(splits["train"].text, splits["val"].text, splits["test"].text)
    ngram_seconds = time.perf_counter() - began
    bigram = min((r for r in ngrams["table"] if r["order"] == 2), key=lambda r: r["val_bpc"])
    bigram["test_bpc"] = KneserNey(splits["train"].text, 2, bigram["discount"]).text_bpc(splits["test"].text)
    with tempfile.TemporaryDirectory() as tmp:
        model = run_notebook(Path(tmp))
        grading = time_grading(Path(tmp))
    return {"machine": f"{machine()}, Python {PYTHON_VERSION}", "model": model, "grading": grading,
            "ngram": ngrams, "bigram": bigram, "ngram_seconds": ngram_seconds,
            "sizes": {name: len(part) for name, part in splits.items()}}


BUDGETS = {"complete notebook, as a student runs it": Target(300, unit=" s"),
           "of which training": Target(180, unit=" s"),
           f"grade one submission, nbgrader autograde (mean of {STUDENTS})": Target(20, unit=" s"),
           f"grade one submission, hardened grader (mean of {STUDENTS})": Target(20, unit=" s")}


def report(results: dict) -> str:
    model, grading, bigram = results["model"], results["grading"], results["bigram"]
    best, sizes = results["ngram"]["best"], results["sizes"]
    by_order = {}
    for row in results["ngram"]["table"]:
        if row["order"] not in by_order or row["val_bpc"] < by_order[row["order"]]["val_bpc"]:
            by_order[row["order"]] = row
    seconds = dict(zip(BUDGETS, (model["notebook_seconds"], model["train_seconds"],
                                 grading["nbgrader_seconds"], grading["hardened_seconds"])))
    beats = {"bigram": model["test"] < bigram["test_bpc"], "best": model["test"] < best["test_bpc"]}
    return "\n".join([
        "# Lab 12: time budgets and held-out bits per character", "",
        f"Written by `python -m benchmarks.lab12` on {results['machine']}. Text: Python's help topics "
        f"(`pydoc_data`), {sizes['train']:,d} / {sizes['val']:,d} / {sizes['test']:,d} characters "
        "of train / validation / test, split by topic.", "",
        "## Time", "",
        markdown_table(["what", "seconds", "budget", "met"],
                       [[what, f"{s:.0f}", BUDGETS[what], BUDGETS[what].verdict(s)]
                        for what, s in seconds.items()]), "",
        "## Held-out bits per character", "",
        markdown_table(["model", "validation bpc", "test bpc"], [
            ["the lab's model (trained as the notebook trains it)", f"{model['val']:.3f}",
             f"{model['test']:.3f}"],
            [f"bigram (Kneser-Ney, order 2, discount {bigram['discount']})",
             f"{bigram['val_bpc']:.3f}", f"{bigram['test_bpc']:.3f}"],
            [f"best interpolated Kneser-Ney (order {best['order']}, discount {best['discount']}, "
             "chosen on validation)", f"{best['val_bpc']:.3f}", f"{best['test_bpc']:.3f}"]]), "",
        "Kneser-Ney by order (best discount of 0.1-0.9 on validation):", "",
        markdown_table(["order", "discount", "validation bpc"],
                       [[o, r["discount"], f"{r['val_bpc']:.3f}"] for o, r in sorted(by_order.items())]),
        "",
        f"The model beats the bigram model: {'yes' if beats['bigram'] else '**no**'}. "
        f"It beats the best Kneser-Ney model on the test split: {'yes' if beats['best'] else '**no**'}. "
        "What else was tried for the model is in `lab12_variants.md`.", ""])


def main():
    results = measure()
    write("lab12.json", json.dumps(results, indent=1))
    write("lab12.md", report(results))


if __name__ == "__main__":
    main()
