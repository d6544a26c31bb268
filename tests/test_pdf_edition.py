"""The PDF edition (``attention_course_instructor.book.pdf``), read back with pypdf.

The book's build prints it beside the pages; these tests read that file: every page of the table
of contents, each of its headings and numbered captions (an interactive figure's caption is its
title, read from the widget state the page saved, so a figure printed without its static form is
missed) in the PDF's text, links between pages that land on the page they name, an outline whose
titles are the headings' own words, contents whose page numbers are the sheets the pages start
on, running heads, the book typeface, pictures as vector graphics or at print resolution, code
lines kept whole (wrapped with a mark), the words for print instead of the words for the screen,
no heading left at the foot of a sheet, each self-check question in place and its answer at the
end of its chapter, and the download link on the front page. Each check is shown to fail on a
planted fault: a PDF printed with a figure's caption lost, and the others' inputs altered.
"""
from __future__ import annotations

import functools
import html
import json
import re
import subprocess
import sys
import tempfile
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


def widget_states(soup) -> dict:
    """A built page's saved widget models' states, by model id."""
    script = soup.find("script", type="application/vnd.jupyter.widget-state+json")
    return {k: v["state"] for k, v in json.loads(script.string)["state"].items()} if script else {}


def expected_text(html_root: Path, pages: list[str], figures: dict[str, str]) -> dict[str, list[str]]:
    """Per page: its h1 and h2 headings and its numbered captions, formulas left out (the PDF
    draws them; see the accessibility statement). An interactive figure's caption is its title in
    the state the page saved; a self-check question's, its title and the start of its question."""
    wanted = {}
    for page in pages:
        soup = BeautifulSoup((html_root / page).read_text(), "html.parser")
        states, article = widget_states(soup), soup.find("article")
        for element in article.select(".headerlink, .math, script.math"):
            element.decompose()
        items = [h.get_text(" ", strip=True) for h in article.select("h1, h2")]
        items += [c.get_text(" ", strip=True) for c in article.select("figcaption")]
        for view in article.select(f'script[type="{pdf_edition.WIDGET_VIEW}"]'):
            state = states[json.loads(view.string)["model_id"]]
            items.append(state["title"])
            if "prompt" in state:
                items.append(state["prompt"].replace("`", ""))
        wanted[page] = [item for item in items if item]
    return wanted


def missing_text(reader, wanted: dict[str, list[str]]) -> list[str]:
    text = squeeze(" ".join(sheet_texts(reader)))
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
    assert sum(item.startswith("Self-check") for items in wanted.values() for item in items) >= 28
    assert missing_text(book_pdf, wanted) == []
    # each page of the book starts a sheet; nearly every sheet holds selectable text
    sheets = [text.strip() for text in sheet_texts(book_pdf)]
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
    first_page = reader.get_destination_page_number(destinations[pdf_edition.anchor(pages[0])]
                                                    if pdf_edition.anchor(pages[0]) in destinations
                                                    else destinations["/" + pdf_edition.anchor(pages[0])])
    landed = 0
    for number, annotation in internal:
        if not contents <= number < first_page:
            continue
        target = reader.get_destination_page_number(destinations[str(annotation["/Dest"])])
        rect = [float(x) for x in annotation["/Rect"]]
        assert target >= first_page, rect
        landed += 1
    # every page, and the answers to the self-checks of Chapters 8 and 12
    assert landed == len(pages) + 2, "the contents list does not link every page"
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
    planted = {model: fallback.replace(html.escape(lost), "a picture")
               for model, fallback in figures.items()}
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


# ---- the printed book: contents, heads, outline, type, pictures, code, words, answers --------

@functools.lru_cache(maxsize=4)
def sheet_texts(reader) -> list[str]:
    """The text of every sheet (read once per PDF: the extraction takes most of these tests' time)."""
    return [page.extract_text() for page in reader.pages]


def destination_sheets(reader) -> dict[str, int]:
    """The sheet (counted from 1) of every named destination."""
    return {name.lstrip("/"): reader.get_destination_page_number(dest) + 1
            for name, dest in reader.named_destinations.items()}


def page_titles(built_book, pages) -> dict[str, str]:
    titles = {}
    for page in pages:
        h1 = BeautifulSoup((built_book / page).read_text(), "html.parser").select_one("article h1")
        for element in h1.select(".headerlink"):
            element.decompose()
        titles[page] = " ".join(h1.get_text(" ").split())
    return titles


