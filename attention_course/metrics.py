"""Exact-string accuracy and character error rate (CER) for digit-string readers.

CER of one reading = edit distance(prediction, target) / len(target), the edit distance counting
insertions, deletions and substitutions (Levenshtein). A too-long prediction can push it above 1.
**Empty target rule:** the denominator is ``max(len(target), 1)``, so an empty target scores 0 for an
empty prediction and ``len(prediction)`` otherwise (every predicted character is an insertion).
Over a set of readings, :func:`character_error_rate` is the *corpus* rate: total edits / total target
characters (again with at least 1 in the denominator), which weights long strings by their length.
"""
from __future__ import annotations

from rapidfuzz.distance import Levenshtein


def edit_distance(prediction: str, target: str) -> int:
    """Levenshtein distance (insertions, deletions, substitutions each cost 1)."""
    return Levenshtein.distance(prediction, target)


def cer_one(prediction: str, target: str) -> float:
    """Character error rate of one reading (see the module note for the empty-target rule)."""
    return edit_distance(prediction, target) / max(len(target), 1)


def _check_pairs(predictions, targets):
    predictions, targets = list(predictions), list(targets)
    if len(predictions) != len(targets):
        raise ValueError(f"got {len(predictions)} predictions for {len(targets)} targets")
    for s in predictions + targets:
        if not isinstance(s, str):
            raise TypeError(f"predictions and targets must be strings, got {type(s).__name__}")
    return predictions, targets


def exact_accuracy(predictions, targets) -> float:
    """Fraction of readings equal to their target string (1.0 for no readings is undefined: error)."""
    predictions, targets = _check_pairs(predictions, targets)
    if not targets:
        raise ValueError("exact_accuracy needs at least one reading")
    return sum(p == t for p, t in zip(predictions, targets)) / len(targets)


def character_error_rate(predictions, targets) -> float:
    """Corpus CER: total edit distance / total target length (at least 1)."""
    predictions, targets = _check_pairs(predictions, targets)
    edits = sum(edit_distance(p, t) for p, t in zip(predictions, targets))
    return edits / max(sum(len(t) for t in targets), 1)
