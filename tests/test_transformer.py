"""Self-attention, masks, positions and the block (Sections 8.5-8.8), with edge cases."""
import pytest
import torch

from attention_course.core.transformer import (
    MultiHeadAttention, PreNormBlock, attention, causal_mask, offset_rotation, padding_mask,
    sinusoidal_positions)
from attention_course.notes.block_cost import block_flops
from attention_course.notes.gradient_flow import gradient_norms_by_layer

torch.manual_seed(0)


def test_attention_matches_torch_and_handles_one_token():
    Q, K, V = torch.randn(2, 3, 4), torch.randn(2, 5, 4), torch.randn(2, 5, 6)
    O, A = attention(Q, K, V)
    torch.testing.assert_close(O, torch.nn.functional.scaled_dot_product_attention(Q, K, V))
    O1, A1 = attention(Q[:, :1], K[:, :1], V[:, :1])                 # N = 1: all weight on itself
    torch.testing.assert_close(A1, torch.ones(2, 1, 1))
    torch.testing.assert_close(O1, V[:, :1])


def test_attention_errors_are_explained():
    with pytest.raises(ValueError, match="every key needs a value"):
        attention(torch.randn(1, 2, 4), torch.randn(1, 3, 4), torch.randn(1, 2, 4))
    with pytest.raises(ValueError, match="same width"):
        attention(torch.randn(1, 2, 4), torch.randn(1, 3, 5), torch.randn(1, 3, 4))
    with pytest.raises(ValueError, match="nothing to attend to"):
        attention(torch.randn(1, 2, 4), torch.randn(1, 2, 4), torch.randn(1, 2, 4),
                  mask=torch.tensor([[True, True], [False, False]]))
    with pytest.raises(ValueError, match="divisible"):
        MultiHeadAttention(10, 3)
    with pytest.raises(ValueError, match=r"lengths must be in 1\.\.4"):
        padding_mask([0, 2], 4)


def test_causal_mask_hides_the_future():
    mha = MultiHeadAttention(8, 2)
    X = torch.randn(1, 6, 8)
    Y = mha(X, mask=causal_mask(6))[0]
    X2 = X.clone()
    X2[:, 4:] = torch.randn(1, 2, 8)                                  # change only the future
    torch.testing.assert_close(mha(X2, mask=causal_mask(6))[0][:, :4], Y[:, :4])


def test_padding_mask_ignores_padded_content():
    mha = MultiHeadAttention(8, 4)
    X = torch.randn(2, 5, 8)
    mask = padding_mask([3, 5], 5)                                    # (B, 1, N)
    Y, A = mha(X, mask=mask)
    assert torch.all(A[0, :, :, 3:] == 0)
    X2 = X.clone()
    X2[0, 3:] = 100.0
    torch.testing.assert_close(mha(X2, mask=mask)[0][0, :3], Y[0, :3])


def test_self_attention_is_permutation_equivariant():
    mha = MultiHeadAttention(8, 2)
    X = torch.randn(1, 6, 8)
    perm = torch.randperm(6)
    Y, A = mha(X)
    Yp, Ap = mha(X[:, perm])
    torch.testing.assert_close(Yp, Y[:, perm])
    torch.testing.assert_close(Ap, A[:, :, perm][:, :, :, perm])


def test_mha_matches_torch_multihead_attention():
    ref = torch.nn.MultiheadAttention(12, 3, batch_first=True)
    mha = MultiHeadAttention(12, 3)
    mha.in_proj.weight.data, mha.in_proj.bias.data = ref.in_proj_weight.data, ref.in_proj_bias.data
    mha.out_proj.load_state_dict(ref.out_proj.state_dict())
    X, S = torch.randn(2, 4, 12), torch.randn(2, 7, 12)
    out, weights = ref(X, S, S, average_attn_weights=False)
    mine, A = mha(X, S)
    torch.testing.assert_close(mine, out)
    torch.testing.assert_close(A, weights)


@pytest.mark.parametrize("norm_first", [True, False])
def test_block_matches_torch_encoder_layer(norm_first):
    layer = torch.nn.TransformerEncoderLayer(16, 4, 64, dropout=0.0, activation="gelu",
                                             norm_first=norm_first, batch_first=True).eval()
    block = PreNormBlock(16, 4, 4, norm_first=norm_first).copy_from_torch(layer).eval()
    X = torch.randn(3, 7, 16)
    torch.testing.assert_close(block(X), layer(X))
    torch.testing.assert_close(block(X, mask=causal_mask(7)), layer(X, src_mask=~causal_mask(7)))


