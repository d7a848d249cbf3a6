import keras
import numpy as np
import pytest

from tests.zoo.cells.cell_contract import BATCH, FEATURES, TIME, CellContract
from tests.zoo.cells.reference import sigmoid
from zoo.cells.mut import MUT1Cell, MUT2Cell, MUT3Cell

# MUT1 and MUT2 add x_t to a units-sized pre-activation: units == features.
UNITS = FEATURES


def run_reference_case(cell_class, units):
    """Runs the cell on seeded inputs; returns inputs, outputs and weights."""
    keras.utils.set_random_seed(0)
    cell = cell_class(units, bias_initializer="random_normal")
    x = np.random.default_rng(1).normal(size=(BATCH, TIME, FEATURES))
    output = np.asarray(
        keras.layers.RNN(cell, return_sequences=True)(x.astype("float32"))
    )
    weights = {w.name: np.asarray(w.numpy(), "float64") for w in cell.weights}
    return x, output, weights, np.split(weights["bias"], 3)


def test_mut1_matches_reference():
    x, output, weights, (b_z, b_r, b_h) = run_reference_case(MUT1Cell, UNITS)
    w_xz, w_xr = np.split(weights["kernel"], 2, axis=1)
    w_hr, w_hh = weights["recurrent_kernel"], weights["candidate_kernel"]
    h = np.zeros((BATCH, UNITS))
    for t in range(TIME):
        x_t = x[:, t]
        z = sigmoid(x_t @ w_xz + b_z)
        r = sigmoid(x_t @ w_xr + h @ w_hr + b_r)
        h = np.tanh((r * h) @ w_hh + np.tanh(x_t) + b_h) * z + h * (1 - z)
        np.testing.assert_allclose(output[:, t], h, atol=1e-5)


def test_mut2_matches_reference():
    x, output, weights, (b_z, b_r, b_h) = run_reference_case(MUT2Cell, UNITS)
    w_xz, w_xh = np.split(weights["kernel"], 2, axis=1)
    w_hz, w_hr = np.split(weights["recurrent_kernel"], 2, axis=1)
    w_hh = weights["candidate_kernel"]
    h = np.zeros((BATCH, UNITS))
    for t in range(TIME):
        x_t = x[:, t]
        z = sigmoid(x_t @ w_xz + h @ w_hz + b_z)
        r = sigmoid(x_t + h @ w_hr + b_r)
        h = np.tanh((r * h) @ w_hh + x_t @ w_xh + b_h) * z + h * (1 - z)
        np.testing.assert_allclose(output[:, t], h, atol=1e-5)


def test_mut3_matches_reference():
    units = 6  # MUT3 projects every input: any feature size works.
    x, output, weights, (b_z, b_r, b_h) = run_reference_case(MUT3Cell, units)
    w_xz, w_xr, w_xh = np.split(weights["kernel"], 3, axis=1)
    w_hz, w_hr = weights["update_kernel"], weights["recurrent_kernel"]
    w_hh = weights["candidate_kernel"]
    h = np.zeros((BATCH, units))
    for t in range(TIME):
        x_t = x[:, t]
        z = sigmoid(x_t @ w_xz + np.tanh(h) @ w_hz + b_z)
        r = sigmoid(x_t @ w_xr + h @ w_hr + b_r)
        h = np.tanh((r * h) @ w_hh + x_t @ w_xh + b_h) * z + h * (1 - z)
        np.testing.assert_allclose(output[:, t], h, atol=1e-5)


@pytest.mark.parametrize(
    "cell_class, count",
    [
        (MUT1Cell, lambda d, u: 2 * d * u + 2 * u * u + 3 * u),
        (MUT2Cell, lambda d, u: 2 * d * u + 3 * u * u + 3 * u),
        (MUT3Cell, lambda d, u: 3 * d * u + 3 * u * u + 3 * u),
    ],
)
def test_parameter_counts(cell_class, count):
    cell = cell_class(UNITS)
    cell.build((None, FEATURES))
    assert cell.count_params() == count(FEATURES, UNITS)


@pytest.mark.parametrize("cell_class", [MUT1Cell, MUT2Cell])
def test_inputs_must_have_units_features(cell_class):
    x = np.zeros((BATCH, TIME, FEATURES + 1), "float32")
    with pytest.raises(ValueError, match=rf"`inputs`.*units={UNITS} features"):
        keras.layers.RNN(cell_class(UNITS))(x)


@pytest.mark.parametrize("cell_class", [MUT1Cell, MUT2Cell, MUT3Cell])
@pytest.mark.parametrize("units", [0, -1, 2.5, None])
def test_invalid_arguments(cell_class, units):
    with pytest.raises(ValueError, match="`units` must be a positive integer"):
        cell_class(units)


class TestMUT1Contract(CellContract):
    def make_cell(self):
        return MUT1Cell(UNITS)


class TestMUT2Contract(CellContract):
    def make_cell(self):
        return MUT2Cell(UNITS)


class TestMUT3Contract(CellContract):
    def make_cell(self):
        return MUT3Cell(6)
