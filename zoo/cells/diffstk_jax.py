"""State noise of the DiffStk cells in Keras's JAX loop (Keras 3.15).

A workaround in a module of its own: `keras.layers.RNN`'s JAX loop cannot
advance a seed generator inside the loop, so `noise_key_loop` carries a noise
key instead (`zoo.RNN` runs it for a DiffStk layer on JAX). It can go when Keras's
JAX loop lets a cell draw noise at every step.
"""

import keras
from keras import ops

from zoo import keras_compat


def noise_key_loop(layer, sequences, initial_state, mask, training=False):
    """The loop of `layer` (a `keras.layers.RNN` of a `DiffStkCell`) on JAX.

    Keras's JAX loop (`lax.scan`) cannot advance a seed generator inside the
    loop (the new seed would leak out of the traced step), so a cell that
    draws noise at every step fails to train there (Keras 3.15). `zoo.RNN`
    runs this loop on JAX for a DiffStk cell: while training a cell with
    noise, it draws one key from the cell's seed generator per call (outside
    the loop), carries a step counter beside the cell's states and hands the
    cell `fold_in(key, step)` at each step (`step_key`). Without noise it is
    Keras's loop.
    """
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
