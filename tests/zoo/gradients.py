"""Gradients on whichever Keras backend runs the tests (TensorFlow, JAX, torch).

Keras 3 has no backend-neutral gradient, so the zoo's tests that check one
(the cell contract's mixed precision, the stack's and minGRU's gradients) ask
here, and run unchanged where `tests/zoo/backend_runs.py` runs them on JAX
and torch. Each backend's package is imported only when it is the backend:
a torch process never imports TensorFlow.
"""

import keras


def value_and_gradients(loss, variables):
    """Returns `(loss(), [d loss() / d v for v in variables])`.

    `loss` takes no arguments and computes a scalar from the current values
    of `variables` (Keras variables: weights, or inputs wrapped in
    `keras.Variable` to differentiate by them). A variable `loss` does not
    reach gets None on TensorFlow and torch and zeros on JAX.
    """
    variables = list(variables)
    backend = keras.backend.backend()
    if backend == "tensorflow":
        import tensorflow as tf

        with tf.GradientTape() as tape:
            tape.watch([v.value for v in variables])
            value = loss()
        return value, tape.gradient(value, [v.value for v in variables])
    if backend == "jax":
        import jax

        def pure(values):
            mapping = list(zip(variables, values, strict=True))
            with keras.StatelessScope(state_mapping=mapping):
                return loss()

        value, gradients = jax.value_and_grad(pure)([v.value for v in variables])
        return value, gradients
    if backend == "torch":
        import torch

        values = [v.value for v in variables]
        watched = [value.requires_grad for value in values]
        try:
            for value in values:
                value.requires_grad_(True)
            result = loss()
            gradients = torch.autograd.grad(result, values, allow_unused=True)
        finally:
            for value, was in zip(values, watched, strict=True):
                value.requires_grad_(was)
        return result, list(gradients)
    raise NotImplementedError(f"No gradient on the {backend} backend.")
