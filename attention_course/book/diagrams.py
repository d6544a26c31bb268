"""Drawn figures of Chapter 8: the query/key/value overview (Figure 8.6) and the pre-norm block
(Figure 8.13). Each returns a matplotlib figure; the numbers in Figure 8.6 are computed by
:func:`attention_course.core.transformer.attention` from the vectors it is given.
"""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

from attention_course.core.transformer import attention

CELL = 0.32                       # side of one drawn vector coordinate
STREAM, BRANCH = "#0072b2", "#555555"


def _vector(ax, x, y, values, label=None, vmax=2.0):
    """A vector as a row of shaded cells, left edge at (x, y); label to its left."""
    for i, v in enumerate(np.asarray(values, dtype=float)):
        ax.add_patch(plt.Rectangle((x + i * CELL, y), CELL, CELL, ec="0.3", lw=0.6,
                                   fc=plt.cm.RdBu_r(0.5 + 0.5 * np.clip(v / vmax, -1, 1))))
    if label:
        ax.text(x - 0.12, y + CELL / 2, label, ha="right", va="center", fontsize=9)
    return x + len(values) * CELL


def _arrow(ax, start, end, color=BRANCH, text=None, **kw):
    ax.add_patch(FancyArrowPatch(start, end, arrowstyle="-|>", mutation_scale=10, color=color,
                                 lw=1.2, shrinkA=2, shrinkB=2, **kw))
    if text:
        ax.text((start[0] + end[0]) / 2, (start[1] + end[1]) / 2 + 0.12, text, ha="center",
                fontsize=8, color=color)


def qkv_overview(sources, W_Q, W_K, W_V, state):
    """Figure 8.6: a query made from ``state`` scores the keys of every source vector, a softmax
    turns the scores into weights, and the weights blend the values.

    sources: (N, d) source vectors; W_Q, W_K: (d, d_k); W_V: (d, d_v); state: (d,).
    Returns (figure, {"scores", "weights", "output"}).
    """
    X, s = torch.as_tensor(sources, dtype=torch.float32), torch.as_tensor(state, dtype=torch.float32)
    q = s @ torch.as_tensor(W_Q, dtype=torch.float32)                  # (d_k,)
    K = X @ torch.as_tensor(W_K, dtype=torch.float32)                  # (N, d_k)
    V = X @ torch.as_tensor(W_V, dtype=torch.float32)                  # (N, d_v)
    out, A = attention(q[None], K, V)                                   # (1, d_v), (1, N)
    scores = (K @ q / K.shape[1] ** 0.5).tolist()
    weights, output = A[0].tolist(), out[0].tolist()
    n, gap = len(X), 1.5                                                  # rows, row spacing
    fig, ax = plt.subplots(figsize=(10, 1.2 + 1.1 * n))
    top = n * gap
    ax.text(0.5, top + 0.3, "source vectors $x_j$", fontsize=9)
    ax.text(3.0, top + 0.3, "keys and values", fontsize=9)
    ax.text(5.9, top + 0.3, "scores $q \\cdot k_j / \\sqrt{d_k}$ and weights $\\alpha_j$", fontsize=9)
    _vector(ax, 6.6, top + 1.0, q, "query $q = s\\,W_Q$")
    _arrow(ax, (6.6 + len(q) * CELL / 2, top + 1.0), (6.6 + len(q) * CELL / 2, top + 0.55),
           text=None)
    mid = top / 2 - gap / 2 + 0.1
    for j in range(n):
        y = top - gap * (j + 1) + 0.4                                      # this row's centre
        right = _vector(ax, 0.5, y - CELL / 2, X[j], f"$x_{j + 1}$")
        _arrow(ax, (right, y), (2.95, y + 0.36))
        ax.text(2.25, y + 0.36, "$W_K$", fontsize=8, color=BRANCH, ha="center")
        _arrow(ax, (right, y), (2.95, y - 0.36))
        ax.text(2.25, y - 0.5, "$W_V$", fontsize=8, color=BRANCH, ha="center")
        k_end = _vector(ax, 3.0, y + 0.2, K[j])
        v_end = _vector(ax, 3.0, y - 0.52, V[j])
        ax.text(k_end + 0.08, y + 0.2 + CELL / 2, f"$k_{j + 1}$", fontsize=9, va="center")
        ax.text(v_end + 0.08, y - 0.52 + CELL / 2, f"$v_{j + 1}$", fontsize=9, va="center")
        ax.text(5.9, y + 0.2 + CELL / 2, f"{scores[j]:+.2f}", fontsize=9, va="center",
                family="monospace")
        ax.add_patch(plt.Rectangle((6.8, y + 0.2), 1.2 * weights[j], CELL, fc=STREAM))
        ax.text(6.8 + 1.2 * weights[j] + 0.08, y + 0.2 + CELL / 2, f"{weights[j]:.2f}",
                fontsize=9, va="center")
        _arrow(ax, (v_end + 0.45, y - 0.52 + CELL / 2), (9.15, mid + CELL / 2), color=STREAM,
               connectionstyle="arc3,rad=0")
    ax.text(9.2, mid + CELL + 0.25, "output $o = \\sum_j \\alpha_j v_j$", fontsize=9)
    _vector(ax, 9.2, mid, output)
    ax.set_xlim(-0.9, 9.3 + len(output) * CELL + 0.3)
    ax.set_ylim(-0.3, top + 1.6)
    ax.set_aspect("equal")
    ax.axis("off")
    return fig, {"scores": scores, "weights": weights, "output": output}


