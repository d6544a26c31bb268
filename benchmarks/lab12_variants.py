"""What was tried for Lab 12's model: the lab's recipe (and any change from it listed in
``VARIANTS``), each trained as the notebook trains (the lab's reference functions, the course's one training loop) on
three seeds, scored in bits per character on the validation and test splits, and compared on test
with the best n-gram as the lab chooses it: the better on validation of the best character and the
best token model (interpolated Kneser-Ney with one discount, order and discount chosen on validation).

    python -m benchmarks.lab12_variants        # about 10 minutes on 2 cores

The interval is a 95% t-interval over the seeds for the model's test bits per character minus the
n-gram's (negative: the model is better). Seconds are wall-clock training time with two torch
threads. Writes ``benchmarks/results/lab12_variants.md`` and ``lab12_variants.json``.
"""
from __future__ import annotations

import json
import math
import platform
import statistics
import time
from dataclasses import replace

import torch

from attention_course.data.python_docs import MADE_WITH, split_topics
from attention_course.seeds import generator
from attention_course.tasks.fitting import fit
from attention_course.tasks.ngram_baselines import best_kneser_ney
from attention_course_instructor.grading.checks import reference_namespace
from benchmarks.report import machine, markdown_table, write

SEEDS = (0, 1, 2)
T_975 = {2: 4.303, 3: 3.182, 4: 2.776}          # Student's t, 97.5% quantile, by degrees of freedom
# name -> what changes from the lab's recipe (LMConfig fields, or training settings)
VARIANTS = {
    "the lab's recipe": {},
}


def settings_of(ref, change: dict) -> dict:
    return {"merges": ref.NUM_MERGES, "steps": ref.TRAIN_STEPS, "batch": ref.BATCH,
            "lr": ref.LEARNING_RATE, "weight_decay": ref.WEIGHT_DECAY,
            "stride": ref.EVAL_STRIDE} | change


def train(ref, ids, settings: dict, seed: int):
    """The notebook's ``train_lm``, with the settings given and the seed."""
    fields = {k: v for k, v in settings.items() if k in ref.LMConfig.__dataclass_fields__}
    config = replace(ref.LMConfig(), vocab=256 + settings["merges"], **fields)
    tokens = ids["train"]
    torch.manual_seed(seed)
    model = ref.TinyLM(config)
    windows = generator(seed, "text-windows")

    def next_batch(step):
        starts = torch.randint(0, len(tokens) - config.context, (settings["batch"],), generator=windows)
        return torch.stack([tokens[s:s + config.context] for s in starts])

    def adamw(params, lr):
        params = list(params)
        return torch.optim.AdamW([
            {"params": [p for p in params if p.dim() >= 2], "weight_decay": settings["weight_decay"]},
            {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}], lr=lr)

    began = time.perf_counter()
    fit(model, next_batch, lambda m, batch: ref.next_token_loss(m(batch), batch), settings["steps"],
        settings["lr"], optimizer=adamw, schedule="one-cycle")
    return model, time.perf_counter() - began


def interval(values: list[float]) -> tuple[float, float, float]:
    """Mean and 95% t-interval of ``values``."""
    mean = statistics.fmean(values)
    half = T_975[len(values) - 1] * statistics.stdev(values) / math.sqrt(len(values))
    return mean, mean - half, mean + half


