import keras
import numpy as np
import pytest

import zoo
from zoo.devices import gpu_visible
from zoo.models import language_model

VOCAB, UNITS = 11, 8


def token_ids(batch=3, time=6, seed=0):
    return np.random.default_rng(seed).integers(0, VOCAB, (batch, time)).astype("int32")


def setup_function():
    keras.utils.set_random_seed(0)


def dropouts(model):
    """The model's dropout layers, bottom first."""
    return [layer for layer in model.layers if isinstance(layer, keras.layers.Dropout)]


def test_layers_feed_each_other_and_logits_follow_the_last_layer():
    model = language_model("mlstm", VOCAB, UNITS, embedding_dim=5, num_layers=2)
    ids = token_ids()
    parts = zoo.model_parts(model)
    embedding, (first, second), decoder = parts.embedding, parts.recurrent, parts.head
    hidden = second(first(embedding(ids)))
    np.testing.assert_allclose(model(ids), decoder(hidden), atol=1e-6)
    assert model(ids).shape == (3, 6, VOCAB)
    assert first.cell.kernel.shape[0] == 5 and second.cell.kernel.shape[0] == UNITS


def test_dropout_is_variational_and_off_at_inference():
    model = language_model("lstm", VOCAB, UNITS, dropout=0.5)
    dropout = dropouts(model)[0]  # on the embedding
    x = np.ones((4, 7, UNITS), "float32")
    dropped = np.asarray(dropout(x, training=True))
    kept = dropped != 0
    assert 0 < kept.mean() < 1
    np.testing.assert_array_equal(kept, np.repeat(kept[:, :1], 7, axis=1))
    np.testing.assert_array_equal(dropout(x, training=False), x)
    ids = token_ids()
    np.testing.assert_array_equal(model(ids), model(ids))


def test_output_dropout_applies_before_the_decoder_only():
    model = language_model("lstm", VOCAB, UNITS, num_layers=2, output_dropout=0.25)
    names = [layer.name for layer in model.layers]
    assert "embedding_dropout" not in names and "dropout_0" not in names
    assert [(layer.name, layer.rate) for layer in dropouts(model)] == [
        ("dropout_1", 0.25)
    ]
    both = language_model("lstm", VOCAB, UNITS, num_layers=2, dropout=0.5)
    assert dropouts(both)[-1].rate == 0.5  # defaults to `dropout`


def test_tied_embeddings_decode_with_the_transposed_embedding(tmp_path):
    model = language_model(
        "mrnn", VOCAB, UNITS, embedding_dim=4, tie_embeddings=True, num_layers=1
    )
    names = [layer.name for layer in model.layers]
    assert "logits" not in names and "projection" in names
    ids = token_ids()
    parts = zoo.model_parts(model)
    (projection,) = [x for x in model.layers if isinstance(x, keras.layers.Dense)]
    embedding, (recurrent,) = parts.embedding, parts.recurrent
    hidden = projection(recurrent(embedding(ids)))
    expected = np.asarray(hidden) @ np.asarray(embedding.embeddings).T
    np.testing.assert_allclose(model(ids), expected, atol=1e-5)
    path = tmp_path / "tied.keras"
    model.save(path)
    np.testing.assert_array_equal(keras.models.load_model(path)(ids), model(ids))


def test_stateful_model_continues_across_batches():
    stateless = language_model("mlstm", VOCAB, UNITS)
    stateful = language_model("mlstm", VOCAB, UNITS, stateful=True, batch_size=3)
    stateful.set_weights(stateless.get_weights())
    ids = token_ids(time=8)
    zoo.reset_states(stateful)
    parts = [stateful(ids[:, :4]), stateful(ids[:, 4:])]
    np.testing.assert_allclose(np.concatenate(parts, axis=1), stateless(ids), atol=1e-5)
    zoo.reset_states(stateful)
    np.testing.assert_allclose(stateful(ids[:, 4:]), stateless(ids[:, 4:]), atol=1e-5)


