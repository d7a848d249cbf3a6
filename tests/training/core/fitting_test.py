import keras
import numpy as np
import pytest

from tests.training.tiny import LSTM_RECOGNIZER, tiny_recipe
from training.core import compile_mode, fitting
from training.core.callbacks import TemperatureAnnealing
from training.tasks import make_task


def test_optimizer_decays_linearly_to_the_final_learning_rate():
    overrides = ["train.final_learning_rate=0.0001", "train.reduce_lr_patience=null"]
    train = tiny_recipe("dyck", extra=overrides).train
    optimizer = fitting.make_optimizer(train, steps_per_epoch=3)
    config = optimizer.get_config()["learning_rate"]
    schedule = keras.optimizers.schedules.deserialize(config)
    steps = train.epochs * 3
    np.testing.assert_allclose(float(schedule(0)), train.learning_rate)
    np.testing.assert_allclose(float(schedule(steps)), 1e-4, rtol=1e-6)
    assert optimizer.global_clipnorm == train.clipnorm
    # a curriculum's epochs of 2, then 3 steps (the last count for the rest)
    assert train.epochs == 2
    for steps_per_epoch, total in (((2, 3), 5), ((2,), 4)):
        optimizer = fitting.make_optimizer(train, steps_per_epoch)
        config = optimizer.get_config()["learning_rate"]
        assert config["config"]["decay_steps"] == total


def test_sgd_holds_the_rate_then_multiplies_it_each_epoch():
    # Zaremba et al. 2014: learning rate 1 for 4 epochs, then halved each epoch.
    overrides = [
        "train.optimizer=sgd",
        "train.learning_rate=1.0",
        "train.lr_decay=0.5",
        "train.lr_decay_start=4",
        "train.epochs=7",
        "train.reduce_lr_patience=null",
    ]
    train = tiny_recipe("dyck", extra=overrides).train
    optimizer = fitting.make_optimizer(train, steps_per_epoch=3)
    assert isinstance(optimizer, keras.optimizers.SGD)
    assert optimizer.global_clipnorm == train.clipnorm
    # the rate of the step with that index (the first step's index is 0)
    config = optimizer.get_config()["learning_rate"]
    schedule = keras.optimizers.schedules.deserialize(config)
    rates = [float(schedule(step)) for step in range(21)]
    epochs = [1] * 12 + [0.5] * 3 + [0.25] * 3 + [0.125] * 3
    np.testing.assert_allclose(rates, epochs)


def test_one_epoch_past_the_decay_start_runs_at_the_decayed_rate():
    overrides = [
        "train.lr_decay=0.5",
        "train.epochs=1",
        "train.reduce_lr_patience=null",
    ]
    train = tiny_recipe("dyck", extra=overrides).train
    optimizer = fitting.make_optimizer(train, steps_per_epoch=3)
    np.testing.assert_allclose(float(optimizer.learning_rate), train.learning_rate / 2)


def test_two_schedules_are_refused():
    overrides = ["train.lr_decay=0.5", "train.final_learning_rate=0.0001"]
    with pytest.raises(ValueError, match="both set; expected one learning-rate"):
        tiny_recipe("dyck", extra=overrides)


def test_clipvalue_clips_each_element_and_replaces_the_norm_clip():
    train = tiny_recipe("recognition", extra=["train.clipvalue=15"]).train
    optimizer = fitting.make_optimizer(train, steps_per_epoch=3)
    assert optimizer.clipvalue == 15 and optimizer.global_clipnorm is None
    # Its steps are those of Adam without clipping given the clipped gradients
    # (Adam's first step has the same size whatever the gradient's: two steps).
    reference = keras.optimizers.Adam.from_config(
        {**optimizer.get_config(), "clipvalue": None}
    )
    clipped, plain = keras.Variable(np.zeros(3)), keras.Variable(np.zeros(3))
    for gradient in ([30.0, -40.0, 1.0], [1.0, 2.0, -3.0]):
        optimizer.apply_gradients([(np.array(gradient, "float32"), clipped)])
        within = np.clip(gradient, -15, 15).astype("float32")
        reference.apply_gradients([(within, plain)])
    np.testing.assert_allclose(clipped.numpy(), plain.numpy(), rtol=1e-6)


def test_schedule_callbacks_follow_the_recipe():
    train = tiny_recipe(
        "dyck", extra=["train.reduce_lr_patience=2", "train.temperature_factor=0.9"]
    ).train
    kinds = [type(c) for c in fitting.schedule_callbacks(train, "val_loss")]
    assert kinds == [
        keras.callbacks.EarlyStopping,
        keras.callbacks.TerminateOnNaN,
        keras.callbacks.ReduceLROnPlateau,
        TemperatureAnnealing,
    ]


def test_fit_compiles_and_trains_for_the_recipes_steps():
    task = make_task(tiny_recipe("dyck", extra=["train.max_steps_per_epoch=2"]))
    keras.utils.set_random_seed(0)
    model = task.build_model()
    history = fitting.fit(model, task, epochs=1)
    assert len(history.history["loss"]) == len(history.history["val_loss"]) == 1
    assert int(model.optimizer.iterations) == 2


