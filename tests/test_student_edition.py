"""The course published to students without its answers: the package split by audience, the
student edition read as an attacker would, versioned wheels, the book's launch buttons.

The expensive parts are built once per session: the student edition (the book built for students
from the shared execution cache) and a virtual environment holding only the student wheel and
what it declares.
"""
from __future__ import annotations

import functools
import hashlib
import html
import http.server
import importlib.metadata as metadata
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
import zipfile
from pathlib import Path

import nbformat
import pytest
import yaml
from nbclient import NotebookClient
from packaging.requirements import Requirement

from attention_course import __version__
from attention_course_instructor.book import build, edition, leaks
from conftest import REPO
from test_launch_paths import fresh_env, with_answers

LABS = edition.LABS
STUDENT_REPOSITORY = build.settings()["student_repository"]


# ---- the student wheel ---------------------------------------------------------------------------

@pytest.fixture(scope="session")
def student_wheel(tmp_path_factory) -> Path:
    return build.build_wheel(REPO, tmp_path_factory.mktemp("wheel"))


def test_the_student_wheel_holds_no_grading_or_build_module(student_wheel):
    members = zipfile.ZipFile(student_wheel).namelist()
    assert "attention_course/core/readers.py" in members           # it is the student package
    assert leaks.forbidden_files(student_wheel.parent) == []
    assert not [m for m in members if re.search(r"grading|instructor|book/(build|outcomes|sphinx)", m)]


def test_the_wheel_check_finds_a_planted_grading_module(tmp_path):
    planted = tmp_path / "attention_course-0.0.1-py3-none-any.whl"
    with zipfile.ZipFile(planted, "w") as archive:
        archive.writestr("attention_course/core/readers.py", "")
        archive.writestr("attention_course/grading/checks.py", "")
        archive.writestr("attention_course/book/build.py", "")
    assert leaks.forbidden_files(tmp_path) == [
        f"{planted.name}!attention_course/grading/checks.py", f"{planted.name}!attention_course/book/build.py"]


def dependency_closure(requirements: list[str], extras: tuple = ()) -> set[str]:
    """The installed distributions that ``requirements`` need, transitively (markers evaluated)."""
    seen, todo = set(), [Requirement(r) for r in requirements]
    while todo:
        req = todo.pop()
        if req.marker and not any(req.marker.evaluate({"extra": e}) for e in ("", *extras)):
            continue
        name = req.name.lower().replace("_", "-")
        if name in seen:
            continue
        seen.add(name)
        todo += [Requirement(r) for r in metadata.requires(req.name) or []
                 if "extra ==" not in r or any(f'extra == "{e}"' in r for e in req.extras)]
    return seen


def link_distributions(names: set[str], site: Path) -> None:
    """Make each installed distribution of ``names`` importable from ``site`` (links to its files)."""
    for name in names:
        dist = metadata.distribution(name)
        top = {Path(str(f)).parts[0] for f in dist.files or [] if not str(f).startswith("..")}
        root = Path(dist.locate_file(""))
        for entry in top:
            source, target = root / entry, site / entry
            if source.exists() and not target.exists():
                target.symlink_to(source)


