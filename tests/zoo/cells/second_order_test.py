import keras
import numpy as np
import pytest

from tests.zoo.cells.cell_contract import BATCH, FEATURES, TIME, CellContract
from tests.zoo.cells.reference import random_inputs, run_layer, sigmoid, softmax
from zoo.cells.second_order import (
    SecondOrderLSTMCell,
    assignment_from_embedding,
    assignment_inputs,
    second_order_cells,
    set_temperature,
)

UNITS = 6
CELLS = 3
VOCAB = 5
ASSIGNMENT = [2, 0, 1, 1, 0]


def random_ids(seed=1):
    return np.random.default_rng(seed).integers(0, VOCAB, size=(BATCH, TIME))


def lstm_step(x, h, c, kernel, recurrent_kernel, bias):
    z_i, z_f, z_c, z_o = np.split(x @ kernel + h @ recurrent_kernel + bias, 4, axis=1)
    c = sigmoid(z_f) * c + sigmoid(z_i) * np.tanh(z_c)
    return sigmoid(z_o) * np.tanh(c), c


def test_second_order_lstm_matches_reference():
    keras.utils.set_random_seed(0)
    cell = SecondOrderLSTMCell(
        UNITS, num_cells=CELLS, temperature=0.7, bias_initializer="random_normal"
    )
    x = random_inputs()
    output = run_layer(cell, x.astype("float32"))
    w = {v.name: np.asarray(v.numpy(), "float64") for v in cell.weights}
    assert w["temperature"] == pytest.approx(0.7)
    kernels = np.split(w["kernel"], CELLS, axis=1)
    recurrent_kernels = np.split(w["recurrent_kernel"], CELLS, axis=1)
    biases = np.split(w["bias"], CELLS)
    h, c = np.zeros((BATCH, UNITS)), np.zeros((BATCH, UNITS))
    for t in range(TIME):
        alpha = softmax(x[:, t] @ w["attention_kernel"] / 0.7)  # eqs. (a), (b)
        steps = [
            lstm_step(x[:, t], h, c, kernels[s], recurrent_kernels[s], biases[s])
            for s in range(CELLS)
        ]  # eq. (c)
        h = sum(alpha[:, s, None] * steps[s][0] for s in range(CELLS))  # eq. (d)
        c = sum(alpha[:, s, None] * steps[s][1] for s in range(CELLS))  # eq. (e)
        np.testing.assert_allclose(output[:, t], h, atol=1e-5)


def test_cells_have_their_own_weights_and_forget_bias():
    keras.utils.set_random_seed(0)
    cell = SecondOrderLSTMCell(UNITS, num_cells=CELLS, forget_bias=2.0)
    cell.build((None, FEATURES))
    blocks = np.split(cell.recurrent_kernel.numpy(), CELLS, axis=1)
    assert not np.allclose(blocks[0], blocks[1])
    bias = cell.bias.numpy().reshape(CELLS, 4, UNITS)
    np.testing.assert_array_equal(bias[:, 1], 2.0)
    np.testing.assert_array_equal(bias[:, [0, 2, 3]], 0.0)
    u, d, s = UNITS, FEATURES, CELLS
    assert cell.count_params() == s * 4 * u * (d + u + 1) + d * s + 1


def test_assignment_routing_uses_the_assigned_cell():
    keras.utils.set_random_seed(0)
    cell = SecondOrderLSTMCell(
        UNITS,
        num_cells=CELLS,
        routing="assignment",
        assignment=ASSIGNMENT,
        bias_initializer="random_normal",
    )
    x, ids = random_inputs(), random_ids()
    output = run_layer(cell, np.asarray(assignment_inputs(x, ids)))
    # Each example's step is a plain Keras LSTMCell step with its cell's weights.
    lstms = []
    for s in range(CELLS):
        lstm = keras.layers.LSTMCell(UNITS)
        lstm.build((None, FEATURES))
        columns = slice(s * 4 * UNITS, (s + 1) * 4 * UNITS)
        lstm.set_weights(
            [
                cell.kernel.numpy()[:, columns],
                cell.recurrent_kernel.numpy()[:, columns],
                cell.bias.numpy()[columns],
            ]
        )
        lstms.append(lstm)
    h = np.zeros((BATCH, UNITS), "float32")
    c = np.zeros((BATCH, UNITS), "float32")
    for t in range(TIME):
        for b in range(BATCH):
            lstm = lstms[ASSIGNMENT[ids[b, t]]]
            x_bt = x[b : b + 1, t].astype("float32")
            h_b, (_, c_b) = lstm(x_bt, [h[b : b + 1], c[b : b + 1]])
            h[b], c[b] = np.asarray(h_b)[0], np.asarray(c_b)[0]
        np.testing.assert_allclose(output[:, t], h, atol=1e-5)
    # Another table gives other outputs.
    other = SecondOrderLSTMCell(
        UNITS, num_cells=CELLS, routing="assignment", assignment=[0] * VOCAB
    )
    layer = keras.layers.RNN(other, return_sequences=True)
    layer.build((None, TIME, FEATURES + 1))
    other.set_weights(cell.get_weights())
    assert not np.allclose(layer(assignment_inputs(x, ids)), output, atol=1e-3)


