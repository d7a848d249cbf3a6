from unittest import mock

import keras
import numpy as np
import pytest

from tests.zoo.cells.cell_contract import (
    BATCH,
    FEATURES,
    MIXED_ATOL,
    TIME,
    CellContract,
)
from tests.zoo.cells.reference import sigmoid
from tests.zoo.gradients import value_and_gradients
from zoo.cells import minimal
from zoo.cells.minimal import MinGRU, MinGRUCell, MinLSTM, MinLSTMCell

UNITS = 6
LAYERS = [
    pytest.param(MinGRU, {}, id="min_gru"),
    pytest.param(MinLSTM, {}, id="min_lstm"),
    pytest.param(MinLSTM, {"normalize_gates": True}, id="min_lstm_normalized"),
]


def random_inputs(seed=1, time=TIME):
    return np.random.default_rng(seed).normal(size=(BATCH, time, FEATURES))


def random_mask():
    mask = np.ones((BATCH, TIME), bool)
    mask[0, 3:] = False  # a padded tail
    mask[1, :2] = False  # masked first steps: zero output, state held at h_0
    mask[2, 2] = False  # a gap
    return mask


def layer_pair(layer_class, options, **kwargs):
    """A sequential and a parallel layer with the same (random) weights."""
    keras.utils.set_random_seed(0)
    options = {"bias_initializer": "random_normal", **options}
    sequential = layer_class(UNITS, mode="sequential", **options, **kwargs)
    parallel = layer_class(UNITS, mode="parallel", **options, **kwargs)
    x = random_inputs().astype("float32")
    sequential(x)
    parallel(x)
    parallel.set_weights(sequential.get_weights())
    return sequential, parallel


def never_stepped(cell):
    """Fails a test in which `cell` is called one step at a time."""
    return mock.patch.object(type(cell), "call", side_effect=AssertionError)


def assert_paths_agree(sequential, parallel, *args, atol=1e-5, **kwargs):
    expected = keras.tree.map_structure(np.asarray, sequential(*args, **kwargs))
    with never_stepped(parallel.cell):
        actual = keras.tree.map_structure(np.asarray, parallel(*args, **kwargs))
    for a, e in zip(
        keras.tree.flatten(actual), keras.tree.flatten(expected), strict=True
    ):
        np.testing.assert_allclose(a, e, atol=atol)
    return expected


def run_reference(cell_class, mode, x, **options):
    """Returns a layer's outputs on `x` and its cell, which holds the weights."""
    keras.utils.set_random_seed(0)
    options = {"bias_initializer": "random_normal", **options}
    if mode == "cell":
        layer = keras.layers.RNN(cell_class(UNITS, **options), return_sequences=True)
    else:
        layer = cell_class.sequence_layer(
            UNITS, mode=mode, return_sequences=True, **options
        )
    return np.asarray(layer(x.astype("float32"))), layer.cell


@pytest.mark.parametrize("mode", ["cell", "parallel"])
def test_min_gru_matches_reference(mode):
    x = random_inputs()
    output, cell = run_reference(MinGRUCell, mode, x)
    kernel, bias = (np.asarray(w, "float64") for w in cell.get_weights())
    w_z, w_h = np.split(kernel, 2, axis=1)
    b_z, b_h = np.split(bias, 2)
    h = np.zeros((BATCH, UNITS))
    for t in range(TIME):
        z = sigmoid(x[:, t] @ w_z + b_z)
        h_tilde = x[:, t] @ w_h + b_h
        h = (1 - z) * h + z * h_tilde
        np.testing.assert_allclose(output[:, t], h, atol=1e-5)


@pytest.mark.parametrize("mode", ["cell", "parallel"])
@pytest.mark.parametrize("normalize_gates", [False, True])
def test_min_lstm_matches_reference(normalize_gates, mode):
    x = random_inputs()
    output, cell = run_reference(MinLSTMCell, mode, x, normalize_gates=normalize_gates)
    kernel, bias = (np.asarray(w, "float64") for w in cell.get_weights())
    w_f, w_i, w_h = np.split(kernel, 3, axis=1)
    b_f, b_i, b_h = np.split(bias, 3)
    h = np.zeros((BATCH, UNITS))
    for t in range(TIME):
        f = sigmoid(x[:, t] @ w_f + b_f)
        i = sigmoid(x[:, t] @ w_i + b_i)
        if normalize_gates:
            f, i = f / (f + i), i / (f + i)
        h_tilde = x[:, t] @ w_h + b_h
        h = f * h + i * h_tilde
        np.testing.assert_allclose(output[:, t], h, atol=1e-5)


