"""Build the executed book into ``_build/html`` with every browser asset served locally.

``python -m attention_course_instructor.book.build`` is what ``make book`` runs (the instructors'
book, every part of ``_toc.yml``); :mod:`~attention_course_instructor.book.edition` builds the
student edition's with the same function. Steps:

1. install the pinned npm packages listed in ``offline/package.json`` (``npm ci``, first use only);
2. copy the few files the pages need (MathJax, RequireJS, the ipywidgets HTML manager, and the
   course's ``widget-shims.js`` that connects them at any page depth) into
   ``_build/offline_assets/vendor/``, which ``_config.yml`` names in ``html_static_path``;
3. check ``book/outcomes.yml`` against the pages and write the concept index ``book/concepts.md``;
4. build the student package's wheel into ``_build/offline_assets/wheels/`` (served for download),
   byte for byte the same at every build of the same sources (:func:`build_wheel`);
5. write the build's own ``_config.yml``: the repository, Binder and Colab buttons point at
   ``edition.yml``'s ``student_repository`` (none when it is empty), never at this repository,
   and ``html_baseurl`` is the student site's address (:func:`site_url`);
6. empty the execution cache if the student package changed since its pages ran (their outputs
   hold the package's figures, and the cache keys on a page's own code only), then execute the
   pages the cache does not hold, several at a time (:func:`execute_pages`; ``COURSE_BOOK_JOBS``,
   default one per core plus one), into that cache;
7. run ``jupyter-book build`` with warnings as errors: every page comes from the cache (a page
   whose execution failed above is executed again there, and its error reported as usual);
8. print the built pages as one PDF, ``attention-and-transformers.pdf`` beside them
   (:mod:`~attention_course_instructor.book.pdf`).

Nothing is vendored into git and nothing is fetched from a CDN when a reader opens a page.
"""
from __future__ import annotations

import argparse
import contextlib
import copy
import fcntl
import hashlib
import json
import multiprocessing
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import yaml

from attention_course.book.glue import BUILD_VARIABLE
from attention_course_instructor import paths
from attention_course_instructor.book.outcomes import write_index

ROOT = paths.REPO
NPM_DIR = paths.OFFLINE
NODE_MODULES = NPM_DIR / "node_modules"
ASSETS = paths.BUILD / "offline_assets" / "vendor"
WHEELS = paths.BUILD / "offline_assets" / "wheels"     # served as _static/wheels/
HTML = paths.HTML
SETTINGS = ROOT / "edition.yml"                         # student_repository, staff_parts
CACHE = paths.BUILD / ".jupyter_cache"                  # every build of the book shares it

# (source under node_modules, destination under ASSETS, glob of files to keep)
_MATHJAX = "mathjax/es5"
_WIDGETS = "@jupyter-widgets/html-manager/dist"
ASSET_FILES = [
    (f"{_MATHJAX}/tex-chtml.js", "mathjax/tex-chtml.js"),
    (f"{_MATHJAX}/input", "mathjax/input"),
    (f"{_MATHJAX}/output/chtml", "mathjax/output/chtml"),
    (f"{_MATHJAX}/ui", "mathjax/ui"),
    (f"{_MATHJAX}/a11y", "mathjax/a11y"),
    (f"{_MATHJAX}/adaptors", "mathjax/adaptors"),
    ("requirejs/require.js", "requirejs/require.js"),
    (f"{_WIDGETS}/embed-amd.js", "html-manager/embed-amd.js"),
]
# anywidget's front end ships inside the Python package (the same file its CDN serves)
ANYWIDGET_JS = Path(__import__("anywidget").__file__).parent / "nbextension" / "index.js"
SHIMS = Path(__file__).resolve().parent / "static" / "widget-shims.js"
# the book's own page style, script and icon (_config.yml: html_css_files, html_js_files, html_favicon)
PAGE_FILES = [Path(__file__).resolve().parent / "static" / name for name in ("course.css", "course.js", "favicon.svg")]
# webpack emits the widget fonts beside embed-amd.js under hashed names
WIDGET_FONT_SUFFIXES = (".woff2", ".woff", ".ttf", ".eot", ".svg")


