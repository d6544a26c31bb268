"""The book as one PDF, printed by Chromium from the built pages.

``python -m attention_course_instructor.book.pdf`` writes ``_build/html/attention-and-transformers.pdf``,
which the book's front page and accessibility statement offer for download; every build of the
book runs it last (:func:`attention_course_instructor.book.build.build_book`, so the student
edition prints its own pages). Steps:

1. read the pages of the table of contents in its order from the built HTML (each page's
   ``<article>``), and join them into one document, ``_print.html`` beside them: a title page,
   a contents list, then each page starting on a new sheet;
2. make every link to another page of the book a link inside the document (each page's ids are
   prefixed with the page's name, so no two pages' ids clash), and every other relative link a
   link to the published site (``html_baseurl``);
3. put each interactive figure in its static form: the picture (SVG) and numbered caption its
   cell saved beside the widget (:meth:`attention_course.book.figures.base.CourseFigure.static_html`),
   read from the execution cache the pages were built from; each self-check question in its
   printed form, its answer moved to a section at the end of its chapter; the words meant for the
   screen (``online-only``) replaced by those meant for print (``print-only``);
4. prepare code for paper: a block whose lines are a little too long is set smaller, one whose
   lines are much too long wraps them with a mark (``↪``) at the start of each continued line;
5. typeset the formulas with the book's own MathJax, and print with Debian's Chromium (through
   Playwright; nothing downloaded): A4, a book typeface (Charis SIL, Debian's fonts-sil-charis),
   selectable text, links that work. The book is printed twice: the first printing says on which
   sheet each page of the book starts, and the contents of the second give those page numbers;
6. finish with pypdf: running heads (the chapter on the left-hand sheet, the section on the right)
   and page numbers drawn onto every sheet after the first (from a second small printing, laid
   over each sheet), and the outline's titles spelled as the headings are (Chromium joins the
   words of a heading that wraps, and leaves its formulas out).
"""
from __future__ import annotations

import argparse
import html as html_lib
import json
import logging
import os
import posixpath
import re
import sys
import time
from pathlib import Path

import yaml
from bs4 import BeautifulSoup

from attention_course import __version__
from attention_course_instructor.book import build

PDF_NAME = "attention-and-transformers.pdf"
# Chromium's PDFs declare a trailer size pypdf finds too small, and pypdf says so on every read
logging.getLogger("pypdf").setLevel(logging.ERROR)
PRINT_PAGE = "_print.html"                    # beside the pages, so their relative URLs hold
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
TYPESET_TIMEOUT_MS = 120_000
# taken out of each page: permalinks, buttons, scripts, the previous/next links
DROP = [".headerlink", "button", "script", ".prev-next-area", ".copybtn", "nav", ".online-only"]
BOOK_FONT = "Charis SIL"            # Debian's fonts-sil-charis (make browser-deps installs it)
MONO_FONT = "DejaVu Sans Mono"
CODE_PT = 8.3                       # code's type size
CODE_COLUMNS = 86                   # characters of CODE_PT mono across a code box, with room to spare
SMALLEST_CODE_PT = 6.8              # a block is set no smaller than this; past it, lines wrap
CONTINUED = "↪ "                    # the mark that starts a wrapped code line's continuation
KEEP_WHOLE_LINES = 24               # a code block up to this many lines is not split across sheets
PAGE_DIGITS = "000"                 # the first printing's stand-in for a page number

