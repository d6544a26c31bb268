"""The class similarity report (``attention_course_instructor.grading.similarity``, on copydetect).

Five Lab 12 submissions in a throw-away course: alice submits the model answers; bob submits
alice's with every local name changed and the functions of each cell in another order; carol
writes her own BPE, mask and attention; dave pastes the course package's ``attention`` into his
answer; eve submits alice's with a statement that does nothing after every statement (``pass``,
``None``, ``0``, ``...``, a string, ``if False: pass``, ``assert True``, ``x = x``). Bob and eve
are found with alice and dave with the course's file; carol with nobody; the released stubs
count for no one. The same submissions give the same report whatever Python's hash seed.
"""
from __future__ import annotations

import ast
import itertools
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from attention_course_instructor.grading import similarity
from attention_course_instructor.grading.notebook import is_solution

REPO = Path(__file__).resolve().parents[1]
RELEASE = REPO / "labs" / "lab12" / "lab12.ipynb"
SOLUTION = REPO / "solutions" / "lab12" / "lab12.ipynb"
RENAMED = {"merges": "rules", "counts": "tally", "pair": "duo", "ids": "seq", "logits": "scores",
           "probs": "dist", "weights": "w8", "lengths": "lens", "cache": "store", "out": "res",
           "total": "acc", "text": "src", "mask": "allowed", "new_id": "fresh"}

CAROL_TASK1 = '''
def learn_bpe(text, num_merges):
    """Count neighbours chunk by chunk, merge the commonest, repeat."""
    words = {}
    for piece in re.findall(r" ?[A-Za-z]+| ?[0-9]+| ?[^A-Za-z0-9\\s]+|\\s+", text):
        key = tuple(piece.encode("utf-8"))
        words[key] = words.get(key, 0) + 1
    result = []
    while len(result) < num_merges:
        tally = collections.Counter()
        for word, n in words.items():
            for left, right in zip(word, word[1:]):
                tally[(left, right)] += n
        if not tally:
            break
        best = max(tally, key=lambda p: (tally[p], -p[0], -p[1]))
        symbol = 256 + len(result)
        result.append(best)
        words = {tuple(merge_pair(list(w), best, symbol)): n for w, n in words.items()}
    return result


def merge_pair(ids, pair, new_id):
    merged, i = [], 0
    while i < len(ids):
        if i + 1 < len(ids) and (ids[i], ids[i + 1]) == tuple(pair):
            merged.append(new_id)
            i = i + 2
        else:
            merged.append(ids[i])
            i = i + 1
    return merged


def bpe_encode(text, merges):
    tokens = list(text.encode("utf-8"))
    for number, pair in enumerate(merges):
        tokens = merge_pair(tokens, pair, 256 + number)
    return tokens


def bpe_decode(ids, merges):
    table = {b: bytes([b]) for b in range(256)}
    for number, (a, b) in enumerate(merges):
        table[256 + number] = table[a] + table[b]
    return b"".join(table[i] for i in ids).decode("utf-8", errors="replace")
'''
CAROL_TASK2 = '''
def attention_mask(lengths, n):
    positions = torch.arange(n)
    causal = positions[None, :] <= positions[:, None]            # (n, n)
    real = positions[None, :] < torch.as_tensor(lengths)[:, None]   # (B, n)
    return (causal[None] & real[:, None, :])[:, None]


def attention_weights(q, k, mask=None):
    raw = torch.einsum("...id,...jd->...ij", q, k) * q.shape[-1] ** -0.5
    if mask is not None:
        raw = raw.masked_fill(mask.logical_not(), -float("inf"))
    return raw.softmax(-1)


def scaled_dot_product(q, k, v, mask=None):
    return torch.einsum("...ij,...jd->...id", attention_weights(q, k, mask), v)
'''


def answers(notebook: Path) -> dict[str, str]:
    nb = nbformat.read(notebook, as_version=4)
    return {c.metadata["nbgrader"]["grade_id"]: c.source for c in nb.cells
            if c.cell_type == "code" and is_solution(c)}


def submission(course: Path, student: str, replaced: dict[str, str]) -> None:
    """The released notebook with the answer cells in ``replaced`` filled in, as submitted."""
    nb = nbformat.read(RELEASE, as_version=4)
    for cell in nb.cells:
        grade_id = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
        if grade_id in replaced:
            cell.source = replaced[grade_id]
    folder = course / "submitted" / student / "lab12"
    folder.mkdir(parents=True)
    nbformat.write(nb, folder / "lab12.ipynb")


def disguised(source: str) -> str:
    """Every name in RENAMED changed, and the top-level definitions of the cell in reverse order."""
    for old, new in RENAMED.items():
        source = re.sub(rf"\b{old}\b", new, source)
    blocks = re.split(r"\n(?=(?:@torch\.no_grad\(\)\n)?(?:def|class) )", source)
    return "\n".join(reversed(blocks))


