"""The built book opened from disk (every page's links and resources read as files; one page of
each kind in Chromium), and the book's widget and search in headless Chromium with the network
unavailable.

Debian's Chromium (installed by `make test`), driven by Playwright for Python through
``executable_path`` -- no browser is downloaded. Host names other than localhost do not resolve,
and any request that is not for the local site is aborted and recorded as a failure.
A screenshot of every tested page is kept under ``_build/screenshots/`` for review.
"""
from __future__ import annotations

import hashlib
import json
import re
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest

pytestmark = pytest.mark.slow


# ---- every page, read as files: what it loads and links to is where a file:// URL looks --------

LOADS = {"script": "src", "img": "src", "iframe": "src", "source": "src", "video": "src",
         "audio": "src", "embed": "src", "object": "data"}
LOADING_RELS = {"stylesheet", "icon", "preload", "modulepreload", "manifest", "prefetch"}
WIDGET_STATE = re.compile(r'<script type="application/vnd\.jupyter\.widget-state\+json">(.*?)</script>', re.S)


class _Targets(HTMLParser):
    """(tag, url) of each resource a page loads and each link it offers, and its scripts."""

    def __init__(self):
        super().__init__()
        self.targets, self.scripts = [], set()

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag in LOADS and a.get(LOADS[tag]):
            self.targets.append((tag, a[LOADS[tag]]))
        for candidate in (a.get("srcset") or "").split(","):
            if candidate.strip():
                self.targets.append((tag, candidate.split()[0]))
        if tag == "link" and set((a.get("rel") or "").split()) & LOADING_RELS and a.get("href"):
            self.targets.append((tag, a["href"]))
        elif tag in ("a", "link") and a.get("href"):               # a link: read when followed
            self.targets.append(("a" if tag == "a" else f"link {a.get('rel')}", a["href"]))
        if tag == "script":
            self.scripts.add(re.sub(r"^(\.\./)+", "", a.get("src") or f"inline {a.get('type', '')}"))
        if tag == "link" and "stylesheet" in (a.get("rel") or ""):
            self.scripts.add(re.sub(r"^(\.\./)+", "", a.get("href", "")))


def read_page(path: Path) -> _Targets:
    parser = _Targets()
    parser.feed(path.read_text(encoding="utf-8"))
    return parser


def from_disk_problems(path: Path, root: Path) -> list[str]:
    """What would go wrong with ``path`` opened from disk: a URL from the site's root or with no
    scheme's host (from disk they point into the file system's root), a resource from another
    machine, a local file that is not there, a link to a folder (which a browser lists from disk,
    where a web server would serve its index.html)."""
    found = []
    for tag, url in read_page(path).targets:
        parts = urlparse(url)
        if parts.scheme in ("http", "https", "mailto", "data", "blob", "javascript") or url.startswith("#"):
            if parts.scheme in ("http", "https") and not tag.startswith(("a", "link ")):
                found.append(f"<{tag}> loads {url} from another machine")
            continue
        if url.startswith("/"):
            found.append(f"<{tag}> {url}: from the site's root, which from disk is the file system's")
            continue
        target = (path.parent / unquote(parts.path)).resolve()
        if not target.is_relative_to(root.resolve()):
            found.append(f"<{tag}> {url}: outside the book")
        elif not target.exists():
            found.append(f"<{tag}> {url}: no such file")
        elif target.is_dir():
            found.append(f"<{tag}> {url}: a folder (from disk a browser lists it)")
    return found


