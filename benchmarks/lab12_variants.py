"""What was tried for Lab 12's model: the lab's recipe and the changes from it in ``VARIANTS``,
each trained as the notebook trains (the lab's reference functions, the course's one training
loop) on five seeds, scored in bits per character on the validation and test splits, and compared
on test with the best n-gram as the lab chooses it: the best on validation of the character model
(interpolated Kneser-Ney, one discount) and the token model (one discount or modified Kneser-Ney,
three discounts from the counts), order and discount chosen on validation.

    python -m benchmarks.lab12_variants        # 3-7 minutes a run on 2 cores; 2-5 runs a row
    python -m benchmarks.lab12_variants 3      # at most 3 new runs; 0: the report alone

Test is scored topic by topic (each of its 33 topics from a cold start, as the lab's verdict
scores it), so that the test text can be resampled: a row's margin is its mean over seeds of the
model's test bits per character minus the n-gram's, and its 95% interval takes both kinds of noise,
``t * sd_seeds / sqrt(seeds)`` and ``1.96 *`` the bootstrap's standard deviation over resampled
topics, added in quadrature (negative: the model is better). The standard deviation over seeds of
the recipe's test margin is the lab's ``SEED_SD`` (``attention_course.tasks.lm_verdict``).

The recipe and the rows that decide something run on five seeds; the rows of task 7d and the
other single changes on two (``ROW_SEEDS``): a change that does not beat the recipe's first two
seeds on both is not run further (its interval, from two seeds, is wide).

Runs are kept: a run already in ``lab12_variants.json`` with the same settings and seed is not
trained again, and the file is written after each run, so the benchmark can be stopped and
resumed, and rows added. Seconds are wall-clock training time with two torch threads, on a machine
that was not always idle (the lab's own time, measured alone, is in ``lab12.md``). Writes
``benchmarks/results/lab12_variants.md`` and ``lab12_variants.json``.
"""
from __future__ import annotations

import json
import math
import platform
import statistics
import time
from dataclasses import replace

import numpy as np
import torch

from attention_course.data.python_docs import MADE_WITH, split_topics
from attention_course.seeds import generator
from attention_course.tasks import lm_verdict
from attention_course.tasks.lm_verdict import topic_bits
from attention_course.tasks.fitting import fit
from attention_course.tasks.ngram_baselines import DISCOUNTS, MODIFIED, best_kneser_ney
from attention_course_instructor.grading.checks import reference_namespace
from benchmarks.report import RESULTS, machine, markdown_table, write

SEEDS = (0, 1, 2, 3, 4)
T_975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447}   # Student's t, by freedom
# name -> what changes from the lab's recipe (LMConfig fields, or training settings); run in order
VARIANTS = {
    "the lab's recipe": {},
    "a tenth of the text, a tenth of the steps": {"train_share": 0.1, "steps": 125},
    "a tenth of the text, all the steps": {"train_share": 0.1},
    "twice the steps": {"steps": 2500},
    "512 merges, 1100 steps": {"merges": 512, "steps": 1100},
    "512 merges": {"merges": 512},
    "context 128, batch 32 (the same tokens a step)": {"context": 128, "batch": 32},
    "learning rate 0.003": {"lr": 0.003},
    "width 128": {"width": 128},
}
SCREEN = (0, 1)
# rows that show something other than a recipe (task 7d's equal passes against equal compute)
# run on fewer seeds, and so does each single change at first: it is screened on two seeds and
# runs on all five only if it beats the recipe on both
ROW_SEEDS = {"a tenth of the text, a tenth of the steps": SCREEN,
             "a tenth of the text, all the steps": SCREEN,
             "context 128, batch 32 (the same tokens a step)": SCREEN,
             "learning rate 0.003": SCREEN}
TRAIN_SCORED = 160_000      # characters of its own training text each model is also scored on
SAVED = RESULTS / "lab12_variants.json"


def settings_of(ref, change: dict) -> dict:
    return {"merges": ref.NUM_MERGES, "steps": ref.TRAIN_STEPS, "batch": ref.BATCH,
            "lr": ref.LEARNING_RATE, "weight_decay": ref.WEIGHT_DECAY,
            "stride": ref.EVAL_STRIDE} | change


def train(ref, ids, settings: dict, seed: int):
    """The notebook's ``train_lm``, with the settings given and the seed."""
    fields = {k: v for k, v in settings.items() if k in ref.LMConfig.__dataclass_fields__}
    config = replace(ref.LMConfig(), vocab=256 + settings["merges"], **fields)
    tokens = ids["train"][:round(settings.get("train_share", 1.0) * len(ids["train"]))]
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


def interval(values: list[float], topic_sd: float) -> tuple[float, float, float]:
    """Mean of ``values`` (one margin per seed) and its 95% interval over seeds and test topics."""
    mean = statistics.fmean(values)
    seeds = T_975[len(values) - 1] * statistics.stdev(values) / math.sqrt(len(values))
    half = math.hypot(seeds, lm_verdict.Z_95 * topic_sd)
    return mean, mean - half, mean + half


