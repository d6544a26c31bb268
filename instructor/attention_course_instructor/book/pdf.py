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
3. put each interactive figure in its static form: the picture and caption its cell saved
   beside the widget (:meth:`attention_course.book.figures.base.CourseFigure._repr_mimebundle_`),
   read from the execution cache the pages were built from;
4. typeset the formulas with the book's own MathJax, and print with Debian's Chromium (through
   Playwright; nothing downloaded): A4, selectable text, page numbers, the headings as the PDF's
   outline, links that work.
"""
from __future__ import annotations

import argparse
import html as html_lib
import json
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
PRINT_PAGE = "_print.html"                    # beside the pages, so their relative URLs hold
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
TYPESET_TIMEOUT_MS = 120_000
# taken out of each page: permalinks, buttons, scripts, the previous/next links
DROP = [".headerlink", "button", "script", ".prev-next-area", ".copybtn", "nav"]

PRINT_CSS = """
@page { size: A4; margin: 18mm 16mm 20mm; }
html { font: 10.5pt/1.45 "DejaVu Sans", sans-serif; color: #000; background: #fff; }
body { margin: 0; }
h1 { font-size: 20pt; margin: 0 0 10pt; }
h2 { font-size: 14pt; margin: 16pt 0 6pt; }
h3 { font-size: 12pt; margin: 12pt 0 4pt; }
h1, h2, h3, h4 { break-after: avoid; line-height: 1.25; }
section.print-page { break-before: page; }
a { color: #0b4f8a; }
pre, code { font-family: "DejaVu Sans Mono", monospace; font-size: 8.5pt; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; background: #f6f6f6; padding: 6pt;
      border-left: 2pt solid #ccc; break-inside: avoid; }
img { max-width: 100%; height: auto; }
figure, .print-figure { break-inside: avoid; margin: 8pt 0; }
figcaption, .print-figure-caption { font-size: 9.5pt; }
table { border-collapse: collapse; font-size: 9pt; margin: 6pt 0; }
td, th { border: 0.5pt solid #bbb; padding: 2pt 5pt; }
.cell_output pre { background: #fff; border-left-color: #888; }
.title-page { text-align: center; padding-top: 60mm; }
.title-page h1 { font-size: 28pt; }
.contents ol { line-height: 1.7; }
mjx-container[display="true"] { overflow: visible; }
"""


def page_order(toc: dict) -> list[str]:
    """The built pages of a table of contents, in reading order (``book/intro.html``, ...)."""
    order = [toc["root"]]

    def visit(entries):
        for entry in entries:
            if "file" in entry:
                order.append(entry["file"])
            visit(entry.get("sections", []))

    for part in toc.get("parts", []):
        visit(part.get("chapters", []))
    visit(toc.get("chapters", []))
    return [f"{name}.html" for name in order]


def anchor(page: str, fragment: str = "") -> str:
    """The id in the joined document of ``page`` (``book/chapter8/index.html``), or of one of its
    own ids."""
    name = re.sub(r"[^A-Za-z0-9]+", "-", page.removesuffix(".html")).strip("-")
    return f"page-{name}" + (f"--{fragment}" if fragment else "")


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


def static_figure(soup, fallback_html: str):
    """An interactive figure's picture with its title as a numbered caption."""
    fallback = BeautifulSoup(fallback_html, "html.parser")
    image = fallback.find("img")
    figure = soup.new_tag("div", attrs={"class": "print-figure", "role": "figure"})
    title = image.get("alt", "") if image is not None else ""
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


def join_pages(html_root: Path, pages: list[str], figures: dict[str, str], site: str) -> str:
    """The joined document's HTML."""
    soup = BeautifulSoup("<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'></head>"
                         "<body></body></html>", "html.parser")
    known = set(pages)
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
        f"{html_lib.escape(site)}</a>. The interactive figures appear here in their static form."
        f"</p></section>", "html.parser")
    soup.body.append(cover)
    contents = soup.new_tag("section", attrs={"class": "contents print-page"})
    heading = soup.new_tag("h1")
    heading.string = "Contents"
    contents.append(heading)
    listing = soup.new_tag("ol")
    contents.append(listing)
    soup.body.append(contents)

    for page in pages:
        section, name = _section(soup, html_root, page, known, figures, site)
        item = soup.new_tag("li")
        link = soup.new_tag("a", href=f"#{anchor(page)}")
        link.string = name
        item.append(link)
        listing.append(item)
        soup.body.append(section)
    return str(soup)


def _section(soup, html_root: Path, page: str, known: set[str], figures: dict[str, str], site: str):
    source = BeautifulSoup((html_root / page).read_text(), "html.parser")
    article = source.select_one("article.bd-article") or source.find("article")
    if article is None:
        raise ValueError(f"{page}: no <article> in the built page")
    for view in article.select(f'script[type="{WIDGET_VIEW}"]'):
        model = json.loads(view.string or "{}").get("model_id", "")
        if model not in figures:
            raise KeyError(f"{page}: figure {model} has no static form in the execution cache; "
                           "rebuild the book")
        view.replace_with(static_figure(source, figures[model]))
    for selector in DROP:
        for element in article.select(selector):
            element.decompose()
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
    name = first_heading.get_text(" ", strip=True) if first_heading else page
    return section, name


FOOTER = ("<div style='font: 8pt sans-serif; width: 100%; text-align: center; color: #444'>"
          "<span class='pageNumber'></span> / <span class='totalPages'></span></div>")


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
            page.wait_for_function("() => window.MathJax && MathJax.startup && MathJax.startup.promise",
                                   timeout=TYPESET_TIMEOUT_MS)
            page.evaluate("() => MathJax.startup.promise")
            page.emulate_media(media="print")
            page.pdf(path=str(pdf), format="A4", print_background=True, tagged=True, outline=True,
                     display_header_footer=True, header_template="<div></div>",
                     footer_template=FOOTER, margin={"top": "18mm", "bottom": "20mm",
                                                     "left": "16mm", "right": "16mm"})
        finally:
            browser.close()
    return pdf


def build_pdf(html_root: Path = build.HTML, toc: dict | None = None,
              pdf: Path | None = None, cache_dir: Path = build.CACHE) -> Path:
    """Print the built book in ``html_root`` (its pages listed by ``toc``, default ``_toc.yml``)
    to ``pdf`` (default ``<html_root>/attention-and-transformers.pdf``)."""
    toc = toc if toc is not None else yaml.safe_load((build.ROOT / "_toc.yml").read_text())
    site = build.site_url()                     # the book's html_baseurl (edition.yml)
    pages = [page for page in page_order(toc) if (html_root / page).exists()]
    document = html_root / PRINT_PAGE
    document.write_text(join_pages(html_root, pages, static_figures(cache_dir), site))
    try:
        return print_pdf(document, pdf or html_root / PDF_NAME)
    finally:
        document.unlink(missing_ok=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--html", type=Path, default=build.HTML, help="the built book")
    parser.add_argument("--toc", type=Path, default=build.ROOT / "_toc.yml",
                        help="its table of contents (the student edition's leaves out a part)")
    args = parser.parse_args(argv)
    if not (args.html / "index.html").exists():
        sys.exit(f"no book is built in {args.html}: run `make book` first")
    started = time.time()
    pdf = build_pdf(args.html, yaml.safe_load(args.toc.read_text()))
    print(f"The book as a PDF: {pdf} ({time.time() - started:.0f} s)")


if __name__ == "__main__":
    main()
