import keras
import numpy as np
import pytest

from tests.zoo.cells.cell_contract import BATCH, TIME, CellContract
from tests.zoo.cells.reference import sigmoid
from zoo.cells.dyck_rnn import DyckRNNCell, set_designed_weights
from zoo.dyck_model import dyck_rnn_model
from zoo.layers import DyckReadout
from zoo.model_parts import model_parts

K, M = 2, 4
OPEN, CLOSE = 3, 3 + K  # ids of "(" and "[" are 3, 4; of ")" and "]" 5, 6


def designed_model(m=M, **kwargs):
    model = dyck_rnn_model(K, m, **kwargs)
    assert set_designed_weights(model) == 2
    return model


def stack_states(model, ids):
    (cell_layer,) = model_parts(model).recurrent  # reads the ids as (1, time, 1)
    return np.asarray(cell_layer(np.asarray([ids], "int32")[..., None]))[0]


def test_designed_weights_push_and_pop_exactly():
    model = designed_model()
    states = stack_states(model, [OPEN, OPEN + 1, CLOSE + 1, CLOSE])  # ( [ ] )
    np.testing.assert_allclose(states[0], [1, 0, 0, 0], atol=1e-6)  # (
    np.testing.assert_allclose(states[1], [2, 1, 0, 0], atol=1e-6)  # ( [ , [ on top
    np.testing.assert_allclose(states[2], [1, 0, 0, 0], atol=1e-6)  # ] pops [
    np.testing.assert_allclose(states[3], [0, 0, 0, 0], atol=1e-6)  # ) empties
    # START (1) on an empty stack leaves it empty; pushing beyond m drops the
    # bottom.
    states = stack_states(model, [1, *[OPEN + 1] * 4, OPEN])
    np.testing.assert_allclose(states[0], 0.0, atol=1e-6)
    np.testing.assert_allclose(states[-1], [1, 2, 2, 2], atol=1e-6)


def test_dyck_rnn_matches_reference():
    keras.utils.set_random_seed(0)
    cell = DyckRNNCell(2 * M, embedding_dim=2, trainable_embeddings=True)
    ids = np.random.default_rng(1).integers(0, 3 + 2 * K, size=(BATCH, TIME, 1))
    output = np.asarray(keras.layers.RNN(cell, return_sequences=True)(ids))
    embeddings, w_proj = (np.asarray(w, "float64") for w in cell.get_weights())
    units, width = 2 * M, 2
    w1 = np.eye(units, k=-width)  # ones on the (slot-wide) sub-diagonal: push
    w2 = np.eye(units, k=width)  # ones on the super-diagonal: pop
    w_hx = np.eye(units, width)  # writes x_t into the top slot
    h = np.zeros((BATCH, units))
    for t in range(TIME):
        x = embeddings[ids[:, t, 0]]  # [batch, 2]
        g = sigmoid(x @ w_proj)  # eq. 3, [batch, 1]
        w_hh = g[:, :, None] * w1 + (1 - g[:, :, None]) * w2  # eq. 4
        h = np.einsum("bij,bj->bi", w_hh, h) + g * (x @ w_hx.T)  # eq. 5
        np.testing.assert_allclose(output[:, t], h, atol=1e-5)


def test_fixed_embeddings_and_parameter_count():
    model = dyck_rnn_model(K, M)
    cell = model_parts(model).recurrent[0].cell
    np.testing.assert_array_equal(
        cell.embeddings.numpy()[:, 0], [0, 0, 0, 1, 2, -1, -2]
    )
    assert not cell.embeddings.trainable
    # The report's 5 parameters for k = 2: W_proj and the readout.
    assert sum(np.prod(w.shape) for w in model.trainable_weights) == 5
    wide = dyck_rnn_model(K, M, embedding_dim=2, trainable_embeddings=True)
    assert model_parts(wide).recurrent[0].cell.units == 2 * M
    assert sum(np.prod(w.shape) for w in wide.trainable_weights) == 7 * 2 + 2 + 6


def test_model_saves_and_loads(tmp_path):
    model = designed_model()
    rng = np.random.default_rng(2)
    strings = rng.integers(0, 3 + 2 * K, size=(3, 10)).astype("int32")
    model.save(tmp_path / "dyck.keras")
    restored = keras.models.load_model(tmp_path / "dyck.keras")
    np.testing.assert_array_equal(restored(strings), model(strings))


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: DyckRNNCell(0), "`units` must be a positive integer"),
        (lambda: DyckRNNCell(4, num_bracket_types=0), "`num_bracket_types`"),
        (lambda: DyckRNNCell(4, embedding_dim=0), "`embedding_dim` must be"),
        (lambda: DyckRNNCell(5, embedding_dim=2), "multiple of `embedding_dim`"),
        (lambda: DyckRNNCell(4, first_bracket_id=-1), "`first_bracket_id` must"),
        (lambda: dyck_rnn_model(2, 0), "`m` must be a positive integer"),
        (lambda: DyckReadout(0), "`num_bracket_types` must be"),
    ],
)
def test_invalid_arguments(make, message):
    with pytest.raises(ValueError, match=message):
        make()


def test_rejects_vector_inputs():
    with pytest.raises(ValueError, match="token ids"):
        keras.layers.RNN(DyckRNNCell(4))(np.zeros((2, 3, 4), "float32"))


class TestDyckRNNContract(CellContract):
    def make_cell(self):
        return DyckRNNCell(M)

    def make_inputs(self):
        rng = np.random.default_rng(0)
        return rng.integers(0, 3 + 2 * K, size=(BATCH, TIME, 1)).astype("int32")


class TestWideDyckRNNContract(TestDyckRNNContract):
    def make_cell(self):
        return DyckRNNCell(2 * M, embedding_dim=2, trainable_embeddings=True)
