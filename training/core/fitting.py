"""Compiling and fitting a model on its task: the one path training and tuning share.

`fit(model, task, ...)` is where the optimizer is made, the model compiled
and `model.fit` called, for `training.runs.runs.train_run` (and so
`python -m training.train`) and for the tuner's trials
(`tuning.hypermodels.RecurrentHyperModel.fit`). A distribution strategy's
scope and float16 loss scaling belong here; the precision policy is applied
where models are built (`training.tasks.task.Task.build_model`).
"""

import itertools
import json
import os

import keras
import tensorflow as tf

from training.core import backends, compile_mode, interrupts
from training.core.callbacks import (
    RunBackup,
    StopBelowLoss,
    TemperatureAnnealing,
    close_logs,
)
from training.core.task_protocol import TrainableTask
from zoo import keras_compat

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

# The options of the datasets `fit` gives `model.fit`: tf.data's autotuning
# off. The tasks' pipelines are in-memory arrays with nothing to tune (no
# AUTOTUNE value, no parallel map), but autotuning gives every iterator
# threads of its own. Keras leaves some iterators in reference cycles; the
# garbage collector deletes them at some later allocation, which then waited
# for those threads, for seconds, with the process idle (in training and in
# the tests alike). Epochs take as long without it.
UNTUNED = tf.data.Options()
UNTUNED.autotune.enabled = False


def distribution_strategy(train):
    """The `tf.distribute` strategy of `train.distribute`; build and fit in its scope.

    - `"none"`: the default strategy (one device);
    - `"mirrored"`: `MirroredStrategy` over this host's GPUs or, without one,
      over its logical CPU devices (`tf.config.set_logical_device_configuration`);
    - `"multi_worker"`: `MultiWorkerMirroredStrategy` over the workers of the
      `TF_CONFIG` environment variable (create it before any other TF op).

    `train.batch_size` is the global batch, split evenly across replicas.
    On a backend other than TensorFlow only `"none"` is taken (a
    `backends.NoStrategy`); the others are a one-line `ValueError`.
    """
    if not backends.is_tensorflow():
        if train.distribute != "none":
            raise ValueError(
                f"train.distribute={train.distribute!r} uses tf.distribute, "
                f"which needs the TensorFlow backend; received the "
                f"{backends.name()} backend (KERAS_BACKEND): use "
                "train.distribute=none there."
            )
        return backends.NoStrategy()
    if train.distribute == "mirrored":
        devices = tf.config.list_logical_devices("GPU") or (
            tf.config.list_logical_devices("CPU")
        )
        return tf.distribute.MirroredStrategy([device.name for device in devices])
    if train.distribute == "multi_worker":
        if "TF_CONFIG" not in os.environ:
            raise ValueError(
                "train.distribute='multi_worker' reads the cluster from TF_CONFIG; "
                "expected that environment variable set on every worker."
            )
        return tf.distribute.MultiWorkerMirroredStrategy()
    return tf.distribute.get_strategy()


def is_chief(train):
    """Whether this process writes the run directory.

    It does unless `train.distribute` is `"multi_worker"` and `TF_CONFIG`
    names it a worker other than worker 0 of a cluster without a chief.
    """
    if train.distribute != "multi_worker":
        return True
    cluster = json.loads(os.environ.get("TF_CONFIG", "{}"))
    this = cluster.get("task", {})  # this process's place in the cluster
    kind, index = this.get("type", "chief"), this.get("index", 0)
    has_chief = "chief" in cluster.get("cluster", {})
    return kind == "chief" or (kind == "worker" and index == 0 and not has_chief)


