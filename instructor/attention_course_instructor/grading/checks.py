"""The checks framework: a lab's graded cells, checked once, by either grader.

A lab's checks live beside its notebook, in ``source/<lab>/checks.py`` (instructor side: never
released, never installed). For every autograded cell it declares one check, a class holding
three functions::

    lab = Lab("lab8", run_cells=("setup", "reader_step"))

    @lab.check("task1_scores_test")
    class AdditiveScores:
        def inputs(seed):                    # the inputs, made from this check's own seed
            ...
        def probe(answer, x, out):           # call the student's functions on them
            out["scores"] = answer.additive_scores(x["query"], x["keys"], x["v"])
        def compare(got, x, ref, expect):    # judge what came back, against the reference
            expect.tensor_close(got["scores"], "additive_scores(query, keys, v)",
                                ref.additive_scores(x["query"], x["keys"], x["v"]), "...")

``inputs`` and ``probe`` run where the student's code runs; they may use only the standard
library, torch and the course package, the module's imports, its UPPERCASE literal constants and
the helpers marked :func:`shared`. ``compare`` runs on the grader's side: ``ref`` is the lab's
reference -- the solution cells of the source notebook (and the locked cells named in
``run_cells``), executed in a namespace of their own -- and ``expect`` (:class:`Expect`) collects
every failed expectation as a message in the lab's words.

How each grader runs a check:

- **nbgrader**: the hidden-test block of the cell is one call, ``run_hidden_check("lab8",
  "task1_scores_test", globals())``; it runs the three parts in the student's kernel and raises an
  ``AssertionError`` listing every failure.
- **hardened** (:mod:`attention_course_instructor.grading.hardened`): only ``inputs`` and ``probe`` travel
  into the sandboxed kernel, as source (:func:`kernel_source`); the probe's results come back as
  plain data and ``compare`` runs in the grader's own process.

In both, the probe's results pass through the same plain-data round trip (:mod:`~attention_course_instructor.grading.kernel_runtime`'s
``plain``, then :func:`from_plain`), so ``compare`` sees the same values and says the same words.
Messages never quote text produced by student code (an exception's class name only when it is one
of Python's own) nor a value derived from the reference.
"""
from __future__ import annotations

import ast
import builtins
import contextlib
import hashlib
import importlib.util
import inspect
import io
import math
import os
import re
import sys
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

from attention_course.seeds import part_seed
from attention_course_instructor.grading.kernel_runtime import _course_runtime

#: ``COURSE_CHECKS_DIR`` names ``source/<lab>/`` while nbgrader autogrades (set by the course's
#: preprocessor); ``COURSE_GRADING_SEED`` varies the inputs (default 0).
CHECKS_DIR_VARIABLE, SEED_VARIABLE = "COURSE_CHECKS_DIR", "COURSE_GRADING_SEED"
CHECKS_FILE = "checks.py"

# Exception classes whose names may be quoted back to a student (Python's own, not the student's).
QUOTABLE_ERRORS = frozenset(name for name, obj in vars(builtins).items()
                            if isinstance(obj, type) and issubclass(obj, BaseException))

# ---- what came back, as the grader sees it -------------------------------------------------------

@dataclass(frozen=True)
class Raised:
    name: str
    builtin: bool

    def describe(self) -> str:
        if self.builtin and self.name in QUOTABLE_ERRORS:
            return f"raised {self.name}{ERROR_HINTS.get(self.name, '')}"
        return "raised an exception of a class defined in your notebook"


# what an exception raised inside a tensor computation usually means, in the course's words
ERROR_HINTS = {
    "RuntimeError": " (in tensor code, usually sizes that do not match: check the shapes of what "
                    "is added, multiplied or stacked)",
    "IndexError": " (an index outside a tensor or list)",
    "TypeError": " (an argument of the wrong type, or the wrong number of arguments)",
    "NotImplementedError": " (the answer is not written yet)",
    "NameError": " (a name that is not defined: a helper missing, or a cell not run)",
}


@dataclass(frozen=True)
class Missing:
    name: str


@dataclass(frozen=True)
class TensorAnswer:
    type: str
    dtype: str
    device: str
    shape: tuple
    data: list | None


@dataclass(frozen=True)
class Opaque:
    """A value of a type the probe does not pass back (its type name is never quoted)."""


