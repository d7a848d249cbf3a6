"""The Dyck-RNN (the multi-matrix report, section 4.2): a hidden state used as a stack.

Two fixed shift matrices move the stack: `W1` (ones on the sub-diagonal)
pushes, `W2` (ones on the super-diagonal) pops, and a gate computed from a
fixed one-dimensional bracket embedding chooses between them. With the
designed weights (`set_designed_weights`) the cell pushes on an opening
bracket and pops on a closing one exactly; `zoo.DyckRNN` (`zoo.dyck_model`)
adds the readout that predicts the closing bracket from the top of the stack.
"""

import keras
import numpy as np
from keras import ops

from zoo.cells.zoo_cell import ZooCell
from zoo.checks import check_positive_int
from zoo.layers.dyck_readout import DyckReadout
from zoo.registry import register_cell
from zoo.walk import walk_layers


def _check_non_negative_int(name, value):
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(
            f"`{name}` must be a non-negative integer; received {value!r}."
        )


@register_cell("dyck_rnn")
class DyckRNNCell(ZooCell):
    """Dyck-RNN cell: a linear stack pushed or popped by an input gate.

    Implements the multi-matrix report's eqs. 3-5:

        g_t     = sigmoid(W_proj x_t)                         (3)
        W_hh(t) = g_t W1 + (1 - g_t) W2                       (4)
        h_t     = W_hh(t) h_{t-1} + g_t W_hx x_t              (5)

    with no non-linearity. The state is a stack of `units / embedding_dim`
    slots of width `embedding_dim`, top slot first (`h[:, :embedding_dim]`);
    `W1` shifts down by one slot (push), `W2` shifts up by one slot (pop, the
    bottom slot becomes 0). Both are fixed and applied as shifts, which equals
    the matrix products. `W_hx` is fixed too: it writes `x_t` into the top
    slot. The trainable weights are `W_proj` (`kernel`, `(embedding_dim, 1)`)
    and, with `trainable_embeddings`, the embeddings: for `k = 2`, `m = 4` the
    report's 5 parameters are `W_proj` and the readout's 4.

    The cell takes token ids, shape `(batch, 1)` per step (sequences
    `(batch, time, 1)`, integer dtype), in the layout of `training.data.dyck_strings`:
    open bracket of type `j` (0-based) is id `first_bracket_id + j`, its
    closing bracket `first_bracket_id + k + j`; smaller ids (padding, START,
    END) are non-brackets. The fixed embeddings are one-dimensional: open `j`
    is `j + 1`, close `j` is `-(j + 1)` and non-brackets 0 (with
    `embedding_dim > 1` the other coordinates are 0), so the top of the stack
    holds `j + 1` for an open bracket of type `j`, 0 when empty, and a
    non-bracket on an empty stack leaves it empty. With
    `trainable_embeddings=True` (the report's section 6.2: `embedding_dim=2`,
    `units = 2m`) the embeddings are learned from `embeddings_initializer`.

    Args:
        units: Positive integer, hidden size: `m * embedding_dim` for stack
            depth `m`.
        num_bracket_types: Positive integer `k`. Default: 2.
        embedding_dim: Positive integer, width of an embedding and of a stack
            slot; divides `units`. Default: 1.
        trainable_embeddings: Whether the embeddings are learned. Default:
            `False` (the fixed embeddings above).
        first_bracket_id: Non-negative integer, the id of the first open
            bracket. Default: 3 (`training.data.dyck_strings`'s layout).
        embeddings_initializer: Initializer of learned embeddings.
            Default: `"random_uniform"`.
        kernel_initializer: Initializer of `W_proj`. Default: `"ones"`, a
            gate leaning to push on the (positive) opening brackets: from a
            negative `W_proj` training can stall in the mirrored solution
            (push on close), which the readout cannot use.

    Example:

    >>> layer = keras.layers.RNN(DyckRNNCell(4, num_bracket_types=2))
    >>> layer(np.array([[[3], [4]]], "int32")).shape  # "( [" in Dyck-2
    (1, 4)
    """

    takes_token_ids = True

    def __init__(
        self,
        units,
        num_bracket_types=2,
        embedding_dim=1,
        trainable_embeddings=False,
        first_bracket_id=3,
        embeddings_initializer="random_uniform",
        kernel_initializer="ones",
        **kwargs,
    ):
        check_positive_int("num_bracket_types", num_bracket_types)
        check_positive_int("embedding_dim", embedding_dim)
        _check_non_negative_int("first_bracket_id", first_bracket_id)
        super().__init__(units, kernel_initializer=kernel_initializer, **kwargs)
        if units % embedding_dim:
            raise ValueError(
                f"`units` must be a multiple of `embedding_dim` ({embedding_dim}); "
                f"received {units!r}."
            )
        self.num_bracket_types = num_bracket_types
        self.embedding_dim = embedding_dim
        self.trainable_embeddings = trainable_embeddings
        self.first_bracket_id = first_bracket_id
        self.embeddings_initializer = keras.initializers.get(embeddings_initializer)
        self.vocab_size = first_bracket_id + 2 * num_bracket_types

    def designed_embeddings(self):
        """Returns the fixed `(vocab_size, embedding_dim)` bracket embeddings."""
        table = np.zeros((self.vocab_size, self.embedding_dim), "float32")
        types = np.arange(self.num_bracket_types)
        table[self.first_bracket_id + types, 0] = types + 1
        table[self.first_bracket_id + self.num_bracket_types + types, 0] = -(types + 1)
        return table

    def build(self, input_shape):
        if self.input_dim(input_shape) != 1:
            raise ValueError(
                "DyckRNNCell expects `inputs` of token ids with shape "
                "(batch, time, 1); received inputs of shape "
                f"{tuple(input_shape)} per step."
            )
        initializer = self.embeddings_initializer
        if not self.trainable_embeddings:
            initializer = keras.initializers.Constant(self.designed_embeddings())
        self.embeddings = self.add_weight(
            shape=(self.vocab_size, self.embedding_dim),
            initializer=initializer,
            trainable=self.trainable_embeddings,
            name="embeddings",
        )
        self.kernel = self.add_kernel(self.embedding_dim, 1)

    def call(self, inputs, states, training=False):
        h_prev = states[0] if isinstance(states, (list, tuple)) else states
        width = self.embedding_dim
        ids = ops.cast(inputs[:, 0], "int32")  # [batch]
        x = ops.take(self.embeddings, ids, axis=0)  # [batch, embedding_dim]
        g = ops.sigmoid(ops.matmul(x, self.kernel))  # [batch, 1]
        # W1 h + W_hx x: shift down one slot, x on top.
        push = ops.concatenate([x, h_prev[:, : self.units - width]], axis=-1)
        # W2 h: shift up one slot, an empty slot at the bottom.
        pop = ops.concatenate([h_prev[:, width:], ops.zeros_like(x)], axis=-1)
        h = g * push + (1.0 - g) * pop  # [batch, units]
        return h, [h]

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "num_bracket_types": self.num_bracket_types,
                "embedding_dim": self.embedding_dim,
                "trainable_embeddings": self.trainable_embeddings,
                "first_bracket_id": self.first_bracket_id,
                "embeddings_initializer": keras.initializers.serialize(
                    self.embeddings_initializer
                ),
            }
        )
        return config


