"""Lab 8's visible checks catch the bugs its own text names, each with a message naming the problem.

Each typical wrong answer below replaces one answer of the solution; the notebook's code cells
(the long training, evaluation and plotting cells left out) then run in order, visible checks only,
and the first failure must be an AssertionError from the expected test cell whose message says
what is wrong.
"""
from __future__ import annotations

import contextlib
import io

import pytest

from attention_course_instructor.grading.notebook import released_test_source
from conftest import REPO, load_nb

LONG_RUNNING = {"task5_train", "task5_compare", "task6_maps", "data_show"}

WRONG = {
    "scores without unsqueeze (fails only for B > 1)": (
        "task1_solution", "def additive_scores(query, keys, v):\n    return torch.tanh(query + keys) @ v\n",
        "task1_scores_test", "unsqueeze"),
    "softmax without subtracting the maximum": (
        "task1_solution", "def masked_attention_weights(scores, mask):\n"
        "    if not bool(mask.any(-1).all()):\n        raise ValueError('empty row')\n"
        "    e = torch.exp(scores) * mask\n    return e / e.sum(-1, keepdim=True)\n",
        "task1_weights_test", "nan"),
    "no ValueError for a row without real columns": (
        "task1_solution", "def masked_attention_weights(scores, mask):\n"
        "    return torch.softmax(scores.masked_fill(~mask, float('-inf')), -1).nan_to_num(0.0)\n",
        "task1_weights_test", "ValueError"),
    "the mask applied after the softmax (rows no longer sum to one)": (
        "task1_solution", "def masked_attention_weights(scores, mask):\n"
        "    if not bool(mask.any(-1).all()):\n        raise ValueError('empty row')\n"
        "    return torch.softmax(scores, -1) * mask\n",
        "task1_weights_test", "sum to one"),
    "context from the whole batch's states": (
        "task2_solution", "def attention_context(weights, states):\n"
        "    return (weights.unsqueeze(-1) * states).sum(1).mean(0, keepdim=True).expand(len(states), -1)\n",
        "task2_context_test", "strip"),
    "a substitution costs 2": (
        "task4_solution", "def edit_distance(a, b):\n"
        "    previous = list(range(len(b) + 1))\n    for i, ca in enumerate(a, start=1):\n"
        "        current = [i]\n        for j, cb in enumerate(b, start=1):\n"
        "            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + 2 * (ca != cb)))\n"
        "        previous = current\n    return previous[-1]\n",
        "task4_edit_test", "substitution"),
    "CER divides by zero for empty targets": (
        "task4_solution", "def character_error_rate(predictions, targets):\n"
        "    return sum(edit_distance(p, t) for p, t in zip(predictions, targets)) / sum(len(t) for t in targets)\n",
        "task4_rates_test", "max(total target length, 1)"),
    "exact accuracy as a count": (
        "task4_solution", "def exact_accuracy(predictions, targets):\n"
        "    return sum(p == t for p, t in zip(predictions, targets))\n",
        "task4_rates_test", "fraction"),
    "attention map without the end-of-string row": (
        "task6_solution", "def attention_map(weights, reading, n_columns):\n    return weights[:len(reading), :n_columns]\n",
        "task6_map_test", "len('427') + 1"),
}


def run_visible(nb, replace_after: str, wrong: str):
    """Run the cells as a student's notebook would, visible checks only; return the grade_id and
    the exception of the first cell that fails (None, None if none fails)."""
    namespace: dict = {"__name__": "__main__"}
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        gid = meta.get("grade_id")
        if cell.cell_type != "code" or gid in LONG_RUNNING:
            continue
        code = released_test_source(cell.source) if meta.get("grade") else cell.source
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                exec(compile(code, gid, "exec"), namespace)
                if gid == replace_after:
                    exec(compile(wrong, "the wrong answer", "exec"), namespace)
        except Exception as exc:                      # the first failing cell is the answer
            return gid, exc
    return None, None


@pytest.fixture(scope="module")
def solution():
    return load_nb(REPO / "solutions/lab8/lab8.ipynb")


def test_the_solution_passes_every_visible_check(solution):
    assert run_visible(solution, "", "") == (None, None)


@pytest.mark.parametrize("bug", list(WRONG))
def test_a_typical_wrong_answer_fails_its_visible_check_with_a_message(solution, bug):
    after, wrong, cell, words = WRONG[bug]
    failed, error = run_visible(solution, after, wrong)
    assert failed == cell, (bug, failed, error)
    assert isinstance(error, AssertionError) and words in str(error), (bug, repr(error))
