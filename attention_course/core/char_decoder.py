"""A tiny character-level decoder-only transformer, with one decoding step that keeps a key/value
cache (Section 12.4). Training and generation are in :mod:`attention_course.tasks.char_decoder`.

Shapes: B sequences, N positions, d width, h heads, V vocabulary (the 30 symbols of
:mod:`attention_course.data.text`), L blocks.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import torch
from torch import nn

from attention_course.core.transformer import PreNormBlock, causal_mask
from attention_course.data.text import VOCAB_SIZE


@dataclass(frozen=True)
class DecoderConfig:
    width: int = 64
    heads: int = 4
    layers: int = 2
    context: int = 64

    def to_dict(self) -> dict:
        return asdict(self)


class CharDecoder(nn.Module):
    def __init__(self, config: DecoderConfig = DecoderConfig()):
        super().__init__()
        self.config = config
        d = config.width
        self.embed = nn.Embedding(VOCAB_SIZE, d)
        self.position = nn.Parameter(torch.randn(config.context, d) * 0.02)   # learned (N_max, d)
        self.blocks = nn.ModuleList(PreNormBlock(d, config.heads) for _ in range(config.layers))
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, VOCAB_SIZE)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        """ids (B, N) -> next-token logits (B, N, V) at every position, in one pass."""
        n = ids.shape[1]
        if n > self.config.context:
            raise ValueError(f"at most {self.config.context} positions, got {n}")
        x = self.embed(ids) + self.position[:n]                             # (B, N, d)
        mask = causal_mask(n, ids.device)
        for block in self.blocks:
            x = block(x, mask=mask)
        return self.head(self.norm(x))                                      # (B, N, V)

    @torch.no_grad()
    def step_with_cache(self, ids: torch.Tensor, cache: list | None):
        """Logits (B, V) for the last of ``ids`` (B, 1) at position len(cache), and the new cache.

        The cache holds, per block, the keys and values (B, h, t, d/h) of every earlier position,
        so one step costs O(t d) attention work instead of recomputing every position.
        """
        t = 0 if not cache else cache[0][0].shape[2]
        x = self.embed(ids) + self.position[t:t + 1]                        # (B, 1, d)
        new_cache = []
        for i, block in enumerate(self.blocks):
            mha = block.mha
            a = block.ln1(x)
            w_q, w_k, w_v = mha.in_proj.weight.chunk(3)
            b_q, b_k, b_v = mha.in_proj.bias.chunk(3)
            q = mha.split_heads(nn.functional.linear(a, w_q, b_q))          # (B, h, 1, d/h)
            k = mha.split_heads(nn.functional.linear(a, w_k, b_k))
            v = mha.split_heads(nn.functional.linear(a, w_v, b_v))
            if cache:
                k = torch.cat([cache[i][0], k], 2)                          # (B, h, t+1, d/h)
                v = torch.cat([cache[i][1], v], 2)
            new_cache.append((k, v))
            w = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(mha.d_head), -1)   # (B, h, 1, t+1)
            o = (w @ v).transpose(1, 2).reshape(x.shape[0], 1, mha.d)
            x = x + mha.out_proj(o)
            x = x + block.mlp(block.ln2(x))
        return self.head(self.norm(x))[:, -1], new_cache
