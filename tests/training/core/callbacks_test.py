import json

import keras
import numpy as np
import pytest

import zoo
from training.core.callbacks import (
    EpochMetrics,
    ResetStatesEachEpoch,
    RunBackup,
    StopBelowLoss,
    TemperatureAnnealing,
    seed_generators,
)
from training.core.sampled_softmax import LogUniformSampler, SampledSoftmaxModel
from zoo.cells.second_order import SecondOrderLSTMCell, second_order_cells


def nested_model():
    inputs = keras.Input((5, 4))
    hidden = keras.layers.Bidirectional(
        keras.layers.RNN(SecondOrderLSTMCell(3), return_sequences=True)
    )(inputs)
    stacked = keras.layers.StackedRNNCells(
        [SecondOrderLSTMCell(3, temperature=0.3), keras.layers.LSTMCell(3)]
    )
    outputs = keras.layers.Dense(1)(keras.layers.RNN(stacked)(hidden))
    model = keras.Model(inputs, outputs)
    model.compile(optimizer="sgd", loss="mse")
    return model


@pytest.fixture(scope="module")
def annealed():
    """`nested_model()` fitted 3 epochs under `TemperatureAnnealing(0.5, 0.1)`,
    and the `fit` history (one fit for the tests that read it)."""
    keras.utils.set_random_seed(0)
    model = nested_model()
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(6, 5, 4)), rng.normal(size=(6, 1))
    history = model.fit(
        x,
        y,
        epochs=3,
        batch_size=6,
        verbose=0,
        callbacks=[TemperatureAnnealing(factor=0.5, minimum=0.1)],
    )
    return model, history


def test_temperature_annealing_multiplies_per_epoch_down_to_the_minimum(annealed):
    model, history = annealed
    # Every cell is annealed from its own temperature, tau <- max(tau * factor,
    # minimum): both Bidirectional directions 1 -> 0.125, the stacked one
    # 0.3 -> 0.15 -> 0.1 (the minimum) -> 0.1.
    taus = sorted(float(c.temperature.numpy()) for c in second_order_cells(model))
    assert len(taus) == 3
    np.testing.assert_allclose(taus, [0.1, 0.125, 0.125], rtol=1e-6)
    # Logged per epoch, from the first cell (a Bidirectional direction, tau 1).
    np.testing.assert_allclose(
        history.history["temperature"], [0.5, 0.25, 0.125], rtol=1e-6
    )


def test_temperature_is_saved_with_the_model(annealed, tmp_path):
    # The annealed temperatures, not the cells' initial 0.3, 1 and 1.
    model, _ = annealed
    model.save(tmp_path / "model.keras")
    restored = keras.models.load_model(tmp_path / "model.keras")
    taus = sorted(float(c.temperature.numpy()) for c in second_order_cells(restored))
    np.testing.assert_allclose(taus, [0.1, 0.125, 0.125], rtol=1e-6)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"factor": 0.0}, "`factor` must be in"),
        ({"factor": 1.5}, "`factor` must be in"),
        ({"minimum": 0.0}, "`minimum` must be in"),
        ({"minimum": "low"}, "`minimum` must be a number"),
    ],
)
def test_invalid_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        TemperatureAnnealing(**kwargs)


def test_stop_below_loss_stops_once_the_validation_loss_is_below():
    callback = StopBelowLoss(0.5)
    model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(1)])
    callback.set_model(model)
    model.stop_training = False
    callback.on_epoch_end(0, {"val_loss": 0.6})
    assert not model.stop_training
    callback.on_epoch_end(1, {"val_loss": 0.4})
    assert model.stop_training


