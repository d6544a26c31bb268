"""The package code behind the lecture-notes pages: tokens, decoding, long sequences, images."""
import math

import pytest
import torch

from attention_course.core.char_decoder import CharDecoder, DecoderConfig
from attention_course.notes import long_attention, search, tokens, vision
from attention_course.notes.model_size import transformer_parameters
from attention_course.tasks.char_decoder import generate


def test_bpe_merges_most_frequent_pairs_within_words_only():
    r = tokens.train_bpe("aa ab aa", vocab_size=100)
    assert r.merges[0] == ("a", "_")          # ("a", "_") and ("a", "a") both occur twice: "_" sorts first
    assert not any(a.endswith(tokens.END) for a, _ in r.merges)   # nothing is merged onto a word's end
    assert r.token_counts[-1] == 3 and r.tokenize("aa ab aa") == ["aa_", "ab_", "aa_"]
    assert "".join(r.tokenize("ba")).replace("_", "") == "ba"          # unseen words still tokenize
    with pytest.raises(ValueError, match="at least"):
        tokens.train_bpe("abc", vocab_size=2)
    with pytest.raises(ValueError, match="some text"):
        tokens.train_bpe("   ", vocab_size=10)


def test_bpe_stops_at_the_vocabulary_size_and_matches_the_library_size():
    text = "the cat sat on the mat the end"
    r = tokens.train_bpe(text, vocab_size=20)
    assert len(r.vocabulary) == 20 and len(r.merges) == 20 - len(set(text.replace(" ", "")) | {"_"})
    lib = tokens.library_bpe(text, vocab_size=20)
    assert lib.get_vocab_size() == 20


def test_one_hot_times_table_is_a_lookup():
    table = torch.randn(7, 3)
    ids = torch.tensor([3, 0, 3, 6])
    torch.testing.assert_close(tokens.one_hot_embedding(ids, table), table[ids])
    with pytest.raises(ValueError, match="0..6"):
        tokens.one_hot_embedding(torch.tensor([7]), table)


def test_char_decoder_cache_matches_full_recompute():
    torch.manual_seed(0)
    model = CharDecoder(DecoderConfig(width=16, heads=2, layers=2, context=24)).eval()
    assert generate(model, "abc", 12) == generate(model, "abc", 12, use_cache=False)
    ids = torch.tensor([[5, 6, 7, 8]])
    full = model(ids)[0]                                          # (N, V)
    cache = None
    for t in range(4):
        step, cache = model.step_with_cache(ids[:, t:t + 1], cache)
        torch.testing.assert_close(step[0], full[t], atol=1e-5, rtol=1e-5)
    with pytest.raises(ValueError, match="context"):
        generate(model, "abc", 30)


def test_decoder_sees_only_the_past():
    torch.manual_seed(1)
    model = CharDecoder(DecoderConfig(width=16, heads=2, layers=1, context=8)).eval()
    a, b = torch.tensor([[3, 4, 5, 6]]), torch.tensor([[3, 4, 9, 9]])
    torch.testing.assert_close(model(a)[0, :2], model(b)[0, :2])  # changing t >= 2 leaves t < 2 alone


def test_decoding_strategies_on_a_toy_table():
    toy = search.table_model({(): [0.6, 0.4], (0,): [0.5, 0.5], (1,): [0.95, 0.05]})
    g, g_lp = search.greedy(toy, [], 2)
    b, b_lp = search.beam_search(toy, [], 2, width=2)
    assert g == [0, 0] and b == [1, 0] and b_lp > g_lp
    assert math.isclose(math.exp(b_lp), 0.38)
    s, _ = search.top_k_sample(toy, [], 2, k=1, generator=torch.Generator().manual_seed(0))
    assert s == g                                                 # top-1 sampling is greedy


