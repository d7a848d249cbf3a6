import keras
import numpy as np
import pytest

from tests.zoo.cells.cell_contract import BATCH, FEATURES, TIME, CellContract
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
from tests.zoo.gradients import value_and_gradients
from zoo.cells.diffstk import (
    DiffStkCell,
    DiffStkLSTMCell,
    DiffStkMIRNNCell,
    DiffStkMLSTMCell,
    DiffStkMRNNCell,
    DiffStkRNNCell,
)
from zoo.cells.stack_cell import trace_stack

DIFFSTK_CELLS = [
    DiffStkRNNCell,
    DiffStkLSTMCell,
    DiffStkMRNNCell,
    DiffStkMLSTMCell,
    DiffStkMIRNNCell,
]


def f1(x, scale=1.7159):
    return scale * np.tanh(2.0 / 3.0 * x)  # eq. 2


def rnn_step(w, x, z, cells):
    return f1(x @ w["kernel"] + z @ w["recurrent_kernel"] + w["bias"]), []  # eq. 5


def lstm_step(w, x, z, cells):
    (c,) = cells
    z_i, z_f, z_c, z_o = np.split(
        x @ w["kernel"] + z @ w["recurrent_kernel"] + w["bias"], 4, axis=-1
    )  # eqs. 13-16
    c = sigmoid(z_f) * c + sigmoid(z_i) * f1(z_c)  # eq. 17
    return f1(c) * sigmoid(z_o), [c]  # eq. 18


def mrnn_step(w, x, z, cells):
    w_mx, w_zx = np.split(w["kernel"], 2, axis=1)
    m = (x @ w_mx) * (z @ w["multiplicative_kernel"])  # eq. 19
    return f1(m @ w["recurrent_kernel"] + x @ w_zx + w["bias"]), []  # eqs. 20-21


def mlstm_step(w, x, z, cells):
    (c,) = cells
    w_mx, w_x = w["kernel"][:, :UNITS], w["kernel"][:, UNITS:]
    m = (x @ w_mx) * (z @ w["multiplicative_kernel"])  # eq. 22
    z_i, z_f, z_c, z_o = np.split(
        x @ w_x + m @ w["recurrent_kernel"] + w["bias"], 4, axis=-1
    )  # eqs. 23-26
    c = sigmoid(z_f) * c + sigmoid(z_i) * f1(z_c)
    return f1(c) * sigmoid(z_o), [c]


def mirnn_step(w, x, z, cells):
    wx, rz = x @ w["kernel"], z @ w["recurrent_kernel"]
    mi = w["alpha"] * wx * rz + w["beta1"] * rz + w["beta2"] * wx  # eq. 27
    return f1(mi + w["bias"]), []


CONTROLLER_STEPS = {
    DiffStkRNNCell: rnn_step,
    DiffStkLSTMCell: lstm_step,
    DiffStkMRNNCell: mrnn_step,
    DiffStkMLSTMCell: mlstm_step,
    DiffStkMIRNNCell: mirnn_step,
}


def diffstk_reference(cell, x, noise_mean=0.0):
    """Eqs. 5-9 and the carry-forward (hard: eq. 12; soft) in NumPy.

    Returns the outputs and the total weight of carried steps (sum of 1 - u_t).
    """
    controller_step = CONTROLLER_STEPS[type(cell)]
    w, s = numpy_weights(cell.controller), numpy_weights(cell.stack)
    z = np.zeros((BATCH, UNITS))
    cells = [np.zeros((BATCH, UNITS))] * (len(cell.state_size) - 3)
    stack = np.full((BATCH, DEPTH, WIDTH), EMPTY)
    counter = np.zeros((BATCH, 1))
    outputs, carried = [], 0.0
    for t in range(x.shape[1]):
        read = stack[:, : cell.read_depth].reshape(BATCH, -1) @ s["read_kernel"]
        z_hat = z + read + noise_mean  # eqs. 5, 9
        candidate, new_cells = controller_step(w, x[:, t], z_hat, cells)
        actions = softmax(candidate @ s["action_kernel"] + s["action_bias"])  # eq. 6
        pushed = sigmoid(candidate @ s["push_kernel"] + s["push_bias"])
        stack = numpy_stack_step(stack, actions, pushed)  # eqs. 7-8
        keep, previous = np.zeros((BATCH, 1)), z
        if cell.carry_forward == "hard":  # eq. 12: u_t = 0 iff c_t > 1
            is_noop = actions.argmax(-1)[:, None] == 2
            counter = np.where(is_noop, counter + 1, 0)
            keep, previous = (counter > 1).astype(float), z_hat
        elif cell.carry_forward == "soft":
            noop = actions[:, 2:3]
            counter = noop * (counter + 1)
            keep = noop * sigmoid(cell.carry_sharpness * (counter - 1.5))
        carried += keep.sum()
        z = keep * previous + (1 - keep) * candidate
        cells = [
            keep * old + (1 - keep) * new
            for old, new in zip(cells, new_cells, strict=True)
        ]
        outputs.append(z)
    return np.stack(outputs, axis=1), carried


