"""Lab 12's autograded checks, written once (see :mod:`attention_course_instructor.grading.checks`).

Every graded cell of ``lab12.ipynb`` has one check below. Sizes are distinct on purpose (B = 3,
N = 6 queries, N_k = 7 keys, d = 12, h = 3, d/h = 4, V = 13, L = 2), models get their weights from
:func:`set_parameters` (every parameter in name order, from the grading seed), and every check also
covers the inputs of the cell's visible checks. The BPE checks replay the student's merges (each
must be a most frequent pair when it is made) and compare them with the reference, which the test
suite checks against the Hugging Face ``tokenizers`` library.
"""
import random
import re

import torch
from torch import nn
from torch.nn import functional as F

from attention_course_instructor.grading.checks import Lab, describe_shape, shared
from attention_course.seeds import part_generator, part_seed

lab = Lab("lab12", run_cells=("setup",), shortcuts={
    "learn_bpe": ("tokenizers", "attention_course.notes.tokens"),
    "bpe_encode": ("tokenizers", "attention_course.notes.tokens"),
    "attention_weights": ("attention_course.core.transformer",),
    "scaled_dot_product": ("attention_course.core.transformer",),
    "CausalSelfAttention": ("attention_course.core.transformer",),
    "Block": ("attention_course.core.transformer", "attention_course.core.char_decoder"),
    "TinyLM": ("attention_course.core.char_decoder",),
    "kv_step": ("attention_course.core.char_decoder", "attention_course.tasks.char_decoder"),
    "generate_tokens": ("attention_course.tasks.char_decoder",),
})

SIZES = {"vocab": 13, "context": 9, "width": 12, "heads": 3, "layers": 2}
WORDS = ("the", "then", "there", "theme", "a", "an", "and", "value", "values", "x1", "x2", "==",
         "->", "naïve", "déjà", "(", ")", "[i]", "\n")


@shared
def set_parameters(model, seed):
    """Every parameter of ``model``, in name order, drawn from ``seed``; eval mode."""
    g = part_generator(seed, "parameters")
    with torch.no_grad():
        for _, p in sorted(model.named_parameters(), key=lambda item: item[0]):
            p.copy_(torch.randn(p.shape, generator=g) * 0.4)
    return model.eval()


@shared
def guarded(answer, fn):
    """``fn`` called the way the student's functions are: an exception becomes a reported failure."""
    return getattr(type(answer)({"call": fn}), "call")


@shared
def seeded_text(seed, words=200):
    rng = random.Random(part_seed(seed, "text"))
    return "".join(rng.choice(WORDS) + rng.choice(("", " ", " ", "  ", ", ")) for _ in range(words))


@shared
def lab_model(answer, seed, **sizes):
    """The student's TinyLM with the checks' sizes and seeded weights, plus its parameter names."""
    config = answer.LMConfig(**(SIZES | sizes))
    model = answer.TinyLM(config)
    if answer.failed(model):
        return model, None
    names = sorted((name, tuple(int(s) for s in p.shape)) for name, p in model.named_parameters())
    return set_parameters(model, seed), names


def reference_model(ref, seed, **sizes):
    model = ref.TinyLM(ref.LMConfig(**(SIZES | sizes)))
    names = sorted((name, tuple(p.shape)) for name, p in model.named_parameters())
    return set_parameters(model, seed), names


def same_layout(names, ref_names, expect, what="TinyLM(config)") -> bool:
    """The student's parameters have the skeleton's names and shapes."""
    if names is None:
        return False
    mine = {n: s for n, s in names}
    theirs = {n: tuple(s) for n, s in ref_names}
    if set(mine) != set(theirs):
        expect.fail(f"{what} should have exactly the parameters of the layers the skeleton names "
                    "(tok_emb, pos_emb, blocks.<l>.ln1 / attn.qkv / attn.proj / ln2 / mlp.0 / mlp.2, "
                    "ln_f, head): some are missing or extra")
        return False
    wrong = sorted(n for n in mine if mine[n] != theirs[n])
    if wrong:
        expect.fail(f"{what}: the parameter {wrong[0]} has shape {describe_shape(mine[wrong[0]])}, "
                    "not the one its layer should have with these sizes")
        return False
    return True


