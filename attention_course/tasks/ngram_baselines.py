"""Lab 12's n-gram baselines: interpolated Kneser-Ney, counted once, scored at any order and discount,
with one discount or with modified Kneser-Ney's three.

:class:`KneserNey` gives every symbol the probability ``nltk.lm.KneserNeyInterpolated`` gives it
(one absolute discount, raw counts at the highest order, continuation counts below it, the
unigram level by continuation counts) -- the test suite checks it against nltk on a small text.
nltk rescans its n-grams for every score, far too slow for two million characters; here the
n-grams of every length are counted once, as 64-bit hashes of the substrings sorted with numpy,
and a whole text is scored level by level as array operations. One fitted model scores every order
up to the one it was fitted with and every discount, and counts on to a higher order without
counting the lower ones again (:meth:`KneserNey.extend`), which makes a grid search cheap
(:func:`best_kneser_ney`).

**Modified** Kneser-Ney (Chen and Goodman, 1998; the ``discount`` ``"modified"``) discounts an
n-gram seen once, twice, or three times or more by its own amount, set at every level from that
level's counts of counts (n_i n-grams seen exactly i times): Y = n_1 / (n_1 + 2 n_2) and
D_i = i - (i + 1) Y n_(i+1) / n_i; the weight left for the shorter context is what the discounts
took. A model fitted with ``modified=True`` scores both ways. Where a text is too small for some
n_i to be non-zero, that level falls back to one discount, :data:`MODIFIED_FALLBACK`.

Symbols are the characters of a string, or the ids of a token sequence (a list, array or tensor of
ints), so the same code is Lab 12's character baseline and the benchmark's token-level model. One
deviation from nltk: a symbol never seen in training gets its unigram share from a floor of one
part in a million spread over ``alphabet`` symbols, instead of probability 0.
"""
from __future__ import annotations

import contextlib

import numpy as np

try:                    # numpy's switch for the huge-page advice it gives its large arrays on Linux
    from numpy._core.multiarray import _set_madvise_hugepage     # (private; absent: no switch)
except ImportError:     # numpy 1.x
    try:
        from numpy.core.multiarray import _set_madvise_hugepage
    except ImportError:
        _set_madvise_hugepage = None

UNSEEN_FLOOR = 1e-6
HASH_BASE = np.uint64(0x9E3779B97F4A7C15)        # odd: the map from strings to hashes mixes well
ORDERS_AT_LEAST = 10                             # the grid of best_kneser_ney reaches this order
DISCOUNTS = (0.5, 0.7, 0.8, 0.9, 0.95)
MODIFIED = "modified"                            # the discount that asks for modified Kneser-Ney
MODIFIED_FALLBACK = 0.9


@contextlib.contextmanager
def small_pages():
    """numpy's new arrays without its huge-page advice, for the duration (also a decorator).
    Counting makes and drops hundreds of arrays of millions of hashes, and with the advice the
    kernel gave each its memory in 2 MB pages: on Lab 12's text both searches took 22 s, 14 of
    them system time, and 8.5 s without it. ``NUMPY_MADVISE_HUGEPAGE=0`` would do the same for a
    whole process, but numpy reads it once, when it is imported. The switch is the process's:
    every array made meanwhile goes without the advice, and two threads counting at once could
    leave it off."""
    if _set_madvise_hugepage is None:
        yield
        return
    before = _set_madvise_hugepage(False)
    try:
        yield
    finally:
        _set_madvise_hugepage(before)


def modified_discounts(counts: np.ndarray) -> tuple[float, float, float]:
    """Modified Kneser-Ney's discounts (D_1, D_2, D_3+) for n-grams with these counts (or
    continuation counts), estimated from the counts of counts."""
    n = [int(np.count_nonzero(counts == i)) for i in (1, 2, 3, 4)]
    if min(n) == 0:
        return (MODIFIED_FALLBACK,) * 3
    y = n[0] / (n[0] + 2 * n[1])
    return tuple(float(np.clip(i - (i + 1) * y * n[i] / n[i - 1], 0.0, i)) for i in (1, 2, 3))


