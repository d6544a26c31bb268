"""Training the Section 8.3 captioner, reading its attention maps, and intervening on its input.

Reading a map (:func:`word_maps`) reports, for every generated word, the weights it was produced
with, their peak, and how many grid cells hold half of them. The intervention
(:func:`occlusion_effects`) paints grid cells with the background colour and measures how the
log-probability of the original word changes when the caption is scored again.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from attention_course.data.scenes import (BACKGROUND, EOS, OBJECT_WORDS, PAD, WORDS,
                                          Scene, make_caption_batch, random_scenes)
from attention_course.tasks.fitting import TrainingConfig, fit
from attention_course.core.captioner import CELL, GRID, Captioner, CaptionerConfig


@dataclass(frozen=True)
class CaptionTraining(TrainingConfig):
    steps: int = 1500
    batch: int = 48
    seed: int = 0


def train_captioner(config: CaptionerConfig = CaptionerConfig(),
                    training: CaptionTraining = CaptionTraining(),
                    log_every: int = 0) -> tuple[Captioner, dict]:
    """Train on fresh random scenes every step; returns the model and a training record."""
    torch.manual_seed(training.seed)
    rng = np.random.default_rng(training.seed)
    model = Captioner(config)
    loss_fn = nn.CrossEntropyLoss(ignore_index=PAD)

    def next_batch(step):
        return make_caption_batch(random_scenes(training.batch, int(rng.integers(2 ** 31))))

    def loss_of(model, batch):
        logits, _ = model(batch)                                             # (B, T, V)
        return loss_fn(logits.flatten(0, 1), batch.target.flatten())

    record = fit(model, next_batch, loss_of, training.steps, training.lr, log_every=log_every)
    return model, record


def words_of(ids) -> list[str]:
    """Caption words up to end-of-caption."""
    out = []
    for i in (int(x) for x in ids):
        if i == EOS:
            break
        out.append(WORDS[i])
    return out


def caption_accuracy(model: Captioner, count: int = 300, seed: int = 999) -> dict:
    """Share of held-out scenes captioned exactly, and share of words right (position by position)."""
    scenes = random_scenes(count, seed)
    ids, _ = model.generate(make_caption_batch(scenes).images)
    got = [words_of(row) for row in ids]
    truth = [s.caption() for s in scenes]
    words = [g[i] == t[i] if i < len(g) else False for g, t in zip(got, truth) for i in range(len(t))]
    return {"exact": float(np.mean([g == t for g, t in zip(got, truth)])),
            "words": float(np.mean(words))}


def half_mass_cells(weights: np.ndarray) -> int:
    """Fewest grid cells whose weights add up to at least half of the total (weights sum to 1)."""
    ordered = np.sort(np.asarray(weights, dtype=np.float64).ravel())[::-1]
    return int(np.searchsorted(np.cumsum(ordered), 0.5 - 1e-12) + 1)


def word_maps(model: Captioner, scene: Scene) -> list[dict]:
    """For each generated word: the word, its (GRID, GRID) weight map, peak weight, half-mass cells."""
    ids, weights = model.generate(make_caption_batch([scene]).images)
    words = words_of(ids[0])
    maps = []
    for t, word in enumerate(words):
        w = weights[0, t].numpy()                                            # (M,)
        maps.append({"word": word, "map": w.reshape(GRID, GRID), "peak": float(w.max()),
                     "half_cells": half_mass_cells(w),
                     "kind": "object" if word in OBJECT_WORDS else "function"})
    return maps


def occlude(image: np.ndarray, cells) -> np.ndarray:
    """A copy of the (3, 48, 48) image with the listed grid cells (row-major ids) painted background."""
    out = image.copy()
    for cell in cells:
        r, c = divmod(int(cell), GRID)
        out[:, r * CELL:(r + 1) * CELL, c * CELL:(c + 1) * CELL] = np.array(BACKGROUND)[:, None, None]
    return out


@torch.no_grad()
def caption_log_probs(model: Captioner, scenes: list[Scene], images: np.ndarray | None = None):
    """Log-probability of every word of each scene's true caption (teacher-forced): (B, T)."""
    batch = make_caption_batch(scenes, images)
    logits, _ = model(batch)
    logp = logits.log_softmax(-1).gather(-1, batch.target.unsqueeze(-1))[..., 0]
    return logp.masked_fill(batch.target == PAD, 0.0).numpy()


def occlude_shape(image: np.ndarray, thing) -> np.ndarray:
    """A copy of the image with one shape's pixels (grown by one pixel) painted background."""
    mask = thing.mask()
    grown = mask.copy()
    grown[1:] |= mask[:-1]; grown[:-1] |= mask[1:]
    grown[:, 1:] |= grown[:, :-1].copy(); grown[:, :-1] |= grown[:, 1:].copy()
    out = image.copy()
    out[:, grown] = np.array(BACKGROUND)[:, None]
    return out


def named_thing(scene: Scene, position: int):
    """The shape an object word at caption ``position`` names (None for function words)."""
    words = scene.caption()
    if words[position] not in OBJECT_WORDS:
        return None
    return scene.first if position < words.index("a", 1) else scene.second


INTERVENTIONS = ("attended", "random", "shape")


@torch.no_grad()
def occlusion_effects(model: Captioner, scenes: list[Scene], seed: int = 0) -> list[dict]:
    """The intervention experiment. For every word of every scene's caption, paint over

    * ``attended``: the grid cells that hold half of the word's attention;
    * ``random``: as many cells, chosen at random among the others (the control);
    * ``shape``: the shape an object word names (function words: skipped, NaN);

    and record the change in the word's teacher-forced log-probability under each.
    """
    rng = np.random.default_rng(seed)
    batch = make_caption_batch(scenes)
    _, weights = model(batch)                                                # (B, T, M)
    base = caption_log_probs(model, scenes)                                  # (B, T)
    rows = []
    for b, scene in enumerate(scenes):
        image = batch.images[b].numpy()
        for t, word in enumerate(scene.caption()):
            w = weights[b, t].numpy()                                        # (M,)
            k = half_mass_cells(w)
            attended = np.argsort(w)[::-1][:k]
            others = rng.choice(np.setdiff1d(np.arange(GRID * GRID), attended), size=k, replace=False)
            thing = named_thing(scene, t)
            images = {"attended": occlude(image, attended), "random": occlude(image, others),
                      "shape": None if thing is None else occlude_shape(image, thing)}
            row = {"word": word, "kind": "object" if thing is not None else "function",
                   "cells": int(k), "peak": float(w.max()), "base_logp": float(base[b, t])}
            for name, img in images.items():
                row[f"{name}_change"] = (float("nan") if img is None else
                                         float(caption_log_probs(model, [scene], img[None])[0, t]
                                               - base[b, t]))
            rows.append(row)
    return rows


def summarise_effects(rows: list[dict], drop: float = 1.0) -> dict:
    """Per word kind: mean half-mass cells and peak, and for each intervention the median change
    in log-probability and the share of words whose log-probability fell by more than ``drop``."""
    out = {}
    for kind in ("object", "function"):
        rs = [r for r in rows if r["kind"] == kind]
        if not rs:
            continue
        summary = {"words": len(rs), "cells": float(np.mean([r["cells"] for r in rs])),
                   "peak": float(np.mean([r["peak"] for r in rs]))}
        for name in INTERVENTIONS:
            changes = np.array([r[f"{name}_change"] for r in rs])
            if np.isnan(changes).all():
                continue
            summary[f"{name}_median"] = float(np.median(changes))
            summary[f"{name}_fell"] = float(np.mean(changes < -drop))
        out[kind] = summary
    return out
