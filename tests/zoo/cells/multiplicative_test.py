import keras
import numpy as np
import pytest

from tests.zoo.cells.cell_contract import BATCH, FEATURES, TIME, CellContract
from tests.zoo.cells.reference import random_inputs, run_layer, sigmoid
from zoo.cells.multiplicative import (
    MultiplicativeLSTMCell,
    MultiplicativeRNNCell,
    TensorRNNCell,
)

UNITS = 6


def test_mrnn_matches_reference():
    keras.utils.set_random_seed(0)
    cell = MultiplicativeRNNCell(UNITS, bias_initializer="random_normal")
    x = random_inputs()
    output = run_layer(cell, x.astype("float32"))
    kernel, w_mh, w_hm, b = (np.asarray(w, "float64") for w in cell.get_weights())
    w_mx, w_hx = kernel[:, :UNITS], kernel[:, UNITS:]
    h = np.zeros((BATCH, UNITS))
    for t in range(TIME):
        m = (x[:, t] @ w_mx) * (h @ w_mh)  # eq. 9
        h = np.tanh(m @ w_hm + x[:, t] @ w_hx + b)  # eq. 10
        np.testing.assert_allclose(output[:, t], h, atol=1e-5)


@pytest.mark.parametrize("weight_normalization", [False, True])
def test_mlstm_matches_reference(weight_normalization):
    keras.utils.set_random_seed(0)
    cell = MultiplicativeLSTMCell(
        UNITS,
        forget_bias=3.0,
        weight_normalization=weight_normalization,
        bias_initializer="random_normal",
    )
    x = random_inputs()
    output = run_layer(cell, x.astype("float32"))
    weights = {w.name: np.asarray(w.numpy(), "float64") for w in cell.weights}
    w_mh, w_rec = weights["multiplicative_kernel"], weights["recurrent_kernel"]
    if weight_normalization:
        weights["multiplicative_scale"] = weights["multiplicative_scale"] * 0 + 0.5
        weights["recurrent_scale"] = weights["recurrent_scale"] * 0 + 2.0
        cell.multiplicative_scale.assign(weights["multiplicative_scale"])
        cell.recurrent_scale.assign(weights["recurrent_scale"])
        output = run_layer(cell, x.astype("float32"))
        w_mh = weights["multiplicative_scale"] * w_mh / np.linalg.norm(w_mh, axis=0)
        w_rec = weights["recurrent_scale"] * w_rec / np.linalg.norm(w_rec, axis=0)
    kernel, b = weights["kernel"], weights["bias"]
    w_mx = kernel[:, :UNITS]
    w_ix, w_fx, w_hx, w_ox = np.split(kernel[:, UNITS:], 4, axis=1)
    w_im, w_fm, w_hm, w_om = np.split(w_rec, 4, axis=1)
    b_i, b_f, b_h, b_o = np.split(b, 4)
    h, c = np.zeros((BATCH, UNITS)), np.zeros((BATCH, UNITS))
    for t in range(TIME):
        x_t = x[:, t]
        m = (x_t @ w_mx) * (h @ w_mh)  # eq. 17
        h_hat = x_t @ w_hx + m @ w_hm + b_h  # eq. 18
        i = sigmoid(x_t @ w_ix + m @ w_im + b_i)  # eq. 19
        o = sigmoid(x_t @ w_ox + m @ w_om + b_o)  # eq. 20
        f = sigmoid(x_t @ w_fx + m @ w_fm + b_f)  # eq. 21
        c = f * c + i * np.tanh(h_hat)  # eq. 15
        h = np.tanh(c) * o  # eq. 16
        np.testing.assert_allclose(output[:, t], h, atol=1e-5)


def test_mlstm_forget_bias_and_recurrent_weight_count():
    cell = MultiplicativeLSTMCell(UNITS, forget_bias=3.0)
    cell.build((None, FEATURES))
    bias = cell.bias.numpy()
    np.testing.assert_array_equal(bias[UNITS : 2 * UNITS], 3.0)
    np.testing.assert_array_equal(np.delete(bias, np.s_[UNITS : 2 * UNITS]), 0.0)
    lstm = keras.layers.LSTMCell(UNITS)
    lstm.build((None, FEATURES))
    recurrent = cell.multiplicative_kernel.shape[0] * cell.multiplicative_kernel.shape[
        1
    ] + np.prod(cell.recurrent_kernel.shape)
    assert recurrent == 1.25 * np.prod(lstm.recurrent_kernel.shape)


# Both ways of applying W_hh^(x_t): every symbol's product, or a gather.
@pytest.mark.parametrize("vocab_size", [7, TensorRNNCell.DENSE_VOCAB_LIMIT + 1])
def test_tensor_rnn_matches_reference(vocab_size):
    keras.utils.set_random_seed(0)
    cell = TensorRNNCell(UNITS, vocab_size=vocab_size, bias_initializer="random_normal")
    ids = np.random.default_rng(1).integers(0, vocab_size, size=(BATCH, TIME, 1))
    output = run_layer(cell, ids.astype("int32"))
    w_hx, w_hh, b = (np.asarray(w, "float64") for w in cell.get_weights())
    h = np.zeros((BATCH, UNITS))
    for t in range(TIME):
        one_hot = np.eye(vocab_size)[ids[:, t, 0]]  # [batch, vocab]
        transition = np.einsum("bn,nij->bij", one_hot, w_hh)  # eq. 6
        h = np.tanh(np.einsum("bi,bij->bj", h, transition) + one_hot @ w_hx + b)
        np.testing.assert_allclose(output[:, t], h, atol=1e-5)  # eq. 7


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: MultiplicativeRNNCell(0), "`units` must be a positive integer"),
        (lambda: MultiplicativeRNNCell(2.5), "`units` must be a positive integer"),
        (lambda: MultiplicativeLSTMCell(4, forget_bias="3"), "`forget_bias`"),
        (lambda: TensorRNNCell(4), "`vocab_size` must be a positive integer"),
        (lambda: TensorRNNCell(4, vocab_size=-1), "`vocab_size`"),
    ],
)
def test_invalid_arguments(make, message):
    with pytest.raises(ValueError, match=message):
        make()


def test_tensor_rnn_rejects_vector_inputs():
    with pytest.raises(ValueError, match="token ids"):
        keras.layers.RNN(TensorRNNCell(4, vocab_size=5))(np.zeros((2, 3, 4)))


class TestMultiplicativeRNNContract(CellContract):
    def make_cell(self):
        return MultiplicativeRNNCell(UNITS)


class TestMultiplicativeLSTMContract(CellContract):
    def make_cell(self):
        return MultiplicativeLSTMCell(UNITS, weight_normalization=True)


class TestTensorRNNContract(CellContract):
    def make_cell(self):
        return TensorRNNCell(UNITS, vocab_size=7)

    def make_inputs(self):
        rng = np.random.default_rng(0)
        return rng.integers(0, 7, size=(BATCH, TIME, 1)).astype("int32")