BUILD_LOCK = paths.BUILD / ".build.lock"
_held = 0                                               # nested holds of BUILD_LOCK in this process


@contextlib.contextmanager
def one_build_at_a_time():
    """Hold the checkout's build lock: book and wheel builds share ``_build/`` (the execution
    cache, the assets) and setuptools' ``build/``, so processes building at once (parallel test
    workers, a second terminal) take turns. Re-entrant within a process."""
    global _held
    if _held:
        _held += 1
        try:
            yield
        finally:
            _held -= 1
        return
    BUILD_LOCK.parent.mkdir(parents=True, exist_ok=True)
    with open(BUILD_LOCK, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        _held = 1
        try:
            yield
        finally:
            _held = 0
            fcntl.flock(handle, fcntl.LOCK_UN)


def run(cmd: list[str], cwd: Path = ROOT, env: dict | None = None) -> None:
    print("+", " ".join(cmd), flush=True)
    subprocess.run(cmd, cwd=cwd, check=True, env=env)


class BookBuildError(RuntimeError):
    """``jupyter-book build`` failed; the message says why (its warnings and execution reports)."""


# Lines of Sphinx's output that say why a strict build failed. A kernel's notice that it talks
# over local TCP is not one; ANSI colour codes are removed so the reasons read plainly.
_PROBLEM = re.compile(r"WARNING|ERROR|CRITICAL|Traceback|Error\b")
_NOT_A_PROBLEM = re.compile(r"\[IPKernelApp\] WARNING")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
REPORT_TAIL = 15                 # lines of each failed page's execution report in the message
MAX_PROBLEMS = 40                # warning lines in the message (the full log has them all)


# set for every kernel that executes a page for the book: the pages' ``glue`` then hands its values
# to myst-nb; anywhere else (a page's notebook on Colab) it shows them
BOOK_KERNEL_ENV = {BUILD_VARIABLE: "1"}


def run_jupyter_book(cmd: list[str], html: Path = HTML, cwd: Path = ROOT) -> None:
    """Run the build, echoing its output; on failure raise :class:`BookBuildError` naming each
    warning and the end of each failed page's execution report, so a test log that keeps only
    the error's message still says which page broke and how."""
    print("+", " ".join(cmd), flush=True)
    problems, started = [], time.time()
    with subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, errors="replace", env={**os.environ, **BOOK_KERNEL_ENV}) as process:
        for line in process.stdout:
            sys.stdout.write(line)
            plain = _ANSI.sub("", line).rstrip()
            if _PROBLEM.search(plain) and not _NOT_A_PROBLEM.search(plain):
                problems.append(plain)
    if process.returncode == 0:
        return
    reports = []
    for report in sorted((html / "reports").rglob("*.err.log")):
        if report.stat().st_mtime < started:
            continue                     # left by an earlier build
        text = _ANSI.sub("", report.read_text(errors="replace")).rstrip()
        tail = text.splitlines()[-REPORT_TAIL:]
        reports.append(f"--- {report.relative_to(html)} (last {len(tail)} lines) ---")
        reports.extend(tail)
    first = problems[0] if problems else "no warning was printed"
    raise BookBuildError("\n".join([
        f"jupyter-book build failed (exit {process.returncode}): {first}",
        *problems[1:MAX_PROBLEMS], *reports]))


def npm_packages() -> list[str]:
    """The front-end packages ``offline/package.json`` declares (the tests' axe-core too)."""
    declared = json.loads((NPM_DIR / "package.json").read_text())
    return [*declared.get("dependencies", {}), *declared.get("devDependencies", {})]


def install_npm_assets() -> None:
    """Install the pinned front-end packages (``npm ci`` honours package-lock.json) unless every
    declared package is installed already."""
    if all((NODE_MODULES / name / "package.json").exists() for name in npm_packages()):
        return
    if shutil.which("npm") is None:
        sys.exit("npm was not found: install Node.js (e.g. `apt-get install nodejs npm`) and rerun.")
    run(["npm", "ci", "--no-audit", "--no-fund", "--ignore-scripts"], cwd=NPM_DIR)


