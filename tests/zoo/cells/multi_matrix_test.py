import warnings

import keras
import numpy as np
import pytest

from tests.zoo.cells.cell_contract import BATCH, FEATURES, TIME, CellContract
from tests.zoo.cells.reference import random_inputs, run_layer, sigmoid, softmax
from zoo.cells.multi_matrix import (
    MultiMatrixLSTMCell,
    MultiMatrixRNNCell,
    key_mixed_transition,
)

UNITS = 6
CHOICES = 3


def unpack(cell, groups):
    """The cell's weights as per-group NumPy matrices in the paper's layout."""
    w = {v.name: np.asarray(v.numpy(), "float64") for v in cell.weights}
    u, k = UNITS, CHOICES
    w_hx = np.split(w["kernel"][:, : groups * u], groups, axis=1)
    w_key_x = np.split(w["kernel"][:, groups * u :], groups, axis=1)
    w_key_h = np.split(w["key_recurrent_kernel"], groups, axis=1)
    # choice_kernels holds W_g[i]^T in column block g * k + i.
    blocks = np.split(w["choice_kernels"], groups * k, axis=1)
    choices = [np.stack([blocks[g * k + i].T for i in range(k)]) for g in range(groups)]
    w_proj = [
        np.concatenate([w["key_kernel"][g], w_key_h[g], w_key_x[g]]).T
        for g in range(groups)
    ]  # [k, k + units + features], as W_proj in eq. 6
    return w_hx, w_proj, choices, w.get("bias")


def test_mmrnn_matches_reference():
    keras.utils.set_random_seed(0)
    cell = MultiMatrixRNNCell(
        UNITS, num_choices=CHOICES, bias_initializer="random_normal"
    )
    x = random_inputs()
    output = run_layer(cell, x.astype("float32"))
    (w_hx,), (w_proj,), (choices,), b = unpack(cell, 1)
    h, v = np.zeros((BATCH, UNITS)), np.full((BATCH, CHOICES), 1 / CHOICES)
    for t in range(TIME):
        v = softmax(np.concatenate([v, h, x[:, t]], axis=1) @ w_proj.T)  # eq. 6
        w_hh = np.einsum("bi,ijk->bjk", v, choices)  # eq. 7, [batch, u, u]
        h = np.tanh(np.einsum("bjk,bk->bj", w_hh, h) + x[:, t] @ w_hx + b)  # eq. 8
        np.testing.assert_allclose(output[:, t], h, atol=1e-5)


def test_mmlstm_matches_reference():
    keras.utils.set_random_seed(0)
    cell = MultiMatrixLSTMCell(
        UNITS, num_choices=CHOICES, forget_bias=3.0, bias_initializer="random_normal"
    )
    x = random_inputs()
    output = run_layer(cell, x.astype("float32"))
    w_hx, w_proj, choices, bias = unpack(cell, 4)
    b = np.split(bias, 4)
    h, c = np.zeros((BATCH, UNITS)), np.zeros((BATCH, UNITS))
    v = [np.full((BATCH, CHOICES), 1 / CHOICES) for _ in range(4)]
    for t in range(TIME):
        z = []
        for g in range(4):  # Keras's gate order: i, f, c^, o
            v[g] = softmax(np.concatenate([v[g], h, x[:, t]], axis=1) @ w_proj[g].T)
            w_hh = np.einsum("bi,ijk->bjk", v[g], choices[g])  # eqs. 9-16
            z.append(np.einsum("bjk,bk->bj", w_hh, h) + x[:, t] @ w_hx[g] + b[g])
        i, f, o = sigmoid(z[0]), sigmoid(z[1]), sigmoid(z[3])  # eqs. 17-19
        c = f * c + i * np.tanh(z[2])  # eqs. 20-21
        h = o * np.tanh(c)  # eq. 22
        np.testing.assert_allclose(output[:, t], h, atol=1e-5)


@pytest.mark.parametrize("groups", [1, 4])
def test_key_mixed_transition_equals_naive_per_example_matrix(groups):
    rng = np.random.default_rng(2)
    h = rng.normal(size=(BATCH, UNITS)).astype("float32")
    kernels = rng.normal(size=(UNITS, groups * CHOICES * UNITS)).astype("float32")
    keys = softmax(rng.normal(size=(BATCH, groups, CHOICES))).astype("float32")
    efficient = np.asarray(key_mixed_transition(h, kernels, keys))
    blocks = kernels.reshape(UNITS, groups, CHOICES, UNITS)
    for g in range(groups):
        # The naive form: one [batch, units, units] W_hh(t) per example.
        w_hh = np.einsum("bi,jiu->bju", keys[:, g], blocks[:, g])
        naive = np.einsum("bj,bju->bu", h, w_hh)
        np.testing.assert_allclose(
            efficient[:, g * UNITS : (g + 1) * UNITS], naive, atol=1e-5
        )


