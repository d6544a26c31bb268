"""The figure toolkit in Python: reference math, read-outs that follow controls, fallbacks."""
import numpy as np
import pytest
import traitlets

from attention_course.book.figures import (
    DEFAULT_KEYS, DEFAULT_VALUES, QKVExplorer, SoftmaxPeakFigure, qkv_attention, softmax_peak_curves)
from attention_course.book.figures.base import FALLBACK_TEXT, bundle_module


def test_qkv_reference_matches_direct_formula():
    r = qkv_attention(135, 2.5, scaled=True)
    q = 2.5 * np.array([np.cos(np.deg2rad(135)), np.sin(np.deg2rad(135))])
    scores = np.array(DEFAULT_KEYS) @ q / np.sqrt(2)
    w = np.exp(scores) / np.exp(scores).sum()
    np.testing.assert_allclose(r["weights"], w)
    np.testing.assert_allclose(r["output"], w @ np.array(DEFAULT_VALUES))
    assert r["weights"].argmax() == 2                     # the query points at k3


def test_longer_query_and_no_scaling_sharpen_the_weights():
    base = qkv_attention(20, 1, True)["weights"].max()
    assert qkv_attention(20, 3, True)["weights"].max() > base
    assert qkv_attention(20, 1, False)["weights"].max() > base


def test_qkv_bad_shapes_are_explained():
    with pytest.raises(ValueError, match=r"\(N, 2\)"):
        qkv_attention(0, 1, True, keys=[[1, 2, 3]], values=[[0, 0, 0]])
    with pytest.raises(ValueError, match="same N"):
        qkv_attention(0, 1, True, keys=[[1, 2]], values=[[0, 0, 0], [1, 1, 1]])


def test_explorer_readouts_follow_controls():
    fig = QKVExplorer(angle=20)
    fig.angle, fig.scaled = 200, False
    expected = qkv_attention(200, 1.0, False)
    np.testing.assert_allclose(fig.weights, expected["weights"], atol=1e-6)
    np.testing.assert_allclose(fig.output, expected["output"], atol=1e-6)


def test_softmax_peak_curves_are_reproducible_and_sensible():
    a = softmax_peak_curves(dks=(1, 64), n_keys=8, draws=200, seed=3)
    assert a == softmax_peak_curves(dks=(1, 64), n_keys=8, draws=200, seed=3)
    assert a["mean_unscaled"][1] > a["mean_unscaled"][0]          # unscaled sharpens with d_k
    assert abs(a["mean_scaled"][1] - a["mean_scaled"][0]) < 0.1   # scaled barely moves
    assert all(1 / 8 <= v <= 1 for v in a["one_scaled"] + a["mean_unscaled"])


def test_peak_figure_readout_and_index_check():
    curves = softmax_peak_curves(dks=(1, 4, 16), n_keys=4, draws=50)
    fig = SoftmaxPeakFigure(curves=curves, dk_index=2)
    fig.scaled, fig.average = True, False
    assert fig.peak == curves["one_scaled"][2]
    with pytest.raises(traitlets.TraitError, match=r"0\.\.2"):
        fig.dk_index = 3


@pytest.mark.parametrize("make", [lambda: QKVExplorer(), lambda: SoftmaxPeakFigure(
    curves=softmax_peak_curves(dks=(1, 2), draws=10))])
def test_saved_notebook_fallback_says_run_the_cell(make):
    data, _ = make()._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in data
    assert FALLBACK_TEXT in data["text/html"] and "data:image/svg+xml;base64," in data["text/html"]
    assert FALLBACK_TEXT in data["text/plain"]
    # the title is the caption of the static form, with a picture or without one
    assert f'<p class="course-fig-caption">{make().title}</p>' in data["text/html"]


def test_bundled_modules_are_self_contained():
    for name in ("qkv", "softmax_peak", "reorder", "bottleneck", "caption_maps", "routes",
                 "position_waves", "position_similarity", "block_trace", "bpe_steps", "patterns",
                 "alignment", "selfcheck"):
        module = bundle_module(name)
        assert "import " not in module and "export default" in module
        assert len(module.encode()) < 20_000


