"""Per-token losses of a language model over a token stream, state carried.

The stream is read as `rows` contiguous rows (as `LanguageModelTask.evaluate`
reads a split), each in segments of `segment` tokens by a stateful copy of
the model, so the recurrent state runs from each row's start to its end.
"""

import keras
import numpy as np

import zoo
from training.core.compiled import compiled
from training.data import batching

LN2 = float(np.log(2.0))


def stateful_copy(build_model, model, rows):
    """A stateful model of batch size `rows` holding `model`'s weights.

    `build_model(stateful=..., batch_size=...)` builds the run's model (e.g. a
    task's `build_model`); `model` itself is never changed.
    """
    evaluator = build_model(stateful=True, batch_size=rows)
    evaluator.set_weights(model.get_weights())
    zoo.reset_states(evaluator)
    return evaluator


def check_stream(ids, rows, name="split"):
    """Returns `ids` as a 1-D int32 array; ValueError if too short for `rows`."""
    ids = np.asarray(ids, dtype="int32").reshape(-1)
    if len(ids) < rows + 1:
        raise ValueError(
            f"The {name} has {len(ids)} tokens; expected at least {rows + 1} "
            f"(one target per row, {rows} rows)."
        )
    return ids


def segments(ids, rows, segment):
    """`(inputs, targets)` pairs `(rows, <= segment)` covering the stream in order."""
    length = min(segment, (len(ids) - 1) // rows)
    return batching.tbptt_arrays(ids, rows, length, drop_remainder=False)


def segment_losses(model, inputs, targets):
    """Cross-entropy in nats of each target, `(rows, time)`, from `model`'s logits."""
    logits = model(inputs, training=False)
    return keras.losses.sparse_categorical_crossentropy(
        targets, logits, from_logits=True
    )


def token_losses(build_model, model, ids, rows=10, segment=400, jit_compile=False):
    """The loss in nats of every predicted token, `(rows, row_length)`.

    Row `r` holds the losses of the stream's `r`-th contiguous piece in order;
    the last `(len(ids) - 1) % rows` tokens are not scored. With
    `jit_compile`, the segments are scored by an XLA-compiled function (on
    JAX, always; `compiled.compiled`).
    """
    ids = check_stream(ids, rows)
    evaluator = stateful_copy(build_model, model, rows)
    # One graph for the recurrent loop (two traces: full and last segment);
    # called eagerly, keras.layers.RNN steps in Python, several times slower.
    score = compiled(
        evaluator,
        lambda inputs, targets: segment_losses(evaluator, inputs, targets),
        jit_compile=jit_compile,
    )
    pieces = [
        score(inputs, targets) for inputs, targets in segments(ids, rows, segment)
    ]
    return np.concatenate(pieces, axis=1)
