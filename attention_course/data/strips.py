"""Strips of handwritten digits for the digit-string readers of Lab 8.

A strip places ``L`` of scikit-learn's 8x8 digit images left to right with small random gaps and a
vertical jitter; its label is the digit string. A reader sees the strip one *column* (8 pixels) at a
time. Digit images are split into train / validation / test pools **by image**, so a test strip never
reuses an image seen in training. Everything is deterministic given a seed, and nothing is downloaded:
the images ship inside scikit-learn.

Token ids: digits ``0-9`` are themselves, then ``EOS`` (end of string), ``SOS`` (start, decoder
input only) and ``PAD`` (ignored target positions).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np
import torch

DIGITS = 10
EOS, SOS, PAD = 10, 11, 12
NUM_CLASSES = 11          # what a reader predicts: ten digits or end-of-string
VOCAB_SIZE = 13           # what a decoder may receive as its previous token
HEIGHT = 8                # pixels per column
POOL_FRACTIONS = (0.5, 0.2, 0.3)   # train / validation / test images
SPLITS = ("train", "val", "test", "train+val")


@dataclass(frozen=True)
class StripStyle:
    """How strips are drawn. Gaps vary so that a column's position does not encode the length.

    ``lead`` and ``tail`` are a number of columns or an inclusive range ``(low, high)`` drawn
    per strip (a fixed number draws nothing, so fixed styles give the same strips as before).
    """

    gap: tuple[int, int] = (0, 4)     # blank columns between neighbouring digits, inclusive range
    jitter: int = 1                   # vertical shift of each digit, in pixels, up to +-jitter
    lead: int | tuple[int, int] = 2   # blank columns before the first digit
    tail: int | tuple[int, int] = 6   # blank columns after the last digit
    warp: float = 0.0                 # training augmentation: random shear and scale up to +-warp


def _columns(rng, value) -> int:
    """A number of blank columns: ``value`` itself, or drawn from its inclusive range."""
    if isinstance(value, int):
        return value
    low, high = value
    return int(rng.integers(low, high + 1))


@dataclass
class DigitPools:
    """Images (n, 8, 8) scaled to [0, 1] and labels (n,) of each split."""

    images: dict[str, np.ndarray]
    labels: dict[str, np.ndarray]

    def size(self, split: str) -> int:
        return len(self.labels[split])

    def joined(self, split: str) -> tuple[np.ndarray, np.ndarray]:
        """Images and labels of one split, or of splits joined by "+" (``"train+val"``)."""
        parts = split.split("+")
        return (np.concatenate([self.images[p] for p in parts]),
                np.concatenate([self.labels[p] for p in parts]))


@dataclass
class StripBatch:
    """A batch of strips, padded to the widest one.

    columns: (B, N, 8) float -- column ``j`` of strip ``b`` is ``columns[b, j]``
    mask:    (B, N) bool     -- True on real columns, False on padding
    targets: (B, T) long     -- digits then EOS, padded with PAD (T = longest string + 1)
    texts:   the digit strings
    spans:   for each strip, the (first, last) column of every digit
    """

    columns: torch.Tensor
    mask: torch.Tensor
    targets: torch.Tensor
    texts: list[str]
    spans: list[list[tuple[int, int]]] = field(default_factory=list)

    def to(self, device) -> "StripBatch":
        return StripBatch(self.columns.to(device), self.mask.to(device), self.targets.to(device),
                          self.texts, self.spans)

    def __len__(self) -> int:
        return len(self.texts)


def bundled_digits() -> tuple[np.ndarray, np.ndarray]:
    """scikit-learn's 1797 digit images (n, 8, 8), values 0-16, and their labels (n,), read from
    the file scikit-learn ships (``datasets/data/digits.csv.gz``) as its ``load_digits`` reads
    it, without importing scikit-learn: that import takes about a second, in every process that
    draws a strip (each grading kernel among them). Where the file is not found, ``load_digits``."""
    from importlib.util import find_spec

    spec = find_spec("sklearn")
    for folder in (spec.submodule_search_locations or []) if spec else []:
        path = Path(folder) / "datasets" / "data" / "digits.csv.gz"
        if path.is_file():
            table = np.loadtxt(path, delimiter=",")                # (n, 65): 64 pixels, label
            return table[:, :-1].reshape(-1, 8, 8), table[:, -1].astype(int)
    from sklearn.datasets import load_digits

    digits = load_digits()
    return digits.images, digits.target


@lru_cache(maxsize=4)
def load_digit_pools(seed: int = 0) -> DigitPools:
    """Split scikit-learn's 1797 digit images into train/validation/test pools by image."""
    pixels, targets = bundled_digits()
    images = (pixels / 16.0).astype(np.float32)                  # (n, 8, 8) in [0, 1]
    order = np.random.default_rng(seed).permutation(len(images))
    n_train = int(POOL_FRACTIONS[0] * len(images))
    n_val = int(POOL_FRACTIONS[1] * len(images))
    parts = {"train": order[:n_train], "val": order[n_train:n_train + n_val],
             "test": order[n_train + n_val:]}
    return DigitPools(images={k: images[v] for k, v in parts.items()},
                      labels={k: targets[v] for k, v in parts.items()})


