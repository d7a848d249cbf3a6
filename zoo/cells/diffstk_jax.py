"""State noise of the DiffStk cells in Keras's JAX loop (Keras 3.15).

A workaround in a module of its own: `keras.layers.RNN`'s JAX loop cannot
advance a seed generator inside the loop, so `carry_noise_key_on_jax` gives a
DiffStk layer a loop that carries a noise key instead. It can go when Keras's
JAX loop lets a cell draw noise at every step.
"""

import keras
from keras import ops

from zoo import keras_compat
from zoo.cells.diffstk import DiffStkCell


def carry_noise_key_on_jax(layer):
    """Lets a `keras.layers.RNN` of a DiffStk cell train with state noise on JAX.

    Keras's JAX loop (`lax.scan`) cannot advance a seed generator inside the
    loop (the new seed would leak out of the traced step), so a cell that
    draws noise at every step fails to train there (Keras 3.15). On JAX this
    gives `layer` (of a `DiffStkCell`) a loop that, while training a cell
    with noise, draws one key from the cell's seed generator per call
    (outside the loop), carries a step counter beside the cell's states and
    hands the cell `fold_in(key, step)` at each step (`step_key`). The layer
    stays a `keras.layers.RNN`: Keras names saved layers by class, so its
    `.keras` files are those of every run before (and a model loaded with
    `keras.models.load_model` on JAX predicts, but does not train with
    noise). Anywhere but JAX, or without noise, `layer` is unchanged.
    """
    if keras.backend.backend() == "jax" and isinstance(layer.cell, DiffStkCell):
        keras_compat.replace_rnn_loop(layer, _noise_key_inner_loop)
    return layer


def _noise_key_inner_loop(layer, sequences, initial_state, mask, training=False):
    cell = layer.cell
    if not (training and cell.has_noise):
        return keras_compat.keras_rnn_loop(
            layer, sequences, initial_state, mask, training
        )
    import jax

    key = cell.seed_generator.next()  # one draw per call, outside the loop
    steps = ops.zeros((ops.shape(sequences)[0], 1), "int32")  # beside the states

    def step(inputs, states):
        *states, count = states
        cell.step_key = jax.random.fold_in(key, ops.max(count))
        try:
            output, new_states = cell(inputs, states, training=training)
        finally:
            cell.step_key = None
        return output, [*keras.tree.flatten(new_states), count + 1]

    # What keras.layers.RNN.inner_loop calls, with the counter in the carry.
    last_output, outputs, states = keras_compat.backend_rnn(
        step,
        sequences,
        [*initial_state, steps],
        go_backwards=layer.go_backwards,
        mask=mask,
        unroll=layer.unroll,
        input_length=sequences.shape[1],
        zero_output_for_mask=layer.zero_output_for_mask,
        return_all_outputs=layer.return_sequences,
    )
    return last_output, outputs, states[:-1]