def set_designed_weights(model, gate_scale=50.0, readout_scale=10.0):
    """Sets the Dyck-RNN's designed weights: push on open, pop on close.

    Every `DyckRNNCell` in `model` gets the fixed embeddings and
    `W_proj = [gate_scale, 0, ...]`, so `g_t = sigmoid(gate_scale * (j + 1))`
    is 1 on an opening bracket and 0 on a closing one (to float32 precision).
    Every `DyckReadout` gets the logits `readout_scale * (2 (j + 1) top -
    (j + 1)**2)`, largest for the type `j` whose value `j + 1` is on top.

    Returns the number of cells and readouts set.
    """
    count = 0
    for layer in walk_layers(model, include_self=True):
        if isinstance(layer, DyckRNNCell):
            layer.embeddings.assign(layer.designed_embeddings())
            kernel = np.zeros((layer.embedding_dim, 1), "float32")
            kernel[0, 0] = gate_scale
            layer.kernel.assign(kernel)
            count += 1
        elif isinstance(layer, DyckReadout):
            values = np.arange(1, layer.num_bracket_types + 1, dtype="float32")
            kernel = np.zeros((layer.embedding_dim, layer.num_bracket_types))
            kernel[0] = 2 * readout_scale * values
            layer.kernel.assign(kernel.astype("float32"))
            layer.bias.assign(-readout_scale * values**2)
            count += 1
    return count
