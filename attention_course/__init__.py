"""Shared code of the course *Attention and Transformers*.

Chapters and labs import from here, so notebooks stay about ideas rather than plumbing:

- :mod:`attention_course.data` -- digit strips built from scikit-learn's bundled digits;
- :mod:`attention_course.attention` -- masked attention weights and context vectors;
- :mod:`attention_course.models` -- the bidirectional column encoder and the two readers;
- :mod:`attention_course.metrics` -- exact-string accuracy and character error rate;
- :mod:`attention_course.training` -- training, saving, loading and evaluating readers;
- :mod:`attention_course.plots` -- results and attention-map figures;
- :mod:`attention_course.baselines` -- the isolated-digit floor the readers are compared with;
- :mod:`attention_course.transformer` -- self-attention, masks, positions, the transformer block;
- :mod:`attention_course.figures` -- interactive figures (anywidget) with Python references;
- :mod:`attention_course.grading` -- the nbgrader pipeline helpers used by the tests;
- :mod:`attention_course.build` -- builds the book with its browser assets served locally.
"""
__version__ = "0.1.0"


def pick_device(prefer: str | None = None):
    """Return ``torch.device('cuda')`` when a GPU is available (or ``prefer`` says so), else CPU."""
    import torch

    if prefer is not None:
        return torch.device(prefer)
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")