def _by_context(context: np.ndarray, counts: np.ndarray) -> tuple["_Counts", "_Counts", "_Counts"]:
    """For each context: how many of the n-grams after it have count 1, 2, and 3 or more."""
    return tuple(_Counts(context[chosen]) for chosen in (counts == 1, counts == 2, counts >= 3))


def symbol_codes(symbols) -> np.ndarray:
    """A string's code points, or a sequence of int ids, as uint64."""
    if isinstance(symbols, str):
        return np.frombuffer(symbols.encode("utf-32-le"), dtype=np.uint32).astype(np.uint64)
    return np.asarray(symbols, dtype=np.int64).astype(np.uint64).reshape(-1)


def substring_hashes(codes: np.ndarray, longest: int):
    """Yields, for k = 1..longest, the hashes of every run of k symbols: ``h[i]`` of codes[i:i+k].
    Equal runs get equal hashes wherever they occur."""
    hashes = codes + np.uint64(1)
    for k in range(1, longest + 1):
        if k > 1:
            hashes = hashes[:-1] * HASH_BASE + codes[k - 1:] + np.uint64(1)
        yield hashes


def run_hashes(codes: np.ndarray, length: int) -> np.ndarray:
    """The hashes :func:`substring_hashes` gives the runs of ``length`` symbols, in a few passes
    instead of ``length``: prefix sums of (code + 1) B^-j (B is odd, so invertible modulo 2^64,
    where uint64 arithmetic wraps), then h[i] = B^(i + length - 1) (S[i + length] - S[i])."""
    n = len(codes)
    if n < length:
        return np.zeros(0, np.uint64)
    inverse = np.uint64(pow(int(HASH_BASE), -1, 2 ** 64))
    with np.errstate(over="ignore"):
        up = np.concatenate([[np.uint64(1)], np.cumprod(np.full(n - 1, HASH_BASE, np.uint64))])
        down = np.concatenate([[np.uint64(1)], np.cumprod(np.full(n - 1, inverse, np.uint64))])
        sums = np.concatenate([[np.uint64(0)], np.cumsum((codes + np.uint64(1)) * down)])
        return up[length - 1:] * (sums[length:] - sums[:n - length + 1])


def counted(keys: np.ndarray, first: bool = False):
    """Each distinct key once, sorted, and how often it occurs: ``np.unique(keys,
    return_counts=True)`` of integer keys (hashes, flattened); with ``first``, ``(distinct, where
    each first occurs, counts)`` as ``return_index=True`` gives. The same answer from numpy's
    default sort: on two million 64-bit hashes, with ``first`` less than half the time of the
    stable sort ``np.unique`` takes for ``return_index``; without it about what ``np.unique``
    takes with ``return_counts``, and a fortieth of the hash table it takes for the keys alone."""
    keys = np.asarray(keys).ravel()
    if not len(keys):
        empty = (keys[:0], np.zeros(0, np.intp))
        return (*empty, np.zeros(0, np.intp)) if first else empty
    order = np.argsort(keys) if first else None
    ordered = keys[order] if first else np.sort(keys)
    starts = np.flatnonzero(np.concatenate(([True], ordered[1:] != ordered[:-1])))
    counts = np.diff(np.append(starts, len(ordered)))
    if first:
        return ordered[starts], np.minimum.reduceat(order, starts), counts
    return ordered[starts], counts


