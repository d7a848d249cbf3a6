"""Principal angles between the subspaces of transition matrices (PABS).

The second-order LSTM report (section 5, Figures 4-5) compares the cells'
hidden-to-hidden transition matrices by the principal angles between the
subspaces they span: all angles above zero mean the subspaces meet only in
zero, so the cells differ.

Which subspace:
- second-order LSTM: cell `s`'s recurrent kernel maps `h` (units) to its four
  gates' pre-activations (`4 * units`); its range is a `units`-dimensional
  subspace of R^(4 units), compared whole.
- mmRNN / mmLSTM: each choice matrix `W[i]` is square (`units x units`); a
  full-rank square matrix spans all of R^units, so its range gives 0 degrees
  for any pair. For square matrices the subspace compared is the span of the
  top `units // 2` left singular vectors (the dominant directions), unless
  `rank` says otherwise. For mmLSTM the pairs are within each gate.
- LSTM: its one recurrent kernel (`4 * units x units`, as a second-order
  cell's), so no pair within a model; it is compared across models.

Within one model (`pairwise_angles`) the angles say how far apart its
matrices are; the baselines that make that a comparison are the same
pairs at initialization (`training.runs.runs.initial_model`) and the angles
between corresponding matrices of two models of one architecture
(`cross_angles`), such as two LSTMs trained from different seeds.

`analyze_pabs` runs it on run directories and writes the figures and their
numbers (`python -m training.analyze pabs`, which prints `report_lines`).
"""

import itertools

import keras
import numpy as np
from matplotlib.lines import Line2D
from matplotlib.ticker import MaxNLocator

from training.analysis.run_inputs import run_label, run_names
from training.core import plots
from training.runs import runs
from zoo.cells.multi_matrix import MultiMatrixLSTMCell, MultiMatrixRNNCell
from zoo.cells.second_order import SecondOrderLSTMCell
from zoo.walk import walk_layers

GATES = ("i", "f", "c", "o")  # Keras's gate order


def subspace_basis(matrix, rank=None):
    """An orthonormal basis `(rows, rank)` of a subspace of `matrix`'s range.

    The left singular vectors of the `rank` largest singular values; with
    `rank=None`, of all singular values above the numerical tolerance (the
    matrix's range).
    """
    matrix = np.asarray(matrix, dtype="float64")
    if matrix.ndim != 2 or not matrix.size:
        raise ValueError(
            f"Expected a non-empty 2-D matrix; received shape {matrix.shape}."
        )
    left, singular, _ = np.linalg.svd(matrix, full_matrices=False)
    if rank is None:
        tolerance = singular.max(initial=0.0) * max(matrix.shape) * np.finfo(float).eps
        rank = int((singular > tolerance).sum())
    if not 1 <= rank <= len(singular):
        raise ValueError(
            f"`rank` must be in [1, {len(singular)}] for a matrix of shape "
            f"{matrix.shape}; received {rank!r}."
        )
    return left[:, :rank]


def principal_angles(a, b, rank=None):
    """Principal angles in degrees, ascending, between the subspaces of `a` and `b`.

    `a` and `b` have the same number of rows; each subspace is
    `subspace_basis(matrix, rank)`. There are `min(dim a, dim b)` angles; the
    cosines are the singular values of `Qa^T Qb` (Bjorck & Golub 1973).
    """
    qa, qb = subspace_basis(a, rank), subspace_basis(b, rank)
    if qa.shape[0] != qb.shape[0]:
        raise ValueError(
            "Both matrices must have the same number of rows; received "
            f"{np.shape(a)} and {np.shape(b)}."
        )
    cosines = np.linalg.svd(qa.T @ qb, compute_uv=False)
    return np.degrees(np.arccos(np.clip(cosines, -1.0, 1.0))).tolist()


def transition_matrices(model):
    """The transition matrices of every LSTM, second-order or multi-matrix cell.

    Returns:
        A list of `(layer, group, {label: matrix})` in the order of `model`'s
        layers, each matrix the map from `h_{t-1}` to pre-activations
        (`(outputs, units)`), one entry per set of matrices compared
        pairwise: a second-order layer's cells, an mmRNN layer's choices,
        each gate of an mmLSTM layer, an LSTM layer's one recurrent kernel
        (`keras.layers.LSTMCell`; group `"cell"`, label
        `"recurrent kernel"`).

    Raises:
        ValueError: `model` has none of these cells.
    """
    found = []
    for layer in walk_layers(model):
        cell = getattr(layer, "cell", None)
        if isinstance(cell, SecondOrderLSTMCell):
            kernel = cell.recurrent_kernel.numpy()
            blocks = np.split(kernel, cell.num_cells, axis=1)  # [units, 4u] each
            found.append(
                (layer.name, "cells", {f"cell {s}": b.T for s, b in enumerate(blocks)})
            )
        elif isinstance(cell, (MultiMatrixRNNCell, MultiMatrixLSTMCell)):
            kernel = cell.choice_kernels.numpy()
            blocks = np.split(kernel, cell.groups * cell.num_choices, axis=1)
            for group in range(cell.groups):
                name = "choices" if cell.groups == 1 else f"gate {GATES[group]}"
                start = group * cell.num_choices
                matrices = {
                    f"W[{i}]": blocks[start + i].T for i in range(cell.num_choices)
                }
                found.append((layer.name, name, matrices))
        elif isinstance(cell, keras.layers.LSTMCell):
            kernel = cell.recurrent_kernel.numpy()  # [units, 4 units]
            found.append((layer.name, "cell", {"recurrent kernel": kernel.T}))
    if not found:
        raise ValueError(
            "PABS needs a model with lstm, second_order_lstm, mmrnn or mmlstm "
            f"layers; this model ({model.name}) has none."
        )
    return found


