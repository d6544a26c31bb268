"""What the book's pages draw (the build itself is the instructor package's
:mod:`attention_course_instructor.book`).

- :mod:`~attention_course.book.figures` -- interactive figures (anywidget) with Python references;
- :mod:`~attention_course.book.plots` -- the Lab 8 results and attention-map plots;
- :mod:`~attention_course.book.diagrams` -- the static diagrams of Chapter 8;
- :mod:`~attention_course.book.glue` -- a page's computed values for its prose (myst-nb's glue in
  the book's build, shown under the cell elsewhere);
- ``results/`` -- the committed benchmark results the page of Lab 8's results draws.
"""
