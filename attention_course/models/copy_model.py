"""The recurrent copy model of Sections 8.1-8.2: read a string of characters, write it back.

A bidirectional GRU encoder keeps one state per input character (``width`` numbers: half from each
direction). A GRU decoder writes the copy one character at a time. Two ways to give the decoder
the input:

* ``attention=False`` -- the Chapter 7 model: one context, the two final encoder states, used at
  every step (Figure 8.1's bottleneck);
* ``attention=True`` -- Bahdanau attention: at every step the decoder state scores every encoder
  state (additive scores), a masked softmax turns them into weights, and their weighted sum is
  that step's context (Figure 8.2's alignment matrix is these weights).

Shapes: B strings, N input characters, T output steps (N + 1 with end-of-string), d = ``width``,
E = character embedding, V = vocabulary (30).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

import torch
from torch import nn

from attention_course.attention import additive_scores, attention_context, masked_attention_weights
from attention_course.data.text import EOS, SOS, VOCAB_SIZE, CopyBatch


@dataclass(frozen=True)
class CopyConfig:
    width: int = 16            # d: encoder state per position (both directions) and decoder state
    embed: int = 16            # E
    attention: bool = True

    def __post_init__(self):
        if self.width < 2 or self.width % 2:
            raise ValueError(f"width must be an even number >= 2 (half per direction), got {self.width}")

    def to_dict(self) -> dict:
        return asdict(self)


class CopyModel(nn.Module):
    def __init__(self, config: CopyConfig = CopyConfig()):
        super().__init__()
        self.config = config
        d, e = config.width, config.embed
        self.embed = nn.Embedding(VOCAB_SIZE, e)
        self.encoder = nn.GRU(e, d // 2, batch_first=True, bidirectional=True)
        self.init_state = nn.Linear(d, d)                  # decoder's first state from the context
        self.decoder = nn.GRUCell(e + d, d)
        self.query = nn.Linear(d, d, bias=False)           # additive attention, width d
        self.key = nn.Linear(d, d)
        self.v = nn.Parameter(torch.randn(d) / d ** 0.5)
        self.readout = nn.Linear(d + d + e, VOCAB_SIZE)

    def encode(self, source: torch.Tensor, mask: torch.Tensor):
        """States (B, N, d) and the fixed summary (B, d): final forward and first backward state."""
        lengths = mask.sum(1).cpu()
        packed = nn.utils.rnn.pack_padded_sequence(self.embed(source), lengths, batch_first=True,
                                                   enforce_sorted=False)
        out, last = self.encoder(packed)                   # last: (2, B, d/2)
        states, _ = nn.utils.rnn.pad_packed_sequence(out, batch_first=True,
                                                     total_length=source.shape[1])   # (B, N, d)
        return states, torch.cat([last[0], last[1]], dim=-1)                          # (B, d)

    def step(self, token, state, states, keys, mask, summary):
        """One output step: (logits (B, V), new state (B, d), weights (B, N) or None)."""
        e = self.embed(token)                                           # (B, E)
        if self.config.attention:
            scores = additive_scores(self.query(state), keys, self.v)   # (B, N)
            weights = masked_attention_weights(scores, mask)            # (B, N)
            context = attention_context(weights, states)                # (B, d)
        else:
            weights, context = None, summary                            # the one fixed context
        state = self.decoder(torch.cat([e, context], -1), state)        # (B, d)
        logits = self.readout(torch.cat([state, context, e], -1))       # (B, V)
        return logits, state, weights

    def forward(self, batch: CopyBatch) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Teacher-forced logits (B, T, V) and attention weights (B, T, N) (None without attention)."""
        states, summary = self.encode(batch.source, batch.source_mask)
        keys = self.key(states)                                         # (B, N, d)
        state = torch.tanh(self.init_state(summary))                    # (B, d)
        logits, weights = [], []
        for t in range(batch.decoder_input.shape[1]):
            out, state, w = self.step(batch.decoder_input[:, t], state, states, keys,
                                      batch.source_mask, summary)
            logits.append(out)
            weights.append(w)
        stacked = torch.stack(weights, 1) if self.config.attention else None
        return torch.stack(logits, 1), stacked

    @torch.no_grad()
    def copy(self, batch: CopyBatch, max_extra: int = 5):
        """Greedy copies: (token ids (B, T), weights (B, T, N) or None), T <= N + 1 + max_extra."""
        states, summary = self.encode(batch.source, batch.source_mask)
        keys = self.key(states)
        state = torch.tanh(self.init_state(summary))
        token = torch.full((states.shape[0],), SOS, device=states.device)
        done = torch.zeros_like(token, dtype=torch.bool)
        tokens, weights = [], []
        for _ in range(states.shape[1] + 1 + max_extra):
            logits, state, w = self.step(token, state, states, keys, batch.source_mask, summary)
            token = logits.argmax(-1)
            tokens.append(token)
            weights.append(w)
            done |= token == EOS
            if bool(done.all()):
                break
        stacked = torch.stack(weights, 1) if self.config.attention else None
        return torch.stack(tokens, 1), stacked
