"""Byte-pair encoding step by step: the text's tokens after each merge.

The merges are learned in Python (:func:`attention_course.notes.tokens.train_bpe`); the browser applies
the first k of them to the text and reads out the token count and the number of distinct symbols
in use. :func:`attention_course.notes.tokens.tokenize_with` is the reference.
"""
from __future__ import annotations

import traitlets

from attention_course.book.figures.base import CourseFigure, figure_svg
from attention_course.notes.tokens import BPEResult, tokenize_with


class BPEStepsFigure(CourseFigure):
    """Control: ``step`` (merges applied). Read-outs: ``tokens`` and ``in_use`` (from the reference)."""

    js_module = "bpe_steps"
    text = traitlets.Unicode("").tag(sync=True)
    merges = traitlets.List([]).tag(sync=True)
    step = traitlets.Int(0).tag(sync=True)
    tokens = traitlets.Int(0).tag(sync=True)
    in_use = traitlets.Int(0).tag(sync=True)

    def __init__(self, text: str, result: BPEResult, **kwargs):
        kwargs.setdefault("title", "Figure 12.1: byte-pair encoding, one merge at a time")
        super().__init__(text=text, merges=[list(m) for m in result.merges], **kwargs)
        self._result = result
        self._recompute()

    @traitlets.validate("step")
    def _check_step(self, proposal):
        if not 0 <= proposal["value"] <= len(self.merges):
            raise traitlets.TraitError(f"step must be in 0..{len(self.merges)}, got {proposal['value']}")
        return proposal["value"]

    @traitlets.observe("step")
    def _recompute(self, change=None):
        symbols = tokenize_with(self.text, [tuple(m) for m in self.merges[: self.step]])
        self.tokens, self.in_use = len(symbols), len(set(symbols))

    def static_svg(self) -> bytes:
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(5.5, 2.8))
        ax.plot(self._result.token_counts, label="tokens in the text")
        ax.plot(self._result.in_use, label="distinct symbols in use")
        ax.set(xlabel="merges", ylabel="count")
        ax.legend(fontsize=8)
        return figure_svg(fig)