def replay_counts(text, merges, pattern):
    """For each merge in turn: (how often its pair occurs then, the largest pair count then),
    within the chunks of ``text`` that the lab's ``pattern`` (its CHUNK) finds."""
    from collections import Counter

    words = Counter(tuple(chunk.encode("utf-8")) for chunk in re.findall(pattern, text))
    out = []
    for m, pair in enumerate(merges):
        pairs = Counter()
        for word, count in words.items():
            for p in zip(word, word[1:]):
                pairs[p] += count
        out.append((pairs.get(tuple(pair), 0), max(pairs.values(), default=0)))
        merged = {}
        for word, count in words.items():
            new, i = [], 0
            while i < len(word):
                if i + 1 < len(word) and (word[i], word[i + 1]) == tuple(pair):
                    new.append(256 + m)
                    i += 2
                else:
                    new.append(word[i])
                    i += 1
            merged[tuple(new)] = merged.get(tuple(new), 0) + count
        words = Counter(merged)
    return out


def merges_of(value, what, expect):
    """A returned list of (int, int) tuples, or None after recording what is wrong."""
    merges = expect.value(value, what, (list,))
    if merges is None:
        return None
    if not all(isinstance(p, tuple) and len(p) == 2 and all(type(i) is int for i in p) for p in merges):
        expect.fail(f"{what} should return a list of (a, b) tuples of two ints")
        return None
    return merges


# ---- task 1: byte-pair encoding ----------------------------------------------------------------

@lab.check("task1_learn_test")
class LearnBPE:
    def inputs(seed):
        return {"text": seeded_text(seed), "merges": 40,
                "cases": [("aaab aaab", 3), ("ab", 5), ("aaaa", 2), ("", 3), ("x", 2)]}

    def probe(answer, x, out):
        out["text"] = answer.learn_bpe(x["text"], x["merges"])
        out["cases"] = [answer.learn_bpe(text, n) for text, n in x["cases"]]

    def compare(got, x, ref, expect):
        what = "learn_bpe(text, num_merges)"
        hints = {"aaab aaab": "ties between equally frequent pairs go to the smallest (first, second)",
                 "ab": "stop when no pair is left", "aaaa": "merge left to right without overlaps: "
                 "'a a a a' with (a, a) becomes 'aa aa'", "": "an empty text has no merges",
                 "x": "a single byte has no pair to merge"}
        for (text, n), result in zip(x["cases"], got["cases"] if isinstance(got["cases"], list) else []):
            merges = merges_of(result, what, expect)
            if merges is not None:
                expect.equal(merges, ref.learn_bpe(text, n), f"{what} on {text!r}: {hints[text]}")
        merges = merges_of(got["text"], what, expect)
        if merges is None:
            return
        if not expect.that(len(merges) == x["merges"], f"{what} should return num_merges merges "
                           "when the text has enough pairs"):
            return
        if not all(0 <= a < 256 + m and 0 <= b < 256 + m for m, (a, b) in enumerate(merges)):
            expect.fail(f"{what}: merge m may only join bytes and tokens made by earlier merges "
                        "(ids below 256 + m)")
            return
        counts = replay_counts(x["text"], merges, ref.CHUNK.pattern)
        late = next((m for m, (count, best) in enumerate(counts) if count < best or count == 0), None)
        if late is not None:
            expect.fail(f"{what}: on a longer text, merge {late} is not a most frequent pair at that "
                        "point (count pairs within chunks, weighted by how often each chunk occurs, "
                        "and merge every occurrence)")
            return
        expect.equal(merges, ref.learn_bpe(x["text"], x["merges"]),
                     f"{what}: the order of your merges differs where pairs are equally frequent: "
                     "take the smallest (first, second)")


