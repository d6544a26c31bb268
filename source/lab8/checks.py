"""Lab 8's autograded checks, written once (see :mod:`attention_course_instructor.grading.checks`).

Every graded cell of ``lab8.ipynb`` has one check below: how its inputs are made from the grading
seed, what of the student's is called, and how the result is compared with the reference (the
solution cells of the source notebook). nbgrader's hidden tests and the hardened grader both run
these. Sizes are distinct on purpose (B = 3, N = 7, A = 5, D = 4; readers with hidden 6, attention
5, embed 4), and every check also covers the inputs of the cell's visible checks, so a notebook
that fails a visible check fails the hidden one too.
"""
import random

import torch
from rapidfuzz.distance import Levenshtein

from attention_course.core.readers import build_reader
from attention_course.data import EOS, SOS, make_strips
from attention_course_instructor.grading.checks import Lab, shared
from attention_course.seeds import part_generator, part_seed

lab = Lab("lab8", run_cells=("setup", "reader_step"), shortcuts={
    "edit_distance": ("rapidfuzz", "Levenshtein", "editdistance", "difflib"),
    "greedy_decode": ("attention_course.core.seq2seq",),
})

STEPS_CHECKED = 3             # decoder steps chained from the state each step returns


@shared
def small_reader(seed, kind="attention", eos_bias=0.0):
    """A small reader with random weights drawn from ``seed``; ``eos_bias`` makes end-of-string
    likelier."""
    torch.manual_seed(seed)
    config = dict(kind=kind, hidden=6, embed=4) | ({"attention": 5} if kind == "attention" else {})
    reader = build_reader(config).eval()
    if eos_bias:
        head = reader.readout_mlp[-1] if kind == "attention" else reader.out
        with torch.no_grad():
            head.bias[EOS] += eos_bias
    return reader


# ---- task 1: scores and weights ----------------------------------------------------------------

@lab.check("task1_scores_test")
class AdditiveScores:
    def inputs(seed):
        g = part_generator(seed, "inputs")
        return {"query": torch.randn(3, 5, generator=g), "keys": torch.randn(3, 7, 5, generator=g),
                "v": torch.randn(5, generator=g),
                "visible": (torch.tensor([[0.0, 1.0]]),
                            torch.tensor([[[0.0, 0.0], [1.0, -1.0], [2.0, 0.0]]]), torch.tensor([1.0, 1.0]))}

    def probe(answer, x, out):
        out["batch"] = answer.additive_scores(x["query"].clone(), x["keys"].clone(), x["v"].clone())
        out["visible"] = answer.additive_scores(*(t.clone() for t in x["visible"]))

    def compare(got, x, ref, expect):
        what = "additive_scores(query (B, A), keys (B, N, A), v (A,))"
        for key, args, shape in (("visible", x["visible"], (1, 3)),
                                 ("batch", (x["query"], x["keys"], x["v"]), (3, 7))):
            expect.tensor_close(got[key], what, ref.additive_scores(*args),
                                "the scores differ from e_j = v . tanh(q + k_j): add the query to "
                                "every column's key (one query per strip of the batch), then apply v",
                                shape_words=f"(B, N) = {shape}")


@lab.check("task1_weights_test")
class MaskedWeights:
    def inputs(seed):
        g = part_generator(seed, "inputs")
        mask = torch.rand(3, 7, generator=g) > 0.4
        mask[:, 1] = True
        return {"scores": torch.randn(3, 7, generator=g) * 5, "mask": mask,
                "huge": (torch.tensor([[1e4, -1e4, 3e4], [2e4, 2e4, -5.0]]),
                         torch.tensor([[True, True, False], [True, True, True]])),
                "empty": (torch.zeros(2, 3), torch.tensor([[True, False, False], [False, False, False]]))}

    def probe(answer, x, out):
        out["batch"] = answer.masked_attention_weights(x["scores"].clone(), x["mask"].clone())
        out["huge"] = answer.masked_attention_weights(*(t.clone() for t in x["huge"]))
        out["empty"] = answer.masked_attention_weights(*(t.clone() for t in x["empty"]))

    def compare(got, x, ref, expect):
        what = "masked_attention_weights(scores (B, N), mask (B, N))"
        w = expect.tensor(got["batch"], what, shape=(3, 7), shape_words="(B, N) = (3, 7)")
        if w is not None:
            expect.that(bool((w[~x["mask"]] == 0).all()), "padded columns must get exactly zero weight")
            expect.that(bool(torch.allclose(w.sum(-1), torch.ones(3, dtype=w.dtype))), "each row must sum to one")
            expect.close(w, ref.masked_attention_weights(x["scores"], x["mask"]),
                         "the weights differ from a softmax of the scores over the real columns")
        huge = expect.tensor(got["huge"], what + " on huge scores", shape=(2, 3), shape_words="(B, N) = (2, 3)")
        if huge is not None and expect.that(not bool(torch.isnan(huge).any()),
                                            "huge scores (around 1e4) gave nan: subtract each row's "
                                            "largest real score before exp, or use torch.softmax"):
            expect.close(huge, ref.masked_attention_weights(*x["huge"]),
                         "huge scores (around 1e4) are not handled: the weights should be those of "
                         "the same scores shifted by each row's largest real score")
        expect.raised(got["empty"], "ValueError", "a row with no real column must raise ValueError "
                      "(not return nan or uniform weights)")


