"""Model builders that label text: a label per token and a label per sequence.

The lecture's two applications of a recurrent encoder ("Application: Sequence
Tagging", "Application: Text Classification"): `tagger` gives every token a
distribution over `C` classes, `softmax(W_o h_i)`, trained with the mean
cross-entropy over the tokens; `classifier` gives the whole sequence one,
`softmax(W_o h_n)`. Both stack `num_layers` recurrent layers of any registered
cell ("Multi-layer RNNs": each layer's states are the next layer's inputs) and
can read in both directions ("Bidirectional RNNs"): a bidirectional layer
concatenates, at each token, the forward state (read from the first token to
it) and the backward state (read from the last token back to it), the
lecture's `h_t = [<-h_t, ->h_t]` in Keras's order `[->h_t, <-h_t]`.

Token id 0 is padding: it is masked, so a padded step changes no state of
either direction, no label and no loss.
"""

import keras

from zoo.backbone import Backbone
from zoo.checks import check_choice, check_positive_int
from zoo.layers.pooling import POOLING_MODES, SequencePooling
from zoo.zoo_model import ZooModel

POOLINGS = ("last", *POOLING_MODES)


class _Labeler(ZooModel):
    """A tagger (`pooling=None`) or a classifier pooling its states so."""

    def _labeler_graph(self, pooling, kind, arguments, kwargs):
        check_positive_int("num_classes", arguments["num_classes"])
        backbone = Backbone(
            arguments["cell"],
            arguments["vocab_size"],
            arguments["units"],
            embedding_dim=arguments["embedding_dim"],
            num_layers=arguments["num_layers"],
            dropout=arguments["dropout"],
            bidirectional=arguments["bidirectional"],
            last_state=pooling == "last",  # the top layer returns its last state
            cell_options=arguments["cell_options"],
        )
        x = backbone.output
        pool = None
        if pooling in POOLING_MODES:
            mask = None
            if backbone.token_embedding is None:  # a cell that reads ids
                mask = keras.ops.not_equal(backbone.input, 0)
            pool = SequencePooling(pooling, name="pooling")
            x = pool(x, mask=mask)
        head = keras.layers.Dense(
            arguments["num_classes"], dtype="float32", name="logits"
        )
        logits = head(x)
        kwargs.setdefault("name", f"{arguments['cell']}_{kind}")
        ZooModel.__init__(self, backbone.input, logits, **kwargs)
        self.backbone = backbone
        self.token_embedding = backbone.token_embedding
        self.recurrent_layers = backbone.recurrent_layers
        self.pooling_layer = pool
        self.logits = head
        self.heads = {self.output_names[0]: head}
        for key, value in arguments.items():
            setattr(self, key, dict(value or {}) if key == "cell_options" else value)


@keras.saving.register_keras_serializable(package="zoo")
class Tagger(_Labeler):
    """A sequence tagger: token ids to a class distribution per token (`tagger`).

    The constructor takes `tagger`'s arguments, the cell's options as the
    dict `cell_options`; they are its config. Parts: `backbone` (a masked
    `zoo.Backbone`), `token_embedding`, `recurrent_layers`, `logits` (the
    head's `Dense`).
    """

    def __init__(
        self,
        cell,
        vocab_size,
        units,
        num_classes,
        num_layers=1,
        bidirectional=False,
        dropout=0.0,
        embedding_dim=None,
        cell_options=None,
        **kwargs,
    ):
        arguments = {
            key: value for key, value in locals().items() if key in self.config_keys
        }
        self._labeler_graph(None, "tagger", arguments, kwargs)

    def text_outputs(self, ids, start_id=None):
        """`lengths`, `labels` `(batch, time)` (-1 past the end), `probabilities`."""
        from zoo import serving

        return serving.labels(self, ids, per_token=True)

    def step_outputs(self, outputs):
        """One step's `probabilities` `(batch, classes)` and `labels` `(batch,)`."""
        probabilities = keras.ops.softmax(outputs)
        labels = keras.ops.cast(keras.ops.argmax(probabilities, axis=-1), "int32")
        return {"probabilities": probabilities, "labels": labels}


@keras.saving.register_keras_serializable(package="zoo")
class Classifier(_Labeler):
    """A text classifier: token ids to one class distribution (`classifier`).

    The constructor takes `classifier`'s arguments, the cell's options as
    the dict `cell_options`; they are its config. Parts: `tagger`'s, and
    `pooling_layer` (the `SequencePooling` of `"mean"` and `"max"`, else
    None).
    """

    def __init__(
        self,
        cell,
        vocab_size,
        units,
        num_classes,
        num_layers=1,
        bidirectional=False,
        dropout=0.0,
        embedding_dim=None,
        pooling="last",
        cell_options=None,
        **kwargs,
    ):
        check_choice("pooling", pooling, POOLINGS)
        arguments = {
            key: value for key, value in locals().items() if key in self.config_keys
        }
        self._labeler_graph(pooling, "classifier", arguments, kwargs)

    def text_outputs(self, ids, start_id=None):
        """`lengths`, one `label` `(batch,)` and `probabilities` per text."""
        from zoo import serving

        return serving.labels(self, ids, per_token=False)