class _Counts:
    """How often each key occurs, looked up many keys at a time (:func:`look_up`)."""

    def __init__(self, keys: np.ndarray):
        self.keys, self.counts = counted(keys)

    @classmethod
    def of(cls, keys: np.ndarray, counts: np.ndarray) -> "_Counts":
        """Counts already made: ``keys`` sorted, each once."""
        made = cls.__new__(cls)
        made.keys, made.counts = keys, counts
        return made

    def __getitem__(self, queries: np.ndarray) -> np.ndarray:
        return look_up(queries, [self])[0]

    def in_order(self, ordered: np.ndarray) -> np.ndarray:
        """The count of each of ``ordered`` (sorted keys), 0 for a key never counted."""
        if not len(self.keys):
            return np.zeros(len(ordered))
        at = np.minimum(np.searchsorted(self.keys, ordered), len(self.keys) - 1)
        return np.where(self.keys[at] == ordered, self.counts[at], 0).astype(np.float64)


def look_up(queries: np.ndarray, tables: list) -> list[np.ndarray]:
    """The count of every one of ``queries`` in each of ``tables`` (:class:`_Counts`), as float
    arrays in the queries' order. The queries are sorted once for all the tables: a search for
    sorted keys walks a table from front to back, where keys in text order jump about it (two
    million keys in tables of a million and a half: a third of the time for one table, an eighth
    for nine, the sort included)."""
    queries = np.asarray(queries)
    order = np.argsort(queries)
    ordered = queries[order]
    found = []
    for table in tables:
        counts = np.empty(len(queries))
        counts[order] = table.in_order(ordered)
        found.append(counts)
    return found


