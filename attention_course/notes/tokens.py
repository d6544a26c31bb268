"""Sub-word tokens: byte-pair encoding written out, and embeddings as a lookup.

:func:`train_bpe` starts from single characters, with ``_`` marking the end of every word (the
marker is a symbol of its own, so it stays visible), and repeatedly merges the most frequent pair
of neighbouring symbols -- never across a word boundary -- until the vocabulary (the characters
plus one new symbol per merge) reaches the requested size or no pair is left. It records, after
every merge, how many distinct symbols the text still uses and how many tokens it has.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import torch

END = "_"


@dataclass
class BPEResult:
    merges: list[tuple[str, str]]
    vocabulary: list[str]                       # characters first, then one symbol per merge
    words: dict[tuple[str, ...], int]           # every word as its final symbols, with its count
    in_use: list[int] = field(default_factory=list)      # distinct symbols in the text, per step
    token_counts: list[int] = field(default_factory=list)  # tokens in the text, per step

    def tokenize(self, text: str, merges: int | None = None) -> list[str]:
        """Apply the first ``merges`` learned merges (default: all), in order, to every word."""
        return tokenize_with(text, self.merges[:merges])


def tokenize_with(text: str, merges) -> list[str]:
    """Split ``text`` into words, each into characters plus END, and apply ``merges`` in order."""
    out = []
    for word in text.split():
        symbols = [*word, END]
        for a, b in merges:
            symbols = _merge(symbols, a, b)
        out += symbols
    return out


def _merge(symbols: list[str], a: str, b: str) -> list[str]:
    out, i = [], 0
    while i < len(symbols):
        if i + 1 < len(symbols) and symbols[i] == a and symbols[i + 1] == b:
            out.append(a + b)
            i += 2
        else:
            out.append(symbols[i])
            i += 1
    return out


def _stats(words: dict) -> tuple[int, int]:
    symbols = Counter()
    for word, count in words.items():
        for s in word:
            symbols[s] += count
    return len(symbols), sum(symbols.values())


def train_bpe(text: str, vocab_size: int) -> BPEResult:
    """Byte-pair encoding of ``text`` (split on white space) up to ``vocab_size`` symbols."""
    counts = Counter(text.split())
    if not counts:
        raise ValueError("train_bpe needs some text")
    words = {(*w, END): c for w, c in counts.items()}
    vocabulary = sorted({s for w in words for s in w})
    if vocab_size < len(vocabulary):
        raise ValueError(f"vocab_size must be at least the {len(vocabulary)} characters, got {vocab_size}")
    result = BPEResult([], vocabulary, words)
    used, total = _stats(words)
    result.in_use.append(used)
    result.token_counts.append(total)
    while len(result.vocabulary) < vocab_size:
        pairs = Counter()
        for word, count in words.items():
            for a, b in zip(word, word[1:]):
                pairs[a, b] += count
        if not pairs:
            break
        # most frequent pair; ties go to the pair seen first in sorted order, so runs repeat exactly
        (a, b), _ = max(sorted(pairs.items()), key=lambda item: item[1])
        words = {tuple(_merge(list(w), a, b)): c for w, c in words.items()}
        result.merges.append((a, b))
        result.vocabulary.append(a + b)
        used, total = _stats(words)
        result.in_use.append(used)
        result.token_counts.append(total)
    result.words = words
    return result


def library_bpe(text: str, vocab_size: int):
    """The same task for the Hugging Face ``tokenizers`` library, trained offline on ``text``."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE(end_of_word_suffix=END))
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=1, show_progress=False,
                                  end_of_word_suffix=END)
    tokenizer.train_from_iterator([text], trainer=trainer)
    return tokenizer


def one_hot_embedding(token_ids: torch.Tensor, table: torch.Tensor) -> torch.Tensor:
    """Embed by matrix product: one-hot rows (N, V) times the table (V, D) -> (N, D)."""
    vocab = table.shape[0]
    if token_ids.dim() != 1 or int(token_ids.max()) >= vocab or int(token_ids.min()) < 0:
        raise ValueError(f"token ids must be a 1-D tensor of values in 0..{vocab - 1}")
    one_hot = torch.nn.functional.one_hot(token_ids, vocab).to(table.dtype)   # (N, V)
    return one_hot @ table                                                     # (N, D)
