"""The book builds strictly (warnings are errors) and its pages hold what they promise."""
from __future__ import annotations

import re

import pytest

from attention_course_instructor.book.build import ASSETS

pytestmark = pytest.mark.slow


def test_every_toc_page_is_built(built_book):
    import yaml

    from attention_course_instructor.book.build import ROOT
    from attention_course_instructor.book.edition import toc_files

    pages = toc_files(yaml.safe_load((ROOT / "_toc.yml").read_text()))
    assert len(pages) >= 25 and "book/chapter8/self-attention" in pages
    assert [page for page in sorted(pages) if not (built_book / f"{page}.html").exists()] == []


def test_browser_assets_are_served_locally(built_book):
    html = (built_book / "book/chapter8/index.html").read_text()
    scripts = re.findall(r'<script[^>]*src="([^"]+)"', html)
    remote = [s for s in scripts if s.startswith(("http:", "https:", "//"))]
    assert remote == [], f"scripts loaded from the network: {remote}"
    for asset in ("mathjax/tex-chtml.js", "requirejs/require.js", "html-manager/embed-amd.js"):
        assert (built_book / "_static" / "vendor" / asset).exists(), asset
        assert (ASSETS / asset).exists()
    assert "application/vnd.jupyter.widget-state+json" in html, "widget state was not saved"


def test_widget_runtime_only_on_widget_pages(built_book):
    """RequireJS and the widget manager are added only where a page has a widget."""
    assert "embed-amd.js" in (built_book / "book/chapter8/index.html").read_text()
    assert "embed-amd.js" not in (built_book / "index.html").read_text()


@pytest.mark.parametrize("lab", ["lab8", "lab12"])
def test_lab_page_is_shown_unexecuted(built_book, lab):
    html = (built_book / f"labs/{lab}/{lab}.html").read_text()
    assert "NotImplementedError" in html and "YOUR CODE HERE" in html
    assert 'class="cell_output' not in html, "the student notebook should be shown without outputs"
    assert "BEGIN SOLUTION" not in html and "run_hidden_check" not in html


def test_launch_and_download_buttons(built_book):
    """Binder, Colab and the download; no hub button while _config.yml names no hub
    (tests/test_launch_paths.py checks every page for that)."""
    html = (built_book / "book/chapter8/index.html").read_text()
    for needle in ("mybinder.org", "colab.research.google.com", "_sources/book/chapter8/index"):
        assert needle in html, needle
    assert "JupyterHub" not in html


def test_outcomes_data_agrees_with_the_pages_and_the_index_is_current():
    from attention_course_instructor.book import outcomes

    outcomes.check()
    assert (outcomes.INDEX).read_text() == outcomes.render_index(), \
        "book/concepts.md is stale: run `python -m attention_course_instructor.book.outcomes`"


def test_the_index_page_is_written_only_when_it_changes(tmp_path):
    """Written anew at every build, the page was read again by each (with the PDF after it)."""
    import os

    from attention_course_instructor.book import outcomes

    index = tmp_path / "concepts.md"
    index.write_text(outcomes.render_index())
    os.utime(index, (1, 1))
    outcomes.write_index(index)
    assert index.stat().st_mtime == 1, "an unchanged index page was written again"
    index.write_text("stale")
    outcomes.write_index(index)
    assert index.read_text() == outcomes.render_index()


def test_outcome_check_catches_an_unassessed_outcome_and_a_wrong_box():
    import copy

    from attention_course_instructor.book import outcomes

    data = outcomes.load()
    broken = copy.deepcopy(data)
    broken["outcomes"]["encode-positions"]["assessed_by"] = []
    with pytest.raises(outcomes.OutcomeError, match="encode-positions.*assessed by no"):
        outcomes.check(broken)
    moved = copy.deepcopy(data)
    moved["outcomes"]["encode-positions"]["taught_in"] = ["book/chapter8/transformer-block"]
    with pytest.raises(outcomes.OutcomeError, match="transformer-block: its box serves"):
        outcomes.check(moved)


