"""Every page of the built book read for WCAG 2.1 A and AA, as a reader's browser shows it.

axe-core (npm, pinned in ``offline/package-lock.json``) runs over every page at 1280 and 320 px,
in the theme's light and dark modes, after MathJax has typeset and the figures have drawn. Beside
it, the checks axe does not make: the contrast of the figures' SVG text against what it is drawn
on (axe leaves SVG text out), no sideways scrolling at 320 px (reflow, SC 1.4.10), and formulas
that are not Tab stops. Each check is shown to fail on a planted fault at the end of this file.
At the desktop width each page is also checked as it renders (nothing fetched from the network,
a clean console, no raw TeX, every figure loaded): the HTTP half of test_book_browser.py's check.
"""
from __future__ import annotations

import pytest

from attention_course_instructor.book.build import NODE_MODULES

pytestmark = [pytest.mark.slow, pytest.mark.browser]
AXE = NODE_MODULES / "axe-core" / "axe.min.js"
TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
WIDTHS = (1280, 320)
MODES = ("light", "dark")
RESIZE_SETTLES_MS = 600

# In dark mode only colours change (the theme swaps its colour variables), so there only axe's
# colour rules run again; every rule runs in light mode at each width.
COLOUR_RULES = ["color-contrast", "link-in-text-block"]
RUN_AXE = """(only) => axe.run(document, {runOnly: only})
  .then((r) => r.violations.map((v) => `${v.id} (${v.impact}): ${v.nodes.length} x `
                                       + v.nodes[0].target.join(" ")))"""
# the theme's own switch: the mode is an attribute of <html>, read by its stylesheets. The
# theme's colours ease into a new mode; a page loaded in that mode never eases, so the page is
# read with easing off (else axe may sample a colour half-way)
SET_MODE = """(mode) => {
  if (!document.getElementById("no-easing")) {
    const style = document.createElement("style");
    style.id = "no-easing";
    style.textContent = "*, *::before, *::after { transition: none !important; }";
    document.head.append(style);
  }
  document.documentElement.dataset.theme = mode;
  document.documentElement.dataset.mode = mode;
}"""
# every SVG <text> of a figure: its fill against what is under its centre (a filled shape, else
# the figure's own background), by WCAG's contrast ratio; large text (>= 24 px) needs 3:1
SVG_TEXT_CONTRAST = """() => {
  const rgb = (c) => (c.match(/[\\d.]+/g) || []).slice(0, 4).map(Number);
  const lum = ([r, g, b]) => [r, g, b].map((c) => c / 255)
    .map((c) => (c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4))
    .reduce((sum, c, i) => sum + c * [0.2126, 0.7152, 0.0722][i], 0);
  const ratio = (a, b) => { const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p);
                            return (x + 0.05) / (y + 0.05); };
  const failures = [];
  for (const text of document.querySelectorAll(".course-fig svg text")) {
    const box = text.getBoundingClientRect();
    if (!text.textContent.trim() || box.width === 0) continue;
    const fill = rgb(getComputedStyle(text).fill);
    const under = document.elementsFromPoint(box.x + box.width / 2, box.y + box.height / 2)
      .find((e) => e !== text && e.closest(".course-fig") && !["svg", "text", "g"].includes(e.tagName)
              && rgb(getComputedStyle(e).fill || "")[3] !== 0 && getComputedStyle(e).fill !== "none");
    const ground = under && under.namespaceURI.endsWith("svg") ? rgb(getComputedStyle(under).fill)
      : rgb(getComputedStyle(text.closest(".course-fig")).backgroundColor);
    const need = parseFloat(getComputedStyle(text).fontSize) >= 24 ? 3 : 4.5;
    const r = ratio(fill, ground);
    if (r < need) failures.push(`"${text.textContent}" ${r.toFixed(2)}:1`);
  }
  return failures;
}"""
OVERFLOW = "() => document.documentElement.scrollWidth - document.documentElement.clientWidth"
# a formula is a Tab stop only when it scrolls sideways (a keyboard must reach it to scroll it)
MATH_TAB_STOPS = """() => [...document.querySelectorAll('mjx-container, div.math')].filter((m) =>
  m.hasAttribute('tabindex') && m.tabIndex >= 0
  && !(['auto', 'scroll'].includes(getComputedStyle(m).overflowX)
       && m.scrollWidth > m.clientWidth + 1)).length"""


