"""Several GRUs run side by side, each over its own sequence, with a hand-written backward pass.

    ahead, back = stacked_gru([forward_gru, backward_gru], [x, x_reversed])   # each (B, N, H)

gives what ``[gru(x)[0] for gru, x in ...]`` gives (single-layer, batch-first ``nn.GRU`` modules
starting from zero states), and the same gradients, for less time on a CPU. ``nn.GRU`` on a CPU
records a dozen small operations per column for autograd and replays them backwards; at the
digit readers' sizes (32 strips, 64 units, about 60 columns, two directions) that bookkeeping,
more than arithmetic, made the GRU the dearest part of a reader's training step. Here one
matrix product serves every GRU at a column (``baddbmm`` over the stack), and the backward pass
is one loop over the columns that computes the derivatives directly: everything that does not
depend on the incoming gradient is computed for all columns at once beforehand, and the
weights' gradients with one product at the end. A reader's training step takes about a fifth
less time. ``tests/test_stacked_gru.py`` checks values and gradients against ``nn.GRU``.

PyTorch's GRU, per column t, with input projections ``gi = x W_ih^T + b_ih`` and
``gh = h W_hh^T + b_hh`` split into reset, update and new parts::

    r = sigmoid(gi_r + gh_r);  z = sigmoid(gi_z + gh_z);  n = tanh(gi_n + r * gh_n)
    h' = (1 - z) * n + z * h
"""
from __future__ import annotations

from typing import Sequence

import torch
from torch import nn
from torch.autograd.function import once_differentiable


def stacked_gru(grus: Sequence[nn.GRU], inputs: Sequence[torch.Tensor]) -> list[torch.Tensor]:
    """The states (B, N, H) of each GRU over its input (B, N, E), every GRU from zero states.

    The GRUs must be single-layer, one-directional, batch-first and with biases, and the inputs
    all of one shape.
    """
    if len(grus) != len(inputs) or not grus:
        raise ValueError(f"need one input per GRU, got {len(grus)} GRUs and {len(inputs)} inputs")
    for gru in grus:
        if gru.num_layers != 1 or gru.bidirectional or not gru.batch_first or not gru.bias:
            raise ValueError("stacked_gru runs single-layer, one-directional, batch-first GRUs "
                             f"with biases; got {gru}")
    shapes = {tuple(x.shape) for x in inputs}
    if len(shapes) != 1 or len(next(iter(shapes))) != 3:
        raise ValueError(f"inputs should all have one shape (B, N, E), got {sorted(shapes)}")
    gi = torch.stack([nn.functional.linear(x, gru.weight_ih_l0, gru.bias_ih_l0)
                      for gru, x in zip(grus, inputs)])                     # (S, B, N, 3H)
    gi = gi.permute(2, 0, 1, 3).contiguous()                                 # (N, S, B, 3H)
    w_hh = torch.stack([gru.weight_hh_l0 for gru in grus])                   # (S, 3H, H)
    b_hh = torch.stack([gru.bias_hh_l0 for gru in grus])                     # (S, 3H)
    states = _Recurrence.apply(gi, w_hh, b_hh)                               # (N, S, B, H)
    return list(states.permute(1, 2, 0, 3).unbind(0))                        # S x (B, N, H)


class _Recurrence(torch.autograd.Function):
    """Time-major recurrence of S GRUs: gi (N, S, B, 3H), w_hh (S, 3H, H), b_hh (S, 3H) ->
    states (N, S, B, H). (Time-major, so every column's slice is contiguous.)"""

    @staticmethod
    def forward(ctx, gi, w_hh, b_hh):
        n, s, b, three_h = gi.shape
        h = three_h // 3
        states = gi.new_empty(n, s, b, h)
        gates = gi.new_empty(n, s, b, 2 * h)          # r and z of every column
        news = gi.new_empty(n, s, b, h)               # n
        gh_news = gi.new_empty(n, s, b, h)            # gh_n, which dr needs
        w_t, bias = w_hh.transpose(1, 2), b_hh.unsqueeze(1)      # (S, H, 3H), (S, 1, 3H)
        state = gi.new_zeros(s, b, h)
        for t in range(n):
            gh = torch.baddbmm(bias, state, w_t)                               # (S, B, 3H)
            rz = torch.sigmoid(gi[t, ..., :2 * h] + gh[..., :2 * h], out=gates[t])
            gh_news[t] = gh[..., 2 * h:]
            new = torch.tanh(torch.addcmul(gi[t, ..., 2 * h:], rz[..., :h], gh_news[t]),
                             out=news[t])
            state = torch.lerp(new, state, rz[..., h:], out=states[t])        # (1 - z) n + z h
        ctx.save_for_backward(states, gates, news, gh_news, w_hh)
        return states

    @staticmethod
    @once_differentiable
    def backward(ctx, grad):
        states, gates, news, gh_news, w_hh = ctx.saved_tensors
        n, s, b, h = states.shape
        prev = torch.cat([states.new_zeros(1, s, b, h), states[:-1]])     # h before each column
        r, z = gates[..., :h], gates[..., h:]
        # the factors that do not depend on the incoming gradient, for every column at once
        to_new = ((1 - z) * (1 - news * news)).contiguous()     # dh -> d(gi_n), through n
        to_update = ((prev - news) * z * (1 - z)).contiguous()  # dh -> d(gi_z) = d(gh_z)
        to_reset = (gh_news * r * (1 - r)).contiguous()         # d(gi_n) -> d(gi_r) = d(gh_r)
        r, z = r.contiguous(), z.contiguous()
        d_gh = grad.new_empty(n, s, b, 3 * h)                   # d(gh) of every column
        d_gi_new = grad.new_empty(n, s, b, h)                   # d(gi_n)
        dh = grad.new_zeros(s, b, h)                            # from the columns after t
        for t in range(n - 1, -1, -1):
            dh = dh + grad[t]
            d_new = torch.mul(dh, to_new[t], out=d_gi_new[t])
            torch.cat([d_new * to_reset[t], dh * to_update[t], d_new * r[t]], -1, out=d_gh[t])
            dh = torch.baddbmm(dh * z[t], d_gh[t], w_hh)        # to the state before column t
        d_w = torch.bmm(d_gh.permute(1, 3, 0, 2).flatten(2),
                        prev.permute(1, 0, 2, 3).flatten(1, 2))                 # (S, 3H, H)
        d_gi = torch.cat([d_gh[..., :2 * h], d_gi_new], -1)
        return d_gi, d_w, d_gh.sum((0, 2))
