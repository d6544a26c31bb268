"""Results and attention-map figures."""
import matplotlib

matplotlib.use("Agg")
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from attention_course.book.plots import plot_attention_map, plot_results_by_length  # noqa: E402


def test_results_figure_has_both_panels_and_every_reader():
    table = {n: {"exact": 1 - n / 20, "cer": n / 100} for n in range(1, 17)}
    fig = plot_results_by_length({"a": table, "b": table}, floor=0.01)
    exact, cer = fig.axes
    assert len(exact.lines) == 2 and len(cer.lines) == 3            # two readers + the floor
    assert list(exact.lines[0].get_xdata()) == list(range(1, 17))


def test_attention_map_marks_digits_and_labels_rows():
    weights = np.eye(4, 30)
    ax = plot_attention_map(weights, [(2, 9), (10, 17), (19, 26)], "427", "427")
    assert len(ax.lines) == 6                                        # start and end of 3 digits
    assert [t.get_text() for t in ax.get_yticklabels()] == ["4", "2", "7", "<eos>"]
    assert "correct" in ax.get_title()
    with pytest.raises(ValueError, match=r"\(T, N\)"):
        plot_attention_map(np.zeros(5), [], "1", "1")