def built_pages(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.html") if not p.relative_to(root).parts[0].startswith("_"))


def test_every_page_points_only_at_files_of_the_book(built_book):
    assert len(built_pages(built_book)) >= 25
    found = {str(p.relative_to(built_book)): from_disk_problems(p, built_book) for p in built_pages(built_book)}
    assert {page: problems for page, problems in found.items() if problems} == {}


def test_the_file_check_finds_each_planted_fault(tmp_path):
    (tmp_path / "_static").mkdir()
    (tmp_path / "_static" / "app.js").write_text("")
    (tmp_path / "chapter").mkdir()
    page = tmp_path / "page.html"
    page.write_text('<script src="_static/app.js"></script><a href="https://example.org/">fine</a>'
                    '<script src="/_static/app.js"></script><img src="missing.png">'
                    '<a href="chapter/">a folder</a><link rel="stylesheet" href="https://cdn.example/x.css">'
                    '<img srcset="_static/app.js 1x, gone.png 2x"><a href="../elsewhere.html">out</a>')
    assert from_disk_problems(page, tmp_path) == [
        "<script> /_static/app.js: from the site's root, which from disk is the file system's",
        "<img> missing.png: no such file", "<a> chapter/: a folder (from disk a browser lists it)",
        "<link> loads https://cdn.example/x.css from another machine", "<img> gone.png: no such file",
        "<a> ../elsewhere.html: outside the book"]


# ---- one page of each kind, opened from disk in Chromium ---------------------------------------
# Served over HTTP, every page is read (and checked as it renders) by test_accessibility_browser.py.
# From disk, what can differ between two pages that point only at files of the book (above) is
# what runs: the scripts and style sheets they load, and the code of their figures (each figure
# kind's module, in the page's widget state). One page of each is opened here.

def kind(path: Path) -> set[str]:
    """The scripts and style sheets a page loads, and the digests of its figures' modules."""
    text = path.read_text(encoding="utf-8")
    modules = {hashlib.sha256(model["state"]["_esm"].encode()).hexdigest()[:12]
               for state in WIDGET_STATE.findall(text) for model in json.loads(state)["state"].values()
               if isinstance(model.get("state", {}).get("_esm"), str)}
    return {f"module {m}" for m in modules} | {"loads " + " ".join(sorted(read_page(path).scripts))}


def one_of_each_kind(root: Path) -> list[str]:
    """The fewest pages, in the book's order of folders, that between them load every set of
    scripts and style sheets any page loads and every figure module."""
    chosen, seen = [], set()
    for page in sorted(built_pages(root), key=lambda p: (len(p.relative_to(root).parts), str(p))):
        new = kind(page) - seen
        if new:
            chosen.append(str(page.relative_to(root)))
            seen |= new
    return chosen


@pytest.mark.browser
def test_one_page_of_each_kind_renders_offline_from_disk(visit, built_book):
    pages = one_of_each_kind(built_book)
    assert "index.html" in pages and len(pages) >= 8, pages            # the kinds are many
    every = set().union(*(kind(p) for p in built_pages(built_book)))
    assert set().union(*(kind(built_book / p) for p in pages)) == every
    found = {page: visit(f"{built_book.as_uri()}/{page}", f"file-{page.replace('/', '_')}.png")
             .rendering_problems() for page in pages}
    assert {page: problems for page, problems in found.items() if problems} == {}


PAGE = ('<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{title}</title>{head}'
        '</head><body><main><p>{title}</p></main></body></html>')


@pytest.mark.browser
@pytest.mark.parametrize("hops, delay_s", [(8, 0), (2, 1)])
def test_a_visit_looks_at_the_page_the_reader_is_sent_on_to(visit, tmp_path, hops, delay_s):
    """The book's front page sends the reader on (a meta refresh), as planted pages do here:
    many in a row at once (each one ends an evaluation in the browser) or after a second (a page
    with nothing to draw would otherwise be looked at before it sends the reader on)."""
    for hop in range(hops):
        refresh = f'<meta http-equiv="Refresh" content="{delay_s}; url={hop + 1}.html" />'
        (tmp_path / f"{hop}.html").write_text(PAGE.format(title=f"hop {hop}", head=refresh))
    (tmp_path / f"{hops}.html").write_text(PAGE.format(title="arrived", head=""))
    v = visit((tmp_path / "0.html").as_uri(), None)
    assert (v.page.title(), v.page.url) == ("arrived", (tmp_path / f"{hops}.html").as_uri())
    assert v.rendering_problems() == []


@pytest.mark.browser
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


@pytest.mark.browser
@pytest.mark.parametrize("width", [1280, 375])
def test_one_way_into_the_search(visit, site, width):
    v = visit(f"{site}/book/chapter8/index.html", None, width=width)
    assert v.page.evaluate(VISIBLE_SEARCH) == 1


@pytest.mark.browser
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
