"""Figures 8.11 and 8.12: sinusoidal position codes, and how alike two codes are.

* :class:`PositionWavesFigure` (8.11): the code of n positions as an image, one sine-cosine pair
  picked out as a wave, with its frequency and wavelength read out. Reference:
  :func:`attention_course.core.transformer.sinusoidal_positions` and :func:`pair_wave`.
* :class:`PositionSimilarityFigure` (8.12): the dot product of two codes against their gap, for
  the sinusoid, a normalised index and an untrained random table; the read-out shows the chosen
  pair's product and the smallest and largest product among all pairs that far apart. Reference:
  :func:`pair_similarity`.
"""
from __future__ import annotations

import math

import numpy as np
import torch
import traitlets

from attention_course.book.figures.base import CourseFigure, figure_svg
from attention_course.core.transformer import sinusoidal_positions
from attention_course.notes.positions import similarity_by_gap

N_POSITIONS = 64
BASE = 10000.0


def pair_wave(d: int, pair: int, position: int, base: float = BASE) -> dict:
    """Frequency, wavelength and the (sin, cos) values of pair ``pair`` at ``position``."""
    if d % 2 or not 0 <= pair < d // 2:
        raise ValueError(f"need an even d and 0 <= pair < d/2, got d={d}, pair={pair}")
    omega = base ** (-2 * pair / d)
    return {"omega": omega, "wavelength": 2 * math.pi / omega, "ratio": base ** (2 / d),
            "sin": math.sin(omega * position), "cos": math.cos(omega * position)}


def position_codes(n: int = N_POSITIONS, d: int = 32, seed: int = 0) -> dict:
    """The three codes Figure 8.12 compares, each (n, d), as nested lists."""
    torch.manual_seed(seed)
    return {"sinusoidal": sinusoidal_positions(n, d),
            "normalised index": (torch.arange(n)[:, None] / n).repeat(1, d),
            "random table": torch.randn(n, d) / d ** 0.5 * 4}


def pair_similarity(codes, position: int, gap: int) -> dict:
    """Dot product of codes[position] and codes[position + gap], and min/max over all pairs at ``gap``."""
    C = np.asarray(codes, dtype=np.float64)
    if not 0 <= gap < len(C) or not 0 <= position < len(C) - gap:
        raise ValueError(f"need 0 <= gap < {len(C)} and 0 <= position < {len(C)} - gap")
    at_gap = (C[: len(C) - gap] * C[gap:]).sum(1)                     # (n - gap,)
    return {"dot": float(at_gap[position]), "min": float(at_gap.min()), "max": float(at_gap.max())}


class PositionWavesFigure(CourseFigure):
    """Controls: ``d``, ``pair``, ``position``. Read-outs: ``omega``, ``wavelength``."""

    js_module = "position_waves"
    n = traitlets.Int(N_POSITIONS).tag(sync=True)
    d = traitlets.Int(32).tag(sync=True)
    pair = traitlets.Int(0).tag(sync=True)
    position = traitlets.Int(5).tag(sync=True)
    omega = traitlets.Float(0.0).tag(sync=True)
    wavelength = traitlets.Float(0.0).tag(sync=True)

    def __init__(self, **kwargs):
        kwargs.setdefault("title", "Figure 8.11: sinusoidal position codes as waves")
        super().__init__(**kwargs)
        self._recompute()

    @traitlets.observe("d", "pair", "position")
    def _recompute(self, change=None):
        if self.pair >= self.d // 2:
            self.pair = self.d // 2 - 1                                   # re-enters
            return
        wave = pair_wave(self.d, self.pair, self.position)
        self.omega, self.wavelength = wave["omega"], wave["wavelength"]

    def static_svg(self) -> bytes:
        import matplotlib.pyplot as plt

        P = sinusoidal_positions(self.n, self.d)
        fig, axes = plt.subplots(1, 2, figsize=(8, 2.6))
        axes[0].imshow(P.T, aspect="auto", cmap="RdBu", vmin=-1, vmax=1)
        axes[0].set(xlabel="position", ylabel="coordinate")
        for j in (0, 2, 8, 16):
            if j < self.d:
                axes[1].plot(P[:, j], label=f"coordinate {j}")
        axes[1].set(xlabel="position")
        axes[1].legend(fontsize=7)
        return figure_svg(fig)


class PositionSimilarityFigure(CourseFigure):
    """Controls: ``code``, ``position``, ``gap``. Read-outs: ``dot``, ``low``, ``high``."""

    js_module = "position_similarity"
    codes = traitlets.Dict().tag(sync=True)
    code = traitlets.Unicode("sinusoidal").tag(sync=True)
    position = traitlets.Int(10).tag(sync=True)
    gap = traitlets.Int(5).tag(sync=True)
    dot = traitlets.Float(0.0).tag(sync=True)
    low = traitlets.Float(0.0).tag(sync=True)
    high = traitlets.Float(0.0).tag(sync=True)

    def __init__(self, codes: dict | None = None, **kwargs):
        kwargs.setdefault("title", "Figure 8.12: how alike are two position codes?")
        codes = codes if codes is not None else position_codes()
        rounded = {k: np.asarray(v, dtype=np.float64).round(5).tolist() for k, v in codes.items()}
        super().__init__(codes=rounded, **kwargs)
        self._recompute()

    @traitlets.validate("code")
    def _check_code(self, proposal):
        if proposal["value"] not in self.codes:
            raise traitlets.TraitError(f"code must be one of {list(self.codes)}, got {proposal['value']!r}")
        return proposal["value"]

    @traitlets.observe("code", "position", "gap")
    def _recompute(self, change=None):
        n = len(self.codes[self.code])
        if self.position > n - 1 - self.gap:
            self.position = n - 1 - self.gap                              # re-enters
            return
        r = pair_similarity(self.codes[self.code], self.position, self.gap)
        self.dot, self.low, self.high = r["dot"], r["min"], r["max"]

    def static_svg(self) -> bytes:
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(5.5, 3))
        for name, C in self.codes.items():
            by_gap = similarity_by_gap(torch.tensor(C, dtype=torch.float64))
            gaps = list(by_gap)
            ax.plot(gaps, [by_gap[g]["mean"] for g in gaps], label=name)
            ax.fill_between(gaps, [by_gap[g]["min"] for g in gaps], [by_gap[g]["max"] for g in gaps],
                            alpha=0.2)
        ax.set(xlabel="gap", ylabel="dot product")
        ax.legend(fontsize=7)
        return figure_svg(fig)
