"""Lab 8's reference solution, for the benchmarks and the reader command line (instructor side).

The readers are trained and measured exactly as the lab does it, with the lab's own reference
answers (the solution cells of ``source/lab8/lab8.ipynb``): its ``reader_step`` trains the attention
reader, its ``results_by_length`` reads and scores them. None of this ships with the package.
"""
from __future__ import annotations

import functools

import torch

from attention_course.core.seq2seq import decode_greedily
from attention_course.data import decode_tokens
from attention_course_instructor.grading.checks import reference_namespace
from attention_course.tasks.readers import eval_strips



@functools.cache
def lab8():
    """The lab's reference answers: the solution cells of the source notebook, run on first use."""
    return reference_namespace("lab8")


def reader_step(*args, **kwargs):
    """The lab's reference ``reader_step`` (:func:`lab8`)."""
    return lab8().reader_step(*args, **kwargs)


@torch.no_grad()
def read_greedily(reader, batch, max_len: int, step=None) -> tuple[list[str], torch.Tensor]:
    """The readings of a strip batch, greedy, and the weights of every step (B, T, N); with the
    lab's reference ``reader_step`` unless another ``step`` is given."""
    device = next(reader.parameters()).device
    batch = batch.to(device)
    memory = reader.encode(batch.columns, batch.mask)
    tokens, weights = decode_greedily(reader, memory, reader.start(memory), len(batch), max_len,
                                      reader.tokens, step=step or reader_step, device=device)
    return [decode_tokens(row) for row in tokens.cpu()], weights


def evaluate_reader(reader, lengths, count: int = 200, seed: int = 2024, step=None) -> dict:
    """``{length: {"exact", "cer", "n"}}`` on the evaluation strips, read with greedy decoding:
    the lab's ``results_by_length``, or the course's greedy loop with another ``step``."""
    if step is None:
        return lab8().results_by_length(reader, list(lengths), count, seed)
    table = {}
    for length in lengths:
        batch = eval_strips(length, count, seed)
        readings, _ = read_greedily(reader, batch, length + 8, step)
        table[length] = {"exact": lab8().exact_accuracy(readings, batch.texts),
                         "cer": lab8().character_error_rate(readings, batch.texts), "n": count}
    return table
