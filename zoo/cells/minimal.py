"""minGRU and minLSTM (Feng et al. 2024, "Were RNNs All We Needed?").

Both cells drop the previous hidden state from their gates and candidate, so
the update is the first-order linear recurrence `h_t = a_t * h_{t-1} + b_t`
with `a_t` in (0, 1) and `a_t`, `b_t` functions of `x_t` alone. The cells step
it one time step at a time (for `keras.layers.RNN` and generation); the
sequence layers `MinGRU` and `MinLSTM` can also compute a whole sequence at
once with `log_space_scan`, a parallel scan in log space.
"""

import keras
from keras import ops

from zoo.cells.zoo_cell import ZooCell
from zoo.checks import check_choice
from zoo.devices import gpu_visible
from zoo.registry import register_cell

MODES = ("auto", "parallel", "sequential")

# Stands for log(0) in the scan: finite, so that no gradient meets inf - inf.
_LOG_ZERO = -1e30
# Added to the positive part, which takes the zeros, so that log stays finite
# and the gradient at exactly 0 (a zero initial state) is the true one.
_TINY = 1e-20


def cumulative_logsumexp(x, axis):
    """Returns `log(cumsum(exp(x)))` along `axis`, computed stably.

    keras.ops has no cumulative logsumexp, and `keras.ops.associative_scan`
    fails inside `model.fit` on the TensorFlow backend (unknown static
    shapes), so the TensorFlow backend uses its own op.
    """
    if keras.backend.backend() == "tensorflow":
        import tensorflow as tf

        return tf.math.cumulative_logsumexp(x, axis=axis)
    return ops.associative_scan(ops.logaddexp, x, axis=axis)


def _log_of_part(values, log_scale, positive):
    """Returns `log_scale + log|values|` on one side of 0, else log 0.

    The positive side holds the zeros, shifted by `_TINY`: its log is then
    finite, and `d/dv (v + _TINY) / (v + _TINY)` keeps the gradient at
    `v = 0` right, where a plain split would drop it.
    """
    if positive:
        present = values >= 0
        magnitude = values + _TINY
    else:
        present = values < 0
        magnitude = -values
    # A safe value under the log keeps the gradient of the absent part finite.
    magnitude = ops.where(present, magnitude, ops.ones_like(values))
    return ops.where(present, log_scale + ops.log(magnitude), _LOG_ZERO)


def log_space_scan(log_a, log_gate, candidate, initial_state):
    """Returns every `h_t = a_t * h_{t-1} + g_t * c_t` of a sequence at once.

    With `A_t = a_1 ... a_t`, `h_t = A_t * (h_0 + sum_{s<=t} g_s c_s / A_s)`.
    The sum runs as a cumulative logsumexp in log space, once over the
    positive and once over the negative terms (`c_t` and `h_0` are signed).
    `log a_t` and `log g_t` come from the cells' `log_coefficients`; a step
    with `log_a = 0` and `c = 0` holds the state.

    Args:
        log_a: `(batch, time, units)`, `log a_t`, all <= 0.
        log_gate: `(batch, time, units)`, `log g_t`.
        candidate: `(batch, time, units)`, `c_t`.
        initial_state: `(batch, units)`, `h_0`.

    Returns:
        `(batch, time, units)`, `h_1 ... h_T`.
    """
    log_decay = ops.cumsum(log_a, axis=1)  # [batch, time, units]
    # h_0 enters as step 0, with A_0 = 1 and g_0 = 1.
    values = ops.concatenate(  # [batch, time + 1, units]
        [initial_state[:, None], candidate], axis=1
    )
    log_scale = ops.concatenate(  # [batch, time + 1, units]
        [ops.zeros_like(initial_state)[:, None], log_gate - log_decay], axis=1
    )
    log_positive = cumulative_logsumexp(_log_of_part(values, log_scale, True), 1)
    log_negative = cumulative_logsumexp(_log_of_part(values, log_scale, False), 1)
    return ops.exp(log_decay + log_positive[:, 1:]) - ops.exp(
        log_decay + log_negative[:, 1:]
    )  # [batch, time, units]


