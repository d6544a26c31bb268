"""Lab 8: what each choice of the two readers' designs and training is worth (one seed each).

    python -m benchmarks.lab8_variants [--seed 0] [--count 100] [--jobs 2]

Each variant changes one thing (two, in a few rows that also change the number of steps) relative
to a Lab 8 reader (``LAB_READERS``) trained as the lab trains it (``LAB_TRAINING``) and reports its
training time, its error on isolated test digits (each read as a strip of one digit, as in
``lab8_readers.md``), exact accuracy and CER averaged over lengths 1-8 (trained) and CER over 9-16
(never seen), and its worst CER over lengths 1-8 under the spacings of the target (gaps of 8, a
lead of 25, no blank tail), every length on the covering test strips of ``lab8_readers.py`` (the
same digits at every length). One seed each, so a difference smaller than the spread between the
seeds of the lab's own readers (``lab8_readers.md`` has three; the table's header quotes their
range) may be no more than a seed's luck. Later rows take back, one at a time, what the attention
reader's recipe does for its digit recognition (image convolutions, the validation images, a leaky
ReLU, batches of 32, the learning rate, short strips drawn more often), and try three more (a
warm-up, longer training, averaged weights); the last three train with as many steps as fit the
two-minute budget at the pace ``lab8_readers.md`` measured.
``--jobs`` variants run at once, each on one torch thread, so training times are comparable
within the table, roughly (the machine's pace drifts). Writes ``results/lab8_variants.md`` after
every row; its header quotes the floor and the seeds' spread of the committed
``results/lab8_readers.json``, and the last rows' steps follow its pace, so run
``lab8_readers.py`` first. Stopping the script stops its workers too.
"""
from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import multiprocessing
import os
import threading
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

import torch

from attention_course.paths import RESULTS as BOOK_RESULTS
from attention_course.tasks.readers import LAB_READERS, LAB_TRAINING, train_reader
from benchmarks.lab8_readers import (SPACINGS, digits_per_length, isolated_reading_error, readings_by_length,
                          scores, steps_within_budget)
from benchmarks.lab8_reference import lab8, reader_step
from benchmarks.reader_variants import VariantConfig, step_with_decoder_state
from attention_course.tables import markdown_row, markdown_table

HERE = Path(__file__).resolve().parent
EVAL_SEED = 2024
TARGET_SPACINGS = ("gaps of 8", "lead 25", "no blank tail")
# name: (reader, reader changes, training changes)
ATTENTION_STEPS = LAB_TRAINING["attention"].steps
ATTENTION_BATCH = LAB_TRAINING["attention"].batch
SHORT_SPACED = (1, 2, 3, 4)    # spaced batches of short strips only: narrower, cheaper steps
READERS_JSON = BOOK_RESULTS / "lab8_readers.json"
OLD_LR = 3e-3      # the learning rate both readers trained with before (now 5e-3)


def budget_steps(kind: str) -> int:
    """The steps of the lab's training of ``kind`` that fit the two minutes at the pace of the
    committed lab8_readers.json (its slowest seed), as its "Within 120 s" fits them."""
    results = json.loads(READERS_JSON.read_text())
    slowest = max(run["seconds"] for key, run in results["runs"].items()
                  if key.split("/")[0] == kind)
    return steps_within_budget(slowest, results["training"][kind]["steps"])


