"""The encoder-decoder protocol shared by the digit readers, the copy model and the captioner.

A model that writes a sequence one token at a time provides

- ``model.encode(...) -> memory``: whatever its decoder reads at every step;
- ``model.start(memory) -> state``: the decoder's state before the first token;
- a step ``step(model, memory, state, prev_token) -> (logits (B, V), state, weights (B, N) or None)``:
  by default the model's own ``step`` method; the attention reader of Lab 8 has none, and is given
  the step the student wrote.

**The end-of-string rule**, the same for every model: a sequence that emits ``eos`` has finished;
its later tokens are ``pad`` and its next input is ``eos``; decoding stops as soon as every
sequence has finished, or after ``max_len`` steps.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch


@dataclass(frozen=True)
class Tokens:
    """The special token ids of a vocabulary."""

    sos: int
    eos: int
    pad: int


def model_step(model) -> Callable:
    """The model's own step method, as a ``step(model, memory, state, prev)`` function."""
    step = getattr(type(model), "step", None)
    if step is None:
        raise TypeError(f"{type(model).__name__} has no step of its own: pass the step function")
    return step


def shift_right(targets: torch.Tensor, sos: int) -> torch.Tensor:
    """Teacher forcing: (B, T) targets -> (B, T) inputs ``sos y_1 ... y_{T-1}``."""
    return torch.cat([torch.full_like(targets[:, :1], sos), targets[:, :-1]], dim=1)


def _stack(weights: list):
    return None if weights[0] is None else torch.stack(weights, 1)


def teacher_forced(model, memory, state, inputs: torch.Tensor, step: Callable | None = None):
    """Logits (B, T, V) and weights (B, T, N) (or None) when each step is fed ``inputs[:, t]``."""
    step = step or model_step(model)
    logits, weights = [], []
    for prev in inputs.unbind(1):
        out, state, w = step(model, memory, state, prev)
        logits.append(out)
        weights.append(w)
    return torch.stack(logits, 1), _stack(weights)


@torch.no_grad()
def decode_greedily(model, memory, state, batch: int, max_len: int, tokens: Tokens,
                    step: Callable | None = None, device=None):
    """Token ids (B, T) and the weights of every step that ran (B, T, N) (or None), T <= max_len.

    The most likely token at every step, under the module's end-of-string rule.
    """
    step = step or model_step(model)
    prev = torch.full((batch,), tokens.sos, dtype=torch.long, device=device)
    done = torch.zeros_like(prev, dtype=torch.bool)
    out, weights = [], []
    for _ in range(max_len):
        logits, state, w = step(model, memory, state, prev)
        token = logits.argmax(-1).masked_fill(done, tokens.pad)
        out.append(token)
        weights.append(w)
        done = done | (token == tokens.eos)
        if bool(done.all()):
            break
        prev = token.masked_fill(done, tokens.eos)
    return torch.stack(out, 1), _stack(weights)
