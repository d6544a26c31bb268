"""Lab 12's parts outside the notebook's checks: its text, its n-gram baselines, its reference
BPE against the ``tokenizers`` library (the comparison the lab's text promises), and the optional
last part (``token_bits`` and the cell that mixes the two models)."""
from __future__ import annotations

import json
import math
import re

import numpy as np
import pytest
import torch

from attention_course.data.python_docs import CORPUS, MADE_WITH, SHINGLE, load_topics, split_topics
from attention_course_instructor.grading.checks import reference_namespace
from attention_course_instructor.grading.notebook import grade_id
from attention_course.tasks.fitting import fit
from attention_course.tasks.ngram_baselines import (MODIFIED, MODIFIED_FALLBACK, UNSEEN_FLOOR, KneserNey,
                                                    best_kneser_ney, counted, look_up, modified_discounts,
                                                    run_hashes, small_pages, substring_hashes, symbol_codes)
from attention_course.tasks import ngram_baselines
from attention_course.tasks.ngram_baselines import _Counts
from conftest import REPO, load_nb

BYTE_LEVEL_PRINTABLE = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1),
                        *range(ord("®"), ord("ÿ") + 1)]


@pytest.fixture(scope="module")
def splits():
    return split_topics()


@pytest.fixture(scope="module")
def ref():
    return reference_namespace("lab12")


def test_the_splits_are_whole_topics_with_no_shared_paragraph(splits):
    names = [set(part.names) for part in splits.values()]
    assert not (names[0] & names[1] or names[0] & names[2] or names[1] & names[2])
    assert set().union(*names) <= set(load_topics()) and names[0]
    paragraphs = {s: {p.strip() for p in part.text.split("\n\n") if p.strip()} for s, part in splits.items()}
    assert not paragraphs["train"] & (paragraphs["val"] | paragraphs["test"])
    sizes = {s: len(part) for s, part in splits.items()}
    total = sum(sizes.values())
    assert 0.75 < sizes["train"] / total < 0.85
    assert split_topics() == splits                                   # deterministic


def test_no_run_of_held_out_text_is_in_the_training_text(splits):
    """Checked with Python's own strings, not the hashes the split uses."""
    train = splits["train"].text
    for name in ("val", "test"):
        text = splits[name].text
        runs = {text[i:i + SHINGLE] for i in range(len(text) - SHINGLE + 1)}
        shared = next((train[i:i + SHINGLE] for i in range(len(train) - SHINGLE + 1)
                       if train[i:i + SHINGLE] in runs), None)
        assert shared is None, f"{name} shares {shared!r} with the training text"


def test_each_held_out_split_is_large_and_spans_many_topics(splits):
    topics = load_topics()
    for name in ("val", "test"):
        part = splits[name]
        assert len(part) >= 100_000 and len(part.names) >= 20, (name, len(part), len(part.names))
        kinds = {topic.split(":")[0] for topic in part.names}
        assert kinds == {"help", "module"}, (name, kinds)
        largest = max(part.names, key=lambda topic: len(topics[topic]))
        assert len(topics[largest]) <= 0.2 * len(part), (name, largest, len(topics[largest]))


def test_a_leak_planted_in_a_held_out_topic_is_dropped_from_it(splits):
    topics = load_topics()
    held_out, trained = splits["test"].names[0], splits["train"].names[0]
    source = next(p for p in topics[trained].split("\n\n") if len(p) > 2 * SHINGLE)
    copied = "A new start, then " + source[:SHINGLE + 20] + " and more words after it."
    planted = split_topics(topics | {held_out: topics[held_out] + "\n\n" + copied + "\n"})
    assert copied not in planted["test"].text and planted["test"].text == splits["test"].text


def test_each_split_gives_its_text_back_topic_by_topic(splits):
    topics = load_topics()
    for name, part in splits.items():
        pieces = part.topic_texts()
        assert len(pieces) == len(part.names) and "".join(pieces) == part.text, name
        assert all(piece.strip() for piece in pieces), name
    # training topics are whole: each piece is its topic and the newline that joins it to the next
    train = splits["train"]
    assert [p.removesuffix("\n") for p in train.topic_texts()[:-1]] == [topics[n] for n in train.names[:-1]]


