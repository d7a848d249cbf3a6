"""Multiplicative RNN, multiplicative LSTM and the tensor RNN (Krause et al. 2016).

The three cells give every input its own hidden-to-hidden transition. The
tensor RNN stores one transition matrix per input symbol (eqs. 5-7); the
mRNN factorizes it through the intermediate state
`m_t = (W_mx x_t) * (W_mh h_{t-1})` (eqs. 8-9), which the mLSTM shares across
its gates (eqs. 17-21). `multiplicative_state` is that one expression, used by
both cells here and by the stack-augmented cells built on them.
"""

import keras
from keras import ops

from zoo.cells.zoo_cell import LSTMGates, ZooCell, stacked_initializer
from zoo.checks import check_positive_int
from zoo.registry import register_cell


def multiplicative_state(input_projection, h_prev, multiplicative_kernel):
    """Returns `m_t = (W_mx x_t) * (W_mh h_{t-1})` (Krause et al. eqs. 9, 17)."""
    return input_projection * ops.matmul(h_prev, multiplicative_kernel)


def weight_normalized(kernel, scale):
    """Returns `scale * kernel / ||kernel||`, column-wise (Salimans & Kingma 2016)."""
    norm = ops.sqrt(ops.sum(ops.square(kernel), axis=0, keepdims=True))
    return kernel * (scale / norm)


@register_cell("mrnn")
class MultiplicativeRNNCell(ZooCell):
    """Multiplicative RNN cell (Sutskever et al. 2011).

    Implements Krause et al. (2016) eqs. 9-10 with a bias and an activation:

        m_t = (W_mx x_t) * (W_mh h_{t-1})
        h_t = activation(W_hm m_t + W_hx x_t + b)

    The intermediate state `m_t` has `units` dimensions, as in the paper's
    experiments.

    Args:
        units: Positive integer, dimensionality of `h_t` and `m_t`.
        activation: Activation of the hidden state. Default: `"tanh"`.
        use_bias: Whether to add `b`. Default: `True`.
        kernel_initializer: Initializer of `[W_mx | W_hx]`.
        recurrent_initializer: Initializer of `W_mh` and `W_hm`.
        bias_initializer: Initializer of `b`.

    Example:

    >>> layer = keras.layers.RNN(MultiplicativeRNNCell(32), return_sequences=True)
    >>> layer(np.zeros((3, 5, 4), "float32")).shape
    (3, 5, 32)
    """

    def __init__(self, units, activation="tanh", use_bias=True, **kwargs):
        super().__init__(units, **kwargs)
        self.activation = keras.activations.get(activation)
        self.use_bias = use_bias

    def build(self, input_shape):
        input_dim = self.input_dim(input_shape)
        self.kernel = self.add_kernel(input_dim, 2 * self.units)
        self.multiplicative_kernel = self.add_recurrent_kernel(
            self.units, name="multiplicative_kernel"
        )
        self.recurrent_kernel = self.add_recurrent_kernel(self.units)
        self.bias = self.add_bias(self.units)

    def call(self, inputs, states, training=False):
        h_prev = states[0] if isinstance(states, (list, tuple)) else states
        x_m, x_h = ops.split(ops.matmul(inputs, self.kernel), 2, axis=-1)
        m = multiplicative_state(x_m, h_prev, self.multiplicative_kernel)
        z = ops.matmul(m, self.recurrent_kernel) + x_h  # [batch, units]
        if self.bias is not None:
            z = z + self.bias
        h = self.activation(z)
        return h, [h]

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "activation": keras.activations.serialize(self.activation),
                "use_bias": self.use_bias,
            }
        )
        return config