# html-manager checks each page's saved widget state against its JSON schema with Ajv 8, whose
# strict mode logs two console warnings per page over a union type the schema itself declares
# (`"type": ["string", "number"]` in a buffer path). Its validator is built with Ajv's option for
# exactly that, so widget pages load with a clean console; the schema and the checking are unchanged.
_AJV_CONSTRUCTION = re.compile(r"(\w+)=new\((\w+)\(\)\)([;,](?:\w+=)?\1\.compile\()")
_AJV_OPTIONS = "{allowUnionTypes:true}"


def patch_widget_validator(path: Path) -> None:
    """Build html-manager's schema validator with ``allowUnionTypes`` (see _AJV_CONSTRUCTION)."""
    text = path.read_text()
    if _AJV_OPTIONS in text:
        return
    patched, count = _AJV_CONSTRUCTION.subn(rf"\1=new(\2())({_AJV_OPTIONS})\3", text)
    if count == 0:
        raise RuntimeError(f"{path}: html-manager's Ajv validator was not found; "
                           "has @jupyter-widgets/html-manager changed?")
    path.write_text(patched)


def copy_assets() -> Path:
    """Copy the browser assets the pages load into the static folder of the build."""
    for src, dst in ASSET_FILES:
        source, target = NODE_MODULES / src, ASSETS / dst
        if not source.exists():
            raise FileNotFoundError(f"{source} is missing: run `npm ci` in {NPM_DIR}")
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(source, target, dirs_exist_ok=True)
        else:
            shutil.copy2(source, target)
    for font in (NODE_MODULES / _WIDGETS).iterdir():
        if font.suffix in WIDGET_FONT_SUFFIXES:
            shutil.copy2(font, ASSETS / "html-manager" / font.name)
    patch_widget_validator(ASSETS / "html-manager" / "embed-amd.js")
    shutil.copy2(SHIMS, ASSETS / SHIMS.name)
    for page_file in PAGE_FILES:
        shutil.copy2(page_file, ASSETS / page_file.name)
    (ASSETS / "anywidget").mkdir(exist_ok=True)
    shutil.copy2(ANYWIDGET_JS, ASSETS / "anywidget" / "index.js")
    return ASSETS


def build_wheel(project: Path, out: Path) -> Path:
    """The wheel of ``project`` (the student package: the repository root; the instructor package:
    ``instructor/``) in ``out``. setuptools keeps ``build/`` between builds and would carry a module
    that has since moved out into the next wheel, so that folder is removed first.

    The same sources give the same bytes, on any machine and at any time, so that rebuilding a
    published version cannot change it unnoticed (the student edition refuses a wheel that differs
    from the one it published under the same version): every file is dated
    :func:`source_date_epoch` (``SOURCE_DATE_EPOCH``, which the wheel builder honours), and recorded
    with the permissions of a plain file, whatever the umask of the checkout
    (:func:`normalise_wheel`); the builder writes the files in sorted order itself."""
    out.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "SOURCE_DATE_EPOCH": str(source_date_epoch(project))}
    with one_build_at_a_time():
        shutil.rmtree(project / "build", ignore_errors=True)
        before = {wheel: wheel.stat().st_mtime_ns for wheel in out.glob("*.whl")}
        print("+ SOURCE_DATE_EPOCH=" + env["SOURCE_DATE_EPOCH"], flush=True)
        run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
             "-w", str(out), str(project)], env=env)
        shutil.rmtree(project / "build", ignore_errors=True)
    written = [w for w in out.glob("*.whl") if before.get(w) != w.stat().st_mtime_ns]
    wheel = max(written or out.glob("*.whl"), key=lambda w: w.stat().st_mtime_ns)   # just written
    normalise_wheel(wheel)
    return wheel


EARLIEST_ZIP_TIME = 315532800                  # 1980-01-01 UTC: a zip file records nothing earlier


