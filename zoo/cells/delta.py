"""The Delta-RNN of the Differential State Framework (Ororbia et al. 2017)."""

import keras
from keras import ops

from zoo.cells.multiplicative_integration import (
    MultiplicativeIntegrationCell,
    multiplicative_integration,
)
from zoo.registry import register_cell


@register_cell("delta_rnn")
class DeltaRNNCell(MultiplicativeIntegrationCell):
    """Delta-RNN cell (Ororbia, Mikolov & Reitter 2017, Neural Computation).

    The Delta-RNN of "Learning Simpler Language Models with the Differential
    State Framework" (arXiv:1703.08864) with the late-integration,
    data-driven state: a second-order inner function proposes `z_t`, and an
    outer function interpolates it with `h_{t-1}` through a gate computed
    from the same input projection `W x_t`:

        d1_t = alpha * (V h_{t-1}) * (W x_t)
        d2_t = beta1 * (V h_{t-1}) + beta2 * (W x_t)
        z_t  = activation(d1_t + d2_t + b_z)
        r_t  = recurrent_activation(W x_t + b_r)
        h_t  = outer_activation((1 - r_t) * z_t + r_t * h_{t-1})

    `d1_t + d2_t` is multiplicative integration (Wu et al. 2016), computed
    by `zoo.cells.multiplicative_integration.multiplicative_integration`.
    We followed the authors' reference code: Ororbia's Theano
    `DeltaRNNLayer` (Delta-RNN-Theano) for the equations, whose outer
    function defaults to the identity (its example script uses tanh), and
    Ankur Mali's TensorFlow `DeltaRNNCell` for the gate reusing `W x_t` and
    the initial `alpha = 2`, `beta1 = beta2 = 1` (the Theano code notes
    alpha 2 was used for Penn Treebank in the paper). Unlike Mali's cell
    (`_linear` with biases, ReLU outer function), `V h` and `W x` carry no
    biases of their own, as in the equations above; pass
    `outer_activation="relu"` for his outer function.

    Args:
        units: Positive integer, dimensionality of `h_t`.
        activation: Activation of the inner function `z_t`.
            Default: `"tanh"`.
        recurrent_activation: Activation of the gate `r_t`.
            Default: `"sigmoid"`.
        outer_activation: The outer function `Phi`. Default: `"linear"`
            (the identity); `"tanh"` is the other choice the authors use.
        alpha_initializer: Initializer of `alpha`. Default: `None`, meaning
            `keras.initializers.Constant(2.0)`.
        beta1_initializer: Initializer of `beta1`. Default: `None`, meaning
            `keras.initializers.Constant(1.0)`.
        beta2_initializer: Initializer of `beta2`. Default: `None`, meaning
            `keras.initializers.Constant(1.0)`.
        use_bias: Whether to add `b_z` and `b_r`. Default: `True`.
        kernel_initializer: Initializer of `W`. Default: `"glorot_uniform"`.
        recurrent_initializer: Initializer of `V`. Default: `"orthogonal"`.
        bias_initializer: Initializer of `[b_z | b_r]`. Default: `"zeros"`.

    Example:

    >>> layer = keras.layers.RNN(DeltaRNNCell(32), return_sequences=True)
    >>> layer(np.zeros((3, 5, 4), "float32")).shape
    (3, 5, 32)
    """

    gating_defaults = (2.0, 1.0, 1.0)

    def __init__(
        self,
        units,
        activation="tanh",
        recurrent_activation="sigmoid",
        outer_activation="linear",
        **kwargs,
    ):
        super().__init__(units, **kwargs)
        self.activation = keras.activations.get(activation)
        self.recurrent_activation = keras.activations.get(recurrent_activation)
        self.outer_activation = keras.activations.get(outer_activation)

    def build(self, input_shape):
        input_dim = self.input_dim(input_shape)
        self.kernel = self.add_kernel(input_dim, self.units)
        self.recurrent_kernel = self.add_recurrent_kernel(self.units)
        self.add_gating_vectors(self.units)
        self.bias = self.add_bias(2 * self.units)  # [b_z | b_r]

    def call(self, inputs, states, training=False):
        h_prev = states[0] if isinstance(states, (list, tuple)) else states
        x_proj = ops.matmul(inputs, self.kernel)  # [batch, units]
        h_proj = ops.matmul(h_prev, self.recurrent_kernel)  # [batch, units]
        z = multiplicative_integration(
            x_proj, h_proj, self.alpha, self.beta1, self.beta2
        )
        r = x_proj
        if self.bias is not None:
            b_z, b_r = ops.split(self.bias, 2)
            z, r = z + b_z, r + b_r
        z = self.activation(z)
        r = self.recurrent_activation(r)
        h = self.outer_activation((1.0 - r) * z + r * h_prev)
        return h, [h]

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "activation": keras.activations.serialize(self.activation),
                "recurrent_activation": keras.activations.serialize(
                    self.recurrent_activation
                ),
                "outer_activation": keras.activations.serialize(self.outer_activation),
            }
        )
        return config
