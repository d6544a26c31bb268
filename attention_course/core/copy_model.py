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

from attention_course.core.seq2seq import Tokens, decode_greedily, teacher_forced
from attention_course.data.text import EOS, PAD, SOS, VOCAB_SIZE, CopyBatch


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


@dataclass
class CopyMemory:
    """What the decoder reads: states (B, N, d), their keys (B, N, d), mask (B, N), summary (B, d)."""

    states: torch.Tensor
    keys: torch.Tensor
    mask: torch.Tensor
    summary: torch.Tensor


class CopyModel(nn.Module):
    tokens = Tokens(sos=SOS, eos=EOS, pad=PAD)

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

    def encode(self, source: torch.Tensor, mask: torch.Tensor) -> CopyMemory:
        """The encoder's states, their keys, and the fixed summary (final forward and first
        backward state)."""
        lengths = mask.sum(1).cpu()
        packed = nn.utils.rnn.pack_padded_sequence(self.embed(source), lengths, batch_first=True,
                                                   enforce_sorted=False)
        out, last = self.encoder(packed)                   # last: (2, B, d/2)
        states, _ = nn.utils.rnn.pad_packed_sequence(out, batch_first=True,
                                                     total_length=source.shape[1])   # (B, N, d)
        summary = torch.cat([last[0], last[1]], dim=-1)                               # (B, d)
        return CopyMemory(states, self.key(states), mask, summary)

    def start(self, memory: CopyMemory) -> torch.Tensor:
        return torch.tanh(self.init_state(memory.summary))                            # (B, d)

    def step(self, memory: CopyMemory, state, token):
        """One output step: (logits (B, V), new state (B, d), weights (B, N) or None)."""
        e = self.embed(token)                                           # (B, E)
        if self.config.attention:
            # additive scores v . tanh(W_q s + W_k h_j), a softmax over the real characters
            scores = torch.tanh(self.query(state).unsqueeze(1) + memory.keys) @ self.v   # (B, N)
            weights = torch.softmax(scores.masked_fill(~memory.mask, float("-inf")), -1)
            context = torch.bmm(weights.unsqueeze(1), memory.states).squeeze(1)   # (B, d)
        else:
            weights, context = None, memory.summary                     # the one fixed context
        state = self.decoder(torch.cat([e, context], -1), state)        # (B, d)
        logits = self.readout(torch.cat([state, context, e], -1))       # (B, V)
        return logits, state, weights

    def forward(self, batch: CopyBatch) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Teacher-forced logits (B, T, V) and attention weights (B, T, N) (None without attention)."""
        memory = self.encode(batch.source, batch.source_mask)
        return teacher_forced(self, memory, self.start(memory), batch.decoder_input)

    @torch.no_grad()
    def copy(self, batch: CopyBatch, max_extra: int = 5):
        """Greedy copies: (token ids (B, T), weights (B, T, N) or None), T <= N + 1 + max_extra."""
        memory = self.encode(batch.source, batch.source_mask)
        return decode_greedily(self, memory, self.start(memory), batch=len(batch.texts),
                               max_len=batch.source.shape[1] + 1 + max_extra, tokens=self.tokens,
                               device=batch.source.device)
