"""Shared code of the course *Attention and Transformers*, grouped by role.

- :mod:`attention_course.data` -- data sets: digit strips, the course's own text, shape scenes;
- :mod:`attention_course.core` -- ops and models: shape checks, the encoder-decoder protocol,
  the digit readers, the copy model, the captioner, self-attention and the transformer block,
  the character decoder;
- :mod:`attention_course.tasks` -- training tasks: the one training loop, training the readers,
  the copy model, the captioner and the character decoder, the committed checkpoints;
- :mod:`attention_course.notes` -- helpers of the Chapter 12 lecture notes: tokens, decoding
  strategies, model sizes, long sequences, images, cost;
- :mod:`attention_course.book` -- what the book's pages draw: plots, diagrams, interactive figures;
- :mod:`attention_course.paths`, :mod:`attention_course.seeds`, :mod:`attention_course.devices`
  -- where things are, the one seed rule, where work runs.

This is the package students install (the student wheel). It holds no answer to a graded task:
the reference solutions and the checks of every lab stay with the instructor, in ``source/<lab>/``,
and the grader and the book's build tooling are the instructor package,
``attention_course_instructor`` (``instructor/`` in the course's private repository), which is
never in the student wheel. The course's version is set in one place, :mod:`attention_course._version`.
"""
from attention_course.devices import pick_device  # noqa: F401  (labs: from attention_course import pick_device)

from attention_course._version import __version__  # noqa: E402,F401
