"""The book's build tooling (the pages' own figures and plots are :mod:`attention_course.book`).

- :mod:`~attention_course_instructor.book.build` -- builds the executed book with its browser assets
  served locally (``python -m attention_course_instructor.book.build``, what ``make book`` runs);
- :mod:`~attention_course_instructor.book.outcomes` -- checks ``book/outcomes.yml`` and writes the
  concept index;
- :mod:`~attention_course_instructor.book.sphinx_fixes` -- a Sphinx extension of the build (each
  page script once);
- :mod:`~attention_course_instructor.book.edition` -- the student edition (``make edition``).
"""
