"""MUT1, MUT2 and MUT3, the evolved GRU variants of Jozefowicz et al. (2015).

"An Empirical Exploration of Recurrent Network Architectures" searched over
GRU-like cells and kept three. They share the GRU's reset-gated candidate and
its interpolation,

    h_{t+1} = tanh(W_hh (r * h_t) + c(x_t) + b_h) * z + h_t * (1 - z),

and differ in how the update gate `z`, the reset gate `r` and the candidate's
input term `c(x_t)` are computed. `MUTCell` holds the shared part; each
subclass computes its own gates.
"""

from keras import ops

from zoo.cells.zoo_cell import ZooCell
from zoo.registry import register_cell


class MUTCell(ZooCell):
    """Base class of the MUT cells: the shared candidate and update.

    A subclass sets `input_blocks` (the number of `units`-wide blocks of
    its fused input kernel), `recurrent_gate_blocks` (those of
    `recurrent_kernel`, the gates' weights on `h_t`), `inputs_match_units`
    (whether `x_t` itself is added to a pre-activation) and
    `gates(inputs, h_prev, x_proj)`, which returns the pre-activations of `z`
    and `r` without their biases and the candidate's input term `c(x_t)`.
    `W_hh` is its own weight, `candidate_kernel`: a step never slices a
    weight (slicing one inside the recurrent loop made training 2x slower).

    Args:
        units: Positive integer, dimensionality of `h_t`.
        kernel_initializer: Initializer of the fused input kernel.
            Default: `"glorot_uniform"`.
        recurrent_initializer: Initializer of the recurrent kernels.
            Default: `"orthogonal"`.
        bias_initializer: Initializer of `[b_z | b_r | b_h]`.
            Default: `"zeros"`.
    """

    input_blocks = 2
    recurrent_gate_blocks = 1
    inputs_match_units = False

    def build(self, input_shape):
        input_dim = self.input_dim(input_shape)
        if self.inputs_match_units and input_dim != self.units:
            raise ValueError(
                f"{type(self).__name__} adds `inputs` to a pre-activation, so it "
                f"expects inputs with units={self.units} features, i.e. sequences "
                f"(batch, time, {self.units}); received inputs with {input_dim}."
            )
        self.kernel = self.add_kernel(input_dim, self.input_blocks * self.units)
        self.recurrent_kernel = self.add_recurrent_kernel(
            self.recurrent_gate_blocks * self.units
        )
        self.candidate_kernel = self.add_recurrent_kernel(
            self.units, name="candidate_kernel"
        )
        self.bias = self.add_bias(3 * self.units)  # [b_z | b_r | b_h]

    def gates(self, inputs, h_prev, x_proj):
        raise NotImplementedError

    def call(self, inputs, states, training=False):
        h_prev = states[0] if isinstance(states, (list, tuple)) else states
        x_proj = ops.matmul(inputs, self.kernel)  # [batch, input_blocks * units]
        b_z, b_r, b_h = ops.split(self.bias, 3)
        z, r, candidate_input = self.gates(inputs, h_prev, x_proj)
        z = ops.sigmoid(z + b_z)
        r = ops.sigmoid(r + b_r)
        candidate = ops.matmul(r * h_prev, self.candidate_kernel)  # [batch, units]
        candidate = ops.tanh(candidate + candidate_input + b_h)
        h = candidate * z + h_prev * (1.0 - z)
        return h, [h]


@register_cell("mut1")
class MUT1Cell(MUTCell):
    """MUT1 cell (Jozefowicz, Zaremba & Sutskever 2015).

    The paper's first evolved architecture, as printed (the
    paper does not number these equations):

        z       = sigm(W_xz x_t + b_z)
        r       = sigm(W_xr x_t + W_hr h_t + b_r)
        h_{t+1} = tanh(W_hh (r * h_t) + tanh(x_t) + b_h) * z + h_t * (1 - z)

    The update gate sees only the input, and the candidate adds `tanh(x_t)`
    unprojected, so the inputs must have `units` features: a mismatch
    raises a `ValueError` when the cell is built. Kernels are fused as
    `kernel = [W_xz | W_xr]`; `recurrent_kernel = W_hr`,
    `candidate_kernel = W_hh`.

    Args:
        units: Positive integer, dimensionality of `h_t`; also the number
            of input features.
        kernel_initializer: Initializer of `[W_xz | W_xr]`.
            Default: `"glorot_uniform"`.
        recurrent_initializer: Initializer of `W_hr` and `W_hh`.
            Default: `"orthogonal"`.
        bias_initializer: Initializer of `[b_z | b_r | b_h]`.
            Default: `"zeros"`.

    Example:

    >>> layer = keras.layers.RNN(MUT1Cell(4), return_sequences=True)
    >>> layer(np.zeros((3, 5, 4), "float32")).shape
    (3, 5, 4)
    """

    input_blocks = 2
    recurrent_gate_blocks = 1
    inputs_match_units = True

    def gates(self, inputs, h_prev, x_proj):
        x_z, x_r = ops.split(x_proj, 2, axis=-1)
        r = x_r + ops.matmul(h_prev, self.recurrent_kernel)
        return x_z, r, ops.tanh(inputs)


