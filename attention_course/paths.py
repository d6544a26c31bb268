"""Where things are in the student package: the one definition of its folders.

``PACKAGE`` is this package (installed or editable). ``REPO`` is the checkout it lives in when it
is used from the repository (``make book``, the tests, the pages' own build); a student who
installed the wheel has no repository, and nothing a student runs looks there. The instructor
side's folders (``source/``, ``_build/``, the npm assets) are :mod:`attention_course_instructor.paths`.
"""
from __future__ import annotations

from pathlib import Path

PACKAGE = Path(__file__).resolve().parent
REPO = PACKAGE.parent
CHECKPOINTS = PACKAGE / "checkpoints"           # committed weights of the book's small models
TEXTS = PACKAGE / "data" / "texts"              # the course's own prose (CC0)
RESULTS = PACKAGE / "book" / "results"          # benchmark results a book page draws (Lab 8's)