def test_reorder_reference_equivariance_and_masks():
    from attention_course.book.figures import ORDERS, ReorderFigure, reorder_attention
    from attention_course.book.figures.reorder import reorder_setup

    setup = reorder_setup()
    for order in ORDERS.values():
        result = reorder_attention(setup, order, positions=False, causal=False)
        assert result["change"].max() < 1e-9                 # outputs move with their tokens
        np.testing.assert_allclose(result["A"].sum(1), 1)
    moved = reorder_attention(setup, ORDERS["D C B A"], positions=True, causal=False)["change"]
    assert moved.min() > 0.1
    fig = ReorderFigure(order="B A C D")
    fig.causal = True
    np.testing.assert_allclose(fig.change, reorder_attention(setup, (1, 0, 2, 3), False, True)["change"],
                               atol=1e-6)
    with pytest.raises(traitlets.TraitError, match="order must be one of"):
        fig.order = "A A B C"


def test_bottleneck_steps_reference():
    from attention_course.book.figures import BottleneckFigure, bottleneck_steps

    steps = bottleneck_steps(3, 16)
    assert [s["phase"] for s in steps] == ["read"] * 3 + ["cross"] + ["write"] * 3
    assert steps[2]["text"] == "h3 = f(h2, 7)" and steps[-1]["written"] == "427"
    assert all(s["crossing"] == 0 for s in steps[:3]) and all(s["crossing"] == 16 for s in steps[3:])
    assert bottleneck_steps(24, 12)[0]["per_symbol"] == 0.5
    with pytest.raises(ValueError, match=r"1\.\.24"):
        bottleneck_steps(25, 16)
    fig = BottleneckFigure(n=5, step=10)
    assert fig.operation.startswith("s5 = g(s4")
    fig.n = 2                                   # the step is pulled back into range
    assert fig.step == 4 and fig.operation == "s2 = g(s1, 4, c) -> 2"
    with pytest.raises(traitlets.TraitError, match="width"):
        fig.width = 0


def test_caption_maps_readouts_and_validation():
    from attention_course.book.figures import CaptionMapsFigure, map_readouts
    from attention_course.book.figures.caption_maps import map_region

    grid = np.zeros((6, 6))
    grid[0, :3] = [0.3, 0.25, 0.05]
    grid[5, 5] = 0.4
    assert map_readouts(grid) == {"peak": 0.4, "half_cells": 2, "cells": [35, 0], "region": "centre"}
    assert map_region(grid, [35]) == "bottom right" and map_region(grid, [0, 1]) == "top left"
    for (row, column), region in {(0, 5): "top right", (5, 0): "bottom left", (2, 0): "middle left",
                                  (0, 3): "top centre", (3, 3): "centre"}.items():
        one = np.zeros((6, 6))
        one[row, column] = 1.0
        assert map_region(one) == region, (row, column)
    assert map_region(np.full((6, 6), 1 / 36)) == "centre"
    image = np.zeros((3, 48, 48), np.float32)
    maps = [{"word": "a", "map": np.full((6, 6), 1 / 36)}, {"word": "red", "map": grid}]
    fig = CaptionMapsFigure(image, maps)
    assert (fig.peak, fig.half_cells) == (pytest.approx(1 / 36, abs=1e-5), 18)
    fig.word_index = 1
    assert (fig.peak, fig.half_cells) == (0.4, 2)
    with pytest.raises(traitlets.TraitError, match=r"0\.\.1"):
        fig.word_index = 2
    data, _ = fig._repr_mimebundle_()
    assert FALLBACK_TEXT in data["text/html"]