def test_parameter_counts():
    for cell, per_unit in [(MinGRUCell(UNITS), 2), (MinLSTMCell(UNITS), 3)]:
        cell.build((None, FEATURES))
        assert cell.count_params() == per_unit * UNITS * (FEATURES + 1)


@pytest.mark.parametrize("layer_class, options", LAYERS)
def test_parallel_matches_sequential_with_initial_state(layer_class, options):
    sequential, parallel = layer_pair(
        layer_class, options, return_sequences=True, return_state=True
    )
    x = random_inputs(seed=2).astype("float32")
    h_0 = np.random.default_rng(3).normal(size=(BATCH, UNITS)).astype("float32")
    output, state = assert_paths_agree(sequential, parallel, x, initial_state=[h_0])
    assert not np.allclose(output, sequential(x)[0], atol=1e-3)
    np.testing.assert_allclose(state, output[:, -1], atol=1e-6)


@pytest.mark.parametrize("zero_output_for_mask", [False, True])
@pytest.mark.parametrize("go_backwards", [False, True])
@pytest.mark.parametrize("layer_class, options", LAYERS)
def test_parallel_matches_sequential_with_mask(
    layer_class, options, go_backwards, zero_output_for_mask
):
    sequential, parallel = layer_pair(
        layer_class,
        options,
        return_sequences=True,
        return_state=True,
        go_backwards=go_backwards,
        zero_output_for_mask=zero_output_for_mask,
    )
    x = random_inputs(seed=2).astype("float32")
    h_0 = np.random.default_rng(3).normal(size=(BATCH, UNITS)).astype("float32")
    mask = random_mask()
    output, _ = assert_paths_agree(
        sequential, parallel, x, mask=mask, initial_state=[h_0]
    )
    assert not np.allclose(output, sequential(x, initial_state=[h_0])[0], atol=1e-3)


@pytest.mark.parametrize("layer_class, options", LAYERS)
def test_parallel_matches_sequential_last_output_backwards(layer_class, options):
    sequential, parallel = layer_pair(layer_class, options, go_backwards=True)
    x = random_inputs(seed=2).astype("float32")
    last = assert_paths_agree(sequential, parallel, x, mask=random_mask())
    assert last.shape == (BATCH, UNITS)


@pytest.mark.parametrize("layer_class, options", LAYERS)
def test_parallel_matches_sequential_stateful(layer_class, options):
    sequential, parallel = layer_pair(
        layer_class, options, return_sequences=True, stateful=True
    )
    x = random_inputs(seed=2).astype("float32")
    sequential.reset_state()
    parallel.reset_state()
    first = assert_paths_agree(sequential, parallel, x[:, :2])
    second = assert_paths_agree(sequential, parallel, x[:, 2:])
    np.testing.assert_allclose(parallel.states[0], second[:, -1], atol=1e-5)
    parallel.reset_state()
    assert not np.allclose(parallel(x[:, 2:]), second, atol=1e-3)
    assert first.shape == (BATCH, 2, UNITS)


@pytest.mark.parametrize("layer_class, options", LAYERS)
def test_parallel_matches_sequential_bidirectional(layer_class, options):
    keras.utils.set_random_seed(0)
    x = random_inputs(seed=2).astype("float32")
    layers = [
        keras.layers.Bidirectional(
            layer_class(UNITS, mode=mode, return_sequences=True, **options)
        )
        for mode in ("sequential", "parallel")
    ]
    sequential, parallel = layers
    sequential(x)
    parallel(x)
    parallel.set_weights(sequential.get_weights())
    assert parallel.backward_layer.parallel and parallel.backward_layer.go_backwards
    mask = random_mask()
    expected = np.asarray(sequential(x, mask=mask))
    with never_stepped(parallel.forward_layer.cell):
        np.testing.assert_allclose(parallel(x, mask=mask), expected, atol=1e-5)