def declared_venv(folder: Path, wheel: Path, leave_out: tuple = ()) -> Path:
    """A venv in ``folder`` holding ``wheel``, what its metadata declares (less ``leave_out``) and
    their requirements, and the kernel a notebook runs in (ipykernel's): nothing else of this
    environment, no repository. Returns its python."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder / "venv")], check=True)
    site = next((folder / "venv" / "lib").glob("python3*/site-packages"))
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index",
                    "--target", str(site), str(wheel)], check=True)
    declared = metadata.Distribution.at(next(site.glob("attention_course-*.dist-info"))).requires
    kept = [r for r in declared if Requirement(r).name not in leave_out]
    link_distributions(dependency_closure(kept + ["ipykernel"]), site)
    return folder / "venv" / "bin" / "python"


@pytest.fixture(scope="session")
def declared_env(student_wheel, tmp_path_factory):
    """The declared venv, and a Jupyter path whose kernel ``declared`` runs in it."""
    folder = tmp_path_factory.mktemp("declared")
    python = declared_venv(folder, student_wheel)
    kernels = folder / "share" / "jupyter" / "kernels" / "declared"
    kernels.mkdir(parents=True)
    (kernels / "kernel.json").write_text(json.dumps({
        "argv": [str(python), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "student wheel only", "language": "python"}))
    return python, folder / "share" / "jupyter"


def import_all(python: Path, modules: list[str], cwd: Path) -> subprocess.CompletedProcess:
    code = (f"import importlib\nfor m in {modules!r}: importlib.import_module(m)\n"
            "import attention_course; print(attention_course.__file__)")
    return subprocess.run([str(python), "-c", code], cwd=cwd, capture_output=True, text=True,
                          env={"PATH": "/usr/bin:/bin"})


def student_modules(wheel: Path) -> list[str]:
    return sorted(m[:-3].replace("/", ".").removesuffix(".__init__")
                  for m in zipfile.ZipFile(wheel).namelist() if m.endswith(".py"))


@pytest.mark.slow
def test_every_module_imports_with_only_the_declared_dependencies(declared_env, student_wheel, tmp_path):
    python, _ = declared_env
    modules = student_modules(student_wheel)
    assert "attention_course.book.figures.qkv" in modules and len(modules) > 40
    done = import_all(python, modules, tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert str(python.parents[1]) in done.stdout              # the wheel's copy, not the checkout's
    nothing = subprocess.run([str(python), "-c", "import nbgrader"], capture_output=True, text=True)
    assert nothing.returncode != 0, "the declared environment sees undeclared packages"


@pytest.mark.slow
def test_an_import_the_wheel_does_not_declare_is_caught(student_wheel, tmp_path):
    """Planted: the same wheel as if it did not declare rapidfuzz (Lab 8's edit distance check)."""
    python = declared_venv(tmp_path, student_wheel, leave_out=("rapidfuzz",))
    done = import_all(python, student_modules(student_wheel), tmp_path)
    assert done.returncode != 0 and "No module named 'rapidfuzz'" in done.stderr


@pytest.mark.slow
@pytest.mark.parametrize("lab", LABS)
def test_a_released_lab_runs_with_only_the_student_wheel(declared_env, lab, tmp_path, monkeypatch):
    _, jupyter_path = declared_env
    monkeypatch.setenv("JUPYTER_PATH", str(jupyter_path))
    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")          # grading-length training
    nb = with_answers(nbformat.read(REPO / "labs" / lab / f"{lab}.ipynb", as_version=4), lab)
    client = NotebookClient(nb, kernel_name="declared", timeout=600,
                            resources={"metadata": {"path": str(tmp_path)}})
    client.execute()
    said = "".join(o.get("text", "") for c in nb.cells for o in c.get("outputs", []))
    assert "The course package is missing" not in said              # the wheel was there already


# ---- the student edition, read as an attacker would -------------------------------------------

@pytest.fixture(scope="session")
def student_edition(tmp_path_factory) -> Path:
    """The edition as ``make edition AFRESH=1`` writes it, a student repository's first (it refuses
    to finish on any finding)."""
    return edition.build_edition(tmp_path_factory.mktemp("edition") / "student-repository", afresh=True)


@pytest.mark.slow
def test_the_edition_holds_what_students_need(student_edition):
    out = student_edition
    for path in ("README.md", "LICENSE", "LICENSES/CC-BY-4.0.txt", "LICENSES/MIT.txt", "REUSE.toml",
                 "CHANGELOG.md", "CITATION.cff", "docs/index.html", "docs/.nojekyll",
                 "docs/labs/lab8/lab8.html", "labs/lab8/lab8.ipynb", "labs/lab12/lab12.ipynb",
                 "book/chapter8/self-attention.md", f"wheels/{edition.wheel_name()}",
                 f"docs/_static/wheels/{edition.wheel_name()}", "binder/postBuild",
                 "binder/requirements.txt"):
        assert (out / path).is_file(), path
    post = (out / "binder" / "postBuild").read_text()
    assert f"pip install --quiet --no-deps wheels/{edition.wheel_name()}" in post
    assert "install --quiet --no-deps --no-build-isolation ." not in post       # never the repository
    assert not (out / "docs" / "book" / "instructors").exists()              # the staff's part
    assert [w.name for w in (out / "wheels").iterdir()] == [edition.wheel_name()]     # afresh
    withheld = edition.withheld_pages(build.settings())
    assert "book/labs/lab8-results" in withheld                               # until feedback
    for page in withheld:
        assert not list(out.rglob(Path(page).name + ".*")), page


def test_the_student_readme_names_only_what_the_edition_holds(student_edition):
    """Every file or folder the student README names is in the edition; it says where Lab 12's
    text comes from (the package) and gives the laptop command with PyTorch's CPU build."""
    readme = (student_edition / "README.md").read_text()
    named = set(re.findall(r"`((?:docs|labs|wheels|binder|book)/[^`]*|[A-Z]+[A-Za-z]*\.(?:md|cff)|LICENSES?/?)`", readme))
    assert f"wheels/{edition.wheel_name()}" in named and "CHANGELOG.md" in named
    for name in named:
        assert (student_edition / name).exists(), name
    assert "your own Python installation" not in readme and "instructor guide in that" not in readme
    assert "--extra-index-url https://download.pytorch.org/whl/cpu" in readme


@pytest.mark.slow
def test_the_edition_gives_away_no_answer(student_edition):
    assert leaks.forbidden_files(student_edition) == []
    found = leaks.find_leaks(student_edition, leaks.secrets(REPO, LABS))
    assert found == [], "\n".join(map(str, found))


def test_the_scan_finds_planted_answers(tmp_path):
    secrets = leaks.secrets(REPO, LABS)
    solution_line = next(line for line, origin in secrets.lines.items()
                         if "lab8.ipynb, task1_solution, solution" in origin and not set("<>&") & set(line))
    checks_line = next(line for line, origin in secrets.lines.items() if origin.endswith("lab12/checks.py"))
    # a solution line as Pygments renders it: each token in its own span, quotes as entities
    words = solution_line.split(" ")
    (tmp_path / "page.html").write_text(
        "<pre>" + " ".join(f'<span class="n">{w.replace(chr(34), "&quot;")}</span>' for w in words) + "</pre>")
    with zipfile.ZipFile(tmp_path / "attention_course-0.0.1-py3-none-any.whl", "w") as archive:
        archive.writestr("attention_course/helpers.py", f"def f():\n    {checks_line}\n")
    (tmp_path / "searchindex.js").write_text('Search.setIndex({"terms":{"run_hidden_check":[3]}})')
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("### BEGIN HIDDEN TESTS\nx = 1")])
    nbformat.write(nb, tmp_path / "lab.ipynb")
    found = {(Path(leak.file.split("!")[0]).name, leak.kind) for leak in leaks.find_leaks(tmp_path, secrets)}
    assert found == {("page.html", "solution line"), ("attention_course-0.0.1-py3-none-any.whl", "checks line"),
                     ("searchindex.js", "name"), ("lab.ipynb", "marker")}


