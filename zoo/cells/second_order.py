"""The second-order LSTM (the CS224N second-order LSTM report, section 3.2).

`S` LSTM cells with their own weights read every input; a routing weight
`alpha_t` over the cells mixes their new states. The attention model learns
`alpha_t = softmax(V x_t / tau)` and anneals the temperature `tau` (a
non-trainable weight, see `training.core.callbacks.TemperatureAnnealing` and
`set_temperature`); the assignment model routes each token id to one cell
through a fixed table (`assignment_from_embedding` builds one by k-means).
"""

import keras
import numpy as np
from keras import ops

from zoo.cells.zoo_cell import LSTMGates, ZooCell, blockwise_initializer
from zoo.checks import check_choice, check_number, check_positive_int
from zoo.registry import register_cell
from zoo.walk import walk_layers


@register_cell("second_order_lstm")
class SecondOrderLSTMCell(LSTMGates, ZooCell):
    """Second-order LSTM cell: `S` LSTM cells mixed by an input-dependent routing.

    Implements the second-order LSTM report's eqs. (a)-(e):

        e_t            = V x_t                                      (a)
        alpha_t        = softmax(e_t / tau)                         (b)
        h^s_t, c^s_t   = LSTMCell^s(x_t, (h_{t-1}, c_{t-1}))        (c)
        h_t            = sum_s alpha_{t,s} h^s_t                    (d)
        c_t            = sum_s alpha_{t,s} c^s_t                    (e)

    Each `LSTMCell^s` is Keras's LSTM step (gate order i, f, c, o; biases;
    `forget_bias` added to the forget gates). The `S` cells' pre-activations
    are two fused products, `x_t [d, S * 4u]` and `h_{t-1} [u, S * 4u]`
    (faster than `S` separate cells on CPU). `tau` is the non-trainable weight
    `temperature`, annealed per epoch by
    `training.core.callbacks.TemperatureAnnealing` and set for evaluation with
    `set_temperature(model, tau)`; the config records its current value.

    With `routing="assignment"` (the report's assignment model), `alpha_t` is
    one-hot: token id `n` goes to cell `assignment[n]`. The token id travels
    in the input: each step's input is `[features..., token_id]`, the last
    feature being the id as a number (see `assignment_inputs`), and the cells
    read the other features (so `d` is the input size minus one). There is no
    `V` and `temperature` is unused.

    Args:
        units: Positive integer, dimensionality of `h_t` and `c_t`.
        num_cells: Positive integer `S`, the number of LSTM cells. Default: 2.
        temperature: Positive number, the initial `tau`. Default: 1.0.
        routing: `"attention"` (learned `alpha_t`, eq. b) or `"assignment"`
            (a fixed token-to-cell table). Default: `"attention"`.
        assignment: With `routing="assignment"`, a list of cell indices, one
            per token id. Default: `None`.
        activation: Activation of the candidate and the cell output.
            Default: `"tanh"`.
        recurrent_activation: Activation of the gates. Default: `"sigmoid"`.
        forget_bias: Initial value added to the forget-gate biases.
            Default: 1.0.
        use_bias: Whether the gates have biases. Default: `True`.
        kernel_initializer: Initializer of the fused input kernel and `V`.
        recurrent_initializer: Initializer of each cell's recurrent kernel.
        bias_initializer: Initializer of the fused bias.

    Example:

    >>> layer = keras.layers.RNN(SecondOrderLSTMCell(32, num_cells=2))
    >>> layer(np.zeros((3, 5, 4), "float32")).shape
    (3, 32)
    >>> cell = SecondOrderLSTMCell(32, routing="assignment", assignment=[0, 1, 1])
    >>> x = assignment_inputs(np.zeros((3, 5, 4)), np.zeros((3, 5), "int32"))
    >>> keras.layers.RNN(cell)(x).shape
    (3, 32)
    """

    def __init__(
        self,
        units,
        num_cells=2,
        temperature=1.0,
        routing="attention",
        assignment=None,
        activation="tanh",
        recurrent_activation="sigmoid",
        forget_bias=1.0,
        use_bias=True,
        **kwargs,
    ):
        check_positive_int("num_cells", num_cells)
        check_number("temperature", temperature, low=0, low_open=True)
        check_choice("routing", routing, ("attention", "assignment"))
        if routing == "assignment":
            if not assignment or not all(
                isinstance(s, (int, np.integer)) and 0 <= s < num_cells
                for s in assignment
            ):
                raise ValueError(
                    "`assignment` must be a non-empty list of cell indices in "
                    f"[0, {num_cells}) with routing='assignment'; "
                    f"received {assignment!r}."
                )
            assignment = [int(s) for s in assignment]
        elif assignment is not None:
            raise ValueError(
                "`assignment` is only used with routing='assignment'; "
                f"received {assignment!r} with routing={routing!r}."
            )
        super().__init__(units, **kwargs)
        self.num_cells = num_cells
        self.routing = routing
        self.assignment = assignment
        self.set_lstm_gates(activation, recurrent_activation, forget_bias)
        self.use_bias = use_bias
        self.state_size = [units, units]
        self.temperature = self.add_weight(
            shape=(),
            initializer=keras.initializers.Constant(temperature),
            trainable=False,
            name="temperature",
        )

    def build(self, input_shape):
        input_dim = self.input_dim(input_shape)
        units, cells = self.units, self.num_cells
        if self.routing == "assignment":
            if input_dim < 2:
                raise ValueError(
                    "SecondOrderLSTMCell with routing='assignment' expects "
                    "`inputs` of shape (batch, time, features + 1) whose last "
                    "feature is the token id; received inputs of shape "
                    f"{tuple(input_shape)} per step."
                )
            input_dim -= 1
            self.assignment_table = ops.convert_to_tensor(self.assignment, "int32")
        else:
            self.attention_kernel = self.add_kernel(
                input_dim, cells, name="attention_kernel"
            )
        self.kernel = self.add_kernel(
            input_dim,
            cells * 4 * units,
            blockwise_initializer(self.kernel_initializer, cells),
        )
        self.recurrent_kernel = self.add_recurrent_kernel(
            cells * 4 * units, blockwise_initializer(self.recurrent_initializer, cells)
        )
        self.bias = self.add_bias(cells * 4 * units, self.lstm_bias_initializer())

    def routing_weights(self, inputs):
        """Returns `alpha_t`, `[batch, num_cells]`, for one step's `inputs`."""
        if self.routing == "assignment":
            ids = ops.cast(inputs[:, -1], "int32")  # [batch]
            cells = ops.take(self.assignment_table, ids, axis=0)  # [batch]
            return ops.one_hot(cells, self.num_cells, dtype=inputs.dtype)
        e = ops.matmul(inputs, self.attention_kernel)  # [batch, num_cells]
        return ops.softmax(e / ops.cast(self.temperature, e.dtype), axis=-1)

    def call(self, inputs, states, training=False):
        h_prev, c_prev = states
        alpha = self.routing_weights(inputs)[:, :, None]  # [batch, cells, 1]
        if self.routing == "assignment":
            inputs = inputs[:, :-1]  # [batch, features]
        z = ops.matmul(inputs, self.kernel) + ops.matmul(h_prev, self.recurrent_kernel)
        if self.bias is not None:
            z = z + self.bias  # [batch, cells * 4 * units]
        z = ops.reshape(z, (-1, self.num_cells, 4 * self.units))
        h_cells, c_cells = self.lstm_step(z, c_prev[:, None])  # [b, cells, u]
        h = ops.sum(alpha * h_cells, axis=1)  # [batch, units]
        c = ops.sum(alpha * c_cells, axis=1)  # [batch, units]
        return h, [h, c]

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "num_cells": self.num_cells,
                "temperature": float(ops.convert_to_numpy(self.temperature.value)),
                "routing": self.routing,
                "assignment": self.assignment,
                **self.lstm_gates_config(),
                "use_bias": self.use_bias,
            }
        )
        return config


