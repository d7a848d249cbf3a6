"""Batching: truncated BPTT for a token stream, and the epoch-keyed shuffle.

- `tbptt_arrays`: truncated back-propagation through time. The stream is cut
  into `batch_size` contiguous rows; step i of row b is `row_b[i*T:(i+1)*T]`,
  so row b of every batch continues row b of the previous batch and a
  stateful RNN can carry its state across batches (reset the state at the
  start of each epoch). Targets are the inputs shifted by one token.
- `epoch_shuffled`: batches of arrays in an order fixed by `(seed, epoch)`,
  with the `DataEpoch` callback that tells the dataset the epoch;
  `epoch_batches`, how many batches each epoch of a curriculum holds;
- `capped_epochs`: epochs of a few batches of an endless stream
  (`train.max_steps_per_epoch`), each epoch's batches fixed by its number.
"""

from __future__ import annotations

import keras
import numpy as np
import tensorflow as tf


def _check(ids, batch_size, sequence_length, needed):
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1; received {batch_size}.")
    if sequence_length < 1:
        raise ValueError(f"sequence_length must be >= 1; received {sequence_length}.")
    ids = np.asarray(ids)
    if ids.ndim != 1:
        raise ValueError(f"ids must be a 1-D token stream; received shape {ids.shape}.")
    if len(ids) < needed:
        raise ValueError(
            f"token stream of {len(ids)} ids is too short; expected at least {needed} "
            f"for batch_size={batch_size}, sequence_length={sequence_length}"
        )
    return ids


def tbptt_arrays(ids, batch_size, sequence_length, drop_remainder=True):
    """Inputs and targets for truncated BPTT, shape `(steps, batch, T)`.

    Args:
        ids: 1-D int token stream.
        batch_size: number of parallel rows.
        sequence_length: BPTT length T.
        drop_remainder: drop the last, shorter step (keeps every batch
            `(batch, T)`, as a stateful layer with a fixed batch needs).
            Otherwise the last step is returned separately.

    Returns:
        `(inputs, targets)` int32 arrays `(steps, batch, T)`; with
        `drop_remainder=False`, a list of `(inputs, targets)` pairs instead,
        the last one possibly shorter than T.
    """
    ids = _check(ids, batch_size, sequence_length, batch_size * sequence_length + 1)
    row_length = (len(ids) - 1) // batch_size
    inputs = ids[: row_length * batch_size].reshape(batch_size, row_length)
    targets = ids[1 : row_length * batch_size + 1].reshape(batch_size, row_length)
    steps = row_length // sequence_length
    if drop_remainder:
        shape = (batch_size, steps, sequence_length)
        cut = steps * sequence_length
        return (
            inputs[:, :cut].reshape(shape).transpose(1, 0, 2).astype(np.int32),
            targets[:, :cut].reshape(shape).transpose(1, 0, 2).astype(np.int32),
        )
    return [
        (
            inputs[:, start : start + sequence_length].astype(np.int32),
            targets[:, start : start + sequence_length].astype(np.int32),
        )
        for start in range(0, row_length, sequence_length)
    ]


class DataEpoch(keras.callbacks.Callback):
    """Tells an epoch-keyed dataset the epoch that begins (`epoch_shuffled`,
    `capped_epochs`).

    A training begins at epoch 0, as a new dataset does, whatever epoch the
    last training (or a direct `on_epoch_begin`) left: one dataset serves
    several fits as new ones would.
    """

    def __init__(self, epoch_variable):
        super().__init__()
        self.epoch_variable = epoch_variable

    def on_train_begin(self, logs=None):
        self.epoch_variable.assign(0)

    def on_epoch_begin(self, epoch, logs=None):
        self.epoch_variable.assign(epoch)


