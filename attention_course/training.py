"""Train, save, load and evaluate digit-string readers.

Public API (also on the command line: ``python -m attention_course.reader_cli --help``)::

    reader, log = train_reader(ReaderConfig(kind="attention"), TrainConfig(steps=1500), seed=0)
    save_reader(reader, "runs/attention-0.pt", log)
    reader = load_reader("runs/attention-0.pt")
    table = evaluate_reader(reader, lengths=range(1, 17), count=200, seed=2024)

Training draws fresh strips from the *train* image pool at every step; evaluation draws strips from
the *test* pool (images never seen in training) with the seed you give, so anyone can re-check a
saved reader on strips nobody has seen.
"""
from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch
from torch import nn
from tqdm.auto import tqdm

from attention_course import pick_device
from attention_course.data.strips import PAD, StripStyle, decode_tokens, make_strips
from attention_course.metrics import character_error_rate, exact_accuracy
from attention_course.models.readers import ReaderConfig, build_reader

TRAIN_LENGTHS = tuple(range(1, 9))
EVAL_LENGTHS = tuple(range(1, 17))

# The two readers of Lab 8 and the benchmark: same encoder, different decoders.
ENCODER = dict(embed=64, embed_kernel=5, embed_layers=2, hidden=64, dropout=0.2)
LAB_READERS = {
    "fixed-context": ReaderConfig(kind="fixed", **ENCODER),
    "attention": ReaderConfig(kind="attention", **ENCODER),
}


@dataclass(frozen=True)
class TrainConfig:
    steps: int = 1500
    batch: int = 64
    lr: float = 3e-3
    min_lengths: int = 2            # the curriculum starts with strips of up to this many digits
    curriculum: float = 0.3         # ... and reaches max(lengths) after this fraction of the steps
    lengths: tuple = TRAIN_LENGTHS
    grad_clip: float = 1.0
    noise: float = 0.1              # std of Gaussian pixel noise added to training strips
    split: str = "train"            # image pool(s) the training strips are drawn from
    style: StripStyle = field(default_factory=StripStyle)


@dataclass
class TrainLog:
    seed: int
    seconds: float = 0.0
    losses: list = field(default_factory=list)
    device: str = "cpu"


def seed_everything(seed: int) -> None:
    torch.manual_seed(seed)
    if torch.cuda.is_available():
        torch.cuda.manual_seed_all(seed)


def curriculum_length(step: int, cfg: TrainConfig, rng: torch.Generator) -> int:
    """Length of the batch at ``step``: uniform over the lengths the curriculum allows so far."""
    ramp = min(1.0, step / max(1, cfg.curriculum * cfg.steps))
    top = round(cfg.min_lengths + ramp * (max(cfg.lengths) - cfg.min_lengths))
    allowed = [n for n in cfg.lengths if n <= top] or [min(cfg.lengths)]
    return allowed[int(torch.randint(len(allowed), (1,), generator=rng))]


def augment(columns: torch.Tensor, train: TrainConfig, rng: torch.Generator) -> torch.Tensor:
    """Training strips with Gaussian pixel noise, clipped to [0, 1]; unchanged when noise is 0."""
    if train.noise <= 0:
        return columns
    noisy = columns.cpu() + train.noise * torch.randn(columns.shape, generator=rng)
    return noisy.clamp(0, 1)


