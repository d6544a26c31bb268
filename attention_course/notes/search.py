"""Decoding strategies over any next-token distribution (Section 12.4): greedy, beam search and
top-k sampling, and a toy next-token model given as a table."""
from __future__ import annotations

import torch


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
