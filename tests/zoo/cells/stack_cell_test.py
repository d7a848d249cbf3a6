import keras
import numpy as np
import pytest

from tests.zoo.cells.cell_contract import BATCH, TIME
from tests.zoo.cells.reference import random_inputs
from tests.zoo.cells.stack_reference import DEPTH, EMPTY, UNITS, WIDTH
from tests.zoo.gradients import value_and_gradients
from zoo.cells.diffstk import (
    DiffStkLSTMCell,
    DiffStkMIRNNCell,
    DiffStkMLSTMCell,
    DiffStkMRNNCell,
    DiffStkRNNCell,
)
from zoo.cells.stack_cell import trace_stack
from zoo.cells.stack_rnn import StackRNNCell

STACK_CELLS = [
    StackRNNCell,
    DiffStkRNNCell,
    DiffStkLSTMCell,
    DiffStkMRNNCell,
    DiffStkMLSTMCell,
    DiffStkMIRNNCell,
]


@pytest.mark.parametrize("cell_class", STACK_CELLS)
def test_gradients_reach_the_stack_weights(cell_class):
    keras.utils.set_random_seed(0)
    cell = cell_class(UNITS, stack_depth=DEPTH)
    layer = keras.layers.RNN(cell, return_sequences=True)
    x = random_inputs().astype("float32")
    layer(x)
    stack = cell.stack
    weights = [stack.action_kernel, stack.push_kernel, stack.read_kernel]
    _, gradients = value_and_gradients(
        lambda: keras.ops.sum(keras.ops.square(layer(x))), weights
    )
    for weight, gradient in zip(weights, gradients, strict=True):
        assert gradient is not None, weight.path
        assert np.abs(np.asarray(gradient)).max() > 1e-6, weight.path


def test_trace_stack_returns_actions_and_tops():
    keras.utils.set_random_seed(0)
    cell = DiffStkRNNCell(UNITS, stack_depth=DEPTH, stack_width=WIDTH)
    x = random_inputs().astype("float32")
    layer = keras.layers.RNN(cell, return_sequences=True, return_state=True)
    outputs, _, stack, _ = layer(x)
    trace = trace_stack(cell, x)
    assert trace["actions"].shape == (BATCH, TIME, 3)
    np.testing.assert_allclose(np.sum(trace["actions"], -1), 1.0, atol=1e-6)
    np.testing.assert_allclose(trace["outputs"], outputs, atol=1e-6)
    top = np.asarray(stack)[:, :WIDTH] + EMPTY
    np.testing.assert_allclose(trace["stack_top"][:, -1], top, atol=1e-6)
    with pytest.raises(ValueError, match="`cell` must be a stack cell"):
        trace_stack(keras.layers.LSTMCell(4), x)