PRINT_CSS = f"""
@page {{ size: A4; margin: 20mm 18mm 20mm; }}
html {{ font: 10.5pt/1.45 "{BOOK_FONT}", serif; color: #000; background: #fff;
        font-kerning: normal; hyphens: auto; }}
body {{ margin: 0; }}
p, li, dd {{ orphans: 3; widows: 3; text-align: justify; }}
h1 {{ font-size: 21pt; margin: 0 0 12pt; font-weight: bold; }}
h2 {{ font-size: 14pt; margin: 16pt 0 6pt; }}
h3 {{ font-size: 12pt; margin: 12pt 0 4pt; }}
h1, h2, h3, h4 {{ break-after: avoid; line-height: 1.25; text-align: left; hyphens: manual; }}
h2, h3, h4 {{ break-inside: avoid; }}
section.print-page {{ break-before: page; }}
a {{ color: #0b4f8a; text-decoration: none; }}
pre, code, kbd {{ font-family: "{MONO_FONT}", monospace; font-size: {CODE_PT}pt; hyphens: none; }}
pre {{ white-space: pre; background: #f6f6f6; padding: 6pt; border-left: 2pt solid #ccc;
       orphans: 4; widows: 4; text-align: left; overflow: hidden; }}
pre.keep-whole {{ break-inside: avoid; }}
pre .code-continued {{ color: #767676; }}
img {{ max-width: 100%; height: auto; break-inside: avoid; }}
figure, .print-figure, .course-selfcheck-static {{ break-inside: avoid; margin: 8pt 0; }}
figcaption, .print-figure-caption {{ font-size: 9.5pt; text-align: left; }}
table {{ border-collapse: collapse; font-size: 9pt; margin: 6pt 0; }}
tr {{ break-inside: avoid; }}
td, th {{ border: 0.5pt solid #bbb; padding: 2pt 5pt; text-align: left; }}
.cell_output pre {{ background: #fff; border-left-color: #888; }}
.title-page {{ text-align: center; padding-top: 60mm; }}
.title-page h1 {{ font-size: 30pt; }}
.contents ol {{ list-style: none; padding: 0; margin: 0; }}
.contents .part {{ font-weight: bold; margin: 10pt 0 3pt; break-after: avoid; }}
.contents li {{ display: flex; align-items: baseline; line-height: 1.6; }}
.contents li a {{ color: #000; }}
.contents li .leader {{ flex: 1; border-bottom: 0.6pt dotted #777; margin: 0 4pt; }}
.contents li .page-number {{ font-variant-numeric: tabular-nums; min-width: 2.2em;
                             text-align: right; }}
.contents li.section {{ padding-left: 1.5em; }}
.course-selfcheck-static {{ border: 0.6pt solid #999; border-radius: 3pt; padding: 4pt 8pt; }}
.course-selfcheck-static .selfcheck-outcome {{ font-size: 9pt; font-style: italic; }}
.course-selfcheck-static ol {{ margin: 2pt 0; }}
.self-check-answers .selfcheck-answer {{ break-inside: avoid; margin-bottom: 8pt; }}
.self-check-answers ul {{ margin: 2pt 0 0; }}
.print-only {{ display: block; }}
.admonition {{ border-left: 2pt solid #888; padding: 2pt 8pt; margin: 8pt 0; break-inside: avoid; }}
mjx-container[display="true"] {{ overflow: visible; }}
"""


def page_order(toc: dict) -> list[str]:
    """The built pages of a table of contents, in reading order (``book/intro.html``, ...)."""
    return [page for page, _, _ in book_structure(toc)]


def book_structure(toc: dict) -> list[tuple[str, str, str]]:
    """Each built page of a table of contents in reading order, with the caption of its part
    ("Chapter 8", "Labs"; "" for the front page) and the page that opens its chapter (a chapter's
    sections name their chapter's page; a page on its own names itself)."""
    found = [(f"{toc['root']}.html", "", f"{toc['root']}.html")]

    def visit(entries, caption, chapter=None):
        for entry in entries:
            if "file" in entry:
                page = f"{entry['file']}.html"
                found.append((page, caption, chapter or page))
                visit(entry.get("sections", []), caption, chapter or page)

    for part in toc.get("parts", []):
        visit(part.get("chapters", []), part.get("caption", ""))
    visit(toc.get("chapters", []), "")
    return found


def anchor(page: str, fragment: str = "") -> str:
    """The id in the joined document of ``page`` (``book/chapter8/index.html``), or of one of its
    own ids."""
    name = re.sub(r"[^A-Za-z0-9]+", "-", page.removesuffix(".html")).strip("-")
    return f"page-{name}" + (f"--{fragment}" if fragment else "")


def answers_anchor(chapter: str) -> str:
    """The id of the section that answers the self-checks of Chapter ``chapter`` ("8")."""
    return f"self-check-answers-{chapter}"


def static_figures(cache_dir: Path = build.CACHE) -> dict[str, str]:
    """Each interactive figure's static form, by widget model id: the HTML its cell saved beside
    the widget, from every notebook in the execution cache."""
    from jupyter_cache import get_cache

    cache, found = get_cache(str(cache_dir)), {}
    for record in cache.list_cache_records():
        for cell in cache.get_cache_bundle(record.pk).nb.cells:
            for output in cell.get("outputs", []):
                data = output.get("data", {})
                if WIDGET_VIEW in data and "text/html" in data:
                    found[data[WIDGET_VIEW]["model_id"]] = "".join(data["text/html"])
    return found


