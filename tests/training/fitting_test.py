import keras
import numpy as np
import pytest

from tests.training.tiny import tiny_recipe
from training import fitting
from training.callbacks import TemperatureAnnealing
from training.tasks import make_task


def test_optimizer_decays_linearly_to_the_final_learning_rate():
    overrides = ["train.final_learning_rate=0.0001", "train.reduce_lr_patience=null"]
    train = tiny_recipe("dyck", extra=overrides)["train"]
    optimizer = fitting.make_optimizer(train, steps_per_epoch=3)
    config = optimizer.get_config()["learning_rate"]
    schedule = keras.optimizers.schedules.deserialize(config)
    steps = train["epochs"] * 3
    np.testing.assert_allclose(float(schedule(0)), train["learning_rate"])
    np.testing.assert_allclose(float(schedule(steps)), 1e-4, rtol=1e-6)
    assert optimizer.global_clipnorm == train["clipnorm"]


def test_clipvalue_clips_each_element_and_replaces_the_norm_clip():
    train = tiny_recipe("recognition", extra=["train.clipvalue=15"])["train"]
    optimizer = fitting.make_optimizer(train, steps_per_epoch=3)
    assert optimizer.clipvalue == 15 and optimizer.global_clipnorm is None
    gradient = keras.ops.convert_to_tensor([30.0, -40.0, 1.0])
    (clipped,) = optimizer._clip_gradients([gradient])
    np.testing.assert_allclose(keras.ops.convert_to_numpy(clipped), [15, -15, 1])


def test_schedule_callbacks_follow_the_recipe():
    train = tiny_recipe(
        "dyck", extra=["train.reduce_lr_patience=2", "train.temperature_factor=0.9"]
    )["train"]
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


def test_fit_refuses_arguments_the_data_decide():
    task = make_task(tiny_recipe("dyck"))
    with pytest.raises(ValueError, match="data decide batch_size, x; expected none"):
        fitting.fit(task.build_model(), task, x=[1], batch_size=4)
