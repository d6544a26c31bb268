"""How many steps information needs to cross a distance, by kind of layer.

Used by Section 8.5 (``book/chapter8/self-attention.md``), Section 12.1
(``book/chapter12/why-attention.md``) and the routes figure
(:class:`~attention_course.book.figures.RoutesFigure`).
"""
from __future__ import annotations

import math


def route_lengths(distance: int, kernel: int = 3) -> dict:
    """Fewest steps for information to travel ``distance`` positions, by kind of layer.

    recurrent: one state update per position; convolution: each layer of width ``kernel`` reaches
    ``kernel - 1`` positions further; self-attention: one layer connects any two positions.
    """
    if distance < 1 or kernel < 2:
        raise ValueError(f"need distance >= 1 and kernel >= 2, got {distance} and {kernel}")
    return {"recurrent": distance, "convolution": math.ceil(distance / (kernel - 1)),
            "self-attention": 1}
