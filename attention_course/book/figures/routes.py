"""Figure 8.9: how many steps information needs to travel between two positions.

A recurrent chain passes it along one state update per position; a stack of convolutions of width
k reaches k - 1 positions further per layer; one self-attention layer connects any two positions
its mask allows. :func:`attention_course.notes.routes.route_lengths` is the reference; the figure
draws the three routes for a chosen distance and kernel width.
"""
from __future__ import annotations

import traitlets

from attention_course.book.figures.base import CourseFigure, figure_svg
from attention_course.notes.routes import route_lengths

MAX_DISTANCE = 24


def routes_svg(distances=(2, 8, 24), kernel: int = 3) -> bytes:
    """Static picture: steps against distance for the three kinds of layer."""
    import matplotlib.pyplot as plt

    ds = list(range(1, max(distances) + 1))
    fig, ax = plt.subplots(figsize=(5, 2.8))
    for kind, style in (("recurrent", "o-"), ("convolution", "s-"), ("self-attention", "^-")):
        ax.plot(ds, [route_lengths(d, kernel)[kind] for d in ds], style, ms=3, label=kind)
    ax.set(xlabel="distance between the positions", ylabel="steps on the shortest route",
           title=f"convolution width {kernel}")
    ax.legend(fontsize=8)
    return figure_svg(fig)


class RoutesFigure(CourseFigure):
    """Controls: ``distance``, ``kernel``. Read-out ``steps`` (kind -> steps), from the reference."""

    js_module = "routes"
    distance = traitlets.Int(8).tag(sync=True)
    kernel = traitlets.Int(3).tag(sync=True)
    steps = traitlets.Dict({}).tag(sync=True)

    def __init__(self, **kwargs):
        kwargs.setdefault("title", "Figure 8.9: routes between two positions")
        super().__init__(**kwargs)
        self._recompute()

    @traitlets.validate("distance")
    def _check_distance(self, proposal):
        if not 1 <= proposal["value"] <= MAX_DISTANCE:
            raise traitlets.TraitError(f"distance must be in 1..{MAX_DISTANCE}, got {proposal['value']}")
        return proposal["value"]

    @traitlets.validate("kernel")
    def _check_kernel(self, proposal):
        if not 2 <= proposal["value"] <= 9:
            raise traitlets.TraitError(f"kernel must be in 2..9, got {proposal['value']}")
        return proposal["value"]

    @traitlets.observe("distance", "kernel")
    def _recompute(self, change=None):
        self.steps = route_lengths(self.distance, self.kernel)

    def static_svg(self) -> bytes:
        return routes_svg(kernel=self.kernel)
