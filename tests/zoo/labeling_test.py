import keras
import numpy as np
import pytest

import zoo
from zoo.labeling import classifier, tagger
from zoo.layers import SequencePooling

VOCAB, UNITS, CLASSES = 7, 4, 3
# Rows of 5, 3 and 1 tokens, padded with 0 to 6 steps; ids within the Dyck
# layout, which the dyck_rnn cell reads.
IDS = np.array(
    [[3, 4, 6, 5, 3, 0], [4, 4, 6, 0, 0, 0], [5, 0, 0, 0, 0, 0]], dtype="int32"
)
LENGTHS = (IDS != 0).sum(1)


def setup_function():
    keras.utils.set_random_seed(0)


def log_softmax(x):
    x = x - x.max(-1, keepdims=True)
    return x - np.log(np.exp(x).sum(-1, keepdims=True))


def unpadded(model):
    """The model's output on each row alone, without its padding."""
    return [np.asarray(model(IDS[i : i + 1, :n]))[0] for i, n in enumerate(LENGTHS)]


def test_tagger_stacks_bidirectional_layers():
    model = tagger("mlstm", VOCAB, UNITS, CLASSES, num_layers=2, bidirectional=True)
    assert model(IDS).shape == (3, 6, CLASSES)
    parts = zoo.model_parts(model)
    first, second = parts.recurrent
    assert isinstance(first, keras.layers.Bidirectional)
    assert first.forward_layer.go_backwards is False
    assert first.backward_layer.go_backwards is True
    # The second layer reads both directions' states of the first.
    assert second.forward_layer.cell.kernel.shape[0] == 2 * UNITS
    assert parts.head.kernel.shape == (2 * UNITS, CLASSES)


