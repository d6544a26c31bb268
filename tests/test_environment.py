"""The pinned environment: what a process of the course loads when it starts.

Every notebook runner, nbgrader, each Jupyter server on the hub and the kernel of each nbgrader
hidden test imports nbformat, and nbformat imports jsonschema. jsonschema 4.25 and 4.26 import
rfc3987-syntax, which compiles 39 lark grammars as it is imported (about 2 CPU-seconds a process
on the course's 2-core development machine); ``requirements.txt`` keeps jsonschema at 4.24.1,
whose extras leave it out.
"""
from __future__ import annotations

import json
import subprocess
import sys

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
