"""What every task shares: the recipe, the vocabulary, the language model.

`Task` builds the recipe's language model under its precision policy and
turns arrays into the datasets `fit` reads (`_shuffled`, `_batched`);
`_predict` runs a model over a split in a few compiled shapes. Each kind of
task (`training.tasks`) is a subclass in a module of its own.
"""

import contextlib
import copy

import keras
import numpy as np
import tensorflow as tf

import zoo
from training.core import compile_mode
from training.data import batching

PREDICT_BATCH = 256
# Under XLA a split is predicted padded to a multiple of this length (and of
# PREDICT_BATCH rows), so a few compiled shapes serve every split.
PREDICT_LENGTH_STEP = 64


class Task:
    """What every task shares: the recipe, the vocabulary, the language model.

    `options` is the class of the kind's `task` section (a frozen dataclass
    of `training.core.config.task_options.TaskOptions`); `training.tasks.TASKS`
    registers each kind by its `options.kind`.
    """

    options = None
    monitor = "val_loss"
    # What a hyperparameter search (`tuning.hypermodels`) optimizes: a column
    # of the epoch logs and "min" or "max"; `search_callbacks` log it where
    # Keras does not.
    search_objective = ("val_loss", "min")
    end_id = None  # the id that ends a generated string, if the task has one
    never_generated = ()  # ids a generated text never holds (padding, START)
    splits = ("valid", "test")
    # The conventions natural text is written in before its tokens are looked
    # up (`zoo.text_conventions`), which the task's own vocabulary records
    # (and `python -m training.migrate` writes into a vocabulary of an
    # earlier format); None: the text as written (a Dyck task's brackets).
    conventions = None
    # What a preset's card shows of the text the model writes
    # (`preset_builder.save_preset`): None, or the `training.runs.generation`
    # arguments of one sample (prompt, length, temperature, seed).
    card_sample = None

    def __init__(self, recipe, vocabulary=None):
        self.recipe = recipe
        self._train_data = None  # `train_data`'s, built on its first call
        self.vocabulary = self.own_vocabulary() if vocabulary is None else vocabulary
        self.vocab_size = len(self.vocabulary)

    def own_vocabulary(self):
        """The vocabulary of the task's data (used when none is given)."""
        raise NotImplementedError

    def tokenizer(self):
        """Natural text -> ids -> text for the task's vocabulary (`zoo.tokenizer`)."""
        return self.vocabulary.tokenizer()

    def with_recipe(self, recipe):
        """The same data with another recipe's model and training settings.

        Keras Tuner's trials use it: every trial reads the data generated or
        loaded once, and builds and trains the trial's model. The arrays
        are shared (the search keeps the recipe keys that decide them fixed,
        `tuning.search_space.DATA_KEYS`); the training dataset is the
        clone's own, made on its first `train_data`, since other keys
        (`train.epochs` of a curriculum, `train.max_steps_per_epoch`, the
        targets of `task.step_labels`) shape it too.
        """
        clone = copy.copy(self)
        clone.recipe = recipe
        clone._train_data = None
        return clone

    def compile_arguments(self):
        return {"loss": keras.losses.SparseCategoricalCrossentropy(from_logits=True)}

    def _builder_arguments(self):
        """The builder's arguments: the recipe's `model` section, the vocabulary."""
        return {
            **self.recipe.model.builder_arguments(),
            "vocab_size": self.vocab_size,
        }

    def build_model(self, stateful=False, batch_size=None):
        """The task's model, built under the recipe's `train.precision` policy.

        With `"mixed_bfloat16"` or `"mixed_float16"` the layers keep float32
        weights and compute in the lower precision; the output heads compute
        in float32 (see `zoo.language_model`). The global dtype policy is
        restored afterwards.
        """
        with precision_policy(self.recipe.train.precision):
            return self._build_model(stateful, batch_size)

    def _build_model(self, stateful, batch_size):
        """The recipe's language model (`zoo.language_model`)."""
        return zoo.language_model(
            stateful=stateful, batch_size=batch_size, **self._builder_arguments()
        )

    def training_model(self, model):
        """The model `training.core.fitting.fit` compiles and trains: `model` itself.

        A task whose training differs from its evaluation returns a model
        that shares `model`'s layers and weights (`LanguageModelTask`'s
        sampled softmax).
        """
        return model

    def train_data(self):
        """`(dataset, callbacks)`: the training batches and the callbacks they need.

        Made on the first call (`make_train_data`) and the same objects at
        every later one, so one run builds its training data once:
        `training.core.fitting.fit`, `training.core.compile_mode` and `train_shape`
        share them. The callbacks keep nothing from one training to the
        next (`batching.DataEpoch` starts each at epoch 0, as a new dataset
        does), so two fits on one task (a search trial's seeds) train as
        fits on two tasks do.
        """
        if self._train_data is None:
            self._train_data = self.make_train_data()
        return self._train_data

    def make_train_data(self):
        """A new `(dataset, callbacks)` of the training split (`train_data`)."""
        raise NotImplementedError

    def train_shape(self):
        """`(batch, length)` of every training step's input (one static shape)."""
        dataset, _ = self.train_data()
        return tuple(tf.nest.flatten(dataset.element_spec)[0].shape)

    def epoch_steps(self):
        """The training batches of each epoch, where they change from epoch to epoch.

        A tuple with one count per epoch of `train.epochs` (an epoch past
        them has the last one's), for training data whose length TensorFlow
        cannot know and which changes between epochs (a curriculum's):
        `training.core.fitting.fit` tells Keras each epoch's length. None (the
        default) where every epoch is the training dataset once, of one
        length.
        """
        return None

    def trivial_baseline(self):
        """What a rule without learning scores on this task's splits, or None.

        A preset's card shows it beside the preset's own score
        (`training.reproduction.preset_builder.save_preset`): a language
        model's is an add-k n-gram's. None by default.
        """
        return None

    def validation_callbacks(self):
        """Callbacks that log validation metrics per epoch (`EpochMetrics`).

        `training.core.fitting.fit` runs them before every other callback, so the
        run's `log.csv` holds their columns. None by default.
        """
        return []

    def search_callbacks(self):
        """Callbacks that log `search_objective` per epoch, for a search only.

        A hyperparameter search passes them to `training.core.fitting.fit`;
        training does not run them. None by default (`val_loss` is Keras's).
        """
        return []

    def _shuffled(self, columns, **order):
        """The training batches of `columns` and their callbacks, shuffled by epoch.

        `order`: `batching.epoch_shuffled`'s `lengths` and `limits`
        (curriculum). With `train.max_steps_per_epoch`, the endless stream
        whose epochs are that many batches (`batching.capped_epochs`).
        """
        train = self.recipe.train
        dataset, epoch = batching.epoch_shuffled(
            columns,
            train.batch_size,
            train.seed,
            steps_per_epoch=train.max_steps_per_epoch,
            **order,
        )
        return dataset, [epoch]

    def _batched(self, columns):
        """The split as one batch: one shape for the compiled test step.

        The loss over one batch is the mean over every weighted token, as
        Keras's batch-size-weighted mean over smaller batches is.
        """
        dataset = tf.data.Dataset.from_tensor_slices(columns)
        return dataset.batch(len(columns[0]), drop_remainder=True)  # a static shape

    def _predict(self, model, inputs):
        """The model's outputs on a split's `inputs` `(strings, length)`.

        With XLA (`compile_mode.choose` at the split's length) the inputs are
        padded with padding ids to multiples of `PREDICT_BATCH` rows and
        `PREDICT_LENGTH_STEP` steps, so every split of a run reuses a few
        compiled shapes; the outputs are cut back (the models are causal, or
        mask the padding, so padding after a string changes none of its
        outputs). An output with no time axis (a classifier's) is cut to the
        rows alone.

        Batch by batch through `predict_on_batch`, the same compiled predict
        step `model.predict` runs and the same outputs: `model.predict`
        builds a `tf.data` pipeline and its iterators on every call, 38 ms
        against 1.5 ms for a 256-row split of an 8-unit recogniser
        (benchmarks/log.md, "Predicting a split"). Under a
        `train.distribute` strategy `model.predict` splits the batches over
        the replicas, which `predict_on_batch` would not.
        """
        rows, length = inputs.shape
        padded_length = -(-length // PREDICT_LENGTH_STEP) * PREDICT_LENGTH_STEP
        choice = compile_mode.choose(
            self.recipe.train.jit_compile,
            self.recipe.model.units,
            min(rows, PREDICT_BATCH),
            padded_length,
        )
        compile_mode.apply(model, choice.used)
        if choice.used:
            padded_rows = -(-rows // PREDICT_BATCH) * PREDICT_BATCH
            padded = np.zeros((padded_rows, padded_length), inputs.dtype)
            padded[:rows, :length] = inputs
            inputs = padded
        if self.recipe.train.distribute == "none" and rows:
            outputs = predict_in_batches(model, inputs, PREDICT_BATCH)
        else:
            outputs = model.predict(inputs, batch_size=PREDICT_BATCH, verbose=0)
        return keras.tree.map_structure(
            lambda x: x[:rows, :length] if x.ndim == 3 else x[:rows], outputs
        )


def predict_in_batches(model, inputs, batch_size):
    """`model`'s outputs on `inputs` (at least one row), one
    `predict_on_batch` call for each `batch_size` rows, concatenated.

    The compiled predict step `model.predict` runs, without the `tf.data`
    pipeline and iterators `model.predict` builds on every call; not under a
    `tf.distribute` strategy, whose replicas would each predict every row.
    """
    batches = [
        model.predict_on_batch(inputs[start : start + batch_size])
        for start in range(0, len(inputs), batch_size)
    ]
    return keras.tree.map_structure(lambda *parts: np.concatenate(parts), *batches)


@contextlib.contextmanager
def precision_policy(name):
    """Sets Keras's global dtype policy to `name` inside the block.

    `name` is one of `training.core.config.train_options.PRECISIONS`; layers
    take the policy when they are made, so a model built inside keeps it.
    """
    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy(name)
    try:
        yield
    finally:
        keras.config.set_dtype_policy(previous)


def check_stateless(model_name, stateful):
    """Raises a one-line `ValueError` when a stateless model is asked to be stateful."""
    if stateful:
        raise ValueError(
            f"{model_name} is stateless; expected stateful=False, received True."
        )