def test_a_model_written_answer_is_a_secret_too(tmp_path):
    """A written answer (a markdown solution cell, which has no markers) is answer text: a
    sentence of it on a page is found, as a line and as a run of its words."""
    from attention_course_instructor.grading.notebook import is_solution

    source = nbformat.read(REPO / "source/lab8/lab8.ipynb", as_version=4)
    written = next(c for c in source.cells if c.cell_type == "markdown" and is_solution(c))
    sentence = max(written.source.splitlines(), key=len)
    secrets = leaks.secrets(REPO, LABS)
    assert leaks.normalise(sentence) in secrets.lines
    (tmp_path / "notes.html").write_text(f"<p>{html.escape(sentence)}</p>")
    assert sorted({leak.kind for leak in leaks.find_leaks(tmp_path, secrets)}) == ["paraphrase", "solution line"]


def written_answer(lab: str, task: str) -> str:
    from attention_course_instructor.grading.notebook import grade_id

    source = nbformat.read(REPO / "source" / lab / f"{lab}.ipynb", as_version=4)
    return next(c.source for c in source.cells if grade_id(c) == task)


def test_the_scan_finds_a_planted_paraphrase(tmp_path):
    """Six words of Lab 8's answer 7b, in new sentences with other punctuation, on a page, in a
    docstring of a wheel's module, in a notebook and in the book's PDF: each is found, and
    nowhere else is anything."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    secrets = leaks.secrets(REPO, LABS)
    run = "state of a bidirectional GRU carries"               # from 7b's model answer
    assert run.lower() in leaks.normalise(written_answer("lab8", "task7b_answer")).lower()
    planted = f"Here is a thought: the <em>{run.replace(' GRU', '</em> GRU')}, one might say, a lot."
    (tmp_path / "page.html").write_text(f"<p>{planted}</p>")
    with zipfile.ZipFile(tmp_path / "attention_course-0.0.1-py3-none-any.whl", "w") as archive:
        archive.writestr("attention_course/notes.py", f'"""Note that each {run.upper()} context."""\n')
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(f"Each {run}!")])
    nbformat.write(nb, tmp_path / "notes.ipynb")
    plt.rcParams["pdf.fonttype"] = 42                           # text a reader can copy out
    figure = plt.figure()
    figure.text(0.05, 0.5, f"Printed: every {run} more.")
    figure.savefig(tmp_path / "book.pdf")
    plt.close(figure)
    (tmp_path / "other.html").write_text("<p>The states of a GRU carry what came before.</p>")
    found = {(Path(leak.file.split("!")[0]).name, leak.secret) for leak in leaks.find_leaks(tmp_path, secrets)
             if leak.kind == "paraphrase"}
    expected = {name: "state of a bidirectional gru carries" for name in
                ("page.html", "attention_course-0.0.1-py3-none-any.whl", "notes.ipynb", "book.pdf")}
    assert {name for name, _ in found} == set(expected), found
    assert all(secret.startswith(expected[name]) or expected[name] in secret for name, secret in found)


@pytest.mark.browser
def test_the_scan_reads_a_solution_line_in_a_code_block_chromium_printed(browser, tmp_path):
    """A line of a lab's solution, its shape comment included, in a code block of a page that
    Chromium prints as it prints the book's PDF: the scan of the PDF finds it."""
    secrets = leaks.secrets(REPO, LABS)
    line = next(line for line, origin in secrets.lines.items()
                if line.startswith("context = attention_context(") and origin.endswith("solution"))
    code = f"import torch\n\n{line.replace(' # ', '    # ')}\nprint(context.shape)"
    page = browser.new_page()
    try:
        page.set_content(f"<h1>Notes</h1><pre><code>{html.escape(code)}</code></pre>")
        page.pdf(path=str(tmp_path / "book.pdf"))
    finally:
        page.close()
    found = [(leak.kind, leak.secret) for leak in leaks.find_leaks(tmp_path, secrets)]
    assert ("solution line", line) in found, found


