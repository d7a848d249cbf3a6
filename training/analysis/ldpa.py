"""Accuracy against closing distance on Dyck (the second-order report, Figure 2).

LDPA at distance `d` is the accuracy of the closing bracket's type over the
positions whose bracket closes one opened `d` tokens before
(`training.metrics.closing_bracket_accuracy`); the Dyck tasks' `evaluate`
returns it as `"ldpa"` and `"ldpa_counts"`, keyed by distance.
"""

from training import plots


def curve(metrics):
    """`(distances, ldpa, counts)` lists from a Dyck evaluation, by distance.

    Raises:
        ValueError: `metrics` has no LDPA (not a Dyck run's evaluation).
    """
    if "ldpa" not in metrics or "ldpa_counts" not in metrics:
        raise ValueError(
            "LDPA needs a Dyck run (task kind dyck or closing_bracket); this run's "
            f"evaluation has no LDPA (its metrics: {', '.join(sorted(metrics))})."
        )
    distances = sorted(int(d) for d in metrics["ldpa"])
    return (
        distances,
        [metrics["ldpa"][str(d)] for d in distances],
        [metrics["ldpa_counts"][str(d)] for d in distances],
    )


def table_rows(metrics_by_label):
    """CSV rows: run, distance, ldpa, positions."""
    rows = []
    for label, metrics in metrics_by_label.items():
        for distance, value, count in zip(*curve(metrics), strict=True):
            rows.append(
                {"run": label, "distance": distance, "ldpa": value, "positions": count}
            )
    return rows


def plot(metrics_by_label, path, title="Accuracy by closing distance (LDPA)"):
    """LDPA against closing distance, one line per run."""
    fig, ax = plots.figure(title, "closing distance (tokens)", "LDPA (accuracy)")
    for label, metrics in metrics_by_label.items():
        distances, values, _ = curve(metrics)
        ax.plot(
            distances, values, marker=".", label=f"{label} (WCPA {metrics['wcpa']:.3f})"
        )
    ax.set_ylim(-0.02, 1.02)
    ax.legend()
    return plots.save(fig, path)
