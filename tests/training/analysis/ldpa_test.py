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
