"""The isolated-digit floor: how often a strong classifier misreads a single test-pool digit.

A reader of strips cannot be expected to beat the per-digit error of a classifier that sees each
digit cut out for it, so the benchmark compares each reader's CER with this floor. The strips
shift every digit up or down by up to ``StripStyle.jitter`` rows, so the floor is measured
*like for like*: the classifier trains on the readers' own pool (``TRAIN_POOL``) at every such
shift and is tested on the test pool at every shift (:func:`shifted_digits`). Unshifted, the same
SVM errs less, and is no floor for a reader of shifted digits (:func:`svm_digit_error` with
``shifts=False``). The floor is the stronger of an RBF SVM and a small CNN; the CNN's number of
training steps is chosen on the validation pool first (:func:`cnn_validation_errors`).
"""
from __future__ import annotations

from contextlib import contextmanager
from functools import lru_cache

import numpy as np

from attention_course.data.strips import StripStyle, load_digit_pools
from attention_course.tasks.readers import TRAIN_POOL

JITTER = StripStyle().jitter
CONFIDENCE_DRAWS = 2000           # bootstrap resamples of the test images for the 95% interval
# The CNN's training length, chosen on the validation pool (chosen_cnn_steps; lab8_readers.md
# records the errors and the choice, and a test holds CNN_STEPS to it).
CNN_STEP_CHOICES = (1000, 2000, 4000, 8000)
CNN_STEPS = 4000


def shifted_digits(images: np.ndarray, jitter: int = JITTER):
    """Every image at every vertical shift -jitter..jitter, rolled as the strips roll them.

    Returns (shifted images (S * n, 8, 8), the shift of each, the image index of each).
    """
    shifts = range(-jitter, jitter + 1)
    out = np.concatenate([np.roll(images, s, axis=1) for s in shifts])
    return (out, np.repeat(list(shifts), len(images)), np.tile(np.arange(len(images)), len(shifts)))


def image_indices(image) -> np.ndarray:
    """The test image of each read digit, as the integer array ``np.bincount`` groups by (whole
    numbers stored as floats are accepted; anything else is an error)."""
    image = np.asarray(image)
    index = image.astype(np.int64)
    if image.ndim != 1 or not np.array_equal(index, image) or (index < 0).any():
        raise ValueError("image should be a 1-D array of non-negative whole image indices, "
                         f"got shape {image.shape} and dtype {image.dtype}")
    return index


def error_interval(wrong: np.ndarray, image: np.ndarray, seed: int = 0) -> tuple[float, float]:
    """95% bootstrap interval of the error rate, resampling test *images* (an image's shifted
    copies are not independent trials)."""
    image = image_indices(image)
    per_image = np.bincount(image, weights=wrong) / np.bincount(image)
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, len(per_image), size=(CONFIDENCE_DRAWS, len(per_image)))
    means = per_image[draws].mean(1)
    return float(np.quantile(means, 0.025)), float(np.quantile(means, 0.975))


def _svm(train_x, train_y):
    from sklearn.svm import SVC

    return SVC(kernel="rbf", C=10.0, gamma="scale").fit(train_x.reshape(len(train_x), -1), train_y)