def test_the_scan_finds_every_secret_line_run_on_into_the_text_around_it(tmp_path):
    """Every line of a solution, a hidden test or a lab's checks, glued to the words around it,
    is found: the scan skips searching a text only for a line whose inner names it lacks."""
    secrets = leaks.secrets(REPO, LABS)
    (tmp_path / "notes.txt").write_text("\n".join(f"zz{line}zz" for line in secrets.lines))
    found = {leak.secret for leak in leaks.find_leaks(tmp_path, secrets)
             if leak.kind not in ("name", "marker", "paraphrase")}
    assert len(secrets.lines) > 300 and found == set(secrets.lines)


def test_the_question_s_own_words_are_no_paraphrase(tmp_path):
    """The released notebook shows each task's question: a page that quotes it gives nothing away."""
    release = nbformat.read(REPO / "labs" / "lab8" / "lab8.ipynb", as_version=4)
    from attention_course_instructor.grading.notebook import grade_id

    question = next(c.source for c in release.cells if grade_id(c) == "task7b_intro")
    (tmp_path / "page.html").write_text(f"<p>{html.escape(question)}</p>")
    assert leaks.find_leaks(tmp_path, leaks.secrets(REPO, LABS)) == []


def test_the_lab8_results_page_answers_task_7_until_feedback_is_out():
    """The page of what Lab 8 finds discusses Task 7a's answer in its words: the scan finds it,
    which is why the edition holds it back until Lab 8's feedback is released; then Lab 8's written
    answers are no longer secret (its code answers still are)."""
    page = REPO / "book" / "labs" / "lab8-results.md"
    held = leaks.find_in_text(str(page), page.read_text(), leaks.secrets(REPO, LABS))
    assert {leak.kind for leak in held} == {"paraphrase"}
    assert {leak.origin.split(", ")[1] for leak in held} == {"task7a_answer"}
    released = leaks.secrets(REPO, LABS, feedback_released=("lab8",))
    assert leaks.find_in_text(str(page), page.read_text(), released) == []
    assert any(", task1_solution, solution" in origin for origin in released.lines.values())
    options = {"after_feedback": {"book/labs/lab8-results": "lab8"}, "feedback_released": []}
    assert edition.withheld_pages(options) == ["book/labs/lab8-results"]
    toc = build.student_toc(leave_out=edition.withheld_pages(options))
    assert "book/labs/lab8-results" not in edition.toc_files(toc) and "labs/lab8/lab8" in edition.toc_files(toc)
    options["feedback_released"] = ["lab8"]
    assert edition.withheld_pages(options) == []


def test_the_guide_says_which_pages_wait_for_feedback():
    """The instructor guide names every page ``edition.yml`` holds back, its lab and the switch."""
    guide = (REPO / "book" / "instructors" / "grading.md").read_text()
    assert "feedback_released" in guide and "after_feedback" in guide
    for page, lab in build.settings()["after_feedback"].items():
        row = next((line for line in guide.splitlines() if f"{page}.md" in line), None)
        assert row is not None and lab.replace("lab", "Lab ") in row, page


def test_an_overlap_is_allowed_only_where_the_book_teaches_it(tmp_path):
    """A Lab 12 attention line in the package module Chapter 8 teaches it with is named; the same
    line in another module is a leak."""
    secrets = leaks.secrets(REPO, LABS)
    line = next(line for line, origin in secrets.lines.items() if ", task2_solution, solution" in origin
                and "lab12" in origin)
    for module, expected in (("attention_course/core/transformer.py", 0), ("attention_course/core/extra.py", 1)):
        target = tmp_path / module
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(line + "\n")
        found = [leak for leak in leaks.find_leaks(tmp_path, secrets) if leak.kind == "solution line"]
        assert len(found) == expected, module
        target.unlink()


def test_the_grading_guide_names_every_overlap_the_scan_allows():
    guide = (REPO / "book" / "instructors" / "grading.md").read_text()
    for (lab, task), (module, page) in leaks.TAUGHT_IN_THE_BOOK.items():
        row = next((line for line in guide.splitlines() if module in line and task in line), None)
        assert row is not None and lab.replace("lab", "Lab ") in row, f"{lab} {task} in {module}"
        assert (REPO / page).exists(), page


