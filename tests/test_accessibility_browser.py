"""Every page of the built book read for WCAG 2.1 A and AA, as a reader's browser shows it.

axe-core (npm, pinned in ``offline/package-lock.json``) runs over every page at 1280 and 320 px,
in the theme's light and dark modes, after MathJax has typeset and the figures have drawn; the
search page is read with a real query (``search.html?q=attention``) once its results are in.
Beside axe, the checks axe does not make: the contrast of the figures' SVG text against what it is
drawn on (axe leaves SVG text out), no sideways scrolling at 320 px (reflow, SC 1.4.10), nothing of
a figure cut off at its edge, formulas that are not Tab stops, a figure's picture described with
the numbers the figure shows, every control of a figure either changing something or saying that
it does not and redrawing the figure in a few changes to the page (one per shape froze the page
for seconds at each key press), keyboard focus that can be seen on every kind of focusable element
(a screenshot with and without focus must differ; SC 2.4.7), search results that quote each page
once and only its text, and every self-check question answered by keyboard, option by option,
with the feedback its Python reference gives. Each check is shown to fail on a planted fault at
the end of this file. At the desktop width each page is also checked as it renders (nothing
fetched from the network, a clean console, no raw TeX, every figure loaded): the HTTP half of
test_book_browser.py's check.

Each page is loaded once and read at both widths in both modes; each figure's controls are moved
through their states twice (desktop width in light mode, with axe; phone width in dark mode), and
the focus check's screenshots are taken once per kind of element for the whole book at each of
those two settings. axe's colour rules read a code block only if it holds a kind of token (a
colour over a background, at a size and weight) not yet read at that width and mode.
"""
from __future__ import annotations

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from attention_course_instructor.book.build import NODE_MODULES
from conftest import DRAWN

pytestmark = [pytest.mark.slow, pytest.mark.browser]
AXE = NODE_MODULES / "axe-core" / "axe.min.js"
TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
WIDTHS = (1280, 320)
MODES = ("light", "dark")
# after a resize the theme makes each overflowing code block, output and table a Tab stop
# (tabindex 0; the others -1), 300 ms later: the page is read once they agree with the new width,
# or after RESIZE_SETTLES_MS (axe then names a scrollable region that is not a Tab stop)
RESIZE_SETTLES_MS = 600
TAB_STOPS_SET = """() => [...document.querySelectorAll(["pre", ".nboutput > .output_area",
    ".cell_output > .output", ".jp-RenderedHTMLCommon", ".pst-scrollable-table-container"]
    .join(", "))]
  .every((e) => e.tabIndex === (e.scrollWidth > e.clientWidth
                                || e.scrollHeight > e.clientHeight ? 0 : -1))"""

