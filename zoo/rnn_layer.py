"""`zoo.RNN`: `keras.layers.RNN` with the zoo's loops, a registered class.

Every zoo model wraps a cell in it (`zoo.backbone.recurrent_layer`). It is
Keras's layer, with one method overridden, `inner_loop`, as
`keras.layers.LSTM` overrides its own: on TensorFlow it runs the zoo's
loop (`zoo.tensorflow_loop`: weights read once, outputs pushed onto tensor
lists; benchmarks/README.md); on JAX a DiffStk cell's loop carries a noise
key (`zoo.cells.diffstk_jax`). Anywhere else Keras's own loop runs.

Being a class, not a patched instance, the loop is saved with the layer: a
model loaded from a `.keras` file (`keras.saving.load_model`) or rebuilt
from its config runs the same loop as the model that was built, and a
`keras.layers.Bidirectional` copy (which Keras makes with `from_config`)
runs it too.

Why the class is called `RNN`: Keras 3.15 names a model's layers in its
weight files by class (`layers/rnn`, `layers/rnn_1`, ...; `saving_lib`'s
containers), so with the same class name the weight files of every earlier
run and preset load into a model of these layers unchanged. It is
registered as `zoo>RNN`, distinct from Keras's `RNN` in a model's config.
"""

import keras

from zoo import keras_compat
from zoo.cells.diffstk import DiffStkCell
from zoo.cells.diffstk_jax import noise_key_loop
from zoo.tensorflow_loop import tensorflow_inner_loop


@keras.saving.register_keras_serializable(package="zoo")
class RNN(keras.layers.RNN):
    """`keras.layers.RNN` running the zoo's loop on TensorFlow (module docstring).

    Takes `keras.layers.RNN`'s arguments (`cell`, `return_sequences`,
    `return_state`, `go_backwards`, `stateful`, `unroll`,
    `zero_output_for_mask`) and gives the same outputs.

    Example:

    >>> layer = zoo.RNN(zoo.get_cell("mlstm", 8), return_sequences=True)
    >>> layer(np.zeros((3, 5, 4), "float32")).shape
    (3, 5, 8)
    """

    def inner_loop(self, sequences, initial_state, mask, training=False):
        backend = keras.backend.backend()
        if backend == "tensorflow":
            return tensorflow_inner_loop(self, sequences, initial_state, mask, training)
        if backend == "jax" and isinstance(self.cell, DiffStkCell):
            return noise_key_loop(self, sequences, initial_state, mask, training)
        return keras_compat.keras_rnn_loop(
            self, sequences, initial_state, mask, training
        )
