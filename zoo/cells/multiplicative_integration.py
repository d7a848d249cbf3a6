"""Multiplicative-integration RNN and LSTM (Wu et al. 2016).

Multiplicative integration (MI) replaces the additive building block
`W x + U h + b` of an RNN by its general second-order form

    alpha * (W x) * (U h) + beta1 * (U h) + beta2 * (W x) + b

with trainable per-unit vectors `alpha`, `beta1`, `beta2`. The product is
between the two projections, so MI adds only `3 * units` parameters per
block; the mLSTM of `zoo.cells.multiplicative` instead multiplies before a
further matrix (Krause et al. 2016, sections 3 and 4.2, call MI-LSTM mLSTM's
nearest neighbour). `multiplicative_integration` is that one expression,
used by both cells here and by the Delta-RNN (`zoo.cells.delta`).
"""

import keras
from keras import ops

from zoo.cells.multiplicative import weight_normalized
from zoo.cells.zoo_cell import LSTMGates, ZooCell
from zoo.registry import register_cell


def multiplicative_integration(
    input_projection, recurrent_projection, alpha, beta1, beta2
):
    """Returns `alpha * Wx * Uh + beta1 * Uh + beta2 * Wx` (Wu et al. 2016)."""
    return (
        alpha * input_projection * recurrent_projection
        + beta1 * recurrent_projection
        + beta2 * input_projection
    )


def _gating_initializer(initializer, default):
    """Resolves a gating-vector initializer; `None` means `Constant(default)`."""
    if initializer is None:
        return keras.initializers.Constant(default)
    return keras.initializers.get(initializer)


class MultiplicativeIntegrationCell(ZooCell):
    """Base class of the cells built on `multiplicative_integration`.

    Holds the initializers of the gating vectors `alpha`, `beta1`, `beta2`
    (an initializer left `None` is `Constant` of the subclass's
    `gating_defaults`) and `use_bias`, creates the vectors with
    `add_gating_vectors` and serializes all of it.
    """

    gating_defaults = (1.0, 0.5, 0.5)

    def __init__(
        self,
        units,
        alpha_initializer=None,
        beta1_initializer=None,
        beta2_initializer=None,
        use_bias=True,
        **kwargs,
    ):
        super().__init__(units, **kwargs)
        alpha, beta1, beta2 = self.gating_defaults
        self.alpha_initializer = _gating_initializer(alpha_initializer, alpha)
        self.beta1_initializer = _gating_initializer(beta1_initializer, beta1)
        self.beta2_initializer = _gating_initializer(beta2_initializer, beta2)
        self.use_bias = use_bias

    def add_gating_vectors(self, size):
        """Creates `alpha`, `beta1` and `beta2`, each of shape `(size,)`."""
        self.alpha = self.add_weight(
            shape=(size,), initializer=self.alpha_initializer, name="alpha"
        )
        self.beta1 = self.add_weight(
            shape=(size,), initializer=self.beta1_initializer, name="beta1"
        )
        self.beta2 = self.add_weight(
            shape=(size,), initializer=self.beta2_initializer, name="beta2"
        )

    def integrate(self, inputs, h_prev, recurrent_kernel):
        """Returns the MI pre-activation of every fused block (bias included)."""
        x_proj = ops.matmul(inputs, self.kernel)  # [batch, blocks * units]
        h_proj = ops.matmul(h_prev, recurrent_kernel)  # [batch, blocks * units]
        z = multiplicative_integration(
            x_proj, h_proj, self.alpha, self.beta1, self.beta2
        )
        if self.bias is not None:
            z = z + self.bias
        return z

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "alpha_initializer": keras.initializers.serialize(
                    self.alpha_initializer
                ),
                "beta1_initializer": keras.initializers.serialize(
                    self.beta1_initializer
                ),
                "beta2_initializer": keras.initializers.serialize(
                    self.beta2_initializer
                ),
                "use_bias": self.use_bias,
            }
        )
        return config