def tagger(
    cell,
    vocab_size,
    units,
    num_classes,
    num_layers=1,
    bidirectional=False,
    dropout=0.0,
    embedding_dim=None,
    **cell_options,
):
    """Builds a sequence tagger: token ids to a class distribution per token.

    The model maps int token ids `(batch, time)`, 0 as padding, to logits
    `(batch, time, num_classes)`, `W_o h_i + b_o` for every token `i`: an
    embedding (`mask_zero=True`), `num_layers` recurrent layers of the
    registered `cell`, each bidirectional when `bidirectional`, and a linear
    layer (float32 under a mixed dtype policy). Train it with
    `SparseCategoricalCrossentropy(from_logits=True)` on labels
    `(batch, time)`: Keras averages the loss over the unpadded tokens, the
    lecture's `L = -1/n sum_i log P(y_i)`. A cell that reads token ids
    (`takes_token_ids`: `tensor_rnn`, `dyck_rnn`) reads them directly, in one
    layer, with the same padding mask.

    Args:
        cell: Registry name of the cell (see `zoo.available_cells()`).
        vocab_size: Positive integer, the number of token ids, padding 0
            included.
        units: Positive integer, each direction's hidden size.
        num_classes: Positive integer `C`, the number of tags.
        num_layers: Number of stacked recurrent layers (named `"recurrent"`,
            `"recurrent_1"`, ...). Default: 1.
        bidirectional: Whether every layer also reads right to left (its
            states are then `2 * units` wide). Default: `False`.
        dropout: Variational dropout rate in [0, 1) on the embedding and
            after each recurrent layer. Default: 0.
        embedding_dim: Size of the embedding. Default: `units`.
        **cell_options: Passed to the cell's constructor (for the stack
            cells: `stack_depth`, ...).

    Example:

    >>> model = tagger("lstm", vocab_size=7, units=8, num_classes=5,
    ...                bidirectional=True)
    >>> model(np.array([[3, 3, 5, 6, 0]], "int32")).shape
    (1, 5, 5)
    """
    return Tagger(
        cell,
        vocab_size,
        units,
        num_classes,
        num_layers=num_layers,
        bidirectional=bidirectional,
        dropout=dropout,
        embedding_dim=embedding_dim,
        cell_options=cell_options,
    )


def classifier(
    cell,
    vocab_size,
    units,
    num_classes,
    num_layers=1,
    bidirectional=False,
    dropout=0.0,
    embedding_dim=None,
    pooling="last",
    **cell_options,
):
    """Builds a text classifier: token ids to one class distribution per sequence.

    The model maps int token ids `(batch, time)`, 0 as padding, to logits
    `(batch, num_classes)`, `W_o h + b_o` of one vector `h` per sequence read
    from the top layer's states, as `pooling` says:

    - `"last"`: the last state, `h_n` (the lecture's classifier). In a
      bidirectional layer that is the forward pass's state after the last
      unmasked token beside the backward pass's state after the first token,
      where the backward pass ends, not its state at the last token (which
      has read one token).
    - `"mean"`, `"max"`: the mean or the feature-wise maximum of the states
      over the unmasked tokens (`zoo.layers.SequencePooling`).

    Layers, masking, dropout and the other arguments are `tagger`'s (the
    top layer's dropout falls on its last state with `"last"`). Train it with
    `SparseCategoricalCrossentropy(from_logits=True)` on labels `(batch,)`.

    Args:
        cell, vocab_size, units, num_classes, num_layers, bidirectional,
            dropout, embedding_dim, **cell_options: as in `tagger`.
        pooling: `"last"`, `"mean"` or `"max"`. Default: `"last"`.

    Example:

    >>> model = classifier("mlstm", vocab_size=50, units=16, num_classes=2,
    ...                    num_layers=2, bidirectional=True, pooling="max")
    >>> model(np.ones((3, 7), "int32")).shape
    (3, 2)
    """
    return Classifier(
        cell,
        vocab_size,
        units,
        num_classes,
        num_layers=num_layers,
        bidirectional=bidirectional,
        dropout=dropout,
        embedding_dim=embedding_dim,
        pooling=pooling,
        cell_options=cell_options,
    )
