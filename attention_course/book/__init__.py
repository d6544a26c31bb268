"""Book and figure tooling.

- :mod:`~attention_course.book.build` -- builds the executed book with its browser assets served
  locally (``python -m attention_course.book.build``, what ``make book`` runs);
- :mod:`~attention_course.book.outcomes` -- checks ``book/outcomes.yml`` and writes the concept index;
- :mod:`~attention_course.book.figures` -- interactive figures (anywidget) with Python references;
- :mod:`~attention_course.book.plots` -- the Lab 8 results and attention-map plots;
- :mod:`~attention_course.book.sphinx_fixes` -- a Sphinx extension of the build (each page script
  once).
"""
