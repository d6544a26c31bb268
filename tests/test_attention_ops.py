"""Masked attention weights and context vectors (the reference versions students match)."""
import pytest
import torch

from attention_course.attention import additive_scores, attention_context, masked_attention_weights


def test_weights_rows_sum_to_one_and_padding_is_exactly_zero():
    g = torch.Generator().manual_seed(0)
    scores = torch.randn(3, 7, generator=g) * 10
    mask = torch.rand(3, 7, generator=g) > 0.5
    mask[:, 2] = True
    w = masked_attention_weights(scores, mask)
    assert w.shape == (3, 7)
    torch.testing.assert_close(w.sum(-1), torch.ones(3))
    assert torch.all(w[~mask] == 0)


def test_huge_scores_give_no_nan():
    w = masked_attention_weights(torch.tensor([[1e4, 3e4, -1e4]]), torch.tensor([[True, False, True]]))
    torch.testing.assert_close(w, torch.tensor([[1.0, 0.0, 0.0]]))


def test_all_padded_row_raises():
    with pytest.raises(ValueError, match=r"rows \[1\]"):
        masked_attention_weights(torch.zeros(2, 3), torch.tensor([[True] * 3, [False] * 3]))


def test_shape_errors_name_the_expected_shape():
    with pytest.raises(ValueError, match=r"mask should have shape \(2, 3\)"):
        masked_attention_weights(torch.zeros(2, 3), torch.ones(2, 4, dtype=torch.bool))
    with pytest.raises(ValueError, match=r"states should have shape \(2, 3, \*\)"):
        attention_context(torch.zeros(2, 3), torch.zeros(2, 4, 5))
    with pytest.raises(TypeError, match="bool"):
        masked_attention_weights(torch.zeros(2, 3), torch.ones(2, 3))


def test_context_is_weighted_sum():
    g = torch.Generator().manual_seed(1)
    w = torch.softmax(torch.randn(2, 5, generator=g), -1)
    h = torch.randn(2, 5, 3, generator=g)
    torch.testing.assert_close(attention_context(w, h), torch.einsum("bn,bnd->bd", w, h))


def test_additive_scores_match_formula():
    g = torch.Generator().manual_seed(2)
    q, k, v = torch.randn(2, 4, generator=g), torch.randn(2, 3, 4, generator=g), torch.randn(4, generator=g)
    expected = torch.stack([torch.stack([v @ torch.tanh(q[b] + k[b, j]) for j in range(3)])
                            for b in range(2)])
    torch.testing.assert_close(additive_scores(q, k, v), expected)