@pytest.mark.parametrize("layer_class, options", LAYERS)
def test_parallel_gradients_match_sequential(layer_class, options):
    options = {"bias_initializer": "zeros", **options}
    sequential, parallel = layer_pair(layer_class, options, return_sequences=True)
    x = random_inputs(seed=2)
    x[:, 1] = 0.0  # with zero biases, the candidate is exactly 0 there
    mask = random_mask()
    h_0 = np.random.default_rng(3).normal(size=(BATCH, UNITS))
    h_0[:, 0] = 0.0  # log|h_0| is -inf there: its gradient must stay finite
    # Variables, so that the gradient reaches them as it reaches the weights.
    x, h_0 = keras.Variable(x, dtype="float32"), keras.Variable(h_0, dtype="float32")
    target = np.random.default_rng(4).normal(size=(BATCH, TIME, UNITS))
    gradients = []
    for layer in (sequential, parallel):
        for from_h_0 in (False, True):

            def loss(layer=layer, from_h_0=from_h_0):
                initial_state = [h_0.value] if from_h_0 else None
                output = layer(x.value, mask=mask, initial_state=initial_state)
                return keras.ops.sum(keras.ops.cast(output, "float64") * target)

            variables = [x, h_0, *layer.trainable_weights]
            gradients.append(value_and_gradients(loss, variables)[1])
    for expected, actual in zip(gradients[:2], gradients[2:], strict=True):
        for e, a in zip(expected, actual, strict=True):
            if e is None or not np.any(keras.ops.convert_to_numpy(e)):
                # h_0 does not reach a zero initial state (None, or JAX's zeros)
                assert a is None or not np.any(keras.ops.convert_to_numpy(a))
                continue
            e, a = keras.ops.convert_to_numpy(e), keras.ops.convert_to_numpy(a)
            assert np.all(np.isfinite(a))
            np.testing.assert_allclose(a, e, atol=1e-4)


@pytest.mark.parametrize("policy", sorted(MIXED_ATOL))
@pytest.mark.parametrize("layer_class, options", LAYERS)
def test_parallel_mixed_precision(layer_class, options, policy):
    # The scan itself runs in float32 (its log 0 overflows float16); the
    # layer returns the compute dtype, close to the float32 loop.
    sequential, _ = layer_pair(layer_class, options, return_sequences=True)
    x = random_inputs(seed=2).astype("float32")
    expected = np.asarray(sequential(x))
    previous = keras.mixed_precision.global_policy()
    keras.mixed_precision.set_global_policy(policy)
    try:
        parallel = layer_class(UNITS, mode="parallel", return_sequences=True, **options)
        parallel(x)
        parallel.set_weights(sequential.get_weights())
        with never_stepped(parallel.cell):
            output = parallel(x)
            _, gradients = value_and_gradients(
                lambda: keras.ops.sum(keras.ops.cast(parallel(x), "float32")),
                parallel.trainable_weights,
            )
    finally:
        keras.mixed_precision.set_global_policy(previous)
    assert keras.backend.standardize_dtype(output.dtype) == policy.split("_")[1]
    for gradient in gradients:
        assert np.all(np.isfinite(keras.ops.convert_to_numpy(gradient)))
    output = keras.ops.convert_to_numpy(keras.ops.cast(output, "float32"))
    np.testing.assert_allclose(output, expected, atol=MIXED_ATOL[policy])


@pytest.mark.parametrize("layer_class, options", LAYERS)
def test_parallel_long_sequence(layer_class, options):
    sequential, parallel = layer_pair(layer_class, options, return_sequences=True)
    x = random_inputs(seed=2, time=512).astype("float32")
    expected = np.asarray(sequential(x))
    actual = np.asarray(parallel(x))
    assert np.all(np.isfinite(actual))
    assert np.max(np.abs(actual - expected)) <= 1e-4 * np.max(np.abs(expected))


