"""Interactive figures that work live in a notebook and in the rendered book without a kernel.

An interactive figure is a small, dependency-free JavaScript module in ``figures/js/`` (the drawing
and any in-browser math) plus a Python class in this package that exposes it as an `anywidget`
(controls and read-outs are traitlets, so code can read ``fig.weights``). The math of every figure
also has a Python *reference* here, which the Python class uses to keep its read-outs current and
which the browser tests compare with what the page displays.

    from attention_course.book.figures import QKVExplorer
    QKVExplorer(angle=30)          # one call: the same figure live and in the built book
"""
from attention_course.book.figures.base import CourseFigure  # noqa: F401
from attention_course.book.figures.qkv import QKVExplorer, qkv_attention, DEFAULT_KEYS, DEFAULT_VALUES  # noqa: F401
from attention_course.book.figures.softmax_peak import SoftmaxPeakFigure, softmax_peak_curves  # noqa: F401
from attention_course.book.figures.reorder import ORDERS, ReorderFigure, reorder_attention  # noqa: F401
from attention_course.book.figures.bottleneck import BottleneckFigure, bottleneck_steps  # noqa: F401
from attention_course.book.figures.context_width import ContextWidthFigure, numbers_per_symbol  # noqa: F401
from attention_course.book.figures.caption_maps import CaptionMapsFigure, map_readouts  # noqa: F401
from attention_course.book.figures.routes import RoutesFigure  # noqa: F401
from attention_course.book.figures.positions import (  # noqa: F401
    PositionSimilarityFigure, PositionWavesFigure, pair_similarity, pair_wave, position_codes)
from attention_course.book.figures.block_trace import BlockTraceFigure  # noqa: F401
from attention_course.book.figures.bpe_steps import BPEStepsFigure  # noqa: F401
from attention_course.book.figures.patterns import PatternFigure  # noqa: F401
from attention_course.book.figures.alignment import AlignmentFigure, alignment_readouts  # noqa: F401
from attention_course.book.figures.selfcheck import SelfCheck, self_check  # noqa: F401
