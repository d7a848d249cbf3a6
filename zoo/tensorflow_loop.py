"""The recurrent loop of the zoo's sequence layers on TensorFlow.

`keras.layers.RNN`'s TensorFlow loop (Keras 3.15,
`keras/src/backend/tensorflow/rnn.py`) costs a training step two things that
grow with the width and the length of the loop, and that Keras's JAX loop
(`lax.scan`) does not pay (benchmarks/log.md, "Where the TensorFlow step
lost to JAX"):

1. The cell reads its weights inside the loop body, so TensorFlow's
   `while` gradient keeps a copy of every weight for every step (for a
   256-unit LSTM at length 55, 55 copies of its 1 MB recurrent kernel a
   step, written in the forward loop and read back in the backward one).
2. Each step's output is written into a `TensorArray`, whose gradient both
   reads and zeroes that step's slot of the output gradient: under XLA the
   backward loop then copies the whole `(time, batch, units)` buffer twice
   a step, which makes a compiled step quadratic in the length.

`tensorflow_inner_loop` is a loop without either, and `zoo.RNN` (the
layer every zoo model wraps its cells in) runs it on TensorFlow:
the cell's weights are read once before the loop and handed to the cell
through `keras.StatelessScope` (assignments the cell makes in the loop, such
as a seed generator's, are still applied where they were), and the outputs
are collected with `TensorListPushBack`, whose gradient only reads. The
steps' arithmetic is the same, op for op, so a run gives the same numbers
(tested). With `unroll=True`, nested inputs or an enclosing
`StatelessScope`, Keras's own loop runs.
"""

import functools
import inspect

import keras
from keras import tree

from zoo import keras_compat


def tensorflow_inner_loop(layer, sequences, initial_state, mask, training=False):
    """The zoo's loop of `layer` (a `keras.layers.RNN`) on TensorFlow.

    `zoo.RNN.inner_loop` on TensorFlow: `(last_output, outputs, states)` as
    Keras's `RNN.inner_loop` returns them. Keras's own loop runs with
    `unroll=True`, nested inputs or an enclosing `StatelessScope`.
    """
    # An enclosing StatelessScope (`model.stateless_call`, a symbolic build)
    # maps the variables; the weights read here would bypass its mapping.
    in_stateless_scope = keras_compat.in_stateless_scope()
    if layer.unroll or tree.is_nested(sequences) or in_stateless_scope:
        return keras_compat.keras_rnn_loop(
            layer, sequences, initial_state, mask, training
        )
    cell = layer.cell
    cell_kwargs = {}
    if isinstance(cell, keras.Layer) and "training" in _call_arguments(cell):
        cell_kwargs["training"] = training
    # Read once here, outside the loop: the loop's gradient then keeps no
    # per-step copies of the weights.
    import tensorflow as tf

    weights = [
        (weight, tf.convert_to_tensor(weight.value))
        for weight in cell.trainable_weights
    ]
    mapped = {id(weight) for weight, _ in weights}

    def step(inputs, states):
        with keras.StatelessScope(state_mapping=weights) as scope:
            output, new_states = cell(inputs, states, **cell_kwargs)
        for variable in cell.variables:  # e.g. a seed generator's state
            value = scope.get_current_value(variable)
            if id(variable) not in mapped and value is not None:
                variable.assign(value)
        if not tree.is_nested(new_states):
            new_states = [new_states]
        return output, new_states

    if not tree.is_nested(initial_state):
        initial_state = [initial_state]
    return rnn(
        step,
        sequences,
        initial_state,
        go_backwards=layer.go_backwards,
        mask=mask,
        zero_output_for_mask=layer.zero_output_for_mask,
        return_all_outputs=layer.return_sequences,
    )


def _shape(tensor):
    """`tensor`'s static shape as tensor lists take it (-1 where unknown)."""
    return [-1 if size is None else size for size in tensor.shape]


def _call_arguments(cell):
    return inspect.signature(cell.call).parameters


def rnn(
    step_function,
    inputs,
    initial_states,
    go_backwards=False,
    mask=None,
    zero_output_for_mask=False,
    return_all_outputs=True,
):
    """Keras's `backend.rnn` on TensorFlow for batch-major, unnested inputs.

    The same contract as Keras's TensorFlow `backend.rnn` (with
    `unroll=False`, `time_major=False`, no constants): returns
    `(last_output, outputs, new_states)`, masked steps keeping the previous
    states and either the previous or a zero output. Outputs are pushed onto
    tensor lists instead of written into tensor arrays.
    """
    import tensorflow as tf

    def time_major(tensor):
        return tf.transpose(tensor, [1, 0, *range(2, tensor.shape.rank)])

    inputs = time_major(inputs)  # [time, batch, features]
    steps = inputs.shape[0] if inputs.shape[0] is not None else tf.shape(inputs)[0]
    if mask is not None:
        mask = tf.cast(mask, tf.bool)
        mask = time_major(mask[..., None] if mask.shape.rank == 2 else mask)
    if go_backwards:
        inputs = tf.reverse(inputs, [0])
        mask = None if mask is None else tf.reverse(mask, [0])
    input_ta = tf.TensorArray(inputs.dtype, size=steps).unstack(inputs)
    mask_ta = None if mask is None else tf.TensorArray(tf.bool, size=steps)
    mask_ta = None if mask is None else mask_ta.unstack(mask)

    # The first step, traced once for the outputs' structure, shapes and dtypes.
    output_zero, _ = step_function(inputs[0], tuple(initial_states))
    flat_zero = tuple(tf.zeros_like(out) for out in tree.flatten(output_zero))
    lists = tuple(
        tf.raw_ops.EmptyTensorList(
            element_shape=_shape(out), max_num_elements=steps, element_dtype=out.dtype
        )
        for out in flat_zero
    )

    def where(mask_t, new, old):
        mask_t = tf.reshape(mask_t, [-1] + [1] * (new.shape.rank - 1))
        return tf.where(mask_t, new, old)

    def body(time, lists, previous, *states):
        output, new_states = step_function(input_ta.read(time), tuple(states))
        flat_output = tuple(tree.flatten(output))
        flat_states = tree.flatten(new_states)
        if mask_ta is not None:
            mask_t = mask_ta.read(time)
            kept = flat_zero if zero_output_for_mask else previous
            flat_output = tuple(
                map(functools.partial(where, mask_t), flat_output, kept)
            )
            flat_states = list(
                map(functools.partial(where, mask_t), flat_states, tree.flatten(states))
            )
        if return_all_outputs:
            lists = tuple(
                tf.raw_ops.TensorListPushBack(input_handle=handle, tensor=out)
                for handle, out in zip(lists, flat_output, strict=True)
            )
        states = tree.pack_sequence_as(tuple(states), flat_states)
        return (time + 1, lists, flat_output, *states)

    final = tf.while_loop(
        lambda time, *_: time < steps,
        body,
        (tf.constant(0, "int32"), lists, flat_zero, *initial_states),
        maximum_iterations=steps,
        parallel_iterations=32,
    )
    _, lists, last, *new_states = final
    if return_all_outputs:
        outputs = tuple(
            time_major(
                tf.raw_ops.TensorListStack(
                    input_handle=handle,
                    element_dtype=out.dtype,
                    element_shape=_shape(out),
                    num_elements=steps if isinstance(steps, int) else -1,
                )
            )
            for handle, out in zip(lists, flat_zero, strict=True)
        )
    else:
        outputs = tuple(out[:, None] for out in last)
    last_output = tree.pack_sequence_as(output_zero, last)
    outputs = tree.pack_sequence_as(output_zero, outputs)
    return last_output, outputs, new_states
