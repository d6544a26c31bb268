"""Measuring what a computation costs: PyTorch's FLOP count and the best of a few wall-clock runs."""
from __future__ import annotations

import time

from torch.utils.flop_counter import FlopCounterMode


def flops_and_seconds(fn, *args, repeats: int = 1, **kwargs) -> tuple[int, float]:
    """(FLOPs counted by ``FlopCounterMode`` for one call, best wall-clock seconds of ``repeats``)."""
    with FlopCounterMode(display=False) as counter:
        fn(*args, **kwargs)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn(*args, **kwargs)
        times.append(time.perf_counter() - start)
    return counter.get_total_flops(), min(times)