@lab.check("task1_roundtrip_test")
class RoundTrip:
    def inputs(seed):
        rng = random.Random(part_seed(seed, "merges"))
        merges = []
        for m in range(30):                       # legal merges over bytes of the texts' letters
            ids = list(b"the ahnvlu") + [256 + k for k in range(m)]
            merges.append((rng.choice(ids), rng.choice(ids)))
        merges[:3] = [(116, 104), (256, 101), (32, 257)]       # "th", "the", " the"
        texts = [seeded_text(seed, 60), "the theme", "", " ", "ÿ€𝄞 naïve\t\n\r end", "a" * 9]
        return {"merges": merges, "texts": texts, "bad": [256 + 30], "negative": [-1]}

    def probe(answer, x, out):
        merges = [tuple(p) for p in x["merges"]]
        out["encoded"] = [answer.bpe_encode(t, list(merges)) for t in x["texts"]]
        out["decoded"] = [answer.bpe_decode(list(ids), list(merges)) if isinstance(ids, list) else None
                          for ids in out["encoded"]]
        out["bad"] = answer.bpe_decode(list(x["bad"]), list(merges))
        out["negative"] = answer.bpe_decode(list(x["negative"]), list(merges))
        reference_ids = [[116, 104, 101], [32, 116, 104, 101, 109, 101], [258, 32]]
        out["given"] = [answer.bpe_decode(ids, list(merges)) for ids in reference_ids]

    def compare(got, x, ref, expect):
        merges = [tuple(p) for p in x["merges"]]
        encoded = got["encoded"] if isinstance(got["encoded"], list) else []
        for text, ids in zip(x["texts"], encoded):
            value = expect.value(ids, "bpe_encode(text, merges)", (list,))
            if value is None:
                break
            if not all(type(i) is int for i in value):
                expect.fail("bpe_encode should return a list of ints")
                break
            expect.equal(value, ref.bpe_encode(text, merges), "bpe_encode differs from applying the "
                         "merges in the order they were learned, to each chunk's UTF-8 bytes")
        for text, back in zip(x["texts"], got["decoded"] if isinstance(got["decoded"], list) else []):
            if back is None:
                continue
            value = expect.value(back, "bpe_decode(ids, merges)", (str,))
            expect.equal(value, text, "decoding the encoding of a text (some of it unseen, with "
                         "accented letters, symbols outside ASCII, tabs and line breaks) does not "
                         "give the text back exactly")
        for ids, back in zip(([116, 104, 101], [32, 116, 104, 101, 109, 101], [258, 32]),
                             got["given"] if isinstance(got["given"], list) else []):
            value = expect.value(back, "bpe_decode(ids, merges)", (str,))
            expect.equal(value, ref.bpe_decode(ids, merges), "bpe_decode should expand each merged "
                         "token into the bytes of its two parts, recursively, and decode UTF-8")
        for key in ("bad", "negative"):
            expect.raised(got[key], "ValueError", "bpe_decode must raise ValueError for an id outside "
                          "0 .. 256 + len(merges) - 1")


# ---- task 2: masks, attention, heads ------------------------------------------------------------

@lab.check("task2_mask_test")
class Mask:
    def inputs(seed):
        g = part_generator(seed, "inputs")
        lengths = torch.randint(1, 7, (3,), generator=g)
        lengths[0] = 6
        return {"lengths": lengths, "n": 6, "visible": (torch.tensor([3, 1]), 4),
                "zero": (torch.tensor([2, 0]), 3), "long": (torch.tensor([5]), 4)}

    def probe(answer, x, out):
        out["batch"] = answer.attention_mask(x["lengths"].clone(), x["n"])
        out["visible"] = answer.attention_mask(*(a.clone() if torch.is_tensor(a) else a for a in x["visible"]))
        out["zero"] = answer.attention_mask(*x["zero"])
        out["long"] = answer.attention_mask(*x["long"])

    def compare(got, x, ref, expect):
        what = "attention_mask(lengths, n)"
        for key, (lengths, n) in (("visible", x["visible"]), ("batch", (x["lengths"], x["n"]))):
            shape = (len(lengths), 1, n, n)
            mask = expect.tensor(got[key], what, shape=shape, dtype="torch.bool",
                                 shape_words=f"(B, 1, N, N) = {shape}")
            expect.close(mask, ref.attention_mask(lengths, n).double(),
                         f"{what}: True exactly where key j <= query i and j < the sequence's length")
        for key in ("zero", "long"):
            expect.raised(got[key], "ValueError", f"{what} must raise ValueError for a length outside 1..n")


