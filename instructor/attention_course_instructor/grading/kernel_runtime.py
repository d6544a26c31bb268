"""What runs inside a grading kernel, beside the student's code.

The grading kernel cannot import the instructor package (the sandbox hides it), so these functions
travel into it as source text (:func:`runtime_source`) in the first cell of every grading kernel
(:func:`~attention_course_instructor.grading.hardened.probes.prelude`), which defines them, calls
them and deletes their names before any student cell runs. They therefore import what they need
inside themselves and use nothing else of this package. nbgrader's hidden tests call
:func:`_course_runtime` in the student's kernel directly (through
:func:`~attention_course_instructor.grading.checks.run_hidden_check`).

- :func:`_course_runtime` -- ``run_probe`` (make a check's inputs, call the student's functions,
  keep what they return as plain data, never raising) and the JSON encoder, both bound to the
  builtins as they were before any student code ran;
- :func:`_course_make_probe` -- the kernel's ``_course_probe(grade_id, seed)``, which runs one
  check's probe and publishes its record under the probe MIME type;
- :func:`_course_make_visible` -- the kernel's ``_course_visible(grade_id, source)``, which runs a
  graded cell's visible checks (the asserts the student was given) once that cell's probe has
  completed, for the instructor's class report only: it never changes a score;
- :func:`_course_cpu_only` -- makes CUDA requests land on the CPU when the grader has no GPU.
"""
import inspect


def _course_runtime():
    import builtins, json
    import torch
    _type, _isinstance, _str, _int, _len = builtins.type, builtins.isinstance, builtins.str, builtins.int, builtins.len
    _Tensor, _tolist, _flatten = torch.Tensor, torch.Tensor.tolist, torch.Tensor.flatten
    _detach, _double, _numel = torch.Tensor.detach, torch.Tensor.double, torch.Tensor.numel
    _dumps, _BaseException, _getattr = json.dumps, builtins.BaseException, builtins.getattr

    class Raised:
        """A student's call raised: only the class's name and whether it is Python's own."""
        def __init__(self, error):
            t = _type(error)
            self.name, self.builtin = t.__name__, t.__module__ == "builtins"

    class Missing:
        def __init__(self, name):
            self.name = name

    class Answer:
        """The student's namespace: ``answer.f(...)`` calls their ``f``; an exception becomes Raised."""
        def __init__(self, namespace):
            self._namespace = namespace
        def __getattr__(self, name):
            if name.startswith("_"):
                raise AttributeError(name)
            fn = self._namespace.get(name)
            if fn is None or not callable(fn):
                return lambda *a, **k: Missing(name)
            def call(*args, **kwargs):
                try:
                    return fn(*args, **kwargs)
                except _BaseException as error:          # noqa: B902 -- a probe survives anything
                    return Raised(error)
            return call
        @staticmethod
        def failed(value):
            return _isinstance(value, (Raised, Missing))

    def plain(x, depth=0):
        if depth > 8:
            return {"kind": "too-deep"}
        t = _type(x)
        if _isinstance(x, _Tensor):
            on_cpu = _str(x.device) == "cpu"
            small = _numel(x) <= 200000
            data = _tolist(_flatten(_double(_detach(x)))) if on_cpu and small and not x.is_complex() else None
            return {"kind": "tensor", "type": t.__module__ + "." + t.__qualname__,
                    "dtype": _str(x.dtype), "device": _str(x.device),
                    "shape": [_int(s) for s in x.shape], "data": data}
        if t is Raised:
            return {"kind": "raised", "name": x.name, "builtin": x.builtin}
        if t is Missing:
            return {"kind": "missing", "name": x.name}
        if t is bool or x is None:
            return {"kind": "bool" if t is bool else "none", "value": x}
        if t is int:
            return {"kind": "int", "value": x}
        if t is float:
            return {"kind": "float", "value": x if x == x else "nan"}
        if t is str:
            return {"kind": "str", "value": x}
        if t in (list, tuple):
            return {"kind": t.__name__, "items": [plain(v, depth + 1) for v in x]}
        if t is dict:
            return {"kind": "dict", "items": [[plain(k, depth + 1), plain(v, depth + 1)] for k, v in x.items()]}
        return {"kind": "other", "type": t.__module__ + "." + t.__qualname__}

    def run_probe(inputs, probe, namespace, seed):
        """Make the inputs, call the student's functions, return plain data (never raises)."""
        out = {}
        try:
            x = inputs(seed)
            probe(Answer(namespace), x, out)
            failure = None
        except _BaseException as error:                  # noqa: B902
            failure = _type(error).__name__ if _type(error).__module__ == "builtins" else "Exception"
        record = {"out": plain(out)}
        if failure is not None:
            record["probe_failed"] = failure
        return record

    return run_probe, _dumps


def _course_make_probe(checks_source, mime):
    """The kernel's ``_course_probe(grade_id, seed)``: runs a check's probe on the student's
    namespace and publishes the plain record under ``mime``; the checks load on first use."""
    from IPython import get_ipython
    from IPython.display import publish_display_data
    run_probe, dumps = _course_runtime()
    shell, loaded, completed = get_ipython(), {}, set()

    def probe(grade_id, seed):
        if not loaded:
            exec(compile(checks_source, "<lab checks>", "exec"), loaded)
        inputs, check_probe = loaded["_COURSE_CHECKS"][grade_id]
        record = run_probe(inputs, check_probe, shell.user_ns, seed)
        publish_display_data({mime: dumps(record)})
        completed.add(grade_id)
    probe.completed = completed
    return probe


def _course_make_visible(completed, not_run):
    """The kernel's ``_course_visible(grade_id, source)``: runs ``source`` (a graded cell's visible
    checks, as released) in the student's namespace, as their own notebook ran it, so that an
    assert that fails is the cell's error. When that cell's probe did not complete in this kernel
    (it is not in ``completed``, the probe's set: it timed out, or the kernel died) the checks are
    not run, and an exception of the class named ``not_run`` is raised instead."""
    from IPython import get_ipython
    shell = get_ipython()
    NotRun = type(not_run, (Exception,), {})

    def visible(grade_id, source):
        if grade_id not in completed:
            raise NotRun(grade_id)
        exec(compile(source, f"<visible checks of {grade_id}>", "exec"), shell.user_ns)
    return visible


def _course_cpu_only():
    """On a machine without CUDA, ``.to("cuda")``, ``.cuda()`` and ``torch.load`` of a GPU
    checkpoint land on the CPU (a lab written on a GPU machine is graded on this one)."""
    import torch
    if torch.cuda.is_available():
        return
    def cpu(device):
        if isinstance(device, torch.device) and device.type == "cuda":
            return torch.device("cpu")
        if isinstance(device, str) and device.startswith("cuda"):
            return "cpu"
        return device
    def to(original):
        def patched(self, *args, **kwargs):
            args = tuple(cpu(a) for a in args)
            if "device" in kwargs:
                kwargs["device"] = cpu(kwargs["device"])
            return original(self, *args, **kwargs)
        return patched
    torch.Tensor.to = to(torch.Tensor.to)
    torch.nn.Module.to = to(torch.nn.Module.to)
    torch.Tensor.cuda = lambda self, *a, **k: self
    torch.nn.Module.cuda = lambda self, *a, **k: self
    _load = torch.load
    torch.load = lambda *a, **k: _load(*a, **{**k, "map_location": "cpu"})


def runtime_source() -> str:
    """The functions above as source text, for the first cell of a grading kernel."""
    return "\n\n".join(inspect.getsource(f) for f in (_course_runtime, _course_make_probe,
                                                       _course_make_visible, _course_cpu_only))
