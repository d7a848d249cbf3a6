"""The DiffStk cells of Mali et al. (2020, section 3): a controller with a stack.

Each DiffStk cell wraps a controller cell (an RNN, LSTM, mRNN, mLSTM or
MI-RNN, each the zoo's or Keras's own cell) with the same stack and options:
the read term added to the previous state, the scaled tanh `f1`, Gaussian
state noise during training and the carry-forward update on repeated NO-OPs.
The stack is the `DifferentiableStack` of `zoo.layers.differentiable_stack`, held by the
base `zoo.cells.stack_cell.StackCell`; the state is flat, `[z, (c,) stack,
no-op counter]`.
"""

import functools

import keras
from keras import ops

from zoo.cells.multiplicative import MultiplicativeLSTMCell, MultiplicativeRNNCell
from zoo.cells.multiplicative_integration import MIRNNCell
from zoo.cells.stack_cell import StackCell
from zoo.checks import check_choice, check_number
from zoo.layers.differentiable_stack import NO_OP
from zoo.registry import register_cell

LECUN_TANH_SCALE = 1.7159


def scaled_tanh(x, scale=LECUN_TANH_SCALE):
    """Returns `f1(x) = scale * tanh(2/3 x)` (Mali et al. eq. 2; LeCun et al.)."""
    return scale * ops.tanh(x * (2.0 / 3.0))


CARRY_FORWARD_MODES = ("soft", "hard")


def carry_forward_mode(carry_forward):
    """Returns `"soft"`, `"hard"` or `False` for a `carry_forward` argument.

    `True` (the literal eq. 12, what configs saved before the soft reading
    hold) is `"hard"`; `False` and `None` turn the update off.
    """
    if carry_forward is True:
        return "hard"
    if carry_forward is False or carry_forward is None:
        return False
    check_choice("carry_forward", carry_forward, (*CARRY_FORWARD_MODES, False))
    return carry_forward