def wheel_inputs(project: Path) -> list[str]:
    """What a wheel of ``project`` is built from: ``pyproject.toml``, its licence files and the
    top folders of the packages it includes (``[tool.setuptools.packages.find] include``)."""
    try:
        import tomllib
    except ImportError:                         # Python 3.10
        from pip._vendor import tomli as tomllib
    config = tomllib.loads((project / "pyproject.toml").read_text())
    include = config["tool"]["setuptools"]["packages"]["find"]["include"]
    licences = config["project"].get("license-files", [])
    return sorted({"pyproject.toml", *(name.split(".")[0] for name in include),
                   *(pattern.split("/")[0] for pattern in licences)})


def source_date_epoch(project: Path) -> int:
    """The time every file of a wheel of ``project`` is dated: ``SOURCE_DATE_EPOCH`` where it is
    set, else the time of the newest commit that changed what the wheel is built from
    (:func:`wheel_inputs`; a commit elsewhere in the repository changes nothing), else, outside
    a git checkout, 1980-01-01."""
    if os.environ.get("SOURCE_DATE_EPOCH", "").strip():
        return int(os.environ["SOURCE_DATE_EPOCH"])
    done = subprocess.run(["git", "log", "-1", "--format=%ct", "--", *wheel_inputs(project)],
                          cwd=project, capture_output=True, text=True)
    stamp = done.stdout.strip()
    return max(int(stamp), EARLIEST_ZIP_TIME) if done.returncode == 0 and stamp else EARLIEST_ZIP_TIME


def normalise_wheel(wheel: Path) -> None:
    """Record every member of ``wheel`` as a plain file, ``rw-r--r--`` (``rwxr-xr-x`` where its
    owner could execute it). The builder copies each file's mode, which follows the umask of
    whoever checked the sources out; contents, dates, order and RECORD are kept."""
    with zipfile.ZipFile(wheel) as archive:
        members = [(info, archive.read(info)) for info in archive.infolist()]
    modes = [(info.external_attr >> 16) for info, _ in members]
    wanted = [stat.S_IFREG | (0o755 if mode & stat.S_IXUSR else 0o644) for mode in modes]
    if modes == wanted:
        return
    partial = wheel.with_name(wheel.name + ".partial")
    with zipfile.ZipFile(partial, "w") as archive:
        for (info, data), mode in zip(members, wanted):
            info.external_attr = mode << 16
            archive.writestr(info, data)
    partial.replace(wheel)


def build_course_wheel() -> Path:
    """The student package as a wheel, served at ``_static/wheels/`` beside the lab notebooks: the
    labs' first cell installs it where the package is missing (Colab, a laptop)."""
    WHEELS.mkdir(parents=True, exist_ok=True)
    for old in WHEELS.glob("*.whl"):
        old.unlink()
    return build_wheel(ROOT, WHEELS)


def settings() -> dict:
    """``edition.yml``: the public student repository and site, the staff-only parts of the book
    and the pages held back until a lab's feedback is released."""
    return yaml.safe_load(SETTINGS.read_text()) or {}


_GITHUB = re.compile(r"https://github\.com/(?P<owner>[\w.-]+)/(?P<name>[\w.-]+?)(?:\.git)?/?$")


def site_url(options: dict | None = None) -> str:
    """Where the student site is served, ending in ``/``: ``edition.yml``'s ``student_site``, else
    the GitHub Pages site of its ``student_repository``; empty when there is neither. It is the
    book's ``html_baseurl``, and the labs' first cell installs the course wheel from
    ``<site>_static/wheels/`` (:class:`~attention_course_instructor.grading.preprocessors.StampCourseVersion`)."""
    options = settings() if options is None else options
    site = (options.get("student_site") or "").strip()
    if not site:
        match = _GITHUB.match((options.get("student_repository") or "").strip())
        site = f"https://{match['owner'].lower()}.github.io/{match['name']}/" if match else ""
    return site if not site or site.endswith("/") else site + "/"