def test_sinusoids_and_offsets_are_rotations():
    P = sinusoidal_positions(64, 16)
    assert P.shape == (64, 16) and torch.allclose(P[0, 1::2], torch.ones(8))
    for k in (1, 5, 17):
        R = offset_rotation(k, 16)
        torch.testing.assert_close(P[k:], P[:-k] @ R.T, atol=1e-5, rtol=0)
        torch.testing.assert_close(R @ R.T, torch.eye(16), atol=1e-6, rtol=0)
    with pytest.raises(ValueError, match="even"):
        sinusoidal_positions(4, 7)


def test_flop_formula_matches_torch_counter():
    from torch.utils.flop_counter import FlopCounterMode

    n, d, r = 32, 16, 4
    block = PreNormBlock(d, 2, r)
    with FlopCounterMode(display=False) as counter:
        block(torch.randn(1, n, d))
    assert counter.get_total_flops() == sum(block_flops(n, d, r).values())


def test_block_trace_matches_the_block_it_describes():
    from attention_course.notes.block_cost import block_trace

    n, d, h, r = 5, 16, 4, 2
    torch.manual_seed(0)
    block = PreNormBlock(d, h, r).eval()
    X = torch.randn(1, n, d)
    a = block.ln1(X)
    q = block.mha.in_proj(a)[..., :d].view(1, n, h, d // h).transpose(1, 2)     # (1, h, n, d/h)
    hidden = block.mlp[1](block.mlp[0](block.ln2(X + block.mha(a)[0])))
    trace = {t["name"]: t for t in block_trace(n, d, h, r)}
    assert trace["Q, K, V = LN1(X) W_Q, W_K, W_V"]["shape"] == tuple(q.shape[1:])
    assert trace["GELU(LN2(U) W_1)"]["shape"] == tuple(hidden.shape[1:])
    assert trace["S = Q K^T / sqrt(d_k)"]["shape"] == (h, n, n)
    assert sum(t["flops"] for t in trace.values()) == sum(block_flops(n, d, r).values())
    assert [t["name"] for t in trace.values() if t["residual"]] == ["U = X + MHA", "Y = U + MLP"]
    with pytest.raises(ValueError, match="divisible"):
        block_trace(4, 10, 4)


def test_block_trace_mixing_flags_agree_with_a_perturbation():
    from attention_course.notes.block_cost import block_trace

    n, d, h = 4, 8, 2
    torch.manual_seed(1)
    block = PreNormBlock(d, h).eval()

    def rows_of_token_2(X):
        a = block.ln1(X)
        q, k, v = block.mha.in_proj(a).chunk(3, dim=-1)                      # (1, n, d) each
        S = q @ k.transpose(1, 2) / (d // h) ** 0.5                          # one head's view
        return {"Q, K, V = LN1(X) W_Q, W_K, W_V": q[0, 2], "S = Q K^T / sqrt(d_k)": S[0, 2],
                "A = softmax over each row of S": S[0, 2].softmax(-1), "LN1(X)": a[0, 2]}

    X = torch.randn(1, n, d)
    Y = X.clone()
    Y[0, 0] = torch.randn(d)
    before, after = rows_of_token_2(X), rows_of_token_2(Y)
    flags = {t["name"]: t["mixes"] for t in block_trace(n, d, h)}
    for name in before:
        assert (not torch.allclose(before[name], after[name])) == flags[name], name


def test_peak_memory_of_naive_attention_grows_with_n_squared():
    from attention_course.notes.block_cost import peak_memory_mb

    small, large = peak_memory_mb("naive", 512), peak_memory_mb("naive", 2048)
    assert large > 6 * small and peak_memory_mb("sdpa", 2048) < 0.1 * large
    with pytest.raises(ValueError, match="naive"):
        peak_memory_mb("flash", 8)


def test_gradient_norms_by_layer_pre_and_post_norm():
    """Section 8.7's measurement: at initialisation a post-norm stack's gradients grow towards
    the output; a pre-norm stack's do not."""
    pre = gradient_norms_by_layer(norm_first=True, layers=12, d=32, seeds=(0, 1))
    post = gradient_norms_by_layer(norm_first=False, layers=12, d=32, seeds=(0, 1))
    assert len(pre) == len(post) == 12 and min(pre + post) > 0
    assert post[-1] / post[0] > pre[-1] / pre[0]
    assert gradient_norms_by_layer(True, layers=2, d=8, seeds=(3,)) == \
        gradient_norms_by_layer(True, layers=2, d=8, seeds=(3,))          # seeded