def static_figure(soup, fallback_html: str, answers: list | None = None):
    """An interactive figure's printed form: its picture with its numbered caption (the title the
    figure carries, with or without a picture). A self-check question is printed with its
    options, and its answer appended to ``answers`` (printed at the end of its chapter)."""
    fallback = BeautifulSoup(fallback_html, "html.parser")
    question = fallback.select_one(".course-selfcheck-static")
    if question is not None:
        answer = question.select_one(".selfcheck-answer")
        if answer is not None:
            answer.extract()
            del answer["hidden"]
            number = answer.get("data-number", "")
            answer["id"] = f"answer-{number}"
            if answers is not None:
                answers.append(answer)
            title = question.select_one(".selfcheck-title strong")
            if title is not None:
                link = soup.new_tag("a", href=f"#answer-{number}")
                link.string = title.get_text()
                title.string = ""
                title.append(link)
        return question
    image = fallback.find("img")
    caption_source = fallback.select_one(".course-fig-caption")
    title = (caption_source.get_text(" ", strip=True) if caption_source is not None
             else image.get("alt", "") if image is not None else "")
    figure = soup.new_tag("div", attrs={"class": "print-figure", "role": "figure"})
    if image is not None:
        image["alt"] = title
        figure.append(image)
    caption = soup.new_tag("p", attrs={"class": "print-figure-caption"})
    caption.string = f"{title} (Interactive in the online book.)" if title else \
        "An interactive figure: see the online book."
    figure.append(caption)
    return figure


def _local(href: str) -> bool:
    return not re.match(r"^[a-z][a-z0-9+.-]*:", href) and not href.startswith("//")


# ---- formulas as plain text (the outline cannot hold typeset math) --------------------------
TEX_NAMES = {"alpha": "α", "beta": "β", "gamma": "γ", "delta": "δ", "epsilon": "ε", "theta": "θ",
             "lambda": "λ", "mu": "μ", "pi": "π", "sigma": "σ", "tau": "τ", "phi": "φ",
             "omega": "ω", "Omega": "Ω", "top": "ᵀ", "times": "×", "cdot": "·", "le": "≤",
             "leq": "≤", "ge": "≥", "to": "→", "approx": "≈", "infty": "∞", "ldots": "…",
             "dots": "…"}


def plain_tex(tex: str) -> str:
    """A formula's TeX as plain text: ``\\sqrt{d_k}`` -> ``√d_k``, ``\\frac{a}{b}`` -> ``a/b``."""
    text = re.sub(r"^\\[(\[]|\\[)\]]$", "", tex.strip())
    for _ in range(3):
        text = re.sub(r"\\(?:mathrm|mathbf|mathit|text|operatorname)\s*\{([^{}]*)\}", r"\1", text)
        text = re.sub(r"\\sqrt\s*\{([^{}]*)\}", lambda m: "√" + (m[1] if len(m[1]) <= 3 or "_" in m[1]
                                                                  else f"({m[1]})"), text)
        text = re.sub(r"\\[dt]?frac\s*\{([^{}]*)\}\s*\{([^{}]*)\}", r"\1/\2", text)
    text = re.sub(r"\\([A-Za-z]+)", lambda m: TEX_NAMES.get(m[1], m[1]), text)
    return re.sub(r"\s+", " ", text.replace("{", "").replace("}", "")).strip()


def heading_text(heading) -> str:
    """A heading's words as a reader reads them, its formulas as plain text."""
    copy = BeautifulSoup(str(heading), "html.parser")
    for element in copy.select(".headerlink"):
        element.decompose()
    for formula in copy.select(".math, mjx-container"):
        formula.replace_with(f" {plain_tex(formula.get_text())} ")
    text = re.sub(r"\s+", " ", copy.get_text(" ")).strip()
    return re.sub(r"\s+([?.,:;!)])", r"\1", re.sub(r"\(\s+", "(", text))