def epoch_shuffled(
    arrays, batch_size, seed, *, lengths=None, limits=None, steps_per_epoch=None
):
    """A dataset of `arrays` batches in an order fixed by `(seed, epoch)`.

    Unlike `Dataset.shuffle`, whose order depends on how many times the
    dataset was iterated in this process, the order here is a function of the
    epoch number alone, so a run resumed by `BackupAndRestore` sees the same
    batches as an uninterrupted one. Returns the dataset and the
    `DataEpoch` callback that tells it the epoch; pass both to `fit`.

    Every batch holds `batch_size` rows (all rows, if there are fewer): the
    rows left over after the last full batch of an epoch wait for the next
    epoch's order, so a compiled (XLA) step sees one shape and never
    recompiles.

    With `lengths` `(N,)` and `limits` `(epochs,)`, epoch e holds only the
    rows whose length is <= `limits[e]` (the last limit after the last
    epoch): incremental (curriculum) training, `curriculum_limits`. The
    dataset's length then changes from epoch to epoch and TensorFlow cannot
    know it: `epoch_batches` gives it, epoch by epoch, for `model.fit`.

    With `steps_per_epoch` (`train.max_steps_per_epoch`), epochs are instead
    that many batches of an endless stream of passes over the rows, pass p
    in epoch p's order (and with epoch p's limit): `capped_epochs`.
    """
    if (lengths is None) != (limits is None):
        raise ValueError("lengths and limits go together; received only one of them.")
    epoch = tf.Variable(0, dtype=tf.int64, trainable=False)
    count = len(arrays[0])
    size = min(batch_size, count)
    if limits is not None:
        fewest = min(int((np.asarray(lengths) <= limit).sum()) for limit in limits)
        if fewest < size:
            raise ValueError(
                f"An epoch's length limit keeps {fewest} rows, fewer than one "
                f"batch of {size}; expected limits that keep at least a batch."
            )
    tensors = tuple(tf.constant(a) for a in arrays)
    if limits is not None:
        lengths = tf.constant(np.asarray(lengths, dtype=np.int64))
        limits = tf.constant(np.asarray(limits, dtype=np.int64))

    def rows_of(key):  # the rows of epoch `key`, in its order
        order = tf.random.experimental.stateless_shuffle(
            tf.range(count), seed=tf.stack([tf.constant(seed, tf.int64), key])
        )
        if limits is not None:
            limit = tf.gather(limits, tf.minimum(key, tf.size(limits, tf.int64) - 1))
            order = tf.boolean_mask(order, tf.gather(lengths, order) <= limit)
        return tuple(tf.gather(t, order) for t in tensors)

    def one_pass(key):  # the batches of epoch `key`
        rows = tf.data.Dataset.from_tensor_slices(rows_of(key))
        return rows.batch(size, drop_remainder=True)

    def passes(first):  # passes first, first + 1, ...: pass p in epoch p's order
        return tf.data.Dataset.range(first, tf.int64.max).flat_map(one_pass)

    if steps_per_epoch is not None:
        pass_batches = count // size if limits is None else None
        return capped_epochs(passes, steps_per_epoch, pass_batches)
    dataset = tf.data.Dataset.range(1).map(lambda _: rows_of(epoch)).unbatch()
    return dataset.batch(size, drop_remainder=True), DataEpoch(epoch)


def capped_epochs(passes, steps_per_epoch, pass_batches=None):
    """Epochs of `steps_per_epoch` batches, one after another, of an endless stream.

    The stream is `passes(0)`, where `passes(p)` (`p` an int64 scalar
    tensor) is the dataset of passes p, p + 1, ... over the training data,
    endless. Epoch e holds the stream's batches `e * steps_per_epoch` to
    `(e + 1) * steps_per_epoch - 1`, as with Keras reading a repeated
    dataset for `steps_per_epoch` (`train.max_steps_per_epoch`), so an epoch
    may end inside a pass and the next go on from there.

    An iterator of the dataset returned starts at the first batch of the
    epoch its `DataEpoch` callback was last told of when the iterator was
    made. Keras (3.15's `EpochIterator`) makes one iterator for all the
    epochs of a `fit` with `steps_per_epoch`, after the first epoch's
    `on_epoch_begin`, so a run resumed at epoch e reads on from batch
    `e * steps_per_epoch`, as the uninterrupted run did, instead of from
    the stream's start. With `pass_batches` (every pass's batches, where
    they are all alike) it starts at the pass that holds that batch;
    otherwise it reads the passes before it and drops them. Returns the
    dataset (of infinite cardinality) and the callback; pass both to `fit`.
    """
    epoch = tf.Variable(0, dtype=tf.int64, trainable=False)

    def from_epoch(_):
        start = epoch * steps_per_epoch
        if pass_batches is None:
            return passes(tf.constant(0, tf.int64)).skip(start)
        return passes(start // pass_batches).skip(start % pass_batches)

    stream = tf.data.Dataset.range(1).flat_map(from_epoch)
    endless = tf.data.experimental.assert_cardinality(tf.data.INFINITE_CARDINALITY)
    return stream.apply(endless), DataEpoch(epoch)


def epoch_batches(lengths, limits, batch_size):
    """The batches of each epoch of `epoch_shuffled(..., lengths=, limits=)`.

    Epoch e holds the full batches of the rows of length <= `limits[e]`
    (batches of `batch_size`, or of all rows if there are fewer).

    Returns:
        A tuple of ints, one per limit.
    """
    lengths = np.asarray(lengths)
    size = min(batch_size, len(lengths))
    return tuple(int((lengths <= limit).sum()) // size for limit in limits)


def curriculum_limits(lengths, epochs):
    """Per-epoch maximum string length of incremental (curriculum) training.

    Mali et al. (2020, section 4, Table 3) compare sequential training (every
    string, every epoch) with incremental training (Das et al.; curriculum
    learning), feeding strings in increasing length, without a schedule. Ours:
    over the first half of the epochs (`stages = max(1, epochs // 2)`) the
    limit grows linearly from the shortest to the longest training length,
    `shortest + (longest - shortest) * (e + 1) / stages` at epoch e; every
    string seen once stays in (the set grows), and from epoch `stages - 1` on
    the model trains on all strings, as sequential training does.

    Returns:
        int64 `(epochs,)` limits: epoch e trains on strings of length <= it.
    """
    lengths = np.asarray(lengths)
    shortest, longest = int(lengths.min()), int(lengths.max())
    stages = max(1, epochs // 2)
    fraction = np.minimum(np.arange(1, epochs + 1) / stages, 1.0)
    return np.ceil(shortest + (longest - shortest) * fraction).astype(np.int64)
