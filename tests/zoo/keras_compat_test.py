"""Each workaround of zoo/keras_compat.py against the installed Keras.

One test per function: a Keras upgrade that moves a private attribute or a
hook one of them reaches fails the test named after it.
"""

import keras
import numpy as np
import pytest

import zoo
from zoo import keras_compat

on_tensorflow = pytest.mark.skipif(
    keras.backend.backend() != "tensorflow", reason="a TensorFlow workaround"
)

BATCH, TIME, FEATURES, UNITS = 3, 5, 4, 2


def sequences(seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(BATCH, TIME, FEATURES)).astype("float32")


def test_flatten_layers_finds_cells_and_nested_models_once():
    keras.utils.set_random_seed(0)
    cells = keras.layers.StackedRNNCells(
        [keras.layers.GRUCell(UNITS), keras.layers.GRUCell(UNITS)]
    )
    inner_input = keras.Input((TIME, 2 * UNITS))
    inner = keras.Model(inner_input, keras.layers.RNN(cells)(inner_input))
    outer_input = keras.Input((TIME, FEATURES))
    lstm = keras.layers.LSTM(UNITS, return_sequences=True)
    hidden = keras.layers.Bidirectional(lstm)(outer_input)
    model = keras.Model(outer_input, inner(hidden))

    found = list(keras_compat.flatten_layers(model))
    kinds = [type(layer).__name__ for layer in found]

    assert len({id(layer) for layer in found}) == len(found)
    assert model not in found
    assert kinds.count("LSTMCell") == 2  # forward and backward
    assert kinds.count("GRUCell") == 2 and "StackedRNNCells" in kinds
    assert inner in found
    assert list(keras_compat.flatten_layers(model, include_self=True))[0] is model


def test_seed_generators_are_a_layers_own_generators():
    dropout = keras.layers.Dropout(0.5, seed=1)
    inputs = keras.Input((FEATURES,))
    model = keras.Model(inputs, dropout(inputs))

    assert keras_compat.seed_generators(dropout) == [dropout.seed_generator]
    assert keras_compat.seed_generators(model) == []  # not its layers'
    assert dropout.seed_generator.state in dropout.variables


def test_carry_variable_lists_a_variable_among_variables_not_weights():
    dense = keras.layers.Dense(UNITS)
    inputs = keras.Input((FEATURES,))
    model = keras.Model(inputs, dense(inputs))
    weights = len(model.get_weights())
    state = keras.Variable(np.zeros((BATCH, UNITS)), trainable=False, name="state")

    keras_compat.carry_variable(dense, state)
    keras_compat.carry_variable(dense, state)  # once only

    assert [v for v in dense.variables if v is state] == [state]
    assert any(v is state for v in model.non_trainable_variables)
    assert not any(v is state for v in model.weights)
    assert len(model.get_weights()) == weights
    assert keras_compat.seed_generators(dense) == []  # not a generator


def twin_rnns(return_sequences=True):
    """Two `keras.layers.RNN`s with the same weights."""
    keras.utils.set_random_seed(0)
    layers = [
        keras.layers.RNN(
            keras.layers.SimpleRNNCell(UNITS), return_sequences=return_sequences
        )
        for _ in range(2)
    ]
    for layer in layers:
        layer(sequences())
    layers[1].set_weights(layers[0].get_weights())
    return layers


def test_keras_rnn_loop_runs_kerass_loop_of_a_zoo_rnn():
    keras_layer, _ = twin_rnns()
    zoo_layer = zoo.RNN(keras.layers.SimpleRNNCell(UNITS), return_sequences=True)
    zoo_layer(sequences())
    zoo_layer.set_weights(keras_layer.get_weights())
    x = keras.ops.convert_to_tensor(sequences(1))
    initial = [keras.ops.zeros((x.shape[0], UNITS))]
    _, outputs, _ = keras_compat.keras_rnn_loop(zoo_layer, x, initial, None)
    np.testing.assert_allclose(outputs, keras_layer(sequences(1)), atol=1e-6)


def test_backend_rnn_is_kerass_loop_with_masking():
    x = sequences()
    mask = np.arange(TIME)[None, :] < np.array([TIME, 3, 1])[:, None]

    def step(inputs, states):
        total = states[0] + inputs
        return total, [total]

    last, outputs, states = keras_compat.backend_rnn(
        step,
        keras.ops.convert_to_tensor(x),
        [keras.ops.zeros((BATCH, FEATURES))],
        mask=keras.ops.convert_to_tensor(mask),
        input_length=TIME,
    )

    sums = np.cumsum(np.where(mask[..., None], x, 0.0), axis=1)
    np.testing.assert_allclose(outputs, sums, atol=1e-5)
    np.testing.assert_allclose(last, sums[:, -1], atol=1e-5)
    np.testing.assert_allclose(states[0], sums[:, -1], atol=1e-5)


def test_in_stateless_scope_sees_an_enclosing_scope():
    assert keras_compat.in_stateless_scope() is False
    with keras.StatelessScope():
        assert keras_compat.in_stateless_scope() is True
    assert keras_compat.in_stateless_scope() is False


