"""Figure 8.8: how peaked the softmax of dot-product scores gets as d_k grows.

For random queries and keys with independent standard-normal entries, a score ``q . k`` has
variance d_k, so unscaled scores spread out as d_k grows and the softmax puts nearly all its weight
on one key; dividing by sqrt(d_k) keeps the variance at 1. The curves are computed in Python
(:func:`softmax_peak_curves`, the reference) and explored in the browser.
"""
from __future__ import annotations

import numpy as np
import traitlets

from attention_course.book.figures.base import CourseFigure, figure_svg

DK_VALUES = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)


def softmax_peak_curves(dks=DK_VALUES, n_keys: int = 16, draws: int = 500, seed: int = 0) -> dict:
    """Heaviest softmax weight over ``n_keys`` keys, for each d_k: one draw and the mean of many.

    Returns lists keyed ``one_unscaled``, ``one_scaled``, ``mean_unscaled``, ``mean_scaled``
    (each aligned with ``dks``). The single draw is the first of the ``draws``.
    """
    rng = np.random.default_rng(seed)
    out = {k: [] for k in ("one_unscaled", "one_scaled", "mean_unscaled", "mean_scaled")}
    for dk in dks:
        q = rng.standard_normal((draws, 1, dk))                  # (draws, 1, d_k)
        k = rng.standard_normal((draws, n_keys, dk))             # (draws, n_keys, d_k)
        scores = (k @ q.transpose(0, 2, 1))[..., 0]              # (draws, n_keys)
        for name, s in (("unscaled", scores), ("scaled", scores / np.sqrt(dk))):
            w = np.exp(s - s.max(1, keepdims=True))
            peak = (w / w.sum(1, keepdims=True)).max(1)          # (draws,)
            out[f"one_{name}"].append(float(peak[0]))
            out[f"mean_{name}"].append(float(peak.mean()))
    return {"dks": list(dks), "n_keys": n_keys, "draws": draws, **out}


class SoftmaxPeakFigure(CourseFigure):
    """Controls: ``dk_index`` (position in ``dks``), ``scaled``, ``average``; read-out ``peak``."""

    js_module = "softmax_peak"
    curves = traitlets.Dict().tag(sync=True)
    dk_index = traitlets.Int(0).tag(sync=True)
    scaled = traitlets.Bool(False).tag(sync=True)
    average = traitlets.Bool(True).tag(sync=True)
    peak = traitlets.Float(0.0).tag(sync=True)

    def __init__(self, curves: dict | None = None, **kwargs):
        kwargs.setdefault("title", "Figure 8.8: the heaviest softmax weight as d_k grows")
        curves = curves or softmax_peak_curves()
        kwargs.setdefault("dk_index", min(DK_VALUES.index(64), len(curves["dks"]) - 1))
        super().__init__(curves=curves, **kwargs)
        self._recompute()

    @traitlets.validate("dk_index")
    def _check_index(self, proposal):
        n = len(self.curves.get("dks", DK_VALUES))
        if not 0 <= proposal["value"] < n:
            raise traitlets.TraitError(f"dk_index must be in 0..{n - 1}, got {proposal['value']}")
        return proposal["value"]

    @traitlets.observe("dk_index", "scaled", "average", "curves")
    def _recompute(self, change=None):
        key = f"{'mean' if self.average else 'one'}_{'scaled' if self.scaled else 'unscaled'}"
        self.peak = float(self.curves[key][self.dk_index])

    def static_svg(self) -> bytes:
        import matplotlib.pyplot as plt

        c = self.curves
        fig, ax = plt.subplots(figsize=(5, 3))
        for key, style in (("mean_unscaled", "o-"), ("mean_scaled", "s-"),
                           ("one_unscaled", "o:"), ("one_scaled", "s:")):
            ax.plot(c["dks"], c[key], style, label=key.replace("_", ", "))
        ax.set(xscale="log", xlabel="d_k", ylabel="heaviest weight", ylim=(0, 1.02))
        ax.legend(fontsize=7)
        return figure_svg(fig)
