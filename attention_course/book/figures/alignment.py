"""Figure 8.2: the alignment matrix of the attention copy model, one row at a time.

The matrix (output characters x input characters) is drawn in grey; pick an output row (slider,
arrow keys, or a click on the matrix) to see that row's weights over the input as bars, where its
heaviest weight lies and how far that is from the diagonal, beside the counts over all rows.
:func:`alignment_readouts` is the reference the browser test compares the page with.
"""
from __future__ import annotations

import numpy as np
import traitlets

from attention_course.book.figures.base import CourseFigure, figure_svg
from attention_course.tasks.copy_model import diagonal_counts


def alignment_readouts(weights, row: int) -> dict:
    """Row ``row``'s heaviest weight, its column and offset from the diagonal, and how many rows
    of the whole matrix peak on the diagonal, one column off it, or further (ties: first column)."""
    A = np.asarray(weights, dtype=np.float64)                  # (T outputs, N inputs)
    column = int(A[row].argmax())
    return {"max": float(A[row].max()), "argmax": column, "offset": abs(column - row),
            **diagonal_counts(A)}


def visible(text: str) -> list[str]:
    """Characters as axis labels, with the space drawn as an open box."""
    return [c if c != " " else "␣" for c in text]


class AlignmentFigure(CourseFigure):
    """Control: ``row``. Read-outs (Python side): ``row_max``, ``row_argmax``, ``row_offset``."""

    js_module = "alignment"
    inputs = traitlets.List([]).tag(sync=True)             # input characters, as drawn
    outputs = traitlets.List([]).tag(sync=True)            # output characters, as drawn
    weights = traitlets.List([]).tag(sync=True)            # T rows of N weights
    row = traitlets.Int(0).tag(sync=True)
    row_max = traitlets.Float(0.0).tag(sync=True)
    row_argmax = traitlets.Int(0).tag(sync=True)
    row_offset = traitlets.Int(0).tag(sync=True)

    def __init__(self, source: str, copy: str, weights, **kwargs):
        """``weights``: (len(copy), len(source)), row t the weights used to write copy[t]."""
        A = np.asarray(weights, dtype=np.float64)
        if A.shape != (len(copy), len(source)):
            raise ValueError(f"weights must have shape (len(copy), len(source)) = "
                             f"({len(copy)}, {len(source)}), got {A.shape}")
        kwargs.setdefault("title", "Figure 8.2: the alignment matrix of the copy model, "
                                   "row by row")
        super().__init__(inputs=visible(source), outputs=visible(copy),
                         weights=A.round(4).tolist(), **kwargs)
        self._recompute()

    @traitlets.validate("row")
    def _check_row(self, proposal):
        if not 0 <= proposal["value"] < max(1, len(self.outputs)):
            raise traitlets.TraitError(f"row must be in 0..{len(self.outputs) - 1}, "
                                       f"got {proposal['value']}")
        return proposal["value"]

    @traitlets.observe("row", "weights")
    def _recompute(self, change=None):
        r = alignment_readouts(self.weights, self.row)
        self.row_max, self.row_argmax, self.row_offset = r["max"], r["argmax"], r["offset"]

    def static_svg(self) -> bytes:
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(6.2, 6.2))
        ax.imshow(np.asarray(self.weights), cmap="Greys", vmin=0, vmax=1)
        ax.set_xticks(range(len(self.inputs)), self.inputs, fontsize=7)
        ax.set_yticks(range(len(self.outputs)), self.outputs, fontsize=7)
        ax.set(xlabel="input character j", ylabel="output character t")
        return figure_svg(fig)
