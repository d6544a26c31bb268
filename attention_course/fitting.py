"""The one training loop of the book's small models (copy models, captioner, character decoder).

Adam (or another optimiser) with a one-cycle learning-rate schedule and optional gradient clipping;
the caller supplies how to get a batch and how to score it. The model is left in eval mode.
"""
from __future__ import annotations

import time
from typing import Callable

import torch
from torch import nn


def fit(model: nn.Module, next_batch: Callable[[int], object], loss_of: Callable, steps: int,
        lr: float, optimizer=torch.optim.Adam, clip: float | None = 1.0, log_every: int = 0) -> dict:
    """Train ``model`` for ``steps`` steps; returns ``{"train_seconds", "final_loss"}``."""
    opt = optimizer(model.parameters(), lr=lr)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, lr, total_steps=steps)
    start, loss = time.perf_counter(), torch.tensor(0.0)
    for step in range(steps):
        loss = loss_of(model, next_batch(step))
        opt.zero_grad()
        loss.backward()
        if clip:
            nn.utils.clip_grad_norm_(model.parameters(), clip)
        opt.step()
        sched.step()
        if log_every and step % log_every == 0:
            print(f"step {step:5d}  loss {loss.item():.3f}", flush=True)
    model.eval()
    return {"train_seconds": round(time.perf_counter() - start, 1), "final_loss": round(loss.item(), 4)}
