"""The course version: the one place it is set.

Both wheels take it (the instructor package reads this same file through a link), ``make
release`` stamps it into each lab's install cell, and the student edition keeps every released
wheel under it. Bump it when a term's students should get new code; say why in CHANGELOG.md.
"""
__version__ = "0.6.0"