def measure() -> dict:
    torch.set_num_threads(2)
    ref, splits = reference_namespace("lab12"), split_topics()
    chars = {name: len(part) for name, part in splits.items()}
    ngram = best_kneser_ney(splits["train"].text, splits["val"].text, splits["test"].text)["best"]
    ngram["kind"] = "characters"
    encoded = {}
    rows = {}
    for name, change in VARIANTS.items():
        settings = settings_of(ref, change)
        if settings["merges"] not in encoded:
            merges = ref.learn_bpe(splits["train"].text, settings["merges"])
            encoded[settings["merges"]] = {n: torch.tensor(ref.bpe_encode(p.text, merges))
                                           for n, p in splits.items()}
        ids = encoded[settings["merges"]]
        if not change:                  # the lab's tokens: the token n-gram it also compares with
            tokens = best_kneser_ney(*(ids[n].tolist() for n in ("train", "val", "test")),
                                     alphabet=256 + settings["merges"])["best"]
            per_char = {n: len(ids[n]) / chars[n] for n in ("val", "test")}
            tokens |= {"kind": "tokens", "val_bpc": tokens["val_bpc"] * per_char["val"],
                       "test_bpc": tokens["test_bpc"] * per_char["test"]}
            ngram = min(ngram, tokens, key=lambda found: found["val_bpc"])
        runs = []
        for seed in SEEDS:
            model, seconds = train(ref, ids, settings, seed)
            run = {"seed": seed, "seconds": seconds,
                   "parameters": sum(p.numel() for p in model.parameters())}
            for split in ("val", "test"):
                run[split] = ref.bits_per_character(model, ids[split], chars[split], settings["stride"])
            run["test_cold"] = ref.bits_per_character(model, ids["test"], chars["test"])
            runs.append(run)
            print(name, json.dumps(run), flush=True)
        rows[name] = {"change": change, "runs": runs}
    return {"machine": f"{machine()}, Python {platform.python_version()}", "text": MADE_WITH,
            "ngram": ngram, "sizes": chars, "seeds": list(SEEDS), "rows": rows,
            "recipe": settings_of(ref, {}) | {"config": vars(ref.LMConfig())}}


def report(results: dict) -> str:
    ngram, recipe = results["ngram"], results["recipe"]
    config = recipe["config"]
    table = []
    for name, row in results["rows"].items():
        runs = row["runs"]
        mean = {k: statistics.fmean(r[k] for r in runs) for k in ("seconds", "val", "test", "test_cold")}
        diff, low, high = interval([r["test"] - ngram["test_bpc"] for r in runs])
        verdict = ("model better" if high < 0 else "n-gram better" if low > 0 else "not separated")
        table.append([name, f"{runs[0]['parameters']:,d}", f"{mean['seconds']:.0f}", f"{mean['val']:.3f}",
                      f"{mean['test']:.3f}", f"{mean['test_cold']:.3f}",
                      f"{diff:+.3f} [{low:+.3f}, {high:+.3f}]", verdict])
    return "\n".join([
        "# Lab 12: what was tried for the model", "",
        f"Written by `python -m benchmarks.lab12_variants` on {results['machine']}. Text: Python "
        f"{results['text']}'s documentation as the course ships it, {results['sizes']['train']:,d} / "
        f"{results['sizes']['val']:,d} / {results['sizes']['test']:,d} characters of train / "
        "validation / test. Each row is trained as the notebook trains, on seeds "
        f"{', '.join(map(str, results['seeds']))}; numbers are means over the seeds. The lab's recipe: "
        f"{recipe['merges']} merges, width {config['width']}, {config['layers']} blocks of "
        f"{config['heads']} heads, context {config['context']}, dropout {config['dropout']}, tied "
        f"embeddings, batch {recipe['batch']}, {recipe['steps']} steps, AdamW at {recipe['lr']:g} "
        f"one-cycle with weight decay {recipe['weight_decay']} on matrices only; scored with windows "
        f"every {recipe['stride']} tokens (\"cold\": windows that do not overlap, each starting with "
        "no context). Training seconds are wall-clock and the machine was not always idle; the "
        "lab's own time, measured alone, is in `lab12.md`.", "",
        f"The best n-gram, as the lab chooses it (the better on validation of the best character "
        f"and the best token Kneser-Ney model): {ngram['kind']}, order {ngram['order']}, discount "
        f"{ngram['discount']}, validation {ngram['val_bpc']:.3f}, test {ngram['test_bpc']:.3f} bits "
        "per character.", "",
        markdown_table(["variant", "parameters", "training s", "validation bpc", "test bpc",
                        "test bpc, cold windows", "test minus n-gram, 95% interval", "verdict"], table),
        ""])


def main():
    results = measure()
    write("lab12_variants.json", json.dumps(results, indent=1))
    write("lab12_variants.md", report(results))


if __name__ == "__main__":
    main()