def test_the_head_of_a_split_keeps_the_whole_topics_that_fit(splits):
    part = splits["test"]
    head = part.head(0.1)
    assert "".join(head.topic_texts()) == head.text and head.names == part.names[:len(head.names)]
    assert head.topic_texts() == part.topic_texts()[:len(head.names)]          # whole topics
    assert 1 < len(head.names) < len(part.names) and len(head) <= 0.1 * len(part)
    assert len(head) + len(part.topic_texts()[len(head.names)]) > 0.1 * len(part)   # as many as fit
    assert part.head(0.0).names == part.names[:1]                                    # at least one


def test_the_shipped_text_is_what_this_python_writes(tmp_path, monkeypatch):
    """The builder is deterministic: on the Python release that made the file, the same bytes."""
    import platform

    from attention_course_instructor import lab12_text

    if platform.python_version() != MADE_WITH:
        pytest.skip(f"the text was made with Python {MADE_WITH}, this is {platform.python_version()}")
    monkeypatch.setattr(lab12_text, "CORPUS", tmp_path / "python_docs.json.gz")
    lab12_text.main()
    assert (tmp_path / "python_docs.json.gz").read_bytes() == CORPUS.read_bytes()


def nltk_kneser_ney(text, order, discount):
    from nltk.lm import KneserNeyInterpolated
    from nltk.lm.preprocessing import everygrams

    lm = KneserNeyInterpolated(order, discount=discount)
    lm.fit([list(everygrams(list(text), max_len=order))], vocabulary_text=list(text))
    return lm


@pytest.mark.parametrize("order, discount", [(2, 0.1), (3, 0.5), (4, 0.9)])
def test_kneser_ney_scores_as_nltk_does(order, discount):
    text = "the cat sat on the mat; the dog sat on the log. a cat and a dog met a cat."
    theirs, mine = nltk_kneser_ney(text, order, discount), KneserNey(text, order, discount)
    for i, char in enumerate(text):
        context = text[max(0, i - order + 1):i]
        expected = theirs.score(char, list(context))
        # the floor moves a probability by at most UNSEEN_FLOOR (it enters at the unigram level)
        assert mine.prob(char, context) == pytest.approx(expected, abs=UNSEEN_FLOOR)


def test_kneser_ney_gives_unseen_characters_a_small_probability():
    model = KneserNey("abcabcabd", 3, 0.5)
    assert 0 < model.prob("z", "ab") < 1e-6
    assert 1 - UNSEEN_FLOOR < sum(model.prob(c, "ab") for c in "abcd") < 1     # the rest: unseen bytes
    with pytest.raises(ValueError, match="order"):
        KneserNey("abc", 0)


def test_one_fit_scores_every_lower_order_and_discount_as_its_own_fit(splits):
    train, val = splits["train"].text[:60_000], splits["val"].text[:5_000]
    grid = KneserNey(train, 6, 0.9).grid_bpc(val, [1, 3, 6], [0.5, 0.9])
    for (order, discount), bpc in grid.items():
        assert bpc == pytest.approx(KneserNey(train, order, discount).text_bpc(val), abs=1e-9)


@pytest.mark.parametrize("symbols", ["characters", "token ids"])
def test_a_model_counted_on_to_a_higher_order_scores_as_one_fitted_there(splits, symbols):
    """extend() counts only the longer n-grams (and the old top level's continuation counts):
    every order and discount, modified Kneser-Ney included, scores exactly as a fresh fit."""
    train, val = splits["train"].text[:60_000], splits["val"].text[:5_000]
    if symbols == "token ids":
        train, val = [ord(c) % 97 for c in train], [ord(c) % 97 for c in val]
    extended = KneserNey(train, 3, 0.9, modified=True)
    extended.extend(7)
    fitted = KneserNey(train, 7, 0.9, modified=True)
    discounts = [0.5, 0.9, MODIFIED]
    assert extended.grid_bpc(val, range(1, 8), discounts) == fitted.grid_bpc(val, range(1, 8), discounts)
    with pytest.raises(ValueError, match="extend to an order above 7"):
        extended.extend(7)


