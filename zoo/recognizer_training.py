"""Training and reading a recognizer (`zoo.Recognizer`): Mali et al.'s
hybrid loss, its per-step targets, and the stack actions a model takes."""

import keras
from keras import ops

from zoo.cells.stack_cell import trace_stack
from zoo.model_parts import model_parts


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