@register_cell("min_gru")
class MinGRUCell(ZooCell):
    """minGRU cell: a GRU whose gate and candidate read only the input.

    Implements Feng et al. (2024), section 3.1, as in the lecture's equations:

        z_t  = sigmoid(W_z x_t + b_z)
        h~_t = W_h x_t + b_h
        h_t  = (1 - z_t) * h_{t-1} + z_t * h~_t

    The candidate is linear, as in the paper's equations; the paper's
    log-space code instead makes it positive with `g(x) = x + 0.5` for
    `x >= 0`, `sigmoid(x)` otherwise, which this cell does not do. The kernel
    is fused as `[W_z | W_h]`. Parameters: `2 * units * (input_dim + 1)`.
    For whole sequences use `MinGRU`, which can also run in parallel.

    Args:
        units: Positive integer, dimensionality of `h_t`.
        kernel_initializer: Initializer of `[W_z | W_h]`.
            Default: `"glorot_uniform"`.
        recurrent_initializer: Unused (the cell has no recurrent weights);
            accepted so that every zoo cell takes the same arguments.
        bias_initializer: Initializer of `[b_z | b_h]`. Default: `"zeros"`.

    Example:

    >>> layer = keras.layers.RNN(MinGRUCell(32), return_sequences=True)
    >>> layer(np.zeros((3, 5, 4), "float32")).shape
    (3, 5, 32)
    """

    def build(self, input_shape):
        input_dim = self.input_dim(input_shape)
        self.kernel = self.add_kernel(input_dim, 2 * self.units)
        self.bias = self.add_bias(2 * self.units)

    def projections(self, inputs):
        """Returns the gate pre-activation and the candidate, `(..., units)` each."""
        z = ops.matmul(inputs, self.kernel) + self.bias  # [..., 2 * units]
        return ops.split(z, 2, axis=-1)

    def log_coefficients(self, inputs):
        """Returns `log(1 - z_t)`, `log z_t` and `h~_t` for `log_space_scan`."""
        z, candidate = self.projections(inputs)
        return -ops.softplus(z), -ops.softplus(-z), candidate

    def call(self, inputs, states, training=False):
        h_prev = states[0] if isinstance(states, (list, tuple)) else states
        z, candidate = self.projections(inputs)  # [batch, units] each
        z = ops.sigmoid(z)
        h = (1.0 - z) * h_prev + z * candidate
        return h, [h]


