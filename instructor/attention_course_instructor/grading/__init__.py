"""Grading.

- :mod:`~attention_course_instructor.grading.checks` -- the checks framework: a lab's ``source/<lab>/checks.py``
  says, once, how each graded cell's inputs are made, what is called and how it is compared;
  both nbgrader's hidden tests and the hardened grader run it;
- :mod:`~attention_course_instructor.grading.pipeline` -- the nbgrader pipeline driven from Python (release,
  solutions, autograde, gradebook scores) for the tests;
- :mod:`~attention_course_instructor.grading.preprocessors` -- the course's nbgrader preprocessors;
- :mod:`~attention_course_instructor.grading.exchange` -- nbgrader's exchange with forged submissions refused
  at collection (selected in the course's ``nbgrader_config.py``);
- :mod:`~attention_course_instructor.grading.hardened` -- the hardened grader, by stage: assemble, probe,
  run (kernel, sandbox), score, record.

Nothing here is a reference answer: references are the solutions in ``source/<lab>/``, read on
the instructor's side.
"""
