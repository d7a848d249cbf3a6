"""What every zoo cell shares: initializers, LSTM gating, shapes, config."""

import keras
from keras import ops

from zoo.checks import check_number, check_positive_int
from zoo.initializers import CompositeInitializer, IndependentWeights


def blockwise_initializer(initializer, blocks):
    """Initializes `[rows, blocks * cols]` as `blocks` independent `[rows, cols]`.

    Each block draws from its own seed (`zoo.initializers.CompositeInitializer`),
    so an orthogonal initializer gives `blocks` orthogonal matrices side by side.
    """

    def combine(shape, dtype, parts):
        block_shape = (shape[0], shape[1] // blocks)
        return ops.concatenate([part(block_shape, dtype=dtype) for part in parts], 1)

    return CompositeInitializer(combine, [initializer] * blocks)


def stacked_initializer(initializer, count):
    """Initializes `[count, *shape]` as `count` independent draws of `shape`."""

    def combine(shape, dtype, parts):
        return ops.stack([part(shape[1:], dtype=dtype) for part in parts])

    return CompositeInitializer(combine, [initializer] * count)


def lstm_update(z, c_prev, activation, recurrent_activation):
    """The LSTM state update from fused pre-activations (Krause et al. eqs. 15-16).

    `z` is `[..., 4 * units]` in Keras's gate order (i, f, candidate, o);
    returns `(h, c)` with `c = f * c_prev + i * activation(candidate)` and
    `h = o * activation(c)`.
    """
    z_i, z_f, z_c, z_o = ops.split(z, 4, axis=-1)
    c = recurrent_activation(z_f) * c_prev + recurrent_activation(z_i) * activation(z_c)
    h = recurrent_activation(z_o) * activation(c)
    return h, c


def with_forget_bias(bias_initializer, units, forget_bias):
    """Wraps an initializer of fused (i, f, c, o) biases to add `forget_bias` to f.

    The bias may hold several LSTMs' blocks of `4 * units` one after another
    (the second-order LSTM's cells); each block's f gets `forget_bias`.
    """

    def combine(shape, dtype, parts):
        bias = parts[0](shape, dtype=dtype)
        block = ops.concatenate(
            [ops.zeros((units,)), ops.full((units,), forget_bias)]
            + [ops.zeros((2 * units,))]
        )  # [4 * units]
        forget = ops.tile(block, (shape[0] // (4 * units),))
        return bias + ops.cast(forget, bias.dtype)

    return CompositeInitializer(combine, [bias_initializer])


class LSTMGates:
    """The LSTM gating the gated cells share, mixed in beside their base.

    Holds `activation`, `recurrent_activation` and `forget_bias` (set with
    `set_lstm_gates` in `__init__`), the forget-bias initializer of the fused
    (i, f, c, o) bias, the state update `lstm_update` and their config.
    """

    def set_lstm_gates(self, activation, recurrent_activation, forget_bias):
        check_number("forget_bias", forget_bias)
        self.activation = keras.activations.get(activation)
        self.recurrent_activation = keras.activations.get(recurrent_activation)
        self.forget_bias = forget_bias

    def lstm_bias_initializer(self):
        return with_forget_bias(self.bias_initializer, self.units, self.forget_bias)

    def lstm_step(self, z, c_prev):
        return lstm_update(z, c_prev, self.activation, self.recurrent_activation)

    def lstm_gates_config(self):
        return {
            "activation": keras.activations.serialize(self.activation),
            "recurrent_activation": keras.activations.serialize(
                self.recurrent_activation
            ),
            "forget_bias": self.forget_bias,
        }


class ZooCell(IndependentWeights, keras.Layer):
    """Base class of the zoo's recurrent cells.

    Holds `units` and the three initializers every cell uses, checks the
    per-step input shape in `build`, and serializes all of it. Subclasses set
    `state_size`, create their weights in `build` after calling
    `self.input_dim(input_shape)` (parts, such as a stack or a controller
    cell, with `self.build_part`), and add their own arguments to
    `get_config`. The weights most cells have are made by `add_kernel` (an
    input kernel), `add_recurrent_kernel` (a kernel on the state) and
    `add_bias` (`None` when the cell's `use_bias` is off), each from its
    initializer unless given another.

    Every weight draws from a seed of its own, derived from the cell's seed
    and the weight's name (`zoo.initializers`): weights that share an
    initializer, such as every kernel of `kernel_initializer`, start
    independent. The cell's seed is the initializer's own when it was given
    an integer seed (then the cell's initial weights are the same in every
    process), else one draw from NumPy's global generator (reproducible
    under `keras.utils.set_random_seed`).

    Args:
        units: Positive integer, dimensionality of the hidden state.
        kernel_initializer: Initializer for the input kernels.
        recurrent_initializer: Initializer for the recurrent kernels.
        bias_initializer: Initializer for the biases.
    """

    # Every cell has a bias unless it takes a `use_bias` argument and is
    # given False.
    use_bias = True

    def __init__(
        self,
        units,
        kernel_initializer="glorot_uniform",
        recurrent_initializer="orthogonal",
        bias_initializer="zeros",
        **kwargs,
    ):
        check_positive_int("units", units)
        super().__init__(**kwargs)
        self.units = units
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.recurrent_initializer = keras.initializers.get(recurrent_initializer)
        self.bias_initializer = keras.initializers.get(bias_initializer)
        self.state_size = units
        self.output_size = units

    def input_dim(self, input_shape):
        """Checks a per-step input shape `(batch, features)`; returns features."""
        if len(input_shape) != 2 or input_shape[-1] is None:
            raise ValueError(
                f"{type(self).__name__} expects `inputs` of shape (batch, features) "
                "at each step, i.e. sequences (batch, time, features) in "
                f"keras.layers.RNN; received inputs of shape {tuple(input_shape)}."
            )
        return int(input_shape[-1])

    def add_kernel(self, input_dim, width, initializer=None, name="kernel"):
        """An input kernel `[input_dim, width]`, from `kernel_initializer`
        unless `initializer` is given."""
        if initializer is None:
            initializer = self.kernel_initializer
        return self.add_weight(
            shape=(input_dim, width), initializer=initializer, name=name
        )

    def add_recurrent_kernel(self, width, initializer=None, name="recurrent_kernel"):
        """A kernel on the state, `[units, width]`, from `recurrent_initializer`
        unless `initializer` is given."""
        if initializer is None:
            initializer = self.recurrent_initializer
        return self.add_weight(
            shape=(self.units, width), initializer=initializer, name=name
        )

    def add_bias(self, width, initializer=None):
        """The bias `[width]`, from `bias_initializer` unless `initializer` is
        given; `None` when `use_bias` is off."""
        if not self.use_bias:
            return None
        if initializer is None:
            initializer = self.bias_initializer
        return self.add_weight(shape=(width,), initializer=initializer, name="bias")

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "units": self.units,
                "kernel_initializer": keras.initializers.serialize(
                    self.kernel_initializer
                ),
                "recurrent_initializer": keras.initializers.serialize(
                    self.recurrent_initializer
                ),
                "bias_initializer": keras.initializers.serialize(self.bias_initializer),
            }
        )
        return config
