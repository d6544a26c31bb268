"""The interactive figures in the built book, with no kernel and no network.

Every control is moved with the keyboard (so it is also keyboard-operable); after each move the
numbers the page displays are compared with the Python reference.
"""
import pytest

from attention_course.book.figures import qkv_attention, softmax_peak_curves

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
    assert v.external == [] and v.console_problems() == []


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
    assert v.external == [] and v.console_problems() == []


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
    from attention_course.book.figures import ORDERS, reorder_attention
    from attention_course.book.figures.reorder import TOKENS, reorder_setup

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
            check_followed_rows(page, ref, TOKENS.index("A"))        # the token followed at first
            select.press("ArrowDown")
    follow = page.locator(".reorder-fig [data-control=follow]").first
    follow.select_option("D")
    now = reorder_attention(setup, ORDERS[select.input_value()], False, True)   # the last step's
    check_followed_rows(page, now, TOKENS.index("D"))
    assert v.external == [] and v.console_problems() == []


def check_followed_rows(page, ref, t):
    """The followed token's rows of X, Q, K, V and O, shown to two decimals."""
    for name in "XQKVO":
        for j, x in enumerate(ref["rows"][name][t]):
            shown = float(page.locator(f".reorder-fig [data-readout={name}-{j}]").first.inner_text())
            assert abs(shown - x) <= 6e-3, (name, t, j)


def test_bottleneck_figure_follows_every_control(visit, site):
    from attention_course.book.figures import bottleneck_steps

    v = visit(f"{site}/book/chapter8/bottleneck.html", "figure-8-1.png")
    page = v.page
    page.locator(".bottleneck-fig").wait_for(timeout=10_000)

    def check(n, width, step):
        ref = bottleneck_steps(n, width)[step]
        shown = readouts(page, ".bottleneck-fig", ["phase", "operation", "crossing", "per-symbol"])
        assert shown["phase"] == ref["phase"] and shown["operation"] == ref["text"], (n, width, step)
        assert int(shown["crossing"]) == ref["crossing"]
        assert abs(float(shown["per-symbol"]) - ref["per_symbol"]) <= 0.006

    for step in range(7):                                   # 4 2 7: read, read, read, cross, write...
        check(3, 16, step)
        press(page, ".bottleneck-fig [data-control=step]", "ArrowRight")
    check(3, 16, 6)                                         # the slider stops at the last step
    press(page, ".bottleneck-fig [data-control=n]", "ArrowRight", 5)       # n = 8, step kept
    check(8, 16, 6)
    press(page, ".bottleneck-fig [data-control=width]", "ArrowLeft", 8)    # d = 8
    check(8, 8, 6)
    press(page, ".bottleneck-fig [data-control=step]", "End")
    check(8, 8, 16)
    press(page, ".bottleneck-fig [data-control=n]", "Home")                # n = 1: step clamped
    check(1, 8, 2)
    assert v.external == [] and v.console_problems() == []


def test_caption_maps_figure_follows_every_control(visit, site):
    from attention_course.tasks.captioner import word_maps
    from attention_course.data.scenes import random_scenes
    from attention_course.book.figures import map_readouts
    from attention_course.tasks.pretrained import load_or_train

    maps = word_maps(load_or_train("captioner"), random_scenes(4, seed=2024)[0])   # as the page
    v = visit(f"{site}/book/chapter8/captioning.html", "figure-8-5.png")
    page = v.page
    page.locator(".caption-maps-fig").wait_for(timeout=10_000)
    press(page, ".caption-maps-fig [data-control=word]", "Home")
    for relative in (True, False):
        for i, m in enumerate(maps):
            ref = map_readouts(m["map"])
            shown = readouts(page, ".caption-maps-fig", ["word", "peak", "half-cells", "region", "cells"])
            assert shown["word"] == m["word"]
            assert shown["region"] == ref["region"], (i, shown["region"], ref["region"])
            first = ref["cells"][0]                      # the text equivalent names the cells
            assert shown["cells"].startswith(f"row {first // 6 + 1}, column {first % 6 + 1}")
            assert abs(float(shown["peak"]) - ref["peak"]) <= 6e-4, (i, relative)
            assert int(shown["half-cells"]) == ref["half_cells"], (i, relative)
            dashed = page.locator(".caption-maps-fig svg rect[stroke-dasharray]").count()
            assert dashed == ref["half_cells"]
            press(page, ".caption-maps-fig [data-control=word]", "ArrowRight")
        press(page, ".caption-maps-fig [data-control=word]", "Home")
        press(page, ".caption-maps-fig [data-control=relative]", "Space")
    assert v.external == [] and v.console_problems() == []


