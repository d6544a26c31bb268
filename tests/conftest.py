"""Shared fixtures: the nbgrader pipeline harness, usable by every lab's tests."""
from __future__ import annotations

import functools
import http.server
import os
import shutil
import threading
import time
from pathlib import Path
from urllib.parse import urlparse

import nbformat
import pytest

import nbgrader_harness as harness

REPO = harness.REPO


# The test files that take longest, longest first: `make test` gives each file whole to one of its
# pytest-xdist workers in collection order, and a long file handed out last would keep one worker
# busy while the others idle. Each file's share of a clean-clone run on 2 cores, 2026-12-06
# (worker-seconds, benchmarks/results/dev_loop.md): hardened grading 498 with the Dask cluster's
# part, the accessibility sweep 478 (the book's build included; first, so that the book is built
# early for the other browser tests), the labs' pipelines 227, consistency 202, the hub 179, the
# edition 164, Lab 12's hardened grading 120, LTI 112, isolation 108.
LONGEST_FIRST = ("test_accessibility_browser.py", "test_hardened_grading.py", "test_lab_pipelines.py",
                 "test_grading_consistency.py", "test_hub.py", "test_student_edition.py",
                 "test_hardened_lab12.py", "test_hub_lti.py", "test_grading_isolation.py",
                 "test_student_notebooks.py", "test_figures_browser.py", "test_book_browser.py",
                 "test_class_report.py", "test_pretrained.py")


def pytest_collection_modifyitems(config, items):
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))       # stable within a file


@pytest.fixture(scope="session", autouse=True)
def shared_by_the_run(tmp_path_factory):
    """A folder that every pytest-xdist worker of this test run shares (the run's own temporary
    folder, which pytest removes a few runs later), where the nbgrader harness keeps what it makes
    once per run: each lab's generated release, solutions and gradebook."""
    base = tmp_path_factory.getbasetemp()
    shared = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "shared-by-the-run"
    shared.mkdir(exist_ok=True)
    os.environ[harness.SHARED_VARIABLE] = str(shared)
    return shared