# ---- task 2: context -----------------------------------------------------------------------------

@lab.check("task2_context_test")
class Context:
    def inputs(seed):
        g = part_generator(seed, "inputs")
        return {"weights": torch.softmax(torch.randn(3, 7, generator=g), -1),
                "states": torch.randn(3, 7, 4, generator=g),
                "visible": (torch.tensor([[0.0, 1.0, 0.0]]), torch.arange(12.0).reshape(1, 3, 4))}

    def probe(answer, x, out):
        out["batch"] = answer.attention_context(x["weights"].clone(), x["states"].clone())
        out["visible"] = answer.attention_context(*(t.clone() for t in x["visible"]))

    def compare(got, x, ref, expect):
        what = "attention_context(weights (B, N), states (B, N, D))"
        for key, args, shape in (("visible", x["visible"], (1, 4)),
                                 ("batch", (x["weights"], x["states"]), (3, 4))):
            expect.tensor_close(got[key], what, ref.attention_context(*args),
                                "the context differs from the weighted sum of the states, "
                                "sum_j w_j h_j, for each strip of the batch",
                                shape_words=f"(B, D) = {shape}")


# ---- task 3: one decoder step, then greedy decoding -------------------------------------------

@lab.check("task3_step_test")
class DecoderStep:
    def inputs(seed):
        return {"reader": small_reader(part_seed(seed, "reader")),
                "batch": make_strips([2, 3], count=3, seed=part_seed(seed, "strips"), split="val"),
                "prev": torch.tensor([SOS, 4, 7])}

    def probe(answer, x, out):
        reader, batch = x["reader"], x["batch"]
        with torch.no_grad():
            memory = reader.encode(batch.columns, batch.mask)
            state = reader.start(memory)
            for t in range(STEPS_CHECKED):
                result = answer.decoder_step(reader, memory, state, x["prev"].clone())
                out[f"step{t}"] = result
                if answer.failed(result) or not (isinstance(result, (tuple, list)) and len(result) == 3):
                    break
                state = result[1]

    def compare(got, x, ref, expect):
        reader, batch = x["reader"], x["batch"]
        n = batch.mask.shape[1]
        with torch.no_grad():
            memory = reader.encode(batch.columns, batch.mask)
            state = reader.start(memory)
            for t in range(STEPS_CHECKED):
                logits, state, weights = ref.decoder_step(reader, memory, state, x["prev"])
                result = got[f"step{t}"]
                what = f"decoder_step (step {t + 1})"
                if not expect.returned(result, what):
                    return
                if not (isinstance(result, (tuple, list)) and len(result) == 3
                        and isinstance(result[1], (tuple, list)) and len(result[1]) == 2):
                    expect.fail(f"{what} should return (logits, (weights, context), weights)")
                    return
                expect.tensor_close(result[0], what + ": logits", logits,
                                    f"{what}: the logits differ from those of the five steps of the "
                                    "task (query, keys, scores plus the location prior, weights, "
                                    "context, readout)", shape_words="(B, 11) = (3, 11)")
                for name, value, ref_value, words in (
                        ("weights", result[2], weights, f"(B, N) = (3, {n})"),
                        ("new state's weights", result[1][0], state[0], f"(B, N) = (3, {n})"),
                        ("new state's context", result[1][1], state[1], "(B, D) = (3, 12)")):
                    expect.tensor_close(value, f"{what}: {name}", ref_value,
                                        f"{what}: the {name} differ from those of the task's steps "
                                        "(the weights under memory.mask, the context from them)",
                                        shape_words=words)
                if not expect.ok:
                    return