# ---- code on paper --------------------------------------------------------------------------
def prepare_code(soup) -> None:
    """Fit every code block to the page: short ones are kept whole on one sheet; a block whose
    longest line is a little too long is set smaller (down to SMALLEST_CODE_PT); past that, long
    lines wrap, each continuation starting with the mark CONTINUED."""
    from bs4 import NavigableString

    for pre in soup.find_all("pre"):
        lines = pre.get_text().rstrip("\n").split("\n")
        if len(lines) <= KEEP_WHOLE_LINES:
            pre["class"] = [*pre.get("class", []), "keep-whole"]
        longest = max((len(line) for line in lines), default=0)
        if longest <= CODE_COLUMNS:
            continue
        size = max(SMALLEST_CODE_PT, CODE_PT * CODE_COLUMNS / longest)
        pre["style"] = f"font-size: {size:.2f}pt"
        columns = int(CODE_COLUMNS * CODE_PT / size)
        if longest <= columns:
            continue
        column = 0
        for text in list(pre.find_all(string=True)):
            pieces, run = [], []
            for character in str(text):
                if character == "\n":
                    column = -1
                elif column >= columns:
                    pieces.append(NavigableString("".join(run)))
                    mark = soup.new_tag("span", attrs={"class": "code-continued"})
                    mark.string = "\n" + CONTINUED
                    pieces.append(mark)
                    run, column = [], len(CONTINUED)
                run.append(character)
                column += 1
            pieces.append(NavigableString("".join(run)))
            text.replace_with(*[piece for piece in pieces if str(piece)])


def join_pages(html_root: Path, pages: list[str], figures: dict[str, str], site: str,
               page_numbers: dict[str, int] | None = None, toc: dict | None = None) -> str:
    """The joined document's HTML. ``page_numbers`` (an anchor's sheet, counted from 1) fills in
    the contents; without it the contents hold stand-ins of the same width."""
    soup = BeautifulSoup("<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'></head>"
                         "<body></body></html>", "html.parser")
    known = set(pages)
    structure = {page: (caption, chapter) for page, caption, chapter in
                 (book_structure(toc) if toc is not None else [(p, "", p) for p in pages])}
    first = BeautifulSoup((html_root / pages[0]).read_text(), "html.parser")
    title = soup.new_tag("title")
    title.string = "Attention and Transformers"
    soup.head.append(title)
    style = soup.new_tag("style")
    style.string = PRINT_CSS
    soup.head.append(style)
    soup.head.append(soup.new_tag("link", rel="stylesheet", href="_static/pygments.css"))  # code colours
    config = next((s for s in first.find_all("script") if s.string and "window.MathJax" in s.string),
                  None)
    mathjax = soup.new_tag("script")
    mathjax.string = config.string if config is not None else "window.MathJax = {};"
    soup.head.append(mathjax)
    soup.head.append(soup.new_tag("script", src="_static/vendor/mathjax/tex-chtml.js"))

    cover = BeautifulSoup(
        f"<section class='title-page'><h1>Attention and Transformers</h1>"
        f"<p>The course book, version {html_lib.escape(__version__)}</p>"
        f"<p>The Attention and Transformers course team</p>"
        f"<p>Printed from the online book: <a href='{html_lib.escape(site)}'>"
        f"{html_lib.escape(site)}</a>. The interactive figures appear here in their static form, "
        f"and the answers to each chapter's self-check questions follow its exercises."
        f"</p></section>", "html.parser")
    soup.body.append(cover)
    contents = soup.new_tag("section", attrs={"class": "contents print-page"})
    heading = soup.new_tag("h1")
    heading.string = "Contents"
    contents.append(heading)
    listing = soup.new_tag("ol")
    contents.append(listing)
    soup.body.append(contents)

    def entry(target: str, name: str, section: bool):
        item = soup.new_tag("li", attrs={"class": "section" if section else "page"})
        link = soup.new_tag("a", href=f"#{target}")
        link.string = name
        number = soup.new_tag("span", attrs={"class": "page-number"})
        number.string = str(page_numbers[target]) if page_numbers and target in page_numbers \
            else PAGE_DIGITS
        item.extend([link, soup.new_tag("span", attrs={"class": "leader"}), number])
        listing.append(item)

    answers: dict[str, list] = {}
    last_caption = None
    for i, page in enumerate(pages):
        caption, chapter = structure.get(page, ("", page))
        if caption and caption != last_caption:
            part = soup.new_tag("li", attrs={"class": "part"})
            part.string = caption
            listing.append(part)
        last_caption = caption
        found: list = []
        section, name = _section(soup, html_root, page, known, figures, site, found)
        for answer in found:
            answers.setdefault(answer["data-number"].split(".")[0], []).append(answer)
        entry(anchor(page), name, section=chapter != page)
        soup.body.append(section)
        next_chapter = structure.get(pages[i + 1], ("", ""))[1] if i + 1 < len(pages) else None
        for number in [n for n in answers if next_chapter != chapter]:
            block = _answers_section(soup, number, answers.pop(number))
            entry(answers_anchor(number), block.h1.get_text(), section=True)
            soup.body.append(block)
    prepare_code(soup)
    return str(soup)


