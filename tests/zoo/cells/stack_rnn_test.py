import keras
import numpy as np
import pytest

from tests.zoo.cells.cell_contract import BATCH, TIME, CellContract
from tests.zoo.cells.reference import random_inputs, sigmoid, softmax
from tests.zoo.cells.stack_reference import (
    DEPTH,
    EMPTY,
    UNITS,
    WIDTH,
    numpy_stack_step,
    numpy_weights,
    run_layer,
)
from zoo.cells.stack_rnn import StackRNNCell


def test_stack_rnn_matches_reference():
    keras.utils.set_random_seed(0)
    cell = StackRNNCell(
        UNITS,
        stack_depth=DEPTH,
        stack_width=WIDTH,
        read_depth=2,
        bias_initializer="random_normal",
    )
    x = random_inputs()
    output = run_layer(cell, x)
    w = numpy_weights(cell)
    s = numpy_weights(cell.stack)
    h = np.zeros((BATCH, UNITS))
    stack = np.full((BATCH, DEPTH, WIDTH), EMPTY)
    for t in range(TIME):
        read = stack[:, :2].reshape(BATCH, -1) @ s["read_kernel"]
        h = sigmoid(
            x[:, t] @ w["kernel"] + h @ w["recurrent_kernel"] + read + w["bias"]
        )
        actions = softmax(h @ s["action_kernel"] + s["action_bias"])
        pushed = sigmoid(h @ s["push_kernel"] + s["push_bias"])
        stack = numpy_stack_step(stack, actions, pushed)
        np.testing.assert_allclose(output[:, t], h, atol=1e-5)
    assert actions.shape == (BATCH, 2)  # PUSH and POP only by default


def dyck2(length, rng):
    """A uniformly random balanced Dyck-2 string of `length` symbols (0-3)."""
    symbols, stack = [], []
    while len(symbols) < length:
        remaining = length - len(symbols)
        if stack and (remaining == len(stack) or rng.random() < 0.5):
            symbols.append(stack.pop() + 1)  # ")" = 1, "]" = 3
        else:
            symbols.append(2 * rng.integers(2))  # "(" = 0, "[" = 2
            stack.append(symbols[-1])
    return symbols


def is_dyck2(symbols):
    stack = []
    for s in symbols:
        if s % 2 == 0:
            stack.append(s)
        elif not stack or stack.pop() != s - 1:
            return False
    return not stack


def hand_set_dyck2_cell():
    """A StackRNN that pushes on open brackets and pops on close brackets.

    Units: open, round open, ")" on a top that is not "(", "]" on a "(",
    "]" on the empty stack, and a latch of the three error units. "(" pushes
    ~1, "[" pushes ~0, the empty value is -1.
    """
    k = 20.0
    cell = StackRNNCell(6, stack_depth=64)
    cell.build((None, 4))
    kernel = np.zeros((4, 6))
    kernel[[0, 2], 0] = k  # open
    kernel[0, 1] = k  # round open
    kernel[1, 2] = 2 * k  # ")"
    kernel[3, [3, 4]] = k  # "]"
    recurrent = np.zeros((6, 6))
    recurrent[2:, 5] = k  # error latch
    bias = np.array([-k / 2, -k / 2, -1.5 * k, -1.5 * k, -1.5 * k, -k / 2])
    read = np.array([[0.0, 0.0, -k, k, -k, 0.0]])  # top of the stack
    action = np.zeros((6, 2))
    action[0] = [2 * k, -2 * k]
    cell.set_weights(
        [kernel, recurrent, bias, action, np.array([[0, 10, 0, 0, 0, 0]]).T, read]
        + [np.array([-k, k]), np.array([-5.0])]
    )
    return cell


def test_hand_set_stack_rnn_recognises_long_dyck2():
    rng = np.random.default_rng(0)
    positives = [dyck2(100, rng) for _ in range(16)]
    negatives = []
    for string in positives:
        corrupted = list(string)
        corrupted[rng.integers(100)] ^= 2  # swap the bracket type
        negatives.append(corrupted)
    negatives.append([0, 2] * 25 + [3, 1] * 24 + [1, 1])  # "]" on "("... unbalanced
    negatives.append([0] * 50 + [1] * 49 + [2])  # ends open
    negatives.append([1] + [0, 1] * 49 + [0])  # pops the empty stack
    strings = np.asarray(positives + negatives)
    labels = np.asarray([is_dyck2(s) for s in strings])
    assert labels[:16].all() and not labels[16:].any()
    cell = hand_set_dyck2_cell()
    one_hot = np.eye(4, dtype="float32")[strings]
    layer = keras.layers.RNN(cell, return_state=True)
    h, _, stack = (np.asarray(t) for t in layer(one_hot))
    error = h[:, 2:].max(-1) > 0.5
    empty = np.asarray(cell.stack.top(stack))[:, 0] < -0.5
    np.testing.assert_array_equal(~error & empty, labels)


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: StackRNNCell(0), "`units` must be a positive integer"),
        (lambda: StackRNNCell(4, stack_depth=0), "`depth`"),
        (lambda: StackRNNCell(4, stack_width=2.0), "`width`"),
        (lambda: StackRNNCell(4, stack_depth=2, read_depth=3), "at most"),
    ],
)
def test_invalid_arguments(make, message):
    with pytest.raises(ValueError, match=message):
        make()


class TestStackRNNContract(CellContract):
    def make_cell(self):
        return StackRNNCell(UNITS, stack_depth=DEPTH, read_depth=2, use_noop=True)
