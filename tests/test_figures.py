"""The figure toolkit in Python: reference math, read-outs that follow controls, fallbacks."""
import numpy as np
import pytest
import traitlets

from attention_course.figures import (
    DEFAULT_KEYS, DEFAULT_VALUES, QKVExplorer, SoftmaxPeakFigure, qkv_attention, softmax_peak_curves)
from attention_course.figures.base import FALLBACK_TEXT, bundle_module


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
    assert FALLBACK_TEXT in data["text/html"] and "data:image/png;base64," in data["text/html"]
    assert FALLBACK_TEXT in data["text/plain"]


def test_bundled_modules_are_self_contained():
    for name in ("qkv", "softmax_peak"):
        module = bundle_module(name)
        assert "import " not in module and "export default" in module
        assert len(module.encode()) < 20_000


def test_reorder_reference_equivariance_and_masks():
    from attention_course.figures import ORDERS, ReorderFigure, reorder_attention
    from attention_course.figures.reorder import reorder_setup

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