def _draw_strip(rng, images, labels, length, style, rolled, chosen=None):
    """Return (image (8, W), text, spans) for one strip of ``length`` random pool digits.
    ``rolled[shift]`` is the pool shifted vertically by ``shift`` rows (np.roll, precomputed).
    ``chosen``: ``(picks, shifts)``, the images and shifts to place instead of random ones
    (gaps, lead and tail are still drawn)."""
    picks = rng.integers(0, len(images), size=length) if chosen is None else chosen[0]
    gaps = rng.integers(style.gap[0], style.gap[1] + 1, size=max(length - 1, 0))
    lead, tail = _columns(rng, style.lead), _columns(rng, style.tail)
    width = lead + 8 * length + int(gaps.sum()) + tail
    strip = np.zeros((HEIGHT, width), dtype=np.float32)
    spans, x = [], lead
    for i, k in enumerate(picks):
        shift = (int(rng.integers(-style.jitter, style.jitter + 1)) if chosen is None
                 else int(chosen[1][i]))
        if style.warp > 0:
            strip[:, x:x + 8] = np.roll(warp_digit(images[k], style.warp, rng), shift, axis=0)
        else:
            strip[:, x:x + 8] = rolled[shift][k]
        spans.append((x, x + 7))
        x += 8 + (int(gaps[i]) if i < length - 1 else 0)
    text = "".join(str(int(labels[k])) for k in picks)
    return strip, text, spans


def warp_digit(image: np.ndarray, amount: float, rng) -> np.ndarray:
    """A random affine distortion of an 8x8 digit: shear and per-axis scale within +-amount."""
    from scipy.ndimage import affine_transform

    shear, sx, sy = rng.uniform(-amount, amount, size=3)
    matrix = np.array([[1 + sy, shear], [0.0, 1 + sx]])     # output (row, col) -> input
    centre = np.array([3.5, 3.5])
    offset = centre - matrix @ centre
    return affine_transform(image, matrix, offset=offset, order=1, mode="constant").clip(0, 1)


def make_strips(lengths, count: int, seed: int, split: str = "train",
                style: StripStyle = StripStyle(), pools: DigitPools | None = None) -> StripBatch:
    """Draw ``count`` strips; each strip's length is drawn uniformly from ``lengths``.

    ``lengths`` is an int or a sequence of ints (>= 1). The same arguments give the same batch.
    """
    lengths = [lengths] if isinstance(lengths, int) else list(lengths)
    if not lengths or min(lengths) < 1:
        raise ValueError(f"lengths must be positive integers, got {lengths!r}")
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    pools = pools or load_digit_pools()
    images, labels = pools.joined(split)
    rng = np.random.default_rng(seed)
    rolled = {shift: np.roll(images, shift, axis=1)
              for shift in range(-style.jitter, style.jitter + 1)}
    drawn = [_draw_strip(rng, images, labels, int(rng.choice(lengths)), style, rolled)
             for _ in range(count)]
    return _batch(drawn)