@register_cell("mlstm")
class MultiplicativeLSTMCell(LSTMGates, ZooCell):
    """Multiplicative LSTM cell (Krause et al. 2016).

    Implements eqs. 17-21 with the LSTM state update of eqs. 15-16, a bias on
    each gate and the output gate outside the final tanh (the paper's
    follow-up experiments):

        m_t   = (W_mx x_t) * (W_mh h_{t-1})
        i, f, o = sigmoid(W_{i,f,o}x x_t + W_{i,f,o}m m_t + b_{i,f,o})
        c_t   = f * c_{t-1} + i * tanh(W_hx x_t + W_hm m_t + b_h)
        h_t   = o * tanh(c_t)

    `m_t` has `units` dimensions and is shared across the gates, so the cell
    has 1.25x the recurrent weights of an LSTM of the same size. Gates are
    fused in Keras's order (i, f, candidate, o). The paper's options: an
    initial forget-gate bias (it used 3), scaled orthogonal recurrent weights
    (it used `keras.initializers.Orthogonal(gain=0.7)`) and weight
    normalization of the recurrent weights (Salimans & Kingma 2016), applied
    column-wise to `W_mh` and `W_{i,f,h,o}m` with a trainable scale.

    Args:
        units: Positive integer, dimensionality of `h_t`, `c_t` and `m_t`.
        activation: Activation of the candidate and the cell output.
            Default: `"tanh"`.
        recurrent_activation: Activation of the gates. Default: `"sigmoid"`.
        forget_bias: Initial value added to the forget-gate bias.
            Default: 1.0 (as Keras's `unit_forget_bias`).
        weight_normalization: Whether to weight-normalize the recurrent
            kernels. Default: `False`.
        use_bias: Whether the gates have biases. Default: `True`.
        kernel_initializer: Initializer of the fused input kernel.
        recurrent_initializer: Initializer of `W_mh` and the fused `W_*m`.
        bias_initializer: Initializer of the fused bias.

    Example:

    >>> cell = MultiplicativeLSTMCell(32, forget_bias=3.0)
    >>> keras.layers.RNN(cell)(np.zeros((3, 5, 4), "float32")).shape
    (3, 32)
    """

    def __init__(
        self,
        units,
        activation="tanh",
        recurrent_activation="sigmoid",
        forget_bias=1.0,
        weight_normalization=False,
        use_bias=True,
        **kwargs,
    ):
        super().__init__(units, **kwargs)
        self.set_lstm_gates(activation, recurrent_activation, forget_bias)
        self.weight_normalization = weight_normalization
        self.use_bias = use_bias
        self.state_size = [units, units]

    def build(self, input_shape):
        input_dim = self.input_dim(input_shape)
        units = self.units
        # [W_mx | W_ix, W_fx, W_hx, W_ox]
        self.kernel = self.add_kernel(input_dim, 5 * units)
        self.multiplicative_kernel = self.add_recurrent_kernel(
            units, name="multiplicative_kernel"
        )
        # [W_im, W_fm, W_hm, W_om]
        self.recurrent_kernel = self.add_recurrent_kernel(4 * units)
        if self.weight_normalization:
            self.multiplicative_scale = self.add_weight(
                shape=(units,), initializer="ones", name="multiplicative_scale"
            )
            self.recurrent_scale = self.add_weight(
                shape=(4 * units,), initializer="ones", name="recurrent_scale"
            )
        self.bias = self.add_bias(4 * units, self.lstm_bias_initializer())

    def call(self, inputs, states, training=False):
        h_prev, c_prev = states
        multiplicative_kernel = self.multiplicative_kernel
        recurrent_kernel = self.recurrent_kernel
        if self.weight_normalization:
            multiplicative_kernel = weight_normalized(
                multiplicative_kernel, self.multiplicative_scale
            )
            recurrent_kernel = weight_normalized(recurrent_kernel, self.recurrent_scale)
        x_proj = ops.matmul(inputs, self.kernel)  # [batch, 5 * units]
        x_m, x_gates = x_proj[:, : self.units], x_proj[:, self.units :]
        m = multiplicative_state(x_m, h_prev, multiplicative_kernel)
        z = x_gates + ops.matmul(m, recurrent_kernel)  # [batch, 4 * units]
        if self.bias is not None:
            z = z + self.bias
        h, c = self.lstm_step(z, c_prev)
        return h, [h, c]

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                **self.lstm_gates_config(),
                "weight_normalization": self.weight_normalization,
                "use_bias": self.use_bias,
            }
        )
        return config