def second_order_cells(model):
    """Returns every `SecondOrderLSTMCell` in `model`, nested ones included.

    Finds cells inside `keras.layers.RNN`, `Bidirectional`, `StackedRNNCells`
    and nested models (everything Keras tracks as a sub-layer).
    """
    return [
        layer
        for layer in walk_layers(model, include_self=True)
        if isinstance(layer, SecondOrderLSTMCell)
    ]


def set_temperature(model, temperature):
    """Sets `tau` of every second-order cell in `model` (e.g. low, to evaluate).

    Returns the number of cells set.
    """
    check_number("temperature", temperature, low=0, low_open=True)
    cells = second_order_cells(model)
    for cell in cells:
        cell.temperature.assign(temperature)
    return len(cells)


def assignment_inputs(features, token_ids):
    """Returns `[features..., token_id]`, the input of an assignment-routed cell.

    Args:
        features: `(batch, time, d)` float features (e.g. embeddings).
        token_ids: `(batch, time)` integer token ids.
    """
    ids = ops.cast(ops.expand_dims(token_ids, -1), "float32")  # [batch, time, 1]
    return ops.concatenate([ops.cast(features, "float32"), ids], axis=-1)


def assignment_from_embedding(embeddings, num_cells, seed=0, iterations=100):
    """Assigns each token to a cell by k-means over its embedding (NumPy, seeded).

    The report's assignment model clusters word vectors with `K = num_cells`.

    Args:
        embeddings: `(vocab_size, dim)` array, e.g. a trained
            `keras.layers.Embedding`'s `embeddings`.
        num_cells: Positive integer, the number of clusters (cells).
        seed: Seed of the initial centroids (k-means++). Default: 0.
        iterations: Maximum number of Lloyd iterations. Default: 100.

    Returns:
        A list of `vocab_size` cell indices, for `assignment=`.
    """
    check_positive_int("num_cells", num_cells)
    check_positive_int("iterations", iterations)
    points = np.asarray(embeddings, dtype="float64")
    if points.ndim != 2 or len(points) < num_cells:
        raise ValueError(
            "`embeddings` must be a (vocab_size, dim) array with at least "
            f"`num_cells` rows; received shape {points.shape}."
        )
    rng = np.random.default_rng(seed)
    centroids = [points[rng.integers(len(points))]]
    for _ in range(1, num_cells):  # k-means++ seeding
        distance = np.min(
            [np.sum((points - c) ** 2, axis=1) for c in centroids], axis=0
        )
        if distance.sum() == 0:
            centroids.append(points[rng.integers(len(points))])
        else:
            centroids.append(
                points[rng.choice(len(points), p=distance / distance.sum())]
            )
    centroids = np.stack(centroids)
    labels = None
    for _ in range(iterations):
        distance = ((points[:, None] - centroids[None]) ** 2).sum(-1)
        new_labels = distance.argmin(axis=1)
        if labels is not None and np.array_equal(new_labels, labels):
            break
        labels = new_labels
        for cluster in range(num_cells):
            members = points[labels == cluster]
            if len(members):
                centroids[cluster] = members.mean(axis=0)
    return [int(label) for label in labels]
