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
"""

import itertools

import numpy as np

from training import plots
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
    """The transition matrices of every second-order or multi-matrix cell in `model`.

    Returns:
        A list of `(layer, group, {label: matrix})`, each matrix the map
        from `h_{t-1}` to pre-activations (`(outputs, units)`), one entry per
        set of matrices compared pairwise: a second-order layer's cells, an
        mmRNN layer's choices, each gate of an mmLSTM layer.

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
    if not found:
        raise ValueError(
            "PABS needs a model with second_order_lstm, mmrnn or mmlstm layers; "
            f"this model ({model.name}) has none."
        )
    return found


def pairwise_angles(model, rank=None):
    """Principal angles of every pair within each set of `transition_matrices`.

    `rank=None` compares the whole range of non-square matrices and the top
    `units // 2` directions of square ones (see the module docstring).

    Returns:
        A list of dicts: `layer`, `group`, `pair` ("cell 0 / cell 1"),
        `rank` and `angles` (degrees, ascending).
    """
    results = []
    for layer, group, matrices in transition_matrices(model):
        for (name_a, a), (name_b, b) in itertools.combinations(matrices.items(), 2):
            used = rank
            if used is None and a.shape[0] == a.shape[1]:
                used = max(1, a.shape[1] // 2)
            angles = principal_angles(a, b, used)
            results.append(
                {
                    "layer": layer,
                    "group": group,
                    "pair": f"{name_a} / {name_b}",
                    "rank": len(angles),
                    "angles": angles,
                }
            )
    return results


def plot(results, path, title="Principal angles between transition matrices"):
    """Angle against principal-vector index, one curve per pair."""
    fig, ax = plots.figure(title, "principal vector index", "principal angle (degrees)")
    several_layers = len({r["layer"] for r in results}) > 1
    for result in results:
        label = f"{result['group']}: {result['pair']}"
        if several_layers:
            label = f"{result['layer']} {label}"
        ax.plot(range(1, len(result["angles"]) + 1), result["angles"], label=label)
    ax.set_ylim(0, 90)
    ax.set_yticks(range(0, 91, 15))
    ax.legend(fontsize=7, ncol=2 if len(results) > 8 else 1)
    return plots.save(fig, path)