def make_optimizer(train, steps_per_epoch):
    """Adam or SGD with the recipe's clipping and learning-rate schedule.

    Schedules: constant; linear decay to `train.final_learning_rate`
    (Krause et al. 2016); or times `train.lr_decay` after each epoch past
    `train.lr_decay_start` (Zaremba et al. 2014), both counted in steps.

    Clipping: `train.clipvalue`, when set, clips every gradient element to
    [-clipvalue, clipvalue] (Mali et al.'s "hard-clipped to a maximum
    magnitude of 15") and replaces `train.clipnorm`, the global-norm clip.

    Args:
        train: The recipe's `TrainOptions` (`recipe.train`).
        steps_per_epoch: Training steps per epoch, or a sequence of each
            epoch's (`Task.epoch_steps`), which the linear decay of
            `train.final_learning_rate` (Krause et al. 2016) spreads over.
    """
    learning_rate = train.learning_rate
    ends = epoch_ends(train.epochs, steps_per_epoch)
    if train.final_learning_rate is not None:
        learning_rate = keras.optimizers.schedules.PolynomialDecay(
            learning_rate,
            decay_steps=max(1, ends[-1]),
            end_learning_rate=train.final_learning_rate,
            power=1.0,
        )
    elif train.lr_decay is not None:
        rates = [
            learning_rate * train.lr_decay ** max(epoch + 1 - train.lr_decay_start, 0)
            for epoch in range(train.epochs)
        ]
        # Keras's boundaries are the last step at each value (step <= it).
        learning_rate = (
            keras.optimizers.schedules.PiecewiseConstantDecay(
                [end - 1 for end in ends[:-1]], rates
            )
            if len(rates) > 1
            else rates[0]
        )
    clip = (
        {"clipvalue": train.clipvalue}
        if train.clipvalue is not None
        else {"global_clipnorm": train.clipnorm}
    )
    if train.optimizer == "sgd":
        return keras.optimizers.SGD(learning_rate, **clip)
    return keras.optimizers.Adam(learning_rate, **clip)


def epoch_ends(epochs, steps_per_epoch):
    """The optimizer step each of `epochs` epochs ends at (`make_optimizer`)."""
    if isinstance(steps_per_epoch, int):
        steps = [steps_per_epoch] * epochs
    else:
        steps = [steps_of(steps_per_epoch, epoch) for epoch in range(epochs)]
    return list(itertools.accumulate(steps))


def steps_of(epoch_steps, epoch):
    """Epoch `epoch`'s steps in `Task.epoch_steps` (past its end, the last one's)."""
    return epoch_steps[min(epoch, len(epoch_steps) - 1)]


def schedule_callbacks(train, monitor):
    """The callbacks that steer training: stopping, learning rate, temperature.

    `monitor` is a validation loss (`Task.monitor`), so lower is better: said
    to Keras, which cannot tell the direction of a loss of one output
    (`val_accept_loss`) by itself.
    """
    callbacks = [
        keras.callbacks.EarlyStopping(
            monitor=monitor, mode="min", patience=train.early_stopping_patience
        ),
        keras.callbacks.TerminateOnNaN(),
    ]
    if train.reduce_lr_patience is not None:
        callbacks.append(
            keras.callbacks.ReduceLROnPlateau(
                monitor=monitor,
                mode="min",
                factor=train.reduce_lr_factor,
                patience=train.reduce_lr_patience,
            )
        )
    if train.stop_below_loss is not None:
        callbacks.append(StopBelowLoss(train.stop_below_loss, monitor))
    if train.temperature_factor is not None:
        callbacks.append(
            TemperatureAnnealing(train.temperature_factor, train.temperature_min)
        )
    return callbacks