def test_epoch_metrics_reach_the_log_and_the_callbacks_after_them(tmp_path):
    seen = []

    def make_measure(model):
        epochs = iter(range(100))
        return lambda: {
            "answer": float(next(epochs)),
            "model_layers": len(model.layers),
        }

    class Reader(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            seen.append(logs["val_answer"])

    model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    x = np.ones((4, 1), "float32")
    history = model.fit(
        x,
        x,
        epochs=3,
        verbose=0,
        callbacks=[
            EpochMetrics(make_measure),
            keras.callbacks.CSVLogger(str(tmp_path / "log.csv")),
            Reader(),
        ],
    )
    assert history.history["val_answer"] == [0.0, 1.0, 2.0]
    assert seen == [0.0, 1.0, 2.0]
    header = (tmp_path / "log.csv").read_text().splitlines()[0].split(",")
    assert {"val_answer", "val_model_layers"} <= set(header)


class StateProbe(keras.callbacks.Callback):
    """Records, before each training batch, whether the layer's state is zero."""

    def __init__(self, layer):
        super().__init__()
        self.layer, self.zero = layer, []

    def on_train_batch_begin(self, batch, logs=None):
        state = keras.ops.convert_to_numpy(self.layer.states[0].value)
        self.zero.append(bool(np.all(state == 0)))


@pytest.mark.parametrize(
    "every, zero",
    [
        (None, [True, False, False, False, False] * 2),  # once per epoch
        (2, [True, False, True, False, True] * 2),
    ],
)
def test_reset_states_zeroes_the_training_state_every_n_batches(every, zero):
    keras.utils.set_random_seed(0)
    layer = keras.layers.SimpleRNN(3, stateful=True, return_sequences=True)
    model = keras.Sequential([keras.Input(batch_shape=(2, 4, 1)), layer])
    model.compile(optimizer="sgd", loss="mse")
    x = np.ones((10, 4, 1), "float32")
    probe = StateProbe(layer)
    model.fit(
        x,
        np.zeros((10, 4, 3)),
        batch_size=2,
        epochs=2,
        shuffle=False,
        verbose=0,
        callbacks=[ResetStatesEachEpoch(every), probe],
    )
    assert probe.zero == zero


def test_reset_states_every_must_be_a_positive_integer():
    with pytest.raises(ValueError, match="`every` must be a positive integer"):
        ResetStatesEachEpoch(0)


def test_seed_generators_are_every_layers_once():
    # Dropout layers, a Keras cell (LSTMCell makes one, for its own dropout)
    # in a Bidirectional layer, a nested model and a sampled softmax's sampler.
    inputs = keras.Input((5,), dtype="int32")
    x = keras.layers.Embedding(7, 4)(inputs)
    x = keras.layers.Dropout(0.5)(x)
    inner = keras.Sequential([keras.layers.Dropout(0.5)])
    x = keras.layers.Bidirectional(keras.layers.LSTM(3, return_sequences=True))(
        inner(x)
    )
    outputs = keras.layers.Dense(7, name="logits")(keras.layers.Dropout(0.5)(x))
    model = keras.Model(inputs, outputs)
    assert len(seed_generators(model)) == 5  # 3 + 2 cells
    lm = zoo.language_model("lstm", vocab_size=7, units=3, dropout=0.5)
    sampled = SampledSoftmaxModel(lm, LogUniformSampler(2, 7, seed=0))
    found = seed_generators(sampled)
    assert len(found) == len({id(g) for g in found}) == len(seed_generators(lm)) + 1
    assert sampled.sampler.seed_generator in found


class Interrupted(Exception):
    pass


def dropout_backup(folder, dropouts=1, drop_key=False):
    """Fits a dropout model one epoch with a `RunBackup` in `folder` and stops
    in the second; returns the model and the backup's metadata (without its
    seed states with `drop_key`, as a backup from before they were kept)."""

    class Interrupt(keras.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            if epoch == 1:
                raise Interrupted

    model = keras.Sequential(
        [keras.Input((4,))]
        + [keras.layers.Dropout(0.5) for _ in range(dropouts)]
        + [keras.layers.Dense(1)]
    )
    model.compile(optimizer="sgd", loss="mse")
    with pytest.raises(Interrupted):
        model.fit(
            np.ones((8, 4), "float32"),
            np.zeros((8, 1), "float32"),
            batch_size=2,
            epochs=2,
            verbose=0,
            callbacks=[Interrupt(), RunBackup(folder)],
        )
    path = folder / "training_metadata.json"
    metadata = json.loads(path.read_text())
    if drop_key:
        del metadata["seed_generators"]
        path.write_text(json.dumps(metadata))
    return model, metadata


def restored(model, folder):
    """Restores the backup in `folder` into `model`, as `fit` does."""
    backup = RunBackup(folder)
    backup.set_model(model)
    backup.on_train_begin()
    return [g.state.numpy().tolist() for g in seed_generators(model)]


def test_run_backup_keeps_the_seed_generators_states(tmp_path):
    keras.utils.set_random_seed(0)
    model, metadata = dropout_backup(tmp_path)
    states = [g.state.numpy().tolist() for g in seed_generators(model)]
    assert metadata["seed_generators"] == states
    assert states[0][1] == 4  # a draw per step: 4 steps of epoch 0
    keras.utils.set_random_seed(1)
    other, _ = dropout_backup(tmp_path / "other")
    assert restored(other, tmp_path) == states


def test_a_backup_without_seed_generators_is_one_line(tmp_path):
    # A run's is refused before (run_dirs.read_backup, naming python -m
    # training.migrate, which writes them): not resumed with states as built.
    dropout_backup(tmp_path, drop_key=True)
    other, _ = dropout_backup(tmp_path / "other")
    with pytest.raises(
        ValueError, match=r"^Backup .* holds the state of 0 seed "
    ) as error:
        restored(other, tmp_path)
    assert "\n" not in str(error.value)


def test_a_backup_of_another_models_seed_generators_is_one_line(tmp_path):
    dropout_backup(tmp_path)
    other, _ = dropout_backup(tmp_path / "other", dropouts=2)
    with pytest.raises(ValueError, match=r"^Backup .* holds the state of 1 seed "):
        restored(other, tmp_path)
