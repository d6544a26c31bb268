"""What one transformer block costs: its operations, FLOPs and memory.

Used by Section 8.8 (``book/chapter8/computation-memory.md``: FLOPs by term, the training state,
saved activations, peak memory), Section 8.7 (``book/chapter8/transformer-block.md``: the block's
trace, also drawn by :class:`~attention_course.book.figures.BlockTraceFigure`) and the Chapter 8
exercises (``book/chapter8/exercises.md``). Run as a program it measures one peak for
:func:`peak_memory_mb`::

    python -m attention_course.notes.block_cost naive 2048 4 16
"""
from __future__ import annotations

import os
import subprocess
import sys

import torch
from torch import nn

from attention_course.core.transformer import attention


def block_flops(n: int, d: int, r: int = 4) -> dict:
    """Forward multiply-adds x 2 of one block per term (one sequence of n tokens)."""
    return {"Q, K, V projections": 2 * n * d * 3 * d, "Q K^T": 2 * n * n * d, "A V": 2 * n * n * d,
            "output projection": 2 * n * d * d, "MLP": 2 * n * d * r * d * 2}


def block_trace(n: int, d: int, h: int, r: int = 4) -> list[dict]:
    """Every operation of one pre-norm block, in order, for one sequence of ``n`` tokens.

    Each entry: ``name``, ``shape`` (of its result; per-head results are (h, ...)), ``mixes``
    (True where the result for one token depends on other tokens' content), ``residual`` (a
    residual addition) and ``flops`` (2 x multiply-adds of its matrix products; 0 for the
    element-wise steps, which are O(n d) and left out, as in :func:`block_flops`).
    """
    if d % h:
        raise ValueError(f"d must be divisible by h (d_k = d / h), got d={d}, h={h}")
    dk = d // h
    ops = [("X (input)", (n, d), False, False, 0),
           ("LN1(X)", (n, d), False, False, 0),
           ("Q, K, V = LN1(X) W_Q, W_K, W_V", (h, n, dk), False, False, 2 * n * d * 3 * d),
           ("S = Q K^T / sqrt(d_k)", (h, n, n), True, False, 2 * n * n * d),
           ("A = softmax over each row of S", (h, n, n), True, False, 0),
           ("heads = A V", (h, n, dk), True, False, 2 * n * n * d),
           ("MHA = concat(heads) W_O", (n, d), False, False, 2 * n * d * d),
           ("U = X + MHA", (n, d), False, True, 0),
           ("LN2(U)", (n, d), False, False, 0),
           ("GELU(LN2(U) W_1)", (n, r * d), False, False, 2 * n * d * r * d),
           ("MLP = GELU(...) W_2", (n, d), False, False, 2 * n * r * d * d),
           ("Y = U + MLP", (n, d), False, True, 0)]
    return [{"name": a, "shape": b, "mixes": c, "residual": e, "flops": f} for a, b, c, e, f in ops]


def training_state_bytes(model: nn.Module, optimizer_states_per_parameter: int = 2) -> dict:
    """Parameters, gradients and optimiser state in bytes (Adam keeps 2 numbers per parameter)."""
    params = sum(p.numel() * p.element_size() for p in model.parameters())
    return {"parameters": params, "gradients": params,
            "optimiser state": optimizer_states_per_parameter * params}


def naive_attention(Q, K, V):
    """:func:`attention`'s output alone; it materialises the (N_q, N_s) weights (for memory
    comparisons with ``scaled_dot_product_attention``)."""
    return attention(Q, K, V)[0]


def saved_activation_bytes(fn, *args) -> int:
    """Bytes of the tensors autograd saves for the backward pass while ``fn(*args)`` runs."""
    total = 0

    def pack(t):
        nonlocal total
        total += t.numel() * t.element_size()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        fn(*args)
    return total


def peak_memory_mb(which: str, n: int, heads: int = 4, width: int = 16) -> float:
    """Growth of the peak resident memory (MB) of a fresh process during one forward and backward
    pass of ``"naive"`` attention or PyTorch's ``"sdpa"``, on the CPU, for (1, heads, n, width).

    Linux only: the process is this module run as a program (:func:`_measure_peak_kb`)."""
    if which not in ("naive", "sdpa"):
        raise ValueError(f"which must be 'naive' or 'sdpa', got {which!r}")
    out = subprocess.run([sys.executable, "-m", __name__, which, str(n), str(heads), str(width)],
                         check=True, capture_output=True, text=True,
                         env={**os.environ, "OMP_NUM_THREADS": "1"})
    return int(out.stdout.split()[-1]) / 1024                  # kB -> MB


def _status_kb(field: str) -> int:
    """A field of /proc/self/status, in kB (VmRSS: resident now; VmHWM: the peak)."""
    for line in open("/proc/self/status"):
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise KeyError(field)


def _measure_peak_kb(which: str, n: int, heads: int, width: int) -> int:
    """In this process: how far one pass raises the peak resident memory, in kB. The peak (VmHWM)
    is reset through /proc/self/clear_refs just before the pass, after a small warm-up pass."""
    torch.manual_seed(0)
    Q, K, V = (torch.randn(1, heads, n, width, requires_grad=True) for _ in range(3))
    fn = naive_attention if which == "naive" else nn.functional.scaled_dot_product_attention
    fn(Q[:, :, :8], K[:, :, :8], V[:, :, :8]).sum().backward()     # warm up kernels and allocator
    with open("/proc/self/clear_refs", "w") as f:                   # reset the peak to the current RSS
        f.write("5")
    before = _status_kb("VmRSS")
    fn(Q, K, V).sum().backward()
    return _status_kb("VmHWM") - before


if __name__ == "__main__":
    print(_measure_peak_kb(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])))
