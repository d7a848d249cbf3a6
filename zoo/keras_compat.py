"""Every Keras private attribute the project touches, and the Keras workarounds.

Written against Keras 3.15.1 (and keras-tuner 1.4.8 for `chief_oracle`).
Keras keeps `keras.src` and its underscored attributes private (its public
API is what `@keras_export` marks). Where the project needs one, it reaches
it here, through a function that says what it reads, why, which public API
was considered and, where known, when it can go.
`tests/private_attributes_test.py` fails when any other module of zoo/,
training/ or tuning/ touches a private attribute of Keras or imports
`keras.src`; `tests/zoo/keras_compat_test.py` checks each function against
the installed Keras, so an upgrade that breaks one fails a test named after
it.

Workarounds whose code is the feature of another module use the functions
here for what is private:

- `zoo.RNN` and `zoo.tensorflow_loop`: `keras.layers.RNN`'s TensorFlow loop,
  replaced (`keras_rnn_loop`, `in_stateless_scope`);
- `zoo.cells.diffstk_jax`: the DiffStk state noise in Keras's JAX loop
  (`keras_rnn_loop`, `backend_rnn`);
- `zoo.zoo_model.carry_state_on_jax`: a stateful layer's recurrent state
  through JAX's compiled steps (`carry_variable`);
- `training.core.callbacks.RunBackup`: a backup that resumes `fit`
  (`set_initial_epoch`);
- `training.core.fitting.fit` and `zoo.tensorflow_steps`: a train step
  traced once, not twice (`build_compiled_state`).
"""

import keras

# --- Layers and their variables ---------------------------------------------


def flatten_layers(model, include_self=False):
    """Every layer Keras tracks inside `model`, recursively, each once.

    Keras 3.15's `Layer._flatten_layers(include_self, recursive=True)`: the
    layers of nested models and the cells inside `keras.layers.RNN`,
    `Bidirectional` and `StackedRNNCells`; `model` itself first when
    `include_self`. Public API considered: `model.layers` lists a model's
    own layers only, not an `RNN`'s cell or a wrapper's layers, and following
    `cell`, `forward_layer` or `cells` by hand would miss a layer Keras tracks
    under another attribute. Returns an iterator.
    """
    return model._flatten_layers(include_self=include_self, recursive=True)


def seed_generators(layer):
    """The `keras.random.SeedGenerator`s `layer` itself owns, in creation order.

    Keras 3.15 lists them in `Layer._seed_generators` (a `Dropout`'s, a cell's
    generator attribute; not those of nested layers) and puts their `state`
    among `layer.variables`, not `layer.weights`. Entries that are not
    generators (`carry_variable`'s) are left out. Public API considered:
    `layer.variables` holds the states, but not which variables are
    generators' states; restoring what a layer draws needs the generators.
    """
    return [
        generator
        for generator in layer._seed_generators
        if isinstance(generator, keras.random.SeedGenerator)
    ]


class _CarriedVariable:
    """Holds one variable where Keras looks for a seed generator's state."""

    def __init__(self, variable):
        self.state = variable


def carry_variable(layer, variable):
    """Lists `variable` among `layer.variables`, but not among its weights.

    Keras 3.15's `Layer.variables` adds the `state` of each entry of
    `Layer._seed_generators`; a variable put there is passed through every
    compiled step (those of JAX are pure functions of the variables Keras
    passes) and is not saved with the weights (`get_weights`, `.keras` files,
    checkpoints). `zoo.zoo_model.carry_state_on_jax` uses it for the state
    variables of a stateful `keras.layers.RNN`, which Keras creates untracked
    (`_create_state_variables` runs under `no_automatic_dependency_tracking`).
    Public API considered: `layer.add_variable(..., trainable=False)` tracks
    a variable but makes it a weight. A variable already carried is not
    added again. Can go when Keras tracks an RNN's state itself.
    """
    if all(entry.state is not variable for entry in layer._seed_generators):
        layer._seed_generators.append(_CarriedVariable(variable))


# --- The recurrent loop -----------------------------------------------------


def keras_rnn_loop(layer, sequences, initial_state, mask, training=False):
    """Keras's own loop of `layer`, whatever loop its class runs.

    `keras.layers.RNN.inner_loop` of Keras 3.15, called on `layer`: the
    method `RNN.call` runs the time loop through. It has no underscore, but
    nothing documents it as a hook; `zoo.RNN` overrides it (as
    `keras.layers.LSTM` does) and hands the cases it does not take here.
    """
    return keras.layers.RNN.inner_loop(
        layer, sequences, initial_state, mask, training=training
    )


def backend_rnn(step_function, inputs, initial_states, **options):
    """The current backend's recurrent loop, as `RNN.inner_loop` calls it.

    `keras.src.backend.rnn` of Keras 3.15: `step_function(inputs, states)`
    returns `(output, new_states)`; `options` are its `go_backwards`,
    `mask`, `unroll`, `input_length`, `zero_output_for_mask`,
    `return_all_outputs`; returns `(last_output, outputs, new_states)`.
    Public API considered: `keras.ops.scan` is a loop, but the masking,
    `go_backwards`, `unroll` and `zero_output_for_mask` that `keras.layers.RNN`
    relies on would be written again.
    """
    from keras.src import backend

    return backend.rnn(step_function, inputs, initial_states, **options)


