"""Self-attention and the transformer block, written out for reading (Sections 8.5-8.8).

Everything here works on batches: X is (B, N, d). Masks are boolean with True meaning "may
attend"; a query row with no allowed key raises (it would otherwise give NaN or silently uniform
weights). :class:`PreNormBlock` matches ``torch.nn.TransformerEncoderLayer(norm_first=True,
activation="gelu")`` given the same weights (see ``copy_from_torch``).
"""
from __future__ import annotations

import math

import torch
from torch import nn

from attention_course.core.shapes import check_shape


def attention(Q, K, V, mask=None):
    """Scaled dot-product attention. Q (..., N_q, d_k), K (..., N_s, d_k), V (..., N_s, d_v).

    mask: bool, broadcastable to (..., N_q, N_s), True where a query may attend to a key.
    Returns (O (..., N_q, d_v), A (..., N_q, N_s)).
    """
    if Q.shape[-1] != K.shape[-1]:
        raise ValueError(f"queries and keys need the same width d_k, got {Q.shape[-1]} and {K.shape[-1]}")
    if K.shape[-2] != V.shape[-2]:
        raise ValueError(f"every key needs a value: {K.shape[-2]} keys but {V.shape[-2]} values")
    S = Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])           # (..., N_q, N_s)
    if mask is not None:
        mask = torch.broadcast_to(mask, S.shape)
        if not bool(mask.any(-1).all()):
            raise ValueError("a query row has every key masked: nothing to attend to")
        S = S.masked_fill(~mask, float("-inf"))
    A = torch.softmax(S, dim=-1)
    return A @ V, A


def causal_mask(n: int, device=None) -> torch.Tensor:
    """(n, n) bool: query i may attend to keys 0..i."""
    return torch.ones(n, n, dtype=torch.bool, device=device).tril()


def padding_mask(lengths, n: int) -> torch.Tensor:
    """(B, 1, n) bool from the true lengths of B sequences padded to n: True on real keys."""
    lengths = torch.as_tensor(lengths)
    if int(lengths.min()) < 1 or int(lengths.max()) > n:
        raise ValueError(f"lengths must be in 1..{n}, got {lengths.tolist()}")
    return (torch.arange(n) < lengths[:, None])[:, None, :]


class MultiHeadAttention(nn.Module):
    """h heads of width d/h; their outputs are concatenated and mixed by W_O.

    Weights are stored like ``nn.MultiheadAttention`` (one in_proj of shape (3d, d)) so that the
    two can share them.
    """

    def __init__(self, d: int, h: int):
        super().__init__()
        if d % h:
            raise ValueError(f"the model width d={d} must be divisible by the number of heads h={h}")
        self.d, self.h, self.d_head = d, h, d // h
        self.in_proj = nn.Linear(d, 3 * d)
        self.out_proj = nn.Linear(d, d)

    def split_heads(self, x):                                     # (B, N, d) -> (B, h, N, d/h)
        B, N, _ = x.shape
        return x.view(B, N, self.h, self.d_head).transpose(1, 2)

    def forward(self, x, source=None, mask=None):
        """x (B, N_q, d) queries; source (B, N_s, d) keys/values (default: x, self-attention).

        mask broadcastable to (B, h, N_q, N_s) (e.g. (N_q, N_s) causal or (B, 1, N_s) padding
        -- a (B, 1, N_s) mask is applied to every head). Returns (B, N_q, d), weights (B, h, N_q, N_s).
        """
        source = x if source is None else source
        check_shape("x", x, (None, None, self.d))
        check_shape("source", source, (x.shape[0], None, self.d))
        w_q, w_k, w_v = self.in_proj.weight.chunk(3)
        b_q, b_k, b_v = self.in_proj.bias.chunk(3)
        Q = self.split_heads(nn.functional.linear(x, w_q, b_q))         # (B, h, N_q, d/h)
        K = self.split_heads(nn.functional.linear(source, w_k, b_k))    # (B, h, N_s, d/h)
        V = self.split_heads(nn.functional.linear(source, w_v, b_v))    # (B, h, N_s, d/h)
        if mask is not None and mask.dim() == 3:                        # (B, *, N_s): add head axis
            mask = mask[:, None]
        O, A = attention(Q, K, V, mask)                                 # (B, h, N_q, d/h)
        O = O.transpose(1, 2).reshape(x.shape[0], x.shape[1], self.d)   # concatenate the heads
        return self.out_proj(O), A