@contextmanager
def _one_torch_thread():
    """Run torch on one thread inside the block: the CNN's numbers then do not depend on how many
    threads the caller uses (sums split over threads round differently)."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def _cnn(train_x, train_y, seed: int, steps: int = CNN_STEPS, batch: int = 64):
    """A small convolutional classifier of 8x8 digits, trained as the readers are: mini-batches
    drawn at random with Gaussian pixel noise (0.1), label smoothing (0.1), Adam with a cosine
    decay from 3e-3 over ``steps`` steps; on one torch thread, so that it is the same classifier
    in every process."""
    with _one_torch_thread():
        return _trained_cnn(train_x, train_y, seed, steps, batch)


def _trained_cnn(train_x, train_y, seed: int, steps: int, batch: int):
    import torch
    from torch import nn

    torch.manual_seed(seed)
    net = nn.Sequential(nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(),
                        nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                        nn.Flatten(), nn.Dropout(0.3), nn.Linear(64 * 16, 10))
    x = torch.as_tensor(train_x)[:, None]                                  # (n, 1, 8, 8)
    y = torch.as_tensor(train_y, dtype=torch.long)
    opt = torch.optim.Adam(net.parameters(), lr=3e-3)
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(opt, steps)
    draws = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        idx = torch.randint(len(x), (batch,), generator=draws)
        noisy = (x[idx] + 0.1 * torch.randn(x[idx].shape, generator=draws)).clamp(0, 1)
        loss = nn.functional.cross_entropy(net(noisy), y[idx], label_smoothing=0.1)
        opt.zero_grad()
        loss.backward()
        opt.step()
        schedule.step()
    net.eval()

    class Predictor:
        network = net

        @staticmethod
        def predict(test_x):
            with torch.no_grad(), _one_torch_thread():
                return net(torch.as_tensor(test_x)[:, None]).argmax(1).numpy()
    return Predictor


def paired_difference(wrong_a: np.ndarray, wrong_b: np.ndarray, image: np.ndarray,
                      seed: int = 0) -> dict:
    """How much more often ``a`` errs than ``b`` on the *same* test digits, with a 95% bootstrap
    interval that resamples test images (each image's error averaged over its shifted copies,
    and, for a reader trained on several seeds, over the seeds: pass the mean of their mistakes).
    Returns ``{"difference", "low", "high"}``; an interval that holds 0 means this test pool
    cannot tell the two apart."""
    image = image_indices(image)
    count = np.bincount(image)
    per_image = (np.bincount(image, weights=np.asarray(wrong_a, float))
                 - np.bincount(image, weights=np.asarray(wrong_b, float))) / count
    rng = np.random.default_rng(seed)
    draws = per_image[rng.integers(0, len(per_image), size=(CONFIDENCE_DRAWS, len(per_image)))]
    means = draws.mean(1)
    return {"difference": float(per_image.mean()), "low": float(np.quantile(means, 0.025)),
            "high": float(np.quantile(means, 0.975))}


@lru_cache(maxsize=16)
def classifier_mistakes(kind: str = "svm", shifts: bool = True, seed: int = 0,
                        train_split: str = TRAIN_POOL, test_split: str = "test",
                        steps: int = CNN_STEPS) -> tuple[np.ndarray, np.ndarray]:
    """Which isolated digits of ``test_split`` a classifier misreads: ``(wrong, image)``, one
    entry per digit at every strip shift (the order of :func:`shifted_digits`), ``image`` the
    image each one is. ``kind``: ``"svm"`` (RBF SVM) or ``"cnn"`` (a small CNN trained for
    ``steps`` steps), trained on the ``train_split`` pool (by default the readers' own,
    ``TRAIN_POOL``), both at every strip shift when ``shifts``. ``test_split`` is ``"test"``, or
    ``"val"`` for a classifier trained on ``"train"`` alone (choosing the CNN's length)."""
    if kind not in ("svm", "cnn"):
        raise ValueError(f"kind must be 'svm' or 'cnn', got {kind!r}")
    if train_split not in ("train", "train+val"):
        raise ValueError(f"train_split must be 'train' or 'train+val', got {train_split!r}")
    if test_split not in ("test", "val") or test_split in train_split.split("+"):
        raise ValueError(f"test_split must be 'test', or 'val' when training on 'train' alone; "
                         f"got {test_split!r} with train_split {train_split!r}")
    pools = load_digit_pools(seed)
    jitter = JITTER if shifts else 0
    images, labels = pools.joined(train_split)
    test_images, test_labels = pools.joined(test_split)
    train_x, _, train_i = shifted_digits(images, jitter)
    test_x, _, test_i = shifted_digits(test_images, jitter)
    train_y, test_y = labels[train_i], test_labels[test_i]
    if kind == "svm":
        wrong = _svm(train_x, train_y).predict(test_x.reshape(len(test_x), -1)) != test_y
    else:
        wrong = _cnn(train_x, train_y, seed, steps).predict(test_x) != test_y
    return wrong, test_i


def digit_classifier_error(kind: str = "svm", shifts: bool = True, seed: int = 0,
                           train_split: str = TRAIN_POOL) -> dict:
    """Error of an isolated-digit classifier (:func:`classifier_mistakes`) on the test pool.

    Returns ``{"error", "low", "high", "n"}``: the error rate over test digits, its 95% interval
    and the number of test digits scored.
    """
    wrong, test_i = classifier_mistakes(kind, shifts, seed, train_split)
    low, high = error_interval(wrong.astype(float), test_i, seed)
    return {"error": float(wrong.mean()), "low": low, "high": high, "n": int(len(wrong))}


def cnn_validation_errors(seed: int = 0, choices=CNN_STEP_CHOICES) -> dict:
    """The CNN's error on the validation digits (at every strip shift) after each number of
    training steps in ``choices``, trained on the train pool alone: ``{steps: error}``."""
    return {steps: float(classifier_mistakes("cnn", True, seed, "train", "val", steps)[0].mean())
            for steps in choices}


def chosen_cnn_steps(errors: dict) -> int:
    """The fewest steps whose validation error is within one validation digit of the lowest
    (``errors`` as :func:`cnn_validation_errors` gives them)."""
    n_val = len(load_digit_pools().labels["val"]) * (2 * JITTER + 1)
    best = min(errors.values())
    return min(steps for steps, error in errors.items() if error <= best + 1 / n_val + 1e-12)


def like_for_like_floor(seed: int = 0) -> dict:
    """The strongest shift-trained classifier (SVM or CNN) under the strips' shifts, with the
    others beside it: ``{"kind", "error", "low", "high", "n", "all": {kind: result}}``."""
    results = {kind: digit_classifier_error(kind, True, seed) for kind in ("svm", "cnn")}
    best = min(results, key=lambda k: results[k]["error"])
    return {"kind": best, **results[best], "all": results}


def svm_digit_error(seed: int = 0, shifts: bool = True) -> float:
    """The RBF SVM's error on isolated test digits, trained and tested at the strips' shifts
    (``shifts=False``: on unshifted digits). It takes a second, so the lab draws it as its
    reference line; the benchmark's floor, :func:`like_for_like_floor`, is the stronger of it
    and a CNN that trains for under a minute."""
    return digit_classifier_error("svm", shifts, seed)["error"]
