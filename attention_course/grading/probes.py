"""How hardened grading moves a student's answers out of the kernel as plain data.

The grading kernel never sees a reference value or a comparison. Each graded cell is replaced by a
*probe*: code that calls the student's functions on inputs and hands the results to
``_course_emit``, which turns them into plain JSON (numbers, strings, lists, and a tagged form for
tensors that records their type, dtype, device and shape) and publishes them as a display output
of a private MIME type. The grader reads that output and checks it in its own clean process.

:data:`PRELUDE` runs first in every grading kernel. It keeps private references to everything the
emitter needs *before* any student code runs, so later monkeypatching of ``torch``, ``json`` or
``IPython`` cannot change what is emitted; it also makes CUDA requests land on the CPU when the
grader has no GPU (attack 20 of the hardened-grading issue).
"""
from __future__ import annotations

import math

MIME = "application/x-course-probe+json"

PRELUDE = r'''
def _course_make_runtime():
    import json, builtins
    import torch
    from IPython.display import publish_display_data
    _type, _isinstance, _str, _len, _float, _int = builtins.type, builtins.isinstance, builtins.str, builtins.len, builtins.float, builtins.int
    _Tensor, _tolist, _flatten = torch.Tensor, torch.Tensor.tolist, torch.Tensor.flatten
    _detach, _double = torch.Tensor.detach, torch.Tensor.double
    _dumps, _publish = json.dumps, publish_display_data

    def plain(x, depth=0):
        if depth > 6:
            return {"kind": "too-deep"}
        t = _type(x)
        if _isinstance(x, _Tensor):
            on_cpu = _str(x.device) == "cpu"
            data = _tolist(_flatten(_double(_detach(x)))) if on_cpu and x.numel() <= 100000 else None
            return {"kind": "tensor", "type": t.__module__ + "." + t.__qualname__,
                    "dtype": _str(x.dtype), "device": _str(x.device), "shape": [_int(s) for s in x.shape],
                    "data": data}
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

    def call(fn, *args, **kwargs):
        try:
            return plain(fn(*args, **kwargs))
        except BaseException as e:              # the probe reports the error class, nothing else
            return {"kind": "error", "type": _type(e).__name__}

    def emit(values):
        _publish({"application/x-course-probe+json": _dumps(values)})

    return call, emit

_course_call, _course_emit = _course_make_runtime()
del _course_make_runtime


def _course_cpu_only():
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

_course_cpu_only()
del _course_cpu_only
'''


def tensor(value: dict, dtype: str = "torch.float32", shape=None) -> tuple[list | None, str]:
    """The data of a probed tensor, or None and the reason it cannot count as an answer."""
    if not isinstance(value, dict) or value.get("kind") != "tensor":
        kind = value.get("kind") if isinstance(value, dict) else type(value).__name__
        if kind == "error":
            return None, f"raised {value.get('type')}"
        return None, f"expected a tensor, got {kind} ({value.get('type', '')})".replace(" ()", "")
    if value["type"] != "torch.Tensor":
        return None, f"expected a plain torch.Tensor, got {value['type']}"
    if value["dtype"] != dtype:
        return None, f"expected dtype {dtype}, got {value['dtype']}"
    if value["device"] != "cpu":
        return None, f"expected a tensor on the CPU, got {value['device']}"
    if shape is not None and tuple(value["shape"]) != tuple(shape):
        return None, f"expected shape {tuple(shape)}, got {tuple(value['shape'])}"
    if value["data"] is None:
        return None, "tensor too large to check"
    return value["data"], ""


def close(got: list, expected, rtol: float = 1.3e-6, atol: float = 1e-5) -> bool:
    """Element-wise closeness of two flat float lists (torch.testing's float32 defaults)."""
    expected = [float(x) for x in expected]
    if len(got) != len(expected):
        return False
    return all(math.isclose(g, e, rel_tol=rtol, abs_tol=atol) for g, e in zip(got, expected))


def python(value: dict):
    """A probed plain Python value back as Python (tensors and errors stay tagged dicts)."""
    kind = value.get("kind")
    if kind in ("bool", "int", "str", "none"):
        return value["value"]
    if kind == "float":
        return float("nan") if value["value"] == "nan" else value["value"]
    if kind in ("list", "tuple"):
        items = [python(v) for v in value["items"]]
        return items if kind == "list" else tuple(items)
    if kind == "dict":
        return {_key(python(k)): python(v) for k, v in value["items"]}
    return value


def _key(k):
    return tuple(k) if isinstance(k, list) else k
