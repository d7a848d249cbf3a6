"""The zoo's TensorFlow loop against Keras's own (zoo/tensorflow_loop.py)."""

import keras
import numpy as np
import pytest
import tensorflow as tf

import zoo

pytestmark = pytest.mark.skipif(
    keras.backend.backend() != "tensorflow", reason="the loop is TensorFlow's"
)

BATCH, TIME, FEATURES, UNITS = 3, 6, 4, 5


def inputs_and_mask(seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(BATCH, TIME, FEATURES)).astype("float32")
    lengths = np.array([TIME, 4, 1])
    return x, np.arange(TIME)[None, :] < lengths[:, None]


def twin_layers(cell, units=UNITS, **options):
    """A `keras.layers.RNN` with Keras's loop and a `zoo.RNN`, same weights."""
    keras_layer = keras.layers.RNN(zoo.get_cell(cell, units), **options)
    zoo_layer = zoo.RNN(zoo.get_cell(cell, units), **options)
    x, _ = inputs_and_mask()
    keras_layer(x), zoo_layer(x)
    zoo_layer.set_weights(keras_layer.get_weights())
    return keras_layer, zoo_layer


def outputs_and_gradients(layer, x, mask, function):
    @function
    def run(x, mask):
        with tf.GradientTape() as tape:
            outputs = layer(x, mask=mask)
            loss = sum(tf.reduce_sum(out**2) for out in tf.nest.flatten(outputs))
        return outputs, tape.gradient(loss, layer.trainable_weights)

    return run(x, mask)


OPTIONS = {
    "sequences": {"return_sequences": True},
    "last": {"return_sequences": False},
    "backwards": {"return_sequences": True, "go_backwards": True},
    "state": {"return_sequences": True, "return_state": True},
    "zero_output": {"return_sequences": True, "zero_output_for_mask": True},
}
# The loop takes each option the same way whatever the cell: every option
# with the LSTM, and every other cell (one state or several, choices, a
# cell of cells) with all the options of a sequence at once.
EVERY = {
    "return_sequences": True,
    "go_backwards": True,
    "return_state": True,
    "zero_output_for_mask": True,
}
GRAPH, EAGER = tf.function, lambda f: f
# Eager, the loop runs each option alone with the LSTM; traced, the same
# Python code builds the same ops, so the LSTM runs the options of a sequence
# at once (and the last step alone, which cannot be among them).
CASES = [
    *(
        pytest.param("lstm", options, EAGER, id=f"eager-lstm-{name}")
        for name, options in OPTIONS.items()
    ),
    pytest.param("lstm", OPTIONS["last"], GRAPH, id="graph-lstm-last"),
    *(
        pytest.param(cell, EVERY, function, id=f"{mode}-{cell}-every")
        for cell in ("lstm", "gru", "mlstm", "mmlstm", "second_order_lstm")
        for mode, function in (("graph", GRAPH), ("eager", EAGER))
        if (cell, mode) != ("lstm", "eager")
    ),
]


@pytest.mark.parametrize("cell, options, function", CASES)
def test_outputs_and_gradients_equal_keras_loop(cell, options, function):
    keras.utils.set_random_seed(0)
    keras_layer, zoo_layer = twin_layers(cell, **options)
    x, mask = inputs_and_mask()
    expected = outputs_and_gradients(keras_layer, x, mask, function)
    received = outputs_and_gradients(zoo_layer, x, mask, function)
    for want, got in zip(
        tf.nest.flatten(expected), tf.nest.flatten(received), strict=True
    ):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_xla_compiled_step_equals_keras_loop():
    keras.utils.set_random_seed(0)
    keras_layer, zoo_layer = twin_layers("lstm", return_sequences=True)
    x, mask = inputs_and_mask()
    compiled = tf.function(jit_compile=True)
    expected = outputs_and_gradients(keras_layer, x, mask, compiled)
    received = outputs_and_gradients(zoo_layer, x, mask, compiled)
    for want, got in zip(
        tf.nest.flatten(expected), tf.nest.flatten(received), strict=True
    ):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def while_bodies(layer, x, mask):
    """The op types inside the forward `while` body of a traced gradient step."""
    traced = tf.function(
        lambda x, mask: outputs_and_gradients(layer, x, mask, lambda f: f)
    ).get_concrete_function(tf.TensorSpec(x.shape), tf.TensorSpec(mask.shape, tf.bool))
    library = {
        f.signature.name: f for f in traced.graph.as_graph_def().library.function
    }
    bodies = [
        {node.op for node in library[node.attr["body"].func.name].node_def}
        for function in library.values()
        for node in function.node_def
        if node.op in ("While", "StatelessWhile")
        and "grad" not in function.signature.name
    ]
    bodies += [
        {node.op for node in library[node.attr["body"].func.name].node_def}
        for node in traced.graph.as_graph_def().node
        if node.op in ("While", "StatelessWhile")
    ]
    return bodies


