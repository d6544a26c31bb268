"""Training and reading the copy model of Sections 8.1-8.2.

The model copies windows of the course's text (``data/texts/harbour_town.txt``). The first 85 % of
the text trains it; windows of the last 15 % measure it; the sentence the book shows,
:data:`SHOWCASE`, appears in neither.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from rapidfuzz.distance import Levenshtein
from torch import nn

from attention_course.core.copy_model import CopyConfig, CopyModel
from attention_course.data.text import LETTERS, PAD, decode, load_text, make_copy_batch, sample_windows
from attention_course.tasks.fitting import TrainingConfig, fit

SHOWCASE = "alice was beginning to get very tired of"      # 40 characters, not in the training text
TRAIN_FRACTION = 0.85


@dataclass(frozen=True)
class CopyTraining(TrainingConfig):
    steps: int = 3000
    batch: int = 64
    lr: float = 1e-2
    min_len: int = 1
    max_len: int = 45
    random_fraction: float = 0.5   # share of each batch that is random letters, not text
    curriculum: float = 0.3        # the longest length grows from 8 to max_len over this share of steps
    seed: int = 0


def text_splits() -> tuple[str, str]:
    """(training text, held-out text): the course text cut at :data:`TRAIN_FRACTION`."""
    text = load_text()
    cut = int(len(text) * TRAIN_FRACTION)
    return text[:cut], text[cut:]


def train_copy_model(config: CopyConfig, training: CopyTraining = CopyTraining(),
                     log_every: int = 0) -> tuple[CopyModel, dict]:
    """Train on random windows of the training text; returns the model and a training record."""
    torch.manual_seed(training.seed)
    gen = torch.Generator().manual_seed(training.seed)
    train_text, _ = text_splits()
    model = CopyModel(config)
    loss_fn = nn.CrossEntropyLoss(ignore_index=PAD)

    def next_batch(step):
        return make_copy_batch(training_strings(train_text, training, step, gen))

    def loss_of(model, batch):
        logits, _ = model(batch)                                   # (B, T, V)
        return loss_fn(logits.flatten(0, 1), batch.target.flatten())

    record = fit(model, next_batch, loss_of, training.steps, training.lr, log_every=log_every)
    return model, record


def training_strings(text: str, training: CopyTraining, step: int,
                     generator: torch.Generator) -> list[str]:
    """One batch of strings to copy: windows of ``text`` and random strings of its characters.

    Random strings cannot be guessed from the words around them, so the model has to copy; the
    longest length grows with ``step`` (a curriculum) so that short alignments are learned first.
    """
    ramp = max(1, int(training.curriculum * training.steps))
    longest = min(training.max_len, 8 + (training.max_len - 8) * step // ramp)
    n_random = int(round(training.random_fraction * training.batch))
    windows = sample_windows(text, training.batch - n_random, training.min_len, longest, generator)
    letters = LETTERS                      # every character, also those rare in the text (z, q, x)
    lengths = torch.randint(training.min_len, longest + 1, (n_random,), generator=generator)
    randoms = ["".join(letters[i] for i in torch.randint(0, len(letters), (int(n),),
                                                         generator=generator)) for n in lengths]
    return windows + randoms


def copy_strings(model: CopyModel, texts: list[str]) -> list[str]:
    """The model's greedy copy of every string."""
    tokens, _ = model.copy(make_copy_batch(texts))
    return [decode(row) for row in tokens]


def evaluate_copying(model: CopyModel, lengths=(5, 10, 20, 30, 40), count: int = 200,
                     seed: int = 1234) -> dict:
    """Exact-copy rate and CER on ``count`` held-out windows of each length."""
    _, held_out = text_splits()
    gen = torch.Generator().manual_seed(seed)
    table = {}
    for n in lengths:
        texts = sample_windows(held_out, count, n, n, gen)
        copies = copy_strings(model, texts)
        edits = sum(Levenshtein.distance(c, t) for c, t in zip(copies, texts))
        table[n] = {"exact": sum(c == t for c, t in zip(copies, texts)) / len(texts),
                    "cer": edits / sum(len(t) for t in texts)}      # windows are never empty
    return table


def alignment(model: CopyModel, text: str = SHOWCASE) -> tuple[str, np.ndarray]:
    """The model's copy of ``text`` and its attention matrix (output steps x input characters).

    The matrix keeps one row per character written (the end-of-string step is dropped).
    """
    if not model.config.attention:
        raise ValueError("a model without attention has no alignment matrix")
    tokens, weights = model.copy(make_copy_batch([text]))
    copy = decode(tokens[0])
    return copy, weights[0, : len(copy)].numpy()                # (T, N)


def diagonal_counts(weights: np.ndarray) -> dict:
    """How many rows have their largest weight on the diagonal, one step off it, or further."""
    offsets = np.abs(weights.argmax(1) - np.arange(weights.shape[0]))
    return {"rows": int(weights.shape[0]), "on_diagonal": int((offsets == 0).sum()),
            "one_off": int((offsets == 1).sum()), "further": int((offsets > 1).sum())}