def contents_problems(contents_text: str, titles: dict[str, str], starts: dict[str, int]) -> list[str]:
    """Each page's line in the contents must end with the sheet that page starts on."""
    lines = [" ".join(line.split()) for line in contents_text.splitlines()]
    found = []
    for page, title in titles.items():
        line = next((line for line in lines if line.startswith(title)), None)
        number = re.search(r"(\d+)$", line or "")
        if number is None or int(number[1]) != starts[page]:
            found.append(f"{title}: the contents say {number[1] if number else None}, "
                         f"the page starts on sheet {starts[page]}")
    return found


def test_the_contents_give_the_sheet_each_page_starts_on(book_pdf, built_book, pages):
    texts = sheet_texts(book_pdf)
    starts = {page: destination_sheets(book_pdf)[pdf_edition.anchor(page)] for page in pages}
    contents = "\n".join(text for text in texts[1:5] if "Contents" in text[:40] or re.search(r"\d$", text))
    titles = page_titles(built_book, pages)
    assert contents_problems(contents, titles, starts) == []
    moved = {page: sheet + 1 for page, sheet in starts.items()}               # planted: one off
    assert len(contents_problems(contents, titles, moved)) == len(pages)


def running_head_problems(texts: list[str], heads: list[tuple[int, str]]) -> list[str]:
    return [f"sheet {sheet}: no running head {head!r}" for sheet, head in heads
            if squeeze(head) not in squeeze(texts[sheet - 1])]


def test_every_sheet_has_a_running_head_and_a_page_number(book_pdf, built_book, pages):
    """Past the title page, every sheet ends with its number; a sheet that does not open a page of
    the book carries the running head: the section on a right-hand (odd) sheet."""
    texts = sheet_texts(book_pdf)
    starts = sorted((destination_sheets(book_pdf)[pdf_edition.anchor(page)], page) for page in pages)
    titles = page_titles(built_book, pages)
    opening = {sheet for sheet, _ in starts} | {
        sheet for name, sheet in destination_sheets(book_pdf).items() if name.startswith("self-check-answers")}
    heads = []
    for sheet in range(starts[0][0], len(texts) + 1):
        page = [p for s, p in starts if s <= sheet][-1]
        answers = [s for n, s in destination_sheets(book_pdf).items()
                   if n.startswith("self-check-answers") and starts[0][0] <= s <= sheet
                   and s > dict((p, s) for s, p in starts)[page]]
        if sheet % 2 and sheet not in opening and not answers:
            heads.append((sheet, titles[page]))
    assert len(heads) > 20
    assert running_head_problems(texts, heads) == []
    assert all(text.rstrip().endswith(str(n)) for n, text in enumerate(texts, start=1) if n > 1)
    blank = [text.replace(head, "") if n == heads[0][0] else text        # planted: a head lost
             for n, (text, head) in enumerate(zip(texts, [heads[0][1]] * len(texts)), start=1)]
    assert running_head_problems(blank, heads) == [f"sheet {heads[0][0]}: no running head {heads[0][1]!r}"]


def outline_titles(reader) -> list[str]:
    found = []

    def walk(items):
        for item in items:
            if isinstance(item, list):
                walk(item)
            else:
                found.append(item.title)
    walk(reader.outline)
    return found


def outline_problems(titles: list[str], headings: list[str]) -> list[str]:
    """Every h1 and h2 of the book is in the outline as it is written."""
    return [f"not in the outline: {heading!r}" for heading in headings if heading not in titles]


def test_the_outline_spells_the_headings_as_written(book_pdf, built_book, pages):
    headings = []
    for page in pages:
        article = BeautifulSoup((built_book / page).read_text(), "html.parser").find("article")
        for heading in article.select("h1, h2"):
            for link in heading.select(".headerlink"):
                link.decompose()
            if heading.select(".math"):
                continue                                   # below, with its formula
            headings.append(" ".join(heading.get_text(" ").split()))
    titles = outline_titles(book_pdf)
    assert len(headings) > 100
    assert outline_problems(titles, headings) == []
    assert "Why divide by √d_k" in titles                 # a formula, as plain text
    assert "Task 1: scores and weights over the columns (6 points, autograded)" in titles
    joined = [title.replace("output step", "outputstep") for title in titles]     # planted
    assert outline_problems(joined, headings) == ["not in the outline: "
                                                  "'8.2 Attention: a context for each output step'"]


def test_an_outline_entry_is_matched_to_its_heading_however_chromium_spelled_it():
    """Chromium's own titles for the book's headings, squeezed as ``finish`` squeezes them; the
    third is a wrapped heading at the top of a sheet, its first line twice (Lab 12's Task 7)."""
    alike = pdf_edition.begins_alike
    task7 = "Task7:whatthemaps,theablationandthedatasay(8points,gradedbyhand)"
    assert alike("Whydivideby", "Whydivideby")                       # the formula left out of both
    assert alike("8.2Attention:acontextforeachoutputstep", "8.2Attention:acontextforeachoutputstep")
    assert alike(task7[:-5] + task7, task7)
    assert not alike("Task1:byte-pairencoding(6points,autograded)", "Task2:masks,attention,heads(7points,autograded)")
    assert not alike("Task7:whatthemapsshow,andwhattheydonot(6points,gradedbyhand)", task7)
    assert not alike("X", "Why") and not alike("", "Why")


