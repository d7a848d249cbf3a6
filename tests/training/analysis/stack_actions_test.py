import keras
import numpy as np
import pytest

import zoo
from training.analysis import stack_actions
from zoo.layers.differentiable_stack import NO_OP, POP, PUSH


def test_pda_actions_of_dyck_and_palindromes():
    # START (a (b b) a) END in Dyck-2: 1 3 4 6 5 2
    np.testing.assert_array_equal(
        stack_actions.pda_actions([1, 3, 4, 6, 5, 2], "D2"),
        [NO_OP, PUSH, PUSH, POP, POP, NO_OP],
    )
    # START a b c b a END
    np.testing.assert_array_equal(
        stack_actions.pda_actions([1, 3, 4, 5, 4, 3, 2], "palindrome"),
        [NO_OP, PUSH, PUSH, NO_OP, POP, POP, NO_OP],
    )
    with pytest.raises(ValueError, match="language"):
        stack_actions.pda_actions([1], "anbn")


def always_push(cell_name, **options):
    keras.utils.set_random_seed(6)
    model = zoo.recognizer(cell_name, 7, 4, stack_depth=8, **options)
    actions = model.get_layer("recurrent").cell.stack
    actions.action_kernel.assign(np.zeros(actions.action_kernel.shape, "float32"))
    bias = np.full(actions.num_actions, -10.0, "float32")
    bias[PUSH] = 10.0
    actions.action_bias.assign(bias)
    return model


def test_a_stack_that_always_pushes_agrees_on_the_push_steps():
    ids = [[1, 3, 4, 6, 5, 2], [1, 3, 5, 2]]
    traced = stack_actions.trace(always_push("diffstk_rnn", carry_forward=False), ids)
    assert [t["actions"].shape for t in traced] == [(6, 3), (4, 3)]
    result = stack_actions.agreement(
        traced[0]["actions"], stack_actions.pda_actions(ids[0], "D2")
    )
    assert result == {
        "share": 2 / 6,
        "steps": 6,
        "matching": 2,
        "no_op_steps_left_out": 0,
    }


def test_without_no_op_the_no_op_steps_are_left_out():
    ids = [[1, 3, 4, 6, 5, 2]]
    (traced,) = stack_actions.trace(always_push("stack_rnn"), ids)
    result = stack_actions.agreement(
        traced["actions"], stack_actions.pda_actions(ids[0], "D2")
    )
    assert result == {
        "share": 2 / 4,
        "steps": 4,
        "matching": 2,
        "no_op_steps_left_out": 2,
    }


def test_plot_writes_a_png(tmp_path):
    ids = [[1, 3, 4, 6, 5, 2]]
    traced = stack_actions.trace(always_push("stack_rnn"), ids)
    tokens = [["START", "(a", "(b", "b)", "a)", "END"]]
    assert stack_actions.plot(tokens, traced, tmp_path / "stack.png").is_file()


def test_a_recognizer_without_a_stack_is_refused():
    with pytest.raises(ValueError, match="stack cell"):
        stack_actions.trace(zoo.recognizer("lstm", 7, 4), [[1, 3]])
