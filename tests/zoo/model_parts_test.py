import keras
import numpy as np
import pytest

import zoo
from zoo import presets
from zoo.backbone import recurrent_names
from zoo.cells.stack_cell import StackCell
from zoo.layers import DyckReadout

VOCAB, UNITS = 7, 4
IDS = np.array([[1, 3, 4, 6, 5, 2], [1, 4, 6, 2, 0, 0]], "int32")


def setup_function():
    keras.utils.set_random_seed(0)


# (builder, its arguments, (the embedding's class, the recurrent layers' names,
# the heads' names)): what each builder makes, under the names the builders
# have always given (`.keras` files record them in their graphs).
BUILT = [
    (
        zoo.language_model,
        ("mlstm", VOCAB, UNITS),
        {"num_layers": 2, "dropout": 0.1},
        (keras.layers.ReversibleEmbedding, ["mlstm_0", "mlstm_1"], ["logits"]),
    ),
    (
        zoo.language_model,
        ("lstm", VOCAB, UNITS),
        {"tie_embeddings": True, "embedding_dim": 3},
        (keras.layers.ReversibleEmbedding, ["lstm_0"], ["float32_logits"]),
    ),
    (
        zoo.language_model,
        ("tensor_rnn", VOCAB, UNITS),
        {"stateful": True, "batch_size": 2},
        (None, ["tensor_rnn_0"], ["logits"]),
    ),
    (
        zoo.recognizer,
        ("min_gru", VOCAB, UNITS),
        {"num_layers": 3},
        (keras.layers.Embedding, recurrent_names(3), ["accept", "next_symbol"]),
    ),
    (
        zoo.tagger,
        ("gru", VOCAB, UNITS, 3),
        {"num_layers": 2, "bidirectional": True},
        (keras.layers.Embedding, ["recurrent", "recurrent_1"], ["logits"]),
    ),
    (
        zoo.classifier,
        ("lstm", VOCAB, UNITS, 2),
        {"pooling": "max", "dropout": 0.2},
        (keras.layers.Embedding, ["recurrent"], ["logits"]),
    ),
    (zoo.dyck_rnn_model, (2, 4), {}, (None, None, None)),  # Keras names its layers
]


@pytest.mark.parametrize("builder, args, kwargs, expected", BUILT)
def test_the_parts_are_the_layers_each_builder_made(builder, args, kwargs, expected):
    model = builder(*args, **kwargs)
    embedding_class, names, head_names = expected
    parts = zoo.model_parts(model)
    if embedding_class is None:
        assert parts.embedding is None
    else:
        assert type(parts.embedding) is embedding_class
    if names is not None:
        assert [layer.name for layer in parts.recurrent] == names
    recurrent = (keras.layers.RNN, keras.layers.Bidirectional)
    assert list(parts.recurrent) == [
        x for x in model.layers if isinstance(x, recurrent)
    ]
    if head_names is None:
        assert isinstance(parts.head, DyckReadout)
    else:
        assert list(parts.heads) == sorted(head_names)
    for name, head in parts.heads.items():  # each head gives its output
        assert head.name == name and any(head.output is t for t in model.outputs)


def test_the_parts_compute_what_the_model_does():
    model = zoo.language_model("lstm", VOCAB, UNITS, num_layers=2)
    parts = zoo.model_parts(model)
    hidden = parts.embedding(IDS)
    for layer in parts.recurrent:
        hidden = layer(hidden)
    np.testing.assert_allclose(parts.head(hidden), model(IDS), atol=1e-6)


def test_a_loaded_model_has_the_parts_of_the_saved_one(tmp_path):
    model = zoo.recognizer("diffstk_rnn", VOCAB, UNITS, stack_depth=4, num_layers=2)
    model.save(tmp_path / "recognizer.keras")
    loaded = keras.saving.load_model(tmp_path / "recognizer.keras")
    assert type(loaded) is zoo.Recognizer  # the class, with its parts
    saved, found = zoo.model_parts(model), zoo.model_parts(loaded)
    assert found.recurrent[0] is not saved.recurrent[0]
    for a, b in zip(saved.recurrent, found.recurrent, strict=True):
        assert a.name == b.name
        for x, y in zip(a.weights, b.weights, strict=True):
            np.testing.assert_array_equal(x, y)
    np.testing.assert_array_equal(
        found.embedding.embeddings, saved.embedding.embeddings
    )
    np.testing.assert_array_equal(
        found.heads["accept"].kernel, saved.heads["accept"].kernel
    )


@pytest.mark.parametrize("name", presets.available())
def test_every_built_in_preset_has_its_parts(name):
    preset = zoo.from_preset(name)
    model = preset.model
    parts = zoo.model_parts(model)
    cell = parts.recurrent[0].cell
    # A typed recipe holds its kind's keys: the Dyck-RNN's has no num_layers,
    # its model one recurrent layer.
    assert len(parts.recurrent) == preset.config["model"].get("num_layers", 1)
    if isinstance(cell, StackCell):  # a recognizer: its stack can be traced
        assert list(parts.heads) == ["accept", "next_symbol"]
        ids = np.array([[1, 3, 4, 4, 3, 2]], "int32")  # no padding
        traced = zoo.trace_recognizer(model, ids)
        hidden = keras.Model(model.input, parts.recurrent[0].output)(ids)
        np.testing.assert_allclose(traced["outputs"], hidden, atol=1e-5)
    elif parts.embedding is None:  # the Dyck-RNN reads the ids
        assert isinstance(parts.head, DyckReadout)
    else:  # a language model: logits over the vocabulary
        assert isinstance(parts.embedding, keras.layers.ReversibleEmbedding)
        assert parts.head.units == parts.embedding.input_dim


def test_a_model_with_two_heads_has_no_one_head():
    parts = zoo.model_parts(zoo.recognizer("lstm", VOCAB, UNITS))
    with pytest.raises(ValueError, match=r"^Expected a model with one head; .*2"):
        _ = parts.head


def test_a_model_not_of_a_zoo_class_is_a_one_line_error():
    inputs = keras.Input((3,))
    model = keras.Model(inputs, keras.layers.Dense(2)(inputs), name="dense")
    for other in (model, keras.layers.Dense(2)):
        with pytest.raises(ValueError, match=r"^Expected a zoo model .*received"):
            zoo.model_parts(other)
