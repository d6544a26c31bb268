"""The small captioner of Section 8.3: a CNN feature grid read by a GRU decoder with attention.

Show-attend-and-tell in miniature. The CNN turns a 48 x 48 scene into a 6 x 6 grid of M = 36
feature vectors (each sees well beyond its own 8 x 8 pixel cell), plus a learned vector per grid
cell so that "left of" and "above" can be told apart after the weighted sum. At each word the
decoder's previous state scores every cell (additive scores), a softmax turns the scores into
weights, and their weighted sum is the visual context for that word.

Shapes: B images, M = 36 grid cells, F feature width, H decoder state, T words, V vocabulary.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

import torch
from torch import nn

from attention_course.attention import additive_scores, attention_context, masked_attention_weights
from attention_course.data.scenes import SIZE, WORDS, CaptionBatch, EOS, SOS

GRID = 6                     # cells per side
CELL = SIZE // GRID          # pixels per cell side (8)


@dataclass(frozen=True)
class CaptionerConfig:
    features: int = 48       # F
    hidden: int = 64         # H
    attention: int = 48      # width of the additive scores
    embed: int = 24

    def to_dict(self) -> dict:
        return asdict(self)


def feature_cnn(features: int) -> nn.Sequential:
    """(B, 3, 48, 48) -> (B, F, 6, 6): three conv + pool stages."""
    return nn.Sequential(
        nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),          # (B, 32, 24, 24)
        nn.Conv2d(32, 48, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),         # (B, 48, 12, 12)
        nn.Conv2d(48, features, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),   # (B, F, 6, 6)
    )


class Captioner(nn.Module):
    def __init__(self, config: CaptionerConfig = CaptionerConfig()):
        super().__init__()
        self.config = config
        f, h, a, e = config.features, config.hidden, config.attention, config.embed
        self.cnn = feature_cnn(f)
        self.cell_position = nn.Parameter(torch.zeros(GRID * GRID, f))       # (M, F)
        self.embed = nn.Embedding(len(WORDS), e)
        self.init_state = nn.Linear(f, h)
        self.query = nn.Linear(h, a, bias=False)
        self.key = nn.Linear(f, a)
        self.v = nn.Parameter(torch.randn(a) / a ** 0.5)
        self.decoder = nn.GRUCell(e + f, h)
        self.readout = nn.Linear(h + f + e, len(WORDS))

    def grid_features(self, images: torch.Tensor) -> torch.Tensor:
        """(B, 3, 48, 48) -> (B, M, F), cells in row-major order (row 0 at the top)."""
        grid = self.cnn(images)                                              # (B, F, 6, 6)
        return grid.flatten(2).transpose(1, 2) + self.cell_position          # (B, M, F)

    def step(self, word, state, features, keys):
        """One word: (logits (B, V), new state (B, H), weights (B, M))."""
        e = self.embed(word)                                                 # (B, E)
        scores = additive_scores(self.query(state), keys, self.v)            # (B, M)
        everywhere = torch.ones_like(scores, dtype=torch.bool)
        weights = masked_attention_weights(scores, everywhere)               # (B, M)
        context = attention_context(weights, features)                       # (B, F)
        state = self.decoder(torch.cat([e, context], -1), state)             # (B, H)
        return self.readout(torch.cat([state, context, e], -1)), state, weights

    def start(self, images):
        features = self.grid_features(images)                                # (B, M, F)
        state = torch.tanh(self.init_state(features.mean(1)))                # (B, H)
        return features, self.key(features), state

    def forward(self, batch: CaptionBatch) -> tuple[torch.Tensor, torch.Tensor]:
        """Teacher-forced logits (B, T, V) and attention weights (B, T, M)."""
        features, keys, state = self.start(batch.images)
        logits, weights = [], []
        for t in range(batch.decoder_input.shape[1]):
            out, state, w = self.step(batch.decoder_input[:, t], state, features, keys)
            logits.append(out)
            weights.append(w)
        return torch.stack(logits, 1), torch.stack(weights, 1)

    @torch.no_grad()
    def generate(self, images: torch.Tensor, max_words: int = 12):
        """Greedy captions: word ids (B, T) and the weights each word was generated with (B, T, M)."""
        features, keys, state = self.start(images)
        word = torch.full((images.shape[0],), SOS, device=images.device)
        done = torch.zeros_like(word, dtype=torch.bool)
        words, weights = [], []
        for _ in range(max_words):
            logits, state, w = self.step(word, state, features, keys)
            word = logits.argmax(-1)
            words.append(word)
            weights.append(w)
            done |= word == EOS
            if bool(done.all()):
                break
        return torch.stack(words, 1), torch.stack(weights, 1)
