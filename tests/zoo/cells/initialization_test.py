"""Every registered cell draws each of its weights independently.

Keras 3 initializers are stateless: an initializer object with one seed gives
every weight it serves the same stream of draws, so two weights built from
one object start as scaled copies of each other (the stack cells' read kernel
was their push kernel reshaped). For each cell, every pair of drawn weights
is compared on equal-length flattened prefixes: a weight that repeats
another's draws (at any scale) is perfectly correlated with it there.

A weight counts as drawn when other seeds change it; weights the
initializers set without drawing (zero biases, forget-gate offsets, constant
gating vectors, the Dyck-RNN's designed embeddings) are left out.
"""

import itertools

import keras
import numpy as np
import pytest

import zoo
from zoo.cells.stack_cell import StackCell
from zoo.registry import cell_takes_vocab_size

# As many features as units: MUT1 and MUT2 add x_t to a pre-activation.
VOCAB, UNITS, FEATURES = 11, 32, 32
# A pair is flagged when one prefix is the other at another scale (over 3
# or more values: by chance about 1e-6 per pair), or when their correlation
# r, about 1 / sqrt(n) for independent draws over n values, is above 0.2 or,
# for shorter prefixes, 5 / sqrt(n) (about 1e-6 per pair); r only over
# MIN_VALUES or more.
MIN_VALUES = 32


def max_correlation(n):
    return max(0.2, 5 / np.sqrt(n))


# Keras's own cells draw each weight from an initializer of its own; giving
# two of them one seed is the caller's choice, so only zoo cells are held to
# independence under seeded initializers.
KERAS_CELLS = ("gru", "lstm", "rnn")


def build_cell(name, **options):
    cell_class = zoo.get_cell_class(name)
    if cell_takes_vocab_size(cell_class):
        options["vocab_size"] = VOCAB
    if issubclass(cell_class, StackCell):
        options["stack_width"] = 5  # a read kernel (5, units), as in the recipes
    cell = cell_class(UNITS, **options)
    features = 1 if getattr(cell_class, "takes_token_ids", False) else FEATURES
    cell.build((None, features))
    return cell


def unseeded_cell(name, seed):
    keras.utils.set_random_seed(seed)
    return build_cell(name)


def seeded_cell(name, seed):
    keras.utils.set_random_seed(0)
    return build_cell(
        name,
        kernel_initializer=keras.initializers.GlorotUniform(seed=seed),
        recurrent_initializer=keras.initializers.Orthogonal(seed=seed),
        bias_initializer=keras.initializers.RandomNormal(seed=seed),
    )


def weight_values(cell):
    """Each weight's values, flat, by its path in the cell (`stack/push_kernel`)."""
    return {
        w.path.split("/", 1)[1]: np.asarray(w, "float64").ravel() for w in cell.weights
    }


def drawn_weights(make_cell, name):
    """The weights of `make_cell(name, 0)` that `make_cell(name, 1)` draws anew."""
    first, again = weight_values(make_cell(name, 0)), weight_values(make_cell(name, 0))
    other = weight_values(make_cell(name, 1))
    for path, values in first.items():  # the same seed, the same draws
        np.testing.assert_array_equal(values, again[path], err_msg=path)
    return {
        path: values
        for path, values in first.items()
        if values.std() > 0 and not np.array_equal(values, other[path])
    }


def cosine(x, y):
    norms = np.linalg.norm(x) * np.linalg.norm(y)
    return float(x @ y / norms) if norms else 0.0


def shared_draws(weights):
    """The pairs of weights whose flattened prefixes are copies or correlated."""
    found = []
    for (a, x), (b, y) in itertools.combinations(sorted(weights.items()), 2):
        n = min(len(x), len(y))
        x, y = x[:n], y[:n]
        if n >= 3 and abs(cosine(x, y)) > 1 - 1e-6:
            found.append(f"{a} ~ {b}: the same {n} draws at another scale")
        elif n >= MIN_VALUES:
            r = cosine(x - x.mean(), y - y.mean())
            if abs(r) > max_correlation(n):
                found.append(f"{a} ~ {b}: r = {r:.2f} over {n} values")
    return found


@pytest.mark.parametrize("name", zoo.available_cells())
def test_weights_are_independent_draws(name):
    weights = drawn_weights(unseeded_cell, name)
    if name.startswith("diffstk"):  # what the stack cells once shared
        shared = {"stack/push_kernel", "stack/read_kernel", "controller/kernel"}
        assert shared <= set(weights)
    assert shared_draws(weights) == []


@pytest.mark.parametrize(
    "name", [name for name in zoo.available_cells() if name not in KERAS_CELLS]
)
def test_weights_are_independent_draws_with_seeded_initializers(name):
    weights = drawn_weights(seeded_cell, name)
    assert shared_draws(weights) == []


def test_a_weight_added_before_another_leaves_its_draws():
    # Attention routing adds `attention_kernel` before `kernel`; the kernels
    # of the two cells have one shape and draw from the same names.
    def kernels(routing, features, **options):
        keras.utils.set_random_seed(0)
        cell = zoo.SecondOrderLSTMCell(UNITS, routing=routing, **options)
        cell.build((None, features))
        return np.asarray(cell.kernel), np.asarray(cell.recurrent_kernel)

    attention = kernels("attention", FEATURES)
    assignment = kernels("assignment", FEATURES + 1, assignment=[0, 1, 0])
    np.testing.assert_array_equal(attention[0], assignment[0])
    np.testing.assert_array_equal(attention[1], assignment[1])
