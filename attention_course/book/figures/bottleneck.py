"""Figure 8.1: a recurrent encoder-decoder reads digits and writes them back through one context.

The figure steps through the operations of the Chapter 7 model: the encoder reads one digit per
step into states h_1..h_n, then only h_n -- the context, ``width`` numbers -- crosses to the
decoder, which writes the digits back one per step. Two controls change the input length n and the
context width d independently. :func:`bottleneck_steps` is the reference (and the small-multiples
picture the static book shows is drawn from it); the browser test checks the page against it.
"""
from __future__ import annotations

import traitlets

from attention_course.book.figures.base import CourseFigure, figure_svg

DIGITS = "427915386042791538604279"         # starts with the chapter's example, 4 2 7
MAX_LENGTH = len(DIGITS)


def bottleneck_steps(n: int, width: int) -> list[dict]:
    """Every operation of the model on the first ``n`` digits of :data:`DIGITS`, in order.

    Each step: ``phase`` (read, cross, write), ``text`` (the operation), ``states`` (how many
    encoder states exist), ``written`` (digits written so far), ``crossing`` (numbers the decoder
    has from the input: 0 before the crossing, then ``width``), ``per_symbol`` (width / n).
    """
    if not 1 <= n <= MAX_LENGTH:
        raise ValueError(f"input length must be in 1..{MAX_LENGTH}, got {n}")
    if width < 1:
        raise ValueError(f"context width must be at least 1, got {width}")
    digits = DIGITS[:n]
    common = {"per_symbol": width / n, "width": width, "n": n}
    steps = []
    for i, x in enumerate(digits, start=1):
        previous = "0" if i == 1 else f"h{i - 1}"
        steps.append({"phase": "read", "text": f"h{i} = f({previous}, {x})", "states": i,
                      "written": "", "crossing": 0, **common})
    steps.append({"phase": "cross", "text": f"c = h{n}: {width} numbers cross to the decoder",
                  "states": n, "written": "", "crossing": width, **common})
    for t in range(1, n + 1):
        previous = "<sos>" if t == 1 else digits[t - 2]
        steps.append({"phase": "write", "text": f"s{t} = g(s{t - 1}, {previous}, c) -> {digits[t - 1]}",
                      "states": n, "written": digits[:t], "crossing": width, **common})
    return steps


def small_multiples_svg(lengths=(3, 6, 12, 24), width: int = 16) -> bytes:
    """The static picture: one panel per input length, the final state alone crossing over."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import FancyArrowPatch, Rectangle

    # narrow, so that a phone shows it near full size: 4.4 in at 90 dpi is about 400 px
    fig, axes = plt.subplots(len(lengths), 1, figsize=(4.4, 1.1 * len(lengths)))
    for ax, n in zip(axes, lengths):
        gap = 1.0 if n <= 12 else 0.6
        for i in range(n):                                           # encoder states, blue
            ax.add_patch(Rectangle((i * gap, 0), 0.5 * gap, 1, color="#0072b2", alpha=0.8))
        x_cross = (n - 1) * gap
        ax.add_patch(Rectangle((x_cross, 0), 0.5 * gap, 1, color="#e69f00"))      # h_n, gold
        dec0 = n * gap + 2.5
        for t in range(n):                                           # decoder states, teal
            ax.add_patch(Rectangle((dec0 + t * gap, 0), 0.5 * gap, 1, color="#009e73", alpha=0.8))
        ax.add_patch(FancyArrowPatch((x_cross + 0.5 * gap, 0.5), (dec0, 0.5), arrowstyle="-|>",
                                     mutation_scale=12, color="#e69f00", lw=2))
        ax.set_xlim(-0.5, 2 * n * gap + 3.5)
        ax.set_ylim(-0.2, 1.2)
        ax.axis("off")
        ax.set_title(f"n = {n} digits, one state of {width}: {width / n:.2g} numbers per digit",
                     fontsize=10, loc="left")
    fig.tight_layout()
    return figure_svg(fig)


class BottleneckFigure(CourseFigure):
    """Controls: ``n`` (input length), ``width`` (context d), ``step``. Read-outs come from the step."""

    js_module = "bottleneck"
    digits = traitlets.Unicode(DIGITS).tag(sync=True)
    n = traitlets.Int(3).tag(sync=True)
    width = traitlets.Int(16).tag(sync=True)
    step = traitlets.Int(0).tag(sync=True)
    operation = traitlets.Unicode("").tag(sync=True)

    def __init__(self, **kwargs):
        kwargs.setdefault("title", "Figure 8.1: only the final encoder state crosses to the decoder")
        super().__init__(**kwargs)
        self._recompute()

    @traitlets.validate("n")
    def _check_n(self, proposal):
        if not 1 <= proposal["value"] <= MAX_LENGTH:
            raise traitlets.TraitError(f"n must be in 1..{MAX_LENGTH}, got {proposal['value']}")
        return proposal["value"]

    @traitlets.validate("width")
    def _check_width(self, proposal):
        if not 1 <= proposal["value"] <= 256:
            raise traitlets.TraitError(f"width must be in 1..256, got {proposal['value']}")
        return proposal["value"]

    @traitlets.observe("n", "width", "step")
    def _recompute(self, change=None):
        steps = bottleneck_steps(self.n, self.width)
        if not 0 <= self.step < len(steps):
            self.step = min(max(self.step, 0), len(steps) - 1)      # re-enters _recompute
            return
        self.operation = steps[self.step]["text"]

    def static_svg(self) -> bytes:
        return small_multiples_svg(width=self.width)