def _box(ax, x, y, text, w=1.6, h=0.5, color=BRANCH):
    ax.add_patch(FancyBboxPatch((x - w / 2, y - h / 2), w, h, boxstyle="round,pad=0.04",
                                fc="white", ec=color, lw=1.2))
    ax.text(x, y, text, ha="center", va="center", fontsize=9)


def _plus(ax, x, y):
    ax.add_patch(plt.Circle((x, y), 0.17, fc="white", ec=STREAM, lw=1.4))
    ax.text(x, y, "+", ha="center", va="center", fontsize=11, color=STREAM)


def prenorm_block(d_label="d", r_label="r d"):
    """Figure 8.13: the pre-norm block, bottom to top. The residual stream (blue) runs straight
    through both additions; each branch (grey) normalises a copy of it, transforms it, and adds
    the result back."""
    fig, ax = plt.subplots(figsize=(4.6, 6.0))
    stream_x, branch_x = 0.0, 1.8
    levels = {"X": 0.0, "ln1": 1.0, "mha": 2.0, "add1": 2.9, "ln2": 4.0, "mlp": 5.0, "add2": 5.9,
              "Y": 6.8}
    ax.text(stream_x, levels["X"] - 0.35, f"X  (N × {d_label})", ha="center", fontsize=9)
    ax.text(stream_x, levels["Y"] + 0.25, f"Y  (N × {d_label})", ha="center", fontsize=9)
    for lo, hi in (("X", "add1"), ("add1", "add2"), ("add2", "Y")):
        _arrow(ax, (stream_x, levels[lo] + (0.17 if lo != "X" else 0)),
               (stream_x, levels[hi] - (0.17 if hi != "Y" else 0)), color=STREAM)
    ax.text(stream_x - 0.12, (levels["add1"] + levels["add2"]) / 2, f"U  (N × {d_label})",
            ha="right", va="center", fontsize=9)
    for start, ln, sub, add, label in (("X", "ln1", "mha", "add1", "multi-head\nattention"),
                                       ("add1", "ln2", "mlp", "add2",
                                        f"MLP\n{d_label} → {r_label} → {d_label}")):
        y0 = levels[start] + (0.3 if start == "X" else 0.45)
        ax.plot([stream_x, branch_x], [y0, y0], color=BRANCH, lw=1.2)
        _arrow(ax, (branch_x, y0), (branch_x, levels[ln] - 0.27))
        _box(ax, branch_x, levels[ln], "LayerNorm")
        _arrow(ax, (branch_x, levels[ln] + 0.27), (branch_x, levels[sub] - 0.32))
        _box(ax, branch_x, levels[sub], label, h=0.62)
        ax.plot([branch_x, branch_x], [levels[sub] + 0.31, levels[add]], color=BRANCH, lw=1.2)
        _arrow(ax, (branch_x, levels[add]), (stream_x + 0.17, levels[add]))
        _plus(ax, stream_x, levels[add])
    ax.text(stream_x - 0.25, levels["ln1"], "residual\nstream", ha="right", va="center",
            fontsize=8, color=STREAM)
    ax.set_xlim(-1.6, 3.0)
    ax.set_ylim(-0.7, 7.3)
    ax.set_aspect("equal")
    ax.axis("off")
    return fig
