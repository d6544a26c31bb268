"""The instructor side of the course *Attention and Transformers*: never in the student wheel.

- :mod:`attention_course_instructor.grading` -- grading: the checks framework, the nbgrader
  pipeline and preprocessors, the exchange, the hardened grader and its Dask workers;
- :mod:`attention_course_instructor.book` -- the book's build tooling: the build, the outcomes
  index, the Sphinx extension, the student edition;
- :mod:`attention_course_instructor.lab12_text` -- writes Lab 12's text (Python's documentation)
  into the student package;
- :mod:`attention_course_instructor.paths` -- the course repository's folders.

Its version is the student package's: ``_version.py`` here is a link to
``attention_course/_version.py``, so the two wheels, built from one repository, carry one version.
"""
from attention_course_instructor._version import __version__  # noqa: F401
