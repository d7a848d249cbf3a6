import itertools

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
    actions = zoo.model_parts(model).recurrent[0].cell.stack
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


def test_token_labels_fit_side_by_side_whatever_the_length(drawn_figures):
    rng = np.random.default_rng(0)
    lengths = (6, 41, 81)  # every token labelled; thinned; thinned more
    tokens = [["START", *(["(a", "(b", "b)", "a)"] * 20)[: n - 1]] for n in lengths]
    traced = [
        {"actions": rng.dirichlet([1, 1, 1], n), "stack_top": rng.normal(size=(n, 4))}
        for n in lengths
    ]
    stack_actions.plot(tokens, traced, "stack.png")
    (fig,) = drawn_figures
    shown = []
    for top_ax in fig.axes[1:6:2]:  # each string's stack-top panel
        labels = [t for t in top_ax.get_xticklabels() if t.get_text()]
        boxes = [t.get_window_extent() for t in labels]
        assert all(a.x1 < b.x0 for a, b in itertools.pairwise(boxes))
        assert all(fig.bbox.x0 <= b.x0 and b.x1 <= fig.bbox.x1 for b in boxes)
        assert labels[0].get_text() == "START" and labels[0].get_rotation() == 90
        shown.append(len(labels))
    assert shown[0] == 6 and shown[0] < shown[2] < 81 and shown[1] < 41


def test_a_recognizer_without_a_stack_is_refused():
    with pytest.raises(ValueError, match="stack cell"):
        stack_actions.trace(zoo.recognizer("lstm", 7, 4), [[1, 3]])
