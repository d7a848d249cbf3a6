"""What the fit path needs from a task: the `TrainableTask` protocol.

`training.core.fitting.fit` and `training.core.compile_mode` train a task through
these members alone, so they stand on the core floor and import no task:
the task kinds (`training.tasks`, a floor up) each satisfy the protocol by
their shape, without naming it. `tests/training/core/task_protocol_test.py`
checks every registered kind against it, and `tests/layering_test.py` that
the fit path imports it and no task module.
"""

import typing

from training.core.config.recipe_loader import Recipe


@typing.runtime_checkable
class TrainableTask(typing.Protocol):
    """A task `training.core.fitting.fit` can compile a model for and train it on.

    Two attributes and seven methods. `train_data` is built once per task:
    every call returns the same dataset and callbacks, which `fit`,
    `compile_mode` and `train_shape` share, and which keep nothing from one
    fit to the next, so one task trains several models (a search trial's
    seeds) as several tasks would.
    """

    recipe: Recipe
    """The resolved recipe (`training.tasks.recipes.resolve`). `fit` reads its
    `train` section (`TrainOptions`: optimizer, epochs, schedule,
    distribution, precision); `compile_mode` its `train.jit_compile`,
    `train.steps_per_execution` and `model.units`."""

    monitor: str
    """The epoch-log column that `EarlyStopping` and `ReduceLROnPlateau`
    watch (`fitting.schedule_callbacks`), e.g. `"val_loss"`."""

    def training_model(self, model):
        """The model `fit` compiles and trains: `model`, or a model sharing its
        layers and weights (a sampled softmax's training view)."""

    def compile_arguments(self):
        """`model.compile`'s keyword arguments that the task decides (the loss,
        its weights and metrics); `fit` adds the optimizer and compile mode."""

    def train_data(self):
        """`(dataset, callbacks)`: the training batches and the callbacks they
        need (the epoch-keyed shuffle's, a stateful model's resets), built on
        the first call and the same objects at every later one."""

    def train_shape(self):
        """`(batch, length)` of every training step's input: one static shape
        (`compile_mode.for_task` chooses XLA from it)."""

    def epoch_steps(self):
        """A tuple of each epoch's training batches where they change from
        epoch to epoch (a curriculum's), else None: every epoch is
        `train_data`'s dataset once."""

    def validation_data(self):
        """The validation dataset `model.fit` evaluates after every epoch."""

    def validation_callbacks(self):
        """Callbacks that log more validation metrics per epoch; `fit` runs
        them before every other callback, so the others can read them."""