@register_cell("mut2")
class MUT2Cell(MUTCell):
    """MUT2 cell (Jozefowicz, Zaremba & Sutskever 2015).

    The paper's second evolved architecture, as printed (the
    paper does not number these equations):

        z       = sigm(W_xz x_t + W_hz h_t + b_z)
        r       = sigm(x_t + W_hr h_t + b_r)
        h_{t+1} = tanh(W_hh (r * h_t) + W_xh x_t + b_h) * z + h_t * (1 - z)

    The reset gate adds `x_t` unprojected, so the inputs must have `units`
    features: a mismatch raises a `ValueError` when the cell is built.
    Kernels are fused as `kernel = [W_xz | W_xh]`,
    `recurrent_kernel = [W_hz | W_hr]`; `candidate_kernel = W_hh`.

    Args:
        units: Positive integer, dimensionality of `h_t`; also the number
            of input features.
        kernel_initializer: Initializer of `[W_xz | W_xh]`.
            Default: `"glorot_uniform"`.
        recurrent_initializer: Initializer of `W_hz`, `W_hr` and `W_hh`.
            Default: `"orthogonal"`.
        bias_initializer: Initializer of `[b_z | b_r | b_h]`.
            Default: `"zeros"`.

    Example:

    >>> layer = keras.layers.RNN(MUT2Cell(4), return_sequences=True)
    >>> layer(np.zeros((3, 5, 4), "float32")).shape
    (3, 5, 4)
    """

    input_blocks = 2
    recurrent_gate_blocks = 2
    inputs_match_units = True

    def gates(self, inputs, h_prev, x_proj):
        x_z, x_h = ops.split(x_proj, 2, axis=-1)
        h_proj = ops.matmul(h_prev, self.recurrent_kernel)  # [batch, 2 * units]
        h_z, h_r = ops.split(h_proj, 2, axis=-1)
        return x_z + h_z, inputs + h_r, x_h


@register_cell("mut3")
class MUT3Cell(MUTCell):
    """MUT3 cell (Jozefowicz, Zaremba & Sutskever 2015).

    The paper's third evolved architecture, as printed (the
    paper does not number these equations):

        z       = sigm(W_xz x_t + W_hz tanh(h_t) + b_z)
        r       = sigm(W_xr x_t + W_hr h_t + b_r)
        h_{t+1} = tanh(W_hh (r * h_t) + W_xh x_t + b_h) * z + h_t * (1 - z)

    Any input size works. Kernels are fused as
    `kernel = [W_xz | W_xr | W_xh]`; `W_hz` reads `tanh(h_t)` and `W_hr`
    reads `h_t`, so they are separate weights, `update_kernel = W_hz` and
    `recurrent_kernel = W_hr`; `candidate_kernel = W_hh`.

    Args:
        units: Positive integer, dimensionality of `h_t`.
        kernel_initializer: Initializer of `[W_xz | W_xr | W_xh]`.
            Default: `"glorot_uniform"`.
        recurrent_initializer: Initializer of `W_hz`, `W_hr` and `W_hh`.
            Default: `"orthogonal"`.
        bias_initializer: Initializer of `[b_z | b_r | b_h]`.
            Default: `"zeros"`.

    Example:

    >>> layer = keras.layers.RNN(MUT3Cell(32), return_sequences=True)
    >>> layer(np.zeros((3, 5, 4), "float32")).shape
    (3, 5, 32)
    """

    input_blocks = 3
    recurrent_gate_blocks = 1
    inputs_match_units = False

    def build(self, input_shape):
        super().build(input_shape)
        self.update_kernel = self.add_recurrent_kernel(self.units, name="update_kernel")

    def gates(self, inputs, h_prev, x_proj):
        x_z, x_r, x_h = ops.split(x_proj, 3, axis=-1)
        z = x_z + ops.matmul(ops.tanh(h_prev), self.update_kernel)
        r = x_r + ops.matmul(h_prev, self.recurrent_kernel)
        return z, r, x_h