def _answers_section(soup, chapter: str, answers: list):
    """The answers to a chapter's self-check questions, each with why every option is right or
    wrong, as a page of the printed book."""
    section = soup.new_tag("section", attrs={"class": "print-page self-check-answers",
                                             "id": answers_anchor(chapter)})
    heading = soup.new_tag("h1")
    heading.string = f"Answers to the self-checks of Chapter {chapter}"
    section.append(heading)
    note = soup.new_tag("p")
    note.string = ("Each answer gives the right option or number, then the reasoning; for a "
                   "choice, why each option is right or wrong.")
    section.append(note)
    for answer in answers:
        section.append(answer)
    return section


def _section(soup, html_root: Path, page: str, known: set[str], figures: dict[str, str], site: str,
             answers: list | None = None):
    source = BeautifulSoup((html_root / page).read_text(), "html.parser")
    article = source.select_one("article.bd-article") or source.find("article")
    if article is None:
        raise ValueError(f"{page}: no <article> in the built page")
    for view in article.select(f'script[type="{WIDGET_VIEW}"]'):
        model = json.loads(view.string or "{}").get("model_id", "")
        if model not in figures:
            raise KeyError(f"{page}: figure {model} has no static form in the execution cache; "
                           "rebuild the book")
        view.replace_with(static_figure(source, figures[model], answers))
    for selector in DROP:
        for element in article.select(selector):
            element.decompose()
    for element in article.select(".print-only"):
        element["class"] = [c for c in element.get("class", []) if c != "print-only"]
    for element in article.find_all(id=True):
        element["id"] = anchor(page, element["id"])
    here = posixpath.dirname(page)
    for link in article.find_all("a", href=True):
        href = link["href"]
        if href.startswith("#"):
            link["href"] = f"#{anchor(page, href[1:])}"
        elif _local(href):
            path, _, fragment = href.partition("#")
            target = posixpath.normpath(posixpath.join(here, path)) if path else page
            link["href"] = (f"#{anchor(target, fragment)}" if target in known
                            else site.rstrip("/") + "/" + target + (f"#{fragment}" if fragment else ""))
    for image in article.find_all("img", src=True):
        if _local(image["src"]):
            image["src"] = posixpath.normpath(posixpath.join(here, image["src"]))
    section = soup.new_tag("section", attrs={"class": "print-page", "id": anchor(page)})
    for child in list(article.children):
        section.append(child)
    first_heading = section.find("h1")
    name = heading_text(first_heading) if first_heading else page
    return section, name


def print_pdf(document: Path, pdf: Path) -> Path:
    """Print ``document`` (a page beside the built pages) to ``pdf`` with Debian's Chromium."""
    import shutil

    from playwright.sync_api import sync_playwright

    chromium = shutil.which("chromium")
    if chromium is None:
        sys.exit("chromium was not found: install it (e.g. `apt-get install chromium`) and rerun.")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--disable-gpu"])
        try:
            page = browser.new_page()
            page.goto(document.as_uri(), wait_until="load")
            page.wait_for_function("() => !document.querySelector('script[src*=mathjax]') || "
                                   "(window.MathJax && MathJax.startup && MathJax.startup.promise)",
                                   timeout=TYPESET_TIMEOUT_MS)
            page.evaluate("() => window.MathJax && MathJax.startup ? MathJax.startup.promise : null")
            page.evaluate("() => document.fonts.ready.then(() => true)")
            page.emulate_media(media="print")
            page.pdf(path=str(pdf), format="A4", print_background=True, tagged=True, outline=True,
                     prefer_css_page_size=True)
        finally:
            browser.close()
    return pdf