def sequence_loss(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Cross-entropy over (B, T, C) logits and (B, T) targets, ignoring PAD positions."""
    return nn.functional.cross_entropy(logits.flatten(0, 1), targets.flatten(), ignore_index=PAD)


def train_reader(config: ReaderConfig, train: TrainConfig = TrainConfig(), seed: int = 0,
                 device=None, progress: bool = True):
    """Train a reader from scratch; returns ``(reader, TrainLog)``. Deterministic on the CPU."""
    device = pick_device(device)
    seed_everything(seed)
    reader = build_reader(config).to(device)
    opt = torch.optim.Adam(reader.parameters(), lr=train.lr)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: 0.5 * (1 + math.cos(math.pi * min(s, train.steps) / train.steps)))
    rng = torch.Generator().manual_seed(seed)
    log = TrainLog(seed=seed, device=str(device))
    start = time.perf_counter()
    bar = tqdm(range(train.steps), desc=f"{config.kind} reader", disable=not progress, mininterval=1)
    for step in bar:
        batch = make_strips(curriculum_length(step, train, rng), train.batch,
                            seed=seed * 1_000_003 + step, split=train.split, style=train.style)
        batch = batch.to(device)
        columns = augment(batch.columns, train, rng).to(device)  # (B, N, 8)
        logits = reader(columns, batch.mask, batch.targets)            # (B, T, C)
        loss = sequence_loss(logits, batch.targets)
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(reader.parameters(), train.grad_clip)
        opt.step()
        sched.step()
        log.losses.append(loss.item())
        if step % 50 == 0:
            bar.set_postfix(loss=f"{loss.item():.3f}")
    log.seconds = time.perf_counter() - start
    reader.eval()
    return reader, log


def eval_strips(length: int, count: int, seed: int, split: str = "test",
                style: StripStyle = StripStyle()):
    """The evaluation strips of one length: ``count`` strips from the test pool, fixed by ``seed``."""
    return make_strips(length, count, seed=seed * 7919 + length * 101, split=split, style=style)


def read_strips(reader, batch, max_extra: int = 8):
    """Greedy readings of a batch: (list of strings, attention weights (B, T, N)).

    Decoding stops after ``len(longest target) + max_extra`` characters at most.
    """
    device = next(reader.parameters()).device
    batch = batch.to(device)
    reader.eval()
    max_len = max(len(t) for t in batch.texts) + max_extra
    tokens, weights = reader.greedy(batch.columns, batch.mask, max_len)
    return [decode_tokens(row) for row in tokens.cpu()], weights.cpu()


def evaluate_reader(reader, lengths=EVAL_LENGTHS, count: int = 200, seed: int = 2024,
                    split: str = "test", style: StripStyle = StripStyle()):
    """Exact-string accuracy and CER per length on fresh strips: ``{L: {"exact", "cer", "n"}}``."""
    table = {}
    for length in lengths:
        batch = eval_strips(length, count, seed, split, style)
        preds = read_strips(reader, batch)[0]
        table[length] = {"exact": exact_accuracy(preds, batch.texts),
                         "cer": character_error_rate(preds, batch.texts), "n": count}
    return table


def format_results(tables: dict, floor: float | None = None) -> str:
    """A markdown table: one row per length, exact and CER columns for each named reader."""
    names = list(tables)
    lengths = sorted(next(iter(tables.values())))
    head = "| L | " + " | ".join(f"{n} exact | {n} CER" for n in names)
    head += " | floor |" if floor is not None else " |"
    rule = "|---" * (1 + 2 * len(names) + (floor is not None)) + "|"
    rows = []
    for length in lengths:
        cells = [f"{tables[n][length]['exact']:.3f} | {tables[n][length]['cer']:.4f}" for n in names]
        tail = f" | {floor:.4f} |" if floor is not None else " |"
        rows.append(f"| {length} | " + " | ".join(cells) + tail)
    return "\n".join([head, rule, *rows])


def save_reader(reader, path, log: TrainLog | None = None, train: TrainConfig | None = None) -> Path:
    """Save a reader's config, weights and training record (a CPU checkpoint)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().cpu() for k, v in reader.state_dict().items()}
    torch.save({"config": reader.config.to_dict(), "state_dict": state,
                "log": asdict(log) if log else None,
                "train": asdict(train) if train else None}, path)
    return path


def load_reader(path, device=None):
    """Load a saved reader onto ``device`` (CPU when no GPU is present, whatever it was saved from)."""
    checkpoint = torch.load(path, map_location="cpu", weights_only=False)
    for key in ("config", "state_dict"):
        if key not in checkpoint:
            raise ValueError(f"{path} is not a reader checkpoint: it has no {key!r} entry")
    reader = build_reader(checkpoint["config"])
    reader.load_state_dict(checkpoint["state_dict"])
    return reader.to(pick_device(device)).eval()