class KneserNey:
    """Interpolated Kneser-Ney over the symbols of ``train``, contexts of up to ``order - 1``.

    ``bits`` and ``text_bpc`` score at the fitted order and discount unless given lower ones; a
    discount is a number in (0, 1), or ``"modified"`` for a model fitted with ``modified=True``
    (which a ``"modified"`` discount implies)."""

    def __init__(self, train, order: int, discount: float | str = 0.9, alphabet: int = 256,
                 modified: bool = False):
        modified = modified or discount == MODIFIED
        if order < 1 or not (discount == MODIFIED or 0 < discount < 1):
            raise ValueError(f"need order >= 1 and 0 < discount < 1 (or {MODIFIED!r}), "
                             f"got {order} and {discount!r}")
        codes = symbol_codes(train)
        if len(codes) <= order:
            raise ValueError(f"the training text must be longer than the order {order}")
        self.discount, self.alphabet, self.modified = discount, alphabet, modified
        self._codes = codes         # kept for extend(), which counts longer n-grams of the same text
        self.order = 0              # the levels counted so far
        self.gram = [None]          # gram[k]: raw count of each k-gram
        self.total = [None]         # total[k]: k-grams that start with each (k-1)-symbol context
        self.followers = [None]     # followers[k]: distinct symbols seen after each context
        self.continued = [None]     # continued[k]: distinct symbols seen before each k-gram
        self.continued_total = [None]   # ... summed over the symbols after each context
        # modified only: per context, the k-grams after it seen once, twice, 3+ times (raw counts,
        # and continuation counts), and each level's three discounts for both
        self.seen_split, self.continued_split = [None], [None]
        self.seen_discounts, self.continued_discounts = [None], [None]
        self._count(order)

    def extend(self, order: int) -> None:
        """Count on up to ``order``, as a model fitted to that order from the start would count:
        the levels already counted are kept, only the longer n-grams are counted (and the
        continuation counts of the old top level, which only a longer level gives)."""
        if order <= self.order or len(self._codes) <= order:
            raise ValueError(f"extend to an order above {self.order} and below the text's length "
                             f"{len(self._codes)}, not {order}")
        self._count(order)

    @small_pages()
    def _count(self, top: int) -> None:
        """The levels above ``self.order`` up to ``top``, and the continuation counts of every level
        below ``top`` that lacks them."""
        codes, low = self._codes, self.order
        n = len(codes)
        hashes = [None, *substring_hashes(codes, top)]          # hashes[k]: the k-grams
        # each k-gram once: its hash, where it first occurs, how often it occurs
        distinct = {k: counted(hashes[k], first=True) for k in range(low + 1, top + 1)}
        for k in range(max(low, 1), top + 1):
            if k > low:
                grams, first, often = distinct[k]
                context = hashes[k - 1][first] if k > 1 else np.zeros(len(grams), np.uint64)
                self.gram.append(_Counts.of(grams, often))
                self.total.append(_Counts(hashes[k - 1][:n - k + 1]) if k > 1 else n)
                self.followers.append(_Counts(context))
                if self.modified:
                    self.seen_split.append(_by_context(context, often))
                    self.seen_discounts.append(modified_discounts(often))
            if k < top:             # continuation counts come from the (k + 1)-grams
                longer, where, _ = distinct[k + 1]
                middle = hashes[k - 1][where + 1] if k > 1 else np.zeros(len(longer), np.uint64)
                kgrams, at, continuation = counted(hashes[k][where + 1], first=True)
                self.continued.append(_Counts.of(kgrams, continuation))
                self.continued_total.append(_Counts(middle))
                if self.modified:
                    self.continued_split.append(_by_context(middle[at], continuation))
                    self.continued_discounts.append(modified_discounts(continuation))
        self.order = top

    def _levels(self, codes: np.ndarray, top: int, modified: bool = False) -> list[dict]:
        """Per level k <= top and per position i of ``codes``: the counts that predict codes[i]
        from the k - 1 symbols before it (zeros where the text has fewer); with ``modified``, the
        splits of the context's followers by count too."""
        m, levels = len(codes), [None]
        hashes = [None, *substring_hashes(codes, top)]
        for k in range(1, top + 1):
            pad, grams = np.zeros(min(k - 1, m)), hashes[k]
            context = hashes[k - 1][:len(grams)] if k > 1 else np.zeros(m, np.uint64)
            by_gram, by_context = {"count": self.gram[k]}, {"followers": self.followers[k]}
            if k > 1:
                by_context["total"] = self.total[k]
            if k < self.order:
                by_gram["continued"] = self.continued[k]
                by_context["continued_total"] = self.continued_total[k]
            if modified and k > 1:
                for i, split in enumerate(self.seen_split[k]):
                    by_context[f"seen_{i + 1}"] = split
                if k < self.order:
                    for i, split in enumerate(self.continued_split[k]):
                        by_context[f"continued_{i + 1}"] = split
            row = {**dict(zip(by_gram, look_up(grams, list(by_gram.values())))),
                   **dict(zip(by_context, look_up(context, list(by_context.values()))))}
            if k == 1:
                row["total"] = np.full(m, float(self.total[1]))
            levels.append({name: np.concatenate([pad, value]) for name, value in row.items()})
        return levels

    def _orders(self, levels: list[dict], orders, discount: float):
        """Yields (order, P of every symbol) for each order, from one pass up the levels."""
        floor = UNSEEN_FLOOR / self.alphabet
        p = None                                 # the continuation chain, levels 1..k - 1
        for k in range(1, max(orders) + 1):
            row = levels[k]
            if k == 1:
                top = row["count"] / row["total"]
            else:
                top = self._step(row, "count", "total", "seen", p, self._discounts(k, "seen", discount))
            if k in orders:
                yield k, ((1 - UNSEEN_FLOOR) * top + floor if k == 1 else top)
            if k < self.order:
                if k == 1:
                    p = (1 - UNSEEN_FLOOR) * row["continued"] / row["continued_total"] + floor
                else:
                    p = self._step(row, "continued", "continued_total", "continued", p,
                                   self._discounts(k, "continued", discount))

    def _discounts(self, k: int, counts: str, discount) -> tuple[float, float, float]:
        """Level k's discounts of n-grams seen once, twice, 3+ times (``counts``: seen or continued)."""
        if discount != MODIFIED:
            return (discount,) * 3
        return (self.seen_discounts if counts == "seen" else self.continued_discounts)[k]

    @staticmethod
    def _step(row: dict, count: str, total: str, split: str, lower, discounts):
        """One level of interpolation; where the context was never seen, the lower level. One
        discount for all counts, or (modified) one each for counts 1, 2 and 3+."""
        count, total, followers = row[count], row[total], row["followers"]
        seen = (followers > 0) & (total > 0)
        safe = np.where(seen, total, 1.0)
        d1, d2, d3 = discounts
        if d1 == d2 == d3:
            taken, left = np.minimum(count, d1), d1 * followers
        else:
            taken = np.where(count >= 3, d3, np.where(count == 2, d2, np.where(count == 1, d1, 0.0)))
            left = d1 * row[f"{split}_1"] + d2 * row[f"{split}_2"] + d3 * row[f"{split}_3"]
        mixed = (count - taken + left * lower) / safe
        return np.where(seen, mixed, lower)

    def _check(self, order, discounts=()):
        if not 1 <= order <= self.order:
            raise ValueError(f"this model was fitted up to order {self.order}, asked for {order}")
        if MODIFIED in discounts and not self.modified:
            raise ValueError(f"a {MODIFIED!r} discount needs a model fitted with modified=True")

    @small_pages()
    def bits(self, text, order: int | None = None, discount: float | None = None) -> np.ndarray:
        """-log2 P of every symbol of ``text`` given the ones before it in ``text`` (an array)."""
        order = self.order if order is None else order
        discount = self.discount if discount is None else discount
        self._check(order, [discount])
        levels = self._levels(symbol_codes(text), order, discount == MODIFIED)
        (_, p), = self._orders(levels, [order], discount)
        return -np.log2(p)

    @small_pages()
    def grid_bpc(self, text, orders, discounts) -> dict[tuple[int, float], float]:
        """Mean bits per symbol of ``text`` at every order and discount: {(order, discount): bpc}."""
        orders = sorted(orders)
        for order in orders:
            self._check(order, discounts)
        levels = self._levels(symbol_codes(text), orders[-1], MODIFIED in discounts)
        return {(order, d): float(-np.log2(p).mean()) for d in discounts
                for order, p in self._orders(levels, orders, d)}

    def text_bpc(self, text, order: int | None = None, discount: float | None = None) -> float:
        """Mean bits per symbol of ``text`` (bits per character when the symbols are characters)."""
        return float(self.bits(text, order, discount).mean())

    def prob(self, symbol, context) -> float:
        """P(symbol | the last ``order - 1`` symbols of context)."""
        if isinstance(context, str):
            return float(2.0 ** -self.bits(context + symbol)[-1])
        return float(2.0 ** -self.bits([*context, symbol])[-1])


