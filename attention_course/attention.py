"""Attention over a set of states: additive scores, masked softmax weights, context vectors.

These are the reference versions of the functions students write in Lab 8; the readers in
:mod:`attention_course.models.readers` accept any functions with the same signatures, so a
student's implementation can be plugged into a trained model.
"""
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


def additive_scores(query: torch.Tensor, keys: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """Bahdanau-style scores ``e[b, j] = v . tanh(query[b] + keys[b, j])``.

    query: (B, A) -- the decoder's projected query
    keys:  (B, N, A) -- projected column states (plus any location terms)
    v:     (A,)
    returns (B, N)
    """
    check_shape("query", query, (None, None))
    batch, width = query.shape
    check_shape("keys", keys, (batch, None, width))
    check_shape("v", v, (width,))
    return torch.tanh(query.unsqueeze(1) + keys) @ v          # (B, N)


def masked_attention_weights(scores: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Softmax over the last axis where ``mask`` is True; masked positions get exactly zero.

    scores: (B, N) float, mask: (B, N) bool -> weights (B, N), each row summing to one.
    A row with no True entry has nothing to attend to and raises a ValueError.
    """
    check_shape("scores", scores, (None, None))
    check_shape("mask", mask, tuple(scores.shape))
    if mask.dtype != torch.bool:
        raise TypeError(f"mask must be a bool tensor, got {mask.dtype}")
    empty = ~mask.any(dim=-1)
    if bool(empty.any()):
        rows = empty.nonzero().flatten().tolist()
        raise ValueError(f"rows {rows} of the mask have no True entry: nothing to attend to")
    masked = scores.masked_fill(~mask, float("-inf"))
    return torch.softmax(masked, dim=-1)                     # exp(-inf) = 0 exactly


def attention_context(weights: torch.Tensor, states: torch.Tensor) -> torch.Tensor:
    """Weighted sum of the states: weights (B, N), states (B, N, D) -> context (B, D)."""
    check_shape("weights", weights, (None, None))
    check_shape("states", states, (weights.shape[0], weights.shape[1], None))
    return torch.bmm(weights.unsqueeze(1), states).squeeze(1)   # (B, D)