def best_ngram(ref, splits, merges, vocab: int, tokens: dict) -> dict:
    """The n-gram the lab compares with: the better on validation of the best character model (one
    discount) and the best token model (one discount or modified); with its bits per test topic."""
    def fitted(kind, train, val, discounts, alphabet, encode):
        found = best_kneser_ney(train, val, discounts=discounts, alphabet=alphabet)
        best, counts = found["best"], found["model"]

        def bpc(text):
            bits = counts.bits(encode(text), best["order"], best["discount"])[1:]   # the lab's scorer
            return float(bits.sum()) / len(text)
        return {"kind": kind, "order": best["order"], "discount": best["discount"],
                "val_bpc": bpc(splits["val"].text), "score": bpc}

    candidates = [
        fitted("characters", splits["train"].text, splits["val"].text, DISCOUNTS, 256, lambda t: t),
        fitted("tokens", tokens["train"].tolist(), tokens["val"].tolist(), (*DISCOUNTS, MODIFIED),
               vocab, lambda t: ref.bpe_encode(t, merges))]
    best = min(candidates, key=lambda c: c["val_bpc"])
    score = best.pop("score")
    best["topic_bits"] = topic_bits(score, splits["test"].topic_texts())
    best["test_bpc"] = sum(best["topic_bits"]) / len(splits["test"])
    best["others"] = [{k: c[k] for k in ("kind", "order", "discount", "val_bpc")}
                      for c in candidates if c is not best]
    return best


def saved_runs() -> dict:
    """(settings as JSON, seed) -> a run already measured, from the committed results."""
    if not SAVED.exists():
        return {}
    old = json.loads(SAVED.read_text())
    return {(json.dumps(row["settings"], sort_keys=True), run["seed"]): run
            for row in old.get("rows", {}).values() if "settings" in row for run in row["runs"]}


def measure(stop_after: int | None = None) -> dict:
    torch.set_num_threads(2)
    ref, splits = reference_namespace("lab12"), split_topics()
    chars = {name: len(part) for name, part in splits.items()}
    topics = splits["test"].topic_texts()
    kept, encoded, rows, trained = saved_runs(), {}, {}, 0
    results = {"machine": f"{machine()}, Python {platform.python_version()}", "text": MADE_WITH,
               "sizes": chars, "seeds": list(SEEDS), "rows": rows, "topics": [len(t) for t in topics],
               "recipe": settings_of(ref, {}) | {"config": vars(ref.LMConfig())}}
    for name, change in VARIANTS.items():
        settings = settings_of(ref, change)
        if settings["merges"] not in encoded:
            merges = ref.learn_bpe(splits["train"].text, settings["merges"])
            encoded[settings["merges"]] = (merges, {n: torch.tensor(ref.bpe_encode(p.text, merges))
                                                    for n, p in splits.items()})
        merges, ids = encoded[settings["merges"]]
        if "ngram" not in results:      # the lab's tokens (the recipe runs first): the n-gram
            results["ngram"] = best_ngram(ref, splits, merges, 256 + settings["merges"], ids)
        key = json.dumps(settings, sort_keys=True)
        rows[name] = {"change": change, "settings": settings, "runs": []}
        for seed in ROW_SEEDS.get(name, SEEDS):
            if (key, seed) in kept:
                rows[name]["runs"].append(kept[(key, seed)])
                continue
            if stop_after is not None and trained >= stop_after:
                continue
            model, seconds = train(ref, ids, settings, seed)
            seen = ids["train"][:round(TRAIN_SCORED / chars["train"] * len(ids["train"]))]
            model.eval()
            run = {"seed": seed, "seconds": seconds,
                   "parameters": sum(p.numel() for p in model.parameters()),
                   "val": ref.bits_per_character(model, ids["val"], chars["val"], settings["stride"]),
                   "topic_bits": topic_bits(lambda text: ref.bits_per_character(
                       model, torch.tensor(ref.bpe_encode(text, merges)), len(text),
                       settings["stride"], windows_per_batch=64), topics),
                   "test_cold": ref.bits_per_character(model, ids["test"], chars["test"]),
                   "train": ref.bits_per_character(model, seen, len(ref.bpe_decode(seen.tolist(), merges)),
                                                   settings["stride"])}
            run["test"] = sum(run["topic_bits"]) / chars["test"]
            rows[name]["runs"].append(run)
            trained += 1
            print(name, json.dumps({k: v for k, v in run.items() if k != "topic_bits"}), flush=True)
            write("lab12_variants.json", json.dumps(results, indent=1))
    return results


def row_margin(results: dict, row: dict) -> dict:
    """A row's margins over the n-gram: per seed, and the mean with its interval."""
    ngram, sizes = results["ngram"], results["topics"]
    margins = [r["test"] - ngram["test_bpc"] for r in row["runs"]]
    mean_bits = np.mean([r["topic_bits"] for r in row["runs"]], axis=0)
    spread = lm_verdict.topic_sd(mean_bits, ngram["topic_bits"], sizes)
    if len(margins) < 2:
        return {"margins": margins, "topic_sd": spread}
    mean, low, high = interval(margins, spread)
    return {"margins": margins, "topic_sd": spread, "seed_sd": statistics.stdev(margins),
            "mean": mean, "low": low, "high": high,
            "verdict": "model better" if high < 0 else "n-gram better" if low > 0 else "level within noise"}