def test_alignment_figure_reads_every_row(visit, site):
    from attention_course.book.figures import alignment_readouts
    from attention_course.tasks.copy_model import SHOWCASE, alignment
    from attention_course.tasks.pretrained import load_or_train

    copy, A = alignment(load_or_train("copy-w16"), SHOWCASE)          # as the page computes it
    A = A.round(4)                                                    # as the figure stores it
    v = visit(f"{site}/book/chapter8/attention-over-states.html", "figure-8-2.png")
    page = v.page
    page.locator(".alignment-fig").wait_for(timeout=10_000)
    press(page, ".alignment-fig [data-control=row]", "Home")
    for t in range(len(copy)):
        ref = alignment_readouts(A, t)
        shown = readouts(page, ".alignment-fig", ["max", "argmax", "where", "on-diagonal",
                                                  "one-off", "further"])
        assert abs(float(shown["max"]) - ref["max"]) <= 6e-4, t
        assert int(shown["argmax"]) == ref["argmax"] + 1, t               # shown 1-based
        assert ("on the diagonal" in shown["where"]) == (ref["offset"] == 0), t
        assert [int(shown[k]) for k in ("on-diagonal", "one-off", "further")] == \
            [ref["on_diagonal"], ref["one_off"], ref["further"]]
        press(page, ".alignment-fig [data-control=row]", "ArrowRight")
    page.locator(".alignment-fig svg rect").nth(7 * A.shape[1] + 3).click()   # a cell of row 8
    assert page.locator(".alignment-fig [data-readout=row-value]").inner_text().startswith("8:")
    assert v.external == [] and v.console_problems() == []


def test_routes_figure_follows_every_control(visit, site):
    from attention_course.notes.routes import route_lengths

    v = visit(f"{site}/book/chapter8/self-attention.html", "figure-8-9.png")
    page = v.page
    page.locator(".routes-fig").wait_for(timeout=10_000)

    def check(distance, kernel):
        for kind, steps in route_lengths(distance, kernel).items():
            shown = page.locator(f".routes-fig [data-readout=steps-{kind}]").first.inner_text()
            assert int(shown) == steps, (distance, kernel, kind)

    check(8, 3)
    press(page, ".routes-fig [data-control=distance]", "End")
    check(24, 3)
    for kernel in range(4, 10):
        press(page, ".routes-fig [data-control=kernel]", "ArrowRight")
        check(24, kernel)
    press(page, ".routes-fig [data-control=distance]", "Home")
    check(1, 9)
    assert v.external == [] and v.console_problems() == []


def test_position_figures_follow_every_control(visit, site):
    from attention_course.book.figures import pair_similarity, pair_wave, position_codes

    v = visit(f"{site}/book/chapter8/positions.html", "figures-8-11-8-12.png")
    page = v.page
    page.locator(".position-waves-fig").wait_for(timeout=10_000)

    def check_wave(d, pair, position):
        ref = pair_wave(d, pair, position)
        shown = readouts(page, ".position-waves-fig", ["omega", "wavelength", "sin", "cos", "ratio"])
        assert float(shown["omega"]) == pytest.approx(ref["omega"], rel=1e-3)
        assert float(shown["wavelength"]) == pytest.approx(ref["wavelength"], abs=0.06)
        for key in ("sin", "cos"):
            assert abs(float(shown[key]) - ref[key]) <= 6e-4, (d, pair, position, key)
        assert float(shown["ratio"]) == pytest.approx(ref["ratio"], abs=6e-4)

    check_wave(32, 0, 5)
    press(page, ".position-waves-fig [data-control=pair]", "End")
    check_wave(32, 15, 5)
    press(page, ".position-waves-fig [data-control=d]", "ArrowLeft", 2)     # d = 16: pair 15 -> 7
    check_wave(16, 7, 5)
    press(page, ".position-waves-fig [data-control=position]", "ArrowRight", 20)
    check_wave(16, 7, 25)

    codes = position_codes()                                                # what the page shows
    root = ".position-similarity-fig"
    select = page.locator(f"{root} [data-control=code]").first
    for name in codes:
        select.select_option(name)
        for gap, position in ((5, 10), (6, 10), (63, 0)):
            if gap == 6:
                press(page, f"{root} [data-control=gap]", "ArrowRight")
            if gap == 63:
                press(page, f"{root} [data-control=gap]", "End")
            ref = pair_similarity(codes[name], position, gap)
            shown = readouts(page, root, ["dot"])
            assert abs(float(shown["dot"]) - ref["dot"]) <= 2e-3, (name, gap)
            reading = page.locator(f"{root} p").last.inner_text()
            if gap == 63:                                # one pair: no range to state
                assert reading.endswith("the only pair 63 apart."), reading
            elif f"{ref['min']:.3f}" == f"{ref['max']:.3f}":       # never "from x to x"
                assert "depends on the gap alone" in reading, reading
            else:
                shown = readouts(page, root, ["low", "high"])
                assert abs(float(shown["low"]) - ref["min"]) <= 2e-3
                assert abs(float(shown["high"]) - ref["max"]) <= 2e-3
        press(page, f"{root} [data-control=gap]", "Home")
        press(page, f"{root} [data-control=gap]", "ArrowRight", 5)
        press(page, f"{root} [data-control=position]", "Home")
        press(page, f"{root} [data-control=position]", "ArrowRight", 10)
    assert v.external == [] and v.console_problems() == []


