"""Figure 8.7: one query against a few keys. Turn and lengthen the query, switch the scaling.

Keys are 2-D arrows; each key's value is a colour (an RGB vector). The output is the weighted
mix of the value colours. :func:`qkv_attention` is the reference the browser test checks against.
"""
from __future__ import annotations

import numpy as np
import traitlets

from attention_course.book.figures.base import CourseFigure, figure_svg

# Four keys in the plane and their values, RGB in [0, 1] (Okabe-Ito colours, legible for
# colour-blind readers; every colour is also shown as numbers).
DEFAULT_KEYS = [[1.6, 0.3], [0.2, 1.5], [-1.4, 0.6], [0.1, -1.7]]
DEFAULT_VALUES = [[0.90, 0.62, 0.0], [0.34, 0.71, 0.91], [0.0, 0.62, 0.45], [0.80, 0.47, 0.65]]


def qkv_attention(angle_deg: float, length: float, scaled: bool, keys=DEFAULT_KEYS,
                  values=DEFAULT_VALUES) -> dict:
    """Scores, weights and output of one query ``length * (cos angle, sin angle)``.

    keys: (N, d_k), values: (N, d_v). Scores are ``k_i . q``, divided by sqrt(d_k) when ``scaled``.
    Returns numpy arrays: query (d_k,), scores (N,), weights (N,), output (d_v,).
    """
    keys, values = np.asarray(keys, dtype=float), np.asarray(values, dtype=float)
    if keys.ndim != 2 or values.ndim != 2 or len(keys) != len(values):
        raise ValueError(f"keys should be (N, d_k) and values (N, d_v) with the same N, got "
                         f"{keys.shape} and {values.shape}")
    if keys.shape[1] != 2:
        raise ValueError(f"the explorer draws 2-D keys: keys should be (N, 2), got {keys.shape}")
    theta = np.deg2rad(angle_deg)
    query = length * np.array([np.cos(theta), np.sin(theta)])
    scores = keys @ query / (np.sqrt(keys.shape[1]) if scaled else 1.0)
    weights = np.exp(scores - scores.max())
    weights /= weights.sum()
    return {"query": query, "scores": scores, "weights": weights, "output": weights @ values}


class QKVExplorer(CourseFigure):
    """Query/keys/values explorer. Controls: ``angle`` (degrees), ``length``, ``scaled``.

    Read-outs ``weights`` and ``output`` follow the controls (computed by :func:`qkv_attention`
    in Python, and by the same formula in the browser when there is no kernel).
    """

    js_module = "qkv"
    angle = traitlets.Float(20.0).tag(sync=True)
    length = traitlets.Float(1.0).tag(sync=True)
    scaled = traitlets.Bool(True).tag(sync=True)
    key_vectors = traitlets.List(DEFAULT_KEYS).tag(sync=True)
    value_colours = traitlets.List(DEFAULT_VALUES).tag(sync=True)
    weights = traitlets.List([]).tag(sync=True)
    output = traitlets.List([]).tag(sync=True)

    def __init__(self, **kwargs):
        kwargs.setdefault("title", "Figure 8.7: one query, four keys, four value colours")
        super().__init__(**kwargs)
        self._recompute()

    @traitlets.observe("angle", "length", "scaled", "key_vectors", "value_colours")
    def _recompute(self, change=None):
        result = qkv_attention(self.angle, self.length, self.scaled, self.key_vectors, self.value_colours)
        self.weights = [round(float(w), 6) for w in result["weights"]]
        self.output = [round(float(c), 6) for c in result["output"]]

    def static_svg(self) -> bytes:
        import matplotlib.pyplot as plt

        result = qkv_attention(self.angle, self.length, self.scaled, self.key_vectors, self.value_colours)
        fig, (ax, bars) = plt.subplots(1, 2, figsize=(7, 3))
        for i, (k, v) in enumerate(zip(self.key_vectors, self.value_colours)):
            ax.annotate("", k, (0, 0), arrowprops=dict(color=v, width=2))
            ax.text(k[0] * 1.1, k[1] * 1.1, f"k{i + 1}")
        q = result["query"]
        ax.annotate("", q, (0, 0), arrowprops=dict(color="k", width=1.5))
        ax.set(xlim=(-4, 4), ylim=(-4, 4), aspect="equal", title="query (black) and keys")
        bars.bar([f"k{i + 1}" for i in range(len(self.key_vectors))], result["weights"],
                color=self.value_colours)
        bars.set(ylim=(0, 1), title="weights")
        return figure_svg(fig)
