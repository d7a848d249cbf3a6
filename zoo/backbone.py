"""The recurrent backbone every zoo model is built on, written once.

Each builder (`zoo.language_model`, `zoo.recognizer`, `zoo.tagger`,
`zoo.classifier`) makes the same backbone and puts its own heads on top:

    token ids -> embedding (or the ids themselves, for a cell that reads
    them) -> dropout -> recurrent layer 0 -> dropout -> ... -> recurrent
    layer n-1 -> dropout -> heads

`recurrent_layer` and `bidirectional_layer` make one recurrent layer of a
registered cell, `masked_token_inputs` the masked builders' input and
embedding, and `recurrent_stack` the layers and the dropout between them.
`zoo.model_parts` finds the parts again in a model built now or loaded from
a `.keras` file. A layer keeps the name its builder has always given it
(`recurrent_names`): `.keras` files record the names in their graphs and the
analyses report by them. Nothing looks a layer up by one
(tests/layer_lookup_test.py).
"""

import keras
from keras import ops

from zoo.checks import check_number, check_positive_int
from zoo.registry import cell_takes_vocab_size, get_cell_class
from zoo.rnn_layer import RNN


def recurrent_layer(cell, units, **options):
    """Returns the sequence layer of the cell registered as `cell`.

    Cells with a sequence layer of their own (minGRU and minLSTM, which scan
    in parallel) get it; every other cell is wrapped in `zoo.RNN`
    (`keras.layers.RNN` with the zoo's faster loop on TensorFlow and a
    DiffStk cell's noise key on JAX).
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
    return RNN(cell_class(units, **options), **rnn_options)


def bidirectional_layer(cell, units, **options):
    """Returns `keras.layers.Bidirectional` over the sequence layer of `cell`.

    The layer is `recurrent_layer(cell, units, **options)` (a cell's own
    sequence layer, such as minGRU's, included); Keras makes its backward
    copy with `go_backwards=True`. With `return_sequences=False` the output
    is the forward pass's state after the last unmasked token beside the
    backward pass's state after the first token: each direction's whole
    reading of the sequence (the lecture's "slight modifications" for
    classification). Keras makes the backward copy with `from_config`, so
    it is a `zoo.RNN` too, with the zoo's loop.
    """
    name = options.pop("name", None)
    return keras.layers.Bidirectional(
        recurrent_layer(cell, units, **options), name=name
    )


def variational_dropout(rate, name):
    """Dropout with one mask per sequence, shared by every time step (Gal &
    Ghahramani), on `(batch, time, features)`."""
    return keras.layers.Dropout(rate, noise_shape=(None, 1, None), name=name)


def recurrent_names(num_layers, cell=None):
    """The names the builders give their recurrent layers, bottom first.

    A language model's are `{cell}_0`, `{cell}_1`, ... (pass `cell`); the
    other builders' `recurrent`, `recurrent_1`, ... `.keras` files record
    them in their graphs and the analyses (PABS, routing) report by them, so
    they stay what they have always been.
    """
    if cell is not None:
        return [f"{cell}_{index}" for index in range(num_layers)]
    return ["recurrent", *(f"recurrent_{index}" for index in range(1, num_layers))]


def recurrent_stack(
    x,
    cell,
    units,
    names,
    cell_options,
    dropout=0.0,
    output_dropout=None,
    masked=False,
    mask=None,
    bidirectional=False,
    last_state=False,
    **layer_options,
):
    """Runs `x` through a stack of recurrent layers of `cell`: every builder's loop.

    There is a layer per name in `names` (`recurrent_names`), bottom first,
    each the next one's input: `recurrent_layer`, or `bidirectional_layer`
    when `bidirectional`, of `units` units with the cell's `cell_options`
    and `layer_options` (such as `stateful`). Every layer returns its
    sequence of states except the top one when `last_state` (a classifier
    that reads the last state). After layer `index` comes dropout at
    `dropout` (at `output_dropout` after the top one, default `dropout`)
    named `dropout_{index}`: variational on a sequence, plain on a last
    state. When `masked` (the builders that pad with 0), every layer is
    called with `mask`, the padding mask of a cell that reads ids or None
    after an embedding (whose output carries its own); a language model's
    are called on their input alone. Returns `(output, layers)`: the top
    layer's output (after its dropout) and the recurrent layers, bottom
    first.
    """
    output_dropout = dropout if output_dropout is None else output_dropout
    make_layer = bidirectional_layer if bidirectional else recurrent_layer
    layers = []
    for index, name in enumerate(names):
        top = index == len(names) - 1
        sequences = not (last_state and top)
        layer = make_layer(
            cell,
            units,
            return_sequences=sequences,
            name=name,
            **layer_options,
            **dict(cell_options),
        )
        layers.append(layer)
        x = layer(x, mask=mask) if masked else layer(x)
        rate = output_dropout if top else dropout
        if rate and sequences:
            x = variational_dropout(rate, f"dropout_{index}")(x)
        elif rate:
            x = keras.layers.Dropout(rate, name=f"dropout_{index}")(x)
    return x, layers


def pass_vocab_size(cell, vocab_size, cell_options):
    """Gives `cell_options` the model's `vocab_size` where the cell takes one.

    A cell that reads token ids and sizes itself by the vocabulary
    (tensor_rnn) gets the model's; one with a fixed layout (dyck_rnn) not.
    """
    if cell_takes_vocab_size(get_cell_class(cell)):
        cell_options.setdefault("vocab_size", vocab_size)


def check_token_id_cell(cell, **settings):
    """Whether `cell` reads token ids; if so, refuses an embedding or more layers.

    `settings` are the builder's `num_layers`, `embedding_dim` and
    `tie_embeddings`; a cell that reads ids has none of those.
    """
    if not getattr(get_cell_class(cell), "takes_token_ids", False):
        return False
    allowed = {"num_layers": 1, "embedding_dim": None, "tie_embeddings": False}
    if any(settings[key] != allowed[key] for key in settings):
        expected = ", ".join(f"{key}={allowed[key]!r}" for key in settings)
        received = ", ".join(f"{key}={value!r}" for key, value in settings.items())
        raise ValueError(
            f"Cell {cell!r} reads token ids, so it has no embedding and forms one "
            f"layer: expected {expected}; received {received}."
        )
    return True


def _check_arguments(cell, vocab_size, units, embedding_dim, num_layers, rates):
    get_cell_class(cell)  # an unknown name first
    check_positive_int("vocab_size", vocab_size)
    check_positive_int("units", units)
    check_positive_int("num_layers", num_layers)
    if embedding_dim is not None:
        check_positive_int("embedding_dim", embedding_dim)
    for name, rate in rates.items():
        check_number(name, rate, 0, 1, high_open=True)


@keras.saving.register_keras_serializable(package="zoo")
class Backbone(keras.Model):
    """The zoo's backbone: token ids to the top recurrent layer's states.

    A functional `keras.Model` (as keras-hub's backbones are): token ids
    `(batch, time)` -> embedding (or the ids themselves, `(batch, time, 1)`,
    for a cell that reads them: `takes_token_ids`) -> variational dropout ->
    `num_layers` recurrent layers of the registered `cell`, with dropout
    after each -> `(batch, time, units)` (`2 * units` when
    `bidirectional`; `(batch, units)` when `last_state`). Every head class
    (`zoo.LanguageModel`, `zoo.Recognizer`, `zoo.Tagger`, `zoo.Classifier`)
    builds one and puts its heads on its output; the head's graph is then
    flat (its layers are the backbone's and its own), and the backbone is
    its `backbone` attribute.

    Two kinds, as `masked` says:

    - `masked=True` (recognizer, tagger, classifier): id 0 is padding; the
      input is named `"tokens"`, the embedding is a `keras.layers.Embedding`
      with `mask_zero=True` (a cell that reads ids gets the padding mask),
      the recurrent layers are named `recurrent`, `recurrent_1`, ...
    - `masked=False` (language model): nothing is masked; the embedding is
      a `keras.layers.ReversibleEmbedding` (a tied decoder reads it in
      reverse), the layers are named `{cell}_0`, `{cell}_1`, ...; it may be
      `stateful` (with a fixed `batch_size`).

    Args:
        cell: Registry name of the cell (see `zoo.available_cells()`).
        vocab_size: Positive integer, the number of token ids.
        units: Positive integer, each layer's (each direction's) hidden size.
        embedding_dim: Size of the embedding. Default: `units`.
        num_layers: Number of stacked recurrent layers. Default: 1.
        dropout: Variational dropout rate in [0, 1) on the embedding and
            between layers. Default: 0.
        output_dropout: Dropout rate after the top layer. Default: `dropout`.
        masked: Whether id 0 is masked padding (above). Default: `True`.
        bidirectional: Whether every layer also reads right to left.
            Default: `False`.
        last_state: Whether the top layer returns its last state only.
            Default: `False`.
        stateful: Whether the recurrent state carries over between batches
            (`masked=False` only); needs `batch_size`. Default: `False`.
        batch_size: Fixed batch size, required when `stateful`.
        cell_options: Dict of the cell's constructor arguments.

    Parts: `token_embedding` (None for a cell that reads ids),
    `recurrent_layers` (bottom first).

    Example:

    >>> backbone = zoo.Backbone("mlstm", vocab_size=50, units=16, num_layers=2)
    >>> backbone(np.ones((3, 7), "int32")).shape
    (3, 7, 16)
    """

    def __init__(
        self,
        cell,
        vocab_size,
        units,
        embedding_dim=None,
        num_layers=1,
        dropout=0.0,
        output_dropout=None,
        masked=True,
        bidirectional=False,
        last_state=False,
        stateful=False,
        batch_size=None,
        cell_options=None,
        **kwargs,
    ):
        output_dropout = dropout if output_dropout is None else output_dropout
        rates = {"dropout": dropout, "output_dropout": output_dropout}
        _check_arguments(cell, vocab_size, units, embedding_dim, num_layers, rates)
        for name, value in (("bidirectional", bidirectional), ("masked", masked)):
            if not isinstance(value, bool):
                raise ValueError(f"`{name}` must be True or False; received {value!r}.")
        if stateful:
            check_positive_int("batch_size (required when stateful=True)", batch_size)
        options = dict(cell_options or {})
        takes_ids = check_token_id_cell(
            cell, num_layers=num_layers, embedding_dim=embedding_dim
        )
        ids = keras.Input(
            shape=(None,),
            dtype="int32",
            batch_size=batch_size if stateful else None,
            name="tokens" if masked else None,
        )
        embedding, mask = None, None
        if takes_ids:
            pass_vocab_size(cell, vocab_size, options)
            x = keras.layers.Reshape((-1, 1), name="token_ids")(ids)
            mask = ops.not_equal(ids, 0) if masked else None
        else:
            embedding_class = (
                keras.layers.Embedding if masked else keras.layers.ReversibleEmbedding
            )
            extra = {"mask_zero": True} if masked else {"tie_weights": True}
            embedding = embedding_class(
                vocab_size, embedding_dim or units, name="embedding", **extra
            )
            x = embedding(ids)
            if dropout:
                x = variational_dropout(dropout, "embedding_dropout")(x)
        layer_options = {"stateful": True} if stateful else {}
        x, layers = recurrent_stack(
            x,
            cell,
            units,
            recurrent_names(num_layers, None if masked else cell),
            options,
            dropout,
            output_dropout=output_dropout,
            masked=masked,
            mask=mask,
            bidirectional=bidirectional,
            last_state=last_state,
            **layer_options,
        )
        kwargs.setdefault("name", f"{cell}_backbone")
        super().__init__(inputs=ids, outputs=x, **kwargs)
        self.token_embedding = embedding
        self.recurrent_layers = layers
        self.cell = cell
        self.vocab_size = vocab_size
        self.units = units
        self.embedding_dim = embedding_dim
        self.num_layers = num_layers
        self.dropout = dropout
        self.output_dropout = output_dropout
        self.masked = masked
        self.bidirectional = bidirectional
        self.last_state = last_state
        self.stateful = stateful
        self.batch_size = batch_size
        self.cell_options = dict(cell_options or {})

    def get_config(self):
        config = {"name": self.name, "trainable": self.trainable}
        keys = ("cell", "vocab_size", "units", "embedding_dim", "num_layers")
        keys += ("dropout", "output_dropout", "masked", "bidirectional")
        keys += ("last_state", "stateful", "batch_size")
        config.update({key: getattr(self, key) for key in keys})
        config["cell_options"] = dict(self.cell_options)
        return config

    @classmethod
    def from_config(cls, config, custom_objects=None):
        return cls(**config)
