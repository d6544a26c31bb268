"""Attention for long sequences: sparse interaction patterns and two approximations.

* :func:`pattern` -- which (query, key) pairs a scheme lets interact, as an (N, N) bool matrix.
* :func:`low_rank_attention` -- Linformer-style: project the N keys and values down to k rows.
* :func:`random_feature_attention` -- Performer-style: write exp(q.k) as the dot product of
  positive random features, so the N x N matrix is never formed and the cost is linear in N.

Shapes: N positions, d width (one head), k projected length, m random features.
"""
from __future__ import annotations

import math

import torch

PATTERNS = ("full", "causal", "local", "dilated", "global", "bigbird")


def pattern(kind: str, n: int, window: int = 2, dilation: int = 2, globals_: int = 2,
            random_links: int = 2, seed: int = 0) -> torch.Tensor:
    """(n, n) bool: True where query i may attend to key j under the named scheme.

    local: |i - j| <= window; dilated: |i - j| <= window * dilation and a multiple of dilation;
    global: local, plus the first ``globals_`` tokens attend to and are attended by all;
    bigbird: global, plus ``random_links`` random keys per query (seeded).
    """
    if kind not in PATTERNS:
        raise ValueError(f"kind must be one of {PATTERNS}, got {kind!r}")
    i, j = torch.arange(n)[:, None], torch.arange(n)[None, :]
    gap = (i - j).abs()
    if kind == "full":
        return torch.ones(n, n, dtype=torch.bool)
    if kind == "causal":
        return j <= i
    if kind == "dilated":
        return (gap <= window * dilation) & (gap % dilation == 0)
    allowed = gap <= window
    if kind in ("global", "bigbird"):
        allowed = allowed | (i < globals_) | (j < globals_)
    if kind == "bigbird":
        gen = torch.Generator().manual_seed(seed)
        picks = torch.stack([torch.randperm(n, generator=gen)[:random_links] for _ in range(n)])
        allowed[torch.arange(n)[:, None], picks] = True
    return allowed


def exact_attention(Q, K, V):
    """softmax(Q K^T / sqrt(d)) V for Q (N, d), K (N, d), V (N, d_v)."""
    return torch.softmax(Q @ K.T / math.sqrt(Q.shape[-1]), -1) @ V


def low_rank_attention(Q, K, V, k: int):
    """Attention over k summaries of the N keys and values: E K and E V, with E (k, N).

    Linformer learns E. Here E averages k equal, consecutive segments of positions (the untrained
    choice of memory-compressed attention), so the score matrix is (N, k) instead of (N, N).
    """
    n = K.shape[0]
    if not 1 <= k <= n:
        raise ValueError(f"need 1 <= k <= N = {n}, got {k}")
    segment = torch.div(torch.arange(n) * k, n, rounding_mode="floor")   # which summary each key joins
    E = torch.zeros(k, n, dtype=K.dtype)
    E[segment, torch.arange(n)] = 1.0
    E = E / E.sum(1, keepdim=True)                                        # (k, N) segment means
    return torch.softmax(Q @ (E @ K).T / math.sqrt(Q.shape[-1]), -1) @ (E @ V)


def smooth_qkv(n: int, d: int, sharpness: float = 4.0, seed: int = 0, dtype=torch.float64):
    """Queries and keys that prefer nearby positions (sinusoidal codes scaled by ``sharpness``,
    plus a little noise), and random values: a stand-in for the structured attention of a trained
    model, on which low-rank and kernel approximations can be judged."""
    from attention_course.core.transformer import sinusoidal_positions

    gen = torch.Generator().manual_seed(seed)
    P = sinusoidal_positions(n, d).to(dtype) * sharpness                 # (N, d)
    noise = lambda: 0.1 * torch.randn(n, d, generator=gen, dtype=dtype)
    return P + noise(), P + noise(), torch.randn(n, d, generator=gen, dtype=dtype)


def positive_features(X, W):
    """phi(x) = exp(W x - |x|^2 / 2) / sqrt(m): E[phi(q) . phi(k)] = exp(q . k) for W ~ N(0, I)."""
    m = W.shape[0]
    return torch.exp(X @ W.T - (X * X).sum(-1, keepdim=True) / 2) / math.sqrt(m)   # (N, m)


def random_feature_attention(Q, K, V, m: int, seed: int = 0):
    """Linear-cost attention: phi(Q) (phi(K)^T V), normalised by phi(Q) (phi(K)^T 1)."""
    d = Q.shape[-1]
    gen = torch.Generator().manual_seed(seed)
    W = torch.randn(m, d, generator=gen, dtype=Q.dtype)                  # (m, d)
    scale = d ** -0.25                                                    # q.k / sqrt(d) = (q s).(k s)
    phi_q, phi_k = positive_features(Q * scale, W), positive_features(K * scale, W)   # (N, m)
    numerator = phi_q @ (phi_k.T @ V)                                     # (N, d_v), cost N m d
    denominator = phi_q @ phi_k.sum(0)                                    # (N,)
    return numerator / denominator[:, None]


def relative_error(approx, exact) -> float:
    return float((approx - exact).norm() / exact.norm())
