"""Lab 8 attention maps for the book: a read that is right and one that is wrong, by strip length.

    python -m benchmarks.lab8_maps [--seed 0] [--steps N] [--lengths 6 14]

Takes the attention reader ``benchmarks/lab8_readers.py`` trained with the same seed (its checkpoint
under ``runs/``, when it was trained with today's Lab 8 configuration and recipe), or trains one
exactly as that benchmark does (the lab's reference ``reader_step``, the same seed rule); reads the
benchmark's evaluation strips
(evaluation seed 2024) greedily, and for each length keeps the first strip it reads right and the
first it reads wrong: the strip image, the digit spans, the target, the reading and the attention
weights of every step. Writes ``attention_course/book/results/lab8_maps.json`` (in the student
package, so that the page runs where only the package is installed), from which the book's page of
Lab 8 results draws its maps (no model code reaches the book).
"""
from __future__ import annotations

import argparse
import json
from dataclasses import asdict, replace
from pathlib import Path

import torch

from attention_course.paths import RESULTS as BOOK_RESULTS
from attention_course.tasks.readers import (LAB_READERS, LAB_TRAINING, eval_strips, load_reader,
                                            train_reader)
from benchmarks.lab8_reference import read_greedily, reader_step

RESULTS = BOOK_RESULTS            # the page of Lab 8's results draws them: they ship in the package
RUNS = Path(__file__).resolve().parent.parent / "runs"
EVAL_SEED, COUNT = 2024, 200


def read_with_weights(reader, length: int):
    """The evaluation strips of one length, the reader's greedy readings and their weights."""
    batch = eval_strips(length, COUNT, EVAL_SEED)
    readings, weights = read_greedily(reader, batch, length + 8)          # weights (B, T, N)
    return batch, readings, weights


def example(batch, readings, weights, b: int) -> dict:
    width = int(batch.mask[b].sum())
    steps = len(readings[b]) + 1                                            # + the end step
    return {"target": batch.texts[b], "reading": readings[b], "spans": batch.spans[b],
            "strip": batch.columns[b, :width].T.round(decimals=2).tolist(),  # (8, W)
            "weights": weights[b, :steps, :width].round(decimals=4).tolist()}  # (T, W)


def benchmark_reader(seed: int, train):
    """The attention reader lab8_readers.py saved for ``seed``, if it was trained with this
    configuration and recipe, else one trained here the same way: ``(reader, training seconds)``."""
    path = RUNS / f"lab8-attention-{seed}.pt"
    if path.exists():
        saved = torch.load(path, map_location="cpu", weights_only=False)
        if (saved["config"] == LAB_READERS["attention"].to_dict()
                and saved["train"] == asdict(train) and saved["log"]["seed"] == seed):
            print(f"reading with {path}", flush=True)
            return load_reader(path), saved["log"]["seconds"]
    reader, log = train_reader(LAB_READERS["attention"], train, seed=seed, progress=False,
                               step=reader_step)
    return reader.eval(), log.seconds


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--steps", type=int, default=LAB_TRAINING["attention"].steps)
    ap.add_argument("--lengths", type=int, nargs="+", default=[6, 14])
    args = ap.parse_args()
    train = replace(LAB_TRAINING["attention"], steps=args.steps)
    reader, seconds = benchmark_reader(args.seed, train)
    maps = {}
    for length in args.lengths:
        batch, readings, weights = read_with_weights(reader, length)
        right = [b for b in range(COUNT) if readings[b] == batch.texts[b]]
        wrong = [b for b in range(COUNT) if readings[b] != batch.texts[b]]
        maps[str(length)] = {"exact": len(right) / COUNT,
                             **{kind: example(batch, readings, weights, found[0])
                                for kind, found in (("right", right), ("wrong", wrong)) if found}}
        print(f"length {length}: {len(right)}/{COUNT} exact", flush=True)
    out = {"seed": args.seed, "steps": args.steps, "eval_seed": EVAL_SEED, "count": COUNT,
           "training_seconds": round(seconds, 1), "maps": maps}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "lab8_maps.json").write_text(json.dumps(out) + "\n")
    print(f"wrote {RESULTS / 'lab8_maps.json'} ({seconds:.0f} s of training)")


if __name__ == "__main__":
    main()
