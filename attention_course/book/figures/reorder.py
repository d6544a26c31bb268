"""Figure 8.10: reorder the tokens and follow one through a single self-attention head.

Four tokens (A, B, C, D) with fixed content vectors pass through one head. Choose an order, and
optionally add position vectors (attached to the *slots*, not the tokens) or a causal mask (also on
slots), and follow one token: the figure shows its rows of X (content plus, if on, its slot's
position), Q, K, V and O. Without either, those rows are unchanged by the reordering and the
attention matrix is only permuted (permutation equivariance); with positions, X and so Q, K, V and
O change; with the mask, only O does.
:func:`reorder_attention` is the reference the browser test checks against.
"""
from __future__ import annotations

import numpy as np
import traitlets

from attention_course.book.figures.base import CourseFigure, figure_svg
from attention_course.core.transformer import sinusoidal_positions

TOKENS = ("A", "B", "C", "D")
ORDERS = {"A B C D": (0, 1, 2, 3), "B A C D": (1, 0, 2, 3), "D C B A": (3, 2, 1, 0),
          "C D A B": (2, 3, 0, 1), "B C D A": (1, 2, 3, 0)}


def reorder_setup(seed: int = 3, d: int = 4) -> dict:
    """Token contents X (4, d), projections W_Q, W_K, W_V (d, d) and slot positions P (4, d)."""
    rng = np.random.default_rng(seed)
    return {"X": rng.normal(size=(4, d)).round(2).tolist(),
            "W_Q": (0.5 * rng.normal(size=(d, d))).round(2).tolist(),
            "W_K": (0.5 * rng.normal(size=(d, d))).round(2).tolist(),
            "W_V": rng.normal(size=(d, d)).round(2).tolist(),
            "P": (1.5 * sinusoidal_positions(4, d).numpy()).round(3).tolist()}


def reorder_attention(setup: dict, order, positions: bool, causal: bool) -> dict:
    """Attention A (slots x slots) for the tokens in ``order``, each token's output, how far each
    token's output moved from its output in the original order (max |difference|), and each
    token's rows: ``rows[name][t]`` is token t's row of X, Q, K, V or O (each (4, d), by token)."""
    def run(order):
        X = np.asarray(setup["X"])[list(order)]                        # (N, d) in slot order
        if positions:
            X = X + np.asarray(setup["P"])
        Q, K, V = (X @ np.asarray(setup[w]) for w in ("W_Q", "W_K", "W_V"))
        S = Q @ K.T / np.sqrt(K.shape[1])                              # (N, N)
        if causal:
            S = np.where(np.tril(np.ones_like(S)) > 0, S, -np.inf)
        A = np.exp(S - S.max(1, keepdims=True))
        A /= A.sum(1, keepdims=True)
        O = A @ V                                                      # (N, d) in slot order
        rows = {}
        for name, M in zip("XQKVO", (X, Q, K, V, O)):
            rows[name] = np.empty_like(M)
            rows[name][list(order)] = M                                # row t: token t's row
        return A, rows

    A, rows = run(order)
    _, original = run(range(len(setup["X"])))
    return {"A": A, "outputs": rows["O"], "rows": rows,
            "change": np.abs(rows["O"] - original["O"]).max(1)}


class ReorderFigure(CourseFigure):
    """Controls: ``order`` (one of ORDERS), ``positions``, ``causal``, ``follow`` (a token).
    Read-out: ``change``."""

    js_module = "reorder"
    setup = traitlets.Dict().tag(sync=True)
    orders = traitlets.List().tag(sync=True)       # [name, order] pairs: a list keeps ORDERS' order
                                                   # (a dict's keys get sorted in saved notebooks)
    order = traitlets.Unicode("A B C D").tag(sync=True)
    positions = traitlets.Bool(False).tag(sync=True)
    causal = traitlets.Bool(False).tag(sync=True)
    follow = traitlets.Unicode("A").tag(sync=True)
    change = traitlets.List([]).tag(sync=True)

    def __init__(self, **kwargs):
        kwargs.setdefault("title", "Figure 8.10: reorder the tokens and follow one")
        super().__init__(setup=reorder_setup(), orders=[[k, list(v)] for k, v in ORDERS.items()],
                         **kwargs)
        self._recompute()

    @traitlets.validate("order")
    def _check_order(self, proposal):
        if proposal["value"] not in ORDERS:
            raise traitlets.TraitError(f"order must be one of {list(ORDERS)}, got {proposal['value']!r}")
        return proposal["value"]

    @traitlets.validate("follow")
    def _check_follow(self, proposal):
        if proposal["value"] not in TOKENS:
            raise traitlets.TraitError(f"follow must be one of {list(TOKENS)}, got {proposal['value']!r}")
        return proposal["value"]

    @traitlets.observe("order", "positions", "causal")
    def _recompute(self, change=None):
        result = reorder_attention(self.setup, ORDERS[self.order], self.positions, self.causal)
        self.change = [round(float(c), 6) for c in result["change"]]

    def static_svg(self) -> bytes:
        """Two orders side by side: the attention weights of ``A B C D`` and of the figure's order,
        each cell labelled with its weight, and under them how far each token's output moved."""
        import matplotlib.pyplot as plt

        orders = ["A B C D", self.order] if self.order != "A B C D" else ["A B C D", "D C B A"]
        fig, axes = plt.subplots(1, 2, figsize=(6.4, 3.3))
        for ax, name in zip(axes, orders):
            order = ORDERS[name]
            result = reorder_attention(self.setup, order, self.positions, self.causal)
            A = np.asarray(result["A"])
            ax.imshow(A, cmap="Blues", vmin=0, vmax=1)
            for (i, j), w in np.ndenumerate(A):
                ax.text(j, i, f"{w:.2f}", ha="center", va="center", fontsize=8,
                        color="white" if w > 0.55 else "black")
            labels = [TOKENS[t] for t in order]
            ax.set_xticks(range(4), labels)
            ax.set_yticks(range(4), labels)
            moved = ", ".join(f"{TOKENS[t]} {c:.2f}" for t, c in enumerate(result["change"]))
            ax.set_title(f"order {name}\noutput moved: {moved}", fontsize=8)
        fig.tight_layout()
        return figure_svg(fig)