# In dark mode only colours change (the theme swaps its colour variables), so there only axe's
# colour rules run again; every rule runs in light mode at each width.
COLOUR_RULES = ["color-contrast", "link-in-text-block"]
# axe over the page: ``only``, the rules (every rule by tag in light mode, the colour rules alone
# in dark mode: see rules()); ``seen``, the kinds of code token whose colours were already read at
# this width and mode; ``colour``, COLOUR_RULES. Code is most of what the colour rules read (Lab
# 12's page holds 6,000 highlighted tokens in a handful of colours). A token's contrast depends
# only on its colour, size, weight and opacity and on the backgrounds under it up to the first
# opaque one: its kind. Two tokens of one kind pass or fail together, so the colour rules read a
# code block only if it holds a kind not read before (a token that is not displayed has no kind:
# axe would not read it). Every other rule reads every block. Gives [violations, the kinds read
# for the first time, the number of code blocks the colour rules read].
RUN_AXE = """async ([only, seen, colour]) => {
  const report = (r) => r.violations.map((v) => `${v.id} (${v.impact}): ${v.nodes.length} x `
                                                + v.nodes[0].target.join(" "));
  const kind = (e) => {
    const style = getComputedStyle(e), grounds = [];
    for (let a = e; a; a = a.parentElement) {
      grounds.push(getComputedStyle(a).backgroundColor);
      if (grounds.at(-1).startsWith("rgb(")) break;           // opaque: nothing under it shows
    }
    return [style.color, style.fontSize, style.fontWeight, style.opacity, ...grounds].join(" ");
  };
  const hasText = (e) => [...e.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim());
  const known = new Set(seen), added = [], skipped = [];
  const blocks = document.querySelectorAll(".highlight");
  for (const block of blocks) {
    const kinds = new Set([block, ...block.querySelectorAll("*")]
      .filter((e) => hasText(e) && e.getClientRects().length).map(kind));
    const fresh = [...kinds].filter((k) => !known.has(k));
    if (!fresh.length) { skipped.push(block); continue; }
    fresh.forEach((k) => { known.add(k); added.push(k); });
  }
  const found = [];
  if (only.type !== "rule") {                  // light mode: every rule but colour's, everywhere
    const off = Object.fromEntries(colour.map((id) => [id, {enabled: false}]));
    found.push(...report(await axe.run(document, {runOnly: only, rules: off})));
  }
  const context = skipped.length ? {include: [document], exclude: skipped} : document;
  found.push(...report(await axe.run(context, {runOnly: {type: "rule", values: colour}})));
  return [found, added, blocks.length - skipped.length];
}"""
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
# every SVG <text> of a figure (of the page, or of one figure: ``root``): its fill against what is
# under its centre (a filled shape, else the figure's own background), by WCAG's contrast ratio;
# large text (>= 24 px) needs 3:1
SVG_TEXT_CONTRAST = """(root) => {
  const rgb = (c) => (c.match(/[\\d.]+/g) || []).slice(0, 4).map(Number);
  const lum = ([r, g, b]) => [r, g, b].map((c) => c / 255)
    .map((c) => (c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4))
    .reduce((sum, c, i) => sum + c * [0.2126, 0.7152, 0.0722][i], 0);
  const ratio = (a, b) => { const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p);
                            return (x + 0.05) / (y + 0.05); };
  const failures = [];
  const texts = root ? root.querySelectorAll("svg text") : document.querySelectorAll(".course-fig svg text");
  for (const text of texts) {
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
# four screen pixels) at least 6.5 (``root``: one figure's only)
MIN_TEXT_PX = {1280: 10, 320: 6.5}
SVG_TEXT_SIZE = """(least, root) => [...(root ? root.querySelectorAll("svg text")
                                      : document.querySelectorAll(".course-fig svg text"))].flatMap((text) => {
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
  // a referenced element's text, as the accessible description takes it: its aria-label if it
  // has one (a table named "scores and weights" gives only that), else its text
  const described = (ids) => (ids || "").split(/\\s+/).map((id) => document.getElementById(id))
    .map((e) => (e ? e.getAttribute("aria-label") || e.textContent : "")).join(" ");
  const pictures = [...figure.querySelectorAll("svg[role=img]")];
  let description = "";
  for (const picture of pictures) {
    const name = picture.getAttribute("aria-label") || text(picture.getAttribute("aria-labelledby"));
    if (!name) found.push("a picture has no name");
    if (!text(picture.getAttribute("aria-describedby"))) {
      found.push(`"${name}" has no text equivalent`);
    }
    description += " " + described(picture.getAttribute("aria-describedby"));
  }
  // every number the figure shows in a read-out is in what its pictures' descriptions say
  if (pictures.length) {
    const said = new Set(description.match(/-?\\d+(?:\\.\\d+)?/g) || []);
    for (const readout of figure.querySelectorAll("[data-readout]")) {
      if (readout.closest("output") || readout.tagName === "OUTPUT") continue;   // a control's value
      for (const number of readout.textContent.match(/-?\\d+(?:\\.\\d+)?/g) || []) {
        if (!said.has(number)) {
          found.push(`the description leaves out ${readout.dataset.readout} = ${number}`);
          break;
        }
      }
    }
  }
  return found;
}"""
# Each control of each figure moved through its states (a slider through up to STATES evenly
# spaced values, a checkbox both ways, a list through its options), one control at a time, and
# put back; in each state the figure's FIGURE_TEXT, SVG text contrast and size and cut-off edges are
# checked (that figure's only: the others do not change), at every
# width and in both modes, and axe runs over the figure at the desktop width in light mode. (A
# figure is the same light card in both modes, with colours of its own: axe's colour rules would
# find in dark mode what they find in light; axe reads each page, figures as drawn, in all four.)
# A move of a control may also change the page in at most MOST_CHANGES places (the picture and each
# read-out once): a figure drawing its picture shape by shape into the page makes one change per
# shape, and the theme's icon library reads the whole picture again at each (Figure 8.11 froze the
# page for 3 s at every press of an arrow key on its slider; figures draw off the page instead,
# ``common.picture`` in the figures' JavaScript).
STATES = 5
MOST_CHANGES = 16
AXE_EVERY_STATE = {(1280, "light")}
SWEEP = """async ([only, states, figureText, contrast, size, least, cutOff, most]) => {
  const readable = new Function(`return (${figureText})`)();
  const textContrast = new Function(`return (${contrast})`)();
  const textSize = new Function(`return (${size})`)();
  const cut = new Function(`return (${cutOff})`)();
  // a figure redraws in its control's own handler (the toolkit keeps no timers), so what its
  // handlers queue is run and the state is read without yielding to the browser's rendering: a
  // paint, which none of the checks reads, costs up to half a second on the heaviest figures
  const settle = () => Promise.resolve();
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
  // what axe's rules can see change between states: the elements, their roles, whether they have
  // an ARIA name, the colours of HTML text (not the numbers, the positions, the words of a name or
  // the fill of SVG shapes, which no axe rule reads); axe runs once per look, not once per state
  const look = (figure) => [...figure.querySelectorAll("*")].map((e) => {
    const st = getComputedStyle(e);
    return [e.tagName, e.className.baseVal ?? e.className, e.getAttribute("role"),
            Boolean((e.getAttribute("aria-label") || "").trim()), e.disabled, st.color,
            st.backgroundColor, st.opacity, st.display, st.visibility].join(",");
  }).join(";");
  const axed = new Set();
  const found = [];
  let changes = 0;                                  // to the page, by one move of a control
  const watch = new MutationObserver((records) => { changes += records.length; });
  watch.observe(document.body, { childList: true, subtree: true });
  for (const figure of document.querySelectorAll(".course-fig")) {
    const title = figure.querySelector(".course-fig-title").textContent.split(":")[0];
    const names = [...figure.querySelectorAll("[data-control]")].map((c) => c.dataset.control);
    for (const name of names) {
      const control = () => figure.querySelector(`[data-control="${name}"]`);
      const first = control().type === "checkbox" ? control().checked : control().value;
      for (const value of [...values(control()), first]) {
        watch.takeRecords();
        changes = 0;
        set(control(), value);
        await settle();
        changes += watch.takeRecords().length;
        const where = `${title}, ${name} = ${value}`;
        if (changes > most) found.push(`${where}: redrawn in ${changes} changes to the page`);
        found.push(...readable(figure).map((f) => `${where}: ${f}`));
        found.push(...textContrast(figure).map((f) => `${where}: ${f}`));
        found.push(...textSize(least, figure).map((f) => `${where}: ${f}`));
        found.push(...cut(figure).map((f) => `${where}: ${f}`));
        const seen = only && look(figure);
        if (only && !axed.has(seen)) {
          axed.add(seen);
          const result = await axe.run(figure, { runOnly: only });
          found.push(...result.violations.map((v) => `${where}: ${v.id} (${v.impact}) x ${v.nodes.length}`));
        }
      }
    }
  }
  watch.disconnect();
  return found;
}"""
OVERFLOW = "() => document.documentElement.scrollWidth - document.documentElement.clientWidth"
# anything inside a figure reaching past the figure's edge, where no box of the figure scrolls to
# show it (Figure 8.14's table at 320 px); ``root``: one figure only
FIGURE_CUT_OFF = """(root) => [...(root ? [root] : document.querySelectorAll('.course-fig'))].flatMap((figure) => {
  const edge = figure.getBoundingClientRect();
  const title = figure.querySelector('.course-fig-title').textContent.split(':')[0];
  const cut = [...figure.querySelectorAll('*')].filter((e) => {
    const box = e.getBoundingClientRect();
    if (!box.width || e.closest('.course-sr-only')) return false;
    const scroller = e.closest('.scroll');
    if (scroller && scroller !== e && scroller.tabIndex >= 0) return false;
    return box.right > edge.right + 1 || box.left < edge.left - 1;
  });
  return cut.length ? [`${title}: ${cut.length} elements cut off, e.g. <${cut[0].tagName.toLowerCase()}>`] : [];
})"""
# A control that changes nothing in the figure (for every value it takes, with the figure's lists
# at each of their options) must be switched off or say so: Figure 12.4's dilation slider did
# nothing to a local band, unannounced.
INERT_CONTROLS = """async () => {
  const settle = () => Promise.resolve();        // a figure redraws in its control's own handler
  const set = (c, v) => {
    if (c.type === "checkbox") c.checked = v; else c.value = v;
    c.dispatchEvent(new Event(c.type === "range" ? "input" : "change", { bubbles: true }));
  };
  const values = (c) => c.type === "checkbox" ? [!c.checked, c.checked]
    : c.tagName === "SELECT" ? [...c.options].map((o) => o.value)
    : [c.min, c.max];
  const found = [];
  for (const figure of document.querySelectorAll(".course-fig")) {
    const title = figure.querySelector(".course-fig-title").textContent.split(":")[0];
    const control = (name) => figure.querySelector(`[data-control="${name}"]`);
    const names = [...figure.querySelectorAll("[data-control]")].map((c) => c.dataset.control);
    // what the figure shows, the controls' own read-outs left out
    const shown = () => [...figure.querySelectorAll("svg, [data-readout], table, p")]
      .filter((e) => !e.closest(".control")).map((e) => e.outerHTML).join("|");
    const lists = names.filter((n) => control(n).tagName === "SELECT");
    const settings = lists.length ? lists.flatMap((l) => values(control(l)).map((v) => [l, v])) : [[null, null]];
    for (const [list, option] of settings) {
      const before = list ? control(list).value : null;
      if (list) { set(control(list), option); await settle(); }
      for (const name of names.filter((n) => n !== list && control(n).tagName !== "SELECT")) {
        const c = control(name), first = c.type === "checkbox" ? c.checked : c.value;
        const seen = new Set([shown()]);
        for (const v of values(c)) { set(control(name), v); await settle(); seen.add(shown()); }
        set(control(name), first); await settle();
        const off = control(name).disabled || control(name).getAttribute("aria-disabled") === "true";
        if (seen.size === 1 && !off) {
          found.push(`${title}: ${name} changes nothing${list ? ` when ${list} = ${option}` : ""}, unannounced`);
        }
      }
      if (list) { set(control(list), before); await settle(); }
    }
  }
  return found;
}"""
# Keyboard focus, seen: every focusable element the reader can reach, one of each kind (its tag,
# classes, its parent's, and whether a box around it scrolls), is screenshot unfocused and then
# focused from the keyboard; the two pictures must differ. Tooltips are hidden meanwhile (the
# theme shows one on focus, which would differ for the wrong reason).
FOCUSABLE = """(seen) => {
  const kinds = new Set(seen), picked = [];
  document.querySelectorAll('[data-focus-check]').forEach((e) => { delete e.dataset.focusCheck; });
  const reachable = 'a[href], button, input, select, textarea, summary, [tabindex]';
  for (const e of document.querySelectorAll(reachable)) {
    if (e.tabIndex < 0 || e.disabled || e.closest('[hidden], [inert], .course-sr-only')) continue;
    const box = e.getBoundingClientRect(), style = getComputedStyle(e);
    if (!box.width || !box.height || style.visibility === 'hidden') continue;
    if (e.closest('details:not([open]) > :not(summary)')) continue;
    let clipped = false;
    for (let a = e.parentElement; a && a !== document.body; a = a.parentElement) {
      if (getComputedStyle(a).overflowX !== 'visible') { clipped = true; break; }
    }
    const kind = [e.tagName, e.className, e.parentElement.tagName, e.parentElement.className,
                  e.getAttribute('role'), clipped].join('|');
    if (kinds.has(kind)) continue;
    kinds.add(kind);
    e.dataset.focusCheck = String(picked.length);
    picked.push(kind);
  }
  return picked;
}"""
NO_TOOLTIPS = """() => { if (document.getElementById('no-tooltips')) return;
  const style = document.createElement('style'); style.id = 'no-tooltips';
  style.textContent = '.tooltip, .popover { display: none !important; }'; document.head.append(style); }"""
FOCUS_MARGIN = 8                      # px of the screenshot around the element


def invisible_focus(page, seen: set) -> list[str]:
    """Kinds of focusable element on the open page (not in ``seen``, which gains them) whose
    keyboard focus changes nothing on the screen."""
    page.evaluate(NO_TOOLTIPS)
    kinds = page.evaluate(FOCUSABLE, sorted(seen))
    seen.update(kinds)
    found = []
    viewport = page.viewport_size
    for index, kind in enumerate(kinds):
        element = page.locator(f'[data-focus-check="{index}"]')
        element.evaluate("(e) => { document.activeElement && document.activeElement.blur(); "
                         "e.scrollIntoView({block: 'center', inline: 'nearest'}); }")
        box = element.bounding_box()
        if box is None:
            continue
        x, y = max(0, box["x"] - FOCUS_MARGIN), max(0, box["y"] - FOCUS_MARGIN)
        clip = {"x": x, "y": y,
                "width": min(viewport["width"], box["x"] + box["width"] + FOCUS_MARGIN) - x,
                "height": min(viewport["height"], box["y"] + box["height"] + FOCUS_MARGIN) - y}
        if clip["width"] < 1 or clip["height"] < 1:
            continue
        before = page.screenshot(clip=clip, animations="disabled", caret="initial")
        page.keyboard.press("Shift")                     # the keyboard is what moves focus next
        element.evaluate("(e) => e.focus({focusVisible: true})")
        after = page.screenshot(clip=clip, animations="disabled", caret="initial")
        element.evaluate("(e) => e.blur()")
        if before == after:
            tag, classes = kind.split("|")[:2]
            found.append(f"no visible focus on <{tag.lower()} class='{classes}'>")
    return found


# the search page with a real query: wait for the results, then what they quote
SEARCH_DONE = """() => { const r = document.getElementById('search-results');
  return r && !r.querySelector('.search-pulse') && /found|did not match/i.test(r.textContent); }"""
SEARCH_RESULTS = """() => [...document.querySelectorAll('#search-results ul.search > li')].map((li) => ({
  page: (li.querySelector('a') || {}).pathname || '', snippet: (li.querySelector('.context') || {}).textContent || ''}))"""
# the header's buttons as their words run together in a page's text
HEADER_WORDS = ("Binder Colab", ".ipynb .md", "Download this page", "Launch interactive content")


def search_problems(page) -> list[str]:
    """What is wrong with the results of the search page: a page listed more than once, a snippet
    quoting the page's header or navigation."""
    results = page.evaluate(SEARCH_RESULTS)
    if not results:
        return ["the query found nothing"]
    pages = [r["page"] for r in results]
    found = [f"{p} is listed {pages.count(p)} times" for p in sorted(set(pages)) if pages.count(p) > 1]
    found += [f"{r['page']} quotes its header: {r['snippet'][:60]!r}" for r in results
              if any(word in r["snippet"] for word in HEADER_WORDS)]
    return found
# a formula is a Tab stop only when it scrolls sideways (a keyboard must reach it to scroll it)
MATH_TAB_STOPS = """() => [...document.querySelectorAll('mjx-container, div.math')].filter((m) =>
  m.hasAttribute('tabindex') && m.tabIndex >= 0
  && !(['auto', 'scroll'].includes(getComputedStyle(m).overflowX)
       && m.scrollWidth > m.clientWidth + 1)).length"""


# ---- self-check questions, answered by keyboard ---------------------------------------------
WIDGET_STATE = """() => JSON.parse((document.querySelector(
  'script[type="application/vnd.jupyter.widget-state+json"]') || {textContent: '{"state": {}}'}).textContent)"""
SELF_CHECK_TRAITS = ("number", "outcome", "kind", "prompt", "options", "answer", "tolerance", "unit",
                     "mistakes", "right", "low", "high", "explanation", "title")
VERDICT_WORDS = {"correct": "Correct.", "wrong": "Not quite.", "invalid": "No answer yet."}


def self_check_references(page) -> dict:
    """Each self-check question of the open page as its Python object, by title, from the state
    the page saved (what the browser draws it from)."""
    from attention_course.book.figures.selfcheck import SelfCheck

    states = page.evaluate(WIDGET_STATE)["state"].values()
    return {state["state"]["title"]: SelfCheck(**{k: state["state"][k] for k in SELF_CHECK_TRAITS})
            for state in states if state.get("state", {}).get("kind") in ("choice", "number")
            and "options" in state["state"]}


def plain(text: str) -> str:
    return " ".join(text.replace("`", "").split())


def self_check_problems(page) -> list[str]:
    """Answer every self-check question of the open page by keyboard: each option of a choice
    (picked with the arrow keys, checked with Enter on *Check*), and for a number the answer, each
    likely mistake, a number too low, one too high and a word. The feedback announced (the
    status region) must be the verdict and the reason the Python reference gives. A screen reader
    must find the question as a named group, its options and input by their labels, the Check
    button, the status, and the worked answer behind *Show the answer*."""
    references = self_check_references(page)
    roots = page.locator(".course-selfcheck")
    found = []
    if roots.count() != len(references):
        found.append(f"{roots.count()} questions drawn, {len(references)} saved")
    for index in range(roots.count()):
        root = roots.nth(index)
        title = root.locator(".course-fig-title").inner_text().strip()
        ref = references.get(title)
        if ref is None:
            found.append(f"{title}: no saved question")
            continue
        if page.get_by_role("group", name=title, exact=True).count() != 1:
            found.append(f"{title}: not a group named by its title")
        status, check = root.get_by_role("status"), root.get_by_role("button", name="Check")
        if status.count() != 1 or check.count() != 1:
            found.append(f"{title}: no status region or no Check button")
            continue

        def answered(response, expected_focus: str) -> None:
            focused = page.evaluate("() => document.activeElement.textContent.trim() || "
                                    "document.activeElement.getAttribute('type')")
            if focused != expected_focus:
                found.append(f"{title}: Check is not reached by keyboard ({focused!r})")
            page.keyboard.press("Enter")
            verdict, why = ref.judge(response)
            said = plain(status.inner_text())
            if said != plain(f"{VERDICT_WORDS[verdict]} {why}"):
                found.append(f"{title}, answer {response!r}: says {said[:70]!r}, not {verdict}: {why[:50]!r}")

        check.focus()
        answered(None if ref.kind == "choice" else "", "Check")
        if ref.kind == "choice":
            radios = root.get_by_role("radio")
            if radios.count() != len(ref.options):
                found.append(f"{title}: {radios.count()} options drawn, {len(ref.options)} saved")
                continue
            for i, option in enumerate(ref.options):
                label = f"({'abcdefghij'[i]}) {plain(option['text'])}"
                if root.get_by_role("radio", name=label, exact=True).count() != 1:
                    found.append(f"{title}: option {i} is not labelled with its text")
            radios.nth(0).focus()
            page.keyboard.press("Space")
            for i in range(len(ref.options)):
                if i:
                    page.keyboard.press("Shift+Tab")           # back to the chosen option
                    page.keyboard.press("ArrowDown")           # the next one
                page.keyboard.press("Tab")                     # on to Check
                answered(i, "Check")
        else:
            box = root.get_by_role("textbox", name="Your answer")
            if box.count() != 1:
                found.append(f"{title}: no answer box labelled 'Your answer'")
                continue
            spread = 10 * ref.tolerance + abs(ref.answer)
            for response in [f"{ref.answer:.6g}", *(f"{m['value']:.6g}" for m in ref.mistakes),
                             f"{ref.answer - spread - 1:.6g}", f"{ref.answer + spread + 1:.6g}",
                             "twelve"]:
                box.fill(response)
                box.focus()
                page.keyboard.press("Tab")
                answered(response, "Check")
        summary = root.locator("summary")
        summary.focus()
        page.keyboard.press("Enter")
        shown = plain(root.locator("details p").inner_text()) if root.locator("details[open]").count() else ""
        if shown != plain(ref.explanation):
            found.append(f"{title}: Show the answer gives {shown[:60]!r}")
    return found


def book_pages(built_book) -> list[str]:
    """Every built page, the search page with a real query."""
    pages = sorted(str(p.relative_to(built_book)) for p in built_book.rglob("*.html")
                   if not p.relative_to(built_book).parts[0].startswith("_"))
    return [SEARCH if page == "search.html" else page for page in pages]


SEARCH = "search.html?q=attention"


def rules(mode: str) -> dict:
    return ({"type": "tag", "values": TAGS} if mode == "light"
            else {"type": "rule", "values": COLOUR_RULES})


def axe_findings(page, mode: str, code_seen: set) -> tuple[list[str], int]:
    """axe's violations on the open page (see RUN_AXE) and how many code blocks the colour rules
    read; the kinds of code token read for the first time are added to ``code_seen``."""
    found, added, blocks_read = page.evaluate(RUN_AXE,
                                              [rules(mode), sorted(code_seen), COLOUR_RULES])
    code_seen.update(added)
    return found, blocks_read


def findings(page, mode: str = "light", code_seen: set | None = None) -> dict[str, list]:
    """What each check finds on the open page, in the mode it is shown in, as the page drew.
    ``code_seen``: the kinds of code token axe's colour rules already read at this width and mode
    (on earlier pages); by default none."""
    width = page.viewport_size["width"]
    axe_found, _ = axe_findings(page, mode, set() if code_seen is None else code_seen)
    return {"axe": axe_found, "svg text": page.evaluate(SVG_TEXT_CONTRAST),
            "svg text size": page.evaluate(SVG_TEXT_SIZE, MIN_TEXT_PX[width]),
            "figure text": page.evaluate(f"() => [...document.querySelectorAll('.course-fig')]"
                                         f".flatMap({FIGURE_TEXT})"),
            "sideways scroll px": [n for n in [page.evaluate(OVERFLOW)] if n > 0 and width <= 320],
            "figure cut off": page.evaluate(FIGURE_CUT_OFF),
            "formula tab stops": [n for n in [page.evaluate(MATH_TAB_STOPS)] if n]}


def figure_states(page, mode: str = "light") -> list[str]:
    """What the checks find in any state of any figure on the page (see SWEEP)."""
    if not page.locator(".course-fig").count():
        return []
    width = page.viewport_size["width"]
    axe_rules = rules(mode) if (width, mode) in AXE_EVERY_STATE else None
    return page.evaluate(SWEEP, [axe_rules, STATES, FIGURE_TEXT, SVG_TEXT_CONTRAST,
                                 SVG_TEXT_SIZE, MIN_TEXT_PX[width], FIGURE_CUT_OFF, MOST_CHANGES])


# where each of the costlier checks runs: the figures' states are swept at the desktop width in
# light mode (with axe) and at the phone width in dark mode (a figure is the same light card in
# both modes; text size and cut-off edges depend on the width); focus is checked at the same two
SWEEP_AT = {(1280, "light"), (320, "dark")}
FOCUS_AT = {(1280, "light"), (320, "dark")}
ONCE_AT = (1280, "light")                     # inert controls, self-checks, search results


def read_page(visit, url, focus_seen: dict | None = None, code_seen: dict | None = None) -> dict:
    """Findings for one page: {"<width> px, <mode>": {check: [finding, ...]}}, the empty ones left
    out. The page is loaded once, at the desktop width (where it is also checked as it renders,
    ``Visit.rendering_problems``), then narrowed to each other width, as a browser window is.
    ``focus_seen`` and ``code_seen`` hold, per width and mode, the kinds of element whose focus,
    and the kinds of code token whose colours, were checked on an earlier page."""
    focus_seen = focus_seen if focus_seen is not None else {}
    code_seen = code_seen if code_seen is not None else {}
    v = visit(url, None, width=WIDTHS[0])
    if SEARCH in url:
        v.page.wait_for_function(SEARCH_DONE, timeout=30_000)
    found = {"as loaded": {"rendering": v.rendering_problems()}}
    v.page.add_script_tag(path=str(AXE))
    for width in WIDTHS:
        if width != WIDTHS[0]:
            v.page.set_viewport_size({"width": width, "height": 1600})
            try:
                v.page.wait_for_function(TAB_STOPS_SET, timeout=RESIZE_SETTLES_MS)
            except PlaywrightTimeout:
                pass
        for mode in MODES:
            v.page.evaluate(SET_MODE, mode)
            checks = findings(v.page, mode, code_seen.setdefault((width, mode), set()))
            if (width, mode) in SWEEP_AT:
                checks["figure states"] = figure_states(v.page, mode)
            if (width, mode) == ONCE_AT:
                checks["inert controls"] = v.page.evaluate(INERT_CONTROLS)
                checks["self-checks"] = self_check_problems(v.page)
                if SEARCH in url:
                    checks["search results"] = search_problems(v.page)
            if (width, mode) in FOCUS_AT:
                checks["focus not visible"] = invisible_focus(v.page, focus_seen.setdefault((width, mode), set()))
            found[f"{width} px, {mode}"] = checks
    return {where: {check: items for check, items in checks.items() if items}
            for where, checks in found.items() if any(checks.values())}


def test_every_page_meets_wcag_21_aa(visit, site, built_book):
    pages = book_pages(built_book)
    assert len(pages) >= 25 and SEARCH in pages, pages
    seen: dict = {}
    code_seen: dict = {}
    failures = {f"{page} ({where})": items for page in pages
                for where, items in read_page(visit, f"{site}/{page}", seen, code_seen).items()}
    assert failures == {}, "\n".join(f"{k}: {v}" for k, v in failures.items())
    assert sum(len(kinds) for kinds in seen.values()) >= 20, "the focus check saw few elements"
    assert all(len(code_seen.get((w, m), ())) >= 5 for w in WIDTHS for m in MODES), \
        f"axe's colour rules read few kinds of code token: {code_seen}"


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
    "figure cut off": """() => { const d = document.createElement('div'); d.style.width = '2000px';
                                 d.textContent = 'wide'; document.querySelector('.course-fig').append(d); }""",
}


