"""Model builders: a zoo cell inside a complete Keras model.

`language_model` maps token ids to next-token logits. `recognizer` is the
recognizer of formal languages trained with Mali et al.'s hybrid loss: Mali et
al. (2020, section 3) train it to predict at every step both the next symbol
(cross-entropy) and the string's label (`0.5 (y_hat_t - y)^2`);
`hybrid_recognition_loss` gives the matching `model.compile` arguments, so
`model.fit` trains on the hybrid loss with Keras's built-in losses (no custom
object is needed to load a saved recognizer). `trace_recognizer` returns the
stack actions of a recognizer built on a stack cell.

Both put their heads on the backbone every builder shares (`zoo.backbone`:
the embedding, the recurrent layers and the dropout between them);
`zoo.model_parts` finds the parts of a model built or loaded.
"""

import keras
from keras import ops

from zoo import keras_compat
from zoo.backbone import (
    check_token_id_cell,
    masked_token_inputs,
    pass_vocab_size,
    recurrent_names,
    recurrent_stack,
    variational_dropout,
)
from zoo.cells.stack_cell import trace_stack
from zoo.checks import check_number, check_positive_int
from zoo.devices import gpu_visible
from zoo.model_parts import model_parts
from zoo.registry import get_cell_class
from zoo.tensorflow_steps import tensorflow_steps
from zoo.walk import walk_layers

# On a CPU, XLA pays up to these units, at every measured length
# (benchmarks/log.md, `python benchmarks/xla.py`); `CPU_XLA_LIMIT` bounds
# the steps that `training.core.compile_mode.choose_steps` groups.
CPU_XLA_MAX_UNITS = 512
CPU_XLA_LIMIT = 32 * 16_384


def default_jit_compile(units=None, batch=None, length=None):
    """Returns whether to compile a recurrent model with XLA here.

    - On a backend other than TensorFlow: `"auto"`, Keras's own choice (JAX
      compiles every step).
    - With a GPU visible: `True`.
    - On a CPU, given the shape of one step (`units`, `batch`, `length`):
      `True` when `units <= CPU_XLA_MAX_UNITS`, at any batch and length.
      With the zoo's TensorFlow loop (`zoo.tensorflow_loop`, which keeps the
      compiled loop linear in the length) XLA trained every measured shape
      at least as fast as the graph (CPU time per step, `model.fit`, batch
      32): the LSTM 1.5-4.2x at 8 units (lengths 16-2048), 1.9-3.1x at 32
      and 1.3-1.9x at 128 (both to 2048), 1.2-1.3x at 256 and 1.1x at 512
      (to 256), the DiffStk-RNN 2.2-7.6x (8-128 units, to 2048); at 1024
      units the two were level (1.04-1.08x), so wider cells stay in the
      graph (benchmarks/log.md, "The rule with the zoo's loop"). `batch`
      and `length` stay in the signature: the rule before issue 39 used them
      (Keras's own loop made XLA quadratic in the length).
    - On a CPU without a shape: `False`.

    Pass the result as `model.compile(..., jit_compile=...)`.
    """
    if keras.backend.backend() != "tensorflow":
        return "auto"
    if gpu_visible():
        return True
    if units is None or batch is None or length is None:
        return False
    return units <= CPU_XLA_MAX_UNITS


def reset_states(model):
    """Resets the state of every stateful recurrent layer in `model` to zeros.

    Keras 3 models have no `reset_states()`; this walks the model's layers,
    including those inside `Bidirectional` wrappers and nested models.
    """
    for layer in walk_layers(model):
        if getattr(layer, "stateful", False) and hasattr(layer, "reset_state"):
            layer.reset_state()


