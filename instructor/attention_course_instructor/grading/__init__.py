"""Grading.

- :mod:`~attention_course_instructor.grading.checks` -- the checks framework: a lab's ``source/<lab>/checks.py``
  says, once, how each graded cell's inputs are made, what is called and how it is compared;
  both nbgrader's hidden tests and the hardened grader run it;
- :mod:`~attention_course_instructor.grading.notebook` -- one model of an nbgrader notebook: cell
  roles (built on ``nbgrader.utils``), markers, the released form of a test cell, and a
  submission matched to its source;
- :mod:`~attention_course_instructor.grading.kernel_runtime` -- what runs inside a grading kernel (or
  nbgrader's, for a hidden test): a probe's student calls, returned as plain data;
- :mod:`~attention_course_instructor.grading.nbgrader_cli` -- the ``nbgrader`` command on a course
  directory, with the course's configuration;
- :mod:`~attention_course_instructor.grading.preprocessors` -- the course's nbgrader preprocessors;
- :mod:`~attention_course_instructor.grading.exchange` -- nbgrader's exchange with forged submissions refused
  at collection (selected in the course's ``nbgrader_config.py``);
- :mod:`~attention_course_instructor.grading.hardened` -- the hardened grader, by stage: assemble, probe,
  run (kernel, sandbox), score, record;
- :mod:`~attention_course_instructor.grading.student_code` -- a student's code parsed on the grader's
  side, never raising and safe from CPython 3.11's shared AST state;
- :mod:`~attention_course_instructor.grading.similarity` -- a class's similarity report: every
  submission's answers against the others' and the course's readable code (copydetect);
- :mod:`~attention_course_instructor.grading.lms_export` -- ``nbgrader export`` plugins writing the
  gradebook CSV that Canvas and Moodle import;
- :mod:`~attention_course_instructor.grading.late` -- due dates, extensions and the late policy
  (nbgrader's ``LateSubmissionPlugin``), applied when the hardened grader records a lab;
- :mod:`~attention_course_instructor.grading.lti_ags` -- the labs' totals sent to the LMS gradebook
  by LTI Advantage's Assignment and Grade Services;
- :mod:`~attention_course_instructor.grading.rubric` -- the written answers' rubrics, read from the
  source notebooks;
- :mod:`~attention_course_instructor.grading.by_question` -- grading one question across the class
  and answering regrade requests: a Jupyter server extension beside formgrader.

Nothing here is a reference answer: references are the solutions in ``source/<lab>/``, read on
the instructor's side.
"""