@pytest.mark.parametrize("cell_class", [MultiMatrixRNNCell, MultiMatrixLSTMCell])
def test_initial_key_is_uniform_and_zero_key_reads_as_uniform(cell_class):
    keras.utils.set_random_seed(0)
    cell = cell_class(UNITS, num_choices=CHOICES)
    states = cell.get_initial_state(batch_size=BATCH)
    np.testing.assert_allclose(states[-1], 1 / CHOICES)
    for state in states[:-1]:
        np.testing.assert_array_equal(state, 0.0)
    layer = keras.layers.RNN(cell, return_sequences=True)
    x = random_inputs().astype("float32")
    np.testing.assert_allclose(layer(x), layer(x, initial_state=states), atol=1e-6)
    # With a nonzero h the initial key matters; an all-zero key reads as uniform.
    rng = np.random.default_rng(3)
    h_and_c = [rng.normal(size=s.shape).astype("float32") for s in states[:-1]]
    expected = np.asarray(layer(x, initial_state=[*h_and_c, states[-1]]))
    zero_key = np.zeros_like(states[-1])
    np.testing.assert_allclose(
        layer(x, initial_state=[*h_and_c, zero_key]), expected, atol=1e-6
    )
    groups = states[-1].shape[-1] // CHOICES
    one_hot = np.tile(np.eye(CHOICES, dtype="float32")[0], (BATCH, groups))
    other = layer(x, initial_state=[*h_and_c, one_hot])
    assert not np.allclose(other, expected, atol=1e-3)


def test_mmlstm_with_one_choice_is_an_lstm():
    keras.utils.set_random_seed(0)
    cell = MultiMatrixLSTMCell(UNITS, num_choices=1, bias_initializer="random_normal")
    x = np.random.default_rng(1).normal(size=(BATCH, TIME, FEATURES))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        output = keras.layers.RNN(cell, return_sequences=True)(x.astype("float32"))
    assert not [w for w in caught if "softmax" in str(w.message)]
    lstm = keras.layers.LSTMCell(UNITS)
    lstm.build((None, FEATURES))
    # One choice matrix per gate is the gate's recurrent kernel; the key is 1.
    lstm.set_weights(
        [
            cell.kernel.numpy(),
            cell.choice_kernels.numpy(),
            cell.bias.numpy(),
        ]
    )
    expected = keras.layers.RNN(lstm, return_sequences=True)(x.astype("float32"))
    np.testing.assert_allclose(output, expected, atol=1e-5)


def test_parameter_count():
    for cell, groups in (
        (MultiMatrixRNNCell(UNITS, CHOICES), 1),
        (MultiMatrixLSTMCell(UNITS, CHOICES), 4),
    ):
        cell.build((None, FEATURES))
        u, d, k = UNITS, FEATURES, CHOICES
        expected = groups * (k * u * u + (d + k + 1) * u + k * (d + k))
        assert cell.count_params() == expected
    # One choice: the key is always 1 and has no weights; an LSTM's count.
    single = MultiMatrixLSTMCell(UNITS, num_choices=1)
    single.build((None, FEATURES))
    assert single.count_params() == 4 * (UNITS * UNITS + (FEATURES + 1) * UNITS)


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: MultiMatrixRNNCell(0), "`units` must be a positive integer"),
        (lambda: MultiMatrixRNNCell(4, num_choices=0), "`num_choices` must be a"),
        (lambda: MultiMatrixLSTMCell(4, num_choices=1.5), "`num_choices` must be"),
        (lambda: MultiMatrixLSTMCell(4, forget_bias="1"), "`forget_bias`"),
    ],
)
def test_invalid_arguments(make, message):
    with pytest.raises(ValueError, match=message):
        make()


class TestMultiMatrixRNNContract(CellContract):
    def make_cell(self):
        return MultiMatrixRNNCell(UNITS, num_choices=CHOICES)


class TestMultiMatrixLSTMContract(CellContract):
    def make_cell(self):
        return MultiMatrixLSTMCell(UNITS, num_choices=CHOICES)
