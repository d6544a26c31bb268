"""Position codes compared: binary counting, and how alike two positions' codes are by their gap.

Used by Section 8.6 (``book/chapter8/positions.md``) and its figure
(:class:`~attention_course.book.figures.PositionSimilarityFigure`).
"""
from __future__ import annotations

import torch


def binary_positions(n: int, bits: int) -> torch.Tensor:
    """(n, bits) binary counting: column b is bit b of the position (lowest bit first)."""
    p = torch.arange(n)[:, None]
    return ((p >> torch.arange(bits)) & 1).float()


def similarity_by_gap(codes: torch.Tensor) -> dict:
    """For each gap g: the dot products codes[p] . codes[p + g] over all p, as min/mean/max."""
    n = len(codes)
    gram = codes @ codes.T                                     # (n, n)
    out = {}
    for g in range(n):
        values = torch.diagonal(gram, offset=g)
        out[g] = {"min": float(values.min()), "mean": float(values.mean()), "max": float(values.max())}
    return out