def carry_state_on_jax(model):
    """Makes compiled steps on JAX carry `model`'s stateful recurrent state.

    Keras 3.15's `keras.layers.RNN` creates its `states` variables untracked
    (`_create_state_variables` runs under `no_automatic_dependency_tracking`),
    so they are not among `model.non_trainable_variables`. TensorFlow's
    compiled steps read and assign them in place anyway; JAX's are pure
    functions of the variables Keras passes in, so `fit`, `evaluate` and
    `predict` read a stateful layer's state as the constant it was when the
    step was traced (zeros) and drop its update: every batch starts from zero.
    Each state variable is listed where Keras lists seed-generator state
    (`keras_compat.carry_variable`): among the layer's `variables` (and so
    passed through every step), not its `weights` (so `get_weights`, `.keras`
    files and checkpoints are those of the stateless model). Nothing changes
    on other backends. Can go when Keras tracks RNN state itself (no upstream
    issue found as of 2026-10).
    """
    if keras.backend.backend() != "jax":
        return model
    for layer in walk_layers(model):
        states = (
            getattr(layer, "states", None)
            if getattr(layer, "stateful", False)
            else None
        )
        if not states:
            continue
        for variable in keras.tree.flatten(states):
            keras_compat.carry_variable(layer, variable)
    return model


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
    output_dropout=None,
    **cell_options,
):
    """Builds a language model from token ids to next-token logits.

    The model maps int token ids `(batch, time)` to logits
    `(batch, time, vocab_size)`: an embedding, `num_layers` recurrent layers
    of the registered `cell` (each layer's hidden state is the next layer's
    input), and a linear decoder. Dropout is variational: one mask per
    sequence on the embedding, between layers and (`output_dropout`) before
    the decoder. A cell
    that takes token ids (`tensor_rnn`) reads the ids directly, in one layer
    and without an embedding. Under a mixed dtype policy
    (`keras.config.set_dtype_policy("mixed_bfloat16")`) the layers compute in
    16 bits and the logits are still float32.

    Args:
        cell: Registry name of the cell (see `zoo.available_cells()`).
        vocab_size: Positive integer, the number of token ids.
        units: Positive integer, the hidden size of every layer.
        embedding_dim: Size of the embedding. Default: `units`.
        num_layers: Number of stacked recurrent layers. Default: 1.
        dropout: Variational dropout rate in [0, 1) on the embedding and
            between layers. Default: 0.
        tie_embeddings: Whether the decoder is the transposed embedding
            (Press & Wolf 2017); a linear projection to `embedding_dim` is
            added when it differs from `units`. Default: `False`.
        stateful: Whether the recurrent state carries over between batches
            (truncated BPTT); needs `batch_size`. Default: `False`.
        batch_size: Fixed batch size, required when `stateful`.
        output_dropout: Variational dropout rate on the last hidden state,
            before the decoder. Default: `dropout`.
        **cell_options: Passed to the cell's constructor.

    Example:

    >>> model = language_model("mlstm", vocab_size=50, units=64, num_layers=2)
    >>> model(np.zeros((3, 7), "int32")).shape
    (3, 7, 50)
    """
    get_cell_class(cell)  # an unknown name first
    check_positive_int("vocab_size", vocab_size)
    check_positive_int("units", units)
    check_positive_int("num_layers", num_layers)
    if embedding_dim is not None:
        check_positive_int("embedding_dim", embedding_dim)
    output_dropout = dropout if output_dropout is None else output_dropout
    for name, rate in (("dropout", dropout), ("output_dropout", output_dropout)):
        check_number(name, rate, 0, 1, high_open=True)
    if stateful:
        check_positive_int("batch_size (required when stateful=True)", batch_size)
    takes_ids = check_token_id_cell(
        cell,
        num_layers=num_layers,
        embedding_dim=embedding_dim,
        tie_embeddings=tie_embeddings,
    )
    embedding_dim = embedding_dim or units

    ids = keras.Input(
        shape=(None,), dtype="int32", batch_size=batch_size if stateful else None
    )
    embedding = None
    if takes_ids:
        pass_vocab_size(cell, vocab_size, cell_options)
        x = keras.layers.Reshape((-1, 1), name="token_ids")(ids)
    else:
        embedding = keras.layers.ReversibleEmbedding(
            vocab_size, embedding_dim, tie_weights=True, name="embedding"
        )
        x = embedding(ids)
        if dropout:
            x = variational_dropout(dropout, "embedding_dropout")(x)
    x = recurrent_stack(
        x,
        cell,
        units,
        recurrent_names(num_layers, cell),
        cell_options,
        dropout=dropout,
        output_dropout=output_dropout,
        stateful=stateful,
    )
    if tie_embeddings:
        if units != embedding_dim:
            x = keras.layers.Dense(embedding_dim, use_bias=False, name="projection")(x)
        logits = embedding(x, reverse=True)
        # Under a mixed policy the tied decoder computes in the low precision;
        # the logits are float32 as the untied decoder's are.
        logits = keras.layers.Activation(None, dtype="float32", name="float32_logits")(
            logits
        )
    else:
        logits = keras.layers.Dense(vocab_size, dtype="float32", name="logits")(x)
    model = tensorflow_steps(keras.Model(ids, logits, name=f"{cell}_language_model"))
    return carry_state_on_jax(model) if stateful else model


