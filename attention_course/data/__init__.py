"""Data sets of the course: digit strips (Lab 8, :mod:`~attention_course.data.strips`), the course
text of the book's models (:mod:`~attention_course.data.text`), Python's documentation split for
Lab 12 (:mod:`~attention_course.data.python_docs`) and the shape scenes of the captioner
(:mod:`~attention_course.data.scenes`)."""
from attention_course.data.strips import (  # noqa: F401
    DIGITS, EOS, PAD, SOS, NUM_CLASSES, VOCAB_SIZE,
    DigitPools, StripBatch, StripStyle, covering_strips, load_digit_pools, make_strips,
    decode_tokens,
)
