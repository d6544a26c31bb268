"""The built book in headless Chromium with the network unavailable.

Debian's Chromium (installed by `make test`), driven by Playwright for Python through
``executable_path`` -- no browser is downloaded. Host names other than localhost do not resolve,
and any request that is not for the local site is aborted and recorded as a failure.
A screenshot of every tested page is kept under ``_build/screenshots/`` for review.
"""
from __future__ import annotations

import functools
import http.server
import threading
from urllib.parse import urlparse

import pytest

from conftest import REPO, require_tool

pytestmark = [pytest.mark.slow, pytest.mark.browser]
SHOTS = REPO / "_build" / "screenshots"
PAGES = ["index.html", "book/chapter8/index.html", "labs/lab8/lab8.html"]
# sphinx-thebe declares this constant in two scripts of every page; harmless, known upstream.
KNOWN_CONSOLE_NOISE = ("THEBE_JS_URL",)
LOCAL_HOSTS = {"127.0.0.1", "localhost", ""}


@pytest.fixture(scope="session")
def site(built_book):
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(built_book))
    handler.log_message = lambda *args: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


@pytest.fixture(scope="session")
def browser():
    chromium = require_tool("chromium")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium, args=[
            "--no-sandbox", "--disable-gpu", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--no-first-run",
            "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.0.0.1"])
        yield b
        b.close()


class Visit:
    """An opened page with the requests and console errors it produced."""

    def __init__(self, browser, url, shot_name):
        self.external, self.errors = [], []
        self.context = browser.new_context(viewport={"width": 1280, "height": 1600})
        self.page = self.context.new_page()
        self.page.route("**/*", self._route)
        self.page.on("console", lambda m: m.type == "error" and self.errors.append(m.text))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.goto(url, wait_until="networkidle")
        self.page.wait_for_timeout(1500)                 # MathJax typesets after load
        SHOTS.mkdir(parents=True, exist_ok=True)
        self.page.screenshot(path=str(SHOTS / shot_name), full_page=True)

    def _route(self, route):
        url = urlparse(route.request.url)
        if url.scheme in ("file", "data", "blob") or url.hostname in LOCAL_HOSTS:
            route.continue_()
        else:
            self.external.append(route.request.url)
            route.abort()

    def real_errors(self):
        return [e for e in self.errors if not any(n in e for n in KNOWN_CONSOLE_NOISE)]


@pytest.fixture
def visit(browser):
    opened = []

    def open_page(url, shot):
        v = Visit(browser, url, shot)
        opened.append(v)
        return v

    yield open_page
    for v in opened:
        v.context.close()


@pytest.mark.parametrize("page", PAGES)
@pytest.mark.parametrize("scheme", ["http", "file"])
def test_page_renders_offline(visit, site, built_book, page, scheme):
    base = site if scheme == "http" else built_book.as_uri()
    v = visit(f"{base}/{page}", f"{scheme}-{page.replace('/', '_')}.png")
    assert v.external == [], f"requests left the machine: {v.external}"
    assert v.real_errors() == [], f"console errors: {v.real_errors()}"
    text = v.page.inner_text("article")
    assert "$$" not in text and "\\frac" not in text, "raw TeX is visible"
    broken = v.page.evaluate(
        "[...document.images].filter(i => !i.complete || i.naturalWidth === 0).map(i => i.src)")
    assert broken == [], f"figures that did not load: {broken}"


def test_chapter_math_and_widget(visit, site):
    v = visit(f"{site}/book/chapter8/index.html", "chapter8-widget.png")
    assert v.page.locator("mjx-container").count() >= 3, "MathJax did not typeset the page"
    assert v.page.locator("article img").count() >= 1, "the computed figure is missing"
    slider = v.page.locator(".widget-slider").first
    slider.wait_for(state="visible", timeout=10_000)
    echo = v.page.locator(".widget-text input").first
    assert echo.input_value() == "16"            # rendered from the widget state saved in the page
    handle = v.page.locator(".ui-slider-handle, .noUi-handle").first
    handle.focus()
    handle.press("ArrowRight")                   # the jslink runs in the browser, no kernel
    v.page.wait_for_timeout(300)
    assert echo.input_value() == "20"
