"""The continuous stack of stack-augmented RNNs (Joulin & Mikolov 2015).

One implementation, shared by every stack cell (`zoo.cells.stack_cell`): the
controller's state `z_t` chooses soft actions `a_t = softmax(A z_t)` over
PUSH, POP and optionally NO-OP, pushes `sigmoid(D z_t)` and reads the top
elements back through `P` (Mali et al. 2020, eqs. 5-8).

`stack_update` is the update of every depth as a pure function: a weighted
sum of the stack shifted down (PUSH), shifted up (POP) and unchanged (NO-OP),
so a step costs `O(depth * width)`.
"""

import keras
from keras import ops

from zoo.checks import check_number, check_positive_int
from zoo.initializers import IndependentWeights

PUSH, POP, NO_OP = 0, 1, 2


def stack_update(stack, actions, pushed, empty_value=0.0):
    """Returns the stack after the soft actions `actions` (eqs. 7-8).

    Args:
        stack: Tensor `(batch, depth, width)`, element 0 is the top.
        actions: Tensor `(batch, 2)` (PUSH, POP) or `(batch, 3)` (PUSH, POP,
            NO-OP) of action probabilities.
        pushed: Tensor `(batch, width)`, the value a PUSH puts on top.
        empty_value: The value a POP moves into the bottom element.

    With one-hot actions this is a discrete stack of bounded depth: a PUSH on
    a full stack drops its bottom element, a POP on an empty stack leaves it
    empty (the top becomes `empty_value`).
    """
    bottom = ops.full_like(stack[:, :1], empty_value)  # [batch, 1, width]
    pushed = ops.expand_dims(pushed, 1)  # [batch, 1, width]
    after_push = ops.concatenate([pushed, stack[:, :-1]], axis=1)
    after_pop = ops.concatenate([stack[:, 1:], bottom], axis=1)
    weights = ops.expand_dims(ops.expand_dims(actions, -1), -1)  # [b, n, 1, 1]
    new_stack = weights[:, PUSH] * after_push + weights[:, POP] * after_pop
    if actions.shape[-1] == 3:
        new_stack = new_stack + weights[:, NO_OP] * stack
    return new_stack


