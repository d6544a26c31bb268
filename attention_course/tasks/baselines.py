"""The isolated-digit floor: how often a strong classifier misreads a single test-pool digit.

A reader of strips cannot be expected to beat the per-digit error of a classifier that sees each
digit cut out for it, so the benchmark compares each reader's CER with this floor.
"""
from __future__ import annotations

from functools import lru_cache

from attention_course.data.strips import load_digit_pools


@lru_cache(maxsize=4)
def isolated_digit_floor(seed: int = 0) -> float:
    """Error rate of an RBF support-vector machine, trained on the train pool, on the test pool."""
    from sklearn.svm import SVC

    pools = load_digit_pools(seed)
    flat = {k: v.reshape(len(v), -1) for k, v in pools.images.items()}
    clf = SVC(kernel="rbf", C=10.0, gamma="scale").fit(flat["train"], pools.labels["train"])
    return float((clf.predict(flat["test"]) != pools.labels["test"]).mean())