@pytest.mark.parametrize("check", list(PLANT))
def test_each_check_fails_on_a_planted_fault(visit, site, check):
    v = visit(f"{site}/book/chapter8/bottleneck.html", None, width=320)
    v.page.add_script_tag(path=str(AXE))
    assert not findings(v.page)[check], "the page fails before the fault is planted"
    v.page.evaluate(PLANT[check])
    assert findings(v.page)[check], f"{check}: the planted fault was not found"


def test_code_is_read_for_colour_again_only_when_it_holds_a_new_kind_of_token(visit, site):
    """Once each kind of code token on a page has been read, axe's colour rules skip its code;
    a token given a colour of its own (a pale one) is a new kind: its block is read again, and
    the fault found."""
    v = visit(f"{site}/book/chapter8/bottleneck.html", None, width=1280)
    v.page.add_script_tag(path=str(AXE))
    seen: set = set()
    found, blocks_read = axe_findings(v.page, "light", seen)
    assert found == [] and blocks_read >= 1 and len(seen) >= 3, (found, blocks_read, seen)
    assert axe_findings(v.page, "light", seen) == ([], 0)
    v.page.evaluate("""() => [...document.querySelectorAll('.highlight pre span')]
                         .find((t) => t.textContent.trim()).style.color = '#bbbbbb'""")
    found, blocks_read = axe_findings(v.page, "light", seen)
    assert blocks_read == 1 and any(f.startswith("color-contrast") for f in found), found