@lab.check("task2_attention_test")
class Attention:
    def inputs(seed):
        g = part_generator(seed, "inputs")
        mask = torch.rand(3, 1, 6, 7, generator=g) > 0.5
        mask[..., 0] = True
        empty = torch.ones(6, 7, dtype=torch.bool)
        empty[2] = False
        return {"q": torch.randn(3, 3, 6, 4, generator=g), "k": torch.randn(3, 3, 7, 4, generator=g),
                "v": torch.randn(3, 3, 7, 5, generator=g), "mask": mask, "empty": empty,
                "huge": torch.randn(3, 3, 6, 4, generator=g) * 300}

    def probe(answer, x, out):
        q, k, v, mask = (x[n].clone() for n in ("q", "k", "v", "mask"))
        out["weights"] = answer.attention_weights(q, k, mask)
        out["unmasked"] = answer.attention_weights(q.clone(), k.clone(), None)
        out["output"] = answer.scaled_dot_product(q.clone(), k.clone(), v, mask.clone())
        out["huge"] = answer.attention_weights(x["huge"].clone(), k.clone(), mask.clone())
        out["empty"] = answer.attention_weights(q.clone(), k.clone(), x["empty"].clone())

    def compare(got, x, ref, expect):
        q, k, v, mask = x["q"], x["k"], x["v"], x["mask"]
        what = "attention_weights(q, k, mask)"
        w = expect.tensor(got["weights"], what, shape=(3, 3, 6, 7), shape_words="(B, h, N_q, N_k) = (3, 3, 6, 7)")
        if w is not None:
            expect.that(bool((w[~mask.expand(3, 3, 6, 7)] == 0).all()), f"{what}: masked keys must get "
                        "exactly zero weight")
            expect.close(w, ref.attention_weights(q, k, mask), f"{what}: the weights differ from "
                         "softmax(q k^T / sqrt(d_k)) over the allowed keys")
        w = expect.tensor(got["unmasked"], what + " with mask None", shape=(3, 3, 6, 7),
                          shape_words="(B, h, N_q, N_k) = (3, 3, 6, 7)")
        expect.close(w, ref.attention_weights(q, k, None), f"{what}: with mask None every key is allowed")
        huge = expect.tensor(got["huge"], what + " on large scores", shape=(3, 3, 6, 7),
                             shape_words="(B, h, N_q, N_k) = (3, 3, 6, 7)")
        if huge is not None and expect.that(not bool(torch.isnan(huge).any()), f"{what}: large scores "
                                            "gave nan: use torch.softmax (it subtracts each row's maximum)"):
            expect.close(huge, ref.attention_weights(x["huge"], k, mask), f"{what}: large scores are "
                         "not handled like a numerically stable softmax")
        expect.raised(got["empty"], "ValueError", f"{what} must raise ValueError when a query row has "
                      "every key masked")
        out = expect.tensor(got["output"], "scaled_dot_product(q, k, v, mask)", shape=(3, 3, 6, 5),
                            shape_words="(B, h, N_q, d_v) = (3, 3, 6, 5)")
        expect.close(out, F.scaled_dot_product_attention(q, k, v, attn_mask=mask),
                     "scaled_dot_product differs from torch.nn.functional.scaled_dot_product_attention "
                     "on queries and keys of different lengths (N_q = 6, N_k = 7)")


