"""Every chapter page's notebook runs top to bottom where only the student wheel is installed, as
it does when a student opens it from the page's Colab or Binder button.

The notebook is the page's twin that the student edition publishes (``edition.notebook_twin``:
the page's cells after the labs' install cell), run by a kernel in a venv that holds the student
wheel, what the wheel declares and ipykernel, and nothing else (``declared_venv`` of
``test_student_edition``): no myst-nb, no repository. Each runs in an empty folder, as Colab runs
it. Pages held back from students until a lab's feedback is out run too: they are published
later. Both labs' released notebooks are run the same way by ``test_student_edition`` (with the
solution's answers, at grading length).

What this does not reproduce of Colab: the declared distributions are linked from this
environment (the course's pins) rather than downloaded by pip, and Colab has many more packages
installed; an import the wheel does not declare fails here, where on Colab it might happen to work.
"""
from __future__ import annotations

import fcntl
import hashlib
import json
import re
import shutil
import sys

import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

from attention_course_instructor.book import build, edition
from conftest import REPO
from test_student_edition import declared_venv

ENVS = REPO / "_build" / "test-envs"            # venvs of the student wheel, one per wheel digest


def published_pages() -> list[str]:
    """Every page of the student book with code, the pages held back until feedback included."""
    toc = build.student_toc(staff=build.settings().get("staff_parts", []))
    return sorted(page for page in edition.toc_files(toc) if (REPO / f"{page}.md").exists()
                  and edition.notebook_twin(REPO / f"{page}.md") is not None)


PAGES = published_pages()


@pytest.fixture(scope="session")
def wheel_kernel(tmp_path_factory):
    """A Jupyter path whose kernel ``student-wheel`` runs in a venv of the student wheel only. The
    wheel is reproducible, so the venv is kept under ``_build/test-envs/`` by the wheel's digest (and
    the pins') and made again only when the package changes."""
    wheel = build.build_wheel(REPO, tmp_path_factory.mktemp("wheel"))
    # the venv links the declared distributions from this environment: its pins are part of the key
    key = wheel.read_bytes() + (REPO / "requirements.txt").read_bytes() + sys.prefix.encode()
    digest = hashlib.sha256(key).hexdigest()[:16]
    folder = ENVS / digest
    ENVS.mkdir(parents=True, exist_ok=True)
    with open(ENVS / ".lock", "w") as lock:                 # pytest-xdist workers take turns
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (folder / "ready").exists():
            for old in ENVS.iterdir():
                if old.is_dir():
                    shutil.rmtree(old)
            declared_venv(folder, wheel)
            (folder / "ready").touch()
    kernels = tmp_path_factory.mktemp("jupyter")
    spec = kernels / "kernels" / "student-wheel"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [str(folder / "venv" / "bin" / "python"), "-m", "ipykernel_launcher", "-f",
                 "{connection_file}"], "display_name": "student wheel only", "language": "python"}))
    return kernels


def run(nb: nbformat.NotebookNode, kernels, folder, monkeypatch) -> nbformat.NotebookNode:
    monkeypatch.setenv("JUPYTER_PATH", str(kernels))
    monkeypatch.delenv("COURSE_BOOK_BUILD", raising=False)             # not the book's build
    monkeypatch.delenv("PYTHONPATH", raising=False)
    # one torch thread: the pages' results do not depend on it, and on a shared 2-core machine
    # (the other test worker, other users) two threads each are several times slower
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    NotebookClient(nb, kernel_name="student-wheel", timeout=600,
                   resources={"metadata": {"path": str(folder)}}).execute()
    return nb


def said(nb: nbformat.NotebookNode) -> str:
    return "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs)


@pytest.mark.slow
@pytest.mark.parametrize("page", PAGES)
def test_a_page_notebook_runs_with_only_the_student_wheel(page, wheel_kernel, tmp_path, monkeypatch):
    nb = run(edition.notebook_twin(REPO / f"{page}.md"), wheel_kernel, tmp_path, monkeypatch)
    text = said(nb)
    assert "The course package is missing" not in text            # the wheel's own copy ran
    glued = re.findall(r"""\bglue\(\s*f?["']([^"'{]+)["']""", "\n".join(c.source for c in nb.cells))
    shown = {name for name in glued if re.search(rf"^{re.escape(name)}:", text, re.M)}
    assert shown == set(glued), f"values the prose quotes but the notebook does not show: {set(glued) - shown}"


# A page as it was, or as it might be written again: with what only the book's build has
PLANTED = {
    "myst-nb": ("from myst_nb import glue", "ModuleNotFoundError"),
    "the repository": ('assert Path("../../_build/offline_assets/wheels").exists()', "AssertionError"),
}


@pytest.mark.slow
@pytest.mark.parametrize("plant", PLANTED)
def test_a_page_that_needs_the_book_build_fails_here(plant, wheel_kernel, tmp_path, monkeypatch):
    """The check can fail: the environment has no myst-nb, and the notebook's folder holds no
    repository."""
    code, error = PLANTED[plant]
    nb = edition.notebook_twin(REPO / "book/labs/get-the-labs.md")
    nb.cells.insert(1, nbformat.v4.new_code_cell(f"from pathlib import Path\n{code}"))
    with pytest.raises(CellExecutionError, match=error):
        run(nb, wheel_kernel, tmp_path, monkeypatch)