class DiffStkCell(StackCell):
    """Base class of the DiffStk cells: a controller cell with a stack.

    A subclass creates its controller in its own `__init__`, after
    `super().__init__`, and hands it to `set_controller`: a cell whose first
    state is its hidden state `z` and whose output is `z`. See
    `DiffStkRNNCell` for the equations and the arguments.
    """

    def __init__(
        self,
        units,
        activation_scale=LECUN_TANH_SCALE,
        noise_mean=0.0,
        noise_stddev=0.0,
        carry_forward="soft",
        carry_sharpness=4.0,
        seed=None,
        **kwargs,
    ):
        check_number("activation_scale", activation_scale, 0.0, low_open=True)
        check_number("noise_mean", noise_mean)
        check_number("noise_stddev", noise_stddev, 0.0)
        carry_forward = carry_forward_mode(carry_forward)
        check_number("carry_sharpness", carry_sharpness, 0.0, low_open=True)
        if carry_forward and not kwargs.get("use_noop", True):
            raise ValueError(
                "`carry_forward` needs NO-OP actions: expected use_noop=True or "
                f"carry_forward=False; received use_noop=False with "
                f"carry_forward={carry_forward!r}."
            )
        super().__init__(units, **kwargs)
        self.activation_scale = activation_scale
        self.noise_mean = noise_mean
        self.noise_stddev = noise_stddev
        self.carry_forward = carry_forward
        self.carry_sharpness = carry_sharpness
        self.seed = seed
        self.seed_generator = keras.random.SeedGenerator(seed)
        # Set for one step of the loop on JAX (`diffstk_jax.noise_key_loop`).
        self.step_key = None
        self.f1 = functools.partial(scaled_tanh, scale=activation_scale)
        self.controller = None

    @property
    def has_noise(self):
        """Whether training adds state noise (`noise_mean` or `noise_stddev`)."""
        return self.noise_stddev > 0 or self.noise_mean != 0

    def state_noise(self, shape, dtype):
        """`N(noise_mean, noise_stddev^2)` noise of `shape` for one step.

        From `step_key` when the loop set one (JAX, where a seed
        generator cannot advance inside the loop), else from the cell's seed
        generator.
        """
        if self.step_key is None:
            return keras.random.normal(
                shape,
                mean=self.noise_mean,
                stddev=self.noise_stddev,
                dtype=dtype,
                seed=self.seed_generator,
            )
        import jax

        sample = jax.random.normal(self.step_key, shape, dtype=dtype)
        return sample * self.noise_stddev + self.noise_mean

    def set_controller(self, controller):
        """Adopts the controller cell and sets the state size around it."""
        self.controller = controller
        controller_states = len(keras.tree.flatten(controller.state_size))
        self.state_size = [self.units] * controller_states + [
            self.stack.state_size,
            1,
        ]

    def controller_options(self):
        """Returns the options every controller takes: units, initializers, f1."""
        return {
            "units": self.units,
            "activation": self.f1,
            "kernel_initializer": self.kernel_initializer,
            "recurrent_initializer": self.recurrent_initializer,
            "bias_initializer": self.bias_initializer,
            "name": "controller",
        }

    def build(self, input_shape):
        self.input_dim(input_shape)
        self.build_part(self.controller, input_shape)
        self.build_part(self.stack, (None, self.units))

    def step(self, inputs, states, training=False):
        z_prev, *cells_prev = states[:-2]
        stack, counter = states[-2:]
        z_hat = z_prev + self.stack.read(stack)  # eqs. 5, 9: [batch, units]
        if training and self.has_noise:
            z_hat = z_hat + self.state_noise(ops.shape(z_hat), z_hat.dtype)
        candidate, controller_states = self.controller.call(
            inputs, [z_hat, *cells_prev], training=training
        )  # z~_t: [batch, units]
        cells = list(controller_states[1:])
        actions = self.stack.actions(candidate)  # eq. 6: [batch, num_actions]
        new_stack = self.stack.update(stack, actions, candidate)  # eqs. 7-8
        z = candidate
        if self.carry_forward == "hard":
            # eq. 12 as printed: u_t = 0 on the second and later consecutive
            # steps whose most probable action is NO-OP; carries z^_{t-1}.
            is_noop = ops.cast(ops.argmax(actions, axis=-1) == NO_OP, z.dtype)
            counter = (counter + 1.0) * is_noop[:, None]  # [batch, 1]
            keep = ops.cast(counter > 1.0, z.dtype)  # [batch, 1], 1 - u_t
            z = keep * z_hat + (1.0 - keep) * candidate
            cells = [
                keep * p + (1.0 - keep) * c
                for p, c in zip(cells_prev, cells, strict=True)
            ]
        elif self.carry_forward == "soft":
            # c_t = a_t[NO-OP] (c_{t-1} + 1), 1 - u_t = a_t[NO-OP] h(c_t);
            # carries z_{t-1}, so z_t stays within f1's bound.
            noop = actions[:, NO_OP : NO_OP + 1]  # [batch, 1]
            counter = noop * (counter + 1.0)  # [batch, 1]
            keep = noop * ops.sigmoid(self.carry_sharpness * (counter - 1.5))
            z = keep * z_prev + (1.0 - keep) * candidate
            cells = [
                keep * p + (1.0 - keep) * c
                for p, c in zip(cells_prev, cells, strict=True)
            ]
        return z, [z, *cells, new_stack, counter], actions

    def stack_state(self, states):
        return states[-2]

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "activation_scale": self.activation_scale,
                "noise_mean": self.noise_mean,
                "noise_stddev": self.noise_stddev,
                "carry_forward": self.carry_forward,
                "carry_sharpness": self.carry_sharpness,
                "seed": self.seed,
            }
        )
        return config


