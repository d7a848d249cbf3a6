import keras
import numpy as np
import pytest

from tests.zoo.cells.cell_contract import BATCH, FEATURES, TIME, CellContract
from tests.zoo.cells.reference import random_inputs, run_layer, sigmoid
from zoo.cells.multiplicative_integration import MILSTMCell, MIRNNCell

UNITS = 6
RANDOM = {
    "alpha_initializer": "random_normal",
    "beta1_initializer": "random_normal",
    "beta2_initializer": "random_normal",
    "bias_initializer": "random_normal",
}


def weights_of(cell):
    return {w.name: np.asarray(w.numpy(), "float64") for w in cell.weights}


def test_mirnn_matches_reference():
    keras.utils.set_random_seed(0)
    cell = MIRNNCell(UNITS, **RANDOM)
    x = random_inputs()
    output = run_layer(cell, x.astype("float32"))
    w = weights_of(cell)
    h = np.zeros((BATCH, UNITS))
    for t in range(TIME):
        wx, uh = x[:, t] @ w["kernel"], h @ w["recurrent_kernel"]
        # The general form of multiplicative integration (Wu et al. 2016).
        pre = w["alpha"] * wx * uh + w["beta1"] * uh + w["beta2"] * wx + w["bias"]
        h = np.tanh(pre)
        np.testing.assert_allclose(output[:, t], h, atol=1e-5)


@pytest.mark.parametrize("weight_normalization", [False, True])
def test_milstm_matches_reference(weight_normalization):
    keras.utils.set_random_seed(0)
    cell = MILSTMCell(
        UNITS, forget_bias=3.0, weight_normalization=weight_normalization, **RANDOM
    )
    x = random_inputs()
    output = run_layer(cell, x.astype("float32"))
    w = weights_of(cell)
    u = w["recurrent_kernel"]
    if weight_normalization:
        scale = np.random.default_rng(2).uniform(0.5, 2.0, size=4 * UNITS)
        cell.recurrent_scale.assign(scale.astype("float32"))
        output = run_layer(cell, x.astype("float32"))
        u = scale * u / np.linalg.norm(u, axis=0)
    names = ("alpha", "beta1", "beta2", "bias")
    alpha, beta1, beta2, b = (np.split(w[name], 4) for name in names)
    ws, us = np.split(w["kernel"], 4, axis=1), np.split(u, 4, axis=1)
    h, c = np.zeros((BATCH, UNITS)), np.zeros((BATCH, UNITS))
    for t in range(TIME):
        pre = []
        for g in range(4):  # i, f, candidate, o, each with its own vectors
            wx, uh = x[:, t] @ ws[g], h @ us[g]
            pre.append(alpha[g] * wx * uh + beta1[g] * uh + beta2[g] * wx + b[g])
        i, f, o = sigmoid(pre[0]), sigmoid(pre[1]), sigmoid(pre[3])
        c = f * c + i * np.tanh(pre[2])
        h = o * np.tanh(c)
        np.testing.assert_allclose(output[:, t], h, atol=1e-5)


def test_mirnn_is_simple_rnn_without_second_order_term():
    keras.utils.set_random_seed(0)
    cell = MIRNNCell(
        UNITS,
        alpha_initializer="zeros",
        beta1_initializer="ones",
        beta2_initializer="ones",
        bias_initializer="random_normal",
    )
    x = random_inputs().astype("float32")
    output = run_layer(cell, x)
    simple = keras.layers.SimpleRNNCell(UNITS)
    simple_layer = keras.layers.RNN(simple, return_sequences=True)
    simple_layer(x)
    w = weights_of(cell)
    simple.set_weights([w["kernel"], w["recurrent_kernel"], w["bias"]])
    np.testing.assert_allclose(output, simple_layer(x), atol=1e-5)


def test_default_gating_vectors_and_forget_bias():
    mirnn = MIRNNCell(UNITS)
    mirnn.build((None, FEATURES))
    np.testing.assert_array_equal(mirnn.alpha.numpy(), 1.0)
    np.testing.assert_array_equal(mirnn.beta1.numpy(), 0.5)
    np.testing.assert_array_equal(mirnn.beta2.numpy(), 0.5)
    milstm = MILSTMCell(UNITS, forget_bias=3.0)
    milstm.build((None, FEATURES))
    assert milstm.alpha.shape == (4 * UNITS,)
    bias = milstm.bias.numpy()
    np.testing.assert_array_equal(bias[UNITS : 2 * UNITS], 3.0)
    np.testing.assert_array_equal(np.delete(bias, np.s_[UNITS : 2 * UNITS]), 0.0)


def test_parameter_counts():
    d, u = FEATURES, UNITS
    mirnn, milstm = MIRNNCell(u), MILSTMCell(u, weight_normalization=True)
    mirnn.build((None, d))
    milstm.build((None, d))
    assert mirnn.count_params() == u * (d + u + 4)
    assert milstm.count_params() == 4 * u * (d + u + 4) + 4 * u


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: MIRNNCell(0), "`units` must be a positive integer"),
        (lambda: MILSTMCell(2.5), "`units` must be a positive integer"),
        (lambda: MILSTMCell(4, forget_bias="1"), "`forget_bias` must be a number"),
        (lambda: MILSTMCell(4, forget_bias=True), "`forget_bias` must be a number"),
    ],
)
def test_invalid_arguments(make, message):
    with pytest.raises(ValueError, match=message):
        make()


class TestMIRNNContract(CellContract):
    def make_cell(self):
        return MIRNNCell(UNITS)


class TestMILSTMContract(CellContract):
    def make_cell(self):
        return MILSTMCell(UNITS, weight_normalization=True)