def from_plain(value):
    """A probed value as the grader works with it: Python values, TensorAnswer, Raised, Missing."""
    if not isinstance(value, dict):
        return Opaque()
    kind = value.get("kind")
    if kind in ("bool", "int", "str", "none"):
        return value.get("value")
    if kind == "float":
        return float("nan") if value.get("value") == "nan" else float(value.get("value"))
    if kind in ("list", "tuple"):
        items = [from_plain(v) for v in value.get("items", [])]
        return items if kind == "list" else tuple(items)
    if kind == "dict":
        out = {}
        for pair in value.get("items", []):
            key = from_plain(pair[0])
            out[tuple(key) if isinstance(key, list) else key] = from_plain(pair[1])
        return out
    if kind == "tensor":
        return TensorAnswer(str(value.get("type")), str(value.get("dtype")), str(value.get("device")),
                            tuple(int(s) for s in value.get("shape", [])), value.get("data"))
    if kind == "raised":
        return Raised(str(value.get("name")), bool(value.get("builtin")))
    if kind == "missing":
        return Missing(str(value.get("name")))
    return Opaque()


#: how a message names the type of what came back (the lab's words, never the student's)
TYPE_WORDS = {TensorAnswer: "a tensor", Opaque: "an object of another type", bool: "a bool",
              int: "an int", float: "a float", str: "a string", list: "a list", tuple: "a tuple",
              dict: "a dict", type(None): "None", object: "another type"}


def _type_word(value) -> str:
    return TYPE_WORDS.get(type(value), TYPE_WORDS[object])


#: the most of a shape a message quotes: its rank and this many leading sizes (a returned shape is
#: the student's to choose, and must not carry more than a few characters of their choosing back)
SHAPE_DIMS_QUOTED = 4
_SAFE_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_.]{0,39}")


def describe_shape(shape) -> str:
    """A returned shape as a message may quote it: ``(3, 7)``; past four sizes, the first four and
    the rank, ``(3, 7, 1, 1, ...) (rank 300)``; every size at most 9 digits."""
    sizes = [int(s) for s in shape]
    shown = [str(s) if 0 <= s < 10 ** 9 else "?" for s in sizes[:SHAPE_DIMS_QUOTED]]
    if len(sizes) <= SHAPE_DIMS_QUOTED:
        return "(" + ", ".join(shown) + ("," if len(shown) == 1 else "") + ")"
    return "(" + ", ".join(shown) + f", ...) (rank {len(sizes)})"


def quoted_word(text: str, otherwise: str = "another value") -> str:
    """A name the probe reported (a dtype, a device) quoted only when it is a short identifier."""
    text = str(text)
    return text if _SAFE_WORD.fullmatch(text) else otherwise