def test_the_body_is_set_in_the_book_typeface(book_pdf):
    fonts = set()
    for page in book_pdf.pages[2:12]:
        for font in (page.get("/Resources", {}).get("/Font") or {}).values():
            fonts.add(str(font.get_object().get("/BaseFont", "")))
    assert any("CharisSIL" in font for font in fonts), fonts
    assert not any("DejaVuSans-" in font or font.endswith("+DejaVuSans") for font in fonts), fonts


PRINT_PPI = 150                      # a raster picture prints at no less than this


def low_resolution(listing: str) -> list[str]:
    """Rasters of `pdfimages -list` below PRINT_PPI, except data rasters: one pixel per cell of a
    matrix (at most 64 x 64 pixels), drawn as sharp squares."""
    found = []
    for line in listing.splitlines()[2:]:
        fields = line.split()
        if len(fields) < 14 or fields[2] not in ("image", "smask"):
            continue
        width, height, ppi = int(fields[3]), int(fields[4]), float(fields[12])
        if fields[2] == "image" and ppi < PRINT_PPI and not (width <= 64 and height <= 64):
            found.append(f"sheet {fields[0]}: {width} x {height} px at {ppi:.0f} ppi")
    return found


def test_pictures_are_vector_graphics_or_print_resolution(built_book):
    import shutil

    if shutil.which("pdfimages") is None:
        pytest.skip("poppler-utils is not installed (make browser-deps installs it)")
    listing = subprocess.run(["pdfimages", "-list", str(built_book / pdf_edition.PDF_NAME)],
                             capture_output=True, text=True, check=True).stdout
    assert low_resolution(listing) == []
    planted = listing + "  7     0 image     460   232  icc     3   8  image  no        95  0    96    96 8439B 2.6%\n"
    assert low_resolution(planted) == ["sheet 7: 460 x 232 px at 96 ppi"]


def code_lines(built_book, pages, longer_than: int) -> list[str]:
    lines = []
    for page in pages:
        for pre in BeautifulSoup((built_book / page).read_text(), "html.parser").select("article pre"):
            if pre.find_parent("details") is not None:
                continue                  # a cell folded away (an exercise's answer) is not printed
            lines += [line for line in pre.get_text().splitlines() if len(line.strip()) > longer_than]
    return lines


def lost_code(text: str, lines: list[str]) -> list[str]:
    flat = squeeze(text.replace(pdf_edition.CONTINUED.strip(), ""))
    return [line for line in lines if squeeze(line) not in flat]


def test_long_code_lines_are_printed_whole(book_pdf, built_book, pages):
    """A code line too long for the page is printed whole: set smaller, or wrapped with a mark at
    the start of its continuation (the mark is not part of the code)."""
    lines = code_lines(built_book, pages, pdf_edition.CODE_COLUMNS)
    text = " ".join(sheet_texts(book_pdf))
    assert lines, "no long code line to check"
    assert lost_code(text, lines) == []
    assert pdf_edition.CONTINUED.strip() in text
    assert lost_code(text.replace(squeeze(lines[0])[-12:], ""), lines[:1]) == lines[:1]   # planted


def test_print_shows_the_words_for_print(book_pdf, built_book, pages):
    """The online-only instructions ("Move the sliders") are not in the PDF; their print-only
    replacements are."""
    text = squeeze(" ".join(sheet_texts(book_pdf)))
    online, printed = [], []
    for page in pages:
        soup = BeautifulSoup((built_book / page).read_text(), "html.parser")
        for element in soup.select(".math"):
            element.replace_with("\0")                 # formulas are drawn, not text, in the PDF
        for kind, found in (("online-only", online), ("print-only", printed)):
            for element in soup.select(f"article .{kind}"):
                found.append([squeeze(part) for part in element.get_text().split("\0")
                              if len(squeeze(part)) >= 12])
    assert len(online) >= 10 and len(printed) >= len(online)
    # no screen-only paragraph is printed whole; every print-only one is
    assert [parts for parts in online if all(part in text for part in parts)] == []
    assert [parts for parts in printed if not all(part in text for part in parts)] == []


