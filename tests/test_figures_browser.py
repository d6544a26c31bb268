"""The interactive figures in the built book, with no kernel and no network.

Every control is moved with the keyboard (so it is also keyboard-operable); after each move the
numbers the page displays are compared with the Python reference.
"""
import pytest

from attention_course.figures import qkv_attention, softmax_peak_curves

pytestmark = [pytest.mark.slow, pytest.mark.browser]
PAGE = "book/chapter8/queries-keys-values.html"


def readouts(page, root, names):
    return {n: page.locator(f"{root} [data-readout={n}]").first.inner_text() for n in names}


def check_qkv(page, angle, length, scaled):
    shown = readouts(page, ".qkv-fig", [f"weight-{i}" for i in range(4)] + ["output-rgb"])
    ref = qkv_attention(angle, length, scaled)
    for i, w in enumerate(ref["weights"]):
        assert abs(float(shown[f"weight-{i}"]) - w) <= 6e-4, (angle, length, scaled, i)
    rgb = [float(x) for x in shown["output-rgb"].split(",")]
    assert max(abs(a - b) for a, b in zip(rgb, ref["output"])) <= 6e-4


def press(page, selector, key, times=1):
    control = page.locator(selector).first
    control.focus()
    for _ in range(times):
        control.press(key)


@pytest.mark.parametrize("scheme", ["http", "file"])
def test_qkv_explorer_follows_every_control(visit, site, built_book, scheme):
    base = site if scheme == "http" else built_book.as_uri()
    v = visit(f"{base}/{PAGE}", f"figure-8-7-{scheme}.png")
    page = v.page
    page.locator(".qkv-fig").wait_for(timeout=10_000)
    check_qkv(page, 20, 1.0, True)
    press(page, ".qkv-fig [data-control=angle]", "ArrowRight", 25)          # turn the query
    check_qkv(page, 45, 1.0, True)
    press(page, ".qkv-fig [data-control=length]", "ArrowRight", 20)         # lengthen it
    check_qkv(page, 45, 3.0, True)
    press(page, ".qkv-fig [data-control=scaled]", "Space")                  # scaling off
    check_qkv(page, 45, 3.0, False)
    press(page, ".qkv-fig [data-control=angle]", "End")
    check_qkv(page, 359, 3.0, False)
    assert v.external == [] and v.real_errors() == []


def test_softmax_peak_figure_follows_every_control(visit, site):
    curves = softmax_peak_curves(n_keys=16, draws=500, seed=0)     # what the page computes
    v = visit(f"{site}/{PAGE}", "figure-8-8.png")
    page = v.page
    page.locator(".softmax-peak-fig").wait_for(timeout=10_000)
    press(page, ".softmax-peak-fig [data-control=dk]", "Home")
    for scaled in (False, True):
        for average in (True, False):
            key = f"{'mean' if average else 'one'}_{'scaled' if scaled else 'unscaled'}"
            press(page, ".softmax-peak-fig [data-control=dk]", "Home")
            for i in range(len(curves["dks"])):
                shown = float(readouts(page, ".softmax-peak-fig", ["peak"])["peak"])
                assert abs(shown - curves[key][i]) <= 6e-4, (key, curves["dks"][i])
                press(page, ".softmax-peak-fig [data-control=dk]", "ArrowRight")
            press(page, ".softmax-peak-fig [data-control=average]", "Space")
        press(page, ".softmax-peak-fig [data-control=scaled]", "Space")
    assert v.external == [] and v.real_errors() == []


def test_controls_are_labelled_and_figures_fit_a_phone(visit, site):
    v = visit(f"{site}/{PAGE}", "figures-phone.png", width=375)
    page = v.page
    page.locator(".softmax-peak-fig").wait_for(timeout=10_000)
    unlabelled = page.evaluate(
        "[...document.querySelectorAll('.course-fig input')].filter(i => i.labels.length === 0).length")
    assert unlabelled == 0
    widths = page.evaluate("[...document.querySelectorAll('.course-fig')].map(f => f.getBoundingClientRect().right)")
    assert widths and max(widths) <= 375
    assert page.evaluate("document.querySelector('.course-fig').scrollWidth <= document.querySelector('.course-fig').clientWidth")


def test_reorder_figure_follows_every_control(visit, site):
    from attention_course.figures import ORDERS, reorder_attention
    from attention_course.figures.reorder import TOKENS, reorder_setup

    setup = reorder_setup()
    v = visit(f"{site}/book/chapter8/self-attention.html", "figure-8-10.png")
    page = v.page
    page.locator(".reorder-fig").wait_for(timeout=10_000)
    select = page.locator(".reorder-fig [data-control=order]").first
    # (state to check, check boxes to toggle first)
    steps = [((False, False), []), ((True, False), ["positions"]),
             ((False, True), ["positions", "causal"])]
    for (positions, causal), toggles in steps:
        for box in toggles:
            page.locator(f".reorder-fig [data-control={box}]").first.press("Space")
        select.focus()
        select.press("Home")
        for name, order in ORDERS.items():
            assert select.input_value() == name
            ref = reorder_attention(setup, order, positions, causal)
            for i in range(4):
                for j in range(4):
                    shown = float(page.locator(f".reorder-fig [data-readout=A-{i}-{j}]").first.inner_text())
                    assert abs(shown - ref["A"][i, j]) <= 6e-4, (name, positions, causal, i, j)
            for t, token in enumerate(TOKENS):
                shown = float(page.locator(f".reorder-fig [data-readout=change-{token}]").first.inner_text())
                assert abs(shown - ref["change"][t]) <= 6e-4, (name, positions, causal, token)
            select.press("ArrowDown")
    assert v.external == [] and v.real_errors() == []