def in_stateless_scope():
    """Whether a `keras.StatelessScope` encloses the caller.

    `keras.src.backend.in_stateless_scope` of Keras 3.15. Keras exports
    `keras.StatelessScope` but no way to ask whether one is open
    (`model.stateless_call` and a symbolic build open one); a loop that
    reads variables itself must not bypass the scope's mapping
    (`zoo.tensorflow_loop`).
    """
    from keras.src import backend

    return backend.in_stateless_scope()


# --- Fitting ----------------------------------------------------------------


def build_compiled_state(model, batch):
    """Makes the variables of `model`'s compiled loss and metrics from `batch`.

    `batch` is one `(x, y)` or `(x, y, sample_weight)` of the training data,
    as tensors or as `tf.TensorSpec`s (a dataset's `element_spec`): only
    shapes and dtypes are read. Keras 3.15's TensorFlow trainer with no
    distribution strategy makes them inside the first traced train step
    (`_maybe_symbolic_build` returns at once there), and TensorFlow traces a
    `tf.function` that made variables a second time: a model with more than
    one output (a loss tracker per output) or with compiled metrics traced
    its step twice. Keras's `_symbolic_build(data_batch=...)`, which its JAX
    and torch trainers and its TensorFlow trainer under a strategy call at
    the start of `fit`, makes them from shapes alone, in a stateless scope
    (no weight or seed changes). Public API considered: calling
    `model.compute_loss` on a batch makes them too, but runs the model and
    counts the batch in the loss trackers.
    """
    model._symbolic_build(data_batch=batch)


def initial_epoch(model):
    """The epoch `model.fit` starts from that a callback set, or `None`.

    Keras 3.15's trainers start at `model._initial_epoch or initial_epoch`,
    read after the callbacks' `on_train_begin`; that is how
    `keras.callbacks.BackupAndRestore` resumes. Keras never clears it, so a
    later `fit` starts there again unless `set_initial_epoch(model, None)`.
    """
    return model._initial_epoch


def set_initial_epoch(model, epoch):
    """Makes the `model.fit` being started begin at `epoch` (`None` clears it).

    Call it from a callback's `on_train_begin` (as
    `keras.callbacks.BackupAndRestore` does; see `initial_epoch`). Public
    API considered: `fit(initial_epoch=...)` is fixed before the callbacks
    run, and a callback cannot change it.
    """
    model._initial_epoch = epoch


class MultiWorkerModel(keras.Model):
    """A functional model that `model.fit` under `MultiWorkerMirroredStrategy` runs.

    Keras 3.15's trainer fails there in two places (keras-team/keras#20585);
    each override below works around one and can go when Keras fixes it.
    `training.core.fitting.fit` wraps the task's model in it
    (`MultiWorkerModel(model.inputs, model.outputs)`, sharing the layers and
    so the weights).
    """

    def _maybe_symbolic_build(self, iterator=None, data_batch=None):
        # keras-team/keras#20585: Keras passes the whole nested (x, y, weight)
        # batch of PerReplica values to one `strategy.reduce`, which rejects
        # it. The build needs only shapes and dtypes: use this worker's first
        # replica's batch.
        if iterator is not None:
            for _, _, batches in iterator:
                data_batch = keras.tree.map_structure(self.first_replica, next(batches))
                break
        super()._maybe_symbolic_build(data_batch=data_batch)

    def first_replica(self, value):
        """`value`, or this worker's first replica's where it is per replica."""
        import tensorflow as tf

        if isinstance(value, tf.distribute.DistributedValues):
            return self.distribute_strategy.experimental_local_results(value)[0]
        return value

    def train_step(self, data):
        # keras-team/keras#20585: Keras reduces each step's outputs across
        # workers with `strategy.reduce("MEAN", value, axis=0)`, which fails on
        # the scalar loss and metrics ("Invalid reduction dimension 0"). Give
        # each a leading axis of one; the reduction's mean removes it.
        return keras.tree.map_structure(_with_replica_axis, super().train_step(data))

    def test_step(self, data):
        # keras-team/keras#20585: as in `train_step`.
        return keras.tree.map_structure(_with_replica_axis, super().test_step(data))


def _with_replica_axis(value):
    import tensorflow as tf

    return tf.reshape(value, [1])


# --- keras-tuner ------------------------------------------------------------


def chief_oracle(oracle):
    """The oracle whose settings decide a search: `oracle`, or the one it wraps.

    keras-tuner 1.4.8: on a worker of a distributed search the tuner's
    `oracle` is an `OracleClient` that sends requests to the chief and keeps
    the tuner's own oracle in `_oracle`; its `__getattr__` reads
    `max_trials` through but cannot set it. Public API considered: the
    `Hyperband` tuner takes no `max_trials` to pass on.
    """
    return getattr(oracle, "_oracle", oracle)
