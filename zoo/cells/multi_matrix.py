"""Multi-matrix RNN and multi-matrix LSTM (the CS224N multi-matrix report, 4.3-4.4).

Each transform owns `k` choice matrices `W[1..k]`, shared by all inputs, and a
key vector `v_t = softmax(W_proj [v_{t-1}; h_{t-1}; x_t])` carried as
recurrent state; the step's transition is `W_hh(t) = sum_i v_t[i] W[i]`.
`key_mixed_transition` is the one place that applies it: it multiplies
`h_{t-1}` by all `k` matrices at once (one `[units, k * units]` product) and
mixes the `k` results with the key, which equals `W_hh(t) h_{t-1}` without
building a per-example `[batch, units, units]` matrix (O(batch * k * units)
memory per step instead of O(batch * units**2)).
"""

import keras
from keras import ops

from zoo.cells.zoo_cell import LSTMGates, ZooCell, blockwise_initializer
from zoo.checks import check_number, check_positive_int
from zoo.registry import register_cell


def key_mixed_transition(h_prev, choice_kernels, keys):
    """Returns `W_hh(t) h_{t-1}` for each group, `W_hh(t) = sum_i key[i] W[i]`.

    Args:
        h_prev: `[batch, units]`, the previous hidden state.
        choice_kernels: `[units, groups * k * units]`, the choice matrices in
            Keras's right-multiplied layout, group-major: columns
            `[(g * k + i) * units, (g * k + i + 1) * units)` hold `W_g[i]^T`.
        keys: `[batch, groups, k]`, each group's key vector.

    Returns:
        `[batch, groups * units]`: the groups' transitions, concatenated.
    """
    groups, num_choices = keys.shape[-2], keys.shape[-1]
    units = choice_kernels.shape[0]
    products = ops.matmul(h_prev, choice_kernels)  # [batch, groups * k * units]
    products = ops.reshape(products, (-1, groups, num_choices, units))
    mixed = ops.einsum("bgk,bgku->bgu", keys, products)  # [batch, groups, units]
    return ops.reshape(mixed, (-1, groups * units))  # [batch, groups * units]


class _MultiMatrixCell(ZooCell):
    """Shared weights, key update and initial state of the multi-matrix cells.

    Subclasses set `groups` (the number of transforms with their own keys and
    choice matrices), call `build_transitions` in `build` and
    `transitions` in `call`.
    """

    groups = 1

    def __init__(self, units, num_choices=4, use_bias=True, **kwargs):
        check_positive_int("num_choices", num_choices)
        super().__init__(units, **kwargs)
        self.num_choices = num_choices
        self.use_bias = use_bias

    def build_transitions(self, input_dim):
        units, groups, k = self.units, self.groups, self.num_choices
        # With one choice the key is always 1: no key weights at all.
        key_size = k if k > 1 else 0
        # [W_hx of each group | W_proj's input columns of each group]
        self.kernel = self.add_kernel(input_dim, groups * (units + key_size))
        self.choice_kernels = self.add_recurrent_kernel(
            groups * k * units,
            blockwise_initializer(self.recurrent_initializer, groups * k),
            name="choice_kernels",
        )
        if key_size:
            # W_proj's columns for h_{t-1} (all groups) and v_{t-1} (per group).
            self.key_recurrent_kernel = self.add_recurrent_kernel(
                groups * k, name="key_recurrent_kernel"
            )
            self.key_kernel = self.add_weight(
                shape=(groups, k, k),
                initializer=self.kernel_initializer,
                name="key_kernel",
            )

    def get_initial_state(self, batch_size=None):
        zeros = [
            ops.zeros((batch_size, self.units), dtype=self.compute_dtype)
            for _ in self.state_size[:-1]
        ]
        uniform = ops.full(
            (batch_size, self.groups * self.num_choices),
            1.0 / self.num_choices,
            dtype=self.compute_dtype,
        )
        return [*zeros, uniform]

    def transitions(self, inputs, h_prev, keys_prev):
        """Returns `(W_hx x_t + W_hh(t) h_{t-1}, v_t)`, `[b, g*u]` and `[b, g*k]`."""
        units, groups, k = self.units, self.groups, self.num_choices
        x_proj = ops.matmul(inputs, self.kernel)  # [batch, groups * (units + k)]
        if k == 1:
            # The key is a softmax over one choice, always 1: W_hh(t) = W[0].
            z = x_proj + ops.matmul(h_prev, self.choice_kernels)  # [batch, g * u]
            return z, ops.ones_like(keys_prev)  # [b, g * u], [b, g]
        x_h, x_key = x_proj[:, : groups * units], x_proj[:, groups * units :]
        keys_prev = ops.reshape(keys_prev, (-1, groups, k))  # [batch, groups, k]
        # An all-zero key is no softmax output: it is a reset or default state
        # (keras.layers.RNN.reset_state zeroes every state), read as uniform.
        unset = ops.all(ops.equal(keys_prev, 0.0), axis=-1, keepdims=True)
        keys_prev = ops.where(unset, 1.0 / k, keys_prev)
        key_logits = x_key + ops.matmul(h_prev, self.key_recurrent_kernel)
        key_logits = ops.reshape(key_logits, (-1, groups, k))  # [batch, groups, k]
        key_logits = key_logits + ops.einsum("bgi,gij->bgj", keys_prev, self.key_kernel)
        keys = ops.softmax(key_logits, axis=-1)  # [batch, groups, k]
        z = x_h + key_mixed_transition(h_prev, self.choice_kernels, keys)
        return z, ops.reshape(keys, (-1, groups * k))  # [b, g * u], [b, g * k]

    def get_config(self):
        config = super().get_config()
        config.update({"num_choices": self.num_choices, "use_bias": self.use_bias})
        return config


