"""The common figure setup of the analyses: matplotlib on the Agg backend.

Every figure has a title, labelled axes (with units) and a legend, and is
sized to stay readable when shown at README width (about 700 pixels). The
numbers behind a figure are written beside its PNG by the caller
(`write_table`, `runs.write_json`), in an output folder that
`check_out_dir` checks before anything runs and `make_out_dir` creates once
the inputs have passed their checks.
"""

import csv
import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # no display: figures are only written to files

import matplotlib.pyplot as plt  # noqa: E402

from training.core.out_dirs import check_out_dir  # noqa: E402, F401 (its API too)

DPI = 100
WIDTH = 7.0  # inches: 700 pixels at DPI
FONT_SIZE = 10


def figure(
    title,
    xlabel=None,
    ylabel=None,
    height=4.0,
    width=WIDTH,
    source=None,
    rows=1,
    height_ratios=None,
):
    """Returns `(figure, axes)` with the title, axis labels and a source note.

    Args:
        title: The figure's title (over all panels when `rows > 1`).
        xlabel, ylabel: Axis labels with units, e.g. `"loss (bits/char)"`,
            set on the single panel (with `rows > 1` the caller labels them).
        height, width: Size in inches (100 pixels each).
        source: A note set small under the axes, e.g. the paper's numbers.
        rows: Number of panels stacked vertically; with more than one,
            `axes` is a list.
        height_ratios: Relative panel heights when `rows > 1`.
    """
    plt.rcParams.update({"font.size": FONT_SIZE})
    fig, axes = plt.subplots(
        rows,
        1,
        figsize=(width, height),
        dpi=DPI,
        layout="constrained",
        squeeze=False,
        height_ratios=height_ratios,
    )
    axes = list(axes[:, 0])
    # Wrapped at the figure's edges: a long title (a run's name in it) would
    # otherwise run off the figure, centred over an axes a legend narrows.
    if rows == 1:
        axes = axes[0]
        axes.set_title(title, wrap=True)
        if xlabel:
            axes.set_xlabel(xlabel)
        if ylabel:
            axes.set_ylabel(ylabel)
    else:
        fig.suptitle(title, wrap=True)
    if source:
        fig.get_layout_engine().set(rect=(0, 0.06, 1, 0.94))
        fig.text(0.01, 0.01, source, fontsize=FONT_SIZE - 2, ha="left", va="bottom")
    return fig, axes


def label_positions(ax, labels, fontsize=7, gap=4.0):
    """Writes `labels` under the x positions 0, 1, ... of `ax`, as many as fit.

    A mark longer than two characters (`START`, `<eos>`) stands upright, as
    in the routing figure; then every n-th label is written, n the smallest
    at which no two labels come closer than `gap` points (a character's
    width tells neighbours apart), measured at the axes' laid-out width, so
    any font, mark or string length fits. Call it once the figure is
    complete (colour bar included). Returns n.
    """
    fig = ax.get_figure(root=True)
    fig.draw_without_rendering()  # the layout: the axes' width in pixels
    renderer = fig.canvas.get_renderer()
    rotations = [90 if len(label) > 2 else 0 for label in labels]
    widths = []
    for label, rotation in zip(labels, rotations, strict=True):
        text = fig.text(0, 0, label, fontsize=fontsize, rotation=rotation)
        widths.append(text.get_window_extent(renderer).width)
        text.remove()
    low, high = ax.get_xlim()
    per_position = ax.get_window_extent(renderer).width / abs(high - low)
    gap = gap * fig.dpi / 72  # points to pixels
    every = 1
    while any(
        (widths[i] + widths[i + every]) / 2 + gap > every * per_position
        for i in range(0, len(labels) - every, every)
    ):
        every += 1
    shown = range(0, len(labels), every)
    ax.set_xticks(shown)
    ax.set_xticklabels([labels[i] for i in shown], fontsize=fontsize)
    for tick, i in zip(ax.get_xticklabels(), shown, strict=True):
        tick.set_rotation(rotations[i])
    return every


def save(fig, path):
    """Writes `fig` as a PNG at `path` (folders created) and closes it."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return path


def file_name(stem, suffix=""):
    """`stem` made safe as a file name on any system, then `suffix`.

    Each run of characters other than letters, digits, `_`, `.` and `-`
    becomes one `-`: `file_name("routing-preset:NAME", ".csv")` is
    `routing-preset-NAME.csv` (no ':', which Windows and macOS refuse).
    """
    return re.sub(r"[^\w.-]+", "-", stem) + suffix


def write_table(path, rows):
    """Writes `rows` (a list of dicts with the same keys) as CSV at `path`."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]) if rows else [])
        writer.writeheader()
        writer.writerows(rows)
    return path


def make_out_dir(path, option="--out"):
    """Creates the folder `path` (see `check_out_dir`); one-line `ValueError`s."""
    path = check_out_dir(path, option)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise ValueError(
            f"{option} {str(path)!r} cannot be created ({error.strerror}); "
            "expected a folder you can write."
        ) from None
    return path