class PreNormBlock(nn.Module):
    """U = X + MHA(LN1(X)),  Y = U + MLP(LN2(U)),  MLP = Linear(d, r d) -> GELU -> Linear(r d, d).

    With ``norm_first=False`` it is the post-norm block: U = LN1(X + MHA(X)), Y = LN2(U + MLP(U)).
    """

    def __init__(self, d: int, h: int, r: int = 4, norm_first: bool = True):
        super().__init__()
        self.norm_first = norm_first
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.mha = MultiHeadAttention(d, h)
        self.mlp = nn.Sequential(nn.Linear(d, r * d), nn.GELU(), nn.Linear(r * d, d))

    def forward(self, X, mask=None):
        """X (B, N, d) -> Y (B, N, d)."""
        if self.norm_first:
            U = X + self.mha(self.ln1(X), mask=mask)[0]                 # (B, N, d)
            return U + self.mlp(self.ln2(U))                            # (B, N, d)
        U = self.ln1(X + self.mha(X, mask=mask)[0])
        return self.ln2(U + self.mlp(U))

    @torch.no_grad()
    def copy_from_torch(self, layer: nn.TransformerEncoderLayer) -> "PreNormBlock":
        """Take the weights of a ``nn.TransformerEncoderLayer`` with the same d, h and r."""
        pairs = [(self.mha.in_proj.weight, layer.self_attn.in_proj_weight),
                 (self.mha.in_proj.bias, layer.self_attn.in_proj_bias),
                 (self.mha.out_proj.weight, layer.self_attn.out_proj.weight),
                 (self.mha.out_proj.bias, layer.self_attn.out_proj.bias),
                 (self.mlp[0].weight, layer.linear1.weight), (self.mlp[0].bias, layer.linear1.bias),
                 (self.mlp[2].weight, layer.linear2.weight), (self.mlp[2].bias, layer.linear2.bias),
                 (self.ln1.weight, layer.norm1.weight), (self.ln1.bias, layer.norm1.bias),
                 (self.ln2.weight, layer.norm2.weight), (self.ln2.bias, layer.norm2.bias)]
        for mine, theirs in pairs:
            if mine.shape != theirs.shape:
                raise ValueError(f"shape mismatch: {tuple(mine.shape)} vs {tuple(theirs.shape)}")
            mine.copy_(theirs)
        return self


def sinusoidal_positions(n: int, d: int, base: float = 10000.0) -> torch.Tensor:
    """(n, d) sinusoidal position codes: P[p, 2i] = sin(p / base^(2i/d)), P[p, 2i+1] = cos(...)."""
    if d % 2:
        raise ValueError(f"the width d must be even to pair sines with cosines, got {d}")
    p = torch.arange(n, dtype=torch.float64)[:, None]                # (n, 1)
    freq = base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)  # (d/2,)
    P = torch.zeros(n, d, dtype=torch.float64)
    P[:, 0::2], P[:, 1::2] = torch.sin(p * freq), torch.cos(p * freq)
    return P.float()


def offset_rotation(offset: int, d: int, base: float = 10000.0) -> torch.Tensor:
    """(d, d) block-diagonal rotation R with P[p + offset] = P[p] @ R.T for every position p."""
    freq = base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    R = torch.zeros(d, d, dtype=torch.float64)
    for i, w in enumerate(freq):
        c, s = math.cos(offset * w), math.sin(offset * w)
        # (sin, cos)(p + k) = [[c, s], [-s, c]] (sin, cos)(p)
        R[2 * i:2 * i + 2, 2 * i:2 * i + 2] = torch.tensor([[c, s], [-s, c]], dtype=torch.float64)
    return R.float()