GREEDY_CASES = (("attention", (1, 4), 5, 6, 0.0), ("attention", (1, 4), 5, 6, 0.4),
                ("attention", (1, 4), 5, 6, 0.8), ("fixed", (3,), 4, 5, 0.0))


@lab.check("task3_greedy_test")
class GreedyDecode:
    def inputs(seed):
        cases = []
        for i, (kind, lengths, count, max_len, bias) in enumerate(GREEDY_CASES):
            case = part_seed(seed, f"case {i}")
            batch = make_strips(list(lengths), count=count, seed=part_seed(case, "strips"), split="test")
            cases.append((small_reader(part_seed(case, "reader"), kind, bias), batch, max_len))
        return {"cases": cases}

    def probe(answer, x, out):
        for i, (reader, batch, max_len) in enumerate(x["cases"]):
            out[f"case{i}"] = answer.greedy_decode(reader, batch.columns.clone(), batch.mask.clone(), max_len)

    def compare(got, x, ref, expect):
        what = "greedy_decode(reader, columns, mask, max_len)"
        for i, (reader, batch, max_len) in enumerate(x["cases"]):
            result = got[f"case{i}"]
            if not expect.returned(result, what):
                return
            if not (isinstance(result, (tuple, list)) and len(result) == 2):
                expect.fail(f"{what} should return (list of strings, weights (B, T, N))")
                return
            texts, weights = result
            ref_texts, ref_weights = ref.greedy_decode(reader, batch.columns, batch.mask, max_len)
            if not (isinstance(texts, list) and all(isinstance(t, str) for t in texts)):
                expect.fail(f"{what}: the readings should be a list of strings (use decode_tokens)")
            else:
                expect.that(texts == ref_texts, f"{what}: the readings differ from greedy decoding's: "
                            "the most likely token at every step, a strip's reading ends at its first "
                            "EOS, and a finished strip is fed EOS")
            words = (f"(B, T, N) = (3 or more strips, one row per step that ran, {batch.mask.shape[1]} "
                     "columns): stop as soon as every strip has emitted EOS, and never run more than "
                     "max_len steps")
            mine = expect.tensor(weights, f"{what}: weights", shape=tuple(ref_weights.shape), shape_words=words)
            if mine is not None and texts == ref_texts:
                for b, text in enumerate(ref_texts):
                    rows = min(len(text) + 1, ref_weights.shape[1])
                    expect.close(mine[b, :rows], ref_weights[b, :rows],
                                 f"{what}: the weights of the steps that wrote a reading differ from "
                                 "those decoder_step returned")
            if not expect.ok:
                return


# ---- task 4: edit distance and rates -----------------------------------------------------------

@lab.check("task4_edit_test")
class EditDistance:
    def inputs(seed):
        rng = random.Random(seed)
        random_pairs = [("".join(rng.choice("0123") for _ in range(rng.randint(0, 12))),
                         "".join(rng.choice("0123") for _ in range(rng.randint(0, 12)))) for _ in range(200)]
        return {"empty": [("", ""), ("5", ""), ("", "5"), ("", "123")],
                "insert or delete": [("427", "47"), ("47", "427"), ("1111111111", "1")],
                "substitution": [("12", "13"), ("1234", "1834"), ("0123456789", "9876543210")],
                "mixed": [("1234", "2345"), ("12", "21")], "random": random_pairs}

    def probe(answer, x, out):
        for kind, pairs in x.items():
            out[kind] = [answer.edit_distance(a, b) for a, b in pairs]

    def compare(got, x, ref, expect):
        hints = {"empty": "the distance to an empty string is the other string's length",
                 "insert or delete": "an insertion or a deletion costs 1",
                 "substitution": "a substitution costs 1 (not a deletion plus an insertion)",
                 "mixed": "take the cheapest mix of insertions, deletions and substitutions",
                 "random": "it differs from the Levenshtein distance on some pairs"}
        for kind, pairs in x.items():
            values = got[kind]
            if not isinstance(values, list):
                expect.returned(values, "edit_distance")
                continue
            for (a, b), value in zip(pairs, values):
                d = expect.value(value, "edit_distance", (int,))
                if d is None:
                    break
                if not expect.equal(d, Levenshtein.distance(a, b), f"edit_distance is wrong: {hints[kind]}"):
                    break


