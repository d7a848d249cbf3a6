"""The base of the stack-augmented cells, and tracing what a stack cell does.

`StackCell` holds the one `DifferentiableStack` of
`zoo.layers.differentiable_stack` and the
options every stack cell shares; `zoo.cells.stack_rnn.StackRNNCell` and the
DiffStk cells of `zoo.cells.diffstk` derive from it. `trace_stack` runs a
built stack cell over a sequence and returns its per-step action
probabilities and stack tops, for inspecting a trained model.
"""

from keras import ops

from zoo.cells.zoo_cell import ZooCell
from zoo.layers.differentiable_stack import DifferentiableStack


class StackCell(ZooCell):
    """Base of the stack cells: holds the `DifferentiableStack` and its options.

    A subclass sets `state_size`, implements `step` (one step that also
    returns the action probabilities) and `stack_state` (where the flat stack
    is in its states); see `StackRNNCell` and `DiffStkCell`.
    """

    def __init__(
        self,
        units,
        stack_depth=64,
        stack_width=1,
        read_depth=1,
        use_noop=True,
        empty_value=-1.0,
        **kwargs,
    ):
        super().__init__(units, **kwargs)
        # The stack checks its own arguments (one place for those checks).
        self.stack = DifferentiableStack(
            units,
            depth=stack_depth,
            width=stack_width,
            read_depth=read_depth,
            use_noop=use_noop,
            empty_value=empty_value,
            kernel_initializer=self.kernel_initializer,
            bias_initializer=self.bias_initializer,
            name="stack",
        )
        self.stack_depth = stack_depth
        self.stack_width = stack_width
        self.read_depth = read_depth
        self.use_noop = use_noop
        self.empty_value = empty_value

    def step(self, inputs, states, training=False):
        """Returns `(output, new_states, actions)` for one step."""
        raise NotImplementedError

    def call(self, inputs, states, training=False):
        output, new_states, _ = self.step(inputs, states, training=training)
        return output, new_states

    def stack_state(self, states):
        """Returns the flat stack in `states`."""
        raise NotImplementedError

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "stack_depth": self.stack_depth,
                "stack_width": self.stack_width,
                "read_depth": self.read_depth,
                "use_noop": self.use_noop,
                "empty_value": self.empty_value,
            }
        )
        return config


def trace_stack(cell, inputs, initial_state=None, training=False):
    """Runs a stack cell over `inputs` and returns what it did at each step.

    For inspecting a (trained) stack cell: steps the cell in a Python loop
    and collects, for every step, the action probabilities (PUSH, POP[,
    NO-OP], in the order of `zoo.layers.differentiable_stack`) and the top of the stack
    after the step's update.

    Args:
        cell: A `StackRNNCell` or DiffStk cell (built or not).
        inputs: Float sequences `(batch, time, features)`, the cell's inputs
            (for a recognizer, the embedded tokens: see
            `zoo.trace_recognizer`).
        initial_state: The cell's states; default: the zero (empty) state.
        training: Passed to the cell (state noise). Default: `False`.

    Returns:
        A dict of tensors: `"actions"` `(batch, time, num_actions)`,
        `"stack_top"` `(batch, time, stack_width)` and `"outputs"`
        `(batch, time, units)`.

    Example:

    >>> trace = trace_stack(StackRNNCell(8, stack_depth=16), np.ones((3, 5, 4)))
    >>> trace["actions"].shape, trace["stack_top"].shape
    ((3, 5, 2), (3, 5, 1))
    """
    if not isinstance(cell, StackCell):
        raise ValueError(
            "`cell` must be a stack cell (StackRNNCell or a DiffStk cell); "
            f"received {type(cell).__name__}."
        )
    inputs = ops.convert_to_tensor(inputs, dtype=cell.compute_dtype)
    if len(inputs.shape) != 3:
        raise ValueError(
            "`inputs` must have shape (batch, time, features); received "
            f"shape {tuple(inputs.shape)}."
        )
    if not cell.built:
        cell.build((None, inputs.shape[-1]))
    batch = ops.shape(inputs)[0]
    states = initial_state
    if states is None:
        states = [
            ops.zeros((batch, size), cell.compute_dtype) for size in cell.state_size
        ]
    actions, tops, outputs = [], [], []
    for t in range(inputs.shape[1]):
        output, states, step_actions = cell.step(inputs[:, t], states, training)
        actions.append(step_actions)
        tops.append(cell.stack.top(cell.stack_state(states)))
        outputs.append(output)
    return {
        "actions": ops.stack(actions, axis=1),
        "stack_top": ops.stack(tops, axis=1),
        "outputs": ops.stack(outputs, axis=1),
    }
