import keras
import numpy as np

from zoo.backbone import recurrent_names, recurrent_stack

FEATURES, UNITS = 3, 4


def setup_function():
    keras.utils.set_random_seed(0)


def stack_model(names, **options):
    inputs = keras.Input((None, FEATURES))
    return keras.Model(
        inputs, recurrent_stack(inputs, "lstm", UNITS, names, {}, **options)[0]
    )


def test_the_builders_names_of_their_recurrent_layers():
    assert recurrent_names(3, "mlstm") == ["mlstm_0", "mlstm_1", "mlstm_2"]
    assert recurrent_names(3) == ["recurrent", "recurrent_1", "recurrent_2"]
    assert recurrent_names(1) == ["recurrent"]


def test_each_layer_reads_the_one_below_with_dropout_after_it():
    model = stack_model(["low", "high"], dropout=0.1, output_dropout=0.3)
    layers = [(type(x).__name__, x.name) for x in model.layers[1:]]
    assert layers == [
        ("RNN", "low"),
        ("Dropout", "dropout_0"),
        ("RNN", "high"),
        ("Dropout", "dropout_1"),
    ]
    low, first, high, top = model.layers[1:]
    assert (first.rate, top.rate) == (0.1, 0.3)
    assert first.noise_shape == top.noise_shape == (None, 1, None)  # variational
    x = np.random.default_rng(0).normal(size=(2, 5, FEATURES)).astype("float32")
    np.testing.assert_allclose(model(x), high(low(x)), atol=1e-6)  # no dropout


def test_a_last_state_on_top_gets_plain_dropout():
    model = stack_model(
        ["low", "high"], dropout=0.2, bidirectional=True, last_state=True
    )
    low, first, high, top = model.layers[1:]
    assert isinstance(high, keras.layers.Bidirectional)
    assert low.return_sequences and not high.return_sequences
    assert first.noise_shape == (None, 1, None) and top.noise_shape is None
    assert model.output.shape == (None, 2 * UNITS)


def test_a_masked_stack_skips_the_padded_steps():
    inputs = keras.Input((None, FEATURES))
    mask = keras.ops.any(keras.ops.not_equal(inputs, 0), axis=-1)
    outputs, layers = recurrent_stack(
        inputs, "gru", UNITS, recurrent_names(2), {}, masked=True, mask=mask
    )
    assert [layer.name for layer in layers] == recurrent_names(2)
    model = keras.Model(inputs, outputs)
    x = np.random.default_rng(1).normal(size=(1, 4, FEATURES)).astype("float32")
    padded = np.concatenate([x, np.zeros((1, 2, FEATURES), "float32")], axis=1)
    np.testing.assert_allclose(model(padded)[:, 3], model(padded)[:, 5], atol=1e-6)
    np.testing.assert_allclose(model(padded)[:, :4], model(x), atol=1e-6)
