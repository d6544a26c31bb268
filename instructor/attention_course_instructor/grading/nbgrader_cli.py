"""Running the ``nbgrader`` command on a course directory, with the course's configuration.

The hardened grader calls it for nbgrader's own steps (``generate_feedback``); the tests' and the
benchmarks' temporary courses (``tests/nbgrader_harness.py``) call it for every step. Scores are
read from the gradebook API, never from ``nbgrader validate``, which exits 0 when tests fail.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from attention_course_instructor import paths

CONFIG = paths.REPO / "nbgrader_config.py"


class NbgraderError(AssertionError):
    """An ``nbgrader`` command failed; the message ends with what it printed."""


def run_nbgrader(root: Path, *args: str, timeout: float = 1800,
                 env: dict | None = None) -> subprocess.CompletedProcess:
    """``nbgrader ARGS`` in the course directory ``root`` (``env``: extra environment variables,
    e.g. the grading seed). Raises :class:`NbgraderError` when it fails."""
    exe = Path(sys.executable).with_name("nbgrader")
    db = Path(root) / "gradebook.db"
    cmd = [str(exe), *args, f"--NbGrader.config_file={CONFIG}",
           f"--CourseDirectory.root={root}", f"--CourseDirectory.db_url=sqlite:///{db}"]
    env = {**{k: v for k, v in os.environ.items() if k != "NBGRADER_EXECUTION"}, **(env or {})}
    env["PYTHONPATH"] = os.pathsep.join([str(paths.REPO), env.get("PYTHONPATH", "")])
    # nbgrader runs `alembic` (gradebook migrations) from PATH: use this environment's
    env["PATH"] = os.pathsep.join([str(exe.parent), env.get("PATH", "")])
    done = subprocess.run(cmd, cwd=root, capture_output=True, text=True, timeout=timeout, env=env)
    if done.returncode != 0:
        raise NbgraderError(f"nbgrader {' '.join(args)} failed ({done.returncode}):\n"
                            f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return done
