"""Which devices the Keras backend sees, without importing a backend early.

The cells are written in `keras.ops` and import without TensorFlow (every
registered cell trained on the JAX backend in benchmarks/log.md's GPU
runs); the zoo's device-dependent defaults (`zoo.default_jit_compile`,
minGRU/minLSTM's `mode="auto"`) ask here.
"""

import keras


def gpu_visible():
    """Returns whether the current Keras backend sees a GPU."""
    backend = keras.backend.backend()
    if backend == "tensorflow":
        import tensorflow as tf

        return bool(tf.config.list_physical_devices("GPU"))
    if backend == "jax":
        import jax

        return jax.default_backend() == "gpu"
    if backend == "torch":
        import torch

        return torch.cuda.is_available()
    return False
