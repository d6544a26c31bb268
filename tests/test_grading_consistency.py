"""Both grading paths award the same, cell by cell: nbgrader's autograde (hidden tests in the
student's kernel) and the hardened grader (probes in a sandbox, comparisons outside).

A family of variants of the Lab 8 solution is graded by both: the solution, the untouched release,
and, for every graded function, a notebook that makes it return wrong values, the wrong shape, the
wrong dtype, or raise. Each variant perturbs one function of the attention chain and, alongside,
one of the metrics chain, so every (function, kind) pair appears once in 26 notebooks.
nbgrader grades the family in two courses at once (one per core).
"""
from __future__ import annotations

import json
import threading

import nbformat
import pytest

import nbgrader_harness as harness
from attention_course_instructor.grading.notebook import autograded_test_ids
from attention_course_instructor.grading.notebook import grade_id
from attention_course_instructor.grading.hardened import GradingRun, Limits, grade_batch, sandbox
from conftest import REPO, load_nb

pytestmark = pytest.mark.slow
SEED = 11
KINDS = ("values", "shape", "dtype", "exception")
ATTENTION_CHAIN = {"additive_scores": "task1_solution", "masked_attention_weights": "task1_solution",
                   "attention_context": "task2_solution", "decoder_step": "task3_solution",
                   "greedy_decode": "task3_solution", "results_by_length": "task5_solution"}
METRICS_CHAIN = {"edit_distance": "task4_solution", "character_error_rate": "task4_solution",
                 "exact_accuracy": "task4_solution", "attention_map": "task6_solution"}

PERTURB = '''
def _variant_perturb(result, kind):
    """The first tensor or number of a result, made wrong in one way."""
    import numpy, torch
    if kind == "exception":
        raise RuntimeError("a deliberately broken answer")
    if isinstance(result, torch.Tensor):
        return {"values": lambda t: t + 0.25, "shape": lambda t: t.unsqueeze(0),
                "dtype": lambda t: t.double()}[kind](result)
    if isinstance(result, bool) or isinstance(result, str):
        return result
    if isinstance(result, int):
        return {"values": result + 1, "shape": [result], "dtype": float(result)}[kind]
    if isinstance(result, float):
        return {"values": result + 0.25, "shape": [result], "dtype": numpy.float32(result)}[kind]
    if isinstance(result, (list, tuple)):
        items = list(result)
        for i, item in enumerate(items):
            changed = _variant_perturb(item, kind)
            if changed is not item:
                items[i] = changed
                return type(result)(items)
        return result
    if isinstance(result, dict) and result:
        key = next(iter(result))
        changed = _variant_perturb(result[key], kind)
        return result if changed is result[key] else {**result, key: changed}
    return result
'''


def wrapper(name: str, kind: str) -> str:
    return (f"_variant_{name} = {name}\n\ndef {name}(*args, **kwargs):\n"
            f"    return _variant_perturb(_variant_{name}(*args, **kwargs), {kind!r})\n")