@register_cell("tensor_rnn")
class TensorRNNCell(ZooCell):
    """Tensor RNN cell: one hidden-to-hidden matrix per input symbol.

    Implements Krause et al. (2016) eqs. 5-7 with a bias and an activation,
    for one-hot inputs given as token ids:

        h_t = activation(W_hh^(x_t) h_{t-1} + W_hx[x_t] + b)

    The cell takes token ids, shape `(batch, 1)` per step (sequences
    `(batch, time, 1)`, integer dtype). The parameters grow as
    `vocab_size * units**2`: it is meant for small vocabularies (Dyck
    languages, characters). A step computes `W_hh^(x_t) h_{t-1}` one of two
    ways, with equal results: up to `DENSE_VOCAB_LIMIT` symbols it multiplies
    `h_{t-1}` by every symbol's matrix (one batched product,
    `vocab_size * units**2` multiply-adds per example) and keeps each
    example's own result; above it, it gathers each example's `[units,
    units]` matrix (`units**2` per example, but a copy of `batch * units**2`
    values per step and a scatter of as many in backprop). On a 2-core CPU
    (units 256, batch 32) the first form ran 4.2x faster at 7 symbols and
    1.6x slower at 50 (`benchmarks/log.md`).

    Args:
        units: Positive integer, dimensionality of `h_t`.
        vocab_size: Positive integer, the number of input symbols.
        activation: Activation of the hidden state. Default: `"tanh"`.
        use_bias: Whether to add `b`. Default: `True`.
        kernel_initializer: Initializer of `W_hx` (`(vocab_size, units)`).
        recurrent_initializer: Initializer of each `W_hh^(n)`.
        bias_initializer: Initializer of `b`.

    Example:

    >>> layer = keras.layers.RNN(TensorRNNCell(16, vocab_size=6))
    >>> layer(np.zeros((3, 5, 1), "int32")).shape
    (3, 16)
    """

    takes_token_ids = True
    # Up to this many symbols a step multiplies by every symbol's matrix.
    DENSE_VOCAB_LIMIT = 16

    def __init__(
        self, units, vocab_size=None, activation="tanh", use_bias=True, **kwargs
    ):
        check_positive_int("vocab_size", vocab_size)
        super().__init__(units, **kwargs)
        self.vocab_size = vocab_size
        self.activation = keras.activations.get(activation)
        self.use_bias = use_bias

    def build(self, input_shape):
        if self.input_dim(input_shape) != 1:
            raise ValueError(
                "TensorRNNCell expects `inputs` of token ids with shape "
                "(batch, time, 1); received inputs of shape "
                f"{tuple(input_shape)} per step."
            )
        self.kernel = self.add_kernel(self.vocab_size, self.units)
        self.recurrent_kernel = self.add_weight(
            shape=(self.vocab_size, self.units, self.units),
            initializer=stacked_initializer(
                self.recurrent_initializer, self.vocab_size
            ),
            name="recurrent_kernel",
        )
        self.bias = self.add_bias(self.units)

    def call(self, inputs, states, training=False):
        h_prev = states[0] if isinstance(states, (list, tuple)) else states
        ids = ops.cast(inputs[:, 0], "int32")  # [batch]
        if self.vocab_size <= self.DENSE_VOCAB_LIMIT:
            products = ops.matmul(h_prev[None], self.recurrent_kernel)  # [n, b, u]
            chosen = ops.one_hot(ids, self.vocab_size, dtype=h_prev.dtype)  # [b, n]
            chosen = ops.transpose(chosen)[:, :, None]  # [n, batch, 1]
            z = ops.sum(chosen * products, axis=0)  # [batch, units]
        else:
            transition = ops.take(self.recurrent_kernel, ids, axis=0)  # [b, u, u]
            z = ops.einsum("bi,bij->bj", h_prev, transition)  # [batch, units]
        z = z + ops.take(self.kernel, ids, axis=0)
        if self.bias is not None:
            z = z + self.bias
        h = self.activation(z)
        return h, [h]

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "vocab_size": self.vocab_size,
                "activation": keras.activations.serialize(self.activation),
                "use_bias": self.use_bias,
            }
        )
        return config
