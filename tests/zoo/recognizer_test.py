import keras
import numpy as np
import pytest

import zoo
from zoo.models import recognizer
from zoo.recognizer_training import (
    hybrid_recognition_loss,
    recognition_targets,
    trace_recognizer,
)

VOCAB = 3  # 0 padding, 1 "(", 2 ")"


def dyck1_set(size, max_length, seed):
    """Padded Dyck-1 strings and labels: half balanced, half not."""
    rng = np.random.default_rng(seed)
    ids = np.zeros((size, max_length), "int32")
    labels = np.zeros(size, "float32")
    for row in range(size):
        length = 2 * rng.integers(1, max_length // 2 + 1)
        depth, string = 0, []
        for position in range(length):
            close = depth > 0 and (depth == length - position or rng.random() < 0.5)
            depth += -1 if close else 1
            string.append(2 if close else 1)
        if row % 2:
            string[rng.integers(length)] ^= 3  # flip one bracket: unbalanced
        ids[row, :length] = string
        labels[row] = row % 2 == 0
    return ids, labels


def make_model(cell="diffstk_rnn", **options):
    keras.utils.set_random_seed(0)
    model = recognizer(cell, VOCAB, 8, **{"stack_depth": 8, **options})
    model.compile(keras.optimizers.Adam(2e-2), **hybrid_recognition_loss())
    return model


def log_softmax(x):
    x = x - x.max(-1, keepdims=True)
    return x - np.log(np.exp(x).sum(-1, keepdims=True))


def test_loss_is_the_hybrid_loss_over_unpadded_steps():
    model = make_model()
    ids, labels = dyck1_set(6, 8, seed=0)
    targets = recognition_targets(ids, labels)
    outputs = model(ids)
    logits = np.asarray(outputs["next_symbol"], "float64")
    accept = np.asarray(outputs["accept"], "float64")[..., 0]
    mask = ids != 0
    cross_entropy = -np.take_along_axis(
        log_softmax(logits), targets["next_symbol"][..., None], -1
    )[..., 0]
    squared = (accept - targets["accept"][..., 0]) ** 2
    expected = cross_entropy[mask].mean() + 0.5 * squared[mask].mean()
    loss = model.evaluate(ids, targets, verbose=0, return_dict=True)["loss"]
    np.testing.assert_allclose(loss, expected, rtol=1e-5)
    # Padding more steps changes nothing.
    padded = np.pad(ids, ((0, 0), (0, 4)))
    padded_targets = recognition_targets(padded, labels)
    padded_loss = model.evaluate(padded, padded_targets, verbose=0)[0]
    np.testing.assert_allclose(padded_loss, loss, rtol=1e-5)


def test_fit_decreases_the_hybrid_loss():
    model = make_model(noise_stddev=0.05, seed=1)
    ids, labels = dyck1_set(32, 10, seed=1)
    history = model.fit(
        ids, recognition_targets(ids, labels), batch_size=16, epochs=6, verbose=0
    )
    losses = history.history["loss"]
    assert losses[-1] < 0.8 * losses[0], losses


def test_trace_recognizer_returns_stack_actions():
    model = make_model()
    ids, _ = dyck1_set(3, 8, seed=2)
    trace = trace_recognizer(model, ids)
    assert trace["actions"].shape == (3, 8, 3)
    assert trace["stack_top"].shape == (3, 8, 1)
    np.testing.assert_allclose(np.sum(trace["actions"], -1), 1.0, atol=1e-6)
    # The traced outputs are the model's recurrent outputs on real steps.
    (recurrent,) = zoo.model_parts(model).recurrent
    hidden = keras.Model(model.input, recurrent.output)(ids)
    assert (ids[:, :2] != 0).all()
    np.testing.assert_allclose(
        np.asarray(trace["outputs"])[:, :2], np.asarray(hidden)[:, :2], atol=1e-5
    )


@pytest.mark.parametrize(
    "cell, options",
    [
        ("stack_rnn", {"stack_depth": 8}),
        ("lstm", {}),
        ("tensor_rnn", {}),
        ("lstm", {"num_layers": 2, "dropout": 0.3}),
        ("min_gru", {"num_layers": 2}),
    ],
)
def test_any_registered_cell(cell, options):
    keras.utils.set_random_seed(0)
    model = recognizer(cell, VOCAB, 4, **options)
    ids, _ = dyck1_set(3, 6, seed=3)
    outputs = model(ids)
    assert outputs["next_symbol"].shape == (3, 6, VOCAB)
    assert outputs["accept"].shape == (3, 6, 1)
    # Padding is masked: the last real step's outputs ignore the padding.
    row = ids[0][ids[0] != 0]
    short = model(row[None])
    np.testing.assert_allclose(
        short["accept"][0, -1], outputs["accept"][0, len(row) - 1], atol=1e-5
    )


def test_layers_are_the_cells_sequence_layers():
    model = recognizer("min_gru", VOCAB, 4, num_layers=2, dropout=0.2)
    layers = zoo.model_parts(model).recurrent
    assert len(layers) == 2 and all(type(layer) is zoo.MinGRU for layer in layers)
    dropouts = [x for x in model.layers if isinstance(x, keras.layers.Dropout)]
    assert [x.rate for x in dropouts] == [0.2, 0.2, 0.2]  # embedding, each layer


def test_save_and_load(tmp_path):
    keras.utils.set_random_seed(0)
    model = recognizer("diffstk_lstm", VOCAB, 8, stack_depth=8)
    ids, _ = dyck1_set(3, 6, seed=4)
    path = tmp_path / "recognizer.keras"
    model.save(path)
    restored = keras.models.load_model(path)
    expected = model(ids)
    for key, value in restored(ids).items():
        np.testing.assert_array_equal(value, expected[key])


def test_recognition_targets():
    targets = recognition_targets(np.array([[1, 1, 2, 2, 0]]), np.array([1.0]))
    assert targets["next_symbol"].tolist() == [[1, 2, 2, 0, 0]]
    assert targets["accept"].tolist() == [[[1.0]] * 5]
    per_step = recognition_targets(np.array([[1, 2]]), np.array([[0.0, 1.0]]))
    assert per_step["accept"].tolist() == [[[0.0], [1.0]]]
    with pytest.raises(ValueError, match="`labels` shape"):
        recognition_targets(np.ones((2, 3)), np.ones(3))


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"cell": "nope"}, "Unknown cell 'nope'"),
        ({"vocab_size": 0}, "`vocab_size` must be a positive integer"),
        ({"units": 2.0}, "`units` must be a positive integer"),
        ({"embedding_dim": -1}, "`embedding_dim` must be a positive integer"),
        ({"num_layers": 0}, "`num_layers` must be a positive integer"),
        ({"dropout": 1.0}, r"`dropout` must be in \[0, 1\); received 1.0"),
        ({"cell": "tensor_rnn", "num_layers": 2}, "reads token ids"),
    ],
)
def test_invalid_arguments(kwargs, message):
    arguments = {"cell": "stack_rnn", "vocab_size": VOCAB, "units": 4, **kwargs}
    with pytest.raises(ValueError, match=message):
        recognizer(**arguments)