def stranded_headings(texts: list[str], headings: list[str]) -> list[str]:
    """Headings printed as the last words of a sheet (its page number aside)."""
    found = []
    for number, text in enumerate(texts, start=1):
        lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
        body = lines[:-1] if lines and lines[-1].isdigit() else lines
        if body and any(squeeze(body[-1]) == squeeze(h) for h in headings):
            found.append(f"sheet {number} ends with the heading {body[-1]!r}")
    return found


def test_no_heading_is_left_at_the_foot_of_a_sheet(book_pdf, built_book, pages):
    headings = [h.get_text(" ", strip=True).rstrip("#").strip() for page in pages
                for h in BeautifulSoup((built_book / page).read_text(), "html.parser")
                .select("article h2, article h3")]
    texts = sheet_texts(book_pdf)
    assert stranded_headings(texts, headings) == []
    planted = [texts[5] + "\n" + headings[0] + "\n6"]
    assert stranded_headings(planted, headings) == [f"sheet 1 ends with the heading {headings[0]!r}"]


def test_each_chapter_ends_with_the_answers_to_its_self_checks(book_pdf, built_book, pages):
    from attention_course.book.figures.selfcheck import SelfCheck

    questions = {}
    for page in pages:
        for state in widget_states(BeautifulSoup((built_book / page).read_text(), "html.parser")).values():
            if "options" in state and "kind" in state:
                question = SelfCheck(**{k: state[k] for k in (
                    "number", "outcome", "kind", "prompt", "options", "answer", "tolerance", "unit",
                    "mistakes", "right", "low", "high", "explanation", "title")})
                questions[question.number] = question
    assert len(questions) >= 28
    texts, sheets = sheet_texts(book_pdf), destination_sheets(book_pdf)
    for chapter, next_page in (("8", "book/chapter12/index.html"), ("12", "book/labs/get-the-labs.html")):
        start = sheets[pdf_edition.answers_anchor(chapter)]
        exercises = sheets[pdf_edition.anchor(f"book/chapter{chapter}/exercises.html")]
        end = sheets[pdf_edition.anchor(next_page)]
        assert exercises < start < end, (chapter, exercises, start, end)
        answers = squeeze(" ".join(texts[start - 1:end - 1]))
        for number, question in questions.items():
            if number.split(".")[0] == chapter:
                assert squeeze(f"{number} {question.answer_text()}")[:50] in answers, number
                for option in question.options:           # why each option is right or wrong
                    assert squeeze(option["why"].replace("`", ""))[:40] in answers, (number, option)


BODY = (22 / 297, 275 / 297)        # the text block's top and foot, as shares of the sheet's height
LEAST_FILL = 0.5                     # a sheet that a page of the book runs on from is this full


def fills(pdf: Path) -> list[float]:
    """How far down each sheet's text block its content reaches (0: empty, 1: to the foot), from
    a rendering at 20 dpi (text, code, pictures alike; the running head and page number aside)."""
    import numpy as np
    from PIL import Image

    with tempfile.TemporaryDirectory() as folder:
        subprocess.run(["pdftoppm", "-r", "20", "-gray", "-png", str(pdf), f"{folder}/s"], check=True)
        found = []
        for image in sorted(Path(folder).glob("s-*.png")):
            pixels = np.asarray(Image.open(image).convert("L"))
            top, foot = (int(share * pixels.shape[0]) for share in BODY)
            rows = np.nonzero((pixels[top:foot] < 200).any(axis=1))[0]
            found.append(rows.max() / (foot - top) if rows.size else 0.0)
    return found


def stranded_space(fill: list[float], continues: list[bool]) -> list[str]:
    """Sheets left mostly empty although their page of the book goes on on the next sheet."""
    return [f"sheet {n}: {share:.0%} full" for n, (share, more) in enumerate(zip(fill, continues), 1)
            if more and share < LEAST_FILL]


def test_no_sheet_is_left_mostly_empty_in_the_middle_of_a_page(book_pdf, built_book, pages):
    """Page breaks do not strand blocks: where a page of the book runs on to the next sheet, the
    sheet before is at least half full (Lab 12's long code cell, kept whole, had left most of two
    sheets empty)."""
    import shutil

    if shutil.which("pdftoppm") is None:
        pytest.skip("poppler-utils is not installed (make browser-deps installs it)")
    starts = {sheet for name, sheet in destination_sheets(book_pdf).items()
              if name.startswith(("page-", "self-check-answers")) and "--" not in name}
    count = len(book_pdf.pages)
    continues = [n >= min(starts) and n + 1 not in starts and n < count for n in range(1, count + 1)]
    fill = fills(built_book / pdf_edition.PDF_NAME)
    assert stranded_space(fill, continues) == []
    assert stranded_space([0.2, 0.9], [True, False]) == ["sheet 1: 20% full"]        # planted