@keras.saving.register_keras_serializable(package="zoo")
class DifferentiableStack(IndependentWeights, keras.Layer):
    """A continuous stack driven by a recurrent controller's state.

    Holds the stack's weights and applies eqs. 6-8 of Mali et al. (2020)
    (Joulin & Mikolov 2015, section 3.1):

        a_t      = softmax(A z_t + b_A)              (PUSH, POP[, NO-OP])
        S_t[0]   = a_push sigmoid(D z_t + b_D) + a_pop S_{t-1}[1]
                   + a_noop S_{t-1}[0]
        S_t[i]   = a_push S_{t-1}[i-1] + a_pop S_{t-1}[i+1] + a_noop S_{t-1}[i]

    and the read term `P S_{t-1}[0:read_depth]` the cells add to their
    controller. Differences from the papers: the NO-OP term is kept at every
    depth (Mali et al.'s eq. 8 prints it only at the top, which would erase
    the stack below the top on a NO-OP; Joulin & Mikolov keep it); the
    stack has a finite `depth`, a PUSH drops the bottom element; a POP moves
    `empty_value` into the bottom, -1 as in Joulin & Mikolov (Mali et al. do
    not state one). Elements have `width` entries (1 in both papers).

    The stack is a flat recurrent state of `depth * width` entries holding
    `S - empty_value`, so the zero state Keras creates (and `reset_state`
    restores) is the empty stack. `read`, `top` and `update` take and return
    that flat state.

    Args:
        units: Positive integer, size of the controller state `z_t`.
        depth: Positive integer, number of stack elements. Default: 64.
        width: Positive integer, entries per element. Default: 1.
        read_depth: Positive integer, number of top elements read through
            `P`, at most `depth`. Default: 1.
        use_noop: Whether the actions include NO-OP. Default: `True`.
        empty_value: Value of an empty element. Default: -1.0.
        use_bias: Whether `A` and `D` have biases. Default: `True`.
        kernel_initializer: Initializer of `A`, `D` and `P`.
        bias_initializer: Initializer of `b_A` and `b_D`.

    Each weight draws from a seed of its own (`zoo.initializers`), derived
    from the layer's and the weight's name: `A`, `D` and `P` start
    independent though one initializer serves them. Inside a stack cell the
    layer's seed is the cell's, its weights named `stack/...`.

    Example:

    >>> stack = DifferentiableStack(8, depth=16)
    >>> stack.build((None, 8))
    >>> state = np.zeros((3, stack.state_size), "float32")
    >>> new_state, actions = stack(np.ones((3, 8), "float32"), state)
    >>> new_state.shape, actions.shape
    ((3, 16), (3, 3))
    """

    def __init__(
        self,
        units,
        depth=64,
        width=1,
        read_depth=1,
        use_noop=True,
        empty_value=-1.0,
        use_bias=True,
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        **kwargs,
    ):
        check_positive_int("units", units)
        check_positive_int("depth", depth)
        check_positive_int("width", width)
        check_positive_int("read_depth", read_depth)
        if read_depth > depth:
            raise ValueError(
                f"`read_depth` must be at most `depth` ({depth}); "
                f"received {read_depth!r}."
            )
        check_number("empty_value", empty_value)
        super().__init__(**kwargs)
        self.units = units
        self.depth = depth
        self.width = width
        self.read_depth = read_depth
        self.use_noop = use_noop
        self.empty_value = empty_value
        self.use_bias = use_bias
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.bias_initializer = keras.initializers.get(bias_initializer)
        self.num_actions = 3 if use_noop else 2
        self.state_size = depth * width

    def build(self, input_shape=None):
        self.action_kernel = self.add_weight(
            shape=(self.units, self.num_actions),
            initializer=self.kernel_initializer,
            name="action_kernel",
        )
        self.push_kernel = self.add_weight(
            shape=(self.units, self.width),
            initializer=self.kernel_initializer,
            name="push_kernel",
        )
        self.read_kernel = self.add_weight(
            shape=(self.read_depth * self.width, self.units),
            initializer=self.kernel_initializer,
            name="read_kernel",
        )
        self.action_bias = self.push_bias = None
        if self.use_bias:
            self.action_bias = self.add_weight(
                shape=(self.num_actions,),
                initializer=self.bias_initializer,
                name="action_bias",
            )
            self.push_bias = self.add_weight(
                shape=(self.width,), initializer=self.bias_initializer, name="push_bias"
            )

    def read(self, stack):
        """Returns `P S[0:read_depth]`, shape `(batch, units)`."""
        top = stack[:, : self.read_depth * self.width] + self.empty_value
        return ops.matmul(top, self.read_kernel)

    def top(self, stack):
        """Returns the top element `S[0]`, shape `(batch, width)`."""
        return stack[:, : self.width] + self.empty_value

    def actions(self, z):
        """Returns `a = softmax(A z + b_A)`, shape `(batch, num_actions)`."""
        logits = ops.matmul(z, self.action_kernel)
        if self.action_bias is not None:
            logits = logits + self.action_bias
        return ops.softmax(logits, axis=-1)

    def update(self, stack, actions, z):
        """Returns the flat stack after `actions`, pushing `sigmoid(D z + b_D)`."""
        pushed = ops.matmul(z, self.push_kernel)  # [batch, width]
        if self.push_bias is not None:
            pushed = pushed + self.push_bias
        pushed = ops.sigmoid(pushed) - self.empty_value
        # Stored as S - empty_value: the empty value is 0 in this frame.
        stack = ops.reshape(stack, (-1, self.depth, self.width))
        stack = stack_update(stack, actions, pushed, empty_value=0.0)
        return ops.reshape(stack, (-1, self.depth * self.width))

    def call(self, z, stack):
        actions = self.actions(z)  # [batch, num_actions]
        return self.update(stack, actions, z), actions

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "units": self.units,
                "depth": self.depth,
                "width": self.width,
                "read_depth": self.read_depth,
                "use_noop": self.use_noop,
                "empty_value": self.empty_value,
                "use_bias": self.use_bias,
                "kernel_initializer": keras.initializers.serialize(
                    self.kernel_initializer
                ),
                "bias_initializer": keras.initializers.serialize(self.bias_initializer),
            }
        )
        return config