@register_cell("mmrnn")
class MultiMatrixRNNCell(_MultiMatrixCell):
    """Multi-matrix RNN cell: a key-weighted mix of `k` transition matrices.

    Implements the multi-matrix report's eqs. 6-8 with a bias and an
    activation:

        v_t    = softmax(W_proj [v_{t-1}; h_{t-1}; x_t])      (6)
        W_hh(t) = sum_i v_t[i] W[i]                           (7)
        h_t    = activation(W_hh(t) h_{t-1} + W_hx x_t + b)    (8)

    The key `v_t` is the cell's second state (`state_size = [units, k]`),
    uniform `1/k` at the start (`get_initial_state`). A user-given
    `initial_state` must include the key: `[h, v]`; an all-zero key (as left
    by `keras.layers.RNN.reset_state`) is read as uniform. `W_hh(t) h_{t-1}` is
    computed by `key_mixed_transition` without building `W_hh(t)`.

    Args:
        units: Positive integer, dimensionality of `h_t`.
        num_choices: Positive integer `k`, the number of choice matrices.
            Default: 4 (the report's choice).
        activation: Activation of the hidden state. Default: `"tanh"`.
        use_bias: Whether to add `b`. Default: `True`.
        kernel_initializer: Initializer of `[W_hx | W_proj's x columns]` and
            of W_proj's `v` columns.
        recurrent_initializer: Initializer of each choice matrix and of
            W_proj's `h` columns.
        bias_initializer: Initializer of `b`.

    Example:

    >>> layer = keras.layers.RNN(MultiMatrixRNNCell(32), return_sequences=True)
    >>> layer(np.zeros((3, 5, 4), "float32")).shape
    (3, 5, 32)
    """

    groups = 1

    def __init__(self, units, num_choices=4, activation="tanh", **kwargs):
        super().__init__(units, num_choices=num_choices, **kwargs)
        self.activation = keras.activations.get(activation)
        self.state_size = [units, num_choices]

    def build(self, input_shape):
        self.build_transitions(self.input_dim(input_shape))
        self.bias = self.add_bias(self.units)

    def call(self, inputs, states, training=False):
        h_prev, keys_prev = states
        z, keys = self.transitions(inputs, h_prev, keys_prev)  # [batch, units]
        if self.bias is not None:
            z = z + self.bias
        h = self.activation(z)
        return h, [h, keys]

    def get_config(self):
        config = super().get_config()
        config["activation"] = keras.activations.serialize(self.activation)
        return config


@register_cell("mmlstm")
class MultiMatrixLSTMCell(LSTMGates, _MultiMatrixCell):
    """Multi-matrix LSTM cell: each gate mixes its own `k` transition matrices.

    Implements the multi-matrix report's eqs. 9-22 with a bias on each
    transform (the report has none; `use_bias=False` gives its equations):

        v^g_t    = softmax(W^g_proj [v^g_{t-1}; h_{t-1}; x_t])  g in i, f, c, o
        W^g_hh(t) = sum_j v^g_t[j] W^g[j]                        (9-16)
        i, f, o  = sigmoid(W^{i,f,o}_hh(t) h_{t-1} + W^{i,f,o}_hx x_t + b)
        c^_t     = tanh(W^c_hh(t) h_{t-1} + W^c_hx x_t + b_c)    (17-20)
        c_t      = f * c_{t-1} + i * c^_t                        (21)
        h_t      = o * tanh(c_t)                                 (22)

    The four keys are one flat state of `4 * k` values in Keras's gate order
    (i, f, c, o): `state_size = [units, units, 4 * k]`, the keys uniform `1/k`
    at the start (`get_initial_state`). A user-given `initial_state` must
    include them: `[h, c, keys]`; an all-zero key (as left by
    `keras.layers.RNN.reset_state`) is read as uniform.

    Args:
        units: Positive integer, dimensionality of `h_t` and `c_t`.
        num_choices: Positive integer `k`, choice matrices per gate.
            Default: 4.
        activation: Activation of the candidate and the cell output.
            Default: `"tanh"`.
        recurrent_activation: Activation of the gates. Default: `"sigmoid"`.
        forget_bias: Initial value added to the forget-gate bias.
            Default: 1.0 (as Keras's `unit_forget_bias`).
        use_bias: Whether the transforms have biases. Default: `True`.
        kernel_initializer: Initializer of the fused input kernel and of the
            keys' `v` columns.
        recurrent_initializer: Initializer of each choice matrix and of the
            keys' `h` columns.
        bias_initializer: Initializer of the fused bias.

    Example:

    >>> cell = MultiMatrixLSTMCell(32, num_choices=4)
    >>> keras.layers.RNN(cell)(np.zeros((3, 5, 4), "float32")).shape
    (3, 32)
    """

    groups = 4

    def __init__(
        self,
        units,
        num_choices=4,
        activation="tanh",
        recurrent_activation="sigmoid",
        forget_bias=1.0,
        **kwargs,
    ):
        check_number("forget_bias", forget_bias)
        super().__init__(units, num_choices=num_choices, **kwargs)
        self.set_lstm_gates(activation, recurrent_activation, forget_bias)
        self.state_size = [units, units, 4 * num_choices]

    def build(self, input_shape):
        self.build_transitions(self.input_dim(input_shape))
        self.bias = self.add_bias(4 * self.units, self.lstm_bias_initializer())

    def call(self, inputs, states, training=False):
        h_prev, c_prev, keys_prev = states
        z, keys = self.transitions(inputs, h_prev, keys_prev)  # [batch, 4 * units]
        if self.bias is not None:
            z = z + self.bias
        h, c = self.lstm_step(z, c_prev)
        return h, [h, c, keys]

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                **self.lstm_gates_config(),
            }
        )
        return config
