"""What the interactive-figure toolkit costs: bytes in the built site and seconds in a build.

    python -m benchmarks.figure_toolkit_cost      (after `make book`)

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
from benchmarks.report import Target, markdown_table, write

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


SITE_BYTES = Target(5_000_000, unit=" bytes")
BUILD_SECONDS = Target(10, unit=" s")


def report(sizes: dict, seconds: float) -> str:
    total = sum(sizes.values())
    return "\n".join([
        "# Figure toolkit: cost in the built site", "",
        "Written by `python -m benchmarks.figure_toolkit_cost`.", "",
        markdown_table(["part", "bytes"], [
            *[[k, f"{v:,}"] for k, v in sizes.items()],
            ["**total**", f"**{total:,}** (budget: {SITE_BYTES}; {SITE_BYTES.verdict(total)})"]]), "",
        "Build time of the two figures (create, precompute, fallback PNG, serialise): "
        f"{seconds:.1f} s (budget: {BUILD_SECONDS}; {BUILD_SECONDS.verdict(seconds)}).", "",
        "The widget manager, RequireJS and MathJax are the foundation's and are not counted.", ""])


def main():
    if not PAGE.exists():
        raise SystemExit(f"{PAGE} is missing: run `make book` first")
    write("figure_toolkit.md", report(site_bytes(), build_seconds()))


if __name__ == "__main__":
    main()
