"""The built book in headless Chromium with the network unavailable.

Debian's Chromium (installed by `make test`), driven by Playwright for Python through
``executable_path`` -- no browser is downloaded. Host names other than localhost do not resolve,
and any request that is not for the local site is aborted and recorded as a failure.
A screenshot of every tested page is kept under ``_build/screenshots/`` for review.
"""
from __future__ import annotations

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.browser]
CHAPTER8 = ["index", "bottleneck", "attention-over-states", "captioning", "queries-keys-values",
            "self-attention", "positions", "transformer-block", "summary",
            "computation-memory", "exercises"]
CHAPTER12 = ["index", "why-attention", "self-attention-layer", "tokens", "decoding",
             "long-sequences", "images", "summary", "exercises"]
PAGES = ["index.html", *[f"book/chapter8/{p}.html" for p in CHAPTER8],
         *[f"book/chapter12/{p}.html" for p in CHAPTER12], "labs/lab8/lab8.html",
         "book/labs/lab8-results.html", "labs/lab12/lab12.html", "book/concepts.html", "book/instructors/grading.html"]


# Served over HTTP, every page is read (and these checks made) by
# test_accessibility_browser.py; opened from disk, the pages are read here.
@pytest.mark.parametrize("page", PAGES)
def test_page_renders_offline_from_disk(visit, built_book, page):
    v = visit(f"{built_book.as_uri()}/{page}", f"file-{page.replace('/', '_')}.png")
    assert v.rendering_problems() == []


def test_chapter_math_and_widget(visit, site):
    v = visit(f"{site}/book/chapter8/index.html", "chapter8-widget.png")
    assert v.page.locator("mjx-container").count() >= 3, "MathJax did not typeset the page"
    assert v.page.locator("article img").count() >= 1, "the computed figure is missing"
    figure = v.page.locator(".context-width-fig").first      # rendered from the saved widget state
    figure.wait_for(state="visible", timeout=10_000)
    ratio = figure.locator("[data-readout=per-symbol]")
    assert ratio.inner_text() == "5.33"                        # d = 16 over n = 3
    control = figure.locator("[data-control=n]")
    control.focus()
    control.press("ArrowLeft")                                 # runs in the browser, no kernel
    assert ratio.inner_text() == "8.00"


# every control that opens the search, as a reader can see it
VISIBLE_SEARCH = """() => [...document.querySelectorAll('.search-button__button, input[type=search]')]
  .filter((e) => { const box = e.getBoundingClientRect();
                   return box.width > 0 && box.height > 0 && getComputedStyle(e).visibility !== 'hidden'; })
  .length"""


@pytest.mark.parametrize("width", [1280, 375])
def test_one_way_into_the_search(visit, site, width):
    v = visit(f"{site}/book/chapter8/index.html", None, width=width)
    assert v.page.evaluate(VISIBLE_SEARCH) == 1


def test_search_snippets_show_formulas_as_text(visit, site):
    """A result's snippet quotes its page; the formulas there read as text, not TeX source."""
    v = visit(f"{site}/search.html?q=variance", None)
    snippets = v.page.locator("#search-results p.context")
    snippets.first.wait_for(timeout=15_000)
    v.page.wait_for_function("() => !document.querySelector('#search-results .search-pulse')"
                             " && document.querySelector('#search-results').textContent.includes('found')",
                             timeout=15_000)
    text = " ".join(snippets.all_inner_texts())
    assert "√(d_k)" in text or "d_k" in text, text[:500]        # a formula made it into a snippet
    assert "\\" not in text, text[:500]                          # and no TeX command with it
    assert v.page.evaluate("coursePlainTex(String.raw`\\(\\frac{QK^\\top}{\\sqrt{d_k}}\\)`)") \
        == "(QKᵀ)/(√(d_k))"
    # a glossary's term and definition stay two words apart; the header's buttons are left out
    quoted = v.page.evaluate("""() => courseSearchableText(new DOMParser().parseFromString(
      '<main role="main"><div class="bd-header-article">Binder Colab .ipynb</div>'
      + '<dl><dt>attention weights</dt><dd>Non-negative shares</dd></dl></main>', 'text/html'))
      .querySelector('[role=main]').textContent.replace(/\\s+/g, ' ').trim()""")
    assert quoted == "attention weights Non-negative shares", quoted
