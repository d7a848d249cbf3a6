import keras
import numpy as np
import pytest

from tests.zoo.cells.reference import sigmoid
from zoo.layers.differentiable_stack import (
    NO_OP,
    POP,
    PUSH,
    DifferentiableStack,
    stack_update,
)

BATCH, DEPTH, WIDTH, UNITS = 3, 4, 2, 5
EMPTY = -1.0


def list_stack_run(programs, pushed, depth, empty):
    """A discrete stack per example: Python lists, top first, bounded depth."""
    tops = []
    stacks = [[] for _ in programs]
    for t in range(programs.shape[1]):
        for b, stack in enumerate(stacks):
            action = programs[b, t]
            if action == PUSH:
                stack.insert(0, pushed[b, t])
                del stack[depth:]
            elif action == POP and stack:
                stack.pop(0)
        tops.append(
            [
                np.stack(s + [np.full(pushed.shape[-1], empty)] * (depth - len(s)))
                for s in stacks
            ]
        )
    return np.asarray(tops).transpose(1, 0, 2, 3)  # [batch, time, depth, width]


def programs_and_values(time=12, seed=0):
    rng = np.random.default_rng(seed)
    programs = rng.integers(0, 3, size=(BATCH, time))
    programs[:, :3] = POP  # pops on the empty stack
    programs[0, 3:9] = PUSH  # more pushes than the depth
    pushed = rng.uniform(size=(BATCH, time, WIDTH)).astype("float32")
    return programs, pushed


def test_one_hot_actions_match_list_stack():
    programs, pushed = programs_and_values()
    expected = list_stack_run(programs, pushed, DEPTH, EMPTY)
    stack = np.full((BATCH, DEPTH, WIDTH), EMPTY, "float32")
    for t in range(programs.shape[1]):
        actions = np.eye(3, dtype="float32")[programs[:, t]]
        stack = np.asarray(stack_update(stack, actions, pushed[:, t], EMPTY))
        np.testing.assert_array_equal(stack, expected[:, t])


def test_one_hot_push_pop_without_noop():
    programs, pushed = programs_and_values(seed=1)
    programs[programs == NO_OP] = PUSH
    expected = list_stack_run(programs, pushed, DEPTH, EMPTY)
    stack = np.full((BATCH, DEPTH, WIDTH), EMPTY, "float32")
    for t in range(programs.shape[1]):
        actions = np.eye(2, dtype="float32")[programs[:, t]]
        stack = np.asarray(stack_update(stack, actions, pushed[:, t], EMPTY))
        np.testing.assert_array_equal(stack, expected[:, t])


def test_soft_actions_match_equations():
    rng = np.random.default_rng(2)
    stack = rng.normal(size=(BATCH, DEPTH, WIDTH))
    actions = rng.dirichlet(np.ones(3), size=BATCH)
    pushed = rng.uniform(size=(BATCH, WIDTH))
    new = np.asarray(stack_update(stack, actions, pushed, EMPTY))
    push, pop, noop = (actions[:, k, None] for k in range(3))
    below = np.concatenate([stack, np.full((BATCH, 1, WIDTH), EMPTY)], axis=1)
    expected_top = push * pushed + pop * stack[:, 1] + noop * stack[:, 0]  # eq. 7
    np.testing.assert_allclose(new[:, 0], expected_top, atol=1e-6)
    for i in range(1, DEPTH):
        expected = push * stack[:, i - 1] + pop * below[:, i + 1] + noop * stack[:, i]
        np.testing.assert_allclose(new[:, i], expected, atol=1e-6)  # eq. 8


def make_stack(**kwargs):
    keras.utils.set_random_seed(0)
    options = dict(depth=DEPTH, width=WIDTH, bias_initializer="random_normal")
    layer = DifferentiableStack(UNITS, **{**options, **kwargs})
    layer.build((None, UNITS))
    return layer


def test_layer_with_one_hot_actions_is_a_list_stack():
    layer = make_stack()
    programs, _ = programs_and_values()
    z = np.random.default_rng(3).normal(size=(BATCH, 12, UNITS)).astype("float32")
    d, b_d = layer.push_kernel.numpy(), layer.push_bias.numpy()
    expected = list_stack_run(programs, sigmoid(z @ d + b_d), DEPTH, EMPTY)
    state = np.zeros((BATCH, layer.state_size), "float32")  # the empty stack
    np.testing.assert_array_equal(layer.top(state), EMPTY)
    for t in range(programs.shape[1]):
        actions = np.eye(3, dtype="float32")[programs[:, t]]
        state = layer.update(state, actions, z[:, t])
        stack = np.reshape(state, (BATCH, DEPTH, WIDTH)) + EMPTY
        np.testing.assert_allclose(stack, expected[:, t], atol=1e-6)
        np.testing.assert_allclose(layer.top(state), expected[:, t, 0], atol=1e-6)


def test_actions_and_read_match_equations():
    layer = make_stack(read_depth=2)
    rng = np.random.default_rng(4)
    z = rng.normal(size=(BATCH, UNITS)).astype("float32")
    state = rng.normal(size=(BATCH, DEPTH * WIDTH)).astype("float32")
    logits = z @ layer.action_kernel.numpy() + layer.action_bias.numpy()
    expected = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)  # eq. 6
    new_state, actions = layer(z, state)
    np.testing.assert_allclose(actions, expected, atol=1e-6)
    np.testing.assert_allclose(
        new_state, layer.update(state, expected.astype("float32"), z), atol=1e-6
    )
    top_two = state[:, : 2 * WIDTH] + EMPTY
    np.testing.assert_allclose(
        layer.read(state), top_two @ layer.read_kernel.numpy(), atol=1e-5
    )


def test_without_noop_has_two_actions():
    layer = make_stack(use_noop=False, use_bias=False)
    _, actions = layer(np.ones((BATCH, UNITS), "float32"), np.zeros((BATCH, 8)))
    assert actions.shape == (BATCH, 2)
    assert layer.action_bias is None and layer.push_bias is None


def test_config_round_trip():
    layer = DifferentiableStack(UNITS, depth=16, width=3, read_depth=2, use_noop=False)
    config = layer.get_config()
    assert DifferentiableStack.from_config(config).get_config() == config
    assert layer.state_size == 48


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"depth": 0}, "`depth` must be a positive integer"),
        ({"width": 1.5}, "`width` must be a positive integer"),
        ({"read_depth": 0}, "`read_depth` must be a positive integer"),
        ({"depth": 4, "read_depth": 5}, "`read_depth` must be at most `depth`"),
        ({"empty_value": "-1"}, "`empty_value` must be a number"),
    ],
)
def test_invalid_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        DifferentiableStack(UNITS, **kwargs)
