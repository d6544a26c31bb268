"""The one rule for deriving seeds: a base seed, a named stream, an index.

Every random draw of the course that is not the base seed itself (a model's initial weights take
``torch.manual_seed(seed)``) comes from :func:`derive`: the strips a reader trains on at each
step, the strips it is evaluated on at each length, the inputs of each graded check. A stream's
two constants are fixed for good: they are the ones the committed results were measured with, so
changing one changes every number in ``benchmarks/results/``.
"""
from __future__ import annotations

import torch

STREAMS = {                      # name -> (multiplier of the base seed, multiplier of the index)
    "train-strips": (1_000_003, 1),      # one batch of training strips per step
    "eval-strips": (7919, 101),          # one batch of evaluation strips per length
    "text-windows": (1_000_033, 1),      # the training windows of Lab 12's language model
    "checks": (1000, 1),                 # one input set per graded check (index = the check's offset)
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


def seed_everything(seed: int) -> None:
    """Seed torch's global generators (CPU and, when present, every GPU)."""
    torch.manual_seed(seed)
    if torch.cuda.is_available():
        torch.cuda.manual_seed_all(seed)