@register_cell("min_lstm")
class MinLSTMCell(ZooCell):
    """minLSTM cell: an LSTM whose gates and candidate read only the input.

    Implements Feng et al. (2024), section 3.2, as in the lecture's equations:

        f_t  = sigmoid(W_f x_t + b_f)
        i_t  = sigmoid(W_i x_t + b_i)
        h~_t = W_h x_t + b_h
        h_t  = f_t * h_{t-1} + i_t * h~_t

    With `normalize_gates=True` the gates are replaced by
    `f'_t = f_t / (f_t + i_t)` and `i'_t = i_t / (f_t + i_t)`, Feng et al.'s
    variant (their step 3), which makes the scale of `h_t` independent of
    time. The candidate is linear (the paper's log-space code makes it
    positive; this cell does not). The kernel is fused as `[W_f | W_i | W_h]`.
    Parameters: `3 * units * (input_dim + 1)`. For whole sequences use
    `MinLSTM`, which can also run in parallel.

    Args:
        units: Positive integer, dimensionality of `h_t`.
        normalize_gates: Whether to normalize the gates to sum to one.
            Default: `False` (the lecture's equations).
        kernel_initializer: Initializer of `[W_f | W_i | W_h]`.
            Default: `"glorot_uniform"`.
        recurrent_initializer: Unused (the cell has no recurrent weights);
            accepted so that every zoo cell takes the same arguments.
        bias_initializer: Initializer of `[b_f | b_i | b_h]`. Default: `"zeros"`.

    Example:

    >>> cell = MinLSTMCell(32, normalize_gates=True)
    >>> keras.layers.RNN(cell)(np.zeros((3, 5, 4), "float32")).shape
    (3, 32)
    """

    def __init__(self, units, normalize_gates=False, **kwargs):
        check_choice("normalize_gates", normalize_gates, (False, True))
        super().__init__(units, **kwargs)
        self.normalize_gates = normalize_gates

    def build(self, input_shape):
        input_dim = self.input_dim(input_shape)
        self.kernel = self.add_kernel(input_dim, 3 * self.units)
        self.bias = self.add_bias(3 * self.units)

    def projections(self, inputs):
        """Returns both gate pre-activations and the candidate, `(..., units)` each."""
        z = ops.matmul(inputs, self.kernel) + self.bias  # [..., 3 * units]
        return ops.split(z, 3, axis=-1)

    def log_coefficients(self, inputs):
        """Returns `log f_t`, `log i_t` and `h~_t` for `log_space_scan`."""
        f, i, candidate = self.projections(inputs)
        if self.normalize_gates:
            # log f' = -softplus(log i - log f), log i' = -softplus(log f - log i)
            difference = ops.softplus(-f) - ops.softplus(-i)
            return -ops.softplus(difference), -ops.softplus(-difference), candidate
        return -ops.softplus(-f), -ops.softplus(-i), candidate

    def call(self, inputs, states, training=False):
        h_prev = states[0] if isinstance(states, (list, tuple)) else states
        f, i, candidate = self.projections(inputs)  # [batch, units] each
        f, i = ops.sigmoid(f), ops.sigmoid(i)
        if self.normalize_gates:
            total = f + i
            f, i = f / total, i / total
        h = f * h_prev + i * candidate
        return h, [h]

    def get_config(self):
        config = super().get_config()
        config["normalize_gates"] = self.normalize_gates
        return config


class _MinimalRNN(keras.layers.RNN):
    """`keras.layers.RNN` over a minimal cell, with a parallel path."""

    cell_class = None
    cell_options = ("kernel_initializer", "recurrent_initializer", "bias_initializer")

    def __init__(
        self,
        units,
        mode="auto",
        return_sequences=False,
        return_state=False,
        go_backwards=False,
        stateful=False,
        unroll=False,
        zero_output_for_mask=False,
        **kwargs,
    ):
        check_choice("mode", mode, MODES)
        options = {
            name: kwargs.pop(name) for name in self.cell_options if name in kwargs
        }
        cell = self.cell_class(
            units,
            dtype=kwargs.get("dtype"),
            trainable=kwargs.get("trainable", True),
            name=f"{self.cell_class.__name__.lower().removesuffix('cell')}_cell",
            **options,
        )
        super().__init__(
            cell,
            return_sequences=return_sequences,
            return_state=return_state,
            go_backwards=go_backwards,
            stateful=stateful,
            unroll=unroll,
            zero_output_for_mask=zero_output_for_mask,
            **kwargs,
        )
        self.units = units
        self.mode = mode
        self.parallel = mode == "parallel" or (mode == "auto" and gpu_visible())

    def inner_loop(self, sequences, initial_state, mask, training=False):
        if not self.parallel:
            return super().inner_loop(sequences, initial_state, mask, training)
        h_0 = (
            initial_state[0]
            if isinstance(initial_state, (list, tuple))
            else initial_state
        )
        if self.go_backwards:
            sequences = ops.flip(sequences, axis=1)
            mask = None if mask is None else ops.flip(mask, axis=1)
        # The scan runs in float32: its stand-in for log 0 overflows float16.
        log_a, log_gate, candidate = (
            ops.cast(c, "float32") for c in self.cell.log_coefficients(sequences)
        )  # [batch, time, units] each
        h_0 = ops.cast(h_0, "float32")
        if mask is not None:
            mask = ops.cast(  # [batch, time]
                mask[..., 0] if len(mask.shape) == 3 else mask, "bool"
            )
            step = mask[:, :, None]  # [batch, time, 1]
            # A masked step holds the state: a_t = 1, b_t = 0.
            log_a = ops.where(step, log_a, 0.0)
            candidate = ops.where(step, candidate, 0.0)
        h = log_space_scan(log_a, log_gate, candidate, h_0)  # [batch, time, units]
        outputs = h
        if mask is not None:
            # As backend.rnn: a masked step outputs zeros, or the last output,
            # which is zero until the first unmasked step.
            seen = ops.cumsum(ops.cast(mask, "int32"), axis=1) > 0  # [batch, time]
            shown = mask if self.zero_output_for_mask else seen
            outputs = ops.where(shown[:, :, None], h, 0.0)
        last_output = outputs[:, -1]  # [batch, units]
        if not self.return_sequences:
            outputs = last_output[:, None]  # [batch, 1, units]
        return last_output, outputs, [h[:, -1]]

    def get_config(self):
        config = super().get_config()
        del config["cell"]
        cell_config = self.cell.get_config()
        config.update({"units": self.units, "mode": self.mode})
        config.update({name: cell_config[name] for name in self.cell_options})
        return config

    @classmethod
    def from_config(cls, config, custom_objects=None):
        return cls(**config)


