"""Per-epoch curves of runs (the second-order report's Figure 3).

A run directory, or a run's record in `results/`, holds its per-epoch log
(`log.csv`, read with `training.reproduction.history.read_log`); these functions draw
one of its columns against the epoch, one line per run, coloured by row
(the run's folder's parent: `results/TABLE/ROW/seed-N`). Figure 3 is
`val_wcpa` of the `so_dyck` rows' seeds, which the Dyck tasks log since
issue 25: a log from before has no such column, and `read_curves` names it
instead of drawing it.

`analyze_curves` draws them from run directories or records and writes
`curves.png` and `curves.csv` (`python -m training.analyze curves`, which
prints `report_lines`).
"""

from pathlib import Path

from training.analysis.run_inputs import run_names
from training.core import plots
from training.reproduction import history

# Axis labels with units of the columns a run logs.
LABELS = {
    "val_wcpa": "validation WCPA (fraction)",
    "val_mean_ldpa": "validation mean LDPA (fraction)",
    # Keras's loss: the mean over every position, padding (weight 0) included.
    "val_loss": "validation loss (nats per position)",
    "loss": "training loss (nats per position)",
}


def read_curves(folders, names, column):
    """The curve of `column` of each folder's log.csv.

    Args:
        folders: run directories or records, each holding a log.csv.
        names: a short name for each (its label and CSV key).
        column: a column of the logs, e.g. `"val_wcpa"`.

    Returns:
        `(curves, lacking)`: `{name: (row, [epoch from 1], [value])}` of the
        folders whose log has the column (its epochs that logged a finite
        value), and the folders whose log has not, or holds no finite value
        in it (NaN or NA in every epoch).

    Raises:
        ValueError: a log.csv that is missing or not a run's (one line).
    """
    curves, lacking = {}, []
    for folder, name in zip(folders, names, strict=True):
        path = Path(folder) / "log.csv"
        if not path.is_file():
            raise ValueError(
                f"{str(folder)!r} has no log.csv; expected a run directory or a "
                "record in results/ (python -m training.reproduce writes both)."
            )
        log = history.read_log(path)
        points = [
            (i + 1, v) for i, v in enumerate(log.get(column, [])) if v is not None
        ]
        if not points:
            lacking.append(folder)
            continue
        curves[name] = (
            Path(folder).resolve().parent.name,
            [epoch for epoch, _ in points],
            [value for _, value in points],
        )
    return curves, lacking


def table_rows(curves, column):
    """CSV rows: run, row, epoch and the column's value."""
    return [
        {"run": name, "row": row, "epoch": epoch, column: value}
        for name, (row, epochs, values) in curves.items()
        for epoch, value in zip(epochs, values, strict=True)
    ]


def plot(curves, path, column, title=None):
    """`column` against the epoch, a line per run, one colour per row."""
    label = LABELS.get(column, column)
    fig, ax = plots.figure(
        title or f"{label[0].upper()}{label[1:].split(' (')[0]} per epoch",
        "epoch (passes over the training data)",
        label,
    )
    rows = list(dict.fromkeys(row for row, _, _ in curves.values()))
    styles = ("-", "--", ":", "-.")
    seen = dict.fromkeys(rows, 0)
    for name, (row, epochs, values) in curves.items():
        ax.plot(
            epochs,
            values,
            color=f"C{rows.index(row) % 10}",
            linestyle=styles[seen[row] % len(styles)],
            marker="." if len(epochs) <= 40 else None,
            label=name,
        )
        seen[row] += 1
    if column in ("val_wcpa", "val_mean_ldpa"):
        ax.set_ylim(-0.02, 1.02)
    ax.legend()
    return plots.save(fig, path)


def analyze_curves(run_dirs, out, column="val_wcpa"):
    """Writes `curves.png` and `curves.csv`; returns the curves and the
    folders whose log has no `column` (left out; an error if all are)."""
    found, lacking = read_curves(run_dirs, run_names(run_dirs), column)
    if not found:
        listed = ", ".join(map(str, lacking))
        raise ValueError(
            f"no per-epoch {column} in any of these records ({listed}): they were "
            "trained before it was logged, or it is NaN in every epoch; expected "
            "runs that logged a number for it (the Dyck "
            "tasks log val_wcpa since issue 25: train these again)."
        )
    plots.make_out_dir(out)
    plot(found, out / "curves.png", column)
    plots.write_table(out / "curves.csv", table_rows(found, column))
    return found, lacking


def report_lines(found, lacking, column):
    """What `python -m training.analyze curves` prints: each folder left out,
    then each curve's epochs, first and last value and maximum."""
    lines = [
        f"{folder}: no per-epoch {column} in this record (trained before it was "
        "logged, or NaN in every epoch); left out"
        for folder in lacking
    ]
    for name, (_, epochs, values) in found.items():
        lines.append(
            f"{name}: {len(epochs)} epochs, {column} "
            f"{values[0]:.4g} -> {values[-1]:.4g} (max {max(values):.4g})"
        )
    return lines
