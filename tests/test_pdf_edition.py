"""The PDF edition (``attention_course_instructor.book.pdf``), read back with pypdf.

The book's build prints it beside the pages; these tests read that file: every page of the table
of contents, each of its headings and numbered captions (an interactive figure's in its static
form) in the PDF's text, links between pages that land on the page they name, an outline, and
the download link on the front page. A planted fault (a figure's caption lost) is found.
"""
from __future__ import annotations

import json
import re
import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest
import yaml
from bs4 import BeautifulSoup

from attention_course_instructor.book import pdf as pdf_edition

pytestmark = [pytest.mark.slow, pytest.mark.browser]
REPO = Path(__file__).resolve().parents[1]
PREFIX = 60                        # characters of a caption looked for (captions run to 300)


def squeeze(text: str) -> str:
    """Text compared without spaces or line breaks, ligatures spelled out (ﬁ -> fi)."""
    return re.sub(r"\s+", "", unicodedata.normalize("NFKC", text))


def expected_text(html_root: Path, pages: list[str], figures: dict[str, str]) -> dict[str, list[str]]:
    """Per page: its h1 and h2 headings and its numbered captions, formulas left out (the PDF
    draws them; see the accessibility statement)."""
    wanted = {}
    for page in pages:
        article = BeautifulSoup((html_root / page).read_text(), "html.parser").find("article")
        for element in article.select(".headerlink, .math, script.math"):
            element.decompose()
        items = [h.get_text(" ", strip=True) for h in article.select("h1, h2")]
        items += [c.get_text(" ", strip=True) for c in article.select("figcaption")]
        for view in article.select(f'script[type="{pdf_edition.WIDGET_VIEW}"]'):
            model = json.loads(view.string)["model_id"]
            image = BeautifulSoup(figures[model], "html.parser").find("img")
            items.append(image["alt"] if image is not None else "")
        wanted[page] = [item for item in items if item]
    return wanted


def missing_text(reader, wanted: dict[str, list[str]]) -> list[str]:
    text = squeeze(" ".join(page.extract_text() for page in reader.pages))
    return [f"{page}: {item[:80]!r}" for page, items in wanted.items() for item in items
            if squeeze(item)[:PREFIX] not in text]


@pytest.fixture(scope="module")
def book_pdf(built_book):
    from pypdf import PdfReader

    path = built_book / pdf_edition.PDF_NAME
    assert path.exists(), "the book's build did not print the PDF"
    return PdfReader(path)


@pytest.fixture(scope="module")
def pages(built_book):
    toc = yaml.safe_load((REPO / "_toc.yml").read_text())
    return [page for page in pdf_edition.page_order(toc) if (built_book / page).exists()]


def test_every_heading_and_caption_is_text_in_the_pdf(book_pdf, built_book, pages):
    assert len(pages) >= 25
    wanted = expected_text(built_book, pages, pdf_edition.static_figures())
    assert sum(len(items) for items in wanted.values()) > 150
    assert sum("Figure 8." in item for items in wanted.values() for item in items) >= 20
    assert missing_text(book_pdf, wanted) == []
    # each page of the book starts a sheet; nearly every sheet holds selectable text
    sheets = [page.extract_text().strip() for page in book_pdf.pages]
    assert len(sheets) >= len(pages) + 2
    assert sum(bool(text) for text in sheets) >= 0.95 * len(sheets)


def test_links_between_pages_land_on_the_page_they_name(book_pdf, pages):
    reader = book_pdf
    internal = [(number, annotation.get_object()) for number, page in enumerate(reader.pages)
                for annotation in page.get("/Annots") or []
                if "/Dest" in annotation.get_object()]
    assert len(internal) >= 100, "the pages' links to each other are not links inside the PDF"
    destinations = reader.named_destinations
    contents = next(number for number, page in enumerate(reader.pages)
                    if page.extract_text().lstrip().startswith("Contents"))
    landed = 0
    for number, annotation in internal:
        if number != contents:
            continue
        target = reader.get_destination_page_number(destinations[str(annotation["/Dest"])])
        rect = [float(x) for x in annotation["/Rect"]]
        assert target > contents, rect
        landed += 1
    assert landed == len(pages), "the contents list does not link every page"
    chapter = next(page for page in pages if page.endswith("chapter8/index.html"))
    first = pdf_edition.anchor(chapter)
    assert reader.pages[reader.get_destination_page_number(destinations[f"/{first}"]
                                                           if f"/{first}" in destinations
                                                           else destinations[first])] \
        .extract_text().lstrip().startswith("8. Attention and Transformers")
    titles = [item.title for item in reader.outline if not isinstance(item, list)]
    assert "8. Attention and Transformers" in titles and "Contents" in titles


def test_the_front_page_offers_the_pdf(built_book):
    intro = BeautifulSoup((built_book / "book" / "intro.html").read_text(), "html.parser")
    link = intro.find("a", href=re.compile(re.escape(pdf_edition.PDF_NAME) + "$"))
    assert link is not None and (built_book / "book" / link["href"]).resolve().exists()


def test_a_lost_caption_is_found(built_book, tmp_path):
    """The check above fails on a PDF whose one figure lost its caption (planted)."""
    from pypdf import PdfReader

    page = "book/chapter8/captioning.html"
    figures = pdf_edition.static_figures()
    wanted = expected_text(built_book, [page], figures)
    lost = next(item for item in wanted[page] if item.startswith("Figure 8.5"))
    planted = {model: fallback.replace(lost, "a picture") for model, fallback in figures.items()}
    document = built_book / "_print-planted.html"
    document.write_text(pdf_edition.join_pages(built_book, [page], planted, "https://example.org/"))
    printed = tmp_path / "planted.pdf"
    try:                           # in a process of its own, beside this session's browser
        subprocess.run([sys.executable, "-c", "import sys; from attention_course_instructor.book."
                        "pdf import print_pdf; from pathlib import Path; "
                        "print_pdf(Path(sys.argv[1]), Path(sys.argv[2]))", str(document), str(printed)],
                       check=True)
    finally:
        document.unlink()
    reader = PdfReader(printed)
    assert missing_text(reader, wanted) == [f"{page}: {lost[:80]!r}"]


def test_a_figure_without_its_static_form_is_refused(built_book):
    with pytest.raises(KeyError, match="captioning.html: figure .* no static form"):
        pdf_edition.join_pages(built_book, ["book/chapter8/captioning.html"], {}, "https://x/")
