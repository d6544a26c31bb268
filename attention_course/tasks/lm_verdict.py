"""Lab 12's verdict (its last cell): how far one trained model is from the best n-gram on the test
split, and how much of that distance is noise.

Two things would move the margin if the lab were run again. The seed: another seed trains another
model; :data:`SEED_SD` is the spread of the lab's recipe over the course's five runs of it (seeds
0-4; instructors: ``benchmarks/lab12_variants.py``, whose committed results a test checks this
number against). And the test text, one sample of Python's documentation: :func:`topic_sd`
resamples its topics (a bootstrap). The margin's 95% interval takes both,
``margin +- sqrt((t * SEED_SD) ** 2 + (1.96 * topic_sd) ** 2)``, with Student's t for the seed
part since SEED_SD is itself estimated from five runs; a margin whose interval holds zero is
called level within noise, not a win.

After the verdict, the lab's optional task mixes the two models: :func:`mixture_bits` and
:func:`best_weight`, which ``benchmarks/lab12.py`` uses too.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

# the standard deviation over seeds of the lab's recipe's test bits per character (the n-gram does
# not change with the seed), from benchmarks/results/lab12_variants.json: seeds 0-4
SEED_SD = 0.0168
SEED_RUNS = 5
Z_95 = 1.96
DRAWS = 2000
# the model's share in a mixture with the n-gram, tried on validation (0: the n-gram alone)
MIX_WEIGHTS = tuple(w / 20 for w in range(21))


def topic_bits(score, topics) -> list[float]:
    """Bits of each topic, scored on its own: ``score(text)`` gives bits per character."""
    return [score(text) * len(text) for text in topics]


def margin(model_bits, ngram_bits, chars) -> float:
    """Bits per character of the model minus the n-gram's, over all topics (negative: the model is
    better); each argument holds one number per topic (bits, bits, characters)."""
    return (float(np.sum(model_bits)) - float(np.sum(ngram_bits))) / float(np.sum(chars))


def topic_sd(model_bits, ngram_bits, chars, draws: int = DRAWS, seed: int = 0) -> float:
    """The standard deviation of :func:`margin` over ``draws`` resamplings of the topics (each draw
    takes as many topics as there are, with replacement, the same for both models): scipy's
    paired bootstrap."""
    from scipy.stats import bootstrap

    model_bits, ngram_bits, chars = (np.asarray(a, dtype=float) for a in (model_bits, ngram_bits, chars))
    if not (model_bits.shape == ngram_bits.shape == chars.shape) or model_bits.ndim != 1:
        raise ValueError("expected one number per topic in each of model_bits, ngram_bits and chars, "
                         f"got shapes {model_bits.shape}, {ngram_bits.shape}, {chars.shape}")
    if len(chars) < 2:
        raise ValueError(f"expected at least 2 topics to resample, got {len(chars)}")
    if not (chars > 0).all() or not (np.isfinite(model_bits).all() and np.isfinite(ngram_bits).all()):
        raise ValueError("expected a positive number of characters and finite bits for every topic")

    def resampled(mine, theirs, size, axis=-1):
        return (mine.sum(axis) - theirs.sum(axis)) / size.sum(axis)

    found = bootstrap((model_bits, ngram_bits, chars), resampled, paired=True, vectorized=True,
                      n_resamples=draws, method="percentile", rng=np.random.default_rng(seed))
    return float(found.standard_error)


@dataclass(frozen=True)
class Verdict:
    margin: float        # model minus n-gram, bits per character
    low: float           # the 95% interval
    high: float
    seed_sd: float
    topic_sd: float

    @property
    def words(self) -> str:
        if self.high < 0:
            return "your model is better"
        if self.low > 0:
            return "the n-gram is better"
        return "level within noise"


def t_95(runs: int = SEED_RUNS) -> float:
    """Student's t for a 95% interval from a spread estimated on ``runs`` runs."""
    from scipy.stats import t

    return float(t.ppf(0.975, runs - 1))


def verdict(model_bits, ngram_bits, chars, seed_sd: float = SEED_SD) -> Verdict:
    """The margin, its 95% interval over seeds and test topics, and what it says."""
    found, spread = margin(model_bits, ngram_bits, chars), topic_sd(model_bits, ngram_bits, chars)
    half = math.hypot(t_95() * seed_sd, Z_95 * spread)
    return Verdict(found, found - half, found + half, seed_sd, spread)


def mixture_bits(model_bits, ngram_bits, weight: float) -> np.ndarray:
    """Bits of each token under ``weight`` x the model + (1 - weight) x the n-gram, given each
    one's bits of the same tokens: p = weight * 2 ** -model_bits + (1 - weight) * 2 ** -ngram_bits.
    A mixture of two distributions is one too, so these are the bits of a model."""
    model_bits, ngram_bits = np.asarray(model_bits, dtype=float), np.asarray(ngram_bits, dtype=float)
    if model_bits.shape != ngram_bits.shape or model_bits.ndim != 1:
        raise ValueError("expected each model's bits of the same tokens, one number per token, got "
                         f"shapes {model_bits.shape} and {ngram_bits.shape}")
    if not 0.0 <= weight <= 1.0:
        raise ValueError(f"expected a weight in [0, 1], got {weight}")
    return -np.log2(weight * np.exp2(-model_bits) + (1 - weight) * np.exp2(-ngram_bits))


def best_weight(model_bits, ngram_bits, weights=MIX_WEIGHTS) -> float:
    """The weight of :data:`MIX_WEIGHTS` whose mixture spends the fewest bits on these tokens
    (choose it on validation, then score test with it)."""
    return min(weights, key=lambda w: float(mixture_bits(model_bits, ngram_bits, w).sum()))