class Expect:
    """Collects every failed expectation of one check, as messages a student can act on.

    What the student's code returned reaches a message only through :func:`describe_shape` and
    :func:`quoted_word`: a bounded number of characters, whatever the kernel reports."""

    def __init__(self):
        self.failures: list[str] = []

    @property
    def ok(self) -> bool:
        return not self.failures

    def fail(self, message: str) -> None:
        if message not in self.failures:
            self.failures.append(message)

    def returned(self, got, what: str) -> bool:
        """True if ``what`` returned normally; else records why not."""
        if isinstance(got, NotReached):
            return False
        if isinstance(got, Missing):
            self.fail(f"{quoted_word(got.name, 'a function the task names')} is not defined: run its "
                      "cell, and keep its name and arguments")
            return False
        if isinstance(got, Raised):
            self.fail(f"{what} {got.describe()}")
            return False
        return True

    def tensor(self, got, what: str, shape=None, dtype: str = "torch.float32", shape_words: str = ""):
        """The values of a returned tensor as a torch tensor (type, dtype, device, shape checked
        first, in that order), or None after recording what is wrong."""
        import torch

        if not self.returned(got, what):
            return None
        if not isinstance(got, TensorAnswer):
            self.fail(f"{what} should return a torch.Tensor, got {_type_word(got)}")
            return None
        if got.type != "torch.Tensor":
            self.fail(f"{what} should return a plain torch.Tensor, not a subclass of it")
            return None
        if got.dtype != dtype:
            self.fail(f"{what} should return dtype {dtype}, got {quoted_word(got.dtype, 'another dtype')}")
            return None
        if got.device != "cpu":
            device = quoted_word(str(got.device).split(":")[0], "another device")
            self.fail(f"{what} should return a tensor on the CPU, got one on {device}")
            return None
        if shape is not None and tuple(got.shape) != tuple(shape):
            want = shape_words or str(tuple(shape))
            self.fail(f"{what} should have shape {want}, got {describe_shape(got.shape)}")
            return None
        if got.data is None:
            self.fail(f"{what} returned a tensor too large to check")
            return None
        return torch.tensor(got.data, dtype=torch.float64).reshape(got.shape)

    def tensor_close(self, got, what: str, expected, message: str, shape=None, shape_words: str = "",
                     dtype: str = "torch.float32", rtol: float = 1.3e-6, atol: float = 1e-5):
        """:meth:`tensor` then :meth:`close`, in one call: a returned tensor of this type, dtype,
        device and shape (``expected``'s shape unless given) close to ``expected``. Returns its
        values, or None after recording what is wrong."""
        import torch

        shape = tuple(torch.as_tensor(expected).shape) if shape is None else shape
        values = self.tensor(got, what, shape=shape, dtype=dtype, shape_words=shape_words)
        self.close(values, expected, message, rtol=rtol, atol=atol)
        return values

    def value(self, got, what: str, kinds: tuple):
        """A returned Python value of one of ``kinds`` (exact types: ``int`` is not ``bool``)."""
        if not self.returned(got, what):
            return None
        if type(got) not in kinds:
            words = " or ".join(_type_word(k()) for k in kinds)
            self.fail(f"{what} should return {words}, got {_type_word(got)}")
            return None
        return got

    def close(self, actual, expected, message: str, rtol: float = 1.3e-6, atol: float = 1e-5) -> bool:
        """``actual`` (from :meth:`tensor`) close to ``expected`` element-wise; skipped (False) when
        an earlier expectation already failed for it."""
        import torch

        if actual is None:
            return False
        expected = torch.as_tensor(expected).detach().to("cpu", torch.float64)
        ok = (actual.shape == expected.shape and
              bool(torch.isclose(actual, expected, rtol=rtol, atol=atol, equal_nan=False).all()))
        if not ok:
            self.fail(message)
        return ok

    def equal(self, actual, expected, message: str) -> bool:
        if actual is None:
            return False
        ok = type(actual) is type(expected) and actual == expected
        if isinstance(expected, float) and isinstance(actual, float):
            ok = math.isclose(actual, expected, rel_tol=1e-12, abs_tol=1e-12)
        if not ok:
            self.fail(message)
        return ok

    def that(self, condition: bool, message: str) -> bool:
        if not condition:
            self.fail(message)
        return bool(condition)

    def raised(self, got, error: str, message: str) -> bool:
        """The call raised the named builtin exception (anything else fails with ``message``)."""
        if isinstance(got, (Missing, NotReached)):
            return self.returned(got, "")
        ok = isinstance(got, Raised) and got.builtin and got.name == error
        if not ok:
            self.fail(message)
        return ok


# ---- a lab's checks ---------------------------------------------------------------------------

def shared(fn):
    """Mark a helper of a checks file that ``inputs`` or ``probe`` use: it travels with them."""
    fn.__course_shared__ = True
    return fn


@dataclass
class Check:
    grade_id: str
    inputs: object
    probe: object
    compare: object
    shortcuts: tuple = ()


@dataclass
class Lab:
    """The checks of one lab, registered by ``@lab.check(grade_id)`` in its checks file.

    ``run_cells``: the locked code cells (by grade_id) that the probes and the reference need,
    run before the answers. ``shortcuts``: for each graded function, imports that would do the
    task for the student (a library, a course building block); the hardened report notes them.
    """

    name: str
    run_cells: tuple = ("setup",)
    shortcuts: dict = field(default_factory=dict)
    checks: dict = field(default_factory=dict)
    folder: Path | None = None

    def check(self, grade_id: str):
        def register(cls):
            parts = {p: cls.__dict__.get(p) for p in ("inputs", "probe", "compare")}
            missing = [p for p, fn in parts.items() if not callable(fn)]
            if missing:
                raise TypeError(f"check {grade_id!r} ({cls.__name__}) lacks {missing}")
            if grade_id in self.checks:
                raise ValueError(f"two checks for {grade_id!r}")
            self.checks[grade_id] = Check(grade_id, parts["inputs"], parts["probe"], parts["compare"])
            return cls
        return register

    # -- instructor side ------------------------------------------------------------------------
    @property
    def notebook(self) -> Path:
        return self.folder / f"{self.name}.ipynb"

    def inputs(self, grade_id: str, seed: int):
        """One check's inputs under the lab's kernel seed: made from :func:`check_seed`."""
        return self.checks[grade_id].inputs(check_seed(seed, grade_id))

    def compare(self, grade_id: str, record: dict, seed: int) -> list[str]:
        """Every failure message of one check, given the probe's plain record (empty: passed)."""
        check = self.checks[grade_id]
        expect = Expect()
        if not isinstance(record, dict) or not isinstance(record.get("out"), dict):
            return ["the check produced no answer"]
        got = from_plain(record["out"])
        if not isinstance(got, dict):
            return ["the check produced no answer"]
        x = self.inputs(grade_id, seed)                # fresh inputs: the student may have mutated theirs
        check.compare(_Got(got), x, reference(self), expect)
        if record.get("probe_failed"):
            expect.fail("what your functions returned could not be used as the task describes "
                        "(check the types and the tuple structure of what they return)")
        return expect.failures


