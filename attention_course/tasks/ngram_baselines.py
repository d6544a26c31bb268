"""Character n-gram baselines of Lab 12: interpolated Kneser-Ney, counted, as ``nltk.lm`` scores it.

:class:`KneserNey` gives every character the probability of ``nltk.lm.KneserNeyInterpolated``
(one absolute discount, raw counts at the highest order, continuation counts below it, the
unigram level by continuation counts) -- the test suite checks it against nltk on a small text --
but counts once instead of rescanning every n-gram for each score, which makes nltk itself far
too slow for a corpus of a few hundred thousand characters. One deviation: a character never seen
in training gets its unigram share from a floor of one part in a million spread over 256 bytes
instead of probability 0 (nltk maps it to ``<UNK>``).
"""
from __future__ import annotations

import math
from collections import Counter, defaultdict

UNSEEN_FLOOR = 1e-6


class KneserNey:
    """Interpolated Kneser-Ney over characters, contexts of up to ``order - 1`` characters."""

    def __init__(self, text: str, order: int, discount: float = 0.1):
        if order < 1 or not 0 < discount < 1:
            raise ValueError(f"need order >= 1 and 0 < discount < 1, got {order} and {discount}")
        if len(text) <= order:
            raise ValueError(f"the training text must be longer than the order {order}")
        self.order, self.discount = order, discount
        # counts[k][context][char]: raw counts of k-grams (context of k - 1 characters), k <= order
        self.counts = [None] + [defaultdict(Counter) for _ in range(order)]
        for k in range(1, order + 1):
            level = self.counts[k]
            for i in range(len(text) - k + 1):
                level[text[i:i + k - 1]][text[i + k - 1]] += 1
        # continuation[k][context][char]: distinct characters seen before context + char
        self.continuation = [None] + [defaultdict(Counter) for _ in range(order)]
        self.continuation_total = [None] + [Counter() for _ in range(order)]
        for k in range(1, order):
            for longer, followers in self.counts[k + 1].items():
                context = longer[1:]
                self.continuation_total[k][context] += len(followers)
                for char in followers:
                    self.continuation[k][context][char] += 1

    def prob(self, char: str, context: str) -> float:
        """P(char | the last ``order - 1`` characters of context)."""
        context = context[-(self.order - 1):] if self.order > 1 else ""
        return self._score(char, context)

    def _score(self, char: str, context: str) -> float:
        k = len(context) + 1
        if not context:
            seen = self.continuation[1][""] if self.order > 1 else self.counts[1][""]
            total = self.continuation_total[1][""] if self.order > 1 else sum(seen.values())
            return (1 - UNSEEN_FLOOR) * seen[char] / total + UNSEEN_FLOOR / 256
        followers = self.counts[k].get(context)
        if not followers:
            return self._score(char, context[1:])
        if k == self.order:
            count, total = followers[char], sum(followers.values())
        else:
            count = self.continuation[k][context][char]
            total = self.continuation_total[k][context]
            if total == 0:                   # the context occurs only at the very start of the text
                return self._score(char, context[1:])
        alpha = max(count - self.discount, 0.0) / total
        gamma = self.discount * len(followers) / total
        return alpha + gamma * self._score(char, context[1:])

    def text_bpc(self, text: str) -> float:
        """Mean -log2 P of every character of ``text`` given the ones before it in ``text``."""
        bits = 0.0
        for i, char in enumerate(text):
            bits -= math.log2(self.prob(char, text[max(0, i - self.order + 1):i]))
        return bits / len(text)


def best_kneser_ney(train: str, val: str, test: str, orders=range(1, 7),
                    discounts=(0.1, 0.3, 0.5, 0.7, 0.9)) -> dict:
    """Every order and discount fitted on ``train``; the one best on ``val`` scored on ``test``.

    Returns ``{"table": [{order, discount, val_bpc}], "best": {order, discount, val_bpc, test_bpc}}``.
    """
    table = []
    for order in orders:
        for discount in discounts:
            model = KneserNey(train, order, discount)
            table.append({"order": order, "discount": discount,
                          "val_bpc": model.text_bpc(val), "model": model})
    best = min(table, key=lambda row: row["val_bpc"])
    test_bpc = best["model"].text_bpc(test)
    for row in table:
        del row["model"]
    return {"table": table, "best": {k: best[k] for k in ("order", "discount", "val_bpc")} |
            {"test_bpc": test_bpc}}
