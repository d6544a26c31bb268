"""Digit strips: shapes, labels, determinism, pools split by image, covering strips."""
from collections import Counter

import numpy as np
import pytest
import torch

from attention_course.data import (EOS, PAD, covering_strips, decode_tokens, load_digit_pools,
                                   make_strips)
from attention_course.data.strips import StripStyle, bundled_digits, encode_targets


def test_shapes_mask_and_targets():
    b = make_strips([2, 5], count=6, seed=3)
    assert b.columns.shape[0] == 6 and b.columns.shape[2] == 8
    assert b.mask.shape == b.columns.shape[:2] and b.mask.dtype == torch.bool
    assert torch.all(b.columns[~b.mask] == 0), "padding columns are blank"
    for row, text in zip(b.targets, b.texts):
        assert decode_tokens(row) == text
        assert row[len(text)] == EOS and torch.all(row[len(text) + 1:] == PAD)
    assert all(len(t) in (2, 5) for t in b.texts)


def test_strip_width_follows_style():
    style = StripStyle(gap=(1, 1), jitter=0, lead=2, tail=6)
    b = make_strips(3, count=2, seed=0, style=style)
    assert b.mask.sum(1).tolist() == [2 + 3 * 8 + 2 + 6] * 2
    assert b.spans[0] == [(2, 9), (11, 18), (20, 27)]


def test_lead_and_tail_may_be_ranges():
    style = StripStyle(gap=(0, 0), jitter=0, lead=(0, 25), tail=(0, 6))
    b = make_strips(2, count=60, seed=4, style=style)
    leads = [spans[0][0] for spans in b.spans]
    tails = [int(n) - 1 - spans[-1][1] for n, spans in zip(b.mask.sum(1), b.spans)]
    assert min(leads) >= 0 and max(leads) <= 25 and len(set(leads)) > 10
    assert min(tails) == 0 and max(tails) == 6


def test_spans_hold_ink_and_gaps_do_not():
    b = make_strips(4, count=3, seed=1, style=StripStyle(jitter=0))
    for strip, spans in zip(b.columns, b.spans):
        ink = strip.sum(1) > 0                                    # (N,)
        inside = torch.zeros_like(ink)
        for first, last in spans:
            inside[first:last + 1] = True
        assert not torch.any(ink & ~inside)


def test_deterministic_given_seed():
    a, b = make_strips(range(1, 9), 5, seed=11), make_strips(range(1, 9), 5, seed=11)
    assert a.texts == b.texts and torch.equal(a.columns, b.columns)
    assert make_strips(range(1, 9), 5, seed=12).texts != a.texts


def test_pools_are_disjoint_by_image():
    pools = load_digit_pools()
    sizes = {k: pools.size(k) for k in ("train", "val", "test")}
    assert sum(sizes.values()) == 1797 and sizes["test"] == 540
    flat = {k: {v.tobytes() for v in pools.images[k]} for k in pools.images}
    # a few digits in load_digits are exact duplicates; the split is by index, so allow those
    assert len(flat["train"] & flat["test"]) <= 2


def test_the_bundled_digits_are_scikit_learns_load_digits():
    """Read from scikit-learn's own file, as load_digits reads it: the same images and labels."""
    from sklearn.datasets import load_digits

    pixels, targets = bundled_digits()
    digits = load_digits()
    assert pixels.shape == (1797, 8, 8) and pixels.dtype == digits.images.dtype
    assert np.array_equal(pixels, digits.images) and np.array_equal(targets, digits.target)


@pytest.mark.parametrize("bad", [0, [], [3, 0]])
def test_bad_lengths_raise(bad):
    with pytest.raises(ValueError, match="lengths"):
        make_strips(bad, 2, seed=0)


def test_bad_split_and_tokens_raise():
    with pytest.raises(ValueError, match="split"):
        make_strips(2, 2, seed=0, split="holdout")
    with pytest.raises(ValueError, match="not a digit"):
        decode_tokens([1, 11])
    assert encode_targets(["", "7"]).tolist() == [[EOS, PAD], [7, EOS]]


