"""The pinned environment: what a process of the course loads when it starts.

Every notebook runner, nbgrader, each Jupyter server on the hub and the kernel of each nbgrader
hidden test imports nbformat, and nbformat imports jsonschema. jsonschema 4.25 and 4.26 import
rfc3987-syntax, which compiles 39 lark grammars as it is imported (about 2 CPU-seconds a process
on the course's 2-core development machine); ``requirements.txt`` keeps jsonschema at 4.24.1,
whose extras leave it out. And ``.venv`` holds the pins and nothing else: make uninstalls what no
pin names (pip removes nothing), which a package the pins dropped would otherwise outlive.
"""
from __future__ import annotations

import json
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from conftest import REPO
from hub_helpers import user_env_module

GRAMMAR_BUILDERS = {"rfc3987_syntax", "lark"}
PINNED_OUT = {"rfc3987-syntax", "lark"}


def modules_loaded_by(statement: str) -> set[str]:
    """The top-level packages a fresh interpreter of this environment holds after ``statement``."""
    done = subprocess.run(
        [sys.executable, "-c", f"{statement}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"],
        capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return {name.split(".")[0] for name in json.loads(done.stdout.splitlines()[-1])}


def test_reading_notebooks_and_serving_jupyter_build_no_parser_on_import():
    loaded = modules_loaded_by("import nbformat, jupyter_server.serverapp, nbgrader.apps")
    assert "jsonschema" in loaded, "nbformat no longer imports jsonschema: this check looks at nothing"
    assert not loaded & GRAMMAR_BUILDERS, (
        f"importing nbformat loaded {sorted(loaded & GRAMMAR_BUILDERS)}: a jsonschema that imports "
        f"rfc3987-syntax is installed (requirements.txt pins jsonschema 4.24.1)")


def test_the_pins_leave_the_grammar_builders_out():
    pinned = set(user_env_module().pins(REPO / "requirements.txt"))     # canonical names
    assert "jsonschema" in pinned, "requirements.txt no longer pins jsonschema"
    assert not pinned & PINNED_OUT, (f"requirements.txt pins {sorted(pinned & PINNED_OUT)}: "
                                     f"jsonschema's grammars are back (see its comment there)")


def planted_venv(root: Path, packages: dict[str, str], requires: dict[str, str] | None = None
                 ) -> tuple[Path, Path]:
    """A venv without pip whose site-packages holds ``packages`` (name -> version) as installed
    distributions with a RECORD, so that pip can uninstall them, each requiring what ``requires``
    gives it, and reaches the course's .venv (pip, packaging) through a .pth file after its own.
    Returns (its python, its site-packages)."""
    requires = requires or {}
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True)
    python = root / "bin" / "python"
    where = "import sysconfig; print(sysconfig.get_path('purelib'))"
    site = Path(subprocess.run([str(python), "-c", where], capture_output=True, text=True,
                               check=True).stdout.strip())
    (site / "zz-course-venv.pth").write_text(sysconfig.get_path("purelib") + "\n")
    for name, version in packages.items():
        module = site / name.replace("-", "_")
        info = site / f"{module.name}-{version}.dist-info"
        module.mkdir()
        info.mkdir()
        (module / "__init__.py").write_text("")
        needs = f"Requires-Dist: {requires[name]}\n" if name in requires else ""
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
                                       + needs)
        files = (module / "__init__.py", info / "METADATA", info / "RECORD")
        (info / "RECORD").write_text("".join(f"{path.relative_to(site)},,\n" for path in files))
    return python, site


def test_make_leaves_in_the_venv_only_what_the_pins_name(tmp_path):
    """`pip install -r` removes nothing: a .venv made before lark was dropped from the pins kept it,
    and the hub's environment was then installed with pip instead of copied (a newcomer found it).
    make's install recipe, its command as `make -n` prints it, run in a planted venv: lark goes, a
    pinned package and the course's own stay."""
    pinned = user_env_module().pins(REPO / "requirements.txt")
    recipe = subprocess.run(["make", "-n", "-B", "test"], cwd=REPO, capture_output=True, text=True,
                            check=True).stdout.splitlines()        # what make test would run
    prune = [line for line in recipe if "--prune" in line]
    assert len(prune) == 1 and prune[0].startswith(".venv/bin/python "), (
        f"make's install recipe does not run user_env.py --prune once: {recipe}")
    kept = pinned["jsonschema"].lstrip("=")            # pinned, and imported by nothing here
    python, site = planted_venv(tmp_path / "venv", {"lark": "1.2.2", "jsonschema": kept,
                                                    "attention-course": "1.0"})
    done = subprocess.run(prune[0].replace(".venv/bin/python", str(python), 1), shell=True,
                          cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "lark" in done.stdout, done.stdout
    assert sorted(p.name for p in site.iterdir() if p.suffix != ".pth") == [
        "attention_course", "attention_course-1.0.dist-info",
        "jsonschema", f"jsonschema-{kept}.dist-info"]


def test_pruning_says_what_it_broke_and_refuses_outside_a_venv(tmp_path, monkeypatch):
    """A pinned package that needs one no pin names (the pins would be incomplete): the prune
    uninstalls it, then stops and says so. Run by an interpreter that is no venv's, it refuses
    rather than uninstall from the machine's Python (checked in this process, with pip out of
    reach: a planted fault here once uninstalled the machine's own packages)."""
    kept = user_env_module().pins(REPO / "requirements.txt")["jsonschema"].lstrip("=")
    python, _ = planted_venv(tmp_path / "venv", {"lark": "1.2.2", "jsonschema": kept},
                             requires={"jsonschema": "lark"})
    done = subprocess.run([str(python), "deploy/hub/user_env.py", "--prune"], cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode != 0 and "requires lark" in done.stderr, done.stdout + done.stderr

    user_env = user_env_module()

    def no_pip(*args, **kwargs):
        raise AssertionError(f"the prune ran {args[0]} outside a venv")

    monkeypatch.setattr(user_env.subprocess, "run", no_pip)
    monkeypatch.setattr(sys, "prefix", sys.base_prefix)
    with pytest.raises(SystemExit, match="not a venv"):
        user_env.main(["--prune"])