def book_pages(built_book) -> list[str]:
    return sorted(str(p.relative_to(built_book)) for p in built_book.rglob("*.html")
                  if not p.relative_to(built_book).parts[0].startswith("_"))


def findings(page, mode: str = "light") -> dict[str, list]:
    """What each check finds on the open page, in the mode it is shown in."""
    width = page.viewport_size["width"]
    only = ({"type": "tag", "values": TAGS} if mode == "light"
            else {"type": "rule", "values": COLOUR_RULES})
    return {"axe": page.evaluate(RUN_AXE, only), "svg text": page.evaluate(SVG_TEXT_CONTRAST),
            "sideways scroll px": [n for n in [page.evaluate(OVERFLOW)] if n > 0 and width <= 320],
            "formula tab stops": [n for n in [page.evaluate(MATH_TAB_STOPS)] if n]}


def read_page(visit, url) -> dict:
    """Findings for one page: {"<width> px, <mode>": {check: [finding, ...]}}, the empty ones left
    out. The page is loaded once, at the desktop width (where it is also checked as it renders,
    ``Visit.rendering_problems``), then narrowed to each other width, as a browser window is."""
    v = visit(url, None, width=WIDTHS[0])
    found = {"as loaded": {"rendering": v.rendering_problems()}}
    v.page.add_script_tag(path=str(AXE))
    for width in WIDTHS:
        if width != WIDTHS[0]:
            v.page.set_viewport_size({"width": width, "height": 1600})
            # the theme makes overflowing code and tables Tab stops again 300 ms after a resize
            v.page.wait_for_timeout(RESIZE_SETTLES_MS)
        for mode in MODES:
            v.page.evaluate(SET_MODE, mode)
            found[f"{width} px, {mode}"] = findings(v.page, mode)
    return {where: {check: items for check, items in checks.items() if items}
            for where, checks in found.items() if any(checks.values())}


def test_every_page_meets_wcag_21_aa(visit, site, built_book):
    pages = book_pages(built_book)
    assert len(pages) >= 25, pages
    failures = {f"{page} ({where})": items for page in pages
                for where, items in read_page(visit, f"{site}/{page}").items()}
    assert failures == {}, "\n".join(f"{k}: {v}" for k, v in failures.items())


# ---- each check fails on a planted fault ------------------------------------------------------

PLANT = {
    "axe": """() => { const b = document.createElement('button');
                      document.querySelector('article').prepend(b); }""",
    "svg text": """() => { const t = document.querySelector('.course-fig svg text');
                           t.setAttribute('fill', '#bbbbbb'); t.style.fill = '#bbbbbb'; }""",
    "sideways scroll px": """() => { const c = document.createElement('code');
                                     c.textContent = 'x'.repeat(200); c.style.whiteSpace = 'pre';
                                     document.querySelector('article p').append(c); }""",
    "formula tab stops": """() => document.querySelector('mjx-container:not([display="true"])')
                                    .setAttribute('tabindex', '0')""",
}


@pytest.mark.parametrize("check", list(PLANT))
def test_each_check_fails_on_a_planted_fault(visit, site, check):
    v = visit(f"{site}/book/chapter8/bottleneck.html", None, width=320)
    v.page.add_script_tag(path=str(AXE))
    assert not findings(v.page)[check], "the page fails before the fault is planted"
    v.page.evaluate(PLANT[check])
    assert findings(v.page)[check], f"{check}: the planted fault was not found"
