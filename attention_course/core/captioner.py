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

from attention_course.core.seq2seq import Tokens, decode_greedily, teacher_forced
from attention_course.data.scenes import EOS, PAD, SIZE, SOS, WORDS, CaptionBatch

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

    tokens = Tokens(sos=SOS, eos=EOS, pad=PAD)

    def encode(self, images: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The memory: grid features (B, M, F) and their keys (B, M, A)."""
        features = self.grid_features(images)                                # (B, M, F)
        return features, self.key(features)

    def start(self, memory) -> torch.Tensor:
        features, _ = memory
        return torch.tanh(self.init_state(features.mean(1)))                 # (B, H)

    def step(self, memory, state, word):
        """One word: (logits (B, V), new state (B, H), weights (B, M)) -- every cell may be attended."""
        features, keys = memory
        e = self.embed(word)                                                 # (B, E)
        scores = torch.tanh(self.query(state).unsqueeze(1) + keys) @ self.v  # (B, M) additive scores
        weights = torch.softmax(scores, -1)                                  # (B, M)
        context = torch.bmm(weights.unsqueeze(1), features).squeeze(1)       # (B, F)
        state = self.decoder(torch.cat([e, context], -1), state)             # (B, H)
        return self.readout(torch.cat([state, context, e], -1)), state, weights

    def forward(self, batch: CaptionBatch) -> tuple[torch.Tensor, torch.Tensor]:
        """Teacher-forced logits (B, T, V) and attention weights (B, T, M)."""
        memory = self.encode(batch.images)
        return teacher_forced(self, memory, self.start(memory), batch.decoder_input)

    @torch.no_grad()
    def generate(self, images: torch.Tensor, max_words: int = 12):
        """Greedy captions: word ids (B, T) and the weights each word was generated with (B, T, M)."""
        memory = self.encode(images)
        return decode_greedily(self, memory, self.start(memory), batch=images.shape[0],
                               max_len=max_words, tokens=self.tokens, device=images.device)
