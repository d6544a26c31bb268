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
# every SVG <text> of a figure as rendered (its font size times the picture's scale): at least
# 10 px at the desktop width; at 320 px (a 1280 px window zoomed to 400%, where one CSS pixel is
# four screen pixels) at least 6.5
MIN_TEXT_PX = {1280: 10, 320: 6.5}
SVG_TEXT_SIZE = """(least) => [...document.querySelectorAll(".course-fig svg text")].flatMap((text) => {
  const svg = text.ownerSVGElement, box = svg.viewBox.baseVal;
  if (!text.textContent.trim() || !box || !box.width || !svg.getBoundingClientRect().width) return [];
  const px = parseFloat(getComputedStyle(text).fontSize) * svg.getBoundingClientRect().width / box.width;
  return px < least - 0.05 ? [`"${text.textContent}" ${px.toFixed(1)} px`] : [];
})"""
# What a screen reader gets from each figure, in whatever state its controls are: every slider
# announces the value shown beside it (aria-valuetext, else its raw value, equals its <output>),
# and every picture (SVG with role img) has a name and a text equivalent (aria-describedby
# pointing at text that states what it shows).
FIGURE_TEXT = """(figure) => {
  const found = [];
  const text = (ids) => (ids || "").split(/\\s+/).map((id) => document.getElementById(id))
    .map((e) => (e ? e.textContent.trim() : "")).join(" ").trim();
  for (const slider of figure.querySelectorAll("input[type=range]")) {
    const shown = figure.querySelector(`output[for="${slider.id}"]`);
    const said = slider.getAttribute("aria-valuetext") ?? slider.value;
    if (shown && shown.textContent.trim() !== said.trim()) {
      found.push(`${slider.dataset.control} announces "${said}" but shows "${shown.textContent}"`);
    }
  }
  for (const picture of figure.querySelectorAll("svg[role=img]")) {
    const name = picture.getAttribute("aria-label") || text(picture.getAttribute("aria-labelledby"));
    if (!name) found.push("a picture has no name");
    if (!text(picture.getAttribute("aria-describedby"))) {
      found.push(`"${name}" has no text equivalent`);
    }
  }
  return found;
}"""
# Each control of each figure moved through its states (a slider through up to STATES evenly
# spaced values, a checkbox both ways, a list through its options), one control at a time, and
# put back; in each state FIGURE_TEXT and the SVG text's contrast and size are checked, at every
# width and in both modes, and axe runs over the figure at the desktop width in light mode. (A
# figure is the same light card in both modes, with colours of its own: axe's colour rules would
# find in dark mode what they find in light; axe reads each page, figures as drawn, in all four.)
STATES = 5
AXE_EVERY_STATE = {(1280, "light")}
SWEEP = """async ([only, states, figureText, contrast, size, least]) => {
  const readable = new Function(`return (${figureText})`)();
  const textContrast = new Function(`return (${contrast})`)();
  const textSize = new Function(`return (${size})`)();
  const settle = () => new Promise((done) => requestAnimationFrame(() => setTimeout(done, 0)));
  const values = (c) => {
    if (c.type === "checkbox") return [!c.checked, c.checked];
    if (c.tagName === "SELECT") return [...c.options].map((o) => o.value);
    const [lo, hi, step] = [Number(c.min), Number(c.max), Number(c.step) || 1];
    const count = Math.floor((hi - lo) / step) + 1;
    const picks = count <= states ? [...Array(count).keys()]
      : [...Array(states).keys()].map((k) => Math.round((k * (count - 1)) / (states - 1)));
    return picks.map((k) => String(lo + k * step));
  };
  const set = (c, v) => {
    if (c.type === "checkbox") c.checked = v; else c.value = v;
    c.dispatchEvent(new Event(c.type === "range" ? "input" : "change", { bubbles: true }));
  };
  const found = [];
  for (const figure of document.querySelectorAll(".course-fig")) {
    const title = figure.querySelector(".course-fig-title").textContent.split(":")[0];
    const names = [...figure.querySelectorAll("[data-control]")].map((c) => c.dataset.control);
    for (const name of names) {
      const control = () => figure.querySelector(`[data-control="${name}"]`);
      const first = control().type === "checkbox" ? control().checked : control().value;
      for (const value of [...values(control()), first]) {
        set(control(), value);
        await settle();
        const where = `${title}, ${name} = ${value}`;
        found.push(...readable(figure).map((f) => `${where}: ${f}`));
        found.push(...textContrast().map((f) => `${where}: ${f}`));
        found.push(...textSize(least).map((f) => `${where}: ${f}`));
        if (only) {
          const result = await axe.run(figure, { runOnly: only });
          found.push(...result.violations.map((v) => `${where}: ${v.id} (${v.impact}) x ${v.nodes.length}`));
        }
      }
    }
  }
  return found;
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


def rules(mode: str) -> dict:
    return ({"type": "tag", "values": TAGS} if mode == "light"
            else {"type": "rule", "values": COLOUR_RULES})


def findings(page, mode: str = "light") -> dict[str, list]:
    """What each check finds on the open page, in the mode it is shown in, as the page drew."""
    width = page.viewport_size["width"]
    return {"axe": page.evaluate(RUN_AXE, rules(mode)), "svg text": page.evaluate(SVG_TEXT_CONTRAST),
            "svg text size": page.evaluate(SVG_TEXT_SIZE, MIN_TEXT_PX[width]),
            "figure text": page.evaluate(f"() => [...document.querySelectorAll('.course-fig')]"
                                         f".flatMap({FIGURE_TEXT})"),
            "sideways scroll px": [n for n in [page.evaluate(OVERFLOW)] if n > 0 and width <= 320],
            "formula tab stops": [n for n in [page.evaluate(MATH_TAB_STOPS)] if n]}


def figure_states(page, mode: str = "light") -> list[str]:
    """What the checks find in any state of any figure on the page (see SWEEP)."""
    if not page.locator(".course-fig").count():
        return []
    width = page.viewport_size["width"]
    axe_rules = rules(mode) if (width, mode) in AXE_EVERY_STATE else None
    return page.evaluate(SWEEP, [axe_rules, STATES, FIGURE_TEXT, SVG_TEXT_CONTRAST,
                                 SVG_TEXT_SIZE, MIN_TEXT_PX[width]])


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
            found[f"{width} px, {mode}"] = {**findings(v.page, mode),
                                            "figure states": figure_states(v.page, mode)}
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
    "svg text size": """() => document.querySelector('.course-fig svg text')
                                    .setAttribute('font-size', '4')""",
    "figure text": """() => document.querySelector('.course-fig svg[role=img]')
                                  .removeAttribute('aria-describedby')""",
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


# faults that show only in some state of a figure's controls, planted in Figure 8.5 (the word
# slider, the "relative" checkbox); the sweep must find each, the page as drawn shows none
PLANT_IN_A_STATE = {
    # the slider's read-out goes wrong past its first value, as an index would be announced
    "announced value": """() => { const s = document.querySelector('.caption-maps-fig [data-control=word]');
        s.addEventListener('input', () => setTimeout(() => s.setAttribute('aria-valuetext', s.value))); }""",
    # unticking the checkbox turns the read-out's text pale
    "contrast": """() => { const c = document.querySelector('.caption-maps-fig [data-control=relative]');
        c.addEventListener('change', () => document.querySelectorAll('.caption-maps-fig svg text, '
          + '.caption-maps-fig p').forEach((e) => { e.style.color = c.checked ? '' : '#bbb'; })); }""",
    # a later word loses the picture's text equivalent
    "text equivalent": """() => { const s = document.querySelector('.caption-maps-fig [data-control=word]');
        s.addEventListener('input', () => setTimeout(() => document.querySelector(
          '.caption-maps-fig svg').removeAttribute('aria-describedby'))); }""",
}


@pytest.mark.parametrize("fault", list(PLANT_IN_A_STATE))
def test_the_figure_sweep_finds_a_fault_in_one_state(visit, site, fault):
    v = visit(f"{site}/book/chapter8/captioning.html", None, width=1280)
    v.page.add_script_tag(path=str(AXE))
    assert figure_states(v.page) == [], "the figure fails before the fault is planted"
    v.page.evaluate(PLANT_IN_A_STATE[fault])
    assert not any(findings(v.page).values()), "the fault shows without moving a control"
    assert figure_states(v.page), f"{fault}: the planted fault was not found"
