import pytest

from training.analysis import ldpa

METRICS = {
    "wcpa": 0.5,
    "ldpa": {"10": 0.5, "2": 1.0, "4": 0.75},
    "ldpa_counts": {"10": 2, "2": 8, "4": 4},
}


def test_curve_is_sorted_by_distance_and_tabled():
    assert ldpa.curve(METRICS) == ([2, 4, 10], [1.0, 0.75, 0.5], [8, 4, 2])
    rows = ldpa.table_rows({"lstm": METRICS})
    assert rows[0] == {"run": "lstm", "distance": 2, "ldpa": 1.0, "positions": 8}


def test_plot_writes_a_png(tmp_path):
    assert ldpa.plot({"a": METRICS, "b": METRICS}, tmp_path / "ldpa.png").is_file()


def test_metrics_without_ldpa_are_refused():
    with pytest.raises(ValueError, match="needs a Dyck run"):
        ldpa.curve({"perplexity": 3.0})


def test_plot_draws_the_oracle_at_one(tmp_path, monkeypatch):
    figures = []
    monkeypatch.setattr(
        ldpa.plots, "save", lambda fig, path: figures.append(fig) or path
    )
    ldpa.plot({"a": METRICS}, tmp_path / "ldpa.png")
    lines = figures[0].axes[0].get_lines()
    oracle = [line for line in lines if line.get_label().startswith("oracle")]
    assert len(oracle) == 1 and set(oracle[0].get_ydata()) == {1.0}