@lab.check("task2_module_test")
class SelfAttention:
    def inputs(seed):
        g = part_generator(seed, "inputs")
        return {"seed": seed, "x": torch.randn(3, 6, 12, generator=g), "lengths": torch.tensor([6, 2, 4]),
                "gate": torch.tensor([1.0, 0.0, 1.0])}

    def probe(answer, x, out):
        config = answer.LMConfig(width=12, heads=3, dropout=0.0)
        module = answer.CausalSelfAttention(config)
        if answer.failed(module):
            out["full"] = module
            return
        out["names"] = sorted((n, tuple(int(s) for s in p.shape)) for n, p in module.named_parameters())
        set_parameters(module, x["seed"])
        out["full"] = guarded(answer, module)(x["x"].clone())
        out["weights"] = module.last_weights
        out["padded"] = guarded(answer, module)(x["x"].clone(), x["lengths"].clone())
        module.head_gate.copy_(x["gate"])
        out["gated"] = guarded(answer, module)(x["x"].clone())
        module.train()                                  # the fused path; dropout 0 in this config
        out["training"] = guarded(answer, module)(x["x"].clone(), x["lengths"].clone())

    def compare(got, x, ref, expect):
        what = "CausalSelfAttention(config)(x)"
        if not expect.returned(got["full"], "CausalSelfAttention(config)"):
            return
        names = {"qkv.weight": (36, 12), "qkv.bias": (36,), "proj.weight": (12, 12), "proj.bias": (12,)}
        if not expect.that(dict(got["names"]) == names if isinstance(got["names"], list) else False,
                           f"{what}: the module's parameters should be exactly qkv (d -> 3d) and proj "
                           "(d -> d), as in the skeleton"):
            return
        mine = set_parameters(ref.CausalSelfAttention(ref.LMConfig(width=12, heads=3)), x["seed"])
        theirs = nn.MultiheadAttention(12, 3, batch_first=True)
        with torch.no_grad():
            theirs.in_proj_weight.copy_(mine.qkv.weight), theirs.in_proj_bias.copy_(mine.qkv.bias)
            theirs.out_proj.weight.copy_(mine.proj.weight), theirs.out_proj.bias.copy_(mine.proj.bias)
        future = torch.ones(6, 6, dtype=torch.bool).triu(1)
        with torch.no_grad():
            expected, expected_weights = theirs(x["x"], x["x"], x["x"], attn_mask=future,
                                                average_attn_weights=False)
        expect.tensor_close(got["full"], what, expected, f"{what} differs from nn.MultiheadAttention "
                            "with the same weights and a causal mask (split q, k, v from qkv in that "
                            "order, heads of width d/h)", shape_words="(B, N, d) = (3, 6, 12)")
        expect.tensor_close(got["weights"], what + ": last_weights", expected_weights,
                            f"{what}: last_weights should be the attention weights of the last "
                            "call, per head", shape_words="(B, h, N, N) = (3, 3, 6, 6)")
        with torch.no_grad():
            padded = mine(x["x"], x["lengths"])
            mine.head_gate.copy_(x["gate"])
            gated = mine(x["x"])
        expect.tensor_close(got["padded"], what + " with lengths", padded, f"{what}: with lengths, "
                            "keys past each sequence's length must be masked",
                            shape_words="(B, N, d) = (3, 6, 12)")
        expect.tensor_close(got["gated"], what + " with a head switched off", gated,
                            f"{what}: multiply each head's output by its head_gate entry before the "
                            "heads are joined", shape_words="(B, N, d) = (3, 6, 12)")
        with torch.no_grad():
            training = mine(x["x"], x["lengths"])
        expect.tensor_close(got["training"], what + " in training mode", training,
                            f"{what}: in training mode (F.scaled_dot_product_attention) the output "
                            "should equal eval mode's, lengths and gates included",
                            shape_words="(B, N, d) = (3, 6, 12)")


# ---- task 3: the block, the model, the loss -----------------------------------------------------

@lab.check("task3_model_test")
class Model:
    def inputs(seed):
        g = part_generator(seed, "inputs")
        ids = torch.randint(0, 13, (3, 6), generator=g)
        changed = ids.clone()
        changed[:, 4] = (changed[:, 4] + 1) % 13
        return {"seed": seed, "ids": ids, "changed": changed, "lengths": torch.tensor([6, 3, 5]),
                "long": torch.zeros(1, 10, dtype=torch.long)}

    def probe(answer, x, out):
        model, names = lab_model(answer, x["seed"])
        out["names"] = names
        if names is None:
            out["logits"] = model
            return
        out["count"] = sum(int(p.numel()) for p in model.parameters())
        run = guarded(answer, model)
        out["logits"] = run(x["ids"].clone())
        out["changed"] = run(x["changed"].clone())
        out["padded"] = run(x["ids"].clone(), x["lengths"].clone())
        out["long"] = run(x["long"].clone())

    def compare(got, x, ref, expect):
        what = "TinyLM(config)(ids)"
        if not expect.returned(got["logits"], "TinyLM(config)"):
            return
        model, names = reference_model(ref, x["seed"])
        if not same_layout(got["names"], names, expect):
            return
        expect.equal(got["count"], sum(p.numel() for p in model.parameters()),
                     "TinyLM's parameter count differs from that of the layers the skeleton names")
        with torch.no_grad():
            logits = model(x["ids"])
            padded = model(x["ids"], x["lengths"])
        shape = dict(shape=(3, 6, 13), shape_words="(B, N, V) = (3, 6, 13)")
        mine = expect.tensor_close(got["logits"], what, logits, f"{what}: the logits differ from the "
                                   "pre-norm model's (token plus position embedding, blocks U = X + "
                                   "MHA(LN1(X)), Y = U + MLP(LN2(U)), ln_f, head)", atol=1e-4, **shape)
        changed = expect.tensor(got["changed"], what, **shape)
        if mine is not None and changed is not None:
            expect.that(bool(torch.allclose(changed[:, :4], mine[:, :4], atol=1e-5)),
                        f"{what}: the logits at positions 0-3 changed when token 4 changed: the model "
                        "sees the future")
        expect.tensor_close(got["padded"], what + " with lengths", padded,
                            f"{what}: pass lengths on to every block", atol=1e-4, **shape)
        expect.raised(got["long"], "ValueError", f"{what} must raise ValueError for more than "
                      "config.context positions")