def variants(solution, release) -> dict:
    """student -> notebook."""
    def copy(nb):
        return nbformat.from_dict(json.loads(json.dumps(nb)))

    family = {"solution": copy(solution), "release": copy(release)}
    edited = copy(solution)                      # a real edit of a test cell: restored, and reported
    cell = next(c for c in edited.cells if grade_id(c) == "task6_map_test")
    cell.source = "pass"
    family["edited_test"] = edited
    metrics = list(METRICS_CHAIN)
    for k, kind in enumerate(KINDS):
        for i, name in enumerate(ATTENTION_CHAIN):
            nb = copy(solution)
            other = metrics[(i + k) % len(metrics)] if i < len(metrics) else None
            targets = [(name, ATTENTION_CHAIN[name])] + ([(other, METRICS_CHAIN[other])] if other else [])
            for fn, gid in targets:
                at = next(j for j, c in enumerate(nb.cells) if grade_id(c) == gid)
                nb.cells.insert(at + 1, nbformat.v4.new_code_cell(PERTURB + "\n" + wrapper(fn, kind)))
            family[f"{kind}_{name}" + (f"+{other}" if other else "")] = nb
    return family


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory):
    if not sandbox.available():
        pytest.skip("user namespaces are unavailable: the hardened grader refuses to run unsandboxed")
    base = harness.make_course(tmp_path_factory.mktemp("family"), REPO / "source" / "lab8", "lab8")
    release, solutions = harness.generate(base, "lab8")
    family = variants(load_nb(solutions / "lab8.ipynb"), load_nb(release / "lab8.ipynb"))
    # nbgrader: two course directories graded at once, half of the family each
    names = list(family)
    courses = []
    for half in (names[0::2], names[1::2]):
        course = harness.make_course(tmp_path_factory.mktemp("nbgrader"), REPO / "source" / "lab8", "lab8")
        harness.generate(course, "lab8")
        for student in half:
            folder = course.root / "submitted" / student / "lab8"
            folder.mkdir(parents=True)
            nbformat.write(family[student], folder / "lab8.ipynb")
        courses.append((course, half))
    errors, logs = [], []

    def autograde(course):
        try:
            logs.append(harness.autograde(course, "lab8", seed=SEED))
        except Exception as exc:                       # re-raised below, in the test's thread
            errors.append(exc)

    threads = [threading.Thread(target=autograde, args=(c,)) for c, _ in courses]
    [t.start() for t in threads]
    [t.join() for t in threads]
    if errors:
        raise errors[0]
    nbgrader = {}
    for course, half in courses:
        for student in half:
            nbgrader[student] = {cell: s.score == s.max_score
                                 for cell, s in harness.scores(course, "lab8", student).items()}
    # hardened: the same notebooks, the same seed
    for student, nb in family.items():
        folder = base.root / "submitted" / student / "lab8"
        folder.mkdir(parents=True)
        nbformat.write(nb, folder / "lab8.ipynb")
    run = GradingRun(base.root, "lab8", seed=SEED, limits=Limits(cell_seconds=60, run_seconds=300))
    hardened = {r.student: r for r in grade_batch(run, jobs=2)}
    warned = {}
    for log in logs:
        warned |= harness.warnings_by_student(log, "lab8")
    return family, nbgrader, hardened, warned


def test_the_family_covers_every_graded_function_and_kind(outcomes):
    family, *_ = outcomes
    assert len(family) == 3 + len(KINDS) * len(ATTENTION_CHAIN)
    for name in [*ATTENTION_CHAIN, *METRICS_CHAIN]:
        for kind in KINDS:
            assert any(s.startswith(kind + "_") and name in s.split("_", 1)[1].split("+") for s in family), (name, kind)


def test_both_paths_award_the_same_outcome_in_every_cell(outcomes):
    family, nbgrader, hardened, _ = outcomes
    graded = autograded_test_ids(load_nb(REPO / "source/lab8/lab8.ipynb"))
    disagreements = []
    for student in family:
        mine = {c.grade_id: c for c in hardened[student].cells}
        assert hardened[student].error == "", (student, hardened[student].error)
        for cell in graded:
            passed_hardened = mine[cell].status == "passed"
            if nbgrader[student][cell] != passed_hardened:
                disagreements.append((student, cell, nbgrader[student][cell], mine[cell].status, mine[cell].reasons))
    assert disagreements == []


def test_the_solution_passes_the_release_fails_and_variants_lose_points(outcomes):
    family, nbgrader, hardened, _ = outcomes
    graded = autograded_test_ids(load_nb(REPO / "source/lab8/lab8.ipynb"))
    assert all(nbgrader["solution"][c] for c in graded) and hardened["solution"].score == 23
    assert not any(nbgrader["release"][c] for c in graded) and hardened["release"].score == 0
    for student in family:
        if student not in ("solution", "release", "edited_test"):
            assert hardened[student].score < 23, student
            failed = [c for c in hardened[student].cells if c.status == "failed"]
            assert all(c.reasons for c in failed), student


def test_only_a_real_edit_of_a_test_cell_raises_a_checksum_warning(outcomes):
    family, nbgrader, hardened, warned = outcomes
    checksum = {s: [w for w in warned.get(s, []) if "checksum" in w] for s in family}
    assert checksum["edited_test"] and "task6_map_test" in checksum["edited_test"][0]
    assert {s: w for s, w in checksum.items() if w and s != "edited_test"} == {}
    graded = autograded_test_ids(load_nb(REPO / "source/lab8/lab8.ipynb"))
    assert hardened["edited_test"].score == 23 and all(nbgrader["edited_test"][c] for c in graded)


def test_every_failure_is_explained_without_reference_values(outcomes):
    _, _, hardened, _ = outcomes
    for result in hardened.values():
        for c in result.cells:
            for reason in c.reasons:
                assert reason and "expected [" not in reason and "tensor(" not in reason, (result.student, reason)