def covering_strips(length: int, digits: int, seed: int, split: str = "test",
                    style: StripStyle = StripStyle(), pools: DigitPools | None = None
                    ) -> StripBatch:
    """Strips of ``length`` digits that hold every image of ``split`` at every vertical shift
    of ``style`` equally often: the (image, shift) pairs in random order, pass after pass, until
    the strips hold at least ``digits`` digits and whole passes; the last strip is topped up with
    pairs of one more pass. Every length then reads the same digits, so the error rates of two
    lengths differ by what the length does, not by which digits were drawn (``make_strips``
    draws digits with replacement: a few hard ones, drawn more or less often, swing a length's
    error rate as much as the length does). Gaps, lead and tail are drawn as ``make_strips``
    draws them; the same arguments give the same batch."""
    if length < 1 or digits < 1:
        raise ValueError(f"length and digits must be positive, got {length} and {digits}")
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    if style.warp > 0:
        raise ValueError("covering_strips places the pool's own images; style.warp must be 0")
    pools = pools or load_digit_pools()
    images, labels = pools.joined(split)
    rng = np.random.default_rng(seed)
    shifts = np.arange(-style.jitter, style.jitter + 1)
    pairs = len(images) * len(shifts)
    passes = -(-digits // pairs)                                 # whole passes over the pairs
    count = -(-passes * pairs // length)                         # strips that hold them
    order = np.concatenate([rng.permutation(pairs) for _ in range(-(-count * length // pairs))])
    order = order[:count * length].reshape(count, length)        # (strips, length) pair ids
    rolled = {int(shift): np.roll(images, shift, axis=1) for shift in shifts}
    drawn = [_draw_strip(rng, images, labels, length, style, rolled,
                         chosen=(row % len(images), shifts[row // len(images)]))
             for row in order]
    return _batch(drawn)


def _batch(drawn) -> StripBatch:
    """(image (8, W), text, spans) strips -> a StripBatch padded to the widest."""
    strips, texts, spans = (list(part) for part in zip(*drawn))
    count, width = len(strips), max(s.shape[1] for s in strips)
    columns = torch.zeros(count, width, HEIGHT)                  # (B, N, 8)
    mask = torch.zeros(count, width, dtype=torch.bool)           # (B, N)
    for b, s in enumerate(strips):
        columns[b, :s.shape[1]] = torch.from_numpy(s.T)
        mask[b, :s.shape[1]] = True
    return StripBatch(columns, mask, encode_targets(texts), texts, spans)


def encode_targets(texts: list[str]) -> torch.Tensor:
    """Digit strings -> (B, T) long: the digits, then EOS, then PAD up to the longest + 1."""
    t = max(len(s) for s in texts) + 1
    out = torch.full((len(texts), t), PAD, dtype=torch.long)
    for b, s in enumerate(texts):
        out[b, :len(s)] = torch.tensor([int(c) for c in s], dtype=torch.long)
        out[b, len(s)] = EOS
    return out


def decode_tokens(tokens) -> str:
    """Token ids -> digit string, stopping at the first EOS (or PAD)."""
    out = []
    for t in (tokens.tolist() if hasattr(tokens, "tolist") else tokens):
        if t in (EOS, PAD):
            break
        if not 0 <= t < DIGITS:
            raise ValueError(f"token {t} is not a digit (0-9), EOS ({EOS}) or PAD ({PAD})")
        out.append(str(t))
    return "".join(out)