@keras.saving.register_keras_serializable(package="zoo")
class MinGRU(_MinimalRNN):
    """minGRU over a sequence, stepped or as a parallel scan in log space.

    `keras.layers.RNN` over `MinGRUCell` (Feng et al. 2024, section 3.1), so
    statefulness, masking, `go_backwards`, `return_state`, initial states and
    `Bidirectional` behave as Keras's. In parallel mode the whole sequence is
    computed at once by `log_space_scan`, with the same results (to float
    rounding) as the step-by-step loop, masked steps included.

    Args:
        units: Positive integer, dimensionality of `h_t`.
        mode: `"parallel"` (the log-space scan), `"sequential"` (Keras's loop
            over the cell) or `"auto"`: parallel when TensorFlow sees a GPU,
            sequential otherwise (on CPU the loop is faster), decided when
            the layer is constructed. Default: `"auto"`.
        return_sequences, return_state, go_backwards, stateful, unroll,
            zero_output_for_mask: as in `keras.layers.RNN`.
        **kwargs: `MinGRUCell`'s options (`kernel_initializer`,
            `recurrent_initializer`, `bias_initializer`) and `keras.Layer`'s.

    Example:

    >>> layer = MinGRU(32, mode="parallel", return_sequences=True)
    >>> layer(np.zeros((3, 5, 4), "float32")).shape
    (3, 5, 32)
    """

    cell_class = MinGRUCell


@keras.saving.register_keras_serializable(package="zoo")
class MinLSTM(_MinimalRNN):
    """minLSTM over a sequence, stepped or as a parallel scan in log space.

    `keras.layers.RNN` over `MinLSTMCell` (Feng et al. 2024, section 3.2), so
    statefulness, masking, `go_backwards`, `return_state`, initial states and
    `Bidirectional` behave as Keras's. In parallel mode the whole sequence is
    computed at once by `log_space_scan`, with the same results (to float
    rounding) as the step-by-step loop, masked steps included.

    Args:
        units: Positive integer, dimensionality of `h_t`.
        mode: `"parallel"` (the log-space scan), `"sequential"` (Keras's loop
            over the cell) or `"auto"`: parallel when TensorFlow sees a GPU,
            sequential otherwise (on CPU the loop is faster), decided when
            the layer is constructed. Default: `"auto"`.
        return_sequences, return_state, go_backwards, stateful, unroll,
            zero_output_for_mask: as in `keras.layers.RNN`.
        **kwargs: `MinLSTMCell`'s options (`normalize_gates`,
            `kernel_initializer`, `recurrent_initializer`, `bias_initializer`)
            and `keras.Layer`'s.

    Example:

    >>> layer = MinLSTM(32, normalize_gates=True)
    >>> layer(np.zeros((3, 5, 4), "float32")).shape
    (3, 32)
    """

    cell_class = MinLSTMCell
    cell_options = ("normalize_gates", *_MinimalRNN.cell_options)


MinGRUCell.sequence_layer = MinGRU
MinLSTMCell.sequence_layer = MinLSTM
