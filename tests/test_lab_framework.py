"""A lab is its notebook plus one checks file; nothing of it is in the package students install.

- every autograded cell's hidden block is the one call to its check, and every check has a cell;
- what travels into the grading kernel holds no comparison and no reference;
- the package defines no function under a graded task's name, and nothing in it, called as a
  graded function is called by its check, reproduces the reference answer;
- the release holds no checks file, and answers that import graded names are reported.
"""
from __future__ import annotations

import importlib
import inspect
import pkgutil
import signal
import tempfile

import pytest
import torch

import attention_course
from attention_course_instructor.grading import checks as framework
from attention_course_instructor.grading.hardened.assemble import import_notes
from conftest import REPO, load_nb

LABS = {"lab8": REPO / "source" / "lab8", "lab12": REPO / "source" / "lab12",
        "fixture": REPO / "tests/fixtures/course/source/fixture"}
COURSE_LABS = ("lab8", "lab12")
# graded names each lab must have (so that a rename of the notebook cannot empty the tests below)
GRADED = {"lab8": {"additive_scores", "masked_attention_weights", "greedy_decode", "edit_distance"},
          "lab12": {"learn_bpe", "bpe_encode", "attention_weights", "scaled_dot_product", "kv_step",
                    "generate_tokens", "head_ablation", "bits_per_character"}}
# functions of a lab's optional, ungraded parts: no check calls them
OPTIONAL = {"lab12": {"token_bits"}}
# imported for the search, but never called: they mount, build or write when called
NEVER_CALLED = ("attention_course_instructor.grading.hardened.sandbox", "attention_course_instructor.book.build",
                "attention_course_instructor.grading.hardened.cli", "attention_course_instructor.grading.hardened.dask_workers")


def graded_code_cells(nb):
    return [c for c in nb.cells if c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("grade")
            and not c.metadata["nbgrader"].get("solution")]


def solution_functions(nb) -> set[str]:
    import ast

    names = set()
    for c in nb.cells:
        meta = c.metadata.get("nbgrader", {})
        if c.cell_type == "code" and meta.get("solution"):
            names |= {n.name for n in ast.parse(c.source).body if isinstance(n, ast.FunctionDef)}
    return names


@pytest.mark.parametrize("lab_name", LABS)
def test_every_graded_cell_has_one_check_and_a_one_line_hidden_block(lab_name):
    folder = LABS[lab_name]
    lab = framework.load_lab(folder)
    nb = load_nb(folder / f"{lab_name}.ipynb")
    cells = graded_code_cells(nb)
    assert sorted(c.metadata["nbgrader"]["grade_id"] for c in cells) == sorted(lab.checks)
    for c in cells:
        gid = c.metadata["nbgrader"]["grade_id"]
        hidden = c.source.split("### BEGIN HIDDEN TESTS\n")[1].split("### END HIDDEN TESTS")[0]
        assert hidden == ("from attention_course_instructor.grading.checks import run_hidden_check\n"
                          f'run_hidden_check("{lab_name}", "{gid}", globals())\n'), gid


@pytest.mark.parametrize("lab_name", LABS)
def test_the_kernel_side_holds_inputs_and_probes_only(lab_name):
    lab = framework.load_lab(LABS[lab_name])
    source = framework.kernel_source(lab)
    compile(source, "kernel side", "exec")
    assert "compare" not in source and "ref." not in source and "expect" not in source
    assert "attention_course_instructor.grading" not in source
    namespace = {}
    exec(source, namespace)
    assert sorted(namespace["_COURSE_CHECKS"]) == sorted(lab.checks)


def test_the_release_holds_no_checks_file():
    assert not (REPO / "labs/lab8/checks.py").exists() and not (REPO / "labs/lab12/checks.py").exists()
    assert not any((REPO / "labs").rglob("checks.py")) and not any((REPO / "solutions").rglob("checks.py"))


def notebook_classes(nb) -> set[str]:
    import ast

    return {n.name for c in nb.cells if c.cell_type == "code"
            for n in ast.parse(c.source).body if isinstance(n, ast.ClassDef)}


def package_modules():
    """Every module of the package (not the ``__main__`` of a command, which would run it)."""
    return [info for info in pkgutil.walk_packages(attention_course.__path__, "attention_course.")
            if not info.name.endswith("__main__")]


def package_callables():
    """(qualified name, callable) of every function and method defined in the package."""
    found = []
    for info in package_modules():
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            if getattr(value, "__module__", None) != info.name:
                continue
            if inspect.isfunction(value):
                found.append((f"{info.name}.{name}", value))
            elif inspect.isclass(value):
                for attr, member in vars(value).items():
                    if inspect.isfunction(member):
                        found.append((f"{info.name}.{name}.{attr}", member))
                    elif isinstance(member, (staticmethod, classmethod)):
                        found.append((f"{info.name}.{name}.{attr}", member.__func__))
    return found