def test_self_check_check_catches_a_missing_kind_a_foreign_outcome_and_an_unshown_question():
    """Every numbered section of Chapters 8 and 12 has a choice and a numeric self-check question
    that practise its own outcomes, and shows each; three planted faults are each found."""
    import copy

    from attention_course.book.figures.selfcheck import load_questions
    from attention_course_instructor.book import outcomes

    data, questions = outcomes.load(), load_questions()
    assert outcomes.check_self_checks(data, questions=questions) == []
    sections = {q["page"] for q in questions.values()}
    assert len(sections) == 14 and len(questions) >= 28
    one_kind = {n: q for n, q in questions.items() if n != "8.1.1"}        # 8.1 left with a choice
    assert outcomes.check_self_checks(data, questions=one_kind) == [
        "book/chapter8/bottleneck: needs a choice and a numeric self-check question",
        "book/chapter8/bottleneck shows self-checks ['8.1.1', '8.1.2'], self_checks.yml has "
        "['8.1.2'] for it"]
    foreign = copy.deepcopy(questions)
    foreign["8.1.2"]["outcome"] = "encode-positions"
    assert outcomes.check_self_checks(data, questions=foreign) == [
        "self-check 8.1.2 practises 'encode-positions', which book/chapter8/bottleneck does not teach"]
    extra = {**questions, "8.1.3": {**questions["8.1.2"]}}                 # written, not shown
    assert outcomes.check_self_checks(data, questions=extra) == [
        "book/chapter8/bottleneck shows self-checks ['8.1.1', '8.1.2'], self_checks.yml has "
        "['8.1.1', '8.1.2', '8.1.3'] for it"]


def test_page_code_cells_stay_short_and_narrow():
    """Pages show ideas; plumbing lives in the package (cells of at most 15 lines), and no line
    is wider than the page's code column shows without clipping (88 characters)."""
    import jupytext

    from conftest import REPO

    cells = [(page.relative_to(REPO), i, cell) for page in sorted((REPO / "book").rglob("*.md"))
             for i, cell in enumerate(jupytext.read(page).cells) if cell.cell_type == "code"]
    assert len(cells) > 100
    assert [(page, i) for page, i, cell in cells if len(cell.source.splitlines()) > 15] == []
    assert [(page, i, line) for page, i, cell in cells for line in cell.source.splitlines()
            if len(line) > 88] == []


def test_exercise_answers_stay_hidden_until_asked_for(built_book):
    """Every computing cell of an exercises page is collapsed with its output (the solution's
    numbers are in it), so no answer shows before the reader opens it."""
    for page in ("book/chapter8/exercises.html", "book/chapter12/exercises.html"):
        html = (built_book / page).read_text()
        cells = re.findall(r'<div class="cell( [^"]*)? docutils container">', html)
        assert cells, page
        assert all("tag_hide-cell" in (tags or "") for tags in cells), (page, cells)


def test_no_page_carries_a_script_twice(built_book):
    """Inline scripts declared twice throw in the browser (sphinx-thebe's `const` did)."""
    for page in built_book.rglob("*.html"):
        scripts = re.findall(r"<script>(.*?)</script>", page.read_text(errors="replace"), re.S)
        repeated = {s[:60] for s in scripts if scripts.count(s) > 1}
        assert not repeated, (page, repeated)


def test_outputs_read_as_prose_not_as_reprs(built_book):
    """No page shows NumPy scalar reprs (``np.float32(0.89)``), and a cell that prints in a loop
    shows one output box (streams merged), not one box per print."""
    for page in sorted(built_book.joinpath("book").rglob("*.html")):
        html = page.read_text()
        assert not re.search(r"np\.(float|int|bool)\w*\(", html), page.name
        for cell in re.findall(r'<div class="cell_output docutils container">(.*?)'
                               r'(?=<div class="cell|</section>)', html, re.S):
            assert cell.count('class="output stream') <= 1, page.name


FIGURE_NUMBER = re.compile(r"^Figures? (\d+\.(?:\d+|[A-Z]))(?: and (\d+\.\d+))?: \S")