@pytest.mark.parametrize("bidirectional", [False, True])
def test_tagger_loss_is_the_mean_cross_entropy_over_the_unpadded_tokens(
    bidirectional,
):
    model = tagger("lstm", VOCAB, UNITS, CLASSES, bidirectional=bidirectional)
    model.compile(loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    rng = np.random.default_rng(1)
    labels = rng.integers(0, CLASSES, IDS.shape)
    logits = np.asarray(model(IDS), "float64")
    picked = np.take_along_axis(log_softmax(logits), labels[..., None], -1)[..., 0]
    expected = -picked[IDS != 0].mean()  # the lecture's L = -1/n sum_i log P(y_i)
    loss = model.evaluate(IDS, labels, verbose=0)
    np.testing.assert_allclose(loss, expected, rtol=1e-5)
    # Padded steps, whatever their labels, change neither the loss nor a label.
    padded = np.pad(IDS, ((0, 0), (0, 4)))
    noise = np.pad(labels, ((0, 0), (0, 4)), constant_values=CLASSES - 1)
    noise[padded == 0] = rng.integers(0, CLASSES, int((padded == 0).sum()))
    np.testing.assert_allclose(
        model.evaluate(padded, noise, verbose=0), loss, rtol=1e-5
    )
    np.testing.assert_allclose(
        np.asarray(model(padded))[:, :6][IDS != 0], logits[IDS != 0], atol=1e-5
    )


@pytest.mark.parametrize("bidirectional", [False, True])
@pytest.mark.parametrize("cell", ["lstm", "min_gru", "stack_rnn", "tensor_rnn"])
def test_padding_changes_no_tag(cell, bidirectional):
    model = tagger(cell, VOCAB, UNITS, CLASSES, bidirectional=bidirectional)
    logits = np.asarray(model(IDS))
    for row, (alone, n) in enumerate(zip(unpadded(model), LENGTHS, strict=True)):
        np.testing.assert_allclose(logits[row, :n], alone, atol=1e-5)


# "last" reads each direction's last unmasked state from the recurrent layer;
# "mean" and "max" pool its masked sequence, the same recurrent path, and
# differ only in `SequencePooling` (tests/zoo/layers/pooling_test.py). So
# each cell and direction is run with "last" and with one of the two, and
# each of the two with every cell and with both directions.
CELLS = ["lstm", "min_gru", "diffstk_rnn", "tensor_rnn"]
POOLED = [
    (cell, bidirectional, pooling)
    for index, cell in enumerate(CELLS)
    for bidirectional in (False, True)
    for pooling in ("last", ("mean", "max")[(index + bidirectional) % 2])
]


@pytest.mark.parametrize("cell, bidirectional, pooling", POOLED)
def test_padding_changes_no_class(cell, bidirectional, pooling):
    model = classifier(
        cell, VOCAB, UNITS, 2, bidirectional=bidirectional, pooling=pooling
    )
    logits = np.asarray(model(IDS))
    assert logits.shape == (3, 2)
    np.testing.assert_allclose(logits, np.stack(unpadded(model)), atol=1e-5)


A, B = 0.5, -0.3  # the forward and the backward direction's decay


def linear_bidirectional(builder, num_classes):
    """`builder`'s bidirectional model of two hand-set linear directions.

    Each direction is `h_t = e(x_t) + d h_{t-1}` with its own decay `d` (`A`
    forward, `B` backward), so the weight of each token in a state tells
    where the direction started and stopped reading. Returns the model, the
    function to its bidirectional layer's output and the embedding table.
    """
    model = builder(
        "rnn",
        VOCAB,
        UNITS,
        num_classes,
        bidirectional=True,
        embedding_dim=UNITS,
        activation="linear",
        use_bias=False,
    )
    parts = zoo.model_parts(model)
    (layer,) = parts.recurrent
    for direction, decay in ((layer.forward_layer, A), (layer.backward_layer, B)):
        direction.cell.kernel.assign(np.eye(UNITS, dtype="float32"))
        direction.cell.recurrent_kernel.assign(decay * np.eye(UNITS, dtype="float32"))
    states = keras.Model(model.input, layer.output)
    table = np.asarray(parts.embedding.embeddings, "float64")
    return model, states, table


def test_bidirectional_last_pooling_reads_the_forward_end_and_the_backward_start():
    # The lecture's "slight modifications": the backward pass's last state is
    # at the first token.
    _, states, table = linear_bidirectional(classifier, 2)
    got = np.asarray(states(IDS))
    for row, n in enumerate(LENGTHS):
        e = table[IDS[row, :n]]  # [n, units]
        forward = sum(A ** (n - 1 - t) * e[t] for t in range(n))  # ends at x_n
        backward = sum(B**t * e[t] for t in range(n))  # ends at x_1
        np.testing.assert_allclose(got[row], np.concatenate([forward, backward]), 1e-5)
    # Not the backward state at the last token, which has read that token only.
    assert not np.allclose(got[0, UNITS:], table[IDS[0, 4]], atol=1e-3)


def test_bidirectional_tagger_reads_the_left_and_the_right_context():
    _, states, table = linear_bidirectional(tagger, CLASSES)
    got = np.asarray(states(IDS))
    for row, n in enumerate(LENGTHS):
        e = table[IDS[row, :n]]
        for t in range(n):
            left = sum(A ** (t - s) * e[s] for s in range(t + 1))
            right = sum(B ** (s - t) * e[s] for s in range(t, n))
            np.testing.assert_allclose(
                got[row, t], np.concatenate([left, right]), atol=1e-5
            )


@pytest.mark.parametrize("pooling", ["mean", "max"])
def test_mean_and_max_pool_the_top_layers_states(pooling):
    model = classifier(
        "mlstm", VOCAB, UNITS, 2, num_layers=2, bidirectional=True, pooling=pooling
    )
    top_layer = zoo.model_parts(model).recurrent[-1]
    (layer,) = [x for x in model.layers if isinstance(x, SequencePooling)]
    top = keras.Model(model.input, top_layer.output)(IDS)
    pooled = keras.Model(model.input, layer.output)(IDS)
    top = np.asarray(top)
    reduce = np.mean if pooling == "mean" else np.max
    expected = np.stack([reduce(top[i, :n], axis=0) for i, n in enumerate(LENGTHS)])
    np.testing.assert_allclose(pooled, expected, atol=1e-6)


@pytest.mark.parametrize("cell", zoo.available_cells())
def test_every_registered_cell_builds_a_bidirectional_tagger_and_classifier(cell):
    logits = tagger(cell, VOCAB, UNITS, CLASSES, bidirectional=True)(IDS)
    assert logits.shape == (3, 6, CLASSES) and np.all(np.isfinite(logits))
    logits = classifier(cell, VOCAB, UNITS, 2, bidirectional=True)(IDS)
    assert logits.shape == (3, 2) and np.all(np.isfinite(logits))


def test_dropout_is_variational_on_states_and_plain_on_the_last_state():
    model = classifier("lstm", VOCAB, UNITS, 2, num_layers=2, dropout=0.3)
    dropouts = [x for x in model.layers if isinstance(x, keras.layers.Dropout)]
    embedding, first, top = dropouts
    assert embedding.noise_shape == first.noise_shape == (None, 1, None)
    assert top.noise_shape is None  # (batch, features)
    np.testing.assert_array_equal(model(IDS), model(IDS))  # off at inference


@pytest.mark.parametrize(
    "build",
    [
        lambda: tagger("mlstm", VOCAB, UNITS, CLASSES, num_layers=2, dropout=0.2),
        lambda: tagger("min_gru", VOCAB, UNITS, CLASSES, bidirectional=True),
        lambda: classifier("stack_rnn", VOCAB, UNITS, 2, bidirectional=True),
        lambda: classifier("diffstk_lstm", VOCAB, UNITS, 2, pooling="max"),
        lambda: classifier("tensor_rnn", VOCAB, UNITS, 2, bidirectional=True),
    ],
)
def test_save_and_load(build, tmp_path):
    model = build()
    path = tmp_path / "model.keras"
    model.save(path)
    restored = keras.models.load_model(path)
    np.testing.assert_array_equal(restored(IDS), model(IDS))


def test_mixed_precision_computes_low_and_gives_float32_logits():
    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy("mixed_bfloat16")
    try:
        models = [
            tagger("mlstm", VOCAB, UNITS, CLASSES, bidirectional=True),
            classifier("lstm", VOCAB, UNITS, 2, pooling="mean"),
        ]
    finally:
        keras.config.set_dtype_policy(previous)
    for model in models:
        assert zoo.model_parts(model).recurrent[0].compute_dtype == "bfloat16"
        logits = model(IDS)
        assert keras.backend.standardize_dtype(logits.dtype) == "float32"
        assert np.all(np.isfinite(logits))


def test_fit_lowers_the_loss():
    # The class is the first token: what the backward pass reads last.
    rng = np.random.default_rng(2)
    ids = rng.integers(1, VOCAB, (64, 6)).astype("int32")
    labels = (ids[:, 0] > VOCAB // 2).astype("int32")
    model = classifier("gru", VOCAB, 8, 2, bidirectional=True)
    model.compile(
        keras.optimizers.Adam(0.02),
        keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    history = model.fit(ids, labels, epochs=15, batch_size=16, verbose=0)
    assert history.history["loss"][-1] < 0.5 * history.history["loss"][0]


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"cell": "nope"}, "Unknown cell 'nope'"),
        ({"vocab_size": 0}, "`vocab_size` must be a positive integer"),
        ({"units": 2.0}, "`units` must be a positive integer"),
        ({"num_classes": 0}, "`num_classes` must be a positive integer; received 0"),
        ({"num_layers": 0}, "`num_layers` must be a positive integer"),
        ({"dropout": 1.0}, r"`dropout` must be in \[0, 1\); received 1.0"),
        ({"embedding_dim": -1}, "`embedding_dim` must be a positive integer"),
        ({"bidirectional": "yes"}, "`bidirectional` must be True or False"),
        ({"cell": "tensor_rnn", "num_layers": 2}, "reads token ids"),
        ({"cell": "mlstm", "forget_bias": "x"}, "`forget_bias` must be a number"),
    ],
)
@pytest.mark.parametrize("builder", [tagger, classifier])
def test_invalid_arguments(builder, kwargs, message):
    arguments = {"cell": "lstm", "vocab_size": VOCAB, "units": UNITS, **kwargs}
    with pytest.raises(ValueError, match=message):
        builder(**{"num_classes": 2, **arguments})


def test_invalid_pooling():
    with pytest.raises(ValueError, match="`pooling` must be one of 'last', 'mean'"):
        classifier("lstm", VOCAB, UNITS, 2, pooling="first")
