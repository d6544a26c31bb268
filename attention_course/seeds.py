"""The rules for deriving seeds.

- :func:`derive`: a base seed, a named stream, an index -- the strips a reader trains on at each
  step, the strips it is evaluated on at each length, the training windows of Lab 12. A stream's
  two constants are fixed for good: they are the ones the committed results were measured with, so
  changing one changes every number in ``benchmarks/results/``.
- :func:`part_seed`: a seed and a *name* -- a graded check's inputs (named by its cell's
  ``grade_id``, by the checks framework), the parts a check makes (``"reader"``, ``"strips"``):
  nothing to number by hand, and parts named differently never share draws.

A model's initial weights take ``torch.manual_seed(seed)`` of the base seed itself.
"""
from __future__ import annotations

import hashlib

import torch

STREAMS = {                      # name -> (multiplier of the base seed, multiplier of the index)
    "train-strips": (1_000_003, 1),      # one batch of training strips per step
    "eval-strips": (7919, 101),          # one batch of evaluation strips per length
    "text-windows": (1_000_033, 1),      # the training windows of Lab 12's language model
}


def derive(seed: int, stream: str, index: int = 0) -> int:
    """The seed of draw ``index`` of ``stream`` under base ``seed`` (a non-negative int)."""
    if stream not in STREAMS:
        raise KeyError(f"unknown seed stream {stream!r}; known: {sorted(STREAMS)}")
    a, b = STREAMS[stream]
    return seed * a + index * b


def generator(seed: int, stream: str, index: int = 0) -> torch.Generator:
    """A ``torch.Generator`` seeded with :func:`derive` (CPU; its draws do not touch the global RNG)."""
    return torch.Generator().manual_seed(derive(seed, stream, index))


def part_seed(seed: int, name: str) -> int:
    """The seed of the part called ``name`` of what ``seed`` makes: a one-way mix of both, 40 bits
    (so that :func:`derive` of it stays within int64)."""
    digest = hashlib.sha256(f"{int(seed)}:{name}".encode()).digest()
    return int.from_bytes(digest[:5], "big")


def part_generator(seed: int, name: str) -> torch.Generator:
    """A ``torch.Generator`` seeded with :func:`part_seed` (CPU; the global RNG is untouched)."""
    return torch.Generator().manual_seed(part_seed(seed, name))


def seed_everything(seed: int) -> None:
    """Seed torch's global generators (CPU and, when present, every GPU)."""
    torch.manual_seed(seed)
    if torch.cuda.is_available():
        torch.cuda.manual_seed_all(seed)