def figure_numbers(built_book):
    """Every figure of the book as (number, page, caption), the page as the toc names it
    (``book/chapter8/index``): the captions of the computed plots and the titles of the
    interactive figures (from each page's saved widget state)."""
    from bs4 import BeautifulSoup

    found = []
    for page in sorted(built_book.joinpath("book").rglob("*.html")):
        where = page.relative_to(built_book).with_suffix("").as_posix()
        html = page.read_text()
        soup = BeautifulSoup(html, "html.parser")
        for img in soup.select("article img"):
            if "_images/" not in img.get("src", ""):
                continue                                     # a logo or a widget's fallback
            alt = img.get("alt", "")
            assert alt and "/" not in alt and not re.search(r"\.(png|svg|jpe?g)$", alt), \
                f"{page.name}: an image whose alt text is {alt!r}"
            assert len(alt.split()) >= 8, f"{page.name}: alt text too thin to describe: {alt!r}"
            figure = img.find_parent("figure")
            assert figure is not None and figure.figcaption is not None, \
                f"{page.name}: an image without a caption ({alt[:40]}...)"
            found.append((figure.figcaption.get_text(" ", strip=True).rstrip("#"), where))
        for state in soup.select('script[type="application/vnd.jupyter.widget-state+json"]'):
            found += [(t, where) for t in re.findall(r'"title": "([^"]+)"', state.string)
                      if not t.startswith("Self-check ")]      # questions, not figures
    numbered = []
    for caption, page in found:
        m = FIGURE_NUMBER.match(caption)
        assert m, f"{page}: a figure whose caption does not start with its number: {caption[:60]!r}"
        numbered += [(n, page, caption) for n in m.groups() if n]
    return numbered


def test_every_figure_has_its_number_a_caption_and_alt_text(built_book):
    """Accessibility and reference: each plot has real alt text (not its file path) and a
    caption that starts with its number; interactive figures show a numbered title. Numbers are
    unique; Chapter 8's are the source chapter's 8.1-8.14, its own additions lettered (8.A...)."""
    numbered = figure_numbers(built_book)
    numbers = [n for n, _, _ in numbered]
    assert len(numbered) >= 25                     # the scan found the figures
    assert len(set(numbers)) == len(numbers), sorted(n for n in numbers if numbers.count(n) > 1)
    source = {n for n in numbers if re.fullmatch(r"8\.\d+", n)}
    assert source == {f"8.{i}" for i in range(1, 15)} - {"8.3", "8.4"}, sorted(source)


FIGURE_REFERENCE = re.compile(r"Figures? (\d+\.(?:\d+|[A-Z]))")


def test_a_self_check_names_only_figures_its_reader_has_seen(built_book):
    """A self-check that points at a figure points at one on its own page or an earlier page of
    the book (the alignment-matrix question of 8.2 once named Figure 8.5, the caption map of a
    later page)."""
    import json

    import yaml

    from attention_course.book.figures.selfcheck import load_questions
    from attention_course_instructor.book.build import ROOT
    from attention_course_instructor.book.pdf import page_order

    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    order = [page.removesuffix(".html") for page in page_order(toc)]     # the PDF's reading order
    shown_on = {number: page for number, page, _ in figure_numbers(built_book)}
    named, unseen = 0, {}
    for key, question in load_questions().items():
        seen = order[:order.index(question["page"]) + 1]
        for figure in FIGURE_REFERENCE.findall(json.dumps(question)):
            named += 1
            if shown_on.get(figure) not in seen:
                unseen[f"{key} names Figure {figure}"] = shown_on.get(figure, "no such figure")
    assert named >= 5 and unseen == {}, unseen


def test_figure_check_catches_a_path_as_alt_text(tmp_path):
    page = tmp_path / "book" / "p.html"
    page.parent.mkdir()
    page.write_text('<article><figure><img alt="../_images/a.png" src="../_images/a.png"/>'
                    '<figcaption>Figure 8.A: x</figcaption></figure></article>')
    with pytest.raises(AssertionError, match="alt text is"):
        figure_numbers(tmp_path)


def test_lab8_results_page_shows_results_and_no_answers(built_book):
    """The book's page of what Lab 8 finds is built from the committed benchmark results: its
    figures are there, and no graded function of the lab is defined or imported on it."""
    from conftest import REPO

    source = (REPO / "book/labs/lab8-results.md").read_text()
    html = (built_book / "book/labs/lab8-results.html").read_text()
    graded = re.findall(r"^def (\w+)\(", (REPO / "source/lab8/lab8.md").read_text(), re.M)
    assert {"additive_scores", "greedy_decode", "results_by_length"} <= set(graded)
    for name in graded:
        assert not re.search(rf"\b(def|import)\s+{name}\b", source + html), name
    for leak in ("lab8_reference", "reference_namespace", "source/lab8", "solutions/"):
        assert leak not in source, leak
    assert html.count('src="../../_images/') == 2 and "Figure 8.K" in html and "Figure 8.L" in html