def test_low_temperature_makes_alpha_one_hot():
    keras.utils.set_random_seed(0)
    cell = SecondOrderLSTMCell(UNITS, num_cells=CELLS)
    inputs = keras.Input((TIME, FEATURES))
    model = keras.Model(inputs, keras.layers.RNN(cell)(inputs))
    x = random_inputs()[:, 0].astype("float32")
    alpha = np.asarray(cell.routing_weights(x))
    assert alpha.max(axis=1).min() < 0.9  # soft at tau = 1
    assert set_temperature(model, 1e-3) == 1
    alpha = np.asarray(cell.routing_weights(x))
    np.testing.assert_allclose(alpha, np.eye(CELLS)[alpha.argmax(axis=1)], atol=1e-3)


def test_set_temperature_finds_nested_cells():
    keras.utils.set_random_seed(0)
    inputs = keras.Input((TIME, FEATURES))
    stacked = keras.layers.StackedRNNCells(
        [SecondOrderLSTMCell(UNITS), keras.layers.LSTMCell(UNITS)]
    )
    hidden = keras.layers.Bidirectional(
        keras.layers.RNN(SecondOrderLSTMCell(UNITS), return_sequences=True)
    )(inputs)
    model = keras.Model(inputs, keras.layers.RNN(stacked)(hidden))
    assert len(second_order_cells(model)) == 3
    assert set_temperature(model, 0.25) == 3
    for cell in second_order_cells(model):
        assert float(cell.temperature.numpy()) == 0.25
        assert cell.get_config()["temperature"] == 0.25


def test_assignment_from_embedding_clusters_and_is_seeded():
    rng = np.random.default_rng(0)
    centers = np.array([[5.0, 0.0], [-5.0, 0.0], [0.0, 5.0]])
    truth = rng.integers(0, 3, size=30)
    points = centers[truth] + 0.1 * rng.normal(size=(30, 2))
    table = assignment_from_embedding(points, 3, seed=1)
    assert len(table) == 30 and set(table) == {0, 1, 2}
    # Same clusters as the truth, up to a renaming of the cells.
    pairs = set(zip(truth.tolist(), table, strict=True))
    assert len(pairs) == 3
    assert assignment_from_embedding(points, 3, seed=1) == table


def test_every_cell_gets_the_forget_bias():
    cell = SecondOrderLSTMCell(3, num_cells=2, forget_bias=2.0)
    cell.build((None, FEATURES))
    block = np.concatenate([np.zeros(3), np.full(3, 2.0), np.zeros(6)])
    np.testing.assert_array_equal(cell.bias.numpy(), np.tile(block, 2))


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: SecondOrderLSTMCell(0), "`units` must be a positive integer"),
        (lambda: SecondOrderLSTMCell(4, num_cells=0), "`num_cells` must be"),
        (lambda: SecondOrderLSTMCell(4, temperature=0.0), "`temperature` must be"),
        (lambda: SecondOrderLSTMCell(4, routing="hard"), "`routing` must be one"),
        (
            lambda: SecondOrderLSTMCell(4, routing="assignment"),
            "`assignment` must be a non-empty list",
        ),
        (
            lambda: SecondOrderLSTMCell(4, routing="assignment", assignment=[0, 2]),
            "`assignment` must be",
        ),
        (lambda: SecondOrderLSTMCell(4, assignment=[0]), "only used with routing"),
        (lambda: SecondOrderLSTMCell(4, forget_bias=None), "`forget_bias`"),
        (lambda: set_temperature(keras.Sequential(), -1.0), "`temperature` must"),
        (lambda: assignment_from_embedding(np.zeros((2, 3)), 3), "`embeddings`"),
    ],
)
def test_invalid_arguments(make, message):
    with pytest.raises(ValueError, match=message):
        make()


def test_assignment_rejects_inputs_without_features():
    cell = SecondOrderLSTMCell(4, routing="assignment", assignment=[0, 1])
    with pytest.raises(ValueError, match="last feature is the token id"):
        keras.layers.RNN(cell)(np.zeros((2, 3, 1), "float32"))


class TestSecondOrderLSTMContract(CellContract):
    def make_cell(self):
        return SecondOrderLSTMCell(UNITS, num_cells=CELLS, temperature=0.5)


class TestAssignmentSecondOrderLSTMContract(CellContract):
    def make_cell(self):
        return SecondOrderLSTMCell(
            UNITS, num_cells=CELLS, routing="assignment", assignment=ASSIGNMENT
        )

    def make_inputs(self):
        x = np.asarray(assignment_inputs(random_inputs(0), random_ids(0)))
        return x.astype("float32")