# faults that show only in some state of a figure's controls, planted in Figure 8.5 (the word
# slider, the "relative" checkbox); the sweep must find each, the page as drawn shows none
PLANT_IN_A_STATE = {
    # the slider's read-out goes wrong past its first value, as an index would be announced
    "announced value": """() => { const s = document.querySelector('.caption-maps-fig [data-control=word]');
        s.addEventListener('input', () => queueMicrotask(() => s.setAttribute('aria-valuetext', s.value))); }""",
    # unticking the checkbox turns the read-out's text pale
    "contrast": """() => { const c = document.querySelector('.caption-maps-fig [data-control=relative]');
        c.addEventListener('change', () => document.querySelectorAll('.caption-maps-fig svg text, '
          + '.caption-maps-fig p').forEach((e) => { e.style.color = c.checked ? '' : '#bbb'; })); }""",
    # a later word's picture drawn cell by cell into the page
    "redrawn shape by shape": """() => { const s = document.querySelector('.caption-maps-fig [data-control=word]');
        s.addEventListener('input', () => queueMicrotask(() => {
          const svg = document.querySelector('.caption-maps-fig svg');
          for (const cell of [...svg.children]) svg.append(cell); })); }""",
    # a later word loses the picture's text equivalent
    "text equivalent": """() => { const s = document.querySelector('.caption-maps-fig [data-control=word]');
        s.addEventListener('input', () => queueMicrotask(() => document.querySelector(
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


# ---- the checks added with the self-checks and the focus check fail on planted faults --------

def test_the_description_check_finds_a_figure_described_without_its_numbers(visit, site):
    v = visit(f"{site}/book/chapter8/self-attention.html", None, width=1280)
    v.page.add_script_tag(path=str(AXE))
    assert not findings(v.page)["figure text"]
    v.page.evaluate("() => document.querySelector('.routes-fig .course-sr-only').textContent = 'routes'")
    assert any("leaves out steps-" in f for f in findings(v.page)["figure text"])


def test_the_inert_control_check_finds_a_control_that_does_nothing(visit, site):
    v = visit(f"{site}/book/chapter8/index.html", None, width=1280)
    assert v.page.evaluate(INERT_CONTROLS) == []
    v.page.evaluate("""() => { const s = document.createElement('input'); s.type = 'range';
      s.dataset.control = 'nothing'; document.querySelector('.context-width-fig .controls').append(s); }""")
    assert any("nothing changes nothing" in f for f in v.page.evaluate(INERT_CONTROLS))


def test_the_focus_check_finds_an_invisible_focus(visit, site):
    """The header's buttons, as the theme drew them (no outline), are found."""
    v = visit(f"{site}/book/chapter8/bottleneck.html", None, width=1280)
    assert invisible_focus(v.page, set()) == []
    v.page.add_style_tag(content="html body .btn:focus-visible, html body a:focus-visible { "
                                 "outline: 0 !important; box-shadow: none !important; }")
    missed = invisible_focus(v.page, set())
    assert any("<button class='sidebar-toggle primary-toggle" in f for f in missed), missed


def test_the_self_check_sweep_finds_a_wrong_answer_and_a_check_out_of_reach(visit, site):
    v = visit(f"{site}/book/chapter8/bottleneck.html", None, width=1280)
    assert self_check_problems(v.page) == []
    plants = {  # one option's reason garbled; the Check button out of the Tab order
        "feedback": """() => { const q = document.querySelectorAll('.course-selfcheck')[1];
            q.querySelector('.selfcheck-check').addEventListener('click', () => {
              q.querySelector('.selfcheck-feedback').append(' (planted)'); }); }""",
        "keyboard": """() => document.querySelector('.course-selfcheck .selfcheck-check')
                              .setAttribute('tabindex', '-1')"""}
    for fault, plant in plants.items():
        v.page.reload()                        # the questions unanswered again
        v.page.evaluate(DRAWN)
        v.page.evaluate(plant)
        found = self_check_problems(v.page)
        assert found, f"{fault}: the planted fault was not found"
        assert ("(planted)" in " ".join(found)) == (fault == "feedback"), found


def test_the_search_check_finds_repeated_pages_and_quoted_headers(visit, site):
    v = visit(f"{site}/{SEARCH}", None, width=1280)
    v.page.wait_for_function(SEARCH_DONE, timeout=30_000)
    assert search_problems(v.page) == []
    v.page.evaluate("""() => { const first = document.querySelector('#search-results ul.search > li');
      first.after(first.cloneNode(true));
      first.querySelector('.context').textContent = 'Binder Colab .ipynb .md .pdf'; }""")
    found = search_problems(v.page)
    assert any("listed 2 times" in f for f in found) and any("quotes its header" in f for f in found)
