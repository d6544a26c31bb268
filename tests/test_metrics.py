"""Exact accuracy and CER, checked against an independent edit distance and edge cases."""
import random

import pytest

from attention_course.metrics import (
    cer_one, character_error_rate, edit_distance, exact_accuracy)


def naive_distance(a, b):
    """Textbook recursion with memoisation, independent of rapidfuzz."""
    from functools import lru_cache

    @lru_cache(None)
    def d(i, j):
        if i == 0 or j == 0:
            return i + j
        return min(d(i - 1, j) + 1, d(i, j - 1) + 1, d(i - 1, j - 1) + (a[i - 1] != b[j - 1]))
    return d(len(a), len(b))


def test_edit_distance_matches_naive():
    rng = random.Random(0)
    for _ in range(300):
        a = "".join(rng.choice("012") for _ in range(rng.randint(0, 8)))
        b = "".join(rng.choice("012") for _ in range(rng.randint(0, 8)))
        assert edit_distance(a, b) == naive_distance(a, b)


def test_edge_cases():
    assert cer_one("", "123") == 1.0                     # empty prediction
    assert cer_one("1234567", "12") == 2.5               # too long: above 1
    assert cer_one("", "") == 0.0 and cer_one("12", "") == 2.0   # the empty-target rule
    assert character_error_rate(["", "123456"], ["123", "12"]) == 7 / 5
    assert exact_accuracy(["1", "2"], ["1", "3"]) == 0.5


def test_bad_input_is_explained():
    with pytest.raises(ValueError, match="2 predictions for 1 targets"):
        exact_accuracy(["1", "2"], ["1"])
    with pytest.raises(TypeError, match="strings"):
        character_error_rate([12], ["12"])
    with pytest.raises(ValueError, match="at least one"):
        exact_accuracy([], [])