def reference_modified_kneser_ney(train: str, order: int, alphabet: int = 256):
    """Modified Kneser-Ney written from its definition (Chen and Goodman 1998, interpolated), with
    dictionaries and recursion: P(char | context), for checking the array version on small texts."""
    from collections import Counter

    raw = {k: Counter(train[i:i + k] for i in range(len(train) - k + 1)) for k in range(1, order + 1)}
    continuation = {k: Counter(g[1:] for g in raw[k + 1]) for k in range(1, order)}

    def discounts(counts):
        n1, n2, n3, n4 = (sum(1 for c in counts.values() if c == i) for i in (1, 2, 3, 4))
        y = n1 / (n1 + 2 * n2)
        return {1: 1 - 2 * y * n2 / n1, 2: 2 - 3 * y * n3 / n2, 3: 3 - 4 * y * n4 / n3}

    table = {("raw", k): (raw[k], discounts(raw[k])) for k in range(1, order + 1)}
    table |= {("continuation", k): (continuation[k], discounts(continuation[k])) for k in range(1, order)}

    def prob(char, context, k, kind):
        counts, d = table[kind, k]
        if k == 1:
            return (1 - UNSEEN_FLOOR) * counts[char] / sum(counts.values()) + UNSEEN_FLOOR / alphabet
        before = context[len(context) - (k - 1):]
        after = {g[-1]: c for g, c in counts.items() if g[:-1] == before}
        lower = prob(char, context, k - 1, "continuation")
        if not any(raw[k][before + a] for a in after) or not after:
            return lower
        total = sum(after.values())
        left = sum(d[min(c, 3)] for c in after.values())
        c = after.get(char, 0)
        return (c - (d[min(c, 3)] if c else 0) + left * lower) / total

    return lambda char, context: prob(char, context, order, "raw")


def test_modified_kneser_ney_scores_as_its_definition(splits):
    train, val = splits["train"].text[:6_000], splits["val"].text[:300]
    for order in (2, 3):
        model, reference = KneserNey(train, order, MODIFIED), reference_modified_kneser_ney(train, order)
        assert all(MODIFIED_FALLBACK not in d for d in model.seen_discounts[1:] + model.continued_discounts[1:])
        bits = model.bits(val)
        for i in range(order - 1, len(val)):
            expected = reference(val[i], val[i - order + 1:i])
            assert 2.0 ** -bits[i] == pytest.approx(expected, rel=1e-9), (order, i)


def test_modified_kneser_ney_is_a_distribution_and_one_fit_scores_both_ways(splits):
    train, val = splits["train"].text[:60_000], splits["val"].text[:5_000]
    model = KneserNey(train, 5, 0.9, modified=True)
    symbols = sorted(set(range(256)) | {ord(c) for c in train})       # the docs hold a few past 255
    for context in ("def ", "the a", "zq"):
        for d in (0.9, MODIFIED):
            total = sum(2.0 ** -model.bits(context + chr(c), 5, d)[-1] for c in symbols)
            # the floor gives each of the symbols past the alphabet of 256 a share it did not count
            assert total == pytest.approx(1.0, abs=UNSEEN_FLOOR), (context, d)
    grid = model.grid_bpc(val, [2, 5], [0.9, MODIFIED])
    assert grid[5, 0.9] == pytest.approx(KneserNey(train, 5, 0.9).text_bpc(val), abs=1e-9)
    assert grid[5, MODIFIED] == pytest.approx(KneserNey(train, 5, MODIFIED).text_bpc(val), abs=1e-9)
    assert grid[5, MODIFIED] != grid[5, 0.9]
    with pytest.raises(ValueError, match="modified=True"):
        KneserNey(train, 3, 0.9).text_bpc(val, 3, MODIFIED)


def test_modified_discounts_follow_the_counts_of_counts():
    counts = np.array([1] * 40 + [2] * 10 + [3] * 5 + [4] * 2 + [9])       # n1..n4 = 40, 10, 5, 2
    y = 40 / (40 + 2 * 10)
    assert modified_discounts(counts) == pytest.approx((1 - 2 * y * 10 / 40, 2 - 3 * y * 5 / 10,
                                                        3 - 4 * y * 2 / 5))
    assert modified_discounts(np.array([1, 1, 2, 3])) == (MODIFIED_FALLBACK,) * 3   # no count of 4


def test_token_ids_are_scored_as_characters_are():
    text = "the cat sat on the mat; the dog sat on the log."
    ids = [ord(c) for c in text]
    assert KneserNey(ids, 4, 0.7).bits(ids[:20]) == pytest.approx(KneserNey(text, 4, 0.7).bits(text[:20]))