@functools.cache
def variants() -> dict:
    """name -> (reader kind, changes to its ReaderConfig, changes to its TrainConfig), in the
    table's order. The last rows train for the steps that fit the two-minute budget at the pace
    of the committed lab8_readers.json (read on first use)."""
    budget = {kind: budget_steps(kind) for kind in LAB_TRAINING}
    return {
        "Lab 8 attention reader": ("attention", {}, {}),
        f"spaced batches of {SHORT_SPACED[0]}-{SHORT_SPACED[-1]} digits only (the lab's: every length)":
            ("attention", {}, {"spaced_lengths": SHORT_SPACED}),
        "starts having looked nowhere (first step's prior flat)":
            ("attention", {"start_at_first_column": False}, {}),
        "no spacing augmentation": ("attention", {}, {"spaced": None}),
        "no label smoothing": ("attention", {}, {"label_smoothing": 0.0}),
        "no location prior (plain location-aware attention)":
            ("attention", {"location_prior": False}, {}),
        "with a GRU decoder state (the reader can count)": ("attention", {"decoder_state": True}, {}),
        "column states that also carry the column embedding":
            ("attention", {"skip_embedding": True}, {}),
        "Lab 8 fixed-context reader": ("fixed-context", {}, {}),
        f"fixed-context, spaced batches of {SHORT_SPACED[0]}-{SHORT_SPACED[-1]} digits only":
            ("fixed-context", {}, {"spaced_lengths": SHORT_SPACED}),
        f"fixed-context, {ATTENTION_STEPS} steps (the attention reader's number)":
            ("fixed-context", {}, {"steps": ATTENTION_STEPS}),
        "fixed-context, lengths drawn uniformly": ("fixed-context", {}, {"short_bias": False}),
        "fixed-context, plain ReLU in the embedding": ("fixed-context", {"embed_slope": 0.0}, {}),
        "fixed-context, a warm-up first (one-cycle schedule)":
            ("fixed-context", {}, {"schedule": "one-cycle"}),
        f"fixed-context, learning rate {OLD_LR:g}": ("fixed-context", {}, {"lr": OLD_LR}),
        # what the attention reader's digit recognition owes to each choice of its recipe
        "attention, no image convolutions (column convolutions only)":
            ("attention", {"image_channels": 0}, {}),
        "attention, trained on the train pool only (not the validation pool too)":
            ("attention", {}, {"split": "train"}),
        "attention, plain ReLU in the embedding": ("attention", {"embed_slope": 0.0}, {}),
        "attention, a warm-up first (one-cycle schedule)": ("attention", {}, {"schedule": "one-cycle"}),
        f"attention, learning rate {OLD_LR:g}": ("attention", {}, {"lr": OLD_LR}),
        "attention, lengths drawn uniformly": ("attention", {}, {"short_bias": False}),
        f"attention, lengths drawn uniformly, {ATTENTION_STEPS * 4 // 5} steps":
            ("attention", {}, {"short_bias": False, "steps": ATTENTION_STEPS * 4 // 5}),
        f"attention, batches of {2 * ATTENTION_BATCH} strips, {ATTENTION_STEPS * 2 // 3} steps "
        "(about the same time)": ("attention", {}, {"batch": 2 * ATTENTION_BATCH,
                                                    "steps": ATTENTION_STEPS * 2 // 3}),
        f"attention, {ATTENTION_STEPS * 4 // 3} steps": ("attention", {},
                                                         {"steps": ATTENTION_STEPS * 4 // 3}),
        "attention, read with averaged weights (moving average, decay 0.995)":
            ("attention", {}, {"weight_average": 0.995}),
        # as many steps as fit the two-minute budget: the lab's readers, and the attention reader
        # whose column states carry the embedding (which reads better per step, at a dearer step)
        f"attention, {budget['attention']} steps": ("attention", {},
                                                        {"steps": budget["attention"]}),
        f"column states that also carry the column embedding, {budget['attention']} steps":
            ("attention", {"skip_embedding": True}, {"steps": budget["attention"]}),
        f"fixed-context, {budget['fixed-context']} steps":
            ("fixed-context", {}, {"steps": budget["fixed-context"]}),
    }
HEADER = ["variant", "train s", "isolated digits", "exact 1-8", "CER 1-8", "CER 9-16",
          "worst spacing CER"]


def variant_config(kind: str, changes: dict) -> VariantConfig:
    """The Lab 8 reader ``kind`` with ``changes`` to its config (the variants' switches too)."""
    return VariantConfig(**{**LAB_READERS[kind].to_dict(), **changes})


def step_for(config: VariantConfig):
    """The decoder step a variant needs, or None for the lab's step."""
    return functools.partial(step_with_decoder_state, lab=lab8()) if config.decoder_state else None


def mean(xs):
    return sum(xs) / len(xs)


def worst_spacing_cer(reader, digits: int, step) -> float:
    """The largest CER over lengths 1-8 under the target's spacings (covering strips of
    ``digits`` digits at each length)."""
    worst = 0.0
    for name in TARGET_SPACINGS:
        read = readings_by_length(reader, range(1, 9), lambda n: digits, EVAL_SEED,
                                  SPACINGS[name], step)
        worst = max(worst, scores(*(sum(part, []) for part in zip(*read.values())))["cer"])
    return worst


def measure(name: str, seed: int, count: int, digits: int) -> str:
    """Train one variant and return its table row (run in a worker process on one thread)."""
    torch.set_num_threads(1)
    kind, reader_change, train_change = variants()[name]
    config = variant_config(kind, reader_change)
    train = dataclasses.replace(LAB_TRAINING[kind], **train_change)
    step = step_for(config)
    reader, log = train_reader(config, train, seed=seed, progress=False, step=step or reader_step)
    read = readings_by_length(reader, range(1, 17), lambda n: digits_per_length(n, count, digits),
                              EVAL_SEED, step=step)
    table = {n: scores(*r) for n, r in read.items()}
    within = [table[n] for n in range(1, 9)]
    beyond = [table[n] for n in range(9, 17)]
    lone = isolated_reading_error(reader, step)["error"]
    return markdown_row([name, f"{log.seconds:.0f}", f"{lone:.4f}",
                         f"{mean([t['exact'] for t in within]):.3f}",
                         f"{mean([t['cer'] for t in within]):.4f}",
                         f"{mean([t['cer'] for t in beyond]):.4f}",
                         f"{worst_spacing_cer(reader, digits, step):.4f}"])


def seed_spread(readers: dict) -> dict:
    """The lowest and highest CER over lengths 1-8 among the seeds of each Lab 8 reader in the
    committed lab8_readers.json: ``{kind: (low, high)}``."""
    spread = {}
    for key, run in readers["runs"].items():
        kind = key.split("/")[0]
        cer = mean([run["table"][str(n)]["cer"] for n in range(1, 9)])
        low, high = spread.get(kind, (cer, cer))
        spread[kind] = (min(low, cer), max(high, cer))
    return spread


def end_with_parent(parent: int) -> None:
    """A worker's initializer: a daemon thread ends the worker once its parent is gone, so a
    stopped benchmark leaves no variant training on (and slowing whatever runs next)."""
    def watch():
        while os.getppid() == parent:
            time.sleep(1)
        os._exit(1)
    threading.Thread(target=watch, daemon=True).start()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--count", type=int, default=100,
                    help="test strips' worth of digits per length, at least the floor's digits")
    ap.add_argument("--jobs", type=int, default=2, help="variants trained at once, one thread each")
    ap.add_argument("--beside", default="", help="what else ran on the machine (for the header)")
    args = ap.parse_args()
    # the floor and the seeds' spread of the committed lab8_readers.json (run that first)
    readers = json.loads(READERS_JSON.read_text())
    args.floor, args.spread = readers["floors"], seed_spread(readers)
    rows = {}
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(args.jobs, mp_context=context, initializer=end_with_parent,
                             initargs=(os.getpid(),)) as pool:
        pending = {pool.submit(measure, name, args.seed, args.count, args.floor["n"]): name
                   for name in variants()}
        for done in as_completed(pending):
            rows[pending[done]] = done.result()
            print(rows[pending[done]], flush=True)
            write(args, rows)


def write(args, rows: dict):
    """Write the table so far, in the order of variants() (a stopped run keeps what it measured)."""
    missing = [v for v in variants() if v not in rows]
    text = "\n".join(["# Lab 8: variants of the two readers", "",
                      f"Written by `benchmarks/lab8_variants.py` (seed {args.seed}; every length "
                      "read on covering strips, as `lab8_readers.md` reads them: every test "
                      f"digit at every shift ({args.floor['n']} digits), at least {args.count} "
                      f"strips' worth, evaluation seed {EVAL_SEED}; {args.jobs} variant(s) "
                      "trained at once, each on one torch thread"
                      + (f", beside {args.beside}" if args.beside else "") + "). "
                      "Training times are comparable within this table only, and there only "
                      "roughly: this machine's pace drifts by a fifth and more within an hour. "
                      "One seed per row; each row changes what it says of the Lab 8 reader it "
                      "names, trained otherwise as the lab trains it. Between the seeds of "
                      "`lab8_readers.md`, CER 1-8 ranges over "
                      + " and ".join(f"{low:.4f}-{high:.4f} ({kind})"
                                     for kind, (low, high) in args.spread.items())
                      + "; a difference between rows smaller than the width of that range may "
                      "be no more than a seed's luck. "
                      "*Isolated digits*: the error on every test digit at every vertical shift, "
                      "read as a strip of one digit (the like-for-like floor, the "
                      f"{args.floor['kind'].upper()} of `lab8_readers.md`, errs on "
                      f"{args.floor['error']:.4f} of them). "
                      "*Worst spacing CER*: the largest CER over lengths 1-8 with gaps of 8 "
                      "columns, a lead of 25 or no blank tail.", "",
                      markdown_table(HEADER, []), *[rows[v] for v in variants() if v in rows], ""]
                     + ([f"Not measured yet: {', '.join(missing)}.", ""] if missing else []))
    (HERE / "results").mkdir(exist_ok=True)
    (HERE / "results" / "lab8_variants.md").write_text(text)


if __name__ == "__main__":
    main()