def sheet_numbers(pdf: Path) -> dict[str, int]:
    """On which sheet (counted from 1) each named destination of a printed PDF lies."""
    from pypdf import PdfReader

    reader = PdfReader(pdf)
    return {name.lstrip("/"): reader.get_destination_page_number(dest) + 1
            for name, dest in reader.named_destinations.items()}


def running_heads(pages: list[str], toc: dict, sheets: dict[str, int], html_root: Path,
                  count: int) -> list[tuple[str, str]]:
    """The running head of every sheet, (left-hand, right-hand) text: on a left-hand (even) sheet
    the chapter or part, on a right-hand (odd) one the page of the book. None on the title page,
    the contents, and the first sheet of each page of the book."""
    structure = {page: (caption, chapter) for page, caption, chapter in book_structure(toc)}
    titles = {}
    for page in pages:
        heading = BeautifulSoup((html_root / page).read_text(), "html.parser").select_one("article h1")
        titles[page] = heading_text(heading) if heading is not None else page
    starts = sorted((sheets[anchor(page)], page) for page in pages if anchor(page) in sheets)
    answer_starts = sorted((sheet, name) for name, sheet in sheets.items()
                           if name.startswith("self-check-answers-"))
    heads = [("", "")] * (count + 1)
    for number in range(1, count + 1):
        current = [page for sheet, page in starts if sheet <= number]
        if not current or number in {sheet for sheet, _ in starts}:
            continue
        page = current[-1]
        caption, chapter = structure.get(page, ("", page))
        right = titles[page]
        answers = [name for sheet, name in answer_starts if sheet <= number and sheet > sheets[anchor(page)]]
        if answers:
            if number in {sheet for sheet, _ in answer_starts}:
                continue
            right = f"Answers to the self-checks of Chapter {answers[-1].rsplit('-', 1)[1]}"
        left = titles.get(chapter, caption) if chapter != page else (caption or right)
        heads[number] = (left, right)
    return heads[1:]


OVERLAY_CSS = f"""
@page {{ size: A4; margin: 0; }}
body {{ margin: 0; font: 9pt/1.2 "{BOOK_FONT}", serif; color: #333; }}
.sheet {{ position: relative; height: 296.8mm; overflow: hidden; break-after: page; }}
.head {{ position: absolute; top: 10mm; left: 18mm; right: 18mm; padding-bottom: 1.2mm;
         border-bottom: 0.4pt solid #999; font-style: italic; white-space: nowrap;
         overflow: hidden; text-overflow: ellipsis; }}
.head.left {{ text-align: left; }}
.head.right {{ text-align: right; }}
.folio {{ position: absolute; bottom: 10mm; left: 18mm; right: 18mm; }}
.folio.left {{ text-align: left; }}
.folio.right {{ text-align: right; }}
"""


def overlay_document(heads: list[tuple[str, str]]) -> str:
    """One sheet per sheet of the book: its running head and its page number, at the outer edge
    (left on even sheets, right on odd ones). The title page has neither."""
    sheets = []
    for number, (left, right) in enumerate(heads, start=1):
        if number == 1:
            sheets.append("<div class='sheet'></div>")
            continue
        side = "left" if number % 2 == 0 else "right"
        text = left if side == "left" else right
        head = f"<div class='head {side}'>{html_lib.escape(text)}</div>" if text else ""
        sheets.append(f"<div class='sheet'>{head}<div class='folio {side}'>{number}</div></div>")
    return (f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><style>{OVERLAY_CSS}"
            f"</style></head><body>{''.join(sheets)}</body></html>")


def outline_titles(document_html: str) -> list[str]:
    """The text of every heading of the joined document, in order: what the outline should say."""
    soup = BeautifulSoup(document_html, "html.parser")
    return [heading_text(h) for h in soup.find_all(re.compile(r"^h[1-6]$"))]


def _squeezed(text: str) -> str:
    return re.sub(r"\s+", "", text)


ALIKE = 30          # characters, spaces aside, that an outline entry and its heading share at least


def begins_alike(shown: str, heading: str) -> bool:
    """Whether Chromium's outline entry ``shown`` is the heading ``heading`` (both squeezed, the
    heading's formulas taken out): one begins the other, or they share their first ``ALIKE``
    characters. Chromium leaves a heading's formulas out and joins the lines of one that wraps;
    a wrapped heading at the top of a sheet has come out with its first line twice ("... graded
    byTask 7: ... graded byhand)")."""
    common = len(os.path.commonprefix([shown, heading]))
    return bool(shown) and common >= max(1, min(len(shown) - 1, len(heading), ALIKE))