@pytest.mark.parametrize("size", [0, 1, 7, 50_000])
def test_counting_gives_what_numpy_unique_gives(size):
    rng = np.random.default_rng(size)
    keys = rng.integers(0, max(2, size // 3), size).astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    expected = np.unique(keys, return_index=True, return_counts=True)
    got = counted(keys, first=True)
    assert all(np.array_equal(g, e) and g.dtype == e.dtype for g, e in zip(got, expected))
    assert all(np.array_equal(g, e) for g, e in zip(counted(keys), expected[::2]))
    if size % 2 == 0 and size:                          # flattened, as np.unique flattens
        assert np.array_equal(counted(keys.reshape(2, -1))[0], expected[0])


def test_a_lookup_gives_each_query_its_own_count_in_every_table():
    rng = np.random.default_rng(3)
    tables = [_Counts(rng.integers(0, 40, 300).astype(np.uint64)) for _ in range(3)]
    tables.append(_Counts(np.zeros(0, np.uint64)))
    queries = rng.integers(0, 60, 500).astype(np.uint64)              # some never counted
    assert all(np.array_equal(a, b) for a, b in zip(look_up(queries.tolist(), tables),
                                                    look_up(queries, tables)))
    for table, found in zip(tables, look_up(queries, tables)):
        expected = [dict(zip(table.keys.tolist(), table.counts.tolist())).get(q, 0) for q in queries.tolist()]
        assert found.tolist() == expected


def huge_page_advice() -> bool:
    before = ngram_baselines._set_madvise_hugepage(True)
    ngram_baselines._set_madvise_hugepage(before)
    return before


@pytest.mark.skipif(ngram_baselines._set_madvise_hugepage is None, reason="this numpy has no switch")
def test_counting_and_scoring_run_without_huge_page_advice_and_put_it_back(monkeypatch):
    seen = []

    def spy(name):
        real = getattr(ngram_baselines, name)
        monkeypatch.setattr(ngram_baselines, name, lambda *a, **k: (seen.append((name, huge_page_advice())),
                                                                    real(*a, **k))[1])

    spy("counted"), spy("look_up")
    given = ngram_baselines._set_madvise_hugepage(True)      # on, whatever this process had
    try:
        model = KneserNey("the cat sat on the mat; the dog sat on the log.", 3)
        model.extend(4)
        model.bits("the cat")
        model.grid_bpc("the dog", [1, 2], [0.5])
        assert {name for name, _ in seen} == {"counted", "look_up"}
        assert not any(advice for _, advice in seen) and huge_page_advice()
        with pytest.raises(ValueError), small_pages():
            raise ValueError("an error inside puts the advice back too")
        assert huge_page_advice()
    finally:
        ngram_baselines._set_madvise_hugepage(given)


def test_run_hashes_are_the_substring_hashes_of_that_length():
    codes = symbol_codes("the cat sat on the mat; naïve déjà vu " * 4)
    for length in (1, 2, 7, 60, len(codes)):
        *_, expected = substring_hashes(codes, length)
        assert np.array_equal(run_hashes(codes, length), expected), length
    assert len(run_hashes(codes, len(codes) + 1)) == 0


def test_the_search_goes_past_its_minimum_order_while_validation_improves(splits):
    train, val = splits["train"].text[:300_000], splits["val"].text[:20_000]
    found = best_kneser_ney(train, val, at_least=3, patience=2)
    orders = sorted({row["order"] for row in found["table"]})
    best = found["best"]["order"]
    assert best > 3 and orders == list(range(1, max(orders) + 1)) and max(orders) >= best + 2
    by_order = {o: min(r["val_bpc"] for r in found["table"] if r["order"] == o) for o in orders}
    assert by_order[best] < by_order[best - 1] and by_order[best] <= min(by_order.values())


def library_merges(text, num_merges, pattern):
    """``tokenizers``' byte-level BPE trainer on the same chunks: its merges as pairs of bytes."""
    from tokenizers import Regex, Tokenizer, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(pattern), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    trainer = trainers.BpeTrainer(vocab_size=256 + num_merges, min_frequency=1, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tokenizer.train_from_iterator([text], trainer=trainer)
    others = [b for b in range(256) if b not in BYTE_LEVEL_PRINTABLE]
    symbol = {**{chr(b): b for b in BYTE_LEVEL_PRINTABLE}, **{chr(256 + i): b for i, b in enumerate(others)}}
    merges = json.loads(tokenizer.to_str())["model"]["merges"]
    pairs = [m.split(" ") if isinstance(m, str) else m for m in merges]
    return [tuple(bytes(symbol[c] for c in part) for part in pair) for pair in pairs], tokenizer


def as_bytes(merges):
    table = [bytes([b]) for b in range(256)]
    out = []
    for a, b in merges:
        out.append((table[a], table[b]))
        table.append(table[a] + table[b])
    return out


def test_the_reference_bpe_learns_the_library_merges_on_the_lab_text(ref, splits):
    """Same 256 merges as tokenizers on the training split (the order may differ among pairs of
    equal count), and the same number of tokens for the unseen test split."""
    train = splits["train"].text
    merges = ref.learn_bpe(train, 256)
    theirs, tokenizer = library_merges(train, 256, ref.CHUNK.pattern)
    assert len(merges) == 256 and sorted(as_bytes(merges)) == sorted(theirs)
    test = splits["test"].text
    ids = ref.bpe_encode(test, merges)
    assert len(ids) == len(tokenizer.encode(test).ids)
    assert ref.bpe_decode(ids, merges) == test


def test_the_chunks_are_the_library_pre_tokens(ref, splits):
    from tokenizers import Regex, pre_tokenizers

    split = pre_tokenizers.Split(Regex(ref.CHUNK.pattern), behavior="isolated")
    text = splits["val"].text[:20000]
    assert [piece for piece, _ in split.pre_tokenize_str(text)] == ref.split_chunks(text)


def test_fit_evaluates_in_eval_mode_on_schedule():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(2, 1), torch.nn.Dropout(0.5))
    seen = []

    def evaluate(step):
        seen.append((step, model.training, torch.is_grad_enabled()))
        return step

    record = fit(model, lambda step: torch.randn(4, 2), lambda m, x: m(x).pow(2).mean(), 7, 1e-2,
                 evaluate=evaluate, evaluate_every=3)
    assert record["evaluations"] == [3, 6, 7]
    assert seen == [(3, False, False), (6, False, False), (7, False, False)]


def test_fit_can_leave_the_model_holding_a_moving_average_of_its_weights():
    decay, steps = 0.6, 5

    def trained(average):
        torch.manual_seed(0)
        model = torch.nn.Linear(2, 1)
        seen = []

        def next_batch(step):                  # called before each step: the weights so far
            seen.append(torch.cat([p.detach().flatten().clone() for p in model.parameters()]))
            return torch.ones(4, 2) * (step + 1)

        fit(model, next_batch, lambda m, x: (m(x) - 1).pow(2).mean(), steps, 0.1,
            schedule="cosine", average=average)
        return torch.cat([p.detach().flatten() for p in model.parameters()]), seen

    last, seen = trained(0.0)
    after_each = seen[1:] + [last]             # the weights after steps 1..5
    expected = after_each[0]
    for weights in after_each[1:]:
        expected = decay * expected + (1 - decay) * weights
    averaged, _ = trained(decay)
    torch.testing.assert_close(averaged, expected)
    assert not torch.allclose(averaged, last)


def hidden_check(ref, grade_id, monkeypatch, **replaced):
    """The hidden check of ``grade_id`` run on the reference solution with some names replaced:
    the failures it reports (an empty string when it passes)."""
    from attention_course_instructor import paths
    from attention_course_instructor.grading.checks import CHECKS_DIR_VARIABLE, run_hidden_check

    monkeypatch.setenv(CHECKS_DIR_VARIABLE, str(paths.SOURCE / "lab12"))
    namespace = dict(ref._namespace) | replaced
    try:
        run_hidden_check("lab12", grade_id, namespace)
    except AssertionError as failure:
        return str(failure)
    return ""


def test_the_stride_check_fails_a_function_that_ignores_the_stride(ref, monkeypatch):
    assert hidden_check(ref, "task4_bpc_test", monkeypatch) == ""

    def cold_only(model, ids, num_chars, stride=None, windows_per_batch=16):
        return ref.bits_per_character(model, ids, num_chars, None, windows_per_batch)

    assert "stride 1" in hidden_check(ref, "task4_bpc_test", monkeypatch, bits_per_character=cold_only)


def test_the_attention_check_fails_a_training_path_that_drops_the_padding_mask(ref, monkeypatch):
    assert hidden_check(ref, "task2_module_test", monkeypatch) == ""

    class CausalOnly(ref.CausalSelfAttention):
        def forward(self, x, lengths=None):
            return super().forward(x, None if self.training else lengths)

    failures = hidden_check(ref, "task2_module_test", monkeypatch, CausalSelfAttention=CausalOnly)
    assert "in training mode" in failures


def tiny_lm(ref, context=8):
    torch.manual_seed(0)
    return ref.TinyLM(ref.LMConfig(vocab=11, context=context, width=12, heads=3, layers=2)).eval()


@pytest.mark.parametrize("stride", [1, 3, 8])
def test_token_bits_counts_each_token_once_as_bits_per_character_does(ref, stride):
    """The optional part's reference: its sum is bits_per_character's (given 1 character), its
    windows scored in batches give what they give one at a time, and one window's bits are the
    model's own next-token probabilities."""
    model, ids = tiny_lm(ref), torch.randint(0, 11, (37,), generator=torch.Generator().manual_seed(1))
    bits = ref.token_bits(model, ids, stride)
    assert tuple(bits.shape) == (36,) and bits.dtype == torch.float32
    assert float(bits.sum()) == pytest.approx(ref.bits_per_character(model, ids, 1, stride), rel=1e-5)
    assert torch.allclose(ref.token_bits(model, ids, stride, windows_per_batch=1), bits, atol=1e-5)
    short = ids[:8]                                                    # one window: no stride
    with torch.no_grad():
        p = torch.softmax(model(short[None, :-1])[0], -1)              # (7, V)
    expected = -torch.log2(p[torch.arange(7), short[1:]])
    assert torch.allclose(ref.token_bits(model, short, stride), expected, atol=1e-5)


def mixture_cell():
    nb = load_nb(REPO / "source/lab12/lab12.ipynb")
    return next(c.source for c in nb.cells if grade_id(c) == "mixture")


def run_mixture_cell(ref, token_bits):
    """The lab's locked mixture cell, run with a tiny model, a stand-in n-gram (3 bits a token)
    and ``token_bits`` as the student wrote it; returns what it printed."""
    import contextlib
    import io

    from attention_course.tasks.lm_verdict import best_weight, mixture_bits

    generator = torch.Generator().manual_seed(2)
    ids = {split: torch.randint(0, 11, (n,), generator=generator) for split, n in (("val", 50), ("test", 40))}
    namespace = {"token_bits": token_bits, "model": tiny_lm(ref), "EVAL_STRIDE": 3, "math": math,
                 "bits_per_character": ref.bits_per_character, "ids": ids, "torch": torch,
                 "chars": {"val": 100, "test": 80}, "best_weight": best_weight, "mixture_bits": mixture_bits,
                 "fitted": {"tokens": (2, 1.5, None, lambda symbols: np.full(len(symbols) - 1, 3.0))}}
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(mixture_cell(), namespace)
    return printed.getvalue()


def test_the_mixture_cell_mixes_the_two_on_validation_and_scores_test(ref):
    printed = run_mixture_cell(ref, ref.token_bits).splitlines()
    assert [line.split(":")[0] for line in printed] == ["validation", "test"]
    assert all("the token n-gram" in line and "the mixture (" in line for line in printed)


def test_the_text_names_the_number_of_tokens_the_cell_checks():
    """The optional part's text says how much of each split the mixture cell checks."""
    nb = load_nb(REPO / "source/lab12/lab12.ipynb")
    checked = int(re.search(r"^CHECKED_TOKENS = (\d+)", mixture_cell(), re.M).group(1))
    text = next(c.source for c in nb.cells if grade_id(c) == "mixture_intro")
    assert f"checks that on the first {checked:,d} tokens of each split" in " ".join(text.split())


def test_the_mixture_cell_says_the_part_is_optional_when_it_is_left_undone(ref):
    def undone(model, ids, stride=None):
        raise NotImplementedError()

    assert run_mixture_cell(ref, undone).startswith("Optional: write token_bits above")


def test_the_mixture_cell_names_what_a_wrong_token_bits_got_wrong(ref):
    with pytest.raises(ValueError, match=r"should return shape \(49,\), one number per token after the "
                                         r"first; got \(50,\)"):
        run_mixture_cell(ref, lambda model, ids, stride=None: torch.zeros(len(ids)))
    with pytest.raises(TypeError, match="token_bits should return a torch tensor; got list"):
        run_mixture_cell(ref, lambda model, ids, stride=None: ref.token_bits(model, ids, stride).tolist())
    for wrong in (2.0, math.log(2)):                  # every token twice; nats, not bits
        with pytest.raises(ValueError, match=r"over 49 tokens, but your bits_per_character spends .* "
                                             r"count each token after the first once, in bits"):
            run_mixture_cell(ref, lambda model, ids, stride=None: wrong * ref.token_bits(model, ids, stride))
