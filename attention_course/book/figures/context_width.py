"""The Chapter 8 opening figure: a fixed context's numbers per input symbol, d / n.

Two sliders set the context width d and the input length n; the figure draws d / n against n for
the chosen d (a curve that falls as the input grows) and marks the chosen n. :func:`numbers_per_symbol`
is the reference the browser test compares with the page.
"""
from __future__ import annotations

import traitlets

from attention_course.book.figures.base import CourseFigure, figure_svg

MAX_N, MAX_WIDTH = 64, 64


def numbers_per_symbol(width: int, n: int) -> float:
    """How many numbers of a context of ``width`` each of ``n`` input symbols gets."""
    if not 1 <= n <= MAX_N or not 1 <= width <= MAX_WIDTH:
        raise ValueError(f"n must be in 1..{MAX_N} and width in 1..{MAX_WIDTH}, got n={n}, width={width}")
    return width / n


class ContextWidthFigure(CourseFigure):
    """Controls: ``width`` (d) and ``n``. Read-out: ``per_symbol`` (d / n)."""

    js_module = "context_width"
    width = traitlets.Int(16).tag(sync=True)
    n = traitlets.Int(3).tag(sync=True)
    max_n = traitlets.Int(MAX_N).tag(sync=True)
    per_symbol = traitlets.Float(16 / 3).tag(sync=True)

    def __init__(self, **kwargs):
        kwargs.setdefault("title", "Figure 8.B: a fixed context of d numbers shared by n input symbols")
        super().__init__(**kwargs)
        self._recompute()

    @traitlets.observe("width", "n")
    def _recompute(self, change=None):
        self.per_symbol = numbers_per_symbol(self.width, self.n)

    def static_svg(self) -> bytes:
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(5, 2.4))
        ns = range(1, MAX_N + 1)
        ax.plot(ns, [numbers_per_symbol(self.width, n) for n in ns], color="#0072b2")
        ax.plot([self.n], [self.per_symbol], "o", color="#e69f00")
        ax.set(xlabel="input length n", ylabel="numbers per symbol", yscale="log",
               title=f"d = {self.width}: {self.per_symbol:.2f} numbers per symbol at n = {self.n}")
        return figure_svg(fig)
