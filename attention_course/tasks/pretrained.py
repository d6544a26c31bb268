"""The small trained models the chapter pages show, as committed checkpoints with their recipes.

Each recipe names a model, how to train it (seed and sizes) and how to measure it. ``train`` writes
``checkpoints/<name>.pt`` (the weights, each well under 2 MB) and ``checkpoints/<name>.json`` (the
recipe, the metrics of the full run, and the metrics of a *reduced* run -- fewer steps, smaller
evaluation -- that the test suite repeats to check the recipe still reproduces its numbers).
Pages call :func:`load_or_train`: the checkpoint if it is there, else a fresh full training run.

    python -m attention_course.tasks.pretrained list
    python -m attention_course.tasks.pretrained train copy-w16      # or: train all
"""
from __future__ import annotations

import argparse
import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable

import torch

from attention_course.core.captioner import Captioner, CaptionerConfig
from attention_course.core.char_decoder import CharDecoder, DecoderConfig
from attention_course.core.copy_model import CopyConfig, CopyModel
from attention_course.paths import CHECKPOINTS
from attention_course.tasks.captioner import CaptionTraining, caption_accuracy, train_captioner
from attention_course.tasks.copy_model import (SHOWCASE, CopyTraining, alignment, copy_strings,
                                            diagonal_counts, evaluate_copying, train_copy_model)
from attention_course.tasks.char_decoder import DecoderTraining, generate, train_char_decoder

CHECKPOINT_DIR = CHECKPOINTS
REDUCED_STEPS = 120
MAX_BYTES = 2 * 1024 * 1024


@dataclass(frozen=True)
class Recipe:
    name: str
    description: str
    config: object                       # the model's config dataclass
    training: object                     # the training dataclass (carries the seed)
    build: Callable                      # config -> untrained model
    train: Callable                      # (config, training) -> (model, record)
    measure: Callable                    # (model, reduced: bool) -> metrics dict


def _measure_copy(model: CopyModel, reduced: bool) -> dict:
    table = evaluate_copying(model, count=40 if reduced else 300)
    metrics = {f"exact_len{n}": round(v["exact"], 4) for n, v in table.items()}
    metrics |= {f"cer_len{n}": round(v["cer"], 4) for n, v in table.items()}
    copy = copy_strings(model, [SHOWCASE])[0]
    metrics["showcase_exact"] = int(copy == SHOWCASE)
    if model.config.attention:
        metrics |= {f"showcase_{k}": v for k, v in diagonal_counts(alignment(model)[1]).items()}
    return metrics


def _measure_captioner(model: Captioner, reduced: bool) -> dict:
    acc = caption_accuracy(model, count=60 if reduced else 500)
    return {f"caption_{k}": round(v, 4) for k, v in acc.items()}


def _measure_decoder(model, reduced: bool) -> dict:
    import torch

    from attention_course.data.text import encode, load_text

    text = torch.tensor(encode(load_text()[-400:]))
    n = model.config.context
    windows = torch.stack([text[i:i + n + 1] for i in range(0, len(text) - n - 1, 16)])
    with torch.no_grad():
        logits = model(windows[:, :-1])
        loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1), windows[:, 1:].flatten())
    return {"last_400_chars_loss": round(loss.item(), 4),
            "continuation": generate(model, "the ferry ", 30)}


def _copy_recipe(width: int, attention: bool = True) -> Recipe:
    kind = "attention" if attention else "fixed-context"
    return Recipe(name=f"copy-{'' if attention else 'fixed-'}w{width}",
                  description=f"{kind} copy model, state width {width} (Sections 8.1-8.2)",
                  config=CopyConfig(width=width, attention=attention), training=CopyTraining(),
                  build=CopyModel, train=train_copy_model, measure=_measure_copy)


RECIPES = {r.name: r for r in [
    _copy_recipe(16), _copy_recipe(8), _copy_recipe(32), _copy_recipe(16, attention=False),
    Recipe(name="char-decoder", description="character-level decoder-only transformer (Section 12.4)",
           config=DecoderConfig(), training=DecoderTraining(), build=CharDecoder,
           train=train_char_decoder, measure=_measure_decoder),
    Recipe(name="captioner", description="shapes captioner with attention (Section 8.3)",
           config=CaptionerConfig(), training=CaptionTraining(), build=Captioner,
           train=train_captioner, measure=_measure_captioner),
]}


def recipe(name: str) -> Recipe:
    if name not in RECIPES:
        raise KeyError(f"no recipe {name!r}; known: {sorted(RECIPES)}")
    return RECIPES[name]


def run_recipe(name: str, reduced: bool = False):
    """Train by the recipe (with :data:`REDUCED_STEPS` steps if ``reduced``); (model, metrics)."""
    r = recipe(name)
    training = replace(r.training, steps=REDUCED_STEPS) if reduced else r.training
    model, record = r.train(r.config, training)
    record = {k: v for k, v in record.items() if k != "losses"}
    return model, {**record, **r.measure(model, reduced)}


def paths(name: str) -> tuple[Path, Path]:
    return CHECKPOINT_DIR / f"{name}.pt", CHECKPOINT_DIR / f"{name}.json"


def record(name: str) -> dict:
    """The committed JSON record of a checkpoint."""
    return json.loads(paths(name)[1].read_text())


def train_and_save(name: str) -> dict:
    r = recipe(name)
    model, full = run_recipe(name)
    _, reduced = run_recipe(name, reduced=True)
    weights, meta = paths(name)
    CHECKPOINT_DIR.mkdir(exist_ok=True)
    torch.save(model.state_dict(), weights)
    if weights.stat().st_size > MAX_BYTES:
        raise RuntimeError(f"{weights} is {weights.stat().st_size} bytes, over the 2 MB budget")
    info = {"name": name, "description": r.description, "config": r.config.to_dict(),
            "training": r.training.to_dict(), "reduced_steps": REDUCED_STEPS,
            "torch": torch.__version__, "metrics": full, "reduced_metrics": reduced,
            "command": f"python -m attention_course.tasks.pretrained train {name}"}
    meta.write_text(json.dumps(info, indent=2) + "\n")
    return info


def load_or_train(name: str):
    """The checkpointed model (eval mode, CPU) if committed, else one trained now by the recipe."""
    r = recipe(name)
    weights, _ = paths(name)
    if not weights.exists():
        model, _ = r.train(r.config, r.training)
        return model.eval()
    model = r.build(r.config)
    model.load_state_dict(torch.load(weights, map_location="cpu", weights_only=True))
    return model.eval()


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list")
    train = sub.add_parser("train")
    train.add_argument("names", nargs="+", help="recipe names, or 'all'")
    args = parser.parse_args(argv)
    if args.command == "list":
        for r in RECIPES.values():
            print(f"{r.name:16s} {r.description}")
        return
    for name in (list(RECIPES) if args.names == ["all"] else args.names):
        info = train_and_save(name)
        print(json.dumps({"name": name, **info["metrics"]}))


if __name__ == "__main__":
    main()
