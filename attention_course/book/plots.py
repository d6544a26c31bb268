"""Figures for the readers: results by length and attention maps with digit boundaries marked."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

TRAIN_MAX = 8


def plot_results_by_length(tables: dict, floor: float | None = None, train_max: int = TRAIN_MAX,
                           floor_label: str = "isolated-digit floor"):
    """Exact-string accuracy and CER against strip length for each named reader.

    ``tables`` maps a reader's name to ``{length: {"exact": .., "cer": ..}}``; ``floor`` is the
    per-digit error rate of an isolated-digit classifier, drawn on the CER panel as
    ``floor_label``.
    """
    fig, (ax_exact, ax_cer) = plt.subplots(1, 2, figsize=(10, 3.6), constrained_layout=True)
    for name, table in tables.items():
        lengths = sorted(table)
        ax_exact.plot(lengths, [table[n]["exact"] for n in lengths], "o-", label=name)
        ax_cer.plot(lengths, [table[n]["cer"] for n in lengths], "o-", label=name)
    if floor is not None:
        ax_cer.axhline(floor, color="k", ls=":", label=floor_label)
    for ax, title in ((ax_exact, "exact-string accuracy"), (ax_cer, "character error rate")):
        ax.axvspan(0.5, train_max + 0.5, color="0.92", zorder=0)
        ax.set_xlabel("digits in the strip  (shaded: lengths seen in training)")
        ax.set_title(title)
        ax.grid(alpha=0.3)
    ax_exact.set_ylim(-0.02, 1.02)
    ax_cer.legend(fontsize=8)
    return fig


def plot_attention_map(weights, spans, target: str, prediction: str, ax=None, title=None):
    """An output-step x column attention map; dashed lines mark where each digit starts and ends.

    weights: (T, N) array -- row t is the attention of the step that wrote character t
    (the last row, if present, is the step that wrote end-of-string).
    """
    weights = np.asarray(weights)
    if weights.ndim != 2:
        raise ValueError(f"weights should have shape (T, N), got {weights.shape}")
    ax = ax or plt.subplots(figsize=(8, 0.35 * len(weights) + 1.2))[1]
    ax.imshow(weights, aspect="auto", cmap="viridis", vmin=0, interpolation="nearest")
    for first, last in spans:
        ax.axvline(first - 0.5, color="w", ls="--", lw=0.7)
        ax.axvline(last + 0.5, color="w", ls=":", lw=0.7)
    labels = list(prediction) + ["<eos>"]
    ax.set_yticks(range(len(weights)), labels[:len(weights)])
    ax.set_ylabel("written")
    ax.set_xlabel("column")
    verdict = "correct" if prediction == target else "wrong"
    ax.set_title(title or f"target {target}  read {prediction or '(empty)'}  ({verdict})", fontsize=9)
    return ax
