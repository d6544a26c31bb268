"""Lab 12's verdict (attention_course.tasks.lm_verdict): the margin, its noise over test topics
(scipy's bootstrap, checked against resampling written out), the words it says, and the seed
spread it is given, checked against the committed runs of benchmarks/lab12_variants.py."""
from __future__ import annotations

import json
import statistics

import numpy as np
import pytest

from attention_course.tasks import lm_verdict
from conftest import REPO

TOPICS = 33


def fake_topics(model_rate: float, seed: int = 3):
    """Bits of two models on TOPICS topics of different sizes, with noise per topic."""
    rng = np.random.default_rng(seed)
    chars = rng.integers(200, 20_000, TOPICS).astype(float)
    ngram = chars * 1.94 + rng.normal(0, 0.02, TOPICS) * chars
    model = chars * model_rate + rng.normal(0, 0.02, TOPICS) * chars
    return model, ngram, chars


def test_topic_bits_are_each_topics_rate_times_its_length():
    assert lm_verdict.topic_bits(lambda text: 2.0 if "a" in text else 1.0, ["aaa", "bb"]) == [6.0, 2.0]


def test_the_margin_is_per_character_over_all_topics():
    model, ngram, chars = fake_topics(2.0)
    assert lm_verdict.margin(model, ngram, chars) == pytest.approx((model.sum() - ngram.sum()) / chars.sum())


def test_the_topic_spread_is_the_spread_of_resampled_topics():
    model, ngram, chars = fake_topics(1.97)
    picks = np.random.default_rng(0).integers(0, TOPICS, size=(20_000, TOPICS))
    by_hand = ((model[picks].sum(1) - ngram[picks].sum(1)) / chars[picks].sum(1)).std(ddof=1)
    assert lm_verdict.topic_sd(model, ngram, chars) == pytest.approx(by_hand, rel=0.05)
    # the same topics for both models: two models that differ by a constant rate have no spread
    assert lm_verdict.topic_sd(ngram + 0.01 * chars, ngram, chars) == pytest.approx(0, abs=1e-12)


@pytest.mark.parametrize("rate, seed_sd, words", [(1.80, 0.02, "your model is better"),
                                                  (2.10, 0.02, "the n-gram is better"),
                                                  (1.95, 0.02, "level within noise"),
                                                  (1.90, 0.05, "level within noise")])
def test_the_verdict_calls_a_margin_inside_its_interval_level(rate, seed_sd, words):
    model, ngram, chars = fake_topics(rate)
    found = lm_verdict.verdict(model, ngram, chars, seed_sd=seed_sd)
    half = np.hypot(2.776445 * seed_sd, 1.96 * found.topic_sd)     # t(0.975, 4 degrees of freedom)
    assert (found.low, found.high) == pytest.approx((found.margin - half, found.margin + half))
    assert found.words == words


def test_topics_that_do_not_line_up_are_refused_with_the_shapes():
    model, ngram, chars = fake_topics(2.0)
    with pytest.raises(ValueError, match=r"one number per topic.*\(33,\), \(32,\), \(33,\)"):
        lm_verdict.topic_sd(model, ngram[:-1], chars)


def test_topics_without_characters_or_with_endless_bits_are_refused():
    model, ngram, chars = fake_topics(2.0)
    chars[3] = 0
    with pytest.raises(ValueError, match="positive number of characters"):
        lm_verdict.verdict(model, ngram, chars)
    model, ngram, chars = fake_topics(2.0)
    model[5] = np.inf
    with pytest.raises(ValueError, match="finite bits"):
        lm_verdict.verdict(model, ngram, chars)


def test_the_seed_spread_is_the_committed_runs_of_the_recipe():
    results = json.loads((REPO / "benchmarks/results/lab12_variants.json").read_text())
    runs = results["rows"]["the lab's recipe"]["runs"]
    assert sorted(r["seed"] for r in runs) == [0, 1, 2, 3, 4]
    margins = [sum(r["topic_bits"]) / results["sizes"]["test"] - results["ngram"]["test_bpc"] for r in runs]
    assert lm_verdict.SEED_SD == pytest.approx(statistics.stdev(margins), abs=5e-5)
    assert lm_verdict.SEED_RUNS == len(runs)
    assert len(results["ngram"]["topic_bits"]) == len(results["topics"]) == TOPICS


def beats_both(mix) -> bool:
    """Two models sure of different tokens: mixed half and half, fewer bits than either."""
    model, ngram = np.array([0.1, 6.0, 0.2, 5.0]), np.array([6.0, 0.1, 5.0, 0.2])
    mixed = mix(model, ngram, 0.5).sum()
    return bool(mixed < model.sum() and mixed < ngram.sum())


def test_a_mixture_of_models_sure_of_different_tokens_beats_both():
    assert beats_both(lm_verdict.mixture_bits)
    # planted: mixing the bits rather than the probabilities gives their average, never better
    assert not beats_both(lambda model, ngram, w: w * model + (1 - w) * ngram)


def test_a_mixture_is_a_model_between_its_ends_and_never_worse_than_the_average():
    rng = np.random.default_rng(0)
    model, ngram = rng.uniform(0.01, 9, 500), rng.uniform(0.01, 9, 500)
    assert lm_verdict.mixture_bits(model, ngram, 1.0) == pytest.approx(model)
    assert lm_verdict.mixture_bits(model, ngram, 0.0) == pytest.approx(ngram)
    for w in lm_verdict.MIX_WEIGHTS:                        # -log2 is convex
        assert (lm_verdict.mixture_bits(model, ngram, w) <= w * model + (1 - w) * ngram + 1e-12).all()


def test_the_best_weight_is_the_one_that_spends_fewest_bits():
    model, ngram = np.array([0.1, 6.0, 0.2, 5.0]), np.array([6.0, 0.1, 5.0, 0.2])
    assert lm_verdict.best_weight(model, ngram) == 0.5                   # symmetric
    assert lm_verdict.best_weight(model, model + 1) == 1.0              # the n-gram adds nothing
    assert lm_verdict.best_weight(ngram + 1, ngram) == 0.0


def test_bits_of_different_tokens_or_a_weight_outside_0_1_are_refused():
    with pytest.raises(ValueError, match=r"shapes \(3,\) and \(2,\)"):
        lm_verdict.mixture_bits([1.0, 2.0, 3.0], [1.0, 2.0], 0.5)
    with pytest.raises(ValueError, match=r"weight in \[0, 1\], got 1.5"):
        lm_verdict.mixture_bits([1.0], [1.0], 1.5)
