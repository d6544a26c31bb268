"""The one training loop of the course's models (readers, copy models, captioner, character decoder).

Adam (or another optimiser), a learning-rate schedule fitted to the step budget (``"one-cycle"``,
or ``"cosine"`` decay from the start), optional gradient clipping, an optional progress bar; the
caller supplies how to get a batch and how to score it; optionally a moving average of the
weights. The model is left in eval mode.
"""
from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass
from typing import Callable

import torch
from torch import nn
from tqdm.auto import tqdm

SCHEDULES = ("one-cycle", "cosine")


@dataclass(frozen=True)
class TrainingConfig:
    """What every training run of the course is given: its steps, batch size and peak learning
    rate. Each model's training config adds what its task needs (a seed, a curriculum, noise)."""

    steps: int = 1000
    batch: int = 32
    lr: float = 3e-3

    def to_dict(self) -> dict:
        return asdict(self)


def _scheduler(opt, schedule: str, lr: float, steps: int):
    if schedule == "one-cycle":
        return torch.optim.lr_scheduler.OneCycleLR(opt, lr, total_steps=steps)
    if schedule == "cosine":
        return torch.optim.lr_scheduler.LambdaLR(
            opt, lambda s: 0.5 * (1 + math.cos(math.pi * min(s, steps) / steps)))
    raise ValueError(f"schedule must be one of {SCHEDULES}, got {schedule!r}")


def fit(model: nn.Module, next_batch: Callable[[int], object], loss_of: Callable, steps: int,
        lr: float, optimizer=torch.optim.Adam, clip: float | None = 1.0, schedule: str = "one-cycle",
        progress: str | None = None, log_every: int = 0, evaluate: Callable[[int], object] | None = None,
        evaluate_every: int = 0, average: float = 0.0) -> dict:
    """Train ``model`` for ``steps`` steps.

    ``next_batch(step)`` returns a batch, ``loss_of(model, batch)`` its loss. ``progress`` names a
    tqdm bar (None: no bar). ``evaluate(steps_done)``, when given, runs in eval mode and without
    gradients every ``evaluate_every`` steps and after the last one; its results are returned in
    order. ``average`` > 0 keeps an exponential moving average of the weights with that decay
    (``torch.optim.swa_utils``) and leaves the model holding it at the end. Returns
    ``{"train_seconds", "final_loss", "losses"}`` (every step's loss), plus ``"evaluations"``
    when ``evaluate`` is given (the evaluation time is not training time). ``steps=0`` trains
    nothing and makes no optimiser (an autograder's run: torch's first optimiser costs a second):
    no losses, no evaluations, and a ``final_loss`` of 0.0 that measures nothing.
    """
    if steps == 0:
        model.eval()
        return {"train_seconds": 0.0, "final_loss": 0.0, "losses": []} | (
            {"evaluations": []} if evaluate is not None else {})
    opt = optimizer(model.parameters(), lr=lr)
    sched = _scheduler(opt, schedule, lr, steps)
    start, losses, evaluations, evaluating = time.perf_counter(), [], [], 0.0
    averaged = (torch.optim.swa_utils.AveragedModel(
        model, multi_avg_fn=torch.optim.swa_utils.get_ema_multi_avg_fn(average))
        if average else None)
    bar = tqdm(range(steps), desc=progress, disable=progress is None, mininterval=1)
    for step in bar:
        loss = loss_of(model, next_batch(step))
        opt.zero_grad()
        loss.backward()
        if clip:
            nn.utils.clip_grad_norm_(model.parameters(), clip)
        opt.step()
        sched.step()
        if averaged is not None:
            averaged.update_parameters(model)
        losses.append(loss.item())
        if step % 50 == 0:
            bar.set_postfix(loss=f"{losses[-1]:.3f}")
        if log_every and step % log_every == 0:
            print(f"step {step:5d}  loss {losses[-1]:.3f}", flush=True)
        if evaluate is not None and ((evaluate_every and (step + 1) % evaluate_every == 0)
                                     or step + 1 == steps):
            began = time.perf_counter()
            model.eval()
            with torch.no_grad():
                evaluations.append(evaluate(step + 1))
            model.train()
            evaluating += time.perf_counter() - began
    if averaged is not None:
        with torch.no_grad():
            for mine, mean in zip(model.parameters(), averaged.module.parameters()):
                mine.copy_(mean)
    model.eval()
    record = {"train_seconds": round(time.perf_counter() - start - evaluating, 1),
              "final_loss": round(losses[-1] if losses else 0.0, 4), "losses": losses}
    return record | ({"evaluations": evaluations} if evaluate is not None else {})
