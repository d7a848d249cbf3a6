import keras
import pytest

from training.analysis.hand_built_stack import set_hand_built_weights
from training.tasks import make_task, recipes

RECIPES = {
    "palindrome": "recognition_palindrome_diffstk_rnn_paper",
    "D2": "recognition_d2_diffstk_rnn_paper",
}
# The recipes' stack (64 elements): a palindrome of 160 pushes 79 symbols.
DEPTH = 64


def _task(language, cell, depth=DEPTH):
    recipe = recipes.resolve(
        RECIPES[language],
        "paper",
        [
            f"model.cell={cell}",
            f"model.options.stack_depth={depth}",
            "train.seed=0",
            "task.split_scale=0.02",
        ],
    )
    return make_task(recipe)


@pytest.mark.parametrize("language", ["palindrome", "D2"])
def test_hand_built_weights_recognise_every_string_the_stack_holds(language):
    keras.utils.set_random_seed(0)
    task = _task(language, "diffstk_rnn")
    for cell in ("diffstk_rnn", "stack_rnn"):
        if cell != "diffstk_rnn":
            task = task.with_recipe(_task(language, cell).recipe)
        model = set_hand_built_weights(task.build_model(), language)
        # the hard test (one-edit negatives, 56-102) and the longest test
        for split in ("hard", "long_160"):
            found = task.evaluate(model, split)
            arrays = task.arrays[split]
            positives = arrays.labels == 1
            # A positive fits the stack when it pushes at most DEPTH symbols.
            pushes = arrays.lengths // 2 if language == "palindrome" else 0
            fits = positives & (pushes <= DEPTH)
            share = fits.sum() / positives.sum()
            assert found["strict_positives"] == pytest.approx(share), (cell, split)
            expected = (fits.sum() + (~positives).sum()) / len(positives)
            assert found["strict"] == pytest.approx(expected), (cell, split)
    if language == "palindrome":  # the depth limit bites on some strings only
        lengths = task.arrays["long_160"].lengths
        assert (lengths // 2 > DEPTH).any() and (lengths // 2 <= DEPTH).any()
    else:
        assert found["strict"] == 1.0


def test_a_deeper_stack_recognises_the_longest_palindromes():
    task = _task("palindrome", "diffstk_rnn", depth=96)
    model = set_hand_built_weights(task.build_model(), "palindrome")
    assert task.evaluate(model, "long_160")["strict"] == 1.0


def test_random_weights_do_not_recognise_palindromes():
    keras.utils.set_random_seed(0)
    task = _task("palindrome", "stack_rnn")
    found = task.evaluate(task.build_model(), "test")
    assert found["strict_positives"] == 0.0


def test_refuses_a_cell_or_a_language_it_has_no_circuit_for():
    task = _task("palindrome", "diffstk_rnn")
    with pytest.raises(ValueError, match="language must be one of"):
        set_hand_built_weights(task.build_model(), "D3")
    lstm = make_task(
        recipes.resolve(RECIPES["D2"], "small", ["model.cell=lstm", "model.options={}"])
    )
    with pytest.raises(ValueError, match="received a recognizer of LSTMCell"):
        set_hand_built_weights(lstm.build_model(), "D2")
    narrow = make_task(
        recipes.resolve(RECIPES["D2"], "small", ["model.options.stack_width=2"])
    )
    with pytest.raises(ValueError, match="stack elements >= 3 wide"):
        set_hand_built_weights(narrow.build_model(), "D2")
