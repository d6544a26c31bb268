"""Shape checks that name the expected shape in their error."""
from __future__ import annotations

import torch


def check_shape(name: str, tensor: torch.Tensor, expected: tuple) -> None:
    """Raise a ValueError naming ``expected`` (ints, or None for any size) if ``tensor`` differs."""
    if not isinstance(tensor, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(tensor).__name__}")
    ok = tensor.dim() == len(expected) and all(
        e is None or e == s for e, s in zip(expected, tensor.shape))
    if not ok:
        want = "(" + ", ".join("*" if e is None else str(e) for e in expected) + ")"
        raise ValueError(f"{name} should have shape {want}, got {tuple(tensor.shape)}")
