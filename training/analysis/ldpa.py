"""Accuracy against closing distance on Dyck (the second-order report, Figure 2).

LDPA at distance `d` is the accuracy of the closing bracket's type over the
positions whose bracket closes one opened `d` tokens before
(`training.core.metrics.closing_bracket_accuracy`); the Dyck tasks' `evaluate`
returns it as `"ldpa"` and `"ldpa_counts"`, keyed by distance.

`analyze_ldpa` evaluates run directories and writes `ldpa.png` and
`ldpa.csv` (`python -m training.analyze ldpa`, which prints
`report_lines`).
"""

from training.analysis.run_inputs import check_kind, check_split, run_label, run_names
from training.core import plots
from training.runs import runs


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
    """LDPA against closing distance, one line per run, and the oracle's.

    The generator's own next-token distribution (`dyck_oracle`) gives the
    matching bracket all of the closing mass, so its LDPA is 1 at every
    distance (its WCPA too): the dashed line.
    """
    fig, ax = plots.figure(title, "closing distance (tokens)", "LDPA (accuracy)")
    ax.axhline(1.0, color="grey", linestyle="--", label="oracle (the generator): 1")
    for label, metrics in metrics_by_label.items():
        distances, values, _ = curve(metrics)
        ax.plot(
            distances, values, marker=".", label=f"{label} (WCPA {metrics['wcpa']:.3f})"
        )
    ax.set_ylim(-0.02, 1.02)
    ax.legend()
    return plots.save(fig, path)


def analyze_ldpa(run_dirs, out, split):
    """Writes `ldpa.png` and `ldpa.csv` of Dyck runs on `split`; returns
    `{run label: metrics}`."""
    metrics = {}
    for run_dir, name in zip(run_dirs, run_names(run_dirs), strict=True):
        run = runs.load_run(run_dir)
        check_kind(run.recipe, ("dyck", "closing_bracket"), "ldpa", run_dir)
        check_split(run.task, split)
        metrics[run_label(name, run.recipe)] = run.task.evaluate(run.model, split)
    plots.make_out_dir(out)
    plot(metrics, out / "ldpa.png")
    plots.write_table(out / "ldpa.csv", table_rows(metrics))
    return metrics


def report_lines(metrics):
    """What `python -m training.analyze ldpa` prints: each run's WCPA."""
    return [f"{label}: WCPA {values['wcpa']:.4f}" for label, values in metrics.items()]