@register_cell("mirnn")
class MIRNNCell(MultiplicativeIntegrationCell):
    """Multiplicative-integration RNN cell (Wu et al. 2016).

    The vanilla RNN with its additive block replaced by the general form of
    multiplicative integration (Wu et al. 2016, section 2):

        h_t = activation(alpha * (W x_t) * (U h_{t-1})
                         + beta1 * (U h_{t-1}) + beta2 * (W x_t) + b)

    `alpha`, `beta1` and `beta2` are trainable vectors of `units` entries.
    With `alpha = 0` and `beta1 = beta2 = 1` the cell is Keras's SimpleRNN.
    The defaults of their initializers (alpha 1, beta1 and beta2 0.5) are
    our defaults.

    Args:
        units: Positive integer, dimensionality of `h_t`.
        activation: Activation of the hidden state. Default: `"tanh"`.
        alpha_initializer: Initializer of `alpha`. Default: `None`, meaning
            `keras.initializers.Constant(1.0)`.
        beta1_initializer: Initializer of `beta1`. Default: `None`, meaning
            `keras.initializers.Constant(0.5)`.
        beta2_initializer: Initializer of `beta2`. Default: `None`, meaning
            `keras.initializers.Constant(0.5)`.
        use_bias: Whether to add `b`. Default: `True`.
        kernel_initializer: Initializer of `W`. Default: `"glorot_uniform"`.
        recurrent_initializer: Initializer of `U`. Default: `"orthogonal"`.
        bias_initializer: Initializer of `b`. Default: `"zeros"`.

    Example:

    >>> layer = keras.layers.RNN(MIRNNCell(32), return_sequences=True)
    >>> layer(np.zeros((3, 5, 4), "float32")).shape
    (3, 5, 32)
    """

    def __init__(self, units, activation="tanh", **kwargs):
        super().__init__(units, **kwargs)
        self.activation = keras.activations.get(activation)

    def build(self, input_shape):
        input_dim = self.input_dim(input_shape)
        self.kernel = self.add_kernel(input_dim, self.units)
        self.recurrent_kernel = self.add_recurrent_kernel(self.units)
        self.add_gating_vectors(self.units)
        self.bias = self.add_bias(self.units)

    def call(self, inputs, states, training=False):
        h_prev = states[0] if isinstance(states, (list, tuple)) else states
        h = self.activation(self.integrate(inputs, h_prev, self.recurrent_kernel))
        return h, [h]

    def get_config(self):
        config = super().get_config()
        config["activation"] = keras.activations.serialize(self.activation)
        return config


@register_cell("milstm")
class MILSTMCell(LSTMGates, MultiplicativeIntegrationCell):
    """Multiplicative-integration LSTM cell (Wu et al. 2016).

    Each of the LSTM's four pre-activations takes the general form of
    multiplicative integration (Wu et al. 2016, section 2, applied to the
    LSTM as in their MI-LSTM experiments), with its own gating vectors:

        [i, f, g, o] = alpha * (W x_t) * (U h_{t-1})
                       + beta1 * (U h_{t-1}) + beta2 * (W x_t) + b
        c_t = sigmoid(f) * c_{t-1} + sigmoid(i) * tanh(g)
        h_t = sigmoid(o) * tanh(c_t)

    Kernels, biases and the gating vectors (`4 * units` each) are fused in
    Keras's gate order (i, f, candidate, o). The defaults of the gating
    initializers (alpha 1, beta1 and beta2 0.5) are our defaults. As options
    for comparing with the mLSTM (Krause et al. 2016, section 4.2): an
    initial forget-gate bias and weight normalization of `U`, column-wise
    with a trainable scale, as `zoo.cells.multiplicative` does.

    Args:
        units: Positive integer, dimensionality of `h_t` and `c_t`.
        activation: Activation of the candidate and the cell output.
            Default: `"tanh"`.
        recurrent_activation: Activation of the gates. Default: `"sigmoid"`.
        forget_bias: Initial value added to the forget-gate bias.
            Default: 1.0 (as Keras's `unit_forget_bias`).
        weight_normalization: Whether to weight-normalize `U`.
            Default: `False`.
        alpha_initializer: Initializer of `alpha`. Default: `None`, meaning
            `keras.initializers.Constant(1.0)`.
        beta1_initializer: Initializer of `beta1`. Default: `None`, meaning
            `keras.initializers.Constant(0.5)`.
        beta2_initializer: Initializer of `beta2`. Default: `None`, meaning
            `keras.initializers.Constant(0.5)`.
        use_bias: Whether the blocks have biases. Default: `True`.
        kernel_initializer: Initializer of the fused `W`.
            Default: `"glorot_uniform"`.
        recurrent_initializer: Initializer of the fused `U`.
            Default: `"orthogonal"`.
        bias_initializer: Initializer of the fused bias. Default: `"zeros"`.

    Example:

    >>> cell = MILSTMCell(32, forget_bias=3.0)
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
        **kwargs,
    ):
        super().__init__(units, **kwargs)
        self.set_lstm_gates(activation, recurrent_activation, forget_bias)
        self.weight_normalization = weight_normalization
        self.state_size = [units, units]

    def build(self, input_shape):
        input_dim = self.input_dim(input_shape)
        units = self.units
        self.kernel = self.add_kernel(input_dim, 4 * units)
        self.recurrent_kernel = self.add_recurrent_kernel(4 * units)
        if self.weight_normalization:
            self.recurrent_scale = self.add_weight(
                shape=(4 * units,), initializer="ones", name="recurrent_scale"
            )
        self.add_gating_vectors(4 * units)
        self.bias = self.add_bias(4 * units, self.lstm_bias_initializer())

    def call(self, inputs, states, training=False):
        h_prev, c_prev = states
        recurrent_kernel = self.recurrent_kernel
        if self.weight_normalization:
            recurrent_kernel = weight_normalized(recurrent_kernel, self.recurrent_scale)
        z = self.integrate(inputs, h_prev, recurrent_kernel)  # [batch, 4 * units]
        h, c = self.lstm_step(z, c_prev)
        return h, [h, c]

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                **self.lstm_gates_config(),
                "weight_normalization": self.weight_normalization,
            }
        )
        return config
