"""Lab 8 benchmark: train both readers on several seeds and tabulate them by strip length.

    .venv/bin/python benchmarks/lab8_readers.py [--seeds 0 1 2] [--steps 1500] [--count 200]

Writes ``benchmarks/results/lab8_readers.md`` (the committed table) and ``lab8_readers.json`` (every
number), and saves each trained reader under ``runs/`` so that it can be re-checked on new strips:
``python benchmarks/reader_cli.py evaluate runs/lab8-attention-0.pt --seed 777``.
Training uses the Lab 8 configurations (``attention_course.tasks.readers.LAB_READERS``); the budget is
checked against the lab's targets and the verdicts are written next to the numbers.
"""
from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from pathlib import Path

import torch

from attention_course.tasks.baselines import isolated_digit_floor
from attention_course.tasks.readers import (EVAL_LENGTHS, LAB_READERS, TRAIN_LENGTHS, TrainConfig,
                                            save_reader, train_reader)
from lab8_reference import evaluate_reader, reader_step

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
RUNS = HERE.parent / "runs"
BEYOND = tuple(n for n in EVAL_LENGTHS if n > max(TRAIN_LENGTHS))
# Targets of the Lab 8 issue, checked below.
BUDGET_S = 120
TARGET_IN = {"exact": 0.93, "cer": 0.02}
TARGET_BEYOND = {"exact": 0.5, "cer": 0.10}
FLOOR_FACTOR = 1.5


def mean(xs):
    return sum(xs) / len(xs)


def run(seeds, steps, count, eval_seed):
    train = TrainConfig(steps=steps, noise=0.1)
    runs = {}
    for name, config in LAB_READERS.items():
        for seed in seeds:
            reader, log = train_reader(config, train, seed=seed, progress=False, step=reader_step)
            save_reader(reader, RUNS / f"lab8-{name}-{seed}.pt", log, train)
            start = time.perf_counter()
            table = evaluate_reader(reader, EVAL_LENGTHS, count=count, seed=eval_seed)
            runs[(name, seed)] = {"seconds": log.seconds, "eval_seconds": time.perf_counter() - start,
                                  "device": log.device, "table": table}
            print(f"{name} seed {seed}: {log.seconds:.0f} s, exact 1-8 "
                  f"{mean([table[n]['exact'] for n in TRAIN_LENGTHS]):.3f}, 9-16 "
                  f"{mean([table[n]['exact'] for n in BEYOND]):.3f}", flush=True)
    return runs


def summarise(runs, seeds, floor):
    names = list(LAB_READERS)
    by = {name: {n: {m: [runs[(name, s)]["table"][n][m] for s in seeds] for m in ("exact", "cer")}
                 for n in EVAL_LENGTHS} for name in names}
    lines = ["| L | " + " | ".join(f"{n} exact | {n} CER" for n in names) + " | floor |",
             "|---" * (2 + 2 * len(names)) + "|"]
    for n in EVAL_LENGTHS:
        cells = []
        for name in names:
            e, c = by[name][n]["exact"], by[name][n]["cer"]
            spread = lambda v: f" ± {statistics.pstdev(v):.3f}" if len(v) > 1 else ""
            cells.append(f"{mean(e):.3f}{spread(e)} | {mean(c):.4f}{spread(c)}")
        mark = " (trained)" if n in TRAIN_LENGTHS else ""
        lines.append(f"| {n}{mark} | " + " | ".join(cells) + f" | {floor:.4f} |")
    att = by["attention"]
    within = {m: mean([mean(att[n][m]) for n in TRAIN_LENGTHS]) for m in ("exact", "cer")}
    beyond = {m: mean([mean(att[n][m]) for n in BEYOND]) for m in ("exact", "cer")}
    fixed = by["fixed-context"]
    fixed_beyond = mean([mean(fixed[n]["exact"]) for n in BEYOND])
    worst = max(mean(att[n]["cer"]) / floor for n in EVAL_LENGTHS)
    slowest = max(r["seconds"] for r in runs.values())
    checks = [
        (f"training time per reader <= {BUDGET_S} s", f"{slowest:.0f} s (slowest run)",
         slowest <= BUDGET_S),
        (f"attention, lengths 1-8: exact >= {TARGET_IN['exact']}", f"{within['exact']:.3f}",
         within["exact"] >= TARGET_IN["exact"]),
        (f"attention, lengths 1-8: CER <= {TARGET_IN['cer']}", f"{within['cer']:.4f}",
         within["cer"] <= TARGET_IN["cer"]),
        (f"attention, lengths 9-16 (mean of seeds): exact >= {TARGET_BEYOND['exact']}",
         f"{beyond['exact']:.3f}", beyond["exact"] >= TARGET_BEYOND["exact"]),
        (f"attention, lengths 9-16: CER <= {TARGET_BEYOND['cer']}", f"{beyond['cer']:.4f}",
         beyond["cer"] <= TARGET_BEYOND["cer"]),
        (f"attention CER within {FLOOR_FACTOR}x the floor at every length",
         f"worst {worst:.1f}x", worst <= FLOOR_FACTOR),
        ("fixed-context reader worse beyond length 8", f"exact {fixed_beyond:.3f} vs "
         f"{beyond['exact']:.3f}", fixed_beyond < beyond["exact"]),
    ]
    verdicts = ["| target | measured | met |", "|---|---|---|"] + [
        f"| {what} | {value} | {'yes' if ok else '**no**'} |" for what, value, ok in checks]
    return lines, verdicts, {"within": within, "beyond": beyond, "fixed_beyond_exact": fixed_beyond,
                             "worst_floor_ratio": worst, "slowest_seconds": slowest}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--steps", type=int, default=TrainConfig.steps)
    ap.add_argument("--count", type=int, default=200, help="test strips per length")
    ap.add_argument("--eval-seed", type=int, default=2024)
    args = ap.parse_args()
    floor = isolated_digit_floor()
    runs = run(args.seeds, args.steps, args.count, args.eval_seed)
    table, verdicts, summary = summarise(runs, args.seeds, floor)
    machine = (f"{platform.processor() or platform.machine()}, {torch.get_num_threads()} threads, "
               f"torch {torch.__version__}, device {next(iter(runs.values()))['device']}")
    times = ", ".join(f"{name} seed {s}: {r['seconds']:.0f} s" for (name, s), r in runs.items())
    text = "\n".join([
        "# Lab 8 readers: exact-string accuracy and CER by strip length",
        "",
        f"Written by `benchmarks/lab8_readers.py` (seeds {args.seeds}, {args.steps} training steps "
        f"of 64 strips, {args.count} test strips per length, evaluation seed {args.eval_seed}). "
        f"Mean ± standard deviation over seeds. Trained on lengths 1-8; 9-16 were never seen. "
        f"The floor is the error rate of an RBF SVM on single digits of the same test pool.",
        "",
        f"Machine: {machine}. Training time: {times}.",
        "",
        *table, "", "## Against the Lab 8 targets", "", *verdicts, ""])
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "lab8_readers.md").write_text(text)
    (RESULTS / "lab8_readers.json").write_text(json.dumps({
        "seeds": args.seeds, "steps": args.steps, "count": args.count, "eval_seed": args.eval_seed,
        "floor": floor, "machine": machine, "summary": summary,
        "runs": {f"{k[0]}/{k[1]}": v for k, v in runs.items()}}, indent=1))
    print(text)


if __name__ == "__main__":
    main()