class StartAt(keras.callbacks.Callback):
    """Sets the epoch `fit` starts from in `on_train_begin`; records epochs run."""

    def __init__(self, epoch):
        super().__init__()
        self.epoch = epoch
        self.epochs = []

    def on_train_begin(self, logs=None):
        keras_compat.set_initial_epoch(self.model, self.epoch)

    def on_epoch_begin(self, epoch, logs=None):
        self.epochs.append(epoch)


def small_model():
    inputs = keras.Input((FEATURES,))
    model = keras.Model(inputs, keras.layers.Dense(1)(inputs))
    model.compile("sgd", "mse")
    return model


def test_set_initial_epoch_moves_where_fit_starts_and_initial_epoch_reads_it():
    model = small_model()
    x, y = np.ones((4, FEATURES), "float32"), np.ones((4, 1), "float32")
    assert keras_compat.initial_epoch(model) is None

    start = StartAt(2)
    model.fit(x, y, epochs=4, callbacks=[start], verbose=0)
    assert start.epochs == [2, 3]
    assert keras_compat.initial_epoch(model) == 2

    keras_compat.set_initial_epoch(model, None)
    history = model.fit(x, y, epochs=2, verbose=0)
    assert history.epoch == [0, 1]


@on_tensorflow
def test_multi_worker_model_is_built_by_fit_through_its_hook():
    import tensorflow as tf

    builds = []

    class Recorded(keras_compat.MultiWorkerModel):
        def first_replica(self, value):  # what its build hook reads the batch with
            builds.append(value.shape)
            return super().first_replica(value)

    x = np.random.default_rng(0).normal(size=(8, FEATURES)).astype("float32")
    y = x.sum(axis=1, keepdims=True)
    losses = []
    for kind in (keras.Model, Recorded):
        strategy = tf.distribute.MirroredStrategy(["/cpu:0"])
        with strategy.scope():
            keras.utils.set_random_seed(0)
            inputs = keras.Input((FEATURES,))
            plain = keras.Model(inputs, keras.layers.Dense(1)(inputs))
            model = kind(plain.inputs, plain.outputs)
            model.compile("sgd", "mse")
        history = model.fit(x, y, batch_size=4, epochs=2, shuffle=False, verbose=0)
        losses.append(history.history["loss"])

    # Keras still builds the model through the hook MultiWorkerModel overrides
    # (`_maybe_symbolic_build`), which reads one batch of x and y.
    assert [tuple(shape) for shape in builds] == [(4, FEATURES), (4, 1)]
    np.testing.assert_allclose(losses[1], losses[0], rtol=1e-6)


def test_chief_oracle_is_the_oracle_a_worker_wraps(tmp_path, monkeypatch):
    import keras_tuner

    def build(hp):
        hp.Int("units", 1, 2)
        return small_model()

    def tuner(name):
        return keras_tuner.Hyperband(
            build, objective="loss", max_epochs=2, directory=tmp_path, project_name=name
        )

    chief = tuner("chief")
    assert keras_compat.chief_oracle(chief.oracle) is chief.oracle

    monkeypatch.setenv("KERASTUNER_TUNER_ID", "tuner1")  # a worker's
    monkeypatch.setenv("KERASTUNER_ORACLE_IP", "127.0.0.1")
    monkeypatch.setenv("KERASTUNER_ORACLE_PORT", "1")
    worker = tuner("worker")
    oracle = keras_compat.chief_oracle(worker.oracle)
    oracle.max_trials = 3

    assert oracle is not worker.oracle
    assert isinstance(oracle, keras_tuner.Oracle)
    assert worker.oracle.max_trials == 3  # what the worker's client reads


def two_output_model():
    inputs = keras.Input((3,))
    outputs = {"a": keras.layers.Dense(1)(inputs), "b": keras.layers.Dense(2)(inputs)}
    model = keras.Model(inputs, outputs)
    model.compile("sgd", loss={"a": "mse", "b": "mse"})
    data = (
        np.ones((4, 3), "float32"),
        {"a": np.ones((4, 1), "float32"), "b": np.ones((4, 2), "float32")},
    )
    return model, data


@on_tensorflow
@pytest.mark.parametrize("built", [False, True])
def test_build_compiled_state_spares_the_second_trace_of_a_train_step(built):
    # A two-output model's compiled loss keeps a tracker per output, made in
    # the first traced step unless built before, and TensorFlow traces a
    # function that made variables twice. Shapes are enough (a dataset's
    # element_spec).
    import tensorflow as tf

    model, (x, y) = two_output_model()
    if built:
        spec = tf.data.Dataset.from_tensors((x, y)).element_spec
        keras_compat.build_compiled_state(model, spec)
        assert {"a_loss", "b_loss"} <= {m.name for m in model.metrics}
    traces, step = [], model.train_step
    model.train_step = lambda data: traces.append(1) or step(data)  # when traced
    model.fit(x, y, epochs=1, verbose=0)
    assert len(traces) == (1 if built else 2)