def make_diffstk(cell_class, **kwargs):
    keras.utils.set_random_seed(0)
    options = dict(
        stack_depth=DEPTH,
        stack_width=WIDTH,
        bias_initializer="random_normal",
        kernel_initializer=keras.initializers.RandomNormal(stddev=0.5),
    )
    return cell_class(UNITS, **{**options, **kwargs})


@pytest.mark.parametrize("carry_forward", ["soft", "hard"])
@pytest.mark.parametrize("cell_class", DIFFSTK_CELLS)
def test_diffstk_matches_reference(cell_class, carry_forward):
    cell = make_diffstk(cell_class, read_depth=2, carry_forward=carry_forward)
    x = np.random.default_rng(1).normal(size=(BATCH, 12, FEATURES))
    run_layer(cell, x[:, :1])
    # Favour NO-OP so that some steps are carried forward.
    cell.stack.action_bias.assign([0.0, 0.0, 1.5])
    output = run_layer(cell, x)
    expected, carried = diffstk_reference(cell, x)
    np.testing.assert_allclose(output, expected, atol=1e-5)
    assert 0 < carried < BATCH * 12


@pytest.mark.parametrize("cell_class", [DiffStkRNNCell, DiffStkLSTMCell])
def test_noise_mean_is_added_in_training_only(cell_class):
    cell = make_diffstk(cell_class, noise_mean=0.3, carry_forward=False)
    x = random_inputs()
    trained = run_layer(cell, x, training=True)
    expected, _ = diffstk_reference(cell, x, noise_mean=0.3)
    np.testing.assert_allclose(trained, expected, atol=1e-5)
    expected, _ = diffstk_reference(cell, x)
    np.testing.assert_allclose(run_layer(cell, x, training=False), expected, atol=1e-5)


def test_noise_is_present_in_training_and_absent_in_inference():
    x = random_inputs()
    noisy = make_diffstk(DiffStkRNNCell, noise_stddev=0.2, seed=3)
    layer = keras.layers.RNN(noisy, return_sequences=True)
    first = np.asarray(layer(x, training=True))
    second = np.asarray(layer(x, training=True))
    inference = np.asarray(layer(x, training=False))
    assert not np.allclose(first, second)
    assert not np.allclose(first, inference)
    np.testing.assert_array_equal(inference, np.asarray(layer(x)))
    clean = make_diffstk(DiffStkRNNCell)
    np.testing.assert_allclose(run_layer(clean, x), inference, atol=1e-6)
    # The noise has the requested scale (eq. 9) on the first step.
    deviation = np.std(first[:, 0] - inference[:, 0])
    assert 0.0 < deviation < 1.0


def run_steps(cell, x):
    if not cell.built:
        cell.build((None, FEATURES))
    states = [np.zeros((BATCH, size), "float32") for size in cell.state_size]
    history = [states]
    for t in range(x.shape[1]):
        _, states, _ = cell.step(x[:, t].astype("float32"), states)
        history.append(states)
    return history


def test_hard_carry_forward_copies_the_state_exactly():
    x = random_inputs()
    cell = make_diffstk(DiffStkLSTMCell, carry_forward="hard")
    history = run_steps(cell, x)
    cell.stack.action_bias.assign([0.0, 0.0, 20.0])  # always NO-OP
    history = run_steps(cell, x)
    counters = [np.asarray(states[-1])[:, 0] for states in history]
    expected = np.broadcast_to(np.arange(TIME + 1)[:, None], (TIME + 1, BATCH))
    np.testing.assert_array_equal(counters, expected)
    for t in range(2, TIME + 1):
        z_prev, c_prev, stack_prev, _ = history[t - 1]
        z, c, _, _ = history[t]
        np.testing.assert_array_equal(c, c_prev)
        np.testing.assert_array_equal(z, z_prev + cell.stack.read(stack_prev))
    # The first NO-OP is an ordinary update; without carry-forward all are.
    z_prev, c_prev = history[0][:2]
    assert not np.allclose(history[1][1], c_prev)
    plain = make_diffstk(DiffStkLSTMCell, carry_forward=False)
    run_steps(plain, x)
    plain.set_weights(cell.get_weights())
    plain_history = run_steps(plain, x)
    assert not np.allclose(plain_history[3][1], history[3][1])


def always_noop_with_a_large_read(carry_forward):
    cell = make_diffstk(DiffStkRNNCell, carry_forward=carry_forward)
    x = random_inputs()
    run_steps(cell, x)
    cell.stack.action_bias.assign([0.0, 0.0, 20.0])  # NO-OP at every step
    cell.stack.read_kernel.assign(np.full((WIDTH, UNITS), 3.0))
    return cell, np.concatenate([x] * 8, axis=1)  # 40 steps


