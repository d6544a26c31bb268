"""Train a digit-string reader, save it, and evaluate any saved reader on fresh strips.

    python -m benchmarks.reader_cli train --reader attention --seed 0 --out runs/att-0.pt
    python -m benchmarks.reader_cli evaluate runs/att-0.pt --lengths 1-16 --count 200 --seed 99

``train`` uses the Lab 8 configuration of the named reader (``attention`` or ``fixed-context``),
trained as the lab trains it (``LAB_TRAINING``), optionally changed with ``--set key=value``
(reader sizes), ``--steps`` and ``--noise``. ``evaluate`` draws new
strips from the test image pool with the seed you give and prints exact accuracy and CER by length
(``--json`` for machine-readable output). Training and reading use the lab's reference solution
(:mod:`lab8_reference`), so this tool is the instructor's: it needs the repository.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import sys

import torch

from attention_course.tasks.readers import (LAB_READERS, LAB_TRAINING, format_results, load_reader,
                                            save_reader, train_reader)
from benchmarks.lab8_reference import evaluate_reader, reader_step


def parse_lengths(text: str) -> list[int]:
    """'1-8' -> [1..8]; '3,5,9' -> [3, 5, 9]; '1-4,12' -> [1, 2, 3, 4, 12]."""
    out = []
    try:
        for part in text.split(","):
            lo, _, hi = part.partition("-")
            out += list(range(int(lo), int(hi or lo) + 1))
    except ValueError:
        raise argparse.ArgumentTypeError(f"lengths look like '1-16' or '3,5,9', got {text!r}")
    if not out or min(out) < 1:
        raise argparse.ArgumentTypeError(f"lengths must be positive, got {text!r}")
    return out


def parse_setting(text: str) -> tuple[str, object]:
    key, sep, value = text.partition("=")
    if not sep:
        raise argparse.ArgumentTypeError(f"--set takes key=value, got {text!r}")
    try:
        return key, json.loads(value)
    except json.JSONDecodeError:
        return key, value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="reader_cli.py", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    tr = sub.add_parser("train", help="train a reader and save it")
    tr.add_argument("--reader", choices=sorted(LAB_READERS), default="attention")
    tr.add_argument("--seed", type=int, default=0)
    tr.add_argument("--steps", type=int, default=None, help="default: the lab's, per reader")
    tr.add_argument("--noise", type=float, default=None, help="default: the lab's")
    tr.add_argument("--set", type=parse_setting, action="append", default=[],
                    metavar="KEY=VALUE", help="change a reader size, e.g. --set hidden=32")
    tr.add_argument("--device", default=None, help="cpu or cuda (default: cuda when available)")
    tr.add_argument("--out", required=True)
    ev = sub.add_parser("evaluate", help="evaluate a saved reader on fresh test-pool strips")
    ev.add_argument("checkpoint")
    ev.add_argument("--lengths", type=parse_lengths, default=parse_lengths("1-16"))
    ev.add_argument("--count", type=int, default=200)
    ev.add_argument("--seed", type=int, default=2024)
    ev.add_argument("--device", default=None)
    ev.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)

    if args.command == "train":
        base = LAB_READERS[args.reader]
        fields = {f.name for f in dataclasses.fields(base)}
        unknown = [k for k, _ in args.set if k not in fields]
        if unknown:
            parser.error(f"unknown reader setting(s) {unknown}; known: {sorted(fields)}")
        config = dataclasses.replace(base, **dict(args.set))
        changes = {k: v for k, v in (("steps", args.steps), ("noise", args.noise)) if v is not None}
        train = dataclasses.replace(LAB_TRAINING[args.reader], **changes)
        reader, log = train_reader(config, train, seed=args.seed, device=args.device, step=reader_step)
        path = save_reader(reader, args.out, log, train)
        print(f"trained {args.reader} reader (seed {args.seed}) in {log.seconds:.0f} s "
              f"on {log.device}; saved to {path}")
        return 0

    reader = load_reader(args.checkpoint, device=args.device)
    with torch.no_grad():
        table = evaluate_reader(reader, args.lengths, args.count, args.seed)
    if args.json:
        json.dump({str(k): v for k, v in table.items()}, sys.stdout, indent=1)
        print()
    else:
        print(format_results({reader.config.kind: table}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
