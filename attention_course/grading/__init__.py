"""nbgrader helpers: the course's preprocessors and the pipeline used by the tests."""