@lab.check("task3_loss_test")
class Loss:
    def inputs(seed):
        g = part_generator(seed, "inputs")
        ids = torch.randint(0, 13, (3, 6), generator=g)
        padded = ids.clone()
        padded[1, 4:] = -1
        return {"logits": torch.randn(3, 6, 13, generator=g) * 2, "ids": ids, "padded": padded}

    def probe(answer, x, out):
        out["loss"] = answer.next_token_loss(x["logits"].clone(), x["ids"].clone())
        out["padded"] = answer.next_token_loss(x["logits"].clone(), x["padded"].clone())

    def compare(got, x, ref, expect):
        what = "next_token_loss(logits, ids)"
        expect.tensor_close(got["loss"], what, ref.next_token_loss(x["logits"], x["ids"]),
                            f"{what}: the loss differs from the mean cross-entropy of ids[:, 1:] "
                            "given logits[:, :-1]", shape_words="() (a scalar)")
        expect.tensor_close(got["padded"], what + " with padding",
                            ref.next_token_loss(x["logits"], x["padded"]), f"{what}: positions whose "
                            "target is ignore_id must be left out of the mean",
                            shape_words="() (a scalar)")


# ---- task 4: bits per character -------------------------------------------------------------------

@shared
def table_model(seed, vocab=7, context=5):
    """Logits from a table of (token, position in the window) with the ``config.context`` that
    bits_per_character reads: a window's start changes its predictions, so strides differ."""
    class Table(nn.Module):
        def __init__(self):
            super().__init__()
            self.config = type("Config", (), {"context": context, "vocab": vocab})()
            g = part_generator(seed, "table")
            self.table = nn.Parameter(torch.randn(vocab, vocab, generator=g))
            self.position = nn.Parameter(torch.randn(context, vocab, generator=g))

        def forward(self, ids):
            return self.table[ids] + self.position[:ids.shape[1]]       # (B, N, V)

    return Table().eval()


@lab.check("task4_bpc_test")
class BitsPerCharacter:
    def inputs(seed):
        g = part_generator(seed, "inputs")
        return {"model": table_model(seed), "cases": [(torch.randint(0, 7, (23,), generator=g), 40, None),
                                                           (torch.randint(0, 7, (6,), generator=g), 9, None),
                                                           (torch.randint(0, 7, (41,), generator=g), 50, None),
                                                           (torch.randint(0, 7, (23,), generator=g), 40, 1),
                                                           (torch.randint(0, 7, (30,), generator=g), 45, 2),
                                                           (torch.randint(0, 7, (4,), generator=g), 7, 3)]}

    def probe(answer, x, out):
        out["cases"] = [answer.bits_per_character(x["model"], ids.clone(), n, stride)
                        for ids, n, stride in x["cases"]]

    def compare(got, x, ref, expect):
        what = "bits_per_character(model, ids, num_chars, stride)"
        for (ids, n, stride), value in zip(x["cases"], got["cases"] if isinstance(got["cases"], list) else []):
            bpc = expect.value(value, what, (float,))
            if bpc is None:
                return
            expected = ref.bits_per_character(x["model"], ids, n, stride)
            if not expect.that(abs(bpc - expected) <= 1e-5 * max(1.0, abs(expected)),
                               f"{what} on {len(ids)} tokens with context {x['model'].config.context}, "
                               f"stride {stride}: windows of context + 1 tokens starting every stride "
                               "tokens (context when None), every token but the first predicted once "
                               "(by the first window that reaches it), nats summed, divided by ln 2 "
                               "and by num_chars"):
                return


