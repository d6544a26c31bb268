"""Lab 8's reference solution, for the benchmarks and the reader command line (instructor side).

The readers are trained and measured exactly as the lab does it, with the lab's own reference
answers (the solution cells of ``source/lab8/lab8.ipynb``): its ``reader_step`` trains the attention
reader, its ``results_by_length`` reads and scores them. None of this ships with the package.
"""
from __future__ import annotations

from attention_course.core.seq2seq import decode_greedily
from attention_course.data import decode_tokens
from attention_course.grading.checks import reference_namespace
from attention_course.tasks.readers import eval_strips

LAB8 = reference_namespace("lab8")
reader_step = LAB8.reader_step


def evaluate_reader(reader, lengths, count: int = 200, seed: int = 2024, step=None) -> dict:
    """``{length: {"exact", "cer", "n"}}`` on the evaluation strips, read with greedy decoding:
    the lab's ``results_by_length``, or the course's greedy loop with another ``step``."""
    if step is None:
        return LAB8.results_by_length(reader, list(lengths), count, seed)
    device = next(reader.parameters()).device
    table = {}
    for length in lengths:
        batch = eval_strips(length, count, seed).to(device)
        memory = reader.encode(batch.columns, batch.mask)
        tokens, _ = decode_greedily(reader, memory, reader.start(memory), count, length + 8,
                                    reader.tokens, step=step, device=device)
        readings = [decode_tokens(row) for row in tokens.cpu()]
        table[length] = {"exact": LAB8.exact_accuracy(readings, batch.texts),
                         "cer": LAB8.character_error_rate(readings, batch.texts), "n": count}
    return table