class _Got(dict):
    """The probe's results; a key the probe never reached (it stopped early) reads as NotReached."""

    def __missing__(self, key):
        return NotReached()


class NotReached:
    """A result the probe never reached because an earlier call failed (already reported)."""


def load_lab(folder: Path | str) -> Lab:
    """Import ``<folder>/checks.py`` and return its :class:`Lab` (cached per folder)."""
    folder = Path(folder).resolve()
    key = str(folder)
    if key not in _LABS:
        path = folder / CHECKS_FILE
        if not path.exists():
            raise FileNotFoundError(f"{path} does not exist: a lab's checks live in source/<lab>/{CHECKS_FILE}")
        spec = importlib.util.spec_from_file_location(f"course_checks_{folder.name}", path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
        labs = [v for v in vars(module).values() if isinstance(v, Lab)]
        if len(labs) != 1:
            raise ValueError(f"{path} must define exactly one Lab, found {len(labs)}")
        labs[0].folder = folder
        labs[0].module = module
        _LABS[key] = labs[0]
    return _LABS[key]


_LABS: dict[str, Lab] = {}
_REFERENCES: dict[str, object] = {}


class Reference:
    """The lab's reference solution: attribute access gives the solution's functions."""

    def __init__(self, namespace: dict, name: str):
        self._namespace, self._name = namespace, name

    def __getattr__(self, item):
        try:
            return self._namespace[item]
        except KeyError:
            raise AttributeError(f"the reference of {self._name} defines no {item!r}") from None


def reference(lab: Lab) -> Reference:
    """Run the lab's ``run_cells`` and solution cells of the source notebook in a namespace of
    their own (output discarded; the long-running cells are not among them)."""
    key = str(lab.notebook)
    if key not in _REFERENCES:
        import nbformat

        import torch

        nb = nbformat.read(lab.notebook, as_version=4)
        namespace: dict = {"__name__": f"reference_{lab.name}"}
        environ, threads = dict(os.environ), torch.get_num_threads()
        try:
            with contextlib.redirect_stdout(io.StringIO()), _quiet_warnings():
                for cell in nb.cells:
                    meta = cell.metadata.get("nbgrader", {})
                    wanted = meta.get("grade_id") in lab.run_cells or (meta.get("solution") and not meta.get("grade"))
                    if cell.cell_type == "code" and wanted:
                        # dont_inherit: this module's ``from __future__ import annotations`` must
                        # not turn a cell's dataclass annotations into strings
                        exec(compile(cell.source, f"<{lab.name} reference: {meta.get('grade_id')}>", "exec",
                                     dont_inherit=True),
                             namespace)
        finally:                  # the lab's first cell sets threads and variables: not the grader's
            os.environ.clear()
            os.environ.update(environ)
            torch.set_num_threads(threads)
        _REFERENCES[key] = Reference(namespace, lab.name)
    return _REFERENCES[key]


def reference_namespace(lab_name: str, source: Path | None = None) -> Reference:
    """The reference solution of a lab of this repository (benchmarks and tests use it)."""
    from attention_course_instructor import paths

    return reference(load_lab((source or paths.SOURCE) / lab_name))


@contextlib.contextmanager
def _quiet_warnings():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


# ---- what travels to the kernel -------------------------------------------------------------

def _function_source(fn) -> str:
    lines = textwrap.dedent(inspect.getsource(fn)).splitlines()
    while lines and lines[0].lstrip().startswith("@"):
        lines.pop(0)
    return "\n".join(lines)


def kernel_source(lab: Lab) -> str:
    """The checks file's kernel side: its imports (not of the grading package), UPPERCASE literal
    constants, ``@shared`` helpers and every check's ``inputs`` and ``probe`` -- never ``compare``
    nor the reference. Defines ``_COURSE_CHECKS = {grade_id: (inputs, probe)}``."""
    module = lab.module
    tree = ast.parse(inspect.getsource(module))
    parts = []
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [a.name for a in node.names]
            origin = node.module if isinstance(node, ast.ImportFrom) else names[0]
            if origin and not origin.startswith("attention_course_instructor.grading") and origin != "__future__":
                parts.append(ast.unparse(node))
        elif isinstance(node, ast.Assign) and all(isinstance(t, ast.Name) and t.id.isupper() for t in node.targets):
            try:
                ast.literal_eval(node.value)
            except ValueError:
                continue
            parts.append(ast.unparse(node))
    for value in vars(module).values():
        if callable(value) and getattr(value, "__course_shared__", False):
            parts.append(_function_source(value))
    entries = []
    for i, check in enumerate(lab.checks.values()):
        for role in ("inputs", "probe"):
            src = _function_source(getattr(check, role))
            parts.append(src.replace(f"def {role}(", f"def _check{i}_{role}(", 1))
        entries.append(f"{check.grade_id!r}: (_check{i}_inputs, _check{i}_probe)")
    parts.append("_COURSE_CHECKS = {" + ", ".join(entries) + "}")
    return "\n\n".join(parts) + "\n"


# ---- nbgrader's hidden tests ----------------------------------------------------------------

def grading_seed() -> int:
    return int(os.environ.get(SEED_VARIABLE, "0"))


SEED_FILE = ".grading-seed"     # the course's own private seed, in the course folder


def course_seed(course_root, create: bool = False) -> int | None:
    """The course's own grading seed, kept in ``<course>/.grading-seed`` (mode 0600): made from
    the system's random source the first time it is asked for with ``create``, the same for every
    later run (so that a re-grade checks the same inputs); None where there is none."""
    import secrets
    from pathlib import Path

    if not (Path(course_root) / SEED_FILE).exists():
        if not create:
            return None
        return keep_course_seed(course_root, secrets.randbits(48))
    return int((Path(course_root) / SEED_FILE).read_text().strip())


def keep_course_seed(course_root, seed: int) -> int:
    """Keep ``seed`` as the course's own (:func:`course_seed`) where it has none yet; returns the
    course's seed (an earlier one, where a run kept one meanwhile). The file appears whole or not
    at all: written under another name, then linked to its own, which fails where it exists."""
    import tempfile
    from pathlib import Path

    path = Path(course_root) / SEED_FILE
    fd, written = tempfile.mkstemp(prefix=SEED_FILE + ".", dir=path.parent)     # mode 0600
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(f"{int(seed)}\n")
        os.link(written, path)
    except FileExistsError:
        return int(path.read_text().strip())
    finally:
        os.unlink(written)
    return int(seed)


def kernel_seed(seed: int, lab_name: str) -> int:
    """The seed the checks' inputs are made from, for ``lab_name`` under the private grading
    ``seed``: a one-way function of both. The hardened grader hands a kernel only this, so a
    submission that reads it (and smuggles it out) learns nothing of the private seed itself."""
    digest = hashlib.sha256(f"course-grading:{int(seed)}:{lab_name}".encode()).digest()
    return int.from_bytes(digest[:6], "big")          # 48 bits: derive() keeps it within int64


def check_seed(seed: int, grade_id: str) -> int:
    """The seed one check's ``inputs`` receive: the lab's kernel seed and the check's cell, mixed
    (:func:`attention_course.seeds.part_seed`), so that no two checks share draws and no author
    numbers them. What a check makes from it it names in turn (``part_seed(seed, "reader")``)."""
    return part_seed(seed, grade_id)


def checks_folder(lab_name: str) -> Path:
    """Where ``source/<lab>/`` is while a hidden test runs: ``$COURSE_CHECKS_DIR`` (set during
    ``nbgrader autograde``), or the working folder when it is ``source/<lab>`` itself (an
    instructor running the source notebook). Never the student's own folder."""
    named = os.environ.get(CHECKS_DIR_VARIABLE)
    if named:
        return Path(named)
    here = Path.cwd()
    if here.name == lab_name and here.parent.name == "source":
        return here
    raise RuntimeError(f"the checks of {lab_name} are not available here: grade with nbgrader "
                       "(with the course's nbgrader_config.py) or the hardened grader")


def run_hidden_check(lab_name: str, grade_id: str, namespace: dict) -> None:
    """The hidden test of one graded cell under nbgrader: raise AssertionError listing every
    failure (in the lab's words), silently pass otherwise."""
    lab = load_lab(checks_folder(lab_name))
    check = lab.checks[grade_id]
    run_probe, _ = _course_runtime()
    seed = kernel_seed(grading_seed(), lab_name)
    with _quiet_warnings(), contextlib.redirect_stderr(io.StringIO()):
        record = run_probe(check.inputs, check.probe, namespace, check_seed(seed, grade_id))
        failures = lab.compare(grade_id, record, seed)
    if failures:
        raise AssertionError("; ".join(failures))