def best_kneser_ney(train, val, test=None, discounts=DISCOUNTS, at_least: int = ORDERS_AT_LEAST,
                    patience: int = 2, alphabet: int = 256) -> dict:
    """Orders 1, 2, ... and ``discounts`` fitted on ``train`` and scored on ``val``: at least up to
    ``at_least``, and on until the ``patience`` orders after the best one have not beaten it.

    Returns ``{"table": [{order, discount, val_bpc}], "best": {order, discount, val_bpc,
    test_bpc}, "model": the fitted KneserNey}`` (``test_bpc`` only when ``test`` is given): the best
    on validation, scored once on test. For token ids, ``alphabet`` is the vocabulary's size.
    ``discounts`` may hold ``"modified"``: modified Kneser-Ney is then one more column of the grid.
    """
    top = at_least + patience
    model = KneserNey(train, top, discounts[0], alphabet, modified=MODIFIED in discounts)
    while True:
        scores = model.grid_bpc(val, range(1, top + 1), discounts)
        table = [{"order": o, "discount": d, "val_bpc": scores[o, d]}
                 for o in range(1, top + 1) for d in discounts]
        best = min(table, key=lambda row: row["val_bpc"])
        if best["order"] + patience <= top:
            break
        top = best["order"] + patience + 3           # a little further: each look scores again
        model.extend(top)
    chosen = dict(best)
    if test is not None:
        chosen["test_bpc"] = model.text_bpc(test, best["order"], best["discount"])
    return {"table": table, "best": chosen, "model": model}

