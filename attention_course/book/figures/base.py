"""The base class of the course's interactive figures."""
from __future__ import annotations

import base64
import html
import re
from pathlib import Path

import anywidget
import traitlets

JS_DIR = Path(__file__).resolve().parent / "js"
FALLBACK_TEXT = "Run this cell to interact with the figure."
COMMON_IMPORT = 'import * as common from "./common.js";'


def bundle_module(name: str) -> str:
    """``js/common.js`` + ``js/<name>.js`` as one self-contained ES module.

    Each figure module imports the helpers as ``common`` (so it also loads on its own, e.g. in
    a test page); here that import is replaced by a namespace object over the same functions.
    """
    common = (JS_DIR / "common.js").read_text()
    own = (JS_DIR / f"{name}.js").read_text()
    if COMMON_IMPORT not in own:
        raise ValueError(f"js/{name}.js must start with: {COMMON_IMPORT}")
    names = re.findall(r"^export (?:function|const) (\w+)", common, flags=re.M)
    namespace = f"const common = {{ {', '.join(names)} }};"
    return common + "\n" + own.replace(COMMON_IMPORT, namespace)


def figure_png(fig, dpi: int = 80) -> bytes:
    """A matplotlib figure as PNG bytes (closing it): the static fallback of a course figure."""
    import io

    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight")
    plt.close(fig)
    return buf.getvalue()


class CourseFigure(anywidget.AnyWidget):
    """An anywidget whose front end is ``js/<js_module>.js`` (plus the shared ``js/common.js``).

    Subclasses set ``js_module``, declare their traitlets with ``.tag(sync=True)``, and may
    implement ``static_png()`` to give the print/PDF fallback image shown where widgets cannot run.
    """

    js_module: str = ""
    title = traitlets.Unicode("").tag(sync=True)

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        # only where js_module is declared: ipywidgets' add_traits subclasses the class again
        if "js_module" in cls.__dict__:
            cls._esm = bundle_module(cls.js_module)

    def static_png(self) -> bytes | None:
        """A PNG of the figure in its current state (print/PDF and saved-notebook fallback)."""
        return None

    def _repr_mimebundle_(self, **kwargs):
        bundle = super()._repr_mimebundle_(**kwargs)
        data = bundle[0] if isinstance(bundle, tuple) else bundle
        png = self.static_png()
        image = ("" if png is None else
                 f'<img alt="{html.escape(self.title)}" style="max-width:100%" '
                 f'src="data:image/png;base64,{base64.b64encode(png).decode()}"/>')
        data["text/html"] = (f'<div class="course-fig-fallback"><p><em>{FALLBACK_TEXT}</em></p>'
                             f"{image}</div>")
        data["text/plain"] = f"{self.title or type(self).__name__}. {FALLBACK_TEXT}"
        return bundle