@pytest.mark.parametrize("layer_class", [MinGRU, MinLSTM])
def test_parallel_fit(layer_class):
    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(32, TIME, FEATURES)).astype("float32")
    x[:, 3:][rng.random((32, TIME - 3)) < 0.5] = 0.0
    y = x[:, :, :1].sum(axis=1)
    layer = layer_class(8, mode="parallel")
    model = keras.Sequential(
        [
            keras.Input((None, FEATURES)),
            keras.layers.Masking(),
            layer,
            keras.layers.Dense(1),
        ]
    )
    model.compile(keras.optimizers.Adam(0.05), "mse")
    with never_stepped(layer.cell):
        losses = model.fit(x, y, batch_size=8, epochs=4, verbose=0).history["loss"]
    assert np.all(np.isfinite(losses))
    assert losses[-1] < losses[0]


@pytest.mark.parametrize("gpus, parallel", [([], False), (["GPU:0"], True)])
def test_auto_mode_picks_parallel_on_a_gpu(gpus, parallel):
    # A string target: TensorFlow is imported here, not by the module, which
    # also runs on torch (tests/zoo/backend_runs.py).
    with mock.patch("tensorflow.config.list_physical_devices", return_value=gpus):
        layer = MinGRU(UNITS)
    assert layer.mode == "auto"
    assert layer.parallel is parallel


@pytest.mark.parametrize("layer_class, options", LAYERS)
def test_sequence_layer_config_and_save(layer_class, options, tmp_path):
    keras.utils.set_random_seed(0)
    layer = layer_class(
        UNITS, mode="parallel", bias_initializer="random_normal", **options
    )
    config = layer.get_config()
    assert config["mode"] == "parallel"
    assert config["bias_initializer"]["class_name"] == "RandomNormal"
    for name, value in options.items():
        assert config[name] == value
    clone = layer_class.from_config(config)
    assert clone.get_config() == config
    x = random_inputs().astype("float32")
    model = keras.Sequential([keras.Input((TIME, FEATURES)), layer])
    path = tmp_path / "model.keras"
    model.save(path)
    restored = keras.models.load_model(path).layers[-1]
    assert type(restored) is layer_class and restored.parallel
    np.testing.assert_allclose(restored(x), layer(x), atol=1e-6)


def test_cells_point_to_their_sequence_layers():
    assert MinGRUCell.sequence_layer is MinGRU
    assert MinLSTMCell.sequence_layer is MinLSTM
    assert isinstance(MinLSTM(UNITS, normalize_gates=True).cell, MinLSTMCell)
    assert MinLSTM(UNITS, normalize_gates=True).cell.normalize_gates


def test_log_space_scan_holds_state_and_keeps_signs():
    h_0 = np.array([[2.0, -3.0, 0.0]], "float32")
    log_a = np.log(np.array([[[0.5, 1.0, 0.25], [1.0, 0.5, 0.5]]], "float32"))
    candidate = np.array([[[-1.0, 0.0, 4.0], [0.0, 6.0, -2.0]]], "float32")
    log_gate = np.zeros_like(candidate)
    h = minimal.log_space_scan(log_a, log_gate, candidate, h_0)
    expected = [[[0.0, -3.0, 4.0], [0.0, 4.5, 0.0]]]
    np.testing.assert_allclose(h, expected, atol=1e-6)


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: MinGRUCell(0), "`units` must be a positive integer"),
        (lambda: MinLSTMCell(2.5), "`units` must be a positive integer"),
        (lambda: MinLSTMCell(4, normalize_gates="yes"), "`normalize_gates`"),
        (lambda: MinGRU(0), "`units` must be a positive integer"),
        (lambda: MinLSTM(-1), "`units` must be a positive integer"),
        (lambda: MinGRU(4, mode="scan"), "`mode` must be one of 'auto'"),
        (lambda: MinLSTM(4, mode=None), "`mode` must be one of"),
    ],
)
def test_invalid_arguments(make, message):
    with pytest.raises(ValueError, match=message):
        make()


class TestMinGRUContract(CellContract):
    def make_cell(self):
        return MinGRUCell(UNITS, bias_initializer="random_normal")


class TestMinLSTMContract(CellContract):
    def make_cell(self):
        return MinLSTMCell(UNITS, bias_initializer="random_normal")


class TestMinLSTMNormalizedContract(CellContract):
    def make_cell(self):
        return MinLSTMCell(
            UNITS, normalize_gates=True, bias_initializer="random_normal"
        )
