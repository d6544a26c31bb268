"""Data sets of the course: digit strips (Lab 8)."""
from attention_course.data.strips import (  # noqa: F401
    DIGITS, EOS, PAD, SOS, NUM_CLASSES, VOCAB_SIZE,
    DigitPools, StripBatch, StripStyle, load_digit_pools, make_strips, decode_tokens,
)