def test_warp_augmentation_is_deterministic_and_bounded():
    from attention_course.data.strips import warp_digit

    style = StripStyle(warp=0.2)
    a, b = make_strips(4, 3, seed=5, style=style), make_strips(4, 3, seed=5, style=style)
    assert torch.equal(a.columns, b.columns) and a.texts == b.texts
    assert a.columns.min() >= 0 and a.columns.max() <= 1
    image = load_digit_pools().images["train"][0]
    warped = warp_digit(image, 0.2, np.random.default_rng(0))
    assert warped.shape == (8, 8) and not np.allclose(warped, image)
    assert np.allclose(warp_digit(image, 1e-9, np.random.default_rng(0)), image, atol=1e-6)


def test_combined_pools():
    both = make_strips(1, 200, seed=2, split="train+val", style=StripStyle(jitter=0))
    pools = load_digit_pools()
    val = {img.tobytes() for img in pools.images["val"]}
    digits = [both.columns[b, 2:10].T.numpy().tobytes() for b in range(200)]   # the one 8x8 digit
    assert any(d in val for d in digits), "train+val strips should use validation images too"


def placed_digits(batch) -> Counter:
    """The (8x8 image bytes, label) of every digit a batch's strips hold, counted."""
    return Counter((batch.columns[b, first:last + 1].T.numpy().tobytes(), int(text[i]))
                   for b, (spans, text) in enumerate(zip(batch.spans, batch.texts))
                   for i, (first, last) in enumerate(spans))


def every_shifted_digit(split: str, jitter: int) -> Counter:
    pools = load_digit_pools()
    return Counter((np.roll(image, shift, axis=0).tobytes(), int(label))
                   for image, label in zip(pools.images[split], pools.labels[split])
                   for shift in range(-jitter, jitter + 1))


@pytest.mark.parametrize("length, digits, passes", [(3, 1620, 1), (1, 1621, 2), (5, 10, 1)])
def test_covering_strips_hold_every_test_digit_at_every_shift_equally_often(length, digits,
                                                                            passes):
    """Whole passes over the (image, shift) pairs, and each digit's label is the text's."""
    batch = covering_strips(length, digits, seed=4)
    everything = every_shifted_digit("test", StripStyle().jitter)
    assert sum(everything.values()) == 1620                     # 540 images at 3 shifts
    assert all(len(t) == length for t in batch.texts)
    assert placed_digits(batch) == Counter({k: passes * n for k, n in everything.items()})
    again = covering_strips(length, digits, seed=4)
    assert torch.equal(again.columns, batch.columns) and again.texts == batch.texts
    assert covering_strips(length, digits, seed=5).texts != batch.texts


def test_covering_strips_top_up_the_last_strip_from_one_more_pass():
    batch = covering_strips(7, 1620, seed=0, style=StripStyle(gap=(2, 2), lead=1, tail=3))
    placed, everything = placed_digits(batch), every_shifted_digit("test", 1)
    assert len(batch) == 232 and sum(placed.values()) == 1624   # 1620 = 7 * 231 + 3
    assert set(placed) == set(everything)                       # every pair at least once
    assert sum((placed - everything).values()) == 4             # and 4 of them twice
    assert {tuple(np.diff([f for f, _ in s])) for s in batch.spans} == {(10,) * 6}
    assert {int(m.sum()) for m in batch.mask} == {1 + 7 * 8 + 6 * 2 + 3}


def test_covering_strips_refuse_what_they_cannot_cover():
    with pytest.raises(ValueError, match="positive"):
        covering_strips(0, 100, seed=0)
    with pytest.raises(ValueError, match="split"):
        covering_strips(2, 100, seed=0, split="holdout")
    with pytest.raises(ValueError, match="warp"):
        covering_strips(2, 100, seed=0, style=StripStyle(warp=0.1))
