"""Lab 8: what was tried on the way to the attention reader (one seed per variant).

    .venv/bin/python benchmarks/lab8_variants.py [--seed 0] [--count 100]

Each variant changes one thing relative to the Lab 8 attention reader and trains it with the same
budget; the table reports exact accuracy and CER averaged over lengths 1-8 (trained) and 9-16
(never seen). One seed each, so differences of a few points are within seed-to-seed spread (see
``lab8_readers.md`` for three seeds of the chosen reader). Writes ``results/lab8_variants.md``.
"""
from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

import torch

from attention_course.data.strips import StripStyle
from attention_course.tasks.readers import LAB_READERS, TrainConfig, train_reader
from lab8_reference import LAB8, evaluate_reader, reader_step

HERE = Path(__file__).resolve().parent
BASE_READER = LAB_READERS["attention"]
BASE_TRAIN = TrainConfig(noise=0.1)
VARIANTS = {
    "Lab 8 attention reader": ({}, {}),
    "no location prior (plain location-aware attention)": ({"location_prior": False}, {}),
    "with a GRU decoder state (the reader can count)": ({"decoder_state": True}, {}),
    "digit shear/scale augmentation (warp 0.15)": ({}, {"style": StripStyle(warp=0.15)}),
    "train on train+validation images": ({}, {"split": "train+val"}),
    "2000 steps instead of 1500": ({}, {"steps": 2000}),
}


def step_with_decoder_state(reader, memory, state, prev_token):
    """The lab's decoder step with a GRU decoder state in the query (the variant that can count)."""
    prev_weights, prev_context, h = state
    h = reader.cell(torch.cat([reader.token_embed(prev_token), prev_context], -1), h)
    query = reader.query(prev_token, prev_context, h)                         # (B, A)
    scores = (LAB8.additive_scores(query, reader.keys_at(memory, prev_weights), reader.v)
              + reader.location_prior(prev_weights))                          # (B, N)
    weights = LAB8.masked_attention_weights(scores, memory.mask)               # (B, N)
    context = LAB8.attention_context(weights, memory.states)                   # (B, D)
    return reader.readout(context, prev_token), (weights, context, h), weights


def step_for(config):
    return step_with_decoder_state if config.decoder_state else None


def mean(xs):
    return sum(xs) / len(xs)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--count", type=int, default=100)
    args = ap.parse_args()
    rows = ["| variant | train s | exact 1-8 | CER 1-8 | exact 9-16 | CER 9-16 |", "|---|---|---|---|---|---|"]
    for name, (reader_change, train_change) in VARIANTS.items():
        config = dataclasses.replace(BASE_READER, **reader_change)
        train = dataclasses.replace(BASE_TRAIN, **train_change)
        reader, log = train_reader(config, train, seed=args.seed, progress=False, step=step_for(config) or reader_step)
        table = evaluate_reader(reader, range(1, 17), count=args.count, seed=2024, step=step_for(config))
        within = [table[n] for n in range(1, 9)]
        beyond = [table[n] for n in range(9, 17)]
        rows.append(f"| {name} | {log.seconds:.0f} | {mean([t['exact'] for t in within]):.3f} | "
                    f"{mean([t['cer'] for t in within]):.4f} | {mean([t['exact'] for t in beyond]):.3f} | "
                    f"{mean([t['cer'] for t in beyond]):.4f} |")
        print(rows[-1], flush=True)
    text = "\n".join(["# Lab 8: variants of the attention reader", "",
                      f"Written by `benchmarks/lab8_variants.py` (seed {args.seed}, {args.count} test "
                      "strips per length, evaluation seed 2024). One seed per row.", "", *rows, ""])
    (HERE / "results").mkdir(exist_ok=True)
    (HERE / "results" / "lab8_variants.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