def fit(
    model,
    task: TrainableTask,
    callbacks=(),
    verbose=0,
    jit_compile=None,
    steps_per_execution=None,
    **fit_kwargs,
):
    """Compiles `model` for `task.recipe` and fits it on the task's data.

    The model trained is `task.training_model(model)` (`model` itself, or
    a language model's sampled softmax training view on its weights), the
    optimizer `make_optimizer`, the loss the task's
    (`task.compile_arguments()`), XLA as `jit_compile` or else as the
    recipe's `train.jit_compile` chooses (`compile_mode.for_task`); op
    determinism follows (`compile_mode.configure_determinism`); steps per
    call of the train function as `steps_per_execution` or else as
    `train.steps_per_execution` chooses (`compile_mode.steps_for_task`). The
    data are `task.train_data()` (with the callbacks they need, such as the
    epoch-keyed shuffle's) and `task.validation_data()`, without tf.data's
    autotuning (`UNTUNED`); with
    `train.max_steps_per_epoch` the task's training data are an endless
    stream and each epoch is that many steps of it, fixed by the epoch's
    number (`training.data.batching.capped_epochs`), so a resumed run reads
    what an uninterrupted one does. Where the epochs' lengths differ
    (`task.epoch_steps()`, a curriculum's), each epoch trains on its own
    batches once (`fit_epoch_lengths`). The callbacks are the task's
    per-epoch validation metrics (`task.validation_callbacks()`, e.g.
    `val_wcpa`), `callbacks`,
    the data's, then the recipe's (`schedule_callbacks`); a
    `training.core.callbacks.RunBackup` among them runs last and saves the
    others' state with its backup. With
    `train.distribute` other than `"none"` the model must have been built in
    `distribution_strategy(train).scope()`; it is compiled there (under
    `"multi_worker"` as a `zoo.keras_compat.MultiWorkerModel`) and
    `model.fit` splits each global batch. With
    `train.precision="mixed_float16"` the optimizer is wrapped in Keras's
    `LossScaleOptimizer` (dynamic loss scaling); the model itself is built
    under the policy by `task.build_model`.

    Args:
        model: An uncompiled (or to be recompiled) Keras model of the task.
        task: A `training.core.task_protocol.TrainableTask` (a task of
            `training.tasks.make_task`); its `train_data` is built once and
            shared with `compile_mode`.
        callbacks: Callbacks to run first (e.g. the run directory's).
        verbose: `model.fit`'s verbosity. Default: 0 (silent).
        jit_compile: Whether to compile the steps with XLA (a resumed run
            passes its first part's choice). Default: the recipe's choice.
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
    train = task.recipe.train
    if not backends.is_tensorflow():
        strategy = distribution_strategy(train)  # refuses tf.distribute's
    else:
        strategy = model.distribute_strategy  # the one it was built under
    if train.distribute != "none" and strategy is tf.distribute.get_strategy():
        if not tf.distribute.has_strategy():  # built and fitted with no strategy
            raise ValueError(
                f"train.distribute={train.distribute!r} needs the model built "
                "in fitting.distribution_strategy(train).scope(); received one "
                "built outside any strategy."
            )
    if jit_compile is None:
        jit_compile = compile_mode.for_task(task).used
    if steps_per_execution is None:
        steps_per_execution = compile_mode.steps_for_task(task, jit_compile).used
    compile_mode.configure_determinism(jit_compile)
    train_data, data_callbacks = task.train_data()
    train_data = train_data.with_options(UNTUNED)
    steps = train.max_steps_per_epoch
    epoch_steps = task.epoch_steps() if steps is None else None
    if steps is not None:  # the task's data are an endless stream
        steps_per_epoch = steps
    elif epoch_steps is not None:
        steps_per_epoch = epoch_steps
    else:
        steps_per_epoch = int(train_data.cardinality())
    if train.distribute == "multi_worker":  # keras-team/keras#20585
        with strategy.scope():
            model = keras_compat.MultiWorkerModel(
                model.inputs, model.outputs, name=model.name
            )
    with strategy.scope():  # the optimizer's variables live where the model's do
        model = task.training_model(model)
        optimizer = make_optimizer(train, steps_per_epoch)
        if train.precision == "mixed_float16":  # float16 gradients underflow
            optimizer = keras.optimizers.LossScaleOptimizer(optimizer)
        model.compile(
            optimizer=optimizer,
            **task.compile_arguments(),
            jit_compile=bool(jit_compile),
            steps_per_execution=steps_per_execution,
        )
        # Keras 3.15's TensorFlow trainer with no strategy builds the optimizer
        # inside the first traced train step, and TensorFlow traces a step that
        # made variables twice; built here, the step is traced once.
        if model.built and not model.optimizer.built:
            model.optimizer.build(model.trainable_variables)
        # So does it the compiled loss's trackers (one per output) and the
        # compiled metrics: made here from the data's shapes, as Keras makes
        # them under a strategy.
        if backends.is_tensorflow() and train.distribute == "none":
            keras_compat.build_compiled_state(model, train_data.element_spec)
    compile_mode.check_applied(model, jit_compile)
    callbacks = [
        *task.validation_callbacks(),  # first: the others read what they log
        *callbacks,
        *data_callbacks,
        *schedule_callbacks(train, task.monitor),
    ]
    backups = [c for c in callbacks if isinstance(c, RunBackup)]
    callbacks = [c for c in callbacks if not isinstance(c, RunBackup)]
    for backup in backups:  # last, so it saves the others' state of the epoch
        backup.track(callbacks)
    arguments = {
        "validation_data": task.validation_data().with_options(UNTUNED),
        "epochs": fit_kwargs.pop("epochs", train.epochs),
        "shuffle": False,  # the task's dataset shuffles, by epoch
        "verbose": verbose,
        **fit_kwargs,
    }
    # last: an epoch a dropped Ctrl-C came in ends backed up, then stops
    callbacks = [*callbacks, *backups, interrupts.InterruptCheck()]
    try:
        with interrupts.remembered():
            if epoch_steps is not None:
                return fit_epoch_lengths(
                    model, train_data, epoch_steps, callbacks, strategy, **arguments
                )
            return model.fit(
                train_data, steps_per_epoch=steps, callbacks=callbacks, **arguments
            )
    finally:
        close_logs(callbacks)  # after an exception too


class OneTraining(keras.callbacks.CallbackList):
    """Callbacks that see several `model.fit` calls as one (`fit_epoch_lengths`).

    Each call's `on_train_begin` and `on_train_end` are dropped; `begin` and
    `end` send them once, before the first call and after the last. So
    `EarlyStopping`'s and `ReduceLROnPlateau`'s counters, `History`, the
    `CSVLogger`'s file and the backup (which `on_train_end` deletes) carry on
    from one call to the next as from one epoch to the next.
    """

    last_logs = None  # the last epoch's logs, which `end` passes on as fit does

    def on_train_begin(self, logs=None):
        pass

    def on_train_end(self, logs=None):
        pass

    def on_epoch_end(self, epoch, logs=None):
        super().on_epoch_end(epoch, logs)
        self.last_logs = logs

    def begin(self):
        super().on_train_begin()

    def end(self):
        super().on_train_end(self.last_logs)


def fit_epoch_lengths(model, dataset, epoch_steps, callbacks, strategy, **arguments):
    """`model.fit` where epoch e is `epoch_steps[e]` batches of `dataset`, once each.

    Keras 3 reads the length of a dataset of unknown cardinality from its
    first epoch (the batches read, plus the call that found it empty) and
    stops every later epoch there, so a later epoch that is longer loses
    batches; a dataset of known cardinality has one length for every epoch.
    So each run of consecutive epochs of one length is one `model.fit` call
    on `dataset` with that cardinality (`tf.data`'s `assert_cardinality`,
    which also fails if the data disagree), from its first epoch
    (`initial_epoch`) to its last, with the callbacks of all the calls in one
    `OneTraining`. A backup is restored before the first call, in
    `strategy`'s scope (where the optimizer's variables live), as `fit`
    restores one (`BackupAndRestore.on_train_begin` sets the epoch to resume
    from); a callback that stops training stops the calls.

    Args:
        model: A compiled model.
        dataset: The training data, epoch by epoch (an epoch-keyed shuffle).
        epoch_steps: Each epoch's batches (`Task.epoch_steps`; `steps_of`).
        callbacks: The callbacks, in order.
        strategy: The strategy the model was built under (`fit`'s).
        **arguments: More `model.fit` arguments (`epochs`, `initial_epoch`,
            `verbose`, `validation_data`, ...).

    Returns:
        The `keras.callbacks.History` of all the calls.
    """
    epochs = arguments.pop("epochs")
    verbose = arguments.pop("verbose")
    callbacks = OneTraining(
        callbacks, add_history=True, add_progbar=verbose != 0, model=model
    )
    initial_epoch = arguments.pop("initial_epoch", 0)
    model.stop_training = False
    with strategy.scope():
        callbacks.begin()
    # What `model.fit` does after `on_train_begin`: a restored backup names
    # the epoch to resume from. Read once, then cleared, or every later call
    # would start there again.
    epoch = keras_compat.initial_epoch(model) or initial_epoch
    keras_compat.set_initial_epoch(model, None)
    while epoch < epochs and not model.stop_training:
        steps = steps_of(epoch_steps, epoch)
        stop = epoch + 1
        while stop < epochs and steps_of(epoch_steps, stop) == steps:
            stop += 1
        callbacks.set_params({"verbose": verbose, "epochs": epochs, "steps": steps})
        model.fit(
            dataset.apply(tf.data.experimental.assert_cardinality(steps)),
            initial_epoch=epoch,
            epochs=stop,
            callbacks=callbacks,
            verbose=verbose,
            **arguments,
        )
        epoch = stop
    callbacks.end()
    return model.history