def test_token_id_cell_reads_ids_directly():
    model = language_model("tensor_rnn", VOCAB, UNITS)
    parts = zoo.model_parts(model)
    assert parts.embedding is None
    assert parts.recurrent[0].cell.vocab_size == VOCAB
    assert model(token_ids()).shape == (3, 6, VOCAB)


@pytest.mark.parametrize("cell", zoo.available_cells())
def test_every_cell_builds_a_language_model_and_a_recognizer(cell):
    ids = token_ids() % 7  # within the Dyck layout the dyck_rnn reads
    logits = language_model(cell, VOCAB, UNITS)(ids)
    assert logits.shape == (3, 6, VOCAB) and np.all(np.isfinite(logits))
    outputs = zoo.recognizer(cell, VOCAB, UNITS)(ids)
    assert outputs["next_symbol"].shape == (3, 6, VOCAB)
    assert outputs["accept"].shape == (3, 6, 1)


def test_fit_lowers_the_loss():
    model = language_model("mlstm", VOCAB, UNITS)
    model.compile(
        optimizer=keras.optimizers.Adam(0.02),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    ids = np.tile(np.arange(VOCAB, dtype="int32"), (8, 2))
    history = model.fit(ids[:, :-1], ids[:, 1:], epochs=20, verbose=0)
    assert history.history["loss"][-1] < 0.8 * history.history["loss"][0]


def test_registry():
    names = zoo.available_cells()
    assert names == sorted(names)
    assert {"rnn", "lstm", "gru", "mrnn", "mlstm", "tensor_rnn"} <= set(names)
    assert zoo.get_cell_class("lstm") is keras.layers.LSTMCell
    cell = zoo.get_cell("mlstm", 7, forget_bias=3.0)
    assert isinstance(cell, zoo.MultiplicativeLSTMCell) and cell.forget_bias == 3.0


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(cell="nope"), "Unknown cell 'nope'; expected one of: .*mlstm"),
        (dict(units=0), "`units` must be a positive integer"),
        (dict(vocab_size=-3), "`vocab_size` must be a positive integer"),
        (dict(num_layers=0), "`num_layers` must be a positive integer"),
        (dict(dropout=1.0), "`dropout` must be in"),
        (dict(dropout=-0.1), "`dropout` must be in"),
        (dict(output_dropout=1.5), "`output_dropout` must be in"),
        (dict(embedding_dim=0), "`embedding_dim` must be a positive integer"),
        (dict(stateful=True), "`batch_size .*` must be a positive integer"),
        (dict(cell="tensor_rnn", num_layers=2), "reads token ids"),
        (dict(cell="mlstm", forget_bias="x"), "`forget_bias` must be a number"),
    ],
)
def test_invalid_arguments(kwargs, message):
    arguments = dict(cell="mlstm", vocab_size=VOCAB, units=UNITS) | kwargs
    with pytest.raises(ValueError, match=message):
        language_model(**arguments)


def test_get_cell_rejects_unknown_options():
    with pytest.raises(ValueError, match="Unrecognized keyword arguments"):
        zoo.get_cell("mrnn", 4, forget_bias=1.0)


def test_device_defaults_follow_the_backend(monkeypatch):
    # On this CPU with TensorFlow: no GPU, so no XLA and minGRU scans in a loop.
    assert gpu_visible() is False
    assert zoo.default_jit_compile() is False
    # Given a step's shape: XLA up to CPU_XLA_MAX_UNITS, at any length.
    assert zoo.default_jit_compile(units=8, batch=32, length=56) is True
    assert zoo.default_jit_compile(units=32, batch=32, length=1024) is True
    assert zoo.default_jit_compile(units=512, batch=32, length=2048) is True
    assert zoo.default_jit_compile(units=1024, batch=1, length=16) is False
    assert zoo.MinGRU(4).parallel is False
    # Another backend keeps Keras's own compile choice.
    monkeypatch.setattr(keras.backend, "backend", lambda: "jax")
    assert zoo.default_jit_compile() == "auto"
