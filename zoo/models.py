"""Model builders: a zoo cell inside a complete Keras model."""

import keras
import tensorflow as tf

from zoo.cells.base import check_number, check_positive_int
from zoo.registry import get_cell_class


def default_jit_compile():
    """Returns whether to compile with XLA here: on a GPU yes, on a CPU no.

    XLA on CPU makes recurrent loops superlinear in sequence length (see
    benchmarks/README.md), so the zoo compiles with XLA only when a GPU is
    visible. Pass the result as `model.compile(..., jit_compile=...)`.
    """
    return bool(tf.config.list_physical_devices("GPU"))


def recurrent_layer(cell, units, **options):
    """Returns the sequence layer of the cell registered as `cell`.

    Cells with a sequence layer of their own (minGRU and minLSTM, which scan
    in parallel) get it; every other cell is wrapped in `keras.layers.RNN`.
    Options that `keras.layers.RNN` takes (`return_sequences`,
    `return_state`, `stateful`, `go_backwards`, `unroll`) go to the layer,
    the rest to the cell.
    """
    rnn_keys = {"return_sequences", "return_state", "stateful", "go_backwards"}
    rnn_keys |= {"unroll", "name"}
    rnn_options = {key: options.pop(key) for key in list(options) if key in rnn_keys}
    cell_class = get_cell_class(cell)
    sequence_layer = getattr(cell_class, "sequence_layer", None)
    if sequence_layer is not None:
        return sequence_layer(units, **rnn_options, **options)
    return keras.layers.RNN(cell_class(units, **options), **rnn_options)


def reset_states(model):
    """Resets the state of every stateful recurrent layer in `model` to zeros.

    Keras 3 models have no `reset_states()`; this walks the model's layers,
    including those inside `Bidirectional` wrappers and nested models.
    """
    for layer in model._flatten_layers(include_self=False):
        if getattr(layer, "stateful", False) and hasattr(layer, "reset_state"):
            layer.reset_state()


def _variational_dropout(rate, name):
    # One mask per sequence, shared by every time step (Gal & Ghahramani).
    return keras.layers.Dropout(rate, noise_shape=(None, 1, None), name=name)


def language_model(
    cell,
    vocab_size,
    units,
    embedding_dim=None,
    num_layers=1,
    dropout=0.0,
    tie_embeddings=False,
    stateful=False,
    batch_size=None,
    **cell_options,
):
    """Builds a language model from token ids to next-token logits.

    The model maps int token ids `(batch, time)` to logits
    `(batch, time, vocab_size)`: an embedding, `num_layers` recurrent layers
    of the registered `cell` (each layer's hidden state is the next layer's
    input), and a linear decoder. Dropout is variational: one mask per
    sequence on the embedding, between layers and before the decoder. A cell
    that takes token ids (`tensor_rnn`) reads the ids directly, in one layer
    and without an embedding.

    Args:
        cell: Registry name of the cell (see `zoo.available_cells()`).
        vocab_size: Positive integer, the number of token ids.
        units: Positive integer, the hidden size of every layer.
        embedding_dim: Size of the embedding. Default: `units`.
        num_layers: Number of stacked recurrent layers. Default: 1.
        dropout: Variational dropout rate in [0, 1). Default: 0.
        tie_embeddings: Whether the decoder is the transposed embedding
            (Press & Wolf 2017); a linear projection to `embedding_dim` is
            added when it differs from `units`. Default: `False`.
        stateful: Whether the recurrent state carries over between batches
            (truncated BPTT); needs `batch_size`. Default: `False`.
        batch_size: Fixed batch size, required when `stateful`.
        **cell_options: Passed to the cell's constructor.

    Example:

    >>> model = language_model("mlstm", vocab_size=50, units=64, num_layers=2)
    >>> model(np.zeros((3, 7), "int32")).shape
    (3, 7, 50)
    """
    cell_class = get_cell_class(cell)
    check_positive_int("vocab_size", vocab_size)
    check_positive_int("units", units)
    check_positive_int("num_layers", num_layers)
    if embedding_dim is not None:
        check_positive_int("embedding_dim", embedding_dim)
    check_number("dropout", dropout, 0.0, 1.0)
    if dropout >= 1.0:
        raise ValueError(f"`dropout` must be in [0, 1); received {dropout!r}.")
    if stateful:
        check_positive_int("batch_size (required when stateful=True)", batch_size)
    takes_ids = getattr(cell_class, "takes_token_ids", False)
    if takes_ids and (num_layers != 1 or embedding_dim or tie_embeddings):
        raise ValueError(
            f"Cell {cell!r} reads token ids, so it has no embedding and forms one "
            "layer: expected num_layers=1, embedding_dim=None, tie_embeddings=False; "
            f"received num_layers={num_layers!r}, embedding_dim={embedding_dim!r}, "
            f"tie_embeddings={tie_embeddings!r}."
        )
    embedding_dim = embedding_dim or units

    ids = keras.Input(
        shape=(None,), dtype="int32", batch_size=batch_size if stateful else None
    )
    embedding = None
    if takes_ids:
        if "vocab_size" not in cell_options:
            cell_options["vocab_size"] = vocab_size
        x = keras.layers.Reshape((-1, 1), name="token_ids")(ids)
    else:
        embedding = keras.layers.ReversibleEmbedding(
            vocab_size, embedding_dim, tie_weights=True, name="embedding"
        )
        x = embedding(ids)
        if dropout:
            x = _variational_dropout(dropout, "embedding_dropout")(x)
    for index in range(num_layers):
        x = recurrent_layer(
            cell,
            units,
            return_sequences=True,
            stateful=stateful,
            name=f"{cell}_{index}",
            **dict(cell_options),
        )(x)
        if dropout:
            x = _variational_dropout(dropout, f"dropout_{index}")(x)
    if tie_embeddings:
        if units != embedding_dim:
            x = keras.layers.Dense(embedding_dim, use_bias=False, name="projection")(x)
        logits = embedding(x, reverse=True)
    else:
        logits = keras.layers.Dense(vocab_size, name="logits")(x)
    return keras.Model(ids, logits, name=f"{cell}_language_model")