def test_block_trace_figure_follows_every_control(visit, site):
    from attention_course.notes.block_cost import block_trace

    v = visit(f"{site}/book/chapter8/transformer-block.html", "figures-8-13-8-14.png")
    page = v.page
    root = ".block-trace-fig"
    page.locator(root).wait_for(timeout=10_000)

    def check(n, d, h, r):
        trace, doubled = block_trace(n, d, h, r), block_trace(2 * n, d, h, r)
        press(page, f"{root} [data-control=op]", "Home")
        for i, step in enumerate(trace):
            shown = readouts(page, root, ["op", "shape", "mixes", "flops", "ratio"])
            assert shown["op"] == step["name"]
            assert shown["shape"] == " × ".join(map(str, step["shape"]))
            assert shown["mixes"].startswith("Mixes") == step["mixes"]
            assert int(shown["flops"].replace(",", "")) == step["flops"]
            if step["flops"]:
                assert float(shown["ratio"]) == doubled[i]["flops"] / step["flops"]
            press(page, f"{root} [data-control=op]", "ArrowRight")

    check(7, 16, 4, 4)
    press(page, f"{root} [data-control=n]", "ArrowRight")       # N = 8
    press(page, f"{root} [data-control=d]", "ArrowRight")       # d = 24
    press(page, f"{root} [data-control=h]", "ArrowRight")       # h = 8
    press(page, f"{root} [data-control=r]", "ArrowLeft")        # r = 3
    check(8, 24, 8, 3)
    assert v.external == [] and v.console_problems() == []


def test_bpe_figure_follows_its_slider(visit, site):
    from attention_course.data.text import TEXT_DIR
    from attention_course.notes.tokens import tokenize_with, train_bpe

    lines = (TEXT_DIR / "diner_review.txt").read_text().splitlines()
    review = " ".join(l for l in lines if not l.startswith("#")).lower()        # as the page
    merges = train_bpe(review, vocab_size=400).merges
    v = visit(f"{site}/book/chapter12/tokens.html", "figure-bpe.png")
    page = v.page
    page.locator(".bpe-steps-fig").wait_for(timeout=10_000)
    press(page, ".bpe-steps-fig [data-control=step]", "Home")
    for k in range(0, len(merges) + 1):
        if k % 7 == 0 or k == len(merges):
            symbols = tokenize_with(review, merges[:k])
            shown = readouts(page, ".bpe-steps-fig", ["tokens", "in-use"])
            assert (int(shown["tokens"]), int(shown["in-use"])) == (len(symbols), len(set(symbols))), k
        press(page, ".bpe-steps-fig [data-control=step]", "ArrowRight")
    assert v.external == [] and v.console_problems() == []


