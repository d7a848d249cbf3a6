import keras
import numpy as np
import pytest

from tests.zoo.cells.cell_contract import BATCH, FEATURES, TIME, CellContract
from tests.zoo.cells.reference import sigmoid
from zoo.cells.delta import DeltaRNNCell

UNITS = 6


@pytest.mark.parametrize("outer_activation", ["linear", "tanh"])
def test_delta_rnn_matches_reference(outer_activation):
    keras.utils.set_random_seed(0)
    cell = DeltaRNNCell(
        UNITS,
        outer_activation=outer_activation,
        alpha_initializer="random_normal",
        beta1_initializer="random_normal",
        beta2_initializer="random_normal",
        bias_initializer="random_normal",
    )
    x = np.random.default_rng(1).normal(size=(BATCH, TIME, FEATURES))
    output = np.asarray(
        keras.layers.RNN(cell, return_sequences=True)(x.astype("float32"))
    )
    w = {v.name: np.asarray(v.numpy(), "float64") for v in cell.weights}
    alpha, beta1, beta2 = w["alpha"], w["beta1"], w["beta2"]
    b_z, b_r = np.split(w["bias"], 2)
    phi = np.tanh if outer_activation == "tanh" else (lambda v: v)
    h = np.zeros((BATCH, UNITS))
    for t in range(TIME):
        wx, vh = x[:, t] @ w["kernel"], h @ w["recurrent_kernel"]
        d1 = alpha * vh * wx
        d2 = beta1 * vh + beta2 * wx
        z = np.tanh(d1 + d2 + b_z)
        r = sigmoid(wx + b_r)
        h = phi((1.0 - r) * z + r * h)
        np.testing.assert_allclose(output[:, t], h, atol=1e-5)


def test_defaults_and_parameter_count():
    cell = DeltaRNNCell(UNITS)
    cell.build((None, FEATURES))
    np.testing.assert_array_equal(cell.alpha.numpy(), 2.0)
    np.testing.assert_array_equal(cell.beta1.numpy(), 1.0)
    np.testing.assert_array_equal(cell.beta2.numpy(), 1.0)
    assert cell.get_config()["outer_activation"] == "linear"
    assert cell.count_params() == UNITS * (FEATURES + UNITS + 5)


@pytest.mark.parametrize("units", [0, -3, 2.5, "8", True])
def test_invalid_arguments(units):
    with pytest.raises(ValueError, match="`units` must be a positive integer"):
        DeltaRNNCell(units)


class TestDeltaRNNContract(CellContract):
    def make_cell(self):
        return DeltaRNNCell(UNITS)


class TestDeltaRNNTanhContract(CellContract):
    def make_cell(self):
        return DeltaRNNCell(UNITS, outer_activation="tanh", use_bias=False)
