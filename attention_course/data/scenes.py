"""Generated scenes for the captioner of Section 8.3: two coloured shapes and a one-line caption.

Each scene is a ``SIZE`` x ``SIZE`` RGB image on a dark background with two shapes that differ in
colour or shape, placed side by side or one above the other. The caption names the left (or upper)
shape first, so it is a function of the image: "a red circle left of a blue square" or "a green
triangle above a yellow circle". Rendering is NumPy only, deterministic given the generator.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

SIZE = 48
COLOURS = {"red": (0.9, 0.15, 0.1), "green": (0.1, 0.75, 0.2), "blue": (0.15, 0.35, 0.95),
           "yellow": (0.95, 0.85, 0.1)}
SHAPES = ("circle", "square", "triangle")
RELATIONS = {"left": ("left", "of"), "above": ("above",)}
BACKGROUND = (0.08, 0.08, 0.1)
WORDS = ("<pad>", "<sos>", "<eos>", "a", "of", "left", "above") + tuple(COLOURS) + SHAPES
PAD, SOS, EOS = 0, 1, 2
WORD_TO_ID = {w: i for i, w in enumerate(WORDS)}
OBJECT_WORDS = frozenset(COLOURS) | frozenset(SHAPES)       # name what is in the image
FUNCTION_WORDS = frozenset({"a", "of", "left", "above"})     # grammar and relation


@dataclass(frozen=True)
class Thing:
    colour: str
    shape: str
    x: float          # centre, pixels
    y: float
    radius: float     # half the width

    def mask(self) -> np.ndarray:
        """(SIZE, SIZE) boolean: the pixels this shape covers."""
        yy, xx = np.mgrid[0:SIZE, 0:SIZE] + 0.5
        dx, dy = xx - self.x, yy - self.y
        if self.shape == "circle":
            return dx ** 2 + dy ** 2 <= self.radius ** 2
        if self.shape == "square":
            return (np.abs(dx) <= self.radius * 0.85) & (np.abs(dy) <= self.radius * 0.85)
        # triangle pointing up: the half-width grows from 0 at the top to radius at the bottom
        depth = (dy + self.radius) / (2 * self.radius)
        return (depth >= 0) & (depth <= 1) & (np.abs(dx) <= self.radius * depth)


@dataclass(frozen=True)
class Scene:
    first: Thing      # named first: the left or the upper shape
    second: Thing
    relation: str     # "left" or "above"

    def caption(self) -> list[str]:
        words = ["a", self.first.colour, self.first.shape, *RELATIONS[self.relation],
                 "a", self.second.colour, self.second.shape]
        return words

    def image(self) -> np.ndarray:
        """(3, SIZE, SIZE) float32 in [0, 1]."""
        img = np.empty((SIZE, SIZE, 3), np.float32)
        img[:] = BACKGROUND
        for thing in (self.first, self.second):
            img[thing.mask()] = COLOURS[thing.colour]
        return img.transpose(2, 0, 1).copy()


def random_scene(rng: np.random.Generator) -> Scene:
    """Two different (colour, shape) pairs, well apart along one axis and roughly level on the other."""
    names = [(c, s) for c in COLOURS for s in SHAPES]
    i, j = rng.choice(len(names), size=2, replace=False)
    relation = ("left", "above")[rng.integers(2)]
    r1, r2 = rng.uniform(6, 9, size=2)
    along = np.sort(rng.uniform(10, SIZE - 10, size=2))
    while along[1] - along[0] < r1 + r2 + 4:                 # keep the two shapes apart
        along = np.sort(rng.uniform(10, SIZE - 10, size=2))
    across = SIZE / 2 + rng.uniform(-12, 12) + rng.uniform(-3, 3, size=2)
    (x1, x2), (y1, y2) = (along, across) if relation == "left" else (across, along)
    first = Thing(*names[i], float(x1), float(y1), float(r1))
    second = Thing(*names[j], float(x2), float(y2), float(r2))
    return Scene(first, second, relation)


@dataclass
class CaptionBatch:
    """``images`` (B, 3, SIZE, SIZE); ``decoder_input`` (B, T) SOS + words; ``target`` (B, T) words +
    EOS, padded with PAD; ``scenes`` the scenes themselves."""

    images: torch.Tensor
    decoder_input: torch.Tensor
    target: torch.Tensor
    scenes: list[Scene]


def encode_caption(words: list[str]) -> list[int]:
    unknown = [w for w in words if w not in WORD_TO_ID]
    if unknown:
        raise ValueError(f"words outside the caption vocabulary {WORDS[3:]}: {unknown}")
    return [WORD_TO_ID[w] for w in words]


def make_caption_batch(scenes: list[Scene], images: np.ndarray | None = None) -> CaptionBatch:
    """Batch the scenes; ``images`` (B, 3, SIZE, SIZE) replaces the rendered images (interventions)."""
    captions = [encode_caption(s.caption()) for s in scenes]
    t = max(len(c) for c in captions) + 1
    dec = torch.full((len(scenes), t), PAD)
    tgt = torch.full((len(scenes), t), PAD)
    for b, c in enumerate(captions):
        dec[b, 0], dec[b, 1 : len(c) + 1] = SOS, torch.tensor(c)
        tgt[b, : len(c)], tgt[b, len(c)] = torch.tensor(c), EOS
    if images is None:
        images = np.stack([s.image() for s in scenes])
    return CaptionBatch(torch.as_tensor(images), dec, tgt, list(scenes))


def random_scenes(count: int, seed: int) -> list[Scene]:
    rng = np.random.default_rng(seed)
    return [random_scene(rng) for _ in range(count)]