# ---- task 5: sampling and the key/value cache ---------------------------------------------------

@lab.check("task5_sample_test")
class Sample:
    def inputs(seed):
        g = part_generator(seed, "inputs")
        return {"logits": torch.randn(3, 9, generator=g) * 2, "seed": part_seed(seed, "draws"),
                "settings": [(1.0, None), (0.7, 3), (1.5, 1), (2.0, 9)]}

    def probe(answer, x, out):
        for i, (temperature, top_k) in enumerate(x["settings"]):
            draws = torch.Generator().manual_seed(x["seed"] + i)
            out[f"draws{i}"] = [answer.sample_next(x["logits"].clone(), temperature, top_k, draws)
                                for _ in range(30)]
        out["zero"] = answer.sample_next(x["logits"].clone(), 0.0, None, None)
        out["negative"] = answer.sample_next(x["logits"].clone(), -1.0, 2, None)

    def compare(got, x, ref, expect):
        what = "sample_next(logits, temperature, top_k, generator)"
        for i, (temperature, top_k) in enumerate(x["settings"]):
            draws = torch.Generator().manual_seed(x["seed"] + i)
            words = f" at temperature {temperature}, top_k {top_k}"
            for value in got[f"draws{i}"] if isinstance(got[f"draws{i}"], list) else [got[f"draws{i}"]]:
                mine = expect.tensor(value, what, shape=(3,), dtype="torch.int64", shape_words="(B,) = (3,)")
                expected = ref.sample_next(x["logits"], temperature, top_k, draws)
                if not expect.close(mine, expected, f"{what}{words}: the draws differ from scaling the "
                                    "logits by 1/temperature, keeping the top_k largest, and one "
                                    "torch.multinomial(probs, 1, generator=generator) per call"):
                    break
        for key in ("zero", "negative"):
            expect.raised(got[key], "ValueError", f"{what} must raise ValueError for a temperature <= 0")


