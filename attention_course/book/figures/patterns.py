"""Interaction patterns for long sequences: which queries may attend to which keys.

The browser builds the pattern from the controls; BigBird's random links are drawn in Python (the
same seeded draw as the reference) and passed in. :func:`attention_course.notes.long_attention.pattern`
is the reference; the read-out is the number of allowed pairs.
"""
from __future__ import annotations

import torch
import traitlets

from attention_course.book.figures.base import CourseFigure, figure_svg
from attention_course.notes.long_attention import PATTERNS, pattern

SIZES = range(8, 33)


def random_links(n: int, count: int, seed: int = 0) -> list[list[int]]:
    """The random keys BigBird gives each query (the same draw as ``pattern``)."""
    gen = torch.Generator().manual_seed(seed)
    return [torch.randperm(n, generator=gen)[:count].tolist() for _ in range(n)]


class PatternFigure(CourseFigure):
    """Controls: ``kind``, ``n``, ``window``, ``dilation``, ``globals_``. Read-out: ``pairs``."""

    js_module = "patterns"
    kinds = traitlets.List(list(PATTERNS)).tag(sync=True)
    kind = traitlets.Unicode("local").tag(sync=True)
    n = traitlets.Int(24).tag(sync=True)
    window = traitlets.Int(2).tag(sync=True)
    dilation = traitlets.Int(3).tag(sync=True)
    globals_ = traitlets.Int(2).tag(sync=True)
    links = traitlets.Dict().tag(sync=True)             # n -> random keys per query (BigBird)
    pairs = traitlets.Int(0).tag(sync=True)

    def __init__(self, **kwargs):
        kwargs.setdefault("title", "Figure 12.4: interaction patterns, who may attend to whom")
        super().__init__(links={str(n): random_links(n, 2) for n in SIZES}, **kwargs)
        self._recompute()

    @traitlets.validate("kind")
    def _check_kind(self, proposal):
        if proposal["value"] not in PATTERNS:
            raise traitlets.TraitError(f"kind must be one of {PATTERNS}, got {proposal['value']!r}")
        return proposal["value"]

    @traitlets.validate("n")
    def _check_n(self, proposal):
        if proposal["value"] not in SIZES:
            raise traitlets.TraitError(f"n must be in {SIZES.start}..{SIZES.stop - 1}, got {proposal['value']}")
        return proposal["value"]

    @traitlets.observe("kind", "n", "window", "dilation", "globals_")
    def _recompute(self, change=None):
        self.pairs = int(self.mask().sum())

    def mask(self) -> torch.Tensor:
        return pattern(self.kind, self.n, window=self.window, dilation=self.dilation,
                       globals_=self.globals_, random_links=2, seed=0)

    def static_svg(self) -> bytes:
        import matplotlib.pyplot as plt

        fig, axes = plt.subplots(1, len(PATTERNS), figsize=(2 * len(PATTERNS), 2.2))
        for ax, kind in zip(axes, PATTERNS):
            ax.imshow(pattern(kind, self.n, window=self.window, dilation=self.dilation,
                              globals_=self.globals_), cmap="Greys")
            ax.set_title(kind, fontsize=8)
            ax.axis("off")
        return figure_svg(fig)