def test_the_loop_reads_no_weight_and_writes_no_tensor_array():
    # What makes the step fast: the weights are read once, before the loop,
    # and the outputs are pushed onto a list (its gradient only reads).
    keras.utils.set_random_seed(0)
    keras_layer, zoo_layer = twin_layers("lstm", return_sequences=True)
    x, mask = inputs_and_mask()
    keras_ops = set().union(*while_bodies(keras_layer, x, mask))
    zoo_ops = set().union(*while_bodies(zoo_layer, x, mask))
    assert "ReadVariableOp" in keras_ops and "TensorListSetItem" in keras_ops
    assert "ReadVariableOp" not in zoo_ops and "TensorListSetItem" not in zoo_ops
    assert "TensorListPushBack" in zoo_ops


def test_a_noisy_stack_cell_draws_new_noise_at_every_step():
    # The DiffStk cells' seed generator advances inside the loop: its
    # assignments are applied, not kept by the loop's StatelessScope.
    keras.utils.set_random_seed(0)
    options = {"stack_depth": 4, "noise_stddev": 1.0, "seed": 3}
    layer = zoo.RNN(
        zoo.get_cell("diffstk_rnn", UNITS, **options), return_sequences=True
    )
    x = np.zeros((BATCH, TIME, FEATURES), "float32")
    state = layer.cell.seed_generator.state
    before = keras.ops.convert_to_numpy(state.value)
    first = np.asarray(layer(x, training=True))
    assert not np.array_equal(keras.ops.convert_to_numpy(state.value), before)
    second = np.asarray(layer(x, training=True))
    assert not np.allclose(first, second)
    assert not np.allclose(first[:, 1], first[:, 2])
    np.testing.assert_array_equal(layer(x), layer(x))  # no noise at inference


def test_builders_give_their_layers_the_loop():
    model = zoo.recognizer("lstm", vocab_size=6, units=4)
    tagger = zoo.tagger("gru", 6, 4, 3, bidirectional=True)
    (bidirectional,) = zoo.model_parts(tagger).recurrent
    layers = [*zoo.model_parts(model).recurrent]
    layers += [bidirectional.forward_layer, bidirectional.backward_layer]
    for layer in layers:
        assert type(layer) is zoo.RNN


def test_a_loaded_layer_runs_the_zoo_loop(tmp_path):
    # The loop is the class's: a layer rebuilt from its config (as a `.keras`
    # file loads it) runs it too, and gives the built layer's outputs.
    keras.utils.set_random_seed(0)
    model = zoo.recognizer("lstm", vocab_size=6, units=4)
    model.save(tmp_path / "model.keras")
    loaded = keras.saving.load_model(tmp_path / "model.keras")
    layer = zoo.model_parts(loaded).recurrent[0]
    x, mask = inputs_and_mask()
    ops = set().union(*while_bodies(layer, x, mask))
    assert type(layer) is zoo.RNN and "TensorListPushBack" in ops
    ids = np.array([[1, 2, 3, 4, 5, 0]], "int32")
    for name, value in model(ids).items():
        np.testing.assert_array_equal(value, loaded(ids)[name])
