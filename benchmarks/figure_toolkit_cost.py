"""What the interactive-figure toolkit costs: bytes in the built site and seconds in a build.

    .venv/bin/python benchmarks/figure_toolkit_cost.py      (after `make book`)

Budget (figure-toolkit issue): <= 5 MB added to the site and <= 10 s added to a build. The size
counts anywidget's front end, the shim, and the widget state and fallback images that the figure
page embeds; the time counts what the build executes for the figures (creating them, computing the
precomputed curves, rendering the fallback PNGs and serialising their state).
"""
from __future__ import annotations

import json
import re
import time
from pathlib import Path

from attention_course_instructor.book.build import HTML
from attention_course.book.figures import QKVExplorer, SoftmaxPeakFigure, softmax_peak_curves

HERE = Path(__file__).resolve().parent
PAGE = HTML / "book" / "chapter8" / "queries-keys-values.html"


def site_bytes() -> dict:
    vendor = HTML / "_static" / "vendor"
    html = PAGE.read_text()
    state = re.search(r'<script type="application/vnd.jupyter.widget-state\+json">(.*?)</script>',
                      html, flags=re.S)
    return {"anywidget front end": (vendor / "anywidget" / "index.js").stat().st_size,
            "widget shim": (vendor / "widget-shims.js").stat().st_size,
            "widget state in the 8.4 page": len(state.group(1).encode()) if state else 0}


def build_seconds() -> float:
    start = time.perf_counter()
    figures = [QKVExplorer(angle=20), SoftmaxPeakFigure(curves=softmax_peak_curves())]
    for fig in figures:
        fig._repr_mimebundle_()
        json.dumps(fig.get_state(), default=str)
    return time.perf_counter() - start


def main():
    if not PAGE.exists():
        raise SystemExit(f"{PAGE} is missing: run `make book` first")
    sizes = site_bytes()
    total = sum(sizes.values())
    seconds = build_seconds()
    lines = ["# Figure toolkit: cost in the built site", "",
             "Written by `benchmarks/figure_toolkit_cost.py`.", "",
             "| part | bytes |", "|---|---|", *[f"| {k} | {v:,} |" for k, v in sizes.items()],
             f"| **total** | **{total:,}** (budget 5,000,000: {'met' if total <= 5e6 else 'NOT met'}) |",
             "", f"Build time of the two figures (create, precompute, fallback PNG, serialise): "
             f"{seconds:.1f} s (budget 10 s: {'met' if seconds <= 10 else 'NOT met'}).", "",
             "The widget manager, RequireJS and MathJax are the foundation's and are not counted.", ""]
    (HERE / "results").mkdir(exist_ok=True)
    (HERE / "results" / "figure_toolkit.md").write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