def test_soft_carry_forward_keeps_the_state_bounded():
    cell, x = always_noop_with_a_large_read("soft")
    states = run_steps(cell, x)[1:]
    z = np.stack([np.asarray(s[0]) for s in states])
    assert np.abs(z).max() <= cell.activation_scale + 1e-6
    # From the tenth NO-OP on it copies z_{t-1} (1 - u_t > 1 - 1e-13).
    np.testing.assert_allclose(z[9:], np.broadcast_to(z[8], z[9:].shape), atol=1e-6)
    assert not np.allclose(z[1], z[0], atol=1e-3)  # the first one updates
    # The literal eq. 12 copies z^_{t-1}, read term included, and drifts.
    cell, x = always_noop_with_a_large_read("hard")
    z = np.stack([np.asarray(s[0]) for s in run_steps(cell, x)[1:]])
    assert np.abs(z).max() > 10 * cell.activation_scale


@pytest.mark.parametrize("carry_forward, reaches", [("soft", True), ("hard", False)])
def test_gradient_of_the_carry_decision_reaches_the_actions(carry_forward, reaches):
    # z_1 depends on a_1 only through u_1 (the stack of step 1 is read at
    # step 2), so the gradient of z_1 reaches A only through the decision.
    cell = make_diffstk(DiffStkRNNCell, carry_forward=carry_forward)
    x = random_inputs().astype("float32")
    run_steps(cell, x)
    states = [keras.ops.zeros((BATCH, size)) for size in cell.state_size]
    weights = [cell.stack.action_kernel, cell.stack.action_bias]
    _, gradients = value_and_gradients(  # None (or zeros): not connected
        lambda: keras.ops.sum(keras.ops.square(cell.step(x[:, 0], states)[0])),
        weights,
    )
    largest = max(0.0 if g is None else np.abs(np.asarray(g)).max() for g in gradients)
    assert (largest > 1e-4) == reaches


def test_saved_boolean_carry_forward_loads_as_a_reading():
    config = DiffStkRNNCell(4, carry_forward=True).get_config()
    assert config["carry_forward"] == "hard"
    assert (
        DiffStkRNNCell.from_config({**config, "carry_forward": True}).carry_forward
        == "hard"
    )
    assert (
        DiffStkRNNCell.from_config({**config, "carry_forward": False}).carry_forward
        is False
    )
    assert DiffStkRNNCell(4).carry_forward == "soft"


def test_a_subclass_builds_its_controller_after_the_base():
    class DiffStkReLURNNCell(DiffStkCell):
        def __init__(self, units, slope=0.5, **kwargs):
            super().__init__(units, **kwargs)
            self.slope = slope  # set after the base, used by the controller
            self.set_controller(
                keras.layers.SimpleRNNCell(
                    units, activation=lambda v: keras.ops.relu(v) * self.slope
                )
            )

    cell = DiffStkReLURNNCell(UNITS, stack_depth=DEPTH)
    assert cell.state_size == [UNITS, DEPTH, 1]
    output = run_layer(cell, random_inputs())
    assert output.shape == (BATCH, TIME, UNITS) and output.min() >= 0.0


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: DiffStkLSTMCell(4, read_depth=0), "`read_depth`"),
        (lambda: DiffStkRNNCell(4, empty_value="-1"), "`empty_value`"),
        (lambda: DiffStkRNNCell(4, activation_scale=0.0), "`activation_scale`"),
        (lambda: DiffStkRNNCell(4, noise_stddev=-0.1), "`noise_stddev`"),
        (lambda: DiffStkRNNCell(4, noise_mean=None), "`noise_mean`"),
        (lambda: DiffStkRNNCell(4, use_noop=False), "`carry_forward` needs NO-OP"),
        (lambda: DiffStkRNNCell(4, carry_forward="on"), "`carry_forward` must be"),
        (lambda: DiffStkRNNCell(4, carry_sharpness=0.0), "`carry_sharpness`"),
        (lambda: DiffStkMLSTMCell(4, forget_bias="1"), "`forget_bias`"),
    ],
)
def test_invalid_arguments(make, message):
    with pytest.raises(ValueError, match=message):
        make()


def test_without_carry_forward_two_actions_are_allowed():
    cell = DiffStkRNNCell(4, use_noop=False, carry_forward=False, stack_depth=4)
    trace = trace_stack(cell, random_inputs().astype("float32"))
    assert trace["actions"].shape == (BATCH, TIME, 2)


class TestDiffStkRNNContract(CellContract):
    def make_cell(self):
        return DiffStkRNNCell(UNITS, stack_depth=DEPTH, noise_stddev=0.1, seed=1)


class TestDiffStkLSTMContract(CellContract):
    def make_cell(self):
        return DiffStkLSTMCell(UNITS, stack_depth=DEPTH, stack_width=WIDTH)


class TestDiffStkMRNNContract(CellContract):
    def make_cell(self):
        return DiffStkMRNNCell(UNITS, stack_depth=DEPTH)


class TestDiffStkMLSTMContract(CellContract):
    def make_cell(self):
        return DiffStkMLSTMCell(UNITS, stack_depth=DEPTH, weight_normalization=True)


class TestDiffStkMIRNNContract(CellContract):
    def make_cell(self):
        return DiffStkMIRNNCell(UNITS, stack_depth=DEPTH)
