"""Figure 8.5: the attention map behind every word of a generated caption.

For a chosen word the figure shades the captioner's 6 x 6 grid over the image by that word's
weights, outlines the fewest cells that hold half of them, and reads out the peak weight and that
cell count; in words, it says where the weight is centred and which cells are outlined (the
picture's text equivalent). Shading is either relative to the word's own peak (each map as bright as possible, the
way attention maps are usually shown) or on one absolute scale, so the reader can see how the
usual display hides the difference between a tight and a diffuse map. The read-outs are computed
in the browser; :func:`map_readouts` is the reference the browser test compares them with.
"""
from __future__ import annotations

import base64
import io

import numpy as np
import traitlets

from attention_course.tasks.captioner import half_mass_cells
from attention_course.book.figures.base import CourseFigure, figure_svg


ROWS, COLUMNS = ("top", "middle", "bottom"), ("left", "centre", "right")


def map_region(weights, cells=None) -> str:
    """Where in the image a square map's weight is centred, in words: "top left", "middle
    right", "centre" (the weighted mean cell, by thirds of the grid), counting only ``cells``
    (row-major ids) when given: the figure's text equivalent says this of the outlined cells."""
    w = np.asarray(weights, dtype=np.float64).ravel()
    grid = int(round(w.size ** 0.5))
    if cells is not None:
        w = np.where(np.isin(np.arange(w.size), cells), w, 0.0)
    w = w.reshape(grid, grid) / w.sum()                    # (grid rows, grid columns)
    at = np.arange(grid)

    def third(mean: float) -> int:                         # 0, 1, 2: which third of the grid
        return min(2, int(3 * (mean + 0.5) / grid))

    row, column = ROWS[third(w.sum(1) @ at)], COLUMNS[third(w.sum(0) @ at)]
    return "centre" if (row, column) == ("middle", "centre") else f"{row} {column}"


def map_readouts(weights) -> dict:
    """Peak weight, the cells (row-major ids, heaviest first) holding half the weight, their
    count, and the region of the image those cells are centred on (:func:`map_region`)."""
    w = np.asarray(weights, dtype=np.float64).ravel()
    order = np.argsort(-w, kind="stable")                  # heaviest first, ties by lower id
    count = half_mass_cells(w)
    cells = order[:count].tolist()
    return {"peak": float(w.max()), "half_cells": count, "cells": cells,
            "region": map_region(w, cells)}


def image_data_url(image: np.ndarray) -> str:
    """A (3, H, W) float image in [0, 1] as a PNG data URL."""
    import matplotlib.image as mpimg

    buf = io.BytesIO()
    mpimg.imsave(buf, np.clip(image.transpose(1, 2, 0), 0, 1), format="png")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


class CaptionMapsFigure(CourseFigure):
    """Controls: ``word_index``, ``relative``. Read-outs (Python side): ``peak``, ``half_cells``."""

    js_module = "caption_maps"
    image = traitlets.Unicode("").tag(sync=True)
    grid = traitlets.Int(6).tag(sync=True)
    words = traitlets.List([]).tag(sync=True)
    weights = traitlets.List([]).tag(sync=True)            # one list of grid * grid weights per word
    word_index = traitlets.Int(0).tag(sync=True)
    relative = traitlets.Bool(True).tag(sync=True)
    peak = traitlets.Float(0.0).tag(sync=True)
    half_cells = traitlets.Int(0).tag(sync=True)

    def __init__(self, image: np.ndarray, maps: list[dict], **kwargs):
        """``image`` (3, H, W) in [0, 1]; ``maps`` as returned by ``caption_task.word_maps``."""
        kwargs.setdefault("title", "Figure 8.5: what each word of the caption attended to")
        grid = int(np.asarray(maps[0]["map"]).shape[0])
        weights = [np.asarray(m["map"], dtype=float).ravel().round(5).tolist() for m in maps]
        super().__init__(image=image_data_url(image), grid=grid, words=[m["word"] for m in maps],
                         weights=weights, **kwargs)
        self._image_array = image
        self._recompute()

    @traitlets.validate("word_index")
    def _check_index(self, proposal):
        if not 0 <= proposal["value"] < max(1, len(self.words)):
            raise traitlets.TraitError(f"word_index must be in 0..{len(self.words) - 1}, "
                                       f"got {proposal['value']}")
        return proposal["value"]

    @traitlets.observe("word_index", "weights")
    def _recompute(self, change=None):
        r = map_readouts(self.weights[self.word_index])
        self.peak, self.half_cells = r["peak"], r["half_cells"]

    def static_svg(self) -> bytes:
        import matplotlib.pyplot as plt

        n = len(self.words)
        fig, axes = plt.subplots(1, n, figsize=(1.3 * n, 1.7))
        for ax, word, w in zip(np.atleast_1d(axes), self.words, self.weights):
            grid = np.asarray(w).reshape(self.grid, self.grid)
            ax.imshow(self._image_array.transpose(1, 2, 0))
            size = self._image_array.shape[1]
            ax.imshow(grid, cmap="magma", alpha=0.6, extent=(0, size, size, 0), vmin=0, vmax=1)
            r = map_readouts(w)
            ax.set_title(f"{word}\n{r['peak']:.2f} / {r['half_cells']}", fontsize=7)
            ax.axis("off")
        return figure_svg(fig)
