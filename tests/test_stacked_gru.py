"""stacked_gru: the values and gradients of nn.GRU, GRU by GRU, and clear errors for what it
cannot run."""
import pytest
import torch
from torch import nn

from attention_course.core.stacked_gru import stacked_gru

B, N, E, H = 3, 7, 5, 4          # distinct sizes, so a swapped dimension cannot pass


def _grus(count: int, dtype=torch.float64) -> list[nn.GRU]:
    torch.manual_seed(0)
    return [nn.GRU(E, H, batch_first=True).to(dtype) for _ in range(count)]


def _inputs(count: int, dtype=torch.float64) -> list[torch.Tensor]:
    generator = torch.Generator().manual_seed(1)
    return [torch.randn(B, N, E, dtype=dtype, generator=generator, requires_grad=True)
            for _ in range(count)]


def _gradients(outputs, upstream, inputs, grus):
    loss = sum((out * up).sum() for out, up in zip(outputs, upstream))
    leaves = [*inputs, *(p for gru in grus for p in gru.parameters())]
    return torch.autograd.grad(loss, leaves)


@pytest.mark.parametrize("count", [1, 2, 3])
def test_states_and_gradients_are_those_of_nn_gru(count):
    grus, inputs = _grus(count), _inputs(count)
    ours = stacked_gru(grus, inputs)
    theirs = [gru(x)[0] for gru, x in zip(grus, inputs)]
    for mine, ref in zip(ours, theirs):
        assert mine.shape == (B, N, H)
        torch.testing.assert_close(mine, ref, rtol=0, atol=1e-12)
    upstream = [torch.randn(B, N, H, dtype=torch.float64) for _ in range(count)]
    for mine, ref in zip(_gradients(ours, upstream, inputs, grus),
                         _gradients(theirs, upstream, inputs, grus)):
        torch.testing.assert_close(mine, ref, rtol=0, atol=1e-12)


def test_single_precision_agrees_with_nn_gru_to_rounding():
    grus, inputs = _grus(2, torch.float32), _inputs(2, torch.float32)
    for mine, ref in zip(stacked_gru(grus, inputs), [g(x)[0] for g, x in zip(grus, inputs)]):
        torch.testing.assert_close(mine, ref, rtol=1e-5, atol=1e-6)


def test_one_column_and_no_gradient_needed():
    grus, inputs = _grus(2), [x[:, :1].detach() for x in _inputs(2)]
    with torch.no_grad():
        ours = stacked_gru(grus, inputs)
        for mine, gru, x in zip(ours, grus, inputs):
            torch.testing.assert_close(mine, gru(x)[0], rtol=0, atol=1e-12)


def test_what_it_cannot_run_is_named():
    gru = _grus(1)[0]
    x = _inputs(1)[0]
    with pytest.raises(ValueError, match="one input per GRU"):
        stacked_gru([gru, gru], [x])
    with pytest.raises(ValueError, match="batch-first"):
        stacked_gru([nn.GRU(E, H, num_layers=2, batch_first=True).double()], [x])
    with pytest.raises(ValueError, match=r"one shape \(B, N, E\)"):
        stacked_gru([gru, gru], [x, x[:, :-1]])
