"""A tiny character-level decoder-only transformer, generation with a key/value cache, and
decoding strategies (greedy, beam search, top-k sampling). Also parameter counts of published
configurations.

Shapes: B sequences, N positions, d width, h heads, V vocabulary (the 30 symbols of
:mod:`attention_course.data.text`), L blocks.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import torch
from torch import nn

from attention_course.data.text import VOCAB_SIZE, decode, encode, load_text
from attention_course.fitting import fit
from attention_course.transformer import PreNormBlock, causal_mask


@dataclass(frozen=True)
class DecoderConfig:
    width: int = 64
    heads: int = 4
    layers: int = 2
    context: int = 64

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class DecoderTraining:
    steps: int = 800
    batch: int = 32
    lr: float = 3e-3
    seed: int = 0

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


def train_char_decoder(config: DecoderConfig = DecoderConfig(),
                       training: DecoderTraining = DecoderTraining()) -> tuple[CharDecoder, dict]:
    """Next-character training on windows of the course text: every position predicts the next."""
    torch.manual_seed(training.seed)
    ids = torch.tensor(encode(load_text()))
    model = CharDecoder(config)
    gen = torch.Generator().manual_seed(training.seed)
    n = config.context

    def next_batch(step):
        starts = torch.randint(0, len(ids) - n - 1, (training.batch,), generator=gen)
        return torch.stack([ids[s:s + n + 1] for s in starts.tolist()])   # (B, N+1)

    def loss_of(model, window):
        logits = model(window[:, :-1])                                      # inputs: tokens 0..N-1
        return nn.functional.cross_entropy(logits.flatten(0, 1), window[:, 1:].flatten())

    record = fit(model, next_batch, loss_of, training.steps, training.lr,
                 optimizer=torch.optim.AdamW, clip=None)
    return model, record


@torch.no_grad()
def generate(model: CharDecoder, prompt: str, count: int, use_cache: bool = True) -> str:
    """Greedy continuation of ``prompt`` by ``count`` characters, with or without the cache."""
    ids = torch.tensor([encode(prompt)])                                    # (1, N)
    if ids.shape[1] + count > model.config.context:
        raise ValueError(f"prompt + count must fit the context of {model.config.context}")
    if not use_cache:
        for _ in range(count):
            nxt = model(ids)[:, -1].argmax(-1, keepdim=True)                # recompute everything
            ids = torch.cat([ids, nxt], 1)
        return decode(ids[0])
    cache = None
    for t in range(ids.shape[1]):                                           # read the prompt
        logits, cache = model.step_with_cache(ids[:, t:t + 1], cache)
    for _ in range(count):
        nxt = logits.argmax(-1, keepdim=True)                               # (1, 1)
        ids = torch.cat([ids, nxt], 1)
        logits, cache = model.step_with_cache(nxt, cache)
    return decode(ids[0])


# ---- decoding strategies over any next-token distribution ---------------------------------------

def greedy(next_log_probs, start, steps: int) -> tuple[list, float]:
    """Take the most likely token at every step: (tokens, total log-probability)."""
    seq, total = list(start), 0.0
    for _ in range(steps):
        lp = next_log_probs(seq)
        token = int(torch.argmax(lp))
        seq.append(token)
        total += float(lp[token])
    return seq[len(start):], total


def beam_search(next_log_probs, start, steps: int, width: int) -> tuple[list, float]:
    """Keep the ``width`` best partial sequences by total log-probability at every step."""
    beams = [(list(start), 0.0)]
    for _ in range(steps):
        grown = []
        for seq, score in beams:
            lp = next_log_probs(seq)
            for token in torch.topk(lp, min(width, lp.numel())).indices.tolist():
                grown.append((seq + [token], score + float(lp[token])))
        beams = sorted(grown, key=lambda b: -b[1])[:width]
    best, score = beams[0]
    return best[len(start):], score


def top_k_sample(next_log_probs, start, steps: int, k: int, generator: torch.Generator) -> tuple[list, float]:
    """Sample each token from the ``k`` most likely ones, renormalised."""
    seq, total = list(start), 0.0
    for _ in range(steps):
        lp = next_log_probs(seq)
        top = torch.topk(lp, min(k, lp.numel()))
        choice = torch.multinomial(torch.softmax(top.values, -1), 1, generator=generator)
        token = int(top.indices[choice])
        seq.append(token)
        total += float(lp[token])
    return seq[len(start):], total


def table_model(table: dict) -> callable:
    """A toy next-token model from a dict: tuple of the tokens so far -> list of probabilities."""
    def next_log_probs(seq):
        return torch.log(torch.tensor(table[tuple(seq)], dtype=torch.float64))
    return next_log_probs


# ---- parameter counts ---------------------------------------------------------------------------

def transformer_parameters(layers: int, width: int, vocab: int, context: int, mlp: int | None = None,
                           segment_types: int = 0) -> int:
    """Parameters of a stack of post- or pre-norm blocks with embeddings (weights and biases).

    Per block: Q, K, V and output projections 4 (d^2 + d); MLP d*m + m + m*d + d; two layer norms
    4d. Embeddings: tokens V d, positions N d, segment types S d, plus one final/embedding layer
    norm 2d.
    """
    d, m = width, mlp or 4 * width
    block = 4 * (d * d + d) + (d * m + m + m * d + d) + 4 * d
    return layers * block + (vocab + context + segment_types) * d + 2 * d