@register_cell("diffstk_rnn")
class DiffStkRNNCell(DiffStkCell):
    """DiffStk-RNN cell: an RNN controlling a differentiable stack.

    Implements Mali et al. (2020) eqs. 5-9 and a carry-forward update
    (eq. 12, read as below), with biases:

        z^_{t-1} = z_{t-1} + P S_{t-1}[0:read_depth] + eps,
                   eps ~ N(noise_mean, noise_stddev^2), training only
        z~_t     = f1(U x_t + R z^_{t-1} + b),   f1(x) = scale tanh(2/3 x)
        a_t      = softmax(A z~_t + b_A)                 (PUSH, POP, NO-OP)
        S_t      = stack update of eqs. 7-8, pushing sigmoid(D z~_t + b_D)
        z_t      = u_t z~_t + (1 - u_t) carried

    Carry-forward. The paper prints `z_t = u_t f1(U x_t + R z^_{t-1}) +
    (1 - u_t) z^_{t-1}` with `u_t = 0` when the step is a NO-OP and a
    counter of NO-OPs `c_t > 1`, else 1; its prose carries "the previous
    hidden state" and bases the counter on the stack. Read literally
    (`carry_forward="hard"`): `c_t = c_{t-1} + 1` if argmax a_t is NO-OP
    else 0, `u_t = 0` iff `c_t > 1`, carried = `z^_{t-1}`. That decision has
    no gradient, so training cannot move the controller out of it: an
    untrained controller often picks NO-OP on most steps and then copies
    `z^_{t-1}`, read term included, step after step, which lets the state
    grow past f1's bound. The default `carry_forward="soft"` is a
    differentiable reading of the same rule:

        c_t     = a_t[NO-OP] (c_{t-1} + 1)         (a soft count of NO-OPs)
        1 - u_t = a_t[NO-OP] sigmoid(carry_sharpness (c_t - 1.5))
        carried = z_{t-1}

    With one-hot actions and a large `carry_sharpness` it is eq. 12's rule
    (update on the first NO-OP, carry from the second); the threshold 1.5
    lies between those two counts. It carries `z_{t-1}` as the prose says,
    so `z_t`, a convex combination of f1 outputs, stays within
    `activation_scale`; the gradient reaches `A` through `u_t`.
    `carry_forward=False` turns the update off (`z_t = z~_t`); `True`, what
    configs saved before the soft reading hold, means `"hard"`.

    Other differences from the paper: `f1`'s scale is `activation_scale`,
    default 1.7159 (LeCun et al.'s constant; the paper prints 1.7519). The
    paper decides `u_t` from "the" action of step t, which eq. 6 computes
    from `z_t` itself; here the action and the pushed value come from the
    candidate `z~_t`, so a carried-forward step still reads its input. The
    counter `c_t` is the last entry of the state, a float. The noise mean
    and standard deviation are not given in the paper: the noise is off by
    default. A carried-forward step keeps the controller's other states
    (the LSTM cell `c`) in the same proportion. The stack is
    `zoo.layers.differentiable_stack.DifferentiableStack`: empty value -1 (Joulin &
    Mikolov; Mali et al. do not state one) and NO-OP kept at every depth.
    The state is `[z, stack, counter]`.

    Args:
        units: Positive integer, dimensionality of `z_t`.
        stack_depth: Positive integer, number of stack elements. Default: 64.
        stack_width: Positive integer, entries per element. Default: 1.
        read_depth: Positive integer, number of top elements read through
            `P`. Default: 1. Mali et al. read "the top-most element"
            `S_{t-1}[0]` through `P`, "m x 3", which fits elements of 3
            entries (`stack_width`; their `D`, "1 x m", would make them
            scalars). Their recipes here read the top element of 5 entries,
            the `memory_dim` of Suzgun et al.'s (2019) Stack-RNN: with 3
            entries, or the top 3 scalars, the controller did not learn D2
            (see docs/stack-training.md).
        use_noop: Whether the actions include NO-OP; `carry_forward` needs
            it. Default: `True`.
        empty_value: Value of an empty element. Default: -1.0.
        activation_scale: Positive scale of `f1`. Default: 1.7159.
        noise_mean: Mean of the state noise. Default: 0.0.
        noise_stddev: Standard deviation of the state noise; with it and
            `noise_mean` both 0 there is no noise. Default: 0.0.
        carry_forward: `"soft"`, `"hard"` (eq. 12 as printed) or `False`.
            Default: `"soft"`.
        carry_sharpness: Positive slope of the soft count's threshold.
            Default: 4.0 (about 0.12 carried on a first NO-OP, 0.88 on a
            second).
        seed: Integer seed of the noise (not of the initial weights: seed
            the initializers for those). Default: `None`.
        kernel_initializer: Initializer of `U`, `A`, `D` and `P`, each
            drawn from its own seed (see `zoo.cells.zoo_cell.ZooCell`; the
            controller's weights are named `controller/...`, the stack's
            `stack/...`).
        recurrent_initializer: Initializer of `R`.
        bias_initializer: Initializer of `b`, `b_A` and `b_D`.

    Example:

    >>> cell = DiffStkRNNCell(8, stack_depth=32, noise_stddev=0.1)
    >>> keras.layers.RNN(cell)(np.zeros((3, 5, 4), "float32")).shape
    (3, 8)
    """

    def __init__(self, units, **kwargs):
        super().__init__(units, **kwargs)
        self.set_controller(keras.layers.SimpleRNNCell(**self.controller_options()))