@lab.check("task5_cache_test")
class Cache:
    def inputs(seed):
        g = part_generator(seed, "inputs")
        return {"seed": seed, "ids": torch.randint(0, 13, (3, 5), generator=g), "prompt": [3, 1, 4],
                "settings": [(1.0, None, 7), (0.8, 4, 8), (1.0, 1, 9)], "context": 9}

    def probe(answer, x, out):
        model, names = lab_model(answer, x["seed"])
        out["names"] = names
        if names is None:
            out["steps"] = model
            return
        out["full"] = guarded(answer, model)(x["ids"].clone())
        cache, steps = None, []
        for t in range(x["ids"].shape[1]):
            result = answer.kv_step(model, x["ids"][:, t:t + 1].clone(), cache)
            steps.append(result)
            if answer.failed(result) or not (isinstance(result, tuple) and len(result) == 2):
                break
            cache = result[1]
        out["steps"] = [r if answer.failed(r) or not isinstance(r, tuple) else r[0] for r in steps]
        out["cache"] = ([[kv[0], kv[1]] for kv in cache] if isinstance(cache, (list, tuple)) and
                        all(isinstance(kv, (list, tuple)) and len(kv) == 2 for kv in cache) else cache)
        for i, (temperature, top_k, seed) in enumerate(x["settings"]):
            for cached in (True, False):
                out[f"gen{i}{cached}"] = answer.generate_tokens(model, list(x["prompt"]), 6, temperature, top_k,
                                                         seed, cached)
        out["too_long"] = answer.generate_tokens(model, list(x["prompt"]), x["context"], 1.0, None, 0, True)

    def compare(got, x, ref, expect):
        if not expect.returned(got["steps"], "TinyLM(config)"):
            return
        model, names = reference_model(ref, x["seed"])
        if not same_layout(got["names"], names, expect):
            return
        full = expect.tensor(got["full"], "TinyLM(config)(ids)", shape=(3, 5, 13),
                             shape_words="(B, N, V) = (3, 5, 13)")
        what = "kv_step(model, ids, cache)"
        steps = got["steps"] if isinstance(got["steps"], list) else []
        for t, value in enumerate(steps):
            mine = expect.tensor(value, f"{what} at position {t}", shape=(3, 13),
                                 shape_words="(B, V) = (3, 13)")
            if mine is None:
                return
            if full is not None and not expect.close(mine, full[:, t], f"{what}: the logits at "
                                                     f"position {t} differ from the model's own "
                                                     "forward pass at that position", atol=1e-4):
                return
        if len(steps) < x["ids"].shape[1]:
            expect.fail(f"{what} should return (logits (B, V), cache)")
            return
        cache = got["cache"]
        if not (isinstance(cache, list) and len(cache) == 2):
            expect.fail(f"{what}: the cache should be a list with one (K, V) per block")
            return
        for kv in cache:
            for part in kv:
                expect.tensor(part, f"{what}: a cached key or value after 5 tokens", shape=(3, 3, 5, 4),
                              shape_words="(B, h, t, d/h) = (3, 3, 5, 4)")
        with torch.no_grad():
            reference_logits = model(x["ids"])[:, -1]
        if full is not None:
            expect.close(full[:, -1], reference_logits, "TinyLM(config)(ids) differs from the "
                         "pre-norm model of Task 3", atol=1e-4)
        what = "generate_tokens(model, prompt, steps, temperature, top_k, seed, use_cache)"
        for i, (temperature, top_k, seed) in enumerate(x["settings"]):
            cached, plain = got[f"gen{i}True"], got[f"gen{i}False"]
            for value in (cached, plain):
                tokens = expect.value(value, what, (list,))
                if tokens is not None:
                    expect.that(len(tokens) == 9 and tokens[:3] == x["prompt"] and
                                all(type(t) is int for t in tokens),
                                f"{what} should return the prompt followed by `steps` ints")
            expect.that(cached == plain, f"{what}: with and without the cache the tokens differ "
                        f"(temperature {temperature}, top_k {top_k})")
            expect.equal(plain, ref.generate_tokens(model, x["prompt"], 6, temperature, top_k, seed, False),
                         f"{what}: the tokens differ from sampling with sample_next and one generator "
                         "seeded with `seed`, from the last position's logits, step by step")
        expect.raised(got["too_long"], "ValueError", f"{what} must raise ValueError when prompt and "
                      "continuation do not fit the context")


# ---- task 6: switching heads off ----------------------------------------------------------------

@lab.check("task6_ablation_test")
class Ablation:
    def inputs(seed):
        return {"seed": seed, "ids": torch.randint(0, 13, (4, 9), generator=part_generator(seed, "inputs"))}

    def probe(answer, x, out):
        model, names = lab_model(answer, x["seed"], layers=3)
        out["names"] = names
        if names is None:
            out["effect"] = model
            return
        out["effect"] = answer.head_ablation(model, x["ids"].clone())
        out["gates"] = [b.attn.head_gate.clone() for b in model.blocks]

    def compare(got, x, ref, expect):
        what = "head_ablation(model, ids)"
        if not expect.returned(got["effect"], "TinyLM(config)"):
            return
        model, names = reference_model(ref, x["seed"], layers=3)
        if not same_layout(got["names"], names, expect):
            return
        expect.tensor_close(got["effect"], what, ref.head_ablation(model, x["ids"]),
                            f"{what}: entry (l, j) should be the next-token loss with only head j of "
                            "block l switched off, minus the loss with every head on", atol=1e-4,
                            shape_words="(L, h) = (3, 3)")
        gates = got["gates"] if isinstance(got["gates"], list) else []
        for gate in gates:
            g = expect.tensor(gate, f"{what}: a block's head_gate afterwards", shape=(3,),
                              shape_words="(h,) = (3,)")
            if g is not None and not expect.that(bool((g == 1).all()), f"{what} must switch every "
                                                 "head back on when it is done"):
                break
