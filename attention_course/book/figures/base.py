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


def figure_svg(fig) -> bytes:
    """A matplotlib figure as SVG bytes (closing it): the static form of a course figure, vector
    graphics that print sharply at any size. Text is drawn as outlines, so the picture looks the
    same wherever it is shown; its words are in the figure's caption and description."""
    import io

    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    with plt.rc_context({"svg.fonttype": "path", "svg.hashsalt": "course", "image.interpolation": "none"}):
        # rasters inside the picture (a heat map) at print resolution
        fig.savefig(buf, format="svg", bbox_inches="tight", dpi=300, metadata={"Date": None})
    plt.close(fig)
    return buf.getvalue()


class CourseFigure(anywidget.AnyWidget):
    """An anywidget whose front end is ``js/<js_module>.js`` (plus the shared ``js/common.js``).

    Subclasses set ``js_module``, declare their traitlets with ``.tag(sync=True)``, and may
    implement ``static_svg()`` to give the print/PDF fallback picture shown where widgets cannot run.
    """

    js_module: str = ""
    title = traitlets.Unicode("").tag(sync=True)

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        # only where js_module is declared: ipywidgets' add_traits subclasses the class again
        if "js_module" in cls.__dict__:
            cls._esm = bundle_module(cls.js_module)

    def static_svg(self) -> bytes | None:
        """An SVG picture of the figure in its current state (the print/PDF and saved-notebook
        form), or None where the figure has none."""
        return None

    def static_html(self) -> str:
        """The figure's static form: its picture (where it has one) with its title as the
        caption. The PDF edition prints it in place of the live figure."""
        svg = self.static_svg()
        title = html.escape(self.title)
        image = ("" if svg is None else
                 f'<img alt="{title}" style="max-width:100%" '
                 f'src="data:image/svg+xml;base64,{base64.b64encode(svg).decode()}"/>')
        return f'{image}<p class="course-fig-caption">{title}</p>'

    def _repr_mimebundle_(self, **kwargs):
        bundle = super()._repr_mimebundle_(**kwargs)
        data = bundle[0] if isinstance(bundle, tuple) else bundle
        data["text/html"] = (f'<div class="course-fig-fallback"><p><em>{FALLBACK_TEXT}</em></p>'
                             f"{self.static_html()}</div>")
        data["text/plain"] = f"{self.title or type(self).__name__}. {FALLBACK_TEXT}"
        return bundle
