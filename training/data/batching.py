"""Batching a token stream for language modelling.

- `tbptt_arrays` / `tbptt_dataset`: truncated back-propagation through time.
  The stream is cut into `batch_size` contiguous rows; step i of row b is
  `row_b[i*T:(i+1)*T]`, so row b of every batch continues row b of the previous
  batch and a stateful RNN can carry its state across batches (call
  `reset_state()` at the start of each epoch). Targets are the inputs shifted by
  one token.
- `window_dataset`: fixed-length windows at shuffled start positions for
  stateless training (reshuffled every epoch).
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf


def _check(ids, batch_size, sequence_length, needed):
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    if sequence_length < 1:
        raise ValueError(f"sequence_length must be >= 1, got {sequence_length}")
    ids = np.asarray(ids)
    if ids.ndim != 1:
        raise ValueError(f"ids must be a 1-D token stream, got shape {ids.shape}")
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


def tbptt_dataset(ids, batch_size, sequence_length):
    """`tf.data.Dataset` of `(inputs, targets)` batches `(batch, T)` in order.

    Not shuffled, on purpose: batch i+1 continues batch i row by row.
    """
    inputs, targets = tbptt_arrays(ids, batch_size, sequence_length)
    return tf.data.Dataset.from_tensor_slices((inputs, targets))


def window_dataset(
    ids,
    sequence_length,
    batch_size,
    *,
    stride=None,
    shuffle=True,
    seed=0,
    drop_remainder=True,
):
    """Fixed-length windows `(inputs, targets)` at shuffled start positions.

    Window j starts at `j * stride` (default stride: `sequence_length`, so
    windows do not overlap) and targets are the inputs shifted by one token.

    Args:
        ids: 1-D int token stream.
        sequence_length: window length T.
        batch_size: windows per batch.
        stride: distance between window starts.
        shuffle: shuffle windows, differently every epoch (seeded).
        seed: shuffle seed.
        drop_remainder: drop a last incomplete batch.
    """
    ids = _check(ids, batch_size, sequence_length, sequence_length + 1)
    stride = sequence_length if stride is None else stride
    if stride < 1:
        raise ValueError(f"stride must be >= 1, got {stride}")
    starts = np.arange(0, len(ids) - sequence_length, stride, dtype=np.int64)
    stream = tf.constant(ids.astype(np.int32))
    dataset = tf.data.Dataset.from_tensor_slices(starts)
    if shuffle:
        dataset = dataset.shuffle(len(starts), seed=seed, reshuffle_each_iteration=True)

    def window(start):
        chunk = stream[start : start + sequence_length + 1]
        return chunk[:-1], chunk[1:]

    return dataset.map(window).batch(batch_size, drop_remainder=drop_remainder)