@pytest.mark.slow
def test_the_edition_is_reuse_compliant(student_edition):
    done = subprocess.run([str(Path(sys.executable).with_name("reuse")), "--root", str(student_edition), "lint"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-3000:]


@pytest.mark.slow
def test_the_edition_binder_installs_the_wheel(student_edition, tmp_path):
    python, env = fresh_env(tmp_path / "venv")
    subprocess.run([str(python), "-m", "ensurepip", "--default-pip"], check=True, env=env, capture_output=True)
    done = subprocess.run(["bash", "binder/postBuild"], cwd=student_edition, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    version = subprocess.run([str(python), "-c", "import attention_course; print(attention_course.__version__, "
                              "attention_course.__file__)"], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert version.stdout.split()[0] == __version__ and str(tmp_path / "venv") in version.stdout


# ---- the launch buttons ----------------------------------------------------------------------------

@pytest.mark.slow
def test_every_launch_button_leads_to_the_student_repository(student_edition, built_book):
    for book in (student_edition / "docs", built_book):
        page = (book / "book" / "chapter8" / "self-attention.html").read_text()
        assert f"{STUDENT_REPOSITORY}" in page and "colab.research.google.com" in page
        assert "mybinder.org/v2/gh/" + STUDENT_REPOSITORY.removeprefix("https://github.com/") in page
        github = set(re.findall(r"https://github\.com/[\w.-]+/[\w.-]+", page))
        assert github == {STUDENT_REPOSITORY}, github


@pytest.mark.slow
@pytest.mark.parametrize("launcher", ("Colab", "Binder"))
def test_every_launch_button_opens_a_notebook_the_edition_holds(student_edition, launcher):
    """Colab opens notebooks, and Binder's JupyterLab opens a Markdown page in its text editor:
    each page's Colab and Binder links name an .ipynb of the edition, and a chapter page's twin
    starts with the labs' install cell."""
    docs, repo = student_edition / "docs", STUDENT_REPOSITORY.removeprefix("https://github.com/")
    prefix = {"Colab": f"https://colab.research.google.com/github/{repo}/blob/main/",
              "Binder": f"https://mybinder.org/v2/gh/{repo}/main?urlpath=lab/tree/"}[launcher]
    opened = set()
    for page in docs.rglob("*.html"):
        for url in re.findall(rf'href="(https://{re.escape(prefix.split("/")[2])}/[^"]+)"', page.read_text()):
            url = html.unescape(url)
            assert url.startswith(prefix) and url.endswith(".ipynb"), (page.name, url)
            assert (student_edition / url.removeprefix(prefix)).exists(), url
            opened.add(url.removeprefix(prefix))
    assert "book/chapter8/self-attention.ipynb" in opened and "labs/lab8/lab8.ipynb" in opened
    twin = nbformat.read(student_edition / "book/chapter8/self-attention.ipynb", as_version=4)
    assert f'COURSE_WHEEL = "{edition.wheel_name()}"' in twin.cells[0].source


def test_without_a_student_repository_no_button_is_configured():
    config = build.book_config("")
    assert "repository" not in config and config["html"]["use_repository_button"] is False
    assert config["launch_buttons"]["binderhub_url"] == config["launch_buttons"]["colab_url"] == ""
    assert build.book_config("https://github.com/o/r")["repository"]["url"] == "https://github.com/o/r"


@pytest.mark.slow
def test_a_book_built_without_a_student_repository_has_no_launch_button(tmp_path):
    # two pages are enough to see the buttons (or their absence), and build in seconds; their
    # links to the pages left out would warn, so the build is not strict
    toc = {"format": "jb-book", "root": "book/intro",
           "parts": [{"caption": "Chapter 8", "chapters": [{"file": "book/chapter8/self-attention"}]}]}
    index = build.build_book(strict=False, output=tmp_path, repository="", toc=toc)
    page = (index.parent / "book" / "chapter8" / "self-attention.html").read_text()
    for needle in ("mybinder.org", "colab.research.google.com", "github.com"):
        assert needle not in page, needle


# ---- versions ----------------------------------------------------------------------------------

def test_the_version_is_set_in_one_place():
    assert metadata.version("attention-course") == metadata.version("attention-course-instructor") == __version__
    assert yaml.safe_load((REPO / "CITATION.cff").read_text())["version"] == __version__
    first = edition.released_versions((REPO / "CHANGELOG.md").read_text())[0]   # after "Unreleased"
    assert first == __version__, "CHANGELOG.md's newest section is not this version"
    for lab in LABS:
        cell = nbformat.read(REPO / "labs" / lab / f"{lab}.ipynb", as_version=4).cells[1].source
        assert f'COURSE_WHEEL = "{edition.wheel_name()}"' in cell, f"{lab}: run make release LAB={lab}"


def test_release_stamps_the_version_into_the_install_cell():
    from attention_course_instructor.grading.preprocessors import StampCourseVersion

    cell = nbformat.v4.new_code_cell('COURSE_WHEEL = "attention_course-0.1.0-py3-none-any.whl"\nx = 1')
    stamped, _ = StampCourseVersion().preprocess_cell(cell, {}, 0)
    assert stamped.source == f'COURSE_WHEEL = "{edition.wheel_name()}"\nx = 1'


@pytest.mark.parametrize("options, site", [
    ({"student_repository": "https://github.com/Some-Org/course.git"}, "https://some-org.github.io/course/"),
    ({"student_repository": "https://github.com/o/r", "student_site": "https://course.example.edu/ml"},
     "https://course.example.edu/ml/"),
    ({"student_repository": ""}, "")])
def test_the_site_follows_edition_yml(options, site, monkeypatch):
    """The book's html_baseurl and the wheel URL stamped into the labs' install cell are the
    student site of edition.yml (its GitHub Pages site unless it names another)."""
    from attention_course_instructor.grading.preprocessors import StampCourseVersion

    monkeypatch.setattr(build, "settings", lambda: options)
    assert build.site_url() == site
    assert build.book_config(options["student_repository"])["sphinx"]["config"].get("html_baseurl", "") == site
    cell = nbformat.v4.new_code_cell('COURSE_WHEEL = "attention_course-0.1.0-py3-none-any.whl"\n'
                                     'BOOK_WHEELS = "https://old.example/_static/wheels/"')
    stamped, _ = StampCourseVersion().preprocess_cell(cell, {}, 0)
    wheels = f"{site}_static/wheels/" if site else ""
    assert stamped.source.splitlines()[1] == f'BOOK_WHEELS = "{wheels}"'


def test_a_course_folders_own_edition_yml_names_the_site(tmp_path, monkeypatch):
    """On the hub the course folder is a copy (deploy/hub/course.py) and the instructor package
    is installed apart from the repository: the course folder's edition.yml is read, and without
    one anywhere the release says where it looked (formgrader showed a bare FileNotFoundError)."""
    from traitlets.config import Config

    from attention_course_instructor.grading.preprocessors import StampCourseVersion

    config = Config({"CourseDirectory": {"root": str(tmp_path)}})
    (tmp_path / "edition.yml").write_text("student_site: https://course.example.edu/\n")
    assert build.site_url(StampCourseVersion(config=config).edition_settings()) == "https://course.example.edu/"
    (tmp_path / "edition.yml").unlink()
    monkeypatch.setattr(build, "SETTINGS", tmp_path / "elsewhere" / "edition.yml")
    with pytest.raises(FileNotFoundError, match="neither in the course folder.*copy the repository's"):
        StampCourseVersion(config=config).edition_settings()


def test_the_released_labs_name_the_site_of_edition_yml():
    for lab in LABS:
        cell = nbformat.read(REPO / "labs" / lab / f"{lab}.ipynb", as_version=4).cells[1].source
        assert f'BOOK_WHEELS = "{build.site_url()}_static/wheels/"' in cell, f"run make release LAB={lab}"


def wheel_at_version(version: str, folder: Path) -> Path:
    """The student wheel built from a copy of the package whose version is ``version``."""
    project = folder / "project"
    shutil.copytree(REPO / "attention_course", project / "attention_course",
                    ignore=shutil.ignore_patterns("__pycache__", "checkpoints"))
    for name in ("pyproject.toml", "LICENSE", "LICENSES"):
        (shutil.copytree if (REPO / name).is_dir() else shutil.copy2)(REPO / name, project / name)
    (project / "attention_course" / "_version.py").write_text(f'__version__ = "{version}"\n')
    return build.build_wheel(project, folder / "wheels")


LATER = "99.0.0"                       # a version published after this one


@pytest.fixture(scope="session")
def two_versions(tmp_path_factory):
    """This version's wheel and a later one, published in one edition and served over HTTP at the
    site's ``_static/wheels/``, as the student site serves them; yields (wheels, their URL)."""
    folder = tmp_path_factory.mktemp("versions")
    out = folder / "edition"
    edition.publish_wheel(out, build.build_wheel(REPO, folder / "now"))
    wheels = edition.publish_wheel(out, wheel_at_version(LATER, folder / "later"))
    assert [w.name for w in wheels] == [edition.wheel_name(), edition.wheel_name(LATER)]
    site = folder / "site"
    edition.serve_wheels(site, wheels)
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(site))
    handler.log_message = lambda *args: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield wheels, f"http://127.0.0.1:{server.server_address[1]}/_static/wheels/"
    server.shutdown()


def install_cell(url: str, version: str = __version__) -> str:
    """The released Lab 8's first cell, downloading from ``url``, as released at ``version``."""
    install = nbformat.read(REPO / "labs" / "lab8" / "lab8.ipynb", as_version=4).cells[1].source
    install = re.sub(r'BOOK_WHEELS = "[^"]*"', f'BOOK_WHEELS = "{url}"', install)
    return install.replace(f'"{edition.wheel_name()}"', f'"{edition.wheel_name(version)}"')


def run_first_cell(python: Path, env: dict, cell: str, work: Path) -> subprocess.CompletedProcess:
    """The install cell, then what the lab imports first, in a new process (a new kernel)."""
    work.mkdir(exist_ok=True)
    code = cell + ("\nimport attention_course, attention_course.core.readers\n"
                   "print('version', attention_course.__version__, attention_course.__file__)")
    return subprocess.run([str(python), "-c", code], cwd=work, env=env, capture_output=True, text=True,
                          timeout=600)


@pytest.mark.slow
def test_a_notebook_handed_out_earlier_installs_its_version_after_a_newer_one(two_versions, tmp_path):
    _, url = two_versions
    python, env = fresh_env(tmp_path / "venv")
    subprocess.run([str(python), "-m", "ensurepip", "--default-pip"], check=True, env=env, capture_output=True)
    done = run_first_cell(python, env, install_cell(url), tmp_path / "work")
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"version {__version__}" in done.stdout and LATER not in done.stdout.splitlines()[-1]


@pytest.mark.slow
def test_a_notebook_installs_its_own_version_beside_another_one(two_versions, tmp_path):
    """Where another version is installed (a hub or Binder of a later term has the later one), a
    notebook released at this version installs its own into a folder of its own (in the home
    folder; the environment is left as it is) and reads it from there, every time it runs; a
    notebook of the installed version uses the installed one."""
    wheels, url = two_versions
    python, env = fresh_env(tmp_path / "venv")
    env["HOME"] = str(tmp_path / "home")
    subprocess.run([str(python), "-m", "ensurepip", "--default-pip"], check=True, env=env, capture_output=True)
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--no-deps", str(wheels[-1])],
                   check=True, env=env, capture_output=True)
    own = tmp_path / "home" / ".cache" / "attention-course" / __version__ / "attention_course"
    for run in ("first", "again"):
        done = run_first_cell(python, env, install_cell(url), tmp_path / "work")
        assert done.returncode == 0, done.stderr[-3000:]
        version, where = done.stdout.splitlines()[-1].split()[1:]
        assert (version, Path(where).parent) == (__version__, own), (run, done.stdout)
        assert (f"attention_course {LATER} is installed" in done.stdout) == (run == "first"), done.stdout
    done = run_first_cell(python, env, install_cell(url, LATER), tmp_path / "work")
    version, where = done.stdout.splitlines()[-1].split()[1:]
    assert version == LATER and str(tmp_path / "venv") in where and "installed" not in done.stdout


# ---- publishing: every released wheel, each byte for byte what was published ---------------------

def test_the_changelog_s_versions_are_read_from_its_headings():
    text = "# Changelog\n\n## Unreleased\n\n## 0.3.0 (2026-12-04)\n- x\n## 0.2.0 (2026-11-29 to 2026-12-03)\n"
    assert edition.released_versions(text) == ["0.3.0", "0.2.0"]
    assert __version__ in edition.released_versions((REPO / "CHANGELOG.md").read_text())


def stub_wheel(folder: Path, version: str, metadata_version: str | None = None) -> Path:
    """A wheel file of the student package at ``version`` (its metadata saying
    ``metadata_version``), as an earlier edition published it."""
    path = folder / "wheels" / edition.wheel_name(version)
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(f"attention_course-{version}.dist-info/METADATA",
                         f"Metadata-Version: 2.4\nName: attention-course\nVersion: {metadata_version or version}\n\n")
    return path


def test_the_edition_refuses_when_a_released_version_has_no_wheel(tmp_path):
    changelog = f"## Unreleased\n## {__version__} (today)\n## 0.2.0 (then)\n## 0.1.0 (before)\n"
    with pytest.raises(edition.PublishingError, match=r"(?s)lacks the wheel of 0\.2\.0, 0\.1\.0,.*AFRESH=1"):
        edition.check_earlier_wheels(tmp_path, changelog)
    stub_wheel(tmp_path, "0.2.0")
    stub_wheel(tmp_path, "0.1.0", metadata_version="0.1.1")          # not what its name says
    with pytest.raises(edition.PublishingError, match=r"lacks the wheel of 0\.1\.0,? "):
        edition.check_earlier_wheels(tmp_path, changelog)
    stub_wheel(tmp_path, "0.1.0")
    edition.check_earlier_wheels(tmp_path, changelog)                 # every one is there


def test_make_edition_refuses_before_building_when_wheels_are_missing(tmp_path, monkeypatch):
    """The default ``make edition`` (a new folder, no wheels) stops at once and says why and how
    to go on; it builds nothing first."""
    monkeypatch.setattr(build, "build_book", lambda *a, **k: pytest.fail("built the book first"))
    assert len(edition.released_versions((REPO / "CHANGELOG.md").read_text())) > 1
    with pytest.raises(SystemExit, match="CHANGELOG.md says were released"):
        edition.main(["--out", str(tmp_path / "edition")])
    assert not (tmp_path / "edition" / "docs").exists()


def test_a_published_wheel_is_never_replaced_by_other_bytes(tmp_path):
    published = stub_wheel(tmp_path / "edition", __version__)
    same = tmp_path / "built" / published.name
    same.parent.mkdir()
    same.write_bytes(published.read_bytes())
    edition.check_published_wheel(tmp_path / "edition", same)        # a rebuilt, identical wheel
    other = stub_wheel(tmp_path / "other", __version__, metadata_version=__version__ + ".post1")
    with pytest.raises(edition.PublishingError, match="differs from the wheel built now"):
        edition.check_published_wheel(tmp_path / "edition", other)


def copy_of_the_package(folder: Path, mode: int, when: float) -> Path:
    """The student package's sources as another checkout has them: files of ``mode`` dated
    ``when`` (a clone's umask and time), no git history."""
    project = folder / "project"
    shutil.copytree(REPO / "attention_course", project / "attention_course",
                    ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "LICENSE", "LICENSES"):
        (shutil.copytree if (REPO / name).is_dir() else shutil.copy2)(REPO / name, project / name)
    for path in project.rglob("*"):
        if path.is_file():
            path.chmod(mode)
            os.utime(path, (when, when))
    return project


@pytest.mark.slow
def test_the_wheel_is_byte_reproducible(student_wheel, tmp_path, monkeypatch):
    """Built again from this checkout, and from two other checkouts (another umask, other file
    times), the student wheel is the same bytes."""
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    again = build.build_wheel(REPO, tmp_path / "again")
    assert again.read_bytes() == student_wheel.read_bytes()
    digests = set()
    for name, mode, when in (("one", 0o644, 1.7e9), ("two", 0o664, 1.8e9)):
        wheel = build.build_wheel(copy_of_the_package(tmp_path / name, mode, when), tmp_path / name / "dist")
        digests.add(hashlib.sha256(wheel.read_bytes()).hexdigest())
    assert len(digests) == 1, "two checkouts of the same sources gave two wheels"
    dated = {info.date_time for info in zipfile.ZipFile(student_wheel).infolist()}
    *minutes, seconds = time.gmtime(build.source_date_epoch(REPO))[:6]
    assert dated == {(*minutes, seconds // 2 * 2)}                       # a zip keeps even seconds


def test_the_wheel_s_date_is_its_sources_last_commit():
    done = subprocess.run(["git", "log", "-1", "--format=%ct", "--", "attention_course", "pyproject.toml",
                           "LICENSE", "LICENSES"], cwd=REPO, capture_output=True, text=True, check=True)
    assert build.source_date_epoch(REPO) == int(done.stdout)
    assert build.wheel_inputs(REPO) == ["LICENSE", "LICENSES", "attention_course", "pyproject.toml"]


def file_licences(folder: Path) -> dict[str, tuple[set[str], str]]:
    """Each file's licences and copyright holders as ``reuse spdx`` reports them."""
    done = subprocess.run([str(Path(sys.executable).with_name("reuse")), "--root", str(folder), "spdx"],
                          capture_output=True, text=True, check=True)
    found = {}
    for block in done.stdout.split("\n\n"):
        name = re.search(r"^FileName: \./(.+)$", block, re.M)
        if name:
            found[name[1]] = (set(re.findall(r"^LicenseInfoInFile: (.+)$", block, re.M)),
                              " ".join(re.findall(r"^FileCopyrightText: (.+)$", block, re.M)))
    return found


@pytest.mark.slow
def test_the_edition_s_licences_say_who_wrote_what(student_edition):
    """Text is CC BY and code MIT, each by whoever wrote it: a page's notebook and the PDF are both,
    by the course; the course's own style and script are MIT, by the course, not by the authors of
    the tools whose files sit beside them."""
    found = file_licences(student_edition)
    course, both = "course team", {"CC-BY-4.0", "MIT"}
    expected = {"book/chapter8/self-attention.ipynb": (both, course),
                "book/chapter8/self-attention.md": (both, course),
                "docs/attention-and-transformers.pdf": (both, course),
                "docs/_images": ({"CC-BY-4.0"}, course),
                "docs/_static/vendor/course.css": ({"MIT"}, course),
                "docs/_static/vendor/course.js": ({"MIT"}, course),
                "docs/_static/vendor/widget-shims.js": ({"MIT"}, course),
                "docs/_static/vendor/mathjax/tex-chtml.js": ({"LicenseRef-Bundled"}, "MathJax"),
                f"wheels/{edition.wheel_name()}": ({"MIT", "CC-BY-4.0", "CC0-1.0", "PSF-2.0"}, course)}
    for name, (licences, holder) in expected.items():
        files = [f for f in found if f == name or f.startswith(name + "/")]
        assert files, name
        for file in files:
            assert found[file][0] == licences and holder in found[file][1], (file, found[file])
