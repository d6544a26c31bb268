"""The course published to students without its answers: the package split by audience, the
student edition read as an attacker would, versioned wheels, the book's launch buttons.

The expensive parts are built once per session: the student edition (the book built for students
from the shared execution cache) and a virtual environment holding only the student wheel and
what it declares.
"""
from __future__ import annotations

import functools
import html
import http.server
import importlib.metadata as metadata
import json
import re
import shutil
import subprocess
import sys
import threading
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
    """The edition as ``make edition`` writes it (it refuses to finish on any finding)."""
    return edition.build_edition(tmp_path_factory.mktemp("edition") / "student-repository")


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
    sentence of it on a page is found."""
    from attention_course_instructor.grading.notebook import is_solution

    source = nbformat.read(REPO / "source/lab8/lab8.ipynb", as_version=4)
    written = next(c for c in source.cells if c.cell_type == "markdown" and is_solution(c))
    sentence = max(written.source.splitlines(), key=len)
    secrets = leaks.secrets(REPO, LABS)
    assert leaks.normalise(sentence) in secrets.lines
    (tmp_path / "notes.html").write_text(f"<p>{html.escape(sentence)}</p>")
    assert [leak.kind for leak in leaks.find_leaks(tmp_path, secrets)] == ["solution line"]


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
def test_every_colab_button_opens_a_notebook_the_edition_holds(student_edition):
    """Colab opens notebooks: each page's Colab link names an .ipynb of the edition, and a
    chapter page's twin starts by installing the course package where it is missing."""
    docs, prefix = student_edition / "docs", "https://colab.research.google.com/github/"
    blob = prefix + STUDENT_REPOSITORY.removeprefix("https://github.com/") + "/blob/main/"
    opened = set()
    for page in docs.rglob("*.html"):
        for url in re.findall(r'href="(https://colab\.research\.google\.com/[^"]+)"', page.read_text()):
            assert url.startswith(blob) and url.endswith(".ipynb"), (page.name, url)
            assert (student_edition / url.removeprefix(blob)).exists(), url
            opened.add(url.removeprefix(blob))
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
    # the newest released section (an "Unreleased" one above it gathers what the next will say)
    first = next(v for v in re.findall(r"^## (\S+)", (REPO / "CHANGELOG.md").read_text(), re.M)
                 if v != "Unreleased")
    assert first == __version__, "CHANGELOG.md's newest section is not this version"
    for lab in LABS:
        cell = nbformat.read(REPO / "labs" / lab / f"{lab}.ipynb", as_version=4).cells[1].source
        assert f'COURSE_WHEEL = "{edition.wheel_name()}"' in cell, f"{lab}: run make release LAB={lab}"


def test_release_stamps_the_version_into_the_install_cell():
    from attention_course_instructor.grading.preprocessors import StampCourseVersion

    cell = nbformat.v4.new_code_cell('COURSE_WHEEL = "attention_course-0.1.0-py3-none-any.whl"\nx = 1')
    stamped, _ = StampCourseVersion().preprocess_cell(cell, {}, 0)
    assert stamped.source == f'COURSE_WHEEL = "{edition.wheel_name()}"\nx = 1'


def wheel_at_version(version: str, folder: Path) -> Path:
    """The student wheel built from a copy of the package whose version is ``version``."""
    project = folder / "project"
    shutil.copytree(REPO / "attention_course", project / "attention_course",
                    ignore=shutil.ignore_patterns("__pycache__", "checkpoints"))
    for name in ("pyproject.toml", "LICENSE", "LICENSES"):
        (shutil.copytree if (REPO / name).is_dir() else shutil.copy2)(REPO / name, project / name)
    (project / "attention_course" / "_version.py").write_text(f'__version__ = "{version}"\n')
    return build.build_wheel(project, folder / "wheels")


@pytest.mark.slow
def test_a_notebook_handed_out_earlier_installs_its_version_after_a_newer_one(tmp_path):
    out, later = tmp_path / "edition", "99.0.0"
    edition.publish_wheel(out, build.build_wheel(REPO, tmp_path / "now"))
    wheels = edition.publish_wheel(out, wheel_at_version(later, tmp_path / "later"))
    assert [w.name for w in wheels] == [edition.wheel_name(), edition.wheel_name(later)]
    site = tmp_path / "site"
    edition.serve_wheels(site, wheels)
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(site))
    handler.log_message = lambda *args: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        install = nbformat.read(REPO / "labs" / "lab8" / "lab8.ipynb", as_version=4).cells[1].source
        url = f"http://127.0.0.1:{server.server_address[1]}/_static/wheels/"
        install = re.sub(r'BOOK_WHEELS = "[^"]*"', f'BOOK_WHEELS = "{url}"', install)
        python, env = fresh_env(tmp_path / "venv")
        subprocess.run([str(python), "-m", "ensurepip", "--default-pip"], check=True, env=env, capture_output=True)
        work = tmp_path / "work"
        work.mkdir()
        done = subprocess.run([str(python), "-c", install + "\nimport attention_course\n"
                               "print('version', attention_course.__version__)"],
                              cwd=work, env=env, capture_output=True, text=True, timeout=600)
    finally:
        server.shutdown()
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"version {__version__}" in done.stdout and later not in done.stdout.splitlines()[-1]
