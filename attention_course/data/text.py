"""Character text for the course's small sequence models (the copy model of Section 8.2).

The text is ``texts/harbour_town.txt``, prose written for the course (CC0). It is reduced to 27
symbols -- ``a``-``z`` and the space -- so the models stay small: letters are lower-cased, every
other run of characters becomes one space.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import torch

from attention_course import paths

TEXT_DIR = paths.TEXTS
LETTERS = " abcdefghijklmnopqrstuvwxyz"
PAD, SOS, EOS = 0, 1, 2                      # special ids; characters follow
ALPHABET = ("<pad>", "<sos>", "<eos>") + tuple(LETTERS)
VOCAB_SIZE = len(ALPHABET)                   # 30
CHAR_TO_ID = {c: i for i, c in enumerate(ALPHABET) if len(c) == 1}


def load_text(name: str = "harbour_town") -> str:
    """The named text of ``texts/``, normalised to lower-case letters and single spaces."""
    path = TEXT_DIR / f"{name}.txt"
    if not path.exists():
        known = sorted(p.stem for p in TEXT_DIR.glob("*.txt"))
        raise FileNotFoundError(f"no text called {name!r}; the course ships {known}")
    body = "\n".join(line for line in path.read_text().splitlines() if not line.startswith("#"))
    return normalise(body)


def normalise(text: str) -> str:
    """Lower-case; every run of characters outside a-z becomes one space; no outer spaces."""
    return re.sub(r"[^a-z]+", " ", text.lower()).strip()


def encode(text: str) -> list[int]:
    """Character ids of ``text``; raises on a character outside a-z and space."""
    bad = sorted(set(text) - set(LETTERS))
    if bad:
        raise ValueError(f"only a-z and space can be encoded, got {bad}; normalise() the text first")
    return [CHAR_TO_ID[c] for c in text]


def decode(ids) -> str:
    """Characters of ``ids`` up to the first end-of-string; padding and start ids are skipped."""
    out = []
    for i in (int(x) for x in ids):
        if i == EOS:
            break
        if i > EOS:
            out.append(ALPHABET[i])
    return "".join(out)


@dataclass
class CopyBatch:
    """Padded source strings and their copy targets.

    ``source`` (B, N) character ids, padded with PAD; ``source_mask`` (B, N) True on characters;
    ``target`` (B, N + 1) the same characters then EOS, padded; ``decoder_input`` (B, N + 1) SOS then
    the characters (the target shifted right); ``texts`` the strings themselves.
    """

    source: torch.Tensor
    source_mask: torch.Tensor
    target: torch.Tensor
    decoder_input: torch.Tensor
    texts: list[str]


def make_copy_batch(texts: list[str]) -> CopyBatch:
    """Pad a list of strings into a :class:`CopyBatch` (every string needs at least one character)."""
    if not texts or any(len(t) == 0 for t in texts):
        raise ValueError("make_copy_batch needs a non-empty list of non-empty strings")
    n = max(len(t) for t in texts)
    source = torch.full((len(texts), n), PAD)                     # (B, N)
    target = torch.full((len(texts), n + 1), PAD)                 # (B, N+1)
    decoder_input = torch.full((len(texts), n + 1), PAD)          # (B, N+1)
    for b, t in enumerate(texts):
        ids = torch.tensor(encode(t))
        source[b, : len(t)] = ids
        target[b, : len(t)], target[b, len(t)] = ids, EOS
        decoder_input[b, 0], decoder_input[b, 1 : len(t) + 1] = SOS, ids
    return CopyBatch(source, source != PAD, target, decoder_input, list(texts))


def sample_windows(text: str, count: int, min_len: int, max_len: int,
                   generator: torch.Generator) -> list[str]:
    """``count`` random substrings of ``text`` with lengths uniform in [min_len, max_len]."""
    if not 1 <= min_len <= max_len <= len(text):
        raise ValueError(f"need 1 <= min_len <= max_len <= {len(text)}, got {min_len}, {max_len}")
    lengths = torch.randint(min_len, max_len + 1, (count,), generator=generator)
    starts = [int(torch.randint(0, len(text) - int(n) + 1, (1,), generator=generator))
              for n in lengths]
    return [text[s : s + int(n)] for s, n in zip(starts, lengths)]