BROKEN_PAGE = """\
---
jupytext: {text_representation: {extension: .md, format_name: myst}}
kernelspec: {name: python3, display_name: Python 3, language: python}
---
# A page whose code breaks

```{code-cell} ipython3
raise ValueError("the page's own reason")
```
"""


def test_a_failed_build_says_which_page_broke_and_why(tmp_path):
    """The strict build's error carries the warning and the cell's traceback in its message, so a
    log that keeps only the message (a CI summary) still names the page and the reason."""
    import sys
    from pathlib import Path

    from attention_course_instructor.book.build import BookBuildError, run_jupyter_book

    (tmp_path / "_config.yml").write_text("title: broken\nexecute:\n  execute_notebooks: force\n")
    (tmp_path / "_toc.yml").write_text("format: jb-book\nroot: broken\n")
    (tmp_path / "broken.md").write_text(BROKEN_PAGE)
    jb = Path(sys.executable).with_name("jupyter-book")
    cmd = [str(jb), "build", str(tmp_path), "-W", "-n", "--keep-going"]
    with pytest.raises(BookBuildError) as failure:
        run_jupyter_book(cmd, html=tmp_path / "_build" / "html", cwd=tmp_path)
    message = str(failure.value)
    assert message.startswith("jupyter-book build failed (exit 1): ")
    assert "broken" in message.splitlines()[0]                 # the page, in the summary line
    assert "ValueError: the page's own reason" in message      # the cell's traceback
    assert "\x1b[" not in message


def test_a_page_worker_ends_on_sigterm_whatever_the_executor_left_behind(monkeypatch, tmp_path):
    """The suite once hung for good leaving the pages' pool: its terminate's SIGTERM ended one
    worker (holding the pool's queue lock) while the others, their SIGTERM caught, waited on it."""
    import signal

    import jupyter_cache.executors.utils as executors

    from attention_course_instructor.book import build

    class Done:
        err, time = None, 0.0

    def leaves_a_handler(nb, **kwargs):
        signal.signal(signal.SIGTERM, lambda *args: None)        # as nbclient's loop handler does
        return Done()

    page = tmp_path / "page.ipynb"
    page.write_text('{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}')
    monkeypatch.setattr(executors, "single_nb_execution", leaves_a_handler)
    try:
        assert build._execute_one(str(page), 30)[3] == ""
        assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


def test_the_pdf_is_printed_again_only_when_what_it_is_printed_from_changed(tmp_path, monkeypatch):
    """A build with nothing to do skips the minute of printing; Sphinx writes some files again
    with the same contents (its pygments.css), which must not count as a change."""
    import os

    from attention_course_instructor.book import build, pdf

    html, toc = tmp_path / "_build" / "html", tmp_path / "_toc.yml"
    (html / "_static").mkdir(parents=True)
    (html / "index.html").write_text("<p>one</p>")
    (html / "_static" / "pygments.css").write_text(".k { color: blue }")
    toc.write_text("root: index\n")
    printed = []

    def print_it(cmd, **kwargs):
        (html / pdf.PDF_NAME).write_bytes(b"%PDF")
        printed.append(cmd)

    monkeypatch.setattr(build, "run", print_it)
    monkeypatch.setattr(build.shutil, "which", lambda name: "/usr/bin/" + name)
    build.print_the_pdf(html, toc)
    assert len(printed) == 1 and build.pdf_is_current(html, toc)
    (html / "_static" / "pygments.css").write_text(".k { color: blue }")      # written again, same
    os.utime(html / "_static" / "pygments.css")
    build.print_the_pdf(html, toc)
    assert len(printed) == 1, "printed again though nothing changed"
    (html / "index.html").write_text("<p>two</p>")
    assert not build.pdf_is_current(html, toc)
    build.print_the_pdf(html, toc)
    assert len(printed) == 2, "a changed page was not printed again"
    toc.write_text("root: index\nchapters: []\n")
    assert not build.pdf_is_current(html, toc), "a changed table of contents was not seen"
