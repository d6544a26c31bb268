"""The isolated-digit floor of Lab 8's benchmark, measured like for like (the strips' shifts)."""
import json

import numpy as np
import pytest
import torch

from attention_course.data.strips import load_digit_pools
from attention_course.paths import RESULTS as BOOK_RESULTS
from attention_course.tasks.digit_floor import (CNN_STEP_CHOICES, CNN_STEPS, JITTER, _cnn,
                                              chosen_cnn_steps, classifier_mistakes,
                                              digit_classifier_error, error_interval,
                                              image_indices, paired_difference, shifted_digits,
                                              svm_digit_error)
from attention_course.tasks.readers import LAB_TRAINING, TRAIN_POOL


def test_shifted_digits_roll_every_image_as_the_strips_do():
    images = load_digit_pools().images["test"][:5]                  # (5, 8, 8)
    out, shift, index = shifted_digits(images, jitter=1)
    assert out.shape == (15, 8, 8) and sorted(set(shift)) == [-1, 0, 1]
    for k in range(15):
        np.testing.assert_array_equal(out[k], np.roll(images[index[k]], shift[k], axis=0))
    assert shifted_digits(images, jitter=0)[0].shape == (5, 8, 8)


def test_error_interval_resamples_images_not_copies():
    wrong = np.array([1, 1, 1, 0, 0, 0], dtype=float)               # image 0 wrong at every shift
    image = np.array([0, 0, 0, 1, 1, 1])
    low, high = error_interval(wrong, image)
    assert low == 0.0 and high == 1.0                               # two images: anything goes
    assert error_interval(np.zeros(6), image) == (0.0, 0.0)


def test_svm_floor_is_measured_under_the_strip_shifts():
    plain, shifted = digit_classifier_error("svm", False), digit_classifier_error("svm", True)
    n_test = len(load_digit_pools().labels["test"])
    assert plain["n"] == n_test and shifted["n"] == (2 * JITTER + 1) * n_test
    for r in (plain, shifted):
        assert 0 <= r["low"] <= r["error"] <= r["high"] < 0.1
    assert shifted["error"] > plain["error"]                         # shifted digits are harder
    assert svm_digit_error() == shifted["error"]
    assert svm_digit_error(shifts=False) == plain["error"]
    with pytest.raises(ValueError, match="'svm' or 'cnn'"):
        digit_classifier_error("forest")
    train_only = digit_classifier_error("svm", True, train_split="train")
    assert train_only["n"] == shifted["n"] and shifted["error"] <= train_only["error"] + 0.01
    with pytest.raises(ValueError, match=r"'train' or 'train\+val'"):
        digit_classifier_error("svm", train_split="test")           # never train on the test pool
    wrong, image = classifier_mistakes("svm")
    assert wrong.shape == image.shape == (shifted["n"],) and wrong.mean() == shifted["error"]
    assert sorted(set(image)) == list(range(n_test))


def test_paired_difference_compares_two_classifiers_on_the_same_images():
    image = np.array([0, 0, 1, 1, 2, 2, 3, 3])
    a = np.array([1, 1, 1, 0, 0, 0, 0, 0])            # image 0 always, image 1 at one shift
    b = np.array([1, 1, 0, 0, 0, 0, 0, 0])            # image 0 always
    result = paired_difference(a, b, image)
    assert result["difference"] == pytest.approx(0.5 / 4)
    assert result["low"] == 0.0 and result["high"] > 0.0        # never worse than b, by design
    same = paired_difference(a, a, image)
    assert same == {"difference": 0.0, "low": 0.0, "high": 0.0}
    flipped = paired_difference(b, a, image)
    assert flipped["difference"] == -result["difference"] and flipped["high"] == 0.0


def test_cnn_classifier_trains_and_predicts_digits():
    pools = load_digit_pools()
    x, y = pools.images["train"][:256], pools.labels["train"][:256]
    clf = _cnn(x, y, seed=0, steps=150)
    predicted = clf.predict(pools.images["test"][:100])
    assert predicted.shape == (100,) and set(predicted) <= set(range(10))
    assert (predicted == pools.labels["test"][:100]).mean() > 0.5    # it learned something


def test_the_cnn_is_the_same_whatever_threads_its_caller_uses():
    """The floor's CNN trains on one torch thread, so a benchmark on one thread and a script on
    two draw the same floor (on two threads its weights came out differently)."""
    pools = load_digit_pools()
    x, y = pools.images["train"][:512], pools.labels["train"][:512]
    weights = lambda clf: torch.cat([t.flatten() for t in clf.network.state_dict().values()])
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        one = _cnn(x, y, seed=0, steps=60)
        torch.set_num_threads(2)
        two = _cnn(x, y, seed=0, steps=60)
        assert torch.get_num_threads() == 2                              # the caller's, restored
    finally:
        torch.set_num_threads(before)
    assert torch.equal(weights(one), weights(two))


def test_the_floor_trains_on_the_readers_images_and_never_on_what_it_is_tested_on():
    assert all(t.split == TRAIN_POOL for t in LAB_TRAINING.values())
    assert svm_digit_error() == digit_classifier_error("svm", True, train_split=TRAIN_POOL)["error"]
    with pytest.raises(ValueError, match="test_split"):
        classifier_mistakes("svm", train_split="train+val", test_split="val")
    wrong, image = classifier_mistakes("svm", train_split="train", test_split="val")
    assert len(wrong) == (2 * JITTER + 1) * len(load_digit_pools().labels["val"])


def test_the_cnn_trains_as_long_as_the_validation_pool_chose():
    n_val = (2 * JITTER + 1) * len(load_digit_pools().labels["val"])
    one = 1 / n_val                                                  # one validation digit
    assert chosen_cnn_steps({1000: 0.02, 2000: 0.012, 4000: 0.012 - one, 8000: 0.01}) == 8000
    assert chosen_cnn_steps({1000: 0.02, 2000: 0.011, 4000: 0.011 - one, 8000: 0.011}) == 2000
    floors = json.loads((BOOK_RESULTS / "lab8_readers.json").read_text())["floors"]
    assert set(map(int, floors["cnn_validation"])) == set(CNN_STEP_CHOICES)
    chosen = chosen_cnn_steps({int(k): v for k, v in floors["cnn_validation"].items()})
    assert CNN_STEPS == chosen == floors["cnn_chosen"] == floors["cnn_steps"]


def test_image_indices_take_whole_numbers_only():
    """The intervals group read digits by test image with np.bincount, which wants integers:
    whole numbers stored as floats are converted, anything else is refused with the reason."""
    wrong, image = np.array([1.0, 0.0, 0.0, 1.0]), np.array([0.0, 0.0, 1.0, 1.0])
    assert image_indices(image).dtype == np.int64
    assert error_interval(wrong, image) == error_interval(wrong, image.astype(int))
    for bad in (np.array([0.5, 1.0]), np.array([-1, 0]), np.zeros((2, 2))):
        with pytest.raises(ValueError, match="non-negative whole image indices"):
            image_indices(bad)