def recognizer(
    cell,
    vocab_size,
    units,
    embedding_dim=None,
    num_layers=1,
    dropout=0.0,
    **cell_options,
):
    """Builds a recognizer from token ids to next-symbol logits and acceptance.

    The model maps int token ids `(batch, time)`, with 0 as padding, to a
    dict of two per-step heads:

    - `"next_symbol"`: logits `(batch, time, vocab_size)` of the next token;
    - `"accept"`: the probability `(batch, time, 1)` that the string is in
      the language (a sigmoid).

    Tokens go through an embedding with `mask_zero=True`, so padded steps
    neither change the recurrent state nor count in the loss; a cell that
    reads token ids (`takes_token_ids`, e.g. `tensor_rnn`) reads them
    directly, with the same mask. Compile with
    `model.compile(optimizer, **hybrid_recognition_loss())`; the targets are
    a dict with `"next_symbol"` ids `(batch, time)` and `"accept"` labels
    `(batch, time, 1)`, the shape of the head (Keras reduces a squared error
    over the last axis, so labels `(batch, time)` would be averaged over
    time before the mask applies): see `recognition_targets`.

    Args:
        cell: Registry name of the cell (see `zoo.available_cells()`).
        vocab_size: Positive integer, the number of token ids, padding 0
            included.
        units: Positive integer, the cell's hidden size.
        embedding_dim: Size of the embedding. Default: `units`.
        num_layers: Number of stacked recurrent layers (the first is named
            `"recurrent"`, the others `"recurrent_1"`, ...). Default: 1.
        dropout: Variational dropout rate in [0, 1) on the embedding and
            after each recurrent layer. Default: 0.
        **cell_options: Passed to the cell's constructor (for the stack
            cells: `stack_depth`, `noise_stddev`, ...).

    Example:

    >>> model = recognizer("diffstk_rnn", vocab_size=7, units=8, stack_depth=32)
    >>> model.compile("adam", **hybrid_recognition_loss())
    >>> outputs = model(np.ones((3, 5), "int32"))
    >>> outputs["next_symbol"].shape, outputs["accept"].shape
    ((3, 5, 7), (3, 5, 1))
    """
    ids, h, mask = masked_token_inputs(
        cell, vocab_size, units, embedding_dim, num_layers, dropout, cell_options
    )
    names = recurrent_names(num_layers)
    h = recurrent_stack(
        h, cell, units, names, cell_options, dropout, masked=True, mask=mask
    )
    outputs = {
        "next_symbol": keras.layers.Dense(
            vocab_size, dtype="float32", name="next_symbol"
        )(h),
        "accept": keras.layers.Dense(
            1, activation="sigmoid", dtype="float32", name="accept"
        )(h),
    }
    return tensorflow_steps(keras.Model(ids, outputs, name=f"{cell}_recognizer"))


def hybrid_recognition_loss():
    """Returns the `model.compile` arguments of Mali et al.'s hybrid loss.

    Per step, cross-entropy on the next symbol plus `0.5 (y_hat_t - y)^2` on
    the label (Mali et al. 2020, section 3): a
    `SparseCategoricalCrossentropy(from_logits=True)` on `"next_symbol"` and
    a `MeanSquaredError` with loss weight 0.5 on `"accept"`. Keras averages
    both over the unpadded steps (the paper sums over steps: the same
    minimum, a learning-rate scale).

    Example:

    >>> model.compile(keras.optimizers.Adam(2e-3), **hybrid_recognition_loss())
    >>> model.fit(ids, {"next_symbol": next_ids, "accept": labels})
    """
    return {
        "loss": {
            "next_symbol": keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            "accept": keras.losses.MeanSquaredError(),
        },
        "loss_weights": {"next_symbol": 1.0, "accept": 0.5},
    }


def recognition_targets(ids, labels):
    """Returns the per-step targets of `hybrid_recognition_loss` for `ids`.

    `"next_symbol"` is `ids` shifted left by one (the last step's target is
    0, the padding id, which is also every padded step's); `"accept"`,
    shape `(batch, time, 1)`, repeats each string's label `(batch,)` at
    every step, as in the paper's loss. Per-step labels `(batch, time)` (for
    example per-prefix membership) may be passed instead of `(batch,)`.

    Example:

    >>> targets = recognition_targets(np.array([[1, 3, 4, 2]]), np.array([1]))
    >>> targets["next_symbol"].tolist(), targets["accept"].tolist()
    ([[3, 4, 2, 0]], [[[1.0], [1.0], [1.0], [1.0]]])
    """
    ids = ops.convert_to_numpy(ids)
    labels = ops.convert_to_numpy(labels)
    if ids.ndim != 2 or labels.shape not in (ids.shape[:1], ids.shape):
        raise ValueError(
            "`ids` must have shape (batch, time) and `labels` shape (batch,) or "
            f"(batch, time); received {ids.shape} and {labels.shape}."
        )
    next_ids = ids * 0
    next_ids[:, :-1] = ids[:, 1:]
    if labels.ndim == 1:
        labels = labels[:, None] + 0 * ids
    return {"next_symbol": next_ids, "accept": labels[..., None].astype("float32")}


def trace_recognizer(model, ids):
    """Returns the per-step stack actions of a recognizer on a stack cell.

    Embeds `ids` `(batch, time)` with the model's embedding and runs
    `zoo.cells.stack_cell.trace_stack` on the cell of its bottom recurrent
    layer (both found by `zoo.model_parts`): a dict of
    `"actions"` `(batch, time, num_actions)` (PUSH, POP[, NO-OP]),
    `"stack_top"` `(batch, time, stack_width)` and `"outputs"`. Steps after
    a string's end (padding) are run like any other: read them up to each
    string's length.

    Example:

    >>> trace = trace_recognizer(model, np.array([[1, 3, 3, 4, 4, 2]]))
    >>> trace["actions"].shape
    (1, 6, 3)
    """
    parts = model_parts(model)
    embedded = parts.embedding(ops.convert_to_tensor(ids, "int32"))
    return trace_stack(parts.recurrent[0].cell, embedded)
