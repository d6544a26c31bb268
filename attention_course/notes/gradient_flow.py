"""Gradients through a deep stack of blocks, pre-norm against post-norm.

Used by Section 8.7 (``book/chapter8/transformer-block.md``: the gradient norm of each block at
initialisation).
"""
from __future__ import annotations

import torch
from torch import nn

from attention_course.core.transformer import PreNormBlock, causal_mask


def gradient_norms_by_layer(norm_first: bool, layers: int = 24, d: int = 64, h: int = 4,
                            vocab: int = 16, n: int = 24, batch: int = 32,
                            seeds=(0, 1, 2)) -> list[float]:
    """The gradient norm of each block's parameters at initialisation, first block first.

    A stack of ``layers`` blocks (pre-norm with a final LayerNorm, or post-norm) over a token
    embedding predicts the next of ``n`` random tokens from a vocabulary of ``vocab``; one batch,
    one backward pass; the norms are averaged over ``seeds`` (each seeds weights and tokens).
    """
    norms = torch.zeros(layers)
    for seed in seeds:
        torch.manual_seed(seed)
        embed = nn.Embedding(vocab, d)
        blocks = nn.ModuleList(PreNormBlock(d, h, norm_first=norm_first) for _ in range(layers))
        final = nn.LayerNorm(d) if norm_first else nn.Identity()
        head = nn.Linear(d, vocab)
        tokens = torch.randint(0, vocab, (batch, n))                     # (B, n)
        x, mask = embed(tokens[:, :-1]), causal_mask(n - 1)              # (B, n - 1, d)
        for block in blocks:
            x = block(x, mask=mask)
        logits = head(final(x))                                          # (B, n - 1, vocab)
        nn.functional.cross_entropy(logits.flatten(0, 1), tokens[:, 1:].flatten()).backward()
        norms += torch.stack([torch.cat([p.grad.flatten() for p in b.parameters()]).norm()
                              for b in blocks])
    return (norms / len(seeds)).tolist()
