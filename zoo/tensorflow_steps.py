"""Groups of training steps in one compiled call on TensorFlow.

With `model.compile(jit_compile=True, steps_per_execution=N)`, Keras 3.15's
TensorFlow trainer compiles one training step with XLA and runs the N steps
of a group in a TensorFlow `while` loop around it: each step pays for the
loop's conditionals, the iterator's optional and a launch of the compiled
step. For the small recurrent models of the seed tables that is most of a
step (8 units: a step costs 3.5x the compiled step itself; 32 units: 2.1x;
benchmarks/log.md). `grouped_train_function` is a train function that
takes the group's N batches from the iterator, stacks them and
runs the N steps in one XLA program (a `while` loop inside it), as Keras on
JAX runs a jitted step with no graph around it. The steps and their order
are Keras's; what differs is that XLA compiles N of them together, which may
reassociate float sums (tested to 1e-6). A group whose batches differ in
shape (the last batch of an epoch, a curriculum's lengths) or that the data
ends inside runs its steps one compiled call each. Anywhere else (another
backend, no XLA, one step a group, a distribution strategy, `train_on_batch`)
Keras's own train function runs. Every zoo model class makes it
(`zoo.ZooModel.make_train_function`, when Keras makes its train function at
the first `fit` after `compile`), so a model loaded from a `.keras` file
groups its steps as the built one does.
"""

import itertools

import keras
from keras import tree

from zoo import keras_compat


def groups_steps(model):
    """Whether `model`'s training steps run a group per compiled call."""
    import tensorflow as tf

    return (
        keras.backend.backend() == "tensorflow"
        and model.jit_compile is True
        and not model.run_eagerly
        and model.steps_per_execution > 1
        and not tf.distribute.has_strategy()
        and model.distribute_strategy is tf.distribute.get_strategy()
    )


def grouped_train_function(model, keras_function):
    """`model`'s train function running a group of steps per XLA call.

    `keras_function` is the one Keras made; it still runs what the group
    cannot take (`train_on_batch`, a generator). `zoo.ZooModel`'s
    `make_train_function` makes it where `groups_steps(model)`.
    """
    import tensorflow as tf

    steps = model.steps_per_execution

    @tf.function(jit_compile=True, reduce_retracing=True)
    def one_step(data):
        return model.train_step(data)

    # Keras's own step returns its metrics' results, which can be read once
    # after the loop: the step is then traced and compiled once, not twice.
    keras_step = type(model).train_step is keras.Model.train_step

    @tf.function(jit_compile=True, reduce_retracing=True)
    def group(data):  # every leaf: [steps, ...]
        def step(index):
            return model.train_step(tree.map_structure(lambda t: t[index], data))

        if keras_step:

            def each(index):
                step(index)
                return (index + 1,)

            tf.while_loop(lambda index: index < steps, each, (0,))
            return model.get_metrics_result()

        def body(index, logs):
            return index + 1, step(index)

        logs = step(0)  # the logs' structure, for the loop
        return tf.while_loop(lambda index, _: index < steps, body, (1, logs))[1]

    unbuilt = [True]

    def function(iterator):
        if not isinstance(iterator, tf.data.Iterator):
            return keras_function(iterator)  # train_on_batch, a generator
        batches = list(itertools.islice(iterator, steps))
        if not batches:
            raise StopIteration
        if unbuilt:  # the loss's and metrics' variables, before a trace
            keras_compat.build_compiled_state(model, batches[0])
            unbuilt.clear()
        shapes = {tuple(tuple(leaf.shape) for leaf in tree.flatten(b)) for b in batches}
        if len(batches) == steps and len(shapes) == 1:
            return group(tree.map_structure(lambda *leaves: tf.stack(leaves), *batches))
        for batch in batches:
            logs = one_step(batch)
        return logs

    function.group, function.one_step = group, one_step  # what a test inspects
    return function