def test_routes_positions_and_block_trace_figures_follow_their_references():
    from attention_course.book.figures import (BlockTraceFigure, PositionSimilarityFigure,
                                          PositionWavesFigure, RoutesFigure, pair_similarity, pair_wave)
    from attention_course.core.transformer import sinusoidal_positions
    from attention_course.notes.routes import route_lengths

    routes = RoutesFigure(distance=9, kernel=4)
    assert routes.steps == route_lengths(9, 4) == {"recurrent": 9, "convolution": 3, "self-attention": 1}
    with pytest.raises(traitlets.TraitError, match="kernel"):
        routes.kernel = 1

    waves = PositionWavesFigure(d=16, pair=7, position=3)
    P = sinusoidal_positions(64, 16).numpy()
    wave = pair_wave(16, 7, 3)
    assert wave["sin"] == pytest.approx(P[3, 14], abs=1e-6) and wave["cos"] == pytest.approx(P[3, 15], abs=1e-6)
    waves.d = 8                                          # pair 7 no longer exists: pulled back to 3
    assert waves.pair == 3 and waves.omega == pytest.approx(10000 ** (-6 / 8))
    with pytest.raises(ValueError, match="even d"):
        pair_wave(7, 0, 0)

    codes = {"a": np.arange(12.0).reshape(6, 2), "b": np.ones((6, 2))}
    sim = PositionSimilarityFigure(codes=codes, code="a", gap=2, position=1)
    expected = pair_similarity(codes["a"], 1, 2)
    assert expected == {"dot": 2 * 6 + 3 * 7, "min": 0 * 4 + 1 * 5, "max": 6 * 10 + 7 * 11}
    assert (sim.dot, sim.low, sim.high) == (expected["dot"], expected["min"], expected["max"])
    sim.gap = 5                                          # only pair (0, 5) remains: position pulled to 0
    assert sim.position == 0 and sim.dot == sim.low == sim.high == 0 * 10 + 1 * 11
    with pytest.raises(traitlets.TraitError, match="code must be one of"):
        sim.code = "c"

    trace = BlockTraceFigure(op=3, n=6, d=16, h=4, r=4)
    assert trace.name.startswith("S = Q K^T") and trace.shape == [4, 6, 6] and trace.mixes
    with pytest.raises(traitlets.TraitError, match="h must be one of"):
        trace.h = 3


def test_bpe_and_pattern_figures_follow_their_references():
    from attention_course.book.figures import BPEStepsFigure, PatternFigure
    from attention_course.notes.long_attention import pattern
    from attention_course.notes.tokens import tokenize_with, train_bpe

    text = "low low lower lowest"
    result = train_bpe(text, 100)
    fig = BPEStepsFigure(text, result, step=3)
    symbols = tokenize_with(text, result.merges[:3])
    assert (fig.tokens, fig.in_use) == (len(symbols), len(set(symbols))) == (11, 7)
    with pytest.raises(traitlets.TraitError, match="step must be in"):
        fig.step = len(result.merges) + 1
    pat = PatternFigure(kind="global", n=10, window=1, globals_=1)
    assert pat.pairs == int(pattern("global", 10, window=1, globals_=1).sum())
    pat.kind = "bigbird"
    assert pat.pairs == int(pattern("bigbird", 10, window=1, globals_=1, random_links=2, seed=0).sum())
    with pytest.raises(traitlets.TraitError, match="n must be in"):
        pat.n = 40


def test_alignment_readouts_and_validation():
    from attention_course.book.figures import AlignmentFigure, alignment_readouts

    A = np.array([[0.7, 0.2, 0.1], [0.6, 0.3, 0.1], [0.1, 0.1, 0.8]])   # row 1 peaks off the diagonal
    r = alignment_readouts(A, 1)
    assert (r["argmax"], r["offset"], r["max"]) == (0, 1, 0.6)
    assert (r["on_diagonal"], r["one_off"], r["further"]) == (2, 1, 0)
    fig = AlignmentFigure("abc", "abc", A, row=2)
    assert (fig.row_argmax, fig.row_offset) == (2, 0)
    fig.row = 1
    assert (fig.row_argmax, fig.row_offset) == (0, 1)
    assert fig.outputs == ["a", "b", "c"] and AlignmentFigure("a b", "a", [[1, 0, 0]]).inputs[1] == "␣"
    with pytest.raises(traitlets.TraitError, match=r"0\.\.2"):
        fig.row = 3
    with pytest.raises(ValueError, match=r"\(len\(copy\), len\(source\)\) = \(2, 3\)"):
        AlignmentFigure("abc", "ab", A)
    assert fig.static_svg().startswith(b"<?xml") and b"<svg" in fig.static_svg()