@register_cell("diffstk_lstm")
class DiffStkLSTMCell(DiffStkCell):
    """DiffStk-LSTM cell: Keras's LSTM cell controlling a differentiable stack.

    Implements Mali et al. (2020) eqs. 13-18 with the stack of eqs. 5-9 and
    the carry-forward of eq. 12, with biases: `z^_{t-1} = z_{t-1} + P S_{t-1}
    [0:read_depth] (+ eps)` is the previous hidden state of
    `keras.layers.LSTMCell`, whose activation is `f1` (the gates stay
    sigmoid):

        i, f, o = sigmoid(U_{i,f,o} x_t + R_{i,f,o} z^_{t-1} + b_{i,f,o})
        c_t     = f * c_{t-1} + i * f1(U x_t + R z^_{t-1} + b)
        z~_t    = f1(c_t) * o

    A carried-forward step keeps `c_{t-1}` (in proportion `1 - u_t`).
    Everything else, and the
    differences from the paper, as in `DiffStkRNNCell`. The state is
    `[z, c, stack, counter]`.

    Args:
        units: Positive integer, dimensionality of `z_t` and `c_t`.
        unit_forget_bias: Whether to add 1 to the initial forget-gate bias
            (Keras's default). Default: `True`.
        **kwargs: The arguments of `DiffStkRNNCell`.

    Example:

    >>> cell = DiffStkLSTMCell(8, stack_depth=32)
    >>> keras.layers.RNN(cell)(np.zeros((3, 5, 4), "float32")).shape
    (3, 8)
    """

    def __init__(self, units, unit_forget_bias=True, **kwargs):
        super().__init__(units, **kwargs)
        self.unit_forget_bias = unit_forget_bias
        self.set_controller(
            keras.layers.LSTMCell(
                unit_forget_bias=unit_forget_bias, **self.controller_options()
            )
        )

    def get_config(self):
        config = super().get_config()
        config["unit_forget_bias"] = self.unit_forget_bias
        return config


@register_cell("diffstk_mrnn")
class DiffStkMRNNCell(DiffStkCell):
    """DiffStk-MRNN cell: a multiplicative RNN controlling a differentiable stack.

    Implements Mali et al. (2020) eqs. 19-21 with the stack of eqs. 5-9 and
    the carry-forward of eq. 12: `z^_{t-1}` is the previous state of
    `zoo.cells.multiplicative.MultiplicativeRNNCell` with activation `f1`:

        m_t  = (W_mx x_t) * (W_mz z^_{t-1})
        z~_t = f1(W_zm m_t + W_zx x_t + b)

    The paper's eq. 21 repeats eq. 20 with other names; we read eqs. 19-21
    as one mRNN step (Krause et al. 2016). Everything else, and the
    differences from the paper, as in `DiffStkRNNCell`. The state is
    `[z, stack, counter]`.

    Args:
        units: Positive integer, dimensionality of `z_t` and `m_t`.
        **kwargs: The arguments of `DiffStkRNNCell`.

    Example:

    >>> cell = DiffStkMRNNCell(8, stack_depth=32)
    >>> keras.layers.RNN(cell)(np.zeros((3, 5, 4), "float32")).shape
    (3, 8)
    """

    def __init__(self, units, **kwargs):
        super().__init__(units, **kwargs)
        self.set_controller(MultiplicativeRNNCell(**self.controller_options()))