@lab.check("task4_rates_test")
class Rates:
    def inputs(seed):
        rng = random.Random(seed)
        targets = ["".join(rng.choice("0123456789") for _ in range(rng.randint(0, 9))) for _ in range(50)]
        preds = [s[:-1] if i % 3 == 0 else (s + "7" if i % 3 == 1 else s) for i, s in enumerate(targets)]
        return {"visible": [(["12", "3"], ["12", "4"]), (["", "123456"], ["123", "12"])],
                "empty targets": [([""], [""]), (["12"], [""])],
                "too long": [(["1234567"], ["12"])], "many": [(preds, targets)]}

    def probe(answer, x, out):
        for kind, cases in x.items():
            out[kind] = [(answer.character_error_rate(list(p), list(t)), answer.exact_accuracy(list(p), list(t)))
                         for p, t in cases]

    def compare(got, x, ref, expect):
        hints = {"visible": "", "empty targets": ": an empty target read as empty costs 0, and every "
                 "character read for an empty target is an error (the denominator is at least 1)",
                 "too long": ": a reading longer than its target can have a CER above 1",
                 "many": ": total edits over total target characters, for a list of readings"}
        for kind, cases in x.items():
            for (p, t), pair in zip(cases, got[kind] if isinstance(got[kind], list) else []):
                cer = expect.value(pair[0], "character_error_rate", (float,))
                acc = expect.value(pair[1], "exact_accuracy", (float,))
                expect.equal(cer, ref.character_error_rate(p, t), f"character_error_rate is wrong{hints[kind]}")
                expect.equal(acc, ref.exact_accuracy(p, t), "exact_accuracy should be the fraction of "
                             "readings equal to their target")


# ---- task 5: results by length -----------------------------------------------------------------

@lab.check("task5_results_test")
class ResultsByLength:
    def inputs(seed):
        return {"readers": [small_reader(part_seed(seed, "stopping reader"), eos_bias=1.0),
                            small_reader(part_seed(seed, "reader"))],
                "lengths": [1, 3, 9], "count": 6, "seed": part_seed(seed, "strips")}

    def probe(answer, x, out):
        for i, reader in enumerate(x["readers"]):
            out[f"reader{i}"] = answer.results_by_length(reader, list(x["lengths"]), x["count"], x["seed"])

    def compare(got, x, ref, expect):
        what = "results_by_length(reader, lengths, count, seed)"
        for i, reader in enumerate(x["readers"]):
            table = got[f"reader{i}"]
            if not expect.returned(table, what):
                return
            if not (isinstance(table, dict) and sorted(table) == x["lengths"]):
                expect.fail(f"{what} should return a dict keyed by the lengths asked for")
                return
            reference = ref.results_by_length(reader, x["lengths"], x["count"], x["seed"])
            for length in x["lengths"]:
                row = table[length]
                if not (isinstance(row, dict) and {"exact", "cer", "n"} <= set(row)):
                    expect.fail(f"{what}: each length's entry should be a dict with 'exact', 'cer' and 'n'")
                    return
                for key in ("exact", "cer"):
                    value = expect.value(row[key], f"{what}: '{key}'", (float,))
                    expect.equal(value, reference[length][key],
                                 f"{what}: '{key}' differs from reading eval_strips(length, count, seed) "
                                 "with your greedy_decode and at most length + 8 steps")
                expect.equal(row["n"], x["count"], f"{what}: 'n' should be the number of strips read")
            if not expect.ok:
                return


# ---- task 6: attention map ---------------------------------------------------------------------

@lab.check("task6_map_test")
class AttentionMap:
    def inputs(seed):
        weights = torch.rand(5, 40, generator=part_generator(seed, "weights"))
        return {"weights": weights, "cases": [("12345", 33), ("", 17), ("12", 9)],
                "visible": (torch.rand(6, 30, generator=part_generator(seed, "visible")), "427", 25)}

    def probe(answer, x, out):
        out["cases"] = [answer.attention_map(x["weights"].clone(), r, n) for r, n in x["cases"]]
        w, reading, n = x["visible"]
        out["visible"] = answer.attention_map(w.clone(), reading, n)

    def compare(got, x, ref, expect):
        cases = [(x["weights"], r, n) for r, n in x["cases"]] + [x["visible"]]
        results = (got["cases"] if isinstance(got["cases"], list) else []) + [got["visible"]]
        for (weights, reading, n), result in zip(cases, results):
            rows = min(len(reading) + 1, weights.shape[0])
            m = expect.tensor(result, f"attention_map for a reading of {len(reading)} characters",
                              shape=(rows, n), shape_words="(min(len(reading) + 1, T), n_columns) = "
                              f"{(rows, n)}")
            expect.close(m, ref.attention_map(weights, reading, n),
                         "attention_map should keep the first rows and columns of the weights as they are")