JUNK = ("pass", "None", "0", "...", "'nothing to see'", "if False:\n    pass", "assert True", "x = x")


def padded(source: str) -> str:
    """``source`` with a statement that does nothing after each of its statements, at every depth."""
    junk = itertools.cycle(JUNK)

    class Pad(ast.NodeTransformer):
        def generic_visit(self, node):
            super().generic_visit(node)
            for name in ("body", "orelse", "finalbody"):
                body = getattr(node, name, None)
                if isinstance(body, list) and body and isinstance(body[0], ast.stmt):
                    setattr(node, name, [s for stmt in body for s in (stmt, *ast.parse(next(junk)).body)])
            return node

    return ast.unparse(Pad().visit(ast.parse(source)))


def make_course(root: Path) -> Path:
    """The course of the module note, in ``root``."""
    course = root
    (course / "labs" / "lab12").mkdir(parents=True)
    shutil.copy2(RELEASE, course / "labs" / "lab12")
    model = answers(SOLUTION)
    submission(course, "alice", model)
    submission(course, "bob", {grade_id: disguised(code) for grade_id, code in model.items()})
    submission(course, "carol", {"task1_solution": CAROL_TASK1, "task2_solution": CAROL_TASK2})
    course_attention = re.search(r"def attention\(.*?return A @ V, A\n",
                                 (REPO / "attention_course/core/transformer.py").read_text(), re.S)
    submission(course, "dave", {"task2_solution": course_attention[0].replace("Q", "queries")
                                + "\n\nscaled_dot_product = lambda q, k, v, mask=None: "
                                  "attention(q, k, v, mask)[0]\n"})
    submission(course, "eve", {grade_id: padded(code) for grade_id, code in model.items()})
    return course


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    course = make_course(tmp_path_factory.mktemp("course"))
    out = course / "reports" / "lab12"
    import matplotlib.pyplot as plt

    left_open = plt.figure(layout="constrained")        # as an earlier test in the worker may leave
    try:
        return similarity.compare(course, "lab12", out), out
    finally:
        assert plt.fignum_exists(left_open.number)      # the caller's figure is left as it was
        plt.close(left_open)


def test_a_disguised_copy_is_found_with_its_source(report):
    matches, _ = report
    pair = [m for m in matches if {m.student, m.other} == {"alice", "bob"}]
    assert len(pair) == 1 and pair[0].kind == "student"
    assert min(pair[0].student_share, pair[0].other_share) > 0.8, pair


def test_statements_that_do_nothing_hide_no_copy(report):
    """A statement that does nothing after every line took eve's copy to 0.496-0.50 of alice's,
    either side of the 0.5 threshold from one run to the next; they are not compared."""
    matches, _ = report
    pair = [m for m in matches if {m.student, m.other} == {"alice", "eve"}]
    assert len(pair) == 1 and min(pair[0].student_share, pair[0].other_share) > 0.8, pair


def test_the_report_is_the_same_whatever_the_hash_seed(tmp_path):
    """copydetect hashes its k-grams with Python's hash(), salted anew in every process: the
    shares moved by 0.01-0.02 from run to run. Two runs with different seeds write one report."""
    course = make_course(tmp_path / "course")
    readable = {"attention_course/core/transformer.py": (REPO / "attention_course/core/transformer.py").read_text()}
    script = ("import sys, json; from pathlib import Path; "
              "from attention_course_instructor.grading import similarity; "
              "similarity.compare(Path(sys.argv[1]), 'lab12', Path(sys.argv[2]), "
              "readable=json.loads(sys.argv[3]))")
    csvs = []
    for seed in ("1", "2"):
        out = tmp_path / f"out-{seed}"
        subprocess.run([sys.executable, "-c", script, str(course), str(out), __import__("json").dumps(readable)],
                       check=True, env={**os.environ, "PYTHONHASHSEED": seed}, timeout=600)
        csvs.append((out / "similarity.csv").read_text())
    assert csvs[0] == csvs[1] and csvs[0].count("\n") > 2


def test_course_code_pasted_into_an_answer_is_named(report):
    matches, _ = report
    dave = [m for m in matches if "dave" in (m.student, m.other)]
    assert [(m.other, m.kind) for m in dave] == [("attention_course/core/transformer.py", "course")]


def test_independent_answers_and_the_stubs_flag_nobody(report):
    matches, out = report
    assert all("carol" not in (m.student, m.other) for m in matches), matches
    # the stubs every student was handed are boilerplate: carol's unanswered cells, dave's and
    # carol's shared stubs, match nothing; the report lists each pair once
    assert len({frozenset((m.student, m.other)) for m in matches}) == len(matches)
    assert (out / "similarity.html").read_text().count("alice") >= 1
    rows = (out / "similarity.csv").read_text().splitlines()
    assert rows[0].startswith("student,matches,kind") and len(rows) == len(matches) + 1


def test_no_submissions_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="no submissions of lab12"):
        similarity.compare(tmp_path, "lab12", tmp_path / "out")