def report(results: dict) -> str:
    ngram, recipe = results["ngram"], results["recipe"]
    config = recipe["config"]
    table = []
    for name, row in results["rows"].items():
        runs = row["runs"]
        if not runs:
            table.append([name, "", "0", "", "", "", "", "", "", "not run yet"])
            continue
        mean = {k: statistics.fmean(r[k] for r in runs) for k in ("seconds", "val", "test", "test_cold")}
        own = [r["train"] for r in runs if "train" in r]
        found = row_margin(results, row)
        spread = (f"{found['mean']:+.3f} [{found['low']:+.3f}, {found['high']:+.3f}]"
                  if "mean" in found else f"{found['margins'][0]:+.3f}")
        table.append([name, f"{runs[0]['parameters']:,d}", str(len(runs)), f"{mean['seconds']:.0f}",
                      f"{statistics.fmean(own):.3f}" if own else "", f"{mean['val']:.3f}",
                      f"{mean['test']:.3f}", f"{mean['test_cold']:.3f}", spread,
                      found.get("verdict", "one seed: no interval")])
    recipe_row = row_margin(results, results["rows"]["the lab's recipe"])
    winners = [name for name, row in results["rows"].items()
               if row["runs"] and row_margin(results, row).get("verdict") == "model better"]
    others = "; ".join(f"{o['kind']}, order {o['order']}, validation {o['val_bpc']:.4f}"
                       for o in ngram["others"])
    return "\n".join([
        "# Lab 12: what was tried for the model", "",
        f"Written by `python -m benchmarks.lab12_variants` on {results['machine']}. Text: Python "
        f"{results['text']}'s documentation as the course ships it, {results['sizes']['train']:,d} / "
        f"{results['sizes']['val']:,d} / {results['sizes']['test']:,d} characters of train / "
        f"validation / test ({len(results['topics'])} test topics). Each row is trained as the "
        f"notebook trains, on seeds {', '.join(map(str, results['seeds']))} (the seeds column: how "
        "many of them ran); numbers are means over its seeds. The lab's recipe: "
        f"{recipe['merges']} merges, width {config['width']}, {config['layers']} blocks of "
        f"{config['heads']} heads, context {config['context']}, dropout {config['dropout']}, tied "
        f"embeddings, batch {recipe['batch']}, {recipe['steps']} steps, AdamW at {recipe['lr']:g} "
        f"one-cycle with weight decay {recipe['weight_decay']} on matrices only; scored with windows "
        f"every {recipe['stride']} tokens, test topic by topic (\"cold\": the whole test split in "
        "windows that do not overlap, each starting with no context). Training seconds are "
        "wall-clock and the machine was not always idle; the lab's own time, measured alone, is in "
        "`lab12.md`. \"Its training text\": the first "
        f"{TRAIN_SCORED:,d} characters of the text the row trained on (a tenth of the text is "
        f"{round(0.1 * results['sizes']['train']):,d}), scored as validation is; far below "
        "validation, the model has learned its training text by heart.", "",
        f"The best n-gram, as the lab chooses it (the best on validation of the character and the "
        f"token Kneser-Ney models): {ngram['kind']}, order {ngram['order']}, discount "
        f"{ngram['discount']}, validation {ngram['val_bpc']:.4f}, test {ngram['test_bpc']:.4f} bits "
        f"per character, scored topic by topic (the other: {others}). Every row is compared with "
        "this one n-gram, fitted on all of the training text (the tenth-of-the-text rows too).", "",
        "The interval is 95%, over seeds (Student's t) and test topics (a bootstrap of the topics, "
        f"{lm_verdict.DRAWS} draws) together; a row whose interval holds zero is level within noise. "
        "Rows on two seeds are single changes screened on the recipe's first two seeds (or task 7d's "
        "runs); their intervals, from two seeds, are wide.", "",
        markdown_table(["variant", "parameters", "seeds", "training s", "its training text bpc",
                        "validation bpc", "test bpc",
                        "test bpc, cold windows", "test minus n-gram, 95% interval", "verdict"], table),
        "",
        "The recipe's margin over the n-gram, seed by seed: "
        + ", ".join(f"{m:+.4f}" for m in recipe_row["margins"])
        + (f"; standard deviation over seeds {recipe_row['seed_sd']:.4f} (the lab's `SEED_SD`), over "
           f"resampled test topics {recipe_row['topic_sd']:.4f}." if "seed_sd" in recipe_row else "."),
        "",
        "Rows whose interval lies wholly below zero (the model better than the n-gram beyond the "
        f"noise): {', '.join(winners) if winners else 'none'}.", ""])


def main():
    import sys

    results = measure(int(sys.argv[1]) if len(sys.argv) > 1 else None)   # at most this many runs
    write("lab12_variants.json", json.dumps(results, indent=1))
    write("lab12_variants.md", report(results))


if __name__ == "__main__":
    main()