def compared_rank(matrix, rank=None):
    """The dimension of `matrix`'s subspace that PABS compares (`subspace_basis`).

    `rank` if given; otherwise the whole range (None) of a non-square
    matrix and the top `units // 2` directions of a square one (see the
    module docstring).
    """
    if rank is None and matrix.shape[0] == matrix.shape[1]:
        return max(1, matrix.shape[1] // 2)
    return rank


def _result(layer, group, pair, angles):
    return {
        "layer": layer,
        "group": group,
        "pair": pair,
        "rank": len(angles),
        "angles": angles,
    }


def pairwise_angles(model, rank=None):
    """Principal angles of every pair within each set of `transition_matrices`.

    `rank=None` compares the whole range of non-square matrices and the top
    `units // 2` directions of square ones (see the module docstring).

    Returns:
        A list of dicts: `layer`, `group`, `pair` ("cell 0 / cell 1"),
        `rank` and `angles` (degrees, ascending).

    Raises:
        ValueError: `model` has no set of two or more matrices (an LSTM
            has one per layer: compare two models with `cross_angles`).
    """
    results = []
    for layer, group, matrices in transition_matrices(model):
        for (name_a, a), (name_b, b) in itertools.combinations(matrices.items(), 2):
            angles = principal_angles(a, b, compared_rank(a, rank))
            results.append(_result(layer, group, f"{name_a} / {name_b}", angles))
    if not results:
        raise ValueError(
            "PABS within one model needs second_order_lstm, mmrnn or mmlstm "
            f"layers (several transition matrices each); this model "
            f"({model.name}) has one per layer: compare it with another model "
            "of its architecture (cross_angles; python -m training.analyze pabs "
            "--across)."
        )
    return results


def _architecture(found):
    """What `cross_angles` pairs on: each set's group, labels and shapes."""
    return [
        (group, [(label, matrix.shape) for label, matrix in matrices.items()])
        for _, group, matrices in found
    ]


def _describe(found):
    """`transition_matrices`'s sets in a few words: `lstm_0 cell: 1 x (16, 4)`."""
    return ", ".join(
        f"{layer} {group}: {len(matrices)} x {next(iter(matrices.values())).shape}"
        for layer, group, matrices in found
    )


def cross_angles(model_a, model_b, rank=None):
    """Principal angles between corresponding transition matrices of two models.

    Each matrix of `model_a`'s `transition_matrices` against the one in the
    same place in `model_b`'s (LSTM layer against LSTM layer, cell `s`
    against cell `s`, choice `i` against choice `i`), at the rank
    `pairwise_angles` uses (`compared_rank`). A model against itself is at
    0 degrees; two models trained from different seeds give the baseline
    for the angles within one.

    Returns:
        A list of dicts as `pairwise_angles`'s, `layer` being `model_a`'s
        layer and `pair` the matrix's label ("cell 0").

    Raises:
        ValueError: the models' transition matrices differ in number, kind
            or shape (the message names both).
    """
    found_a, found_b = transition_matrices(model_a), transition_matrices(model_b)
    if _architecture(found_a) != _architecture(found_b):
        raise ValueError(
            "Cross-model PABS compares models of one architecture; received "
            f"{model_a.name} with {_describe(found_a)} and {model_b.name} with "
            f"{_describe(found_b)}."
        )
    results = []
    for (layer, group, matrices_a), (_, _, matrices_b) in zip(
        found_a, found_b, strict=True
    ):
        for label, a in matrices_a.items():
            angles = principal_angles(a, matrices_b[label], compared_rank(a, rank))
            results.append(_result(layer, group, label, angles))
    return results


def summary(results):
    """The angles of a set of `results` pooled: `pairs`, `angles`, `min`,
    `median` and `max` (degrees), one line of a comparison."""
    angles = [angle for result in results for angle in result["angles"]]
    return {
        "pairs": len(results),
        "angles": len(angles),
        "min": float(np.min(angles)),
        "median": float(np.median(angles)),
        "max": float(np.max(angles)),
    }


def plot(
    results,
    path,
    title="Principal angles between transition matrices",
    baseline=None,
    baseline_label="at initialization",
):
    """Angle against principal-vector index, one curve per pair.

    `baseline`: results of the same pairs in the same order (the model at
    initialization), drawn dashed in each pair's colour and named
    `baseline_label` in the legend.
    """
    fig, ax = plots.figure(title, "principal vector index", "principal angle (degrees)")
    several_layers = len({r["layer"] for r in results}) > 1
    dashed = [None] * len(results) if baseline is None else baseline
    for result, base in zip(results, dashed, strict=True):
        label = f"{result['group']}: {result['pair']}"
        if several_layers:
            label = f"{result['layer']} {label}"
        (line,) = ax.plot(
            range(1, len(result["angles"]) + 1), result["angles"], label=label
        )
        if base is not None:
            angles = base["angles"]
            ax.plot(range(1, len(angles) + 1), angles, "--", color=line.get_color())
    handles, _ = ax.get_legend_handles_labels()
    if baseline is not None:
        handles.append(
            Line2D(
                [], [], color="grey", linestyle="--", label=f"dashed: {baseline_label}"
            )
        )
    ax.set_ylim(0, 90)
    ax.set_yticks(range(0, 91, 15))
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.legend(handles=handles, fontsize=7, ncol=2 if len(handles) > 8 else 1)
    return plots.save(fig, path)


INIT = "@init"  # analyze_pabs(init=True): the key of a run's angles at initialization


def analyze_pabs(run_dirs, out, init=False, across=False):
    """Writes PABS pictures, `pabs.json` and `pabs-summary.csv`; returns the sets.

    Each set of angles (`pairwise_angles`' or `cross_angles`'
    results) has a key in `pabs.json`: `NAME`, the pairs within each run
    (`pabs-NAME.png`); with `across`, `A / B`, the corresponding matrices
    of each pair of runs (`pabs-A-vs-B.png`). With `init` the same is
    computed for the runs' initial models (`runs.initial_model`), keyed
    `NAME@init` or `A@init / B@init` and drawn dashed on the same picture.
    `pabs-summary.csv` has each set's angles pooled (`summary`).
    """
    names = run_names(run_dirs)
    if across and len(names) < 2:
        raise ValueError(
            "pabs --across compares runs pairwise; expected two or more run "
            f"directories, received {len(names)}."
        )
    suffixes = ("", INIT) if init else ("",)
    labels, kept = {}, {}  # the models to compare across, or the angles within
    for run_dir, name in zip(run_dirs, names, strict=True):
        run = runs.load_run(run_dir)
        labels[name] = run_label(name, run.recipe)
        models = {name: run.model}
        if init:
            models[name + INIT] = runs.initial_model(run_dir)
        for key, model in models.items():
            kept[key] = model if across else pairwise_angles(model)
    if across:
        angles, figures = {}, []
        for a, b in itertools.combinations(names, 2):
            for at in suffixes:
                key = f"{a}{at} / {b}{at}"
                angles[key] = cross_angles(kept[a + at], kept[b + at])
            title = f"Principal angles: {labels[a]} against {labels[b]}"
            file_name = plots.file_name(f"pabs-{a}-vs-{b}", ".png")
            figures.append((f"{a} / {b}", file_name, title))
    else:
        angles = kept
        figures = [
            (
                name,
                plots.file_name(f"pabs-{name}", ".png"),
                f"Principal angles: {labels[name]}",
            )
            for name in names
        ]
    plots.make_out_dir(out)
    for key, file_name, title in figures:
        initial = " / ".join(name + INIT for name in key.split(" / "))
        plot(angles[key], out / file_name, title, baseline=angles.get(initial))
    runs.write_json(out / "pabs.json", angles)
    plots.write_table(
        out / "pabs-summary.csv",
        [{"set": key, **summary(results)} for key, results in angles.items()],
    )
    return angles


def report_lines(angles):
    """What `python -m training.analyze pabs` prints: each pair's range and
    median, then each set's."""
    lines = []
    for key, results in angles.items():
        for a in results:
            lines.append(
                f"{key} {a['layer']} {a['group']} {a['pair']}: "
                f"{min(a['angles']):.1f}-{max(a['angles']):.1f} degrees, "
                f"median {np.median(a['angles']):.1f}"
            )
    for key, results in angles.items():
        pooled = summary(results)
        pairs = f"{pooled['pairs']} pair" + ("s" if pooled["pairs"] > 1 else "")
        lines.append(
            f"{key}: median {pooled['median']:.1f} degrees (min {pooled['min']:.1f}, "
            f"max {pooled['max']:.1f}) over {pooled['angles']} angles of {pairs}"
        )
    return lines
