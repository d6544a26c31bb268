"""The ways a student opens a lab without the repository: the wheel and the notebook downloaded
from the built book, Binder's post-build step, the launch buttons.

A "fresh environment" is a new venv that sees the course's pinned dependencies (a path file to the
test environment's site-packages, which adds the folder but not the editable install of the course
package in it) and nothing of the repository: the package has to come from the wheel.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import nbformat
import pytest
import yaml

from conftest import REPO

pytestmark = pytest.mark.slow
LAB_IMPORTS = ("import attention_course, attention_course.book.plots, attention_course.core.readers, "
               "attention_course.tasks.readers, attention_course.tasks.digit_floor; "
               "print(attention_course.__file__)")


def fresh_env(folder: Path) -> tuple[Path, dict]:
    """A venv in ``folder`` with the pinned dependencies and no course package; its environment."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True)
    site = next((folder / "lib").glob("python3*/site-packages"))
    (site / "course-dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV", "JUPYTER"))}
    env["PATH"] = f"{folder / 'bin'}:/usr/bin:/bin"
    python = folder / "bin" / "python"
    missing = subprocess.run([str(python), "-c", "import importlib.util as u; "
                              "print(u.find_spec('attention_course') is None)"],
                             capture_output=True, text=True, cwd=folder, env=env)
    assert missing.stdout.strip() == "True", "the fresh environment already sees the course package"
    return python, env


def with_answers(release: nbformat.NotebookNode, lab: str = "lab8") -> nbformat.NotebookNode:
    """The released notebook as a student hands it in: every answer cell as the solution has it."""
    solution = nbformat.read(REPO / "solutions" / lab / f"{lab}.ipynb", as_version=4)
    answers = {c.metadata["nbgrader"]["grade_id"]: c.source for c in solution.cells
               if c.metadata.get("nbgrader", {}).get("solution")}
    for c in release.cells:
        gid = c.metadata.get("nbgrader", {}).get("grade_id")
        if gid in answers:
            c.source = answers[gid]
    return release


def test_the_downloaded_notebook_installs_the_wheel_and_runs(built_book, tmp_path):
    wheel = next((built_book / "_static" / "wheels").glob("attention_course-*.whl"))
    downloaded = built_book / "_sources" / "labs" / "lab8" / "lab8.ipynb"   # the download button
    python, env = fresh_env(tmp_path / "venv")
    work = tmp_path / "work"
    work.mkdir()
    shutil.copy2(wheel, work / wheel.name)
    nbformat.write(with_answers(nbformat.read(downloaded, as_version=4)), work / "lab8.ipynb")
    env["NBGRADER_EXECUTION"] = "autograde"                      # grading-length training
    done = subprocess.run([str(python), "-m", "nbconvert", "--to", "notebook", "--execute",
                           "--ExecutePreprocessor.timeout=600", "--output", "ran.ipynb", "lab8.ipynb"],
                          cwd=work, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    ran = nbformat.read(work / "ran.ipynb", as_version=4)
    said = "".join(o.get("text", "") for o in ran.cells[1].outputs)
    assert "The course package is missing: installing attention_course-" in said
    installed = subprocess.run([str(python), "-c", LAB_IMPORTS], cwd=work, env=env,
                               capture_output=True, text=True)
    assert str(tmp_path / "venv") in installed.stdout, installed.stderr   # from the wheel, in the venv


def test_binder_post_build_gives_the_lab_its_imports(tmp_path):
    checkout = tmp_path / "checkout"
    files = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=REPO, capture_output=True, text=True, check=True)
    for name in files.stdout.split():
        if (REPO / name).is_file():
            (checkout / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, checkout / name)
    python, env = fresh_env(tmp_path / "venv")
    subprocess.run([str(python), "-m", "ensurepip", "--default-pip"], check=True, env=env,
                   capture_output=True)
    done = subprocess.run(["bash", "binder/postBuild"], cwd=checkout, env=env, capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    elsewhere = tmp_path / "empty"
    elsewhere.mkdir()
    imported = subprocess.run([str(python), "-c", LAB_IMPORTS], cwd=elsewhere, env=env,
                              capture_output=True, text=True)
    assert imported.returncode == 0, imported.stderr[-3000:]
    assert str(tmp_path / "venv") in imported.stdout
    etc = tmp_path / "venv" / "etc" / "jupyter"
    extensions = json.loads((etc / "jupyter_server_config.d" / "zz-course-student.json").read_text())
    assert extensions["ServerApp"]["jpserver_extensions"]["nbgrader.server_extensions.formgrader"] is False
    assert "regrade_requests" not in extensions["ServerApp"]["jpserver_extensions"]   # the hub's only
    assert "@jupyter/nbgrader:create-assignment" in (etc / "labconfig" / "page_config.json").read_text()


def test_no_page_offers_a_placeholder_hub(built_book):
    """With ``jupyterhub_url`` empty there is no hub button (and no made-up host) on any page."""
    config = yaml.safe_load((REPO / "_config.yml").read_text())
    assert config["launch_buttons"]["jupyterhub_url"] == ""
    for page in built_book.rglob("*.html"):
        text = page.read_text(errors="replace")
        assert "hub.example" not in text and "git-pull" not in text, page


def test_the_labs_install_the_wheel_the_book_serves(built_book):
    from attention_course_instructor.book.build import site_url

    wheels = site_url() + "_static/wheels/"                  # the book's html_baseurl (edition.yml)
    page = (built_book / "book" / "chapter8" / "self-attention.html").read_text()
    assert f'<link rel="canonical" href="{site_url()}book/chapter8/self-attention.html"' in page
    wheel = next((built_book / "_static" / "wheels").glob("attention_course-*.whl")).name
    for lab in ("lab8", "lab12"):
        first = nbformat.read(REPO / "labs" / lab / f"{lab}.ipynb", as_version=4).cells[1].source
        assert f'COURSE_WHEEL = "{wheel}"' in first and f'BOOK_WHEELS = "{wheels}"' in first, lab
    page = (built_book / "book" / "labs" / "get-the-labs.html").read_text()
    assert f'href="../../_static/wheels/{wheel}"' in page
