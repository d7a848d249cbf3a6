"""The `train` section of a recipe: how a model is fitted, for every task kind.

`TrainOptions` is read where fitting lives: the optimizer, schedule and
callbacks (`training.core.fitting`), XLA and steps per call
(`training.core.compile_mode`), the precision policy and the data's batches and
seed (`training.tasks`), the evaluation temperature (`training.runs.runs`). A
new training option is a field here (its default, type and range, and its
combinations with the others in `check`) and the code that reads it
(`recipe.train.NAME`); one that only some task kinds train with is named
in `KIND_OPTIONS` and in those kinds' `TaskOptions.train_options`.
"""

import dataclasses

from training.core.config.option_fields import RecipeError, option

# `train.distribute`: one device, `tf.distribute.MirroredStrategy` over this
# host's devices, or `MultiWorkerMirroredStrategy` over the hosts of TF_CONFIG.
DISTRIBUTE = ("none", "mirrored", "multi_worker")
# `train.precision`: the Keras dtype policy the models are built under (float32
# weights in every case; "mixed_*" computes in bfloat16 or float16).
PRECISIONS = ("float32", "mixed_bfloat16", "mixed_float16")
# `train.optimizer`: Adam, or plain SGD (Zaremba et al. 2014's small and
# medium PTB models: learning rate 1, halved every epoch after the fourth).
OPTIMIZERS = ("adam", "sgd")
# The options only some task kinds train with, and what each does; a kind
# names those it takes (`TaskOptions.train_options`), and the others keep
# the default (a recipe.json leaves them out).
KIND_OPTIONS = {
    "curriculum": "feeds the training strings by length",
    "stateful": "carries a language model's state from batch to batch",
    "reset_every": "zeroes a stateful model's state every N batches",
    "sampled_softmax": "samples a language model's output classes",
}


def _check_jit_compile(value):
    if not (value == "auto" or isinstance(value, bool)):
        raise RecipeError(
            f'train.jit_compile must be "auto", true or false; received {value!r}.'
        )


def _check_steps_per_execution(value):
    if not (value == "auto" or (type(value) is int and value >= 1)):
        raise RecipeError(
            'train.steps_per_execution must be "auto" or an integer >= 1; '
            f"received {value!r}."
        )


@dataclasses.dataclass(frozen=True)
class TrainOptions:
    """How a recipe's model is trained: optimizer, schedule, batches, devices."""

    seed: int = option(0, low=0, high=2**32 - 1)  # NumPy's seeds
    epochs: int = option(10, low=1)
    batch_size: int = option(32, low=1, high=65_536)
    learning_rate: float = option(1e-3, low=0, low_open=True)
    # linear decay to this value (mLSTM paper)
    final_learning_rate: float | None = option(None, low=0, low_open=True)
    optimizer: str = option("adam", choices=OPTIMIZERS)
    # the learning rate times this factor after every epoch past
    # `lr_decay_start` epochs (Zaremba et al. 2014: 0.5 after 4)
    lr_decay: float | None = option(None, low=0, high=1, low_open=True)
    lr_decay_start: int = option(0, low=0)
    clipnorm: float = option(1.0, low=0, low_open=True)
    # element-wise gradient clipping; replaces clipnorm
    clipvalue: float | None = option(None, low=0, low_open=True)
    curriculum: bool = option(False)  # incremental training: short strings first
    early_stopping_patience: int = option(5, low=0)
    reduce_lr_patience: int | None = option(None, low=0)
    reduce_lr_factor: float = option(0.5, low=0, high=1, low_open=True, high_open=True)
    # second-order LSTM annealing (0.9)
    temperature_factor: float | None = option(None, low=0, high=1, low_open=True)
    temperature_min: float = option(0.05, low=0, low_open=True)
    eval_temperature: float | None = option(None)  # tau for evaluation (`check`)
    # stop once the validation loss is below it
    stop_below_loss: float | None = option(None, low=0, low_open=True)
    stateful: bool = option(False)
    reset_every: int | None = option(None)  # stateful: also zero every N batches
    max_steps_per_epoch: int | None = option(None, low=1)
    distribute: str = option("none", choices=DISTRIBUTE)  # batch_size stays global
    precision: str = option("float32", choices=PRECISIONS)
    # XLA: "auto" (training.core.compile_mode's rule), true or false
    jit_compile: str | bool = option("auto", check=_check_jit_compile)
    # training steps per compiled call: "auto" (compile_mode's rule) or N
    steps_per_execution: str | int = option("auto", check=_check_steps_per_execution)
    # language models: train the decoder on N sampled negative classes a
    # step (training.core.sampled_softmax); 0: the full softmax
    sampled_softmax: int = option(0, low=0)

    def check(self, recipe):
        """A one-line `RecipeError` if these options do not go together (or
        with `recipe`'s model)."""
        if self.stateful and self.distribute != "none":
            raise RecipeError(
                "train.stateful carries each row's state into the next batch, "
                "which a distribution strategy's batch split does not keep; "
                "expected train.stateful=false (stateless windows) with "
                f"train.distribute={self.distribute!r}."
            )
        if self.sampled_softmax and self.distribute != "none":
            raise RecipeError(
                f"train.sampled_softmax={self.sampled_softmax} samples the output "
                "classes on one device; expected 0 (the full softmax) with "
                f"train.distribute={self.distribute!r}."
            )
        reset_every = self.reset_every
        if reset_every is not None and not (self.stateful and reset_every >= 1):
            raise RecipeError(
                "train.reset_every zeroes a stateful model's state every N batches; "
                "expected an integer >= 1 with train.stateful=true, received "
                f"{reset_every!r} with train.stateful={str(self.stateful).lower()}."
            )
        self._check_step_groups()
        cell = recipe.model.cell
        if self.eval_temperature is not None and not (
            cell == "second_order_lstm" and self.eval_temperature > 0
        ):
            raise RecipeError(
                "train.eval_temperature sets the second-order LSTM's tau for "
                "evaluation; expected a number > 0 with model.cell "
                f"'second_order_lstm', received {self.eval_temperature!r} with "
                f"{cell!r}."
            )
        schedules = [
            key
            for key in ("reduce_lr_patience", "final_learning_rate", "lr_decay")
            if getattr(self, key) is not None
        ]
        if len(schedules) > 1:
            raise RecipeError(
                f"train.{schedules[0]} and train.{schedules[1]} both set; "
                "expected one learning-rate schedule."
            )

    def _check_step_groups(self):
        """Refuses `steps_per_execution=N` where groups of N steps cannot run."""
        steps = self.steps_per_execution
        if steps == "auto" or steps == 1:
            return
        if self.distribute != "none":
            raise RecipeError(
                f"train.steps_per_execution={steps} is not supported with "
                f'train.distribute={self.distribute!r}; expected "auto" or 1.'
            )
        # Keras runs whole groups on repeated data (an epoch would run more
        # steps), and zeroes the state between groups only.
        for key in ("max_steps_per_epoch", "reset_every"):
            count = getattr(self, key)
            if count is not None and count % steps:
                raise RecipeError(
                    f"train.steps_per_execution={steps} runs the steps in groups "
                    f"of {steps}, which must divide train.{key}={count}; expected "
                    'a divisor of it or "auto".'
                )