def test_parameter_counts_of_published_models():
    bert = transformer_parameters(24, 1024, 30522, 512, segment_types=2)
    assert abs(bert / 340e6 - 1) < 0.03
    assert abs(transformer_parameters(96, 12288, 50257, 2048) / 175e9 - 1) < 0.01
    small = CharDecoder(DecoderConfig(width=16, heads=2, layers=2, context=24))
    counted = transformer_parameters(2, 16, 30, 24)
    actual = sum(p.numel() for p in small.parameters())
    assert actual == counted + 16 * 30 + 30                      # + the untied output head


@pytest.mark.parametrize("kind", long_attention.PATTERNS)
def test_patterns_keep_the_diagonal_and_their_shape(kind):
    m = long_attention.pattern(kind, 12, window=1, dilation=2, globals_=1, random_links=2)
    assert m.shape == (12, 12) and m.dtype == torch.bool and m.diagonal().all()


def test_pattern_details():
    local = long_attention.pattern("local", 10, window=2)
    assert int(local[5].sum()) == 5 and not local[0, 3]
    dilated = long_attention.pattern("dilated", 10, window=2, dilation=3)
    assert dilated[0, 3] and dilated[0, 6] and not dilated[0, 1] and not dilated[0, 9]
    big = long_attention.pattern("bigbird", 16, window=1, globals_=1, random_links=3, seed=4)
    assert torch.equal(big, long_attention.pattern("bigbird", 16, window=1, globals_=1, random_links=3, seed=4))
    assert int(big.sum()) > int(long_attention.pattern("global", 16, window=1, globals_=1).sum())
    with pytest.raises(ValueError, match="kind must be"):
        long_attention.pattern("strided", 4)


def test_approximations_become_exact_in_their_limits():
    Q, K, V = long_attention.smooth_qkv(64, 8, sharpness=0.5)
    exact = long_attention.exact_attention(Q, K, V)
    torch.testing.assert_close(long_attention.low_rank_attention(Q, K, V, 64), exact)   # k = N
    errs = [long_attention.relative_error(long_attention.random_feature_attention(Q, K, V, m, seed=1), exact)
            for m in (8, 8192)]
    assert errs[1] < errs[0] / 4 and errs[1] < 0.05
    with pytest.raises(ValueError, match="1 <= k"):
        long_attention.low_rank_attention(Q, K, V, 0)


def test_patches_embedding_windows_and_merging():
    images = torch.arange(2 * 3 * 4 * 6, dtype=torch.float32).view(2, 3, 4, 6)
    p = vision.patchify(images, 2)
    assert p.shape == (2, 6, 12)
    torch.testing.assert_close(p[1, 4], images[1, :, 2:4, 2:4].flatten())      # patch (row 1, col 1)
    with pytest.raises(ValueError, match="divisible"):
        vision.patchify(images, 4)
    embed = vision.PatchEmbedding(3, 2, 8, n_patches=6)
    assert embed(images).shape == (2, 7, 8)
    torch.testing.assert_close(embed(images)[0, 0], embed(images)[1, 0])       # the same <cls> row
    ids = vision.window_ids(4, 2)
    assert ids.tolist() == [[0, 0, 1, 1], [0, 0, 1, 1], [2, 2, 3, 3], [2, 2, 3, 3]]
    assert vision.window_ids(4, 2, shift=1)[0, 1] == vision.window_ids(4, 2, shift=1)[0, 2]
    assert vision.window_mask(4, 2).sum() == 4 * 16
    merged = vision.PatchMerging(5)(torch.randn(1, 4, 4, 5))
    assert merged.shape == (1, 2, 2, 10)
    with pytest.raises(ValueError, match="even"):
        vision.PatchMerging(5)(torch.randn(1, 3, 4, 5))


def test_flops_and_seconds_counts_a_matrix_product():
    from attention_course.notes.cost import flops_and_seconds

    a, b = torch.randn(8, 16), torch.randn(16, 4)
    flops, seconds = flops_and_seconds(torch.matmul, a, b, repeats=2)
    assert flops == 2 * 8 * 16 * 4 and seconds >= 0
