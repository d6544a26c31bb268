"""Where the instructor's things are: the course repository's folders.

The instructor package is used from the course's private repository (an editable install, or
``instructor/`` on the path); ``REPO`` is that checkout.
"""
from __future__ import annotations

from pathlib import Path

from attention_course.paths import PACKAGE as STUDENT_PACKAGE  # noqa: F401  (the student package)

PACKAGE = Path(__file__).resolve().parent
REPO = PACKAGE.parents[1]                       # instructor/attention_course_instructor -> repo
SOURCE = REPO / "source"                        # instructor notebooks and their checks
BUILD = REPO / "_build"
HTML = BUILD / "html"
OFFLINE = REPO / "offline"                      # npm packages the built book serves itself
EDITION = BUILD / "edition"                     # the student edition (make edition)
