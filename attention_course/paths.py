"""Where things are: the one definition of the package's and the repository's folders.

``PACKAGE`` is this package (installed or editable). ``REPO`` is the checkout it lives in when it
is used from the repository (``make book``, the tests, the instructor's commands); a student who
installed the wheel has no repository, and nothing a student runs looks there.
"""
from __future__ import annotations

from pathlib import Path

PACKAGE = Path(__file__).resolve().parent
REPO = PACKAGE.parent
CHECKPOINTS = PACKAGE / "checkpoints"           # committed weights of the book's small models
TEXTS = PACKAGE / "data" / "texts"              # the course's own prose (CC0)
SOURCE = REPO / "source"                        # instructor notebooks and their checks
BUILD = REPO / "_build"
HTML = BUILD / "html"
OFFLINE = REPO / "offline"                      # npm packages the built book serves itself
