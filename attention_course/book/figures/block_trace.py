"""Figure 8.14: one token's path through a pre-norm block, and what each step costs.

Step through the block's operations and read, for each: the shape of its result, whether it lets
other tokens' content into a token, and its forward arithmetic; then double N and see which terms
double and which quadruple. :func:`attention_course.notes.block_cost.block_trace` is the reference.
"""
from __future__ import annotations

import traitlets

from attention_course.book.figures.base import CourseFigure, figure_svg
from attention_course.notes.block_cost import block_trace

HEADS = (1, 2, 4, 8)


class BlockTraceFigure(CourseFigure):
    """Controls: ``op`` (index into the trace), ``n``, ``d``, ``h``, ``r``. Read-outs from the trace."""

    js_module = "block_trace"
    op = traitlets.Int(0).tag(sync=True)
    n = traitlets.Int(8).tag(sync=True)
    d = traitlets.Int(16).tag(sync=True)
    h = traitlets.Int(2).tag(sync=True)
    r = traitlets.Int(4).tag(sync=True)
    name = traitlets.Unicode("").tag(sync=True)
    shape = traitlets.List([]).tag(sync=True)
    mixes = traitlets.Bool(False).tag(sync=True)

    def __init__(self, **kwargs):
        kwargs.setdefault("title", "Figure 8.14: trace a token through the pre-norm block")
        super().__init__(**kwargs)
        self._recompute()

    @traitlets.validate("h")
    def _check_heads(self, proposal):
        if proposal["value"] not in HEADS:
            raise traitlets.TraitError(f"h must be one of {HEADS}, got {proposal['value']}")
        return proposal["value"]

    @traitlets.validate("d")
    def _check_width(self, proposal):
        if proposal["value"] < 8 or proposal["value"] % 8:
            raise traitlets.TraitError(f"d must be a multiple of 8 (so every h divides it), got {proposal['value']}")
        return proposal["value"]

    @traitlets.observe("op", "n", "d", "h", "r")
    def _recompute(self, change=None):
        trace = block_trace(self.n, self.d, self.h, self.r)
        if not 0 <= self.op < len(trace):
            raise traitlets.TraitError(f"op must be in 0..{len(trace) - 1}, got {self.op}")
        step = trace[self.op]
        self.name, self.shape, self.mixes = step["name"], list(step["shape"]), step["mixes"]

    def static_svg(self) -> bytes:
        import matplotlib.pyplot as plt

        trace = block_trace(self.n, self.d, self.h, self.r)
        fig, ax = plt.subplots(figsize=(6.5, 4))
        for i, step in enumerate(trace):
            # the darker shades of the Okabe-Ito colours, as common.ink draws text (4.5:1 on white)
            colour = "#b34700" if step["mixes"] else "#8a6100" if step["residual"] else "#0072b2"
            ax.text(0, -i, step["name"], color=colour, fontsize=9, va="center")
            ax.text(0.72, -i, " x ".join(map(str, step["shape"])), fontsize=9, va="center")
        ax.set(xlim=(0, 1), ylim=(-len(trace), 1))
        ax.set_title("orange: mixes tokens · blue: per token · gold: residual addition", fontsize=8)
        ax.axis("off")
        return figure_svg(fig)
