"""The compiled sampler (`zoo.sampler`) against the Keras model stepped in Python."""

import json

import keras
import numpy as np
import pytest

import zoo
from tests.zoo.backend_processes import needs, run_module
from zoo.sampler import MAX_LENGTH, Sampler, generate

PROMPTS = [[1, 2, 3], [4], [5, 6]]


def _model(cell="lstm", num_layers=2, **options):
    keras.utils.set_random_seed(1)
    return zoo.language_model(
        cell, vocab_size=11, units=8, num_layers=num_layers, **options
    )


def _greedy_reference(model, prompts, generated, lengths):
    """Checks each generated token is the Keras model's arg-max after its prefix.

    One call of the model on each row's prompt and tokens (the layer steps
    its cell one token at a time; padding after a row changes nothing
    before it): the arg-max at every step that drew a token is that token.
    """
    rows = [
        list(p) + list(g[:n])
        for p, g, n in zip(prompts, generated, lengths, strict=True)
    ]
    padded = np.zeros((len(rows), max(map(len, rows))), "int32")
    for index, row in enumerate(rows):
        padded[index, : len(row)] = row
    best = np.argmax(keras.ops.convert_to_numpy(model(padded)), axis=-1)
    for index, (prompt, row) in enumerate(zip(prompts, rows, strict=True)):
        assert (
            best[index, len(prompt) - 1 : len(row) - 1].tolist() == row[len(prompt) :]
        )


@pytest.mark.parametrize(
    "cell, options",
    [
        ("lstm", {}),
        ("mlstm", {"num_layers": 1}),
        ("diffstk_rnn", {"stack_depth": 6}),
    ],
)
def test_greedy_equals_the_keras_model_stepped_one_token_at_a_time(cell, options):
    model = _model(cell, **{"num_layers": 2, **options})
    out = generate(model, PROMPTS, 5, greedy=True)
    assert out.ids.shape == (3, 5) and out.lengths.tolist() == [5, 5, 5]
    _greedy_reference(model, PROMPTS, out.ids, out.lengths)  # each row its prompt


def test_top_1_is_greedy_and_a_seed_reproduces():
    model = _model()
    greedy = generate(model, PROMPTS, 6, greedy=True).ids
    assert (generate(model, PROMPTS, 6, top_k=1, seed=4).ids == greedy).all()
    first = generate(model, PROMPTS, 12, temperature=3.0, seed=3)
    again = generate(model, PROMPTS, 12, temperature=3.0, seed=3)
    other = generate(model, PROMPTS, 12, temperature=3.0, seed=4)
    assert (first.ids == again.ids).all()
    assert (first.ids != other.ids).any()
    # A hot, top-2 draw stays within each step's two likeliest ids.
    drawn = generate(model, [[1]], 8, temperature=50.0, top_k=2, seed=5).ids[0]
    logits = keras.ops.convert_to_numpy(model(np.array([[1, *drawn]], "int32")))[0]
    two = np.argsort(logits, axis=-1)[:-1, -2:]  # each step's two likeliest
    assert all(token in pair for token, pair in zip(drawn, two, strict=True))


def test_a_language_model_generates_by_its_own_method():
    model = _model()
    mine = model.generate(PROMPTS, 7, temperature=2.0, seed=9)
    theirs = generate(model, PROMPTS, 7, temperature=2.0, seed=9)
    assert (mine.ids == theirs.ids).all() and (mine.lengths == theirs.lengths).all()
    assert not hasattr(zoo.Recognizer, "generate")  # a language model's alone


def test_a_stop_id_ends_its_row_and_never_ids_are_not_drawn():
    model = _model()
    greedy = generate(model, PROMPTS, 6, greedy=True).ids
    stop = int(greedy[0, 2])  # row 0 meets it at its third token
    out = generate(model, PROMPTS, 6, greedy=True, stop_ids=[stop])
    _greedy_reference(model, PROMPTS, out.ids, out.lengths)
    for row in range(len(PROMPTS)):  # a row ends at its first stop id, or at 6
        tokens = greedy[row].tolist()
        end = tokens.index(stop) + 1 if stop in tokens else 6
        assert out.lengths[row] == end
        assert out.ids[row].tolist() == tokens[:end] + [0] * (6 - end)
    hot = generate(model, PROMPTS * 4, 30, temperature=100.0, never_ids=[0, 3], seed=1)
    assert not np.isin(hot.ids, [3]).any()
    assert (hot.ids[:, :30] != 0).all()  # 0 only as padding, never drawn


def test_a_sampler_keeps_one_program_per_shape():
    sampler = Sampler(_model())
    sampler([[1, 2]], 4, seed=0)
    program = sampler._compiled
    sampler([[3, 4]], 4, seed=1, top_k=3, temperature=0.5)
    assert sampler._compiled is program


@pytest.mark.parametrize(
    "arguments, message",
    [
        (
            {"max_length": 0},
            r"`max_length` must be in \[1, 1,000,000\] tokens; received 0",
        ),
        (
            {"max_length": MAX_LENGTH + 1},
            r"`max_length` must be in \[1, 1,000,000\] tokens; received 1,000,001",
        ),
        ({"top_k": 0}, "`top_k` must be >= 1; received 0"),
        ({"temperature": float("nan")}, "`temperature` must be"),
        ({"temperature": 0.0}, "`temperature` must be"),
        ({"seed": -1}, "`seed` must be an integer >= 0; received -1"),
        ({"prompts": []}, "`prompts` is an empty batch"),
        ({"prompts": [[1], []]}, "Prompt 1 is empty"),
        ({"prompts": [[1, 11]]}, r"Prompt ids must be in \[0, 11\)"),
        ({"stop_ids": [12]}, r"`stop_ids` must hold ids in \[0, 11\); received 12"),
        ({"never_ids": [-1]}, r"`never_ids` must hold ids in \[0, 11\)"),
    ],
)
def test_bad_arguments_are_one_line(arguments, message):
    call = {"prompts": [[1, 2]], "max_length": 3, **arguments}
    with pytest.raises(ValueError, match=message) as error:
        generate(_model(num_layers=1), **call)
    assert "\n" not in str(error.value)


def test_a_model_that_is_not_a_language_model_is_refused():
    with pytest.raises(ValueError, match="Expected a language model"):
        generate(zoo.recognizer("lstm", vocab_size=5, units=4), [[1]], 2)


@pytest.mark.processes
@needs("jax")
def test_jax_samples_in_lax_while_loop_as_tensorflow_does(tmp_path):
    model = _model("mlstm")
    model.save(tmp_path / "model.keras")
    run_module("jax", "tests.zoo.sampler_jax", tmp_path, timeout=900)
    ran = json.loads((tmp_path / "jax.json").read_text())
    greedy = generate(model, PROMPTS, 7, greedy=True, stop_ids=[9])
    assert ran["greedy"] == greedy.ids.tolist()
    assert ran["lengths"] == greedy.lengths.tolist()
    assert ran["seeded"] == ran["seeded_again"] != ran["other_seed"]
    assert ran["while_loop"]  # the jitted program holds one lax.while_loop


def test_likeliest_keeps_each_rows_top_k_and_all_of_them_at_the_vocabulary():
    from zoo.sampler import likeliest

    scaled = np.array([[0.5, 2.0, -1.0, 2.0], [3.0, 1.0, 2.0, 0.0]], "float32")
    two = keras.ops.convert_to_numpy(likeliest(scaled, 2))
    assert np.isinf(two).tolist() == [
        [True, False, True, False],
        [False, True, False, True],
    ]
    assert (keras.ops.convert_to_numpy(likeliest(scaled, 4)) == scaled).all()