def finish(printed: Path, overlay: Path, pdf: Path, titles: list[str]) -> Path:
    """The printed book with the overlay's running heads and page numbers drawn onto its sheets,
    and its outline's titles set to the headings' own text (``titles``, in document order): each
    outline entry is matched to the next heading whose words, spaces and formulas aside, begin
    the same way."""
    from pypdf import PdfReader, PdfWriter
    from pypdf.generic import NameObject, TextStringObject

    writer = PdfWriter(clone_from=PdfReader(printed))
    marks = PdfReader(overlay)
    if len(marks.pages) < len(writer.pages):
        raise RuntimeError(f"the overlay has {len(marks.pages)} sheets for {len(writer.pages)}")
    for number, sheet in enumerate(writer.pages):
        if number:
            sheet.merge_page(marks.pages[number])
    root = writer.root_object.get("/Outlines")
    position = 0
    wanted = [(_squeezed(re.sub(r"[√ᵀ]|\w*_\w+", "", t)), t) for t in titles]

    def visit(item):
        nonlocal position
        while item is not None:
            node = item.get_object()
            shown = _squeezed(str(node.get("/Title", "")))
            for ahead in range(position, min(position + 8, len(wanted))):
                key, title = wanted[ahead]
                if begins_alike(shown, key):
                    node[NameObject("/Title")] = TextStringObject(title)
                    position = ahead + 1
                    break
            if "/First" in node:
                visit(node["/First"])
            item = node.get("/Next")

    if root is not None and "/First" in root.get_object():
        visit(root.get_object()["/First"])
    with open(pdf, "wb") as handle:
        writer.write(handle)
    return pdf


def build_pdf(html_root: Path = build.HTML, toc: dict | None = None,
              pdf: Path | None = None, cache_dir: Path = build.CACHE) -> Path:
    """Print the built book in ``html_root`` (its pages listed by ``toc``, default ``_toc.yml``)
    to ``pdf`` (default ``<html_root>/attention-and-transformers.pdf``): twice, the second time
    with the contents' page numbers; then running heads, page numbers and the outline."""
    toc = toc if toc is not None else yaml.safe_load((build.ROOT / "_toc.yml").read_text())
    site = build.site_url()                     # the book's html_baseurl (edition.yml)
    pages = [page for page in page_order(toc) if (html_root / page).exists()]
    figures = static_figures(cache_dir)
    document = html_root / PRINT_PAGE
    overlay = html_root / "_print-overlay.html"
    pdf = pdf or html_root / PDF_NAME
    first, second = pdf.with_suffix(".first.pdf"), pdf.with_suffix(".second.pdf")
    try:
        document.write_text(join_pages(html_root, pages, figures, site, toc=toc))
        print_pdf(document, first)
        sheets = sheet_numbers(first)
        final_html = join_pages(html_root, pages, figures, site, page_numbers=sheets, toc=toc)
        document.write_text(final_html)
        print_pdf(document, second)
        again = sheet_numbers(second)
        if any(again.get(anchor(page)) != sheets.get(anchor(page)) for page in pages):
            raise RuntimeError("the contents' page numbers moved the pages they number")
        from pypdf import PdfReader

        count = len(PdfReader(second).pages)
        overlay.write_text(overlay_document(running_heads(pages, toc, again, html_root, count)))
        marks = pdf.with_suffix(".overlay.pdf")
        print_pdf(overlay, marks)
        return finish(second, marks, pdf, outline_titles(final_html))
    finally:
        for leftover in (document, overlay, first, second, pdf.with_suffix(".overlay.pdf")):
            leftover.unlink(missing_ok=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--html", type=Path, default=build.HTML, help="the built book")
    parser.add_argument("--toc", type=Path, default=build.ROOT / "_toc.yml",
                        help="its table of contents (the student edition's leaves out a part)")
    args = parser.parse_args(argv)
    html = args.html.resolve()                  # the pages are opened by their file URIs
    if not (html / "index.html").exists():
        sys.exit(f"no book is built in {html}: run `make book` first")
    started = time.time()
    pdf = build_pdf(html, yaml.safe_load(args.toc.read_text()))
    print(f"The book as a PDF: {pdf} ({time.time() - started:.0f} s)")


if __name__ == "__main__":
    main()
