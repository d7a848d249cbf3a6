"""Compiled functions of a model on the TensorFlow or the JAX backend.

Scoring a split, a suite of sentences or a dynamic-evaluation step calls the
model many times on a few shapes; called eagerly, `keras.layers.RNN` steps
through time in Python, several times slower. So each is compiled:

- TensorFlow: `tf.function` (with `jit_compile` for XLA), which reads and
  assigns the model's variables (a stateful model's recurrent state) in
  place;
- JAX: `jax.jit` (XLA, whatever `jit_compile` says: JAX has no other
  compiler) of a pure function of the variables' values, run under a
  `keras.StatelessScope` (what Keras's own `stateless_call` does), with the
  new values of the non-trainable variables (the recurrent state) assigned
  back after each call; gradients (`loss_and_gradients`) are
  `jax.value_and_grad` of the same;
- any other backend: the function itself, eagerly.

Results come back as NumPy arrays, whatever the backend.
"""

import keras
import numpy as np


def compiled(model, fn, jit_compile=True, reduce_retracing=False):
    """`fn(*arrays)`, which calls `model`, compiled for this backend.

    Args:
        model: The Keras model `fn` calls; its variables (weights and
            recurrent state) are read, and those `fn` assigns (a stateful
            layer's state) keep the new values after each call.
        fn: A function of arrays that calls `model` and returns a tensor or
            a structure of tensors.
        jit_compile: XLA on TensorFlow, else its graph; JAX compiles with
            XLA either way (it has no other compiler).
        reduce_retracing: TensorFlow's `tf.function(reduce_retracing=...)`
            (one trace for every shape); JAX compiles once per shape.

    Returns:
        A function of the same arrays returning NumPy arrays.
    """
    backend = keras.backend.backend()
    if backend == "tensorflow":
        import tensorflow as tf

        function = tf.function(
            fn, jit_compile=bool(jit_compile), reduce_retracing=reduce_retracing
        )
    elif backend == "jax":
        function = _jax_compiled(model, fn)
    else:
        function = fn
    return lambda *args: keras.tree.map_structure(_numpy, function(*args))


def _numpy(value):
    return np.asarray(keras.ops.convert_to_numpy(value))


def _jax_compiled(model, fn):
    import jax

    trainable, state = model.trainable_variables, model.non_trainable_variables

    def pure(trainable_values, state_values, *args):
        mapping = [
            *zip(trainable, trainable_values, strict=True),
            *zip(state, state_values, strict=True),
        ]
        with keras.StatelessScope(state_mapping=mapping) as scope:
            outputs = fn(*args)
        new_state = [scope.get_current_value(v) for v in state]
        return outputs, new_state

    step = jax.jit(pure)

    def call(*args):
        outputs, new_state = step(
            [v.value for v in trainable], [v.value for v in state], *args
        )
        for variable, value in zip(state, new_state, strict=True):
            variable.assign(value)
        return outputs

    return call


def loss_and_gradients(model, loss_fn):
    """`step(inputs, targets) -> (losses, gradients)` of `model`, compiled.

    `loss_fn(model, inputs, targets)` returns per-token losses; the
    gradients (dense NumPy arrays, one per trainable variable, zeros for
    one the loss does not reach) are of their mean. The recurrent state of a
    stateful model is carried from call to call.
    """
    variables = model.trainable_variables
    if keras.backend.backend() == "tensorflow":
        import tensorflow as tf

        @tf.function
        def step(inputs, targets):
            with tf.GradientTape() as tape:
                losses = loss_fn(model, inputs, targets)
                loss = tf.reduce_mean(losses)
            grads = tape.gradient(loss, variables)
            # Embedding gradients come as IndexedSlices: made dense.
            grads = [
                tf.zeros_like(v) if g is None else tf.convert_to_tensor(g)
                for v, g in zip(variables, grads, strict=True)
            ]
            return losses, grads

        return lambda inputs, targets: keras.tree.map_structure(
            _numpy, step(inputs, targets)
        )
    if keras.backend.backend() != "jax":
        raise ValueError(
            f"Gradients of a model need the TensorFlow or JAX backend; received "
            f"{keras.backend.backend()!r}."
        )
    step = _jax_value_and_grad(model, loss_fn)

    def call(inputs, targets):
        losses, grads = step(inputs, targets)
        return _numpy(losses), [_numpy(g) for g in grads]

    return call


def _jax_value_and_grad(model, loss_fn):
    """`(inputs, targets) -> (losses, grads)` with the new state assigned back."""
    import jax

    trainable, state = model.trainable_variables, model.non_trainable_variables

    def loss(trainable_values, state_values, inputs, targets):
        mapping = [
            *zip(trainable, trainable_values, strict=True),
            *zip(state, state_values, strict=True),
        ]
        with keras.StatelessScope(state_mapping=mapping) as scope:
            losses = loss_fn(model, inputs, targets)
        new_state = [scope.get_current_value(v) for v in state]
        return keras.ops.mean(losses), (losses, new_state)

    gradient = jax.jit(jax.value_and_grad(loss, has_aux=True))

    def call(inputs, targets):
        (_, (losses, new_state)), grads = gradient(
            [v.value for v in trainable], [v.value for v in state], inputs, targets
        )
        for variable, value in zip(state, new_state, strict=True):
            variable.assign(value)
        return losses, grads

    return call
