"""Joulin & Mikolov's (2015) stack-augmented RNN (StackRNN).

The state is flat, `[h, stack]`; the stack is the `DifferentiableStack` of
`zoo.layers.differentiable_stack`, held by the base `zoo.cells.stack_cell.StackCell`.
"""

import keras
from keras import ops

from zoo.cells.stack_cell import StackCell
from zoo.registry import register_cell


@register_cell("stack_rnn")
class StackRNNCell(StackCell):
    """Joulin & Mikolov's (2015) stack-augmented RNN (StackRNN) cell.

    Implements section 3.1 of Joulin & Mikolov (Mali et al. 2020, eqs. 4,
    6-8), with biases:

        h_t = sigmoid(U x_t + R h_{t-1} + P S_{t-1}[0:read_depth] + b)
        a_t = softmax(A h_t + b_A)                  (PUSH, POP[, NO-OP])
        S_t = stack update of eqs. 7-8, pushing sigmoid(D h_t + b_D)

    The controller reads the top `read_depth` elements (the paper's `k`) of
    the stack before this step's update; the stack is
    `zoo.layers.differentiable_stack.DifferentiableStack` (empty value -1 as
    in the paper).
    The state is `[h, stack]`, the stack flat with `stack_depth *
    stack_width` entries.

    Args:
        units: Positive integer, dimensionality of `h_t`.
        stack_depth: Positive integer, number of stack elements. Default: 64.
        stack_width: Positive integer, entries per element. Default: 1.
        read_depth: Positive integer, number of top elements read through
            `P`. Default: 1.
        use_noop: Whether the actions include NO-OP. Default: `False`
            (the paper's main model has PUSH and POP).
        empty_value: Value of an empty element. Default: -1.0.
        activation: Activation of `h_t`. Default: `"sigmoid"`.
        use_bias: Whether to add `b`. Default: `True`.
        kernel_initializer: Initializer of `U`, `A`, `D` and `P`, each
            drawn from its own seed (see `zoo.cells.zoo_cell.ZooCell`).
        recurrent_initializer: Initializer of `R`.
        bias_initializer: Initializer of `b`, `b_A` and `b_D`.

    Example:

    >>> cell = StackRNNCell(32, stack_depth=16)
    >>> keras.layers.RNN(cell)(np.zeros((3, 5, 4), "float32")).shape
    (3, 32)
    """

    def __init__(
        self, units, use_noop=False, activation="sigmoid", use_bias=True, **kwargs
    ):
        super().__init__(units, use_noop=use_noop, **kwargs)
        self.activation = keras.activations.get(activation)
        self.use_bias = use_bias
        self.state_size = [units, self.stack.state_size]

    def build(self, input_shape):
        input_dim = self.input_dim(input_shape)
        self.kernel = self.add_kernel(input_dim, self.units)
        self.recurrent_kernel = self.add_recurrent_kernel(self.units)
        self.bias = self.add_bias(self.units)
        self.build_part(self.stack, (None, self.units))

    def step(self, inputs, states, training=False):
        h_prev, stack = states
        z = ops.matmul(inputs, self.kernel) + ops.matmul(h_prev, self.recurrent_kernel)
        z = z + self.stack.read(stack)  # [batch, units]
        if self.bias is not None:
            z = z + self.bias
        h = self.activation(z)
        actions = self.stack.actions(h)  # [batch, num_actions]
        stack = self.stack.update(stack, actions, h)  # [batch, depth * width]
        return h, [h, stack], actions

    def stack_state(self, states):
        return states[1]

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "activation": keras.activations.serialize(self.activation),
                "use_bias": self.use_bias,
            }
        )
        return config
