"""The Dyck-RNN model (the multi-matrix report, section 4.2): `DyckRNN`.

The report's closing-bracket predictor: the Dyck-RNN cell
(`zoo.cells.dyck_rnn.DyckRNNCell`, a hidden state used as a stack) read by
`DyckReadout`. A class as every zoo model is (`zoo.zoo_model`), with
`dyck_rnn_model` its builder.
"""

import keras

from zoo.cells.dyck_rnn import DyckRNNCell
from zoo.checks import check_positive_int
from zoo.layers.dyck_readout import DyckReadout
from zoo.rnn_layer import RNN
from zoo.zoo_model import ZooModel


def dyck_rnn_model(
    k,
    m,
    embedding_dim=1,
    trainable_embeddings=False,
    first_bracket_id=3,
    name="dyck_rnn",
):
    """Builds the report's closing-bracket predictor: Dyck-RNN and readout.

    The model maps token ids `(batch, time)` to `(batch, time, k)`: at each
    step, the probabilities of the `k` closing brackets given the prefix up to
    and including that token (useful where the next token is a closing
    bracket; train with sample weights on those positions).

    Args:
        k: Positive integer, the number of bracket types.
        m: Positive integer, the stack depth (the report's hidden size `m`;
            the cell has `m * embedding_dim` units).
        embedding_dim: Width of an embedding and a stack slot. Default: 1.
        trainable_embeddings: Whether the embeddings are learned (section
            6.2: `embedding_dim=2`). Default: `False`.
        first_bracket_id: The id of the first open bracket. Default: 3.
        name: The model's name. Default: `"dyck_rnn"`.

    Example:

    >>> model = dyck_rnn_model(2, 4)
    >>> model(np.array([[3, 4, 6, 5]], "int32")).shape
    (1, 4, 2)
    """
    return DyckRNN(
        k,
        m,
        embedding_dim=embedding_dim,
        trainable_embeddings=trainable_embeddings,
        first_bracket_id=first_bracket_id,
        name=name,
    )


@keras.saving.register_keras_serializable(package="zoo")
class DyckRNN(ZooModel):
    """The Dyck-RNN and its readout: token ids to closing-bracket probabilities.

    The constructor takes `dyck_rnn_model`'s arguments; they are its config.
    The hidden size is `m * embedding_dim` (`m`, the stack depth, is the
    report's hidden size), not an argument of its own. Parts:
    `token_embedding` (None: the cell reads the ids), `recurrent_layers`
    (the one `zoo.RNN` of the `DyckRNNCell`), `readout` (the `DyckReadout`).

    Example:

    >>> model = zoo.DyckRNN(2, 4)
    >>> model(np.array([[3, 4, 6, 5]], "int32")).shape
    (1, 4, 2)
    """

    def __init__(
        self,
        k,
        m,
        embedding_dim=1,
        trainable_embeddings=False,
        first_bracket_id=3,
        **kwargs,
    ):
        check_positive_int("m", m)
        ids = keras.Input(shape=(None,), dtype="int32", name="token_ids")
        steps = keras.layers.Reshape((-1, 1))(ids)  # [batch, time, 1]
        cell = DyckRNNCell(
            m * embedding_dim,
            num_bracket_types=k,
            embedding_dim=embedding_dim,
            trainable_embeddings=trainable_embeddings,
            first_bracket_id=first_bracket_id,
        )
        recurrent = RNN(cell, return_sequences=True)
        stack = recurrent(steps)  # [batch, time, units]
        # float32 under a mixed policy too, as the other models' outputs.
        readout = DyckReadout(k, embedding_dim, dtype="float32")
        probabilities = readout(stack)
        kwargs.setdefault("name", "dyck_rnn")
        super().__init__(ids, probabilities, **kwargs)
        self.token_embedding = None
        self.recurrent_layers = [recurrent]
        self.readout = readout
        self.heads = {self.output_names[0]: readout}
        self.k = k
        self.m = m
        self.embedding_dim = embedding_dim
        self.trainable_embeddings = trainable_embeddings
        self.first_bracket_id = first_bracket_id

    def step_outputs(self, outputs):
        """One step's `closing_log_probabilities` `(batch, k)`."""
        return {"closing_log_probabilities": keras.ops.log(outputs)}

    def text_outputs(self, ids, start_id=None):
        """`lengths` and `closing_log_probabilities` `(batch, time, k)`."""
        import tensorflow as tf

        from zoo import serving

        inputs, _ = serving.read_after_start(ids, start_id)
        probabilities = self(inputs.to_tensor(0), training=False)
        return {
            "lengths": ids.row_lengths(),
            "closing_log_probabilities": tf.math.log(probabilities),
        }
