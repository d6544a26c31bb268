"""The course is licensed for reuse: every file's licence stated the REUSE way (``reuse lint``),
and a citation file that ``cffconvert`` validates. Each check is shown failing on a planted fault."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO

REUSE = Path(sys.executable).with_name("reuse")
CFFCONVERT = REPO / ".venv" / "cffconvert"          # installed apart by make (jsonschema 3)


def reuse_lint(root: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(REUSE), "--root", str(root), "lint"], capture_output=True, text=True)


def test_every_file_of_the_repository_states_its_licence():
    done = reuse_lint(REPO)
    assert done.returncode == 0, done.stdout[-3000:]


def test_reuse_lint_fails_on_a_licence_text_that_is_missing(tmp_path):
    shutil.copy2(REPO / "REUSE.toml", tmp_path / "REUSE.toml")
    shutil.copytree(REPO / "LICENSES", tmp_path / "LICENSES")
    (tmp_path / "LICENSES" / "CC0-1.0.txt").unlink()
    texts = tmp_path / "attention_course" / "data" / "texts"
    texts.mkdir(parents=True)
    (texts / "story.txt").write_text("A story written for the course.\n")
    (tmp_path / "code.py").write_text("x = 1\n")
    done = reuse_lint(tmp_path)
    assert done.returncode != 0 and "CC0-1.0" in done.stdout


def validate_citation(path: Path) -> subprocess.CompletedProcess:
    if not CFFCONVERT.is_dir():
        if os.environ.get("CI"):
            pytest.fail("cffconvert is missing: make installs it into .venv/cffconvert")
        pytest.skip("cffconvert is not installed (make test installs it)")
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(CFFCONVERT)}
    code = ("import sys; sys.argv = ['cffconvert', '--validate', '-i', sys.argv[1]]; "
            "from cffconvert.cli.cli import cli; cli()")
    return subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True,
                          env=env)


def test_the_citation_file_is_valid():
    done = validate_citation(REPO / "CITATION.cff")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "valid" in done.stdout


def test_cffconvert_refuses_a_citation_without_authors(tmp_path):
    text = (REPO / "CITATION.cff").read_text()
    broken = text[:text.index("authors:")] + text[text.index("license:"):]
    (tmp_path / "CITATION.cff").write_text(broken)
    done = validate_citation(tmp_path / "CITATION.cff")
    assert done.returncode != 0