def book_config(repository: str, base: Path = ROOT / "_config.yml", site: str | None = None) -> dict:
    """The book's ``_config.yml`` with its launch buttons pointing at ``repository`` (the public
    student repository): the repository button, Binder and Colab. With ``repository`` empty, none
    of the three appears. ``html_baseurl`` is ``site`` (default :func:`site_url`; none when
    empty). The execution cache is the one every build of the book shares."""
    config = copy.deepcopy(yaml.safe_load(base.read_text()))
    html, launch = config.setdefault("html", {}), config.setdefault("launch_buttons", {})
    config.setdefault("execute", {})["cache"] = str(CACHE)
    sphinx = config.setdefault("sphinx", {}).setdefault("config", {})
    site = site_url() if site is None else site
    if site:
        sphinx["html_baseurl"] = site
    else:
        sphinx.pop("html_baseurl", None)
    if repository:
        config["repository"] = {"url": repository, "path_to_book": "", "branch": "main"}
        html["use_repository_button"] = True
    else:
        config.pop("repository", None)
        html["use_repository_button"] = False
        launch["binderhub_url"] = launch["colab_url"] = ""
    return config


def student_toc(base: Path = ROOT / "_toc.yml", staff: list[str] | tuple = (),
                leave_out: list[str] | tuple = ()) -> dict:
    """``_toc.yml`` without the parts whose caption is in ``staff`` and the pages (files) in
    ``leave_out``, with what they hold (the student edition's book)."""
    toc = copy.deepcopy(yaml.safe_load(base.read_text()))
    toc["parts"] = [part for part in toc["parts"] if part.get("caption") not in staff]

    def kept(entries):
        return [{**entry, **{key: kept(entry[key]) for key in ("chapters", "sections") if key in entry}}
                for entry in entries if entry.get("file") not in leave_out]

    for part in toc["parts"]:
        part["chapters"] = kept(part.get("chapters", []))
    return toc


def book_pages(toc: dict) -> list[Path]:
    """The executable pages of a table of contents, in its order: MyST notebooks (a ``kernelspec``
    in the front matter) and notebooks not excluded from execution."""
    excluded = yaml.safe_load((ROOT / "_config.yml").read_text())["execute"].get("exclude_patterns", [])
    found = []

    def visit(entries):
        for entry in entries:
            if "file" in entry:
                found.extend(_executable(entry["file"], excluded))
            visit(entry.get("sections", []))
            for part in entry.get("parts", []):
                visit(part.get("chapters", []))

    found.extend(_executable(toc["root"], excluded))
    for part in toc.get("parts", []):
        visit(part.get("chapters", []))
    visit(toc.get("chapters", []))
    return found


def _executable(name: str, excluded: list[str]) -> list[Path]:
    for suffix in (".md", ".ipynb"):
        path = ROOT / f"{name}{suffix}"
        if not path.exists() or any(path.relative_to(ROOT).match(p) for p in excluded):
            continue
        if suffix == ".ipynb" or "kernelspec:" in path.read_text().split("\n---", 1)[0]:
            return [path]
    return []


def _execute_one(path: str, timeout: int) -> tuple[str, dict | None, float, str]:
    """Execute one page as myst-nb would (read by its reader, run in the page's folder); returns
    the executed notebook, or None and the error's name."""
    import nbformat
    from jupyter_cache.executors.utils import single_nb_execution
    from myst_nb.core.read import myst_nb_reader_plugin

    nb = (myst_nb_reader_plugin(path) if path.endswith(".md")
          else nbformat.read(path, as_version=nbformat.NO_CONVERT))
    try:
        result = single_nb_execution(nb, cwd=str(Path(path).parent), allow_errors=False,
                                     timeout=timeout, meta_override=True)
    finally:
        # nbclient catches SIGTERM and SIGINT while a kernel runs; a worker left with SIGTERM
        # caught outlives the pool's terminate, and the suite once hung in Pool.__exit__ on two
        # such workers waiting for the queue's lock that a third, terminated, held
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if result.err is not None:
        return path, None, result.time, type(result.err).__name__
    return path, nb, result.time, ""


FINGERPRINT = CACHE.parent / ".package-fingerprint"    # of the package the cached pages ran