@register_cell("diffstk_mlstm")
class DiffStkMLSTMCell(DiffStkCell):
    """DiffStk-MLSTM cell: a multiplicative LSTM controlling a differentiable stack.

    Implements Mali et al. (2020) eqs. 22-26 with the stack of eqs. 5-9 and
    the carry-forward of eq. 12: `z^_{t-1}` is the previous hidden state of
    `zoo.cells.multiplicative.MultiplicativeLSTMCell` with activation `f1`:

        m_t     = (U_m x_t) * (R_m z^_{t-1})
        i, f, o = sigmoid(U_{i,f,o} x_t + R_{i,f,o}m m_t + b_{i,f,o})
        c_t     = f * c_{t-1} + i * f1(U x_t + R_z m_t + b)
        z~_t    = f1(c_t) * o

    The paper leaves the cell update to "similar" to eqs. 17-18; we use them.
    A carried-forward step keeps `c_{t-1}` (in proportion `1 - u_t`).
    Everything else, and the
    differences from the paper, as in `DiffStkRNNCell`. The state is
    `[z, c, stack, counter]`.

    Args:
        units: Positive integer, dimensionality of `z_t`, `c_t` and `m_t`.
        forget_bias: Initial value added to the forget-gate bias.
            Default: 1.0.
        weight_normalization: Whether to weight-normalize the recurrent
            kernels. Default: `False`.
        **kwargs: The arguments of `DiffStkRNNCell`.

    Example:

    >>> cell = DiffStkMLSTMCell(8, stack_depth=32, forget_bias=3.0)
    >>> keras.layers.RNN(cell)(np.zeros((3, 5, 4), "float32")).shape
    (3, 8)
    """

    def __init__(self, units, forget_bias=1.0, weight_normalization=False, **kwargs):
        check_number("forget_bias", forget_bias)
        super().__init__(units, **kwargs)
        self.forget_bias = forget_bias
        self.weight_normalization = weight_normalization
        self.set_controller(
            MultiplicativeLSTMCell(
                forget_bias=forget_bias,
                weight_normalization=weight_normalization,
                **self.controller_options(),
            )
        )

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "forget_bias": self.forget_bias,
                "weight_normalization": self.weight_normalization,
            }
        )
        return config


@register_cell("diffstk_mirnn")
class DiffStkMIRNNCell(DiffStkCell):
    """DiffStk-MIRNN cell: a multiplicative-integration RNN with a stack.

    Implements Mali et al. (2020) eq. 27 with the stack of eqs. 5-9 and the
    carry-forward of eq. 12: `z^_{t-1}` is the previous state of
    `zoo.cells.multiplicative_integration.MIRNNCell` with activation `f1`:

        z~_t = f1(alpha * (U x_t) * (R z^_{t-1}) + beta1 * (R z^_{t-1})
                  + beta2 * (U x_t) + b)

    Eq. 27 is the special case alpha = 1, beta1 = beta2 = 0, b = 0; we use
    Wu et al.'s (2016) general form with trainable `alpha`, `beta1`,
    `beta2`, initialized as `MIRNNCell` does (1, 0.5, 0.5). Everything else,
    and the differences from the paper, as in `DiffStkRNNCell`. The state
    is `[z, stack, counter]`.

    Args:
        units: Positive integer, dimensionality of `z_t`.
        **kwargs: The arguments of `DiffStkRNNCell`.

    Example:

    >>> cell = DiffStkMIRNNCell(8, stack_depth=32)
    >>> keras.layers.RNN(cell)(np.zeros((3, 5, 4), "float32")).shape
    (3, 8)
    """

    def __init__(self, units, **kwargs):
        super().__init__(units, **kwargs)
        self.set_controller(MIRNNCell(**self.controller_options()))
