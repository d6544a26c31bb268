"""Training the character decoder of Section 12.4 on the course text, and greedy generation
with or without its key/value cache."""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from attention_course.core.char_decoder import CharDecoder, DecoderConfig
from attention_course.data.text import decode, encode, load_text
from attention_course.tasks.fitting import TrainingConfig, fit


@dataclass(frozen=True)
class DecoderTraining(TrainingConfig):
    steps: int = 800
    seed: int = 0


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