def test_fit_closes_the_csv_log_when_training_stops_with_an_exception(tmp_path):
    task = make_task(tiny_recipe("dyck", extra=["train.max_steps_per_epoch=2"]))
    model = task.build_model()
    log = keras.callbacks.CSVLogger(str(tmp_path / "log.csv"))

    class Kill(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            raise RuntimeError("killed")

    with pytest.raises(RuntimeError, match="killed"):
        fitting.fit(model, task, callbacks=[log, Kill()], epochs=1)
    assert log.csv_file.closed  # on_train_end, which closes it, never came


def test_fit_refuses_arguments_the_data_decide():
    task = make_task(tiny_recipe("dyck"))
    with pytest.raises(ValueError, match="data decide batch_size, x; expected none"):
        fitting.fit(task.build_model(), task, x=[1], batch_size=4)


class BatchCount(keras.callbacks.Callback):
    """Batch ends and optimizer iterations seen in each epoch."""

    def __init__(self):
        super().__init__()
        self.batches, self.iterations, self.begun, self.ended = [], [], 0, 0

    def on_train_begin(self, logs=None):
        self.begun += 1

    def on_epoch_begin(self, epoch, logs=None):
        self.batches.append(0)
        self.start = int(self.model.optimizer.iterations)

    def on_train_batch_end(self, batch, logs=None):
        self.batches[-1] += 1

    def on_epoch_end(self, epoch, logs=None):
        self.iterations.append(int(self.model.optimizer.iterations) - self.start)

    def on_train_end(self, logs=None):
        self.ended += 1


def curriculum_batches(task, epochs):
    """The batches the curriculum's dataset holds in each epoch."""
    dataset, (shuffle,) = task.train_data()
    counts = []
    for epoch in range(epochs):
        shuffle.on_epoch_begin(epoch)
        counts.append(sum(1 for _ in dataset))
    return counts


# A curriculum over the tiny recognition task at half its split scale, an
# LSTM recognizer's (XLA compiles its steps).
CURRICULUM = ["train.curriculum=true", "task.split_scale=0.005", *LSTM_RECOGNIZER]


@pytest.mark.parametrize(
    "extra",
    [
        ["train.jit_compile=false"],  # one step a call (as under XLA alone)
        ["train.jit_compile=true"],  # "auto": in groups
    ],
    ids=["graph", "xla-groups"],
)
def test_each_curriculum_epoch_trains_the_batches_its_limit_admits(extra):
    # Batches of 2 over a few dozen strings: the later epochs hold more than
    # one batch beyond the first epoch's count, which Keras took for every
    # epoch's when it was given one dataset of unknown length.
    task = make_task(
        tiny_recipe(
            "recognition",
            extra=[
                *CURRICULUM,
                "train.epochs=4",
                "train.batch_size=2",
                "train.early_stopping_patience=100",
                *extra,
            ],
        )
    )
    expected = curriculum_batches(task, 4)
    assert expected == [13, 15, 15, 15]
    keras.utils.set_random_seed(0)
    model = task.build_model()
    count = BatchCount()
    jit = task.recipe.train.jit_compile
    history = fitting.fit(model, task, callbacks=[count], jit_compile=jit)
    assert count.iterations == expected
    assert int(model.optimizer.iterations) == sum(expected)
    assert task.epoch_steps() == tuple(expected)
    # "auto" groups a curriculum's small XLA steps, up to its shortest epoch;
    # callbacks see the ends of groups
    steps = compile_mode.steps_for_task(task, jit).used
    assert steps == (min(expected) if jit else 1)
    assert count.batches == [-(-n // steps) for n in expected]
    assert len(history.history["loss"]) == 4
    assert (count.begun, count.ended) == (1, 1)  # one training, as in one fit


class StopAfter(keras.callbacks.Callback):
    def __init__(self, epoch):
        super().__init__()
        self.epoch = epoch

    def on_epoch_end(self, epoch, logs=None):
        if epoch == self.epoch:
            self.model.stop_training = True


@pytest.mark.parametrize("last", [0, 2])
def test_a_callback_stops_a_curriculum_run_between_and_within_fit_calls(last):
    # Epochs of 6, then 7 batches: one fit call for epoch 0, one for 1-3.
    extra = [*CURRICULUM, "train.epochs=4", "train.batch_size=4"]
    task = make_task(tiny_recipe("recognition", extra=extra))
    assert task.epoch_steps() == (6, 7, 7, 7)
    keras.utils.set_random_seed(0)
    model = task.build_model()
    count = BatchCount()
    history = fitting.fit(model, task, callbacks=[count, StopAfter(last)])
    assert history.epoch == list(range(last + 1))
    assert count.iterations == [6, 7, 7][: last + 1]
    assert (count.begun, count.ended) == (1, 1)


@pytest.mark.parametrize(
    ("kind", "extra"),
    [("dyck", ["train.max_steps_per_epoch=2"]), ("recognition", CURRICULUM)],
    ids=["capped", "curriculum"],
)
def test_the_data_model_fit_reads_are_not_autotuned(monkeypatch, kind, extra):
    # tf.data's autotuning gives each iterator a thread of its own, which
    # deleting the iterator waits for (fitting.UNTUNED).
    seen = []
    original = keras.Model.fit

    def recording(model, x, *args, validation_data=None, **kwargs):
        for data in (x, validation_data):
            seen.append(data.options().autotune.enabled)
        return original(model, x, *args, validation_data=validation_data, **kwargs)

    monkeypatch.setattr(keras.Model, "fit", recording)
    task = make_task(tiny_recipe(kind, extra=[*extra, "train.epochs=2"]))
    fitting.fit(task.build_model(), task)
    assert seen and set(seen) == {False}