def package_fingerprint() -> str:
    """A digest of the student package's files: the pages' outputs depend on them (a figure's
    JavaScript is saved in the page's output), not only on the pages' own code, which is all the
    execution cache keys on."""
    digest = hashlib.sha256()
    for path in sorted(paths.STUDENT_PACKAGE.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            digest.update(str(path.relative_to(paths.STUDENT_PACKAGE)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def forget_stale_pages() -> bool:
    """Empty the execution cache when the package changed since its pages ran; True if it did
    (the build must then read every page again, not only the changed ones)."""
    fingerprint = package_fingerprint()
    if FINGERPRINT.exists() and FINGERPRINT.read_text() == fingerprint:
        return False
    shutil.rmtree(CACHE, ignore_errors=True)
    FINGERPRINT.parent.mkdir(parents=True, exist_ok=True)
    FINGERPRINT.write_text(fingerprint)
    return True


def execute_pages(pages: list[Path], jobs: int | None = None) -> dict[str, float]:
    """Execute, ``jobs`` at a time, the pages whose code the execution cache does not hold, and
    cache them exactly as myst-nb's cache mode would; returns each executed page's seconds. A
    page that fails is left out of the cache: the build then runs it itself and reports why."""
    import nbformat
    from jupyter_cache import get_cache
    from jupyter_cache.base import CacheBundleIn
    from myst_nb.core.read import myst_nb_reader_plugin

    cache = get_cache(str(CACHE))
    todo = []
    for page in pages:
        nb = (myst_nb_reader_plugin(str(page)) if page.suffix == ".md"
              else nbformat.read(page, as_version=nbformat.NO_CONVERT))
        try:
            cache.match_cache_notebook(nb)
        except KeyError:
            todo.append(str(page))
    if not todo:
        return {}
    jobs = jobs or int(os.environ.get("COURSE_BOOK_JOBS", (os.cpu_count() or 1) + 1))
    timeout = yaml.safe_load((ROOT / "_config.yml").read_text())["execute"].get("timeout", 30)
    print(f"+ executing {len(todo)} page(s), {jobs} at a time", flush=True)
    seconds = {}
    threads = _threads_per_page(min(jobs, len(todo)))
    with multiprocessing.get_context("spawn").Pool(min(jobs, len(todo)), initializer=_as_the_book,
                                                   initargs=(threads,)) as pool:
        for path, nb, took, error in _every_result(pool, _run_page, [(p, timeout) for p in todo]):
            name = Path(path).relative_to(ROOT)
            if nb is None:
                print(f"  {name}: {error} after {took:.0f} s (the build runs it again)", flush=True)
                continue
            cache.cache_notebook_bundle(CacheBundleIn(nb, path, data={"execution_seconds": took}),
                                        check_validity=False, overwrite=True)
            seconds[str(name)] = round(took, 1)
            print(f"  {name}: {took:.0f} s", flush=True)
    return seconds


def _every_result(pool, function, jobs: list):
    """``function`` of each job, as each comes; then the workers are let finish (close and join)
    before the pool is left, so that leaving it never has to terminate a worker still there."""
    yield from pool.imap_unordered(function, jobs)
    pool.close()
    pool.join()


def _threads_per_page(at_once: int) -> int:
    """torch threads for each of ``at_once`` pages executed together: the CPUs shared out, at
    least one. Every kernel taking all of them made the pages wait on each other's spinning
    threads; on 2 cores, 3 pages at a time, idle: 119 s (221 CPU-seconds) with torch's default
    of 2 threads each, 78 s (143) with 1 each."""
    from attention_course.devices import available_cpus

    return max(1, available_cpus() // at_once)


def _as_the_book(threads: int = 1) -> None:
    os.environ.update(BOOK_KERNEL_ENV)         # for the kernels this worker starts
    os.environ.setdefault("OMP_NUM_THREADS", str(threads))     # a reader's own setting wins


def _run_page(args: tuple[str, int]):
    return _execute_one(*args)


def build_book(strict: bool = True, output: Path = ROOT, repository: str | None = None,
               toc: dict | None = None) -> Path:
    """Build the book into ``<output>/_build/html`` and return the path of its front page.

    ``repository`` is where its launch buttons point (default: ``edition.yml``'s
    ``student_repository``); ``toc`` replaces ``_toc.yml`` (the student edition leaves out the
    staff's part). One build at a time per checkout (:func:`one_build_at_a_time`)."""
    with one_build_at_a_time():
        return _build_book(strict, output, repository, toc)


def _build_book(strict: bool, output: Path, repository: str | None, toc: dict | None) -> Path:
    write_index()                 # checks book/outcomes.yml against the pages, then the index page
    install_npm_assets()
    copy_assets()
    build_course_wheel()
    if repository is None:
        repository = settings().get("student_repository", "")
    generated = output / "_build" / "book-config"
    generated.mkdir(parents=True, exist_ok=True)
    config = generated / "_config.yml"
    config.write_text(yaml.safe_dump(book_config(repository), sort_keys=False))
    jb = Path(sys.executable).with_name("jupyter-book")
    cmd = [str(jb), "build", str(ROOT), "--path-output", str(output), "--config", str(config)]
    if toc is not None:
        (generated / "_toc.yml").write_text(yaml.safe_dump(toc, sort_keys=False))
        cmd += ["--toc", str(generated / "_toc.yml")]
    if forget_stale_pages():
        cmd.append("--all")                   # pages whose text is unchanged are read again too
    execute_pages(book_pages(toc if toc is not None else yaml.safe_load((ROOT / "_toc.yml").read_text())))
    if strict:
        cmd += ["-W", "-n", "--keep-going"]
    html = output / "_build" / "html"
    run_jupyter_book(cmd, html=html)
    print_the_pdf(html, generated / "_toc.yml" if toc is not None else ROOT / "_toc.yml")
    return html / "index.html"


PDF_STAMP = ".pdf-printed-from"   # beside the pages' folder: the digest of what the PDF was printed from


def print_the_pdf(html: Path, toc: Path) -> None:
    """Step 8: the same pages as one PDF (:mod:`~attention_course_instructor.book.pdf`), which the
    front page offers for download; in a process of its own, as Playwright's browser driver
    cannot start inside a caller's (a test's) running one. Without Chromium (``make book``
    installs it as root) the book is built without it, and says so."""
    if shutil.which("chromium") is None:
        print("! no PDF edition: chromium is not installed (apt-get install chromium)", flush=True)
        return
    if pdf_is_current(html, toc):
        print("The book as a PDF: unchanged (nothing it is printed from changed since)", flush=True)
        return
    (html.parent / PDF_STAMP).unlink(missing_ok=True)
    run([sys.executable, "-m", "attention_course_instructor.book.pdf", "--html", str(html),
         "--toc", str(toc)])
    (html.parent / PDF_STAMP).write_text(pdf_sources_digest(html, toc))


def pdf_sources_digest(html: Path, toc: Path) -> str:
    """A digest of what the PDF is printed from: every file of the built book (but the PDF), the
    table of contents and the printing code."""
    from attention_course_instructor.book import pdf as printing

    digest = hashlib.sha256()
    files = sorted(f for f in html.rglob("*")
                   if f.is_file() and not f.name.startswith(Path(printing.PDF_NAME).stem))
    for f in [*files, toc, Path(printing.__file__)]:
        digest.update(str(f.relative_to(html) if f.is_relative_to(html) else f.name).encode())
        digest.update(hashlib.sha256(f.read_bytes()).digest())
    return digest.hexdigest()


def pdf_is_current(html: Path, toc: Path) -> bool:
    """Whether the PDF beside the pages was printed from the book as it is now (a build with
    nothing to do changes no page, but Sphinx writes some of its files again: their contents are
    compared, not their times)."""
    from attention_course_instructor.book import pdf as printing

    stamp = html.parent / PDF_STAMP
    return ((html / printing.PDF_NAME).exists() and stamp.exists()
            and stamp.read_text() == pdf_sources_digest(html, toc))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-strict", action="store_true", help="do not treat warnings as errors")
    args = parser.parse_args(argv)
    try:
        index = build_book(strict=not args.no_strict)
    except BookBuildError as error:
        sys.exit(f"\n{error}")
    print(f"\nThe book is built. Open file://{index} in a browser,")
    # the port the README gives (8000 is the course hub's)
    print(f"or serve it: {sys.executable} -m http.server -d {HTML} 8080  ->  http://localhost:8080")


if __name__ == "__main__":
    main()
