"""What was tried for Lab 12's model: variants of its size, vocabulary, regularisation and step
budget, each trained as the notebook trains (the lab's reference functions, the course's one
training loop, one seed), scored in bits per character on the validation and test splits.

    python -m benchmarks.lab12_variants        # about 25 minutes on 2 cores

Seconds are wall-clock training time on this machine with two torch threads. Writes
``benchmarks/results/lab12_variants.md``.
"""
from __future__ import annotations

import json
import time
from dataclasses import replace
from pathlib import Path

import torch

from attention_course.data.python_docs import PYTHON_VERSION, split_topics
from attention_course_instructor.grading.checks import reference_namespace
from attention_course.seeds import generator
from attention_course.tasks.fitting import fit
from benchmarks.report import machine, markdown_table, write

HERE = Path(__file__).resolve().parent
SEED = 0
# name -> (what changes from the lab's settings, as LMConfig fields and training settings)
VARIANTS = {
    "the lab's settings": {},
    "no dropout": {"dropout": 0.0},
    "dropout 0.2": {"dropout": 0.2},
    "learning rate 3e-3": {"lr": 3e-3},
    "256 merges": {"merges": 256},
    "64 merges": {"merges": 64},
    "bytes only (no merges)": {"merges": 0},
    "context 64, batch 64, 900 steps": {"context": 64, "batch": 64, "steps": 900},
}


def train_variant(ref, splits, change: dict) -> dict:
    settings = {"merges": ref.NUM_MERGES, "steps": ref.TRAIN_STEPS, "batch": ref.BATCH,
                "lr": ref.LEARNING_RATE, "weight_decay": 0.01} | change
    fields = {k: v for k, v in change.items() if k in ref.LMConfig.__dataclass_fields__}
    config = replace(ref.LMConfig(), vocab=256 + settings["merges"], **fields)
    merges = ref.learn_bpe(splits["train"].text, settings["merges"])
    ids = {name: torch.tensor(ref.bpe_encode(part.text, merges)) for name, part in splits.items()}
    torch.manual_seed(SEED)
    model = ref.TinyLM(config)
    windows = generator(SEED, "text-windows")

    def next_batch(step):
        starts = torch.randint(0, len(ids["train"]) - config.context, (settings["batch"],), generator=windows)
        return torch.stack([ids["train"][s:s + config.context] for s in starts])

    def adamw(params, lr):
        return torch.optim.AdamW(params, lr=lr, weight_decay=settings["weight_decay"])

    began = time.perf_counter()
    fit(model, next_batch, lambda m, batch: ref.next_token_loss(m(batch), batch), settings["steps"],
        settings["lr"], optimizer=adamw, schedule="one-cycle")
    seconds = time.perf_counter() - began
    return {"seconds": seconds, "parameters": sum(p.numel() for p in model.parameters()),
            **{name: ref.bits_per_character(model, ids[name], len(splits[name])) for name in ("val", "test")}}


def main():
    torch.set_num_threads(2)
    ref, splits = reference_namespace("lab12"), split_topics()
    rows = {}
    for name, change in VARIANTS.items():
        rows[name] = train_variant(ref, splits, change) | {"change": change}
        print(name, json.dumps(rows[name]), flush=True)
    text = "\n".join([
        "# Lab 12: what was tried for the model", "",
        f"Written by `python -m benchmarks.lab12_variants` on {machine()}, Python {PYTHON_VERSION}; one seed each, trained as the notebook "
        "trains (the lab's settings: "
        f"{ref.NUM_MERGES} merges, width {ref.LMConfig().width}, {ref.LMConfig().layers} blocks of "
        f"{ref.LMConfig().heads} heads, context {ref.LMConfig().context}, dropout {ref.LMConfig().dropout}, "
        f"batch {ref.BATCH}, {ref.TRAIN_STEPS} steps, AdamW at {ref.LEARNING_RATE} one-cycle). "
        "Training seconds are wall-clock on a machine that was not always idle; the lab's own "
        "time, measured alone, is in `lab12.md`.", "",
        markdown_table(["variant", "parameters", "training s", "validation bpc", "test bpc"],
                       [[name, f"{r['parameters']:,d}", f"{r['seconds']:.0f}", f"{r['val']:.3f}",
                         f"{r['test']:.3f}"] for name, r in rows.items()]), ""])
    write("lab12_variants.md", text)


if __name__ == "__main__":
    main()