def test_pattern_figure_follows_every_control(visit, site):
    from attention_course.notes.long_attention import PATTERNS, pattern

    v = visit(f"{site}/book/chapter12/long-sequences.html", "figure-patterns.png")
    page = v.page
    root = ".patterns-fig"
    page.locator(root).wait_for(timeout=10_000)
    select = page.locator(f"{root} [data-control=kind]").first
    settings = [(24, 2, 3, 2), (17, 1, 2, 0), (32, 4, 5, 3)]
    state = {"n": 24, "window": 2, "dilation": 3, "globals": 2}
    # a slider a pattern does not use is switched off, and says so
    select.select_option("local")
    for name in ("dilation", "globals"):
        assert page.locator(f"{root} [data-control={name}]").first.is_disabled()
        assert "not used by the local pattern" in page.locator(f"{root} #{page.locator(f'{root} [data-control={name}]').first.get_attribute('aria-describedby')}").inner_text()
    uses = {"n": "local", "window": "local", "dilation": "dilated", "globals": "global"}
    for n, window, dilation, globals_ in settings:
        for name, value in (("n", n), ("window", window), ("dilation", dilation), ("globals", globals_)):
            select.select_option(uses[name])                   # a pattern that uses the slider
            key = "ArrowRight" if value > state[name] else "ArrowLeft"
            press(page, f"{root} [data-control={name}]", key, abs(value - state[name]))
            state[name] = value
        for kind in PATTERNS:
            select.select_option(kind)
            expected = int(pattern(kind, n, window=window, dilation=dilation, globals_=globals_,
                                   random_links=2, seed=0).sum())
            assert int(readouts(page, root, ["pairs"])["pairs"]) == expected, (kind, n, window, dilation, globals_)
    assert v.external == [] and v.console_problems() == []


@pytest.mark.parametrize("width", [1280, 375])
def test_bpe_token_strip_wraps_inside_its_box(visit, site, width):
    v = visit(f"{site}/book/chapter12/tokens.html", f"figure-bpe-{width}.png", width=width)
    strip = v.page.locator(".bpe-steps-fig [data-readout=strip]").first
    strip.wait_for(timeout=10_000)
    sizes = strip.evaluate("e => [e.scrollWidth, e.clientWidth, e.getBoundingClientRect().height,"
                           " e.closest('.course-fig').scrollWidth, e.closest('.course-fig').clientWidth]")
    strip_scroll, strip_width, strip_height, box_scroll, box_width = sizes
    assert strip_scroll <= strip_width + 1 and box_scroll <= box_width + 1, sizes
    assert strip_height > 100, sizes                 # many lines, not one clipped line


def test_context_width_figure_shows_the_falling_ratio(visit, site):
    """Chapter 8's opening figure: d / n read out and drawn, for every n at two widths."""
    from attention_course.book.figures import numbers_per_symbol

    v = visit(f"{site}/book/chapter8/index.html", "figure-8-context-width.png")
    page = v.page
    root = ".context-width-fig"
    page.locator(root).wait_for(timeout=10_000)
    press(page, f"{root} [data-control=width]", "Home")                   # d = 4
    for width in (4, 8):
        press(page, f"{root} [data-control=n]", "Home")
        shown = []
        for n in range(1, 65):
            shown.append(float(readouts(page, root, ["per-symbol"])["per-symbol"]))
            assert abs(shown[-1] - numbers_per_symbol(width, n)) <= 0.006, (width, n)
            press(page, f"{root} [data-control=n]", "ArrowRight")
        assert shown == sorted(shown, reverse=True) and shown[0] == width   # it falls as n grows
        press(page, f"{root} [data-control=width]", "ArrowRight")        # d += 4
    assert page.locator(f"{root} circle").count() == 1
    assert v.external == [] and v.console_problems() == []


def test_bottleneck_crossing_follows_the_context_width(visit, site):
    """Figure 8.1: the crossing is drawn as wide as the context, and clear of the decoder label."""
    v = visit(f"{site}/book/chapter8/bottleneck.html", "figure-8-1-crossing.png")
    page = v.page
    root = ".bottleneck-fig"
    page.locator(root).wait_for(timeout=10_000)
    press(page, f"{root} [data-control=step]", "End")                    # past the crossing
    line = page.locator(f"{root} [data-readout=crossing-line]").first
    widths = []
    for key in ("Home", "End"):                                          # d = 1, then d = 64
        press(page, f"{root} [data-control=width]", key)
        widths.append(float(line.get_attribute("stroke-width")))
    assert widths[0] < widths[1]
    label = page.locator(f"{root} text", has_text="decoder").first.bounding_box()
    crossing = line.bounding_box()
    apart = (label["x"] > crossing["x"] + crossing["width"] or label["y"] > crossing["y"] + crossing["height"]
             or label["x"] + label["width"] < crossing["x"] or label["y"] + label["height"] < crossing["y"])
    assert apart, (label, crossing)
    assert v.external == [] and v.console_problems() == []

