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

from zoo.cells.diffstk_jax import carry_noise_key_on_jax
from zoo.checks import check_number, check_positive_int
from zoo.registry import cell_takes_vocab_size, get_cell_class
from zoo.tensorflow_loop import tensorflow_loop


def recurrent_layer(cell, units, **options):
    """Returns the sequence layer of the cell registered as `cell`.

    Cells with a sequence layer of their own (minGRU and minLSTM, which scan
    in parallel) get it; every other cell is wrapped in `keras.layers.RNN`,
    with the zoo's faster loop on TensorFlow (`tensorflow_loop`) and, on JAX,
    a DiffStk cell's with `carry_noise_key_on_jax`, for its state noise.
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
    layer = keras.layers.RNN(cell_class(units, **options), **rnn_options)
    return carry_noise_key_on_jax(tensorflow_loop(layer))


def bidirectional_layer(cell, units, **options):
    """Returns `keras.layers.Bidirectional` over the sequence layer of `cell`.

    The layer is `recurrent_layer(cell, units, **options)` (a cell's own
    sequence layer, such as minGRU's, included); Keras makes its backward
    copy with `go_backwards=True`. With `return_sequences=False` the output
    is the forward pass's state after the last unmasked token beside the
    backward pass's state after the first token: each direction's whole
    reading of the sequence (the lecture's "slight modifications" for
    classification). Both copies get `tensorflow_loop` and, on JAX, a
    DiffStk layer's `carry_noise_key_on_jax`, which Keras's copying drops.
    """
    name = options.pop("name", None)
    layer = keras.layers.Bidirectional(
        recurrent_layer(cell, units, **options), name=name
    )
    for direction in (layer.forward_layer, layer.backward_layer):
        carry_noise_key_on_jax(tensorflow_loop(direction))
    return layer


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
    are called on their input alone. The two calls differ in the graph a
    `.keras` file records, so each builder keeps its own. Returns the top
    layer's output.
    """
    output_dropout = dropout if output_dropout is None else output_dropout
    make_layer = bidirectional_layer if bidirectional else recurrent_layer
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
        x = layer(x, mask=mask) if masked else layer(x)
        rate = output_dropout if top else dropout
        if rate and sequences:
            x = variational_dropout(rate, f"dropout_{index}")(x)
        elif rate:
            x = keras.layers.Dropout(rate, name=f"dropout_{index}")(x)
    return x


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


def masked_token_inputs(
    cell, vocab_size, units, embedding_dim, num_layers, dropout, cell_options
):
    """The token-id input of a masked builder and what its first layer reads.

    Checks the builder's arguments, then returns `(ids, x, mask)`: `ids`,
    the int32 `keras.Input` `(batch, time)` named `"tokens"`, 0 as padding;
    `x`, the ids through an embedding with `mask_zero=True` (and variational
    `dropout`), or, for a cell that reads token ids, the ids as
    `(batch, time, 1)` (`cell_options` then get `vocab_size` if the cell
    takes it); `mask`, None for an embedding (which carries its own), else
    the padding mask to pass to every recurrent layer. `zoo.recognizer`,
    `zoo.tagger` and `zoo.classifier` start from it.
    """
    get_cell_class(cell)  # an unknown name first
    check_positive_int("vocab_size", vocab_size)
    check_positive_int("units", units)
    check_positive_int("num_layers", num_layers)
    check_number("dropout", dropout, 0, 1, high_open=True)
    if embedding_dim is not None:
        check_positive_int("embedding_dim", embedding_dim)
    takes_ids = check_token_id_cell(
        cell, num_layers=num_layers, embedding_dim=embedding_dim
    )
    ids = keras.Input(shape=(None,), dtype="int32", name="tokens")
    if takes_ids:
        pass_vocab_size(cell, vocab_size, cell_options)
        x = keras.layers.Reshape((-1, 1), name="token_ids")(ids)
        return ids, x, ops.not_equal(ids, 0)
    embedding = keras.layers.Embedding(
        vocab_size, embedding_dim or units, mask_zero=True, name="embedding"
    )
    x = embedding(ids)
    if dropout:
        x = variational_dropout(dropout, "embedding_dropout")(x)
    return ids, x, None
