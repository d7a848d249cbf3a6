"""Compiling and fitting a model on its task: the one path training and tuning share.

`fit(model, task, ...)` is where the optimizer is made, the model compiled
and `model.fit` called, for `training.runs.train_run` (and so
`python -m training.train`) and for the tuner's trials
(`tuning.hypermodels.RecurrentHyperModel.fit`). A distribution strategy's
scope or a precision policy belongs here.
"""

import keras

import zoo
from training.callbacks import StopBelowLoss, TemperatureAnnealing

# `model.fit` arguments that the task's data decide; `fit` refuses them.
DATA_ARGUMENTS = (
    "x",
    "y",
    "batch_size",
    "validation_data",
    "validation_split",
    "steps_per_epoch",
    "shuffle",
    "sample_weight",
)


def make_optimizer(train, steps_per_epoch):
    """Adam with the recipe's clipping and learning rate (or linear decay).

    Clipping: `train.clipvalue`, when set, clips every gradient element to
    [-clipvalue, clipvalue] (Mali et al.'s "hard-clipped to a maximum
    magnitude of 15") and replaces `train.clipnorm`, the global-norm clip.

    Args:
        train: The recipe's `train` table.
        steps_per_epoch: Training steps per epoch, which the linear decay of
            `train.final_learning_rate` (Krause et al. 2016) spreads over.
    """
    learning_rate = train["learning_rate"]
    if train["final_learning_rate"] is not None:
        learning_rate = keras.optimizers.schedules.PolynomialDecay(
            learning_rate,
            decay_steps=max(1, train["epochs"] * steps_per_epoch),
            end_learning_rate=train["final_learning_rate"],
            power=1.0,
        )
    if train["clipvalue"] is not None:
        return keras.optimizers.Adam(learning_rate, clipvalue=train["clipvalue"])
    return keras.optimizers.Adam(learning_rate, global_clipnorm=train["clipnorm"])


def schedule_callbacks(train, monitor):
    """The callbacks that steer training: stopping, learning rate, temperature."""
    callbacks = [
        keras.callbacks.EarlyStopping(
            monitor=monitor, patience=train["early_stopping_patience"]
        ),
        keras.callbacks.TerminateOnNaN(),
    ]
    if train["reduce_lr_patience"] is not None:
        callbacks.append(
            keras.callbacks.ReduceLROnPlateau(
                monitor=monitor,
                factor=train["reduce_lr_factor"],
                patience=train["reduce_lr_patience"],
            )
        )
    if train["stop_below_loss"] is not None:
        callbacks.append(StopBelowLoss(train["stop_below_loss"], monitor))
    if train["temperature_factor"] is not None:
        callbacks.append(
            TemperatureAnnealing(train["temperature_factor"], train["temperature_min"])
        )
    return callbacks


def fit(model, task, callbacks=(), verbose=0, **fit_kwargs):
    """Compiles `model` for `task.recipe` and fits it on the task's data.

    The optimizer is `make_optimizer`, the loss the task's
    (`task.compile_arguments()`), XLA as `zoo.default_jit_compile()`. The
    data are `task.train_data()` (with the callbacks they need, such as the
    epoch-keyed shuffle's) and `task.validation_data()`; with
    `train.max_steps_per_epoch` the training data repeat and each epoch is
    that many steps. The callbacks are `callbacks`, the data's, then the
    recipe's (`schedule_callbacks`).

    Args:
        model: An uncompiled (or to be recompiled) Keras model of the task.
        task: A `training.tasks.Task`.
        callbacks: Callbacks to run first (e.g. the run directory's).
        verbose: `model.fit`'s verbosity. Default: 0 (silent).
        **fit_kwargs: More `model.fit` arguments (`epochs`, `initial_epoch`,
            `class_weight`, `validation_freq`, ...); `epochs` defaults to
            `train.epochs`. Those the task's data decide (`DATA_ARGUMENTS`)
            are a `ValueError`.

    Returns:
        The `keras.callbacks.History` of `model.fit`.
    """
    refused = sorted(set(fit_kwargs) & set(DATA_ARGUMENTS))
    if refused:
        raise ValueError(
            f"The task's data decide {', '.join(refused)}; expected none of "
            f"{', '.join(DATA_ARGUMENTS)}, received {', '.join(refused)}."
        )
    train = task.recipe["train"]
    train_data, data_callbacks = task.train_data()
    steps = train["max_steps_per_epoch"]
    steps_per_epoch = int(train_data.cardinality()) if steps is None else steps
    if steps is not None:
        train_data = train_data.repeat()
    model.compile(
        optimizer=make_optimizer(train, steps_per_epoch),
        **task.compile_arguments(),
        jit_compile=zoo.default_jit_compile(),
    )
    return model.fit(
        train_data,
        validation_data=task.validation_data(),
        epochs=fit_kwargs.pop("epochs", train["epochs"]),
        steps_per_epoch=steps,
        shuffle=False,  # the task's dataset shuffles, by epoch
        callbacks=[
            *callbacks,
            *data_callbacks,
            *schedule_callbacks(train, task.monitor),
        ],
        verbose=verbose,
        **fit_kwargs,
    )