@pytest.fixture(scope="session", autouse=True)
def a_workers_share_of_the_cores():
    """Under `make test` the workers run side by side: torch in a worker's own process (the
    checkpoints' retraining, the models' tests) takes its share of the cores, not all of them,
    whose threads would spin waiting on each other. The reduced retraining of the checkpoints,
    alone on 2 cores: 49 s and 97 CPU-seconds with 2 threads, 55 s and 58 with 1. Processes the
    tests start set their own (the labs, the book's pages, the grader's kernels)."""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    if workers > 1:
        import torch

        from attention_course.devices import available_cpus

        torch.set_num_threads(max(1, available_cpus() // workers))


def load_nb(path) -> nbformat.NotebookNode:
    return nbformat.read(str(path), as_version=4)


class GradedAssignment:
    """One assignment taken through the pipeline in a temporary course.

    ``release`` and ``solutions`` are generated afresh from ``source/``; ``grade(notebook)``
    submits a notebook as a new student, autogrades and returns the gradebook scores.
    """

    def __init__(self, tmp: Path, source: Path, assignment: str):
        self.assignment = assignment
        self.source_nb_path = source / f"{assignment}.ipynb"
        self.course = harness.make_course(tmp, source, assignment)
        self.release, self.solutions = harness.generate(self.course, assignment)
        self.notebook = f"{assignment}.ipynb"

    def grade(self, submissions: dict[str, Path]) -> dict[str, dict[str, harness.CellScore]]:
        for student, nb in submissions.items():
            harness.submit(self.course, self.assignment, student, nb)
        harness.autograde(self.course, self.assignment)
        return {s: harness.scores(self.course, self.assignment, s) for s in submissions}


@pytest.fixture(scope="session")
def graded_assignment(tmp_path_factory):
    """Factory: ``graded_assignment(source_dir, name)`` -> GradedAssignment (cached per session)."""
    cache = {}

    def make(source: Path, assignment: str) -> GradedAssignment:
        key = (str(source), assignment)
        if key not in cache:
            cache[key] = GradedAssignment(tmp_path_factory.mktemp(assignment), Path(source),
                                          assignment)
        return cache[key]

    return make


def require_tool(name: str) -> str:
    """Path of an executable; skip locally when missing, fail in CI (where set-up installs it)."""
    path = shutil.which(name)
    if path is None:
        if os.environ.get("CI"):
            pytest.fail(f"{name} is required in CI (make test installs it)")
        pytest.skip(f"{name} is not installed")
    return path


@pytest.fixture(scope="session")
def built_book():
    """The book built once per test run, exactly as `make book` builds it (strict, cached). Under
    pytest-xdist the first worker that needs it builds it; the others wait for that build."""
    from attention_course_instructor.book import build

    run = os.environ.get("PYTEST_XDIST_TESTRUNUID", "")
    stamp = build.paths.BUILD / ".book-built-for-test-run"
    with build.one_build_at_a_time():
        if not (run and stamp.exists() and stamp.read_text() == run and build.HTML.exists()):
            stamp.unlink(missing_ok=True)
            assert build.build_book().exists()
            if run:
                stamp.write_text(run)
    return build.HTML


@pytest.fixture(scope="session")
def axe_script():
    """axe-core's script, from the pinned npm packages (installed on first use, under the book
    build's lock, so that a worker building the book and one needing axe never race in npm ci)."""
    from attention_course_instructor.book import build

    with build.one_build_at_a_time():
        build.install_npm_assets()
    return build.NODE_MODULES / "axe-core" / "axe.min.js"


# ---- the built book in headless Chromium (Debian's, driven by Playwright; nothing downloaded) ----
SHOTS = REPO / "_build" / "screenshots"
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


# Resolves once MathJax has typeset the page (where it loads) and every widget view of the page
# has drawn its figure, or after 10 s: a page is looked at as a reader sees it, without a fixed wait.
DRAWN = """() => new Promise((done) => {
  const start = Date.now();
  const views = document.querySelectorAll('script[type="application/vnd.jupyter.widget-view+json"]');
  const mathjax = document.querySelector('script[src*="mathjax"]');
  const leaving = document.querySelector('meta[http-equiv="refresh" i]');   // the page sends on
  (function check() {
    const mj = window.MathJax;
    const typeset = !mathjax || (mj && mj.startup && mj.startup.promise);
    const drawn = document.querySelectorAll(".course-fig").length >= views.length;
    if ((!leaving && typeset && drawn) || Date.now() - start > 10000) {
      Promise.resolve(typeset && mj && mj.startup ? mj.startup.promise : null).then(() => done(true));
      return;
    }
    setTimeout(check, 50);
  })();
})"""


# every url() of every @font-face rule the page's style sheets declare, resolved
FONT_URLS = """() => [...document.styleSheets]
  .flatMap((sheet) => { try { return [...sheet.cssRules]; } catch (e) { return []; } })
  .filter((rule) => rule instanceof CSSFontFaceRule)
  .flatMap((rule) => [...rule.style.getPropertyValue("src").matchAll(/url\\("?([^")]+)"?\\)/g)]
    .map((match) => new URL(match[1], rule.parentStyleSheet.href || document.baseURI).href))"""


# how long a visit follows pages that send the reader on (a meta refresh) before it gives up
FOLLOW_S = 60

# how long a page's network must be quiet, after it has drawn, before it is looked at
QUIET_MS = 150


class Visit:
    """An opened page with the requests, console errors and warnings it produced."""

    def __init__(self, browser, url, shot_name, width=1280):
        self.external, self.errors = [], []
        self.context = browser.new_context(viewport={"width": width, "height": 1600})
        self.page = self.context.new_page()
        self.page.route("**/*", self._route)
        # a clean console: errors and warnings both count (html-manager's schema warnings did)
        self.page.on("console", lambda m: m.type in ("error", "warning")
                     and self.errors.append(f"{m.type}: {m.text}"))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        # the console says only "Failed to load resource"; this names the file
        self.page.on("requestfailed", lambda r: self.errors.append(
            f"request failed: {r.url} ({r.failure})"))
        self.requests, self.pending = 0, set()
        self.page.on("request", self._started)
        self.page.on("requestfinished", lambda r: self.pending.discard(r))
        self.page.on("requestfailed", lambda r: self.pending.discard(r))
        self.page.goto(url, wait_until="load")
        self.wait_until_drawn()
        self.wait_for_quiet_network()
        if shot_name:                                    # None: no screenshot
            SHOTS.mkdir(parents=True, exist_ok=True)
            self.page.screenshot(path=str(SHOTS / shot_name), full_page=True)

    def wait_until_drawn(self) -> None:
        """Typeset and every figure drawn, on the page the visit ends at: a page that sends the
        reader on (the book's front page redirects) is followed."""
        from playwright.sync_api import Error

        deadline = time.monotonic() + FOLLOW_S
        while True:
            try:
                self.page.evaluate(DRAWN)   # waits out a page that sends the reader on (10 s at most)
                return
            except Error as error:
                # the page navigated away mid-evaluation: look again once the next page loads,
                # however many pages (and however quickly the failures come) on a busy machine
                if "context was destroyed" not in str(error) or time.monotonic() > deadline:
                    raise
                self.page.wait_for_timeout(50)
                self.page.wait_for_load_state("load")

    def _started(self, request) -> None:
        self.requests += 1
        self.pending.add(request)

    def wait_for_quiet_network(self, quiet_ms: int = QUIET_MS, at_most_ms: int = 30_000) -> None:
        """Until no request has been open or begun for ``quiet_ms``: what Playwright's
        ``networkidle`` waits for (500 ms of it), checked here after the page has drawn, so a
        shorter quiet time suffices. A page still loading after ``at_most_ms`` is looked at as it is
        (what did not load is then a rendering problem)."""
        waited = 0
        while waited < at_most_ms:
            before = self.requests
            self.page.wait_for_timeout(quiet_ms)
            waited += quiet_ms
            if not self.pending and self.requests == before:
                return

    def _route(self, route):
        url = urlparse(route.request.url)
        if url.scheme in ("file", "data", "blob") or url.hostname in LOCAL_HOSTS:
            route.continue_()
        else:
            self.external.append(route.request.url)
            route.abort()

    def console_problems(self):
        return list(self.errors)

    def rendering_problems(self) -> list[str]:
        """What a reader would see go wrong: requests that left the machine, console errors or
        warnings, raw TeX, figures that did not load."""
        problems = [f"request left the machine: {url}" for url in self.external]
        problems += [f"console: {error}" for error in self.errors]
        text = self.page.inner_text("article") if self.page.locator("article").count() else ""
        if "$$" in text or "\\frac" in text:
            problems.append("raw TeX is visible")
        broken = self.page.evaluate(
            "[...document.images].filter(i => !i.complete || i.naturalWidth === 0).map(i => i.src)")
        problems += [f"figure did not load: {src}" for src in broken]
        # a font is fetched only when a glyph needs it, so a misplaced one fails now and then;
        # where each declared font would come from is known as soon as its style sheet loads
        return problems + [f"a font is declared outside _static/: {url}"
                           for url in self.page.evaluate(FONT_URLS) if "/_static/" not in url]


@pytest.fixture
def visit(browser):
    opened = []

    def open_page(url, shot, width=1280):
        v = Visit(browser, url, shot, width)
        opened.append(v)
        return v

    yield open_page
    for v in opened:
        v.context.close()