@pytest.mark.parametrize("lab_name", COURSE_LABS)
def test_the_package_defines_no_function_under_a_graded_name(lab_name):
    graded = solution_functions(load_nb(LABS[lab_name] / f"{lab_name}.ipynb"))
    assert GRADED[lab_name] <= graded
    clashes = [q for q, _ in package_callables() if q.rsplit(".", 1)[-1] in graded]
    assert clashes == []
    for info in package_modules():
        module = importlib.import_module(info.name)
        assert not graded & set(vars(module)), (info.name, graded & set(vars(module)))


class RecordingAnswer:
    """Stands in for a student: records every call a probe makes and answers with the reference."""

    def __init__(self, ref):
        self.ref, self.calls = ref, []

    def __getattr__(self, name):
        def call(*args, **kwargs):
            try:
                result = getattr(self.ref, name)(*args, **kwargs)
            except Exception as error:             # a case where the task asks for an error
                return error
            self.calls.append((name, args, kwargs, result))
            return result
        return call

    @staticmethod
    def failed(value):
        return False


def same(a, b) -> bool:
    if isinstance(b, torch.Tensor):
        return (isinstance(a, torch.Tensor) and type(a) is type(b) and a.shape == b.shape
                and a.dtype == b.dtype and bool(torch.allclose(a.double(), b.double(), atol=1e-6)))
    if isinstance(b, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(b, dict):
        return isinstance(a, dict) and a.keys() == b.keys() and all(same(a[k], b[k]) for k in b)
    return type(a) is type(b) and a == b


def _timeout(*_):
    raise TimeoutError


@pytest.mark.parametrize("lab_name", COURSE_LABS)
def test_no_reference_answer_is_importable_from_the_package(lab_name, tmp_path, monkeypatch):
    """Call everything in the package as each check calls the student's functions: nothing may
    give the reference's answer (the grading seed does not matter for this). What the calls
    write to temporary folders goes under this test's own, removed with it."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    lab = framework.load_lab(LABS[lab_name])
    ref = framework.reference(lab)
    calls = []
    for check in lab.checks.values():
        answer = RecordingAnswer(ref)
        check.probe(answer, check.inputs(0), {})
        calls += answer.calls
    classes = notebook_classes(load_nb(LABS[lab_name] / f"{lab_name}.ipynb"))
    calls = [c for c in calls if c[0] not in classes]      # modules and configs: not answers to match
    # an empty answer (the tokens of the empty text) is matched by anything that returns []
    calls = [c for c in calls if not (isinstance(c[3], (list, tuple, str, dict)) and len(c[3]) == 0)]
    names = {c[0] for c in calls}
    calls = [c for name in sorted(names) for c in [c for c in calls if c[0] == name][:3]]   # 3 each
    # every graded function is called by some check (lab 12's merge_pair only through the others)
    written = solution_functions(load_nb(LABS[lab_name] / f"{lab_name}.ipynb"))
    assert names == written - {"merge_pair"} - OPTIONAL.get(lab_name, set())
    candidates = [(q, f) for q, f in package_callables() if not q.startswith(NEVER_CALLED)]
    assert len(candidates) > 100
    matches = []
    old = signal.signal(signal.SIGALRM, _timeout)
    try:
        for name, args, kwargs, expected in calls:
            for qualified, fn in candidates:
                try:
                    inspect.signature(fn).bind(*args, **kwargs)
                except (TypeError, ValueError):
                    continue
                signal.alarm(5)
                try:
                    got = fn(*args, **kwargs)
                except BaseException:                  # noqa: B902 -- a wrong call may raise anything
                    continue
                finally:
                    signal.alarm(0)
                if same(got, expected):
                    matches.append((name, qualified))
    finally:
        signal.signal(signal.SIGALRM, old)
    assert matches == []


def test_imports_of_graded_names_and_shortcuts_are_reported():
    lab = framework.load_lab(LABS["lab8"])
    source = load_nb(LABS["lab8"] / "lab8.ipynb")
    sources = ["from attention_course.core.seq2seq import decode_greedily\n",
               "from rapidfuzz.distance import Levenshtein\nedit_distance = Levenshtein.distance\n",
               "from attention_course.tasks.readers import greedy_decode\n", "import math\n"]
    roles = [("solution", "task3_solution"), ("solution", "task4_solution"),
             ("extra", "task3_solution"), ("solution", "task6_solution")]
    notes = import_notes(source, sources, roles, lab)
    assert any("task3_solution" in n and "decode_greedily" in n for n in notes)
    assert any("task4_solution" in n and "rapidfuzz" in n for n in notes)
    assert any("greedy_decode from the course package" in n for n in notes)
    assert not any("math" in n for n in notes)