def test_reorder_figure_follows_a_token_through_x_q_k_v_o():
    from attention_course.book.figures import ORDERS, ReorderFigure, reorder_attention
    from attention_course.book.figures.reorder import reorder_setup

    setup = reorder_setup()
    start = reorder_attention(setup, ORDERS["A B C D"], False, False)["rows"]
    moved = reorder_attention(setup, ORDERS["D C B A"], False, False)["rows"]
    for name in "XQKVO":                                    # rows are by token: all kept
        np.testing.assert_allclose(moved[name], start[name], atol=1e-12)
    X = np.asarray(setup["X"])
    np.testing.assert_allclose(start["Q"], X @ np.asarray(setup["W_Q"]))
    placed = reorder_attention(setup, ORDERS["B A C D"], True, False)["rows"]
    np.testing.assert_allclose(placed["X"][1], X[1] + np.asarray(setup["P"])[0])  # B in slot 1
    fig = ReorderFigure(follow="C")
    with pytest.raises(traitlets.TraitError, match="follow must be one of"):
        fig.follow = "E"


def test_drawn_figures_compute_what_they_show():
    import torch

    from attention_course.book.diagrams import prenorm_block, qkv_overview

    rng = np.random.default_rng(0)
    X, W_Q, W_K, W_V, s = (rng.normal(size=shape) for shape in
                           ((3, 4), (4, 2), (4, 2), (4, 5), (4,)))
    fig, shown = qkv_overview(X, W_Q, W_K, W_V, s)
    q, K, V = s @ W_Q, X @ W_K, X @ W_V
    w = torch.softmax(torch.tensor(K @ q / np.sqrt(2)), 0).numpy()
    np.testing.assert_allclose(shown["weights"], w, rtol=1e-5)
    np.testing.assert_allclose(shown["output"], w @ V, rtol=1e-4, atol=1e-5)
    assert len(fig.axes) == 1 and len(prenorm_block().axes) == 1


def test_figure_8c_is_narrow_enough_for_a_phone():
    """A 375 px phone shows Figure 8.C's picture at no less than 85% of its size (its titles are
    10 pt, about 13 px), one panel under another: at 630 px wide they were about 6 px."""
    import re

    from attention_course.book.figures.bottleneck import small_multiples_svg

    svg = small_multiples_svg().decode()
    width, height = (float(re.search(rf'{side}="([\d.]+)pt"', svg)[1]) * 4 / 3   # CSS px
                     for side in ("width", "height"))
    assert width <= 375 / 0.85 and height > width * 0.8, (width, height)


def test_self_check_judges_choices_and_numbers_and_refuses_a_bad_question():
    from attention_course.book.figures.selfcheck import SelfCheck, parse_number, self_check

    choice = self_check("8.1.2")
    assert choice.judge(None)[0] == "invalid"
    verdicts = [choice.judge(i)[0] for i in range(len(choice.options))]
    assert verdicts.count("correct") == 1 and verdicts[1] == "correct"
    assert choice.judge(0)[1] == choice.options[0]["why"]
    number = self_check("8.1.1", per_digit=32 / 48, digits_per_number=48 / 32)
    assert [number.judge(r)[0] for r in ("0.667", "0,67", "2/3", "1.5", "0.1", "x", "")] == \
        ["correct", "correct", "correct", "wrong", "wrong", "invalid", "invalid"]
    assert "upside" in number.judge("1.5")[1] and number.judge("0.1")[1] == number.low
    assert number.judge("9")[1] == number.high and "0.67" in number.right
    assert parse_number(" 1e-3 ") == 0.001 and parse_number("1/0") != parse_number("1/0")
    printed = choice.static_html()
    assert "<ol type='a'>" in printed and "selfcheck-answer" in printed and " hidden>" in printed
    assert number.answer_text() == "0.6667"
    with pytest.raises(ValueError, match="one correct"):
        SelfCheck(number="x", prompt="?", explanation="!", options=[
            {"text": "a", "correct": True, "why": "w"}, {"text": "b", "correct": True, "why": "w"}])
    with pytest.raises(ValueError, match="accepted as the answer"):
        SelfCheck(number="x", kind="number", prompt="?", explanation="!", answer=1, tolerance=0.1,
                  right="r", low="l", high="h", mistakes=[{"value": 1.05, "why": "w"}])
