"""``glue(name, value)``: a value a page computes, for its prose to quote.

In the book's build (which sets ``COURSE_BOOK_BUILD`` for the kernels it starts) this is myst-nb's
``glue``: the page's ``{glue:text}`name``` roles show the value, and the cell that computed it
stays hidden. Anywhere else -- a page's notebook on Colab or Binder, where only the course package
may be installed -- the value is shown under the cell that computed it, ``name: value``, so the
numbers the prose quotes are there to read.
"""
from __future__ import annotations

import os

BUILD_VARIABLE = "COURSE_BOOK_BUILD"

try:
    from myst_nb import glue as _myst_nb_glue
except ImportError:                  # only the course package is installed: Colab, Binder, a laptop
    _myst_nb_glue = None

_RICH = ("_repr_mimebundle_", "_repr_html_", "_repr_markdown_", "_repr_svg_", "_repr_png_",
         "_repr_latex_")


def glue(name: str, variable, display: bool = True) -> None:
    """myst-nb's ``glue`` in the book's build; elsewhere show ``name: variable`` (a rich object,
    such as ``HTML`` or ``Markdown``, displayed as itself)."""
    if _myst_nb_glue is not None and os.environ.get(BUILD_VARIABLE):
        _myst_nb_glue(name, variable, display=display)
        return
    if isinstance(variable, str) or not any(hasattr(variable, rich) for rich in _RICH):
        print(f"{name}: {variable}")
        return
    from IPython.display import display as show

    print(f"{name}:")
    show(variable)
