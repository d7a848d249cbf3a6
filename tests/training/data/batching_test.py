import numpy as np
import pytest
import tensorflow as tf

from training.data import batching


def test_tbptt_rows_continue_across_batches():
    ids = np.arange(103)
    inputs, targets = batching.tbptt_arrays(ids, batch_size=4, sequence_length=5)
    # 102 usable transitions -> rows of 25 -> 5 steps of 5.
    assert inputs.shape == targets.shape == (5, 4, 5)
    np.testing.assert_array_equal(targets, inputs + 1)
    for step in range(4):
        # Row b of step i+1 starts where row b of step i ended.
        np.testing.assert_array_equal(inputs[step + 1][:, 0], inputs[step][:, -1] + 1)
    np.testing.assert_array_equal(inputs[0][:, 0], [0, 25, 50, 75])
    # Every row is one contiguous piece of the stream.
    rows = inputs.transpose(1, 0, 2).reshape(4, -1)
    np.testing.assert_array_equal(rows, np.arange(100).reshape(4, 25))


def test_tbptt_remainder():
    pieces = batching.tbptt_arrays(np.arange(50), 2, 7, drop_remainder=False)
    assert [p[0].shape for p in pieces] == [(2, 7), (2, 7), (2, 7), (2, 3)]
    np.testing.assert_array_equal(pieces[-1][1], pieces[-1][0] + 1)


def test_epoch_shuffle_depends_on_the_epoch_alone():
    arrays = (np.arange(20), np.arange(20) * 10)
    dataset, callback = batching.epoch_shuffled(arrays, batch_size=20, seed=7)

    def order(epoch):
        callback.on_epoch_begin(epoch)
        ((inputs, targets),) = list(dataset.as_numpy_iterator())
        np.testing.assert_array_equal(targets, inputs * 10)  # rows stay aligned
        return inputs.tolist()

    first, second = order(0), order(1)
    assert sorted(first) == list(range(20)) and first != second
    assert order(0) == first and order(1) == second


def test_a_new_training_reads_epoch_0_again():
    # One dataset, several fits (a search trial's seeds): each training
    # starts where a new dataset would, not at the last fit's last epoch.
    arrays = (np.arange(20),)
    dataset, callback = batching.epoch_shuffled(arrays, batch_size=20, seed=7)
    first = [b.tolist() for (b,) in dataset.as_numpy_iterator()]
    callback.on_epoch_begin(3)
    assert [b.tolist() for (b,) in dataset.as_numpy_iterator()] != first
    callback.on_train_begin()
    assert [b.tolist() for (b,) in dataset.as_numpy_iterator()] == first


def test_epoch_limits_keep_only_strings_up_to_that_epochs_length():
    lengths = np.array([1, 5, 2, 9, 3, 7])
    arrays = (np.arange(6),)
    dataset, callback = batching.epoch_shuffled(
        arrays, batch_size=2, seed=0, lengths=lengths, limits=[2, 7]
    )

    def rows(epoch):
        callback.on_epoch_begin(epoch)
        batches = [b[0] for b in dataset.as_numpy_iterator()]
        assert all(len(b) == 2 for b in batches)  # full batches only: one shape
        return sorted(np.concatenate(batches))

    assert rows(0) == [0, 2]  # lengths 1 and 2
    # All but the length-9 string are eligible; the fifth waits for an epoch.
    assert len(rows(1)) == 4 and set(rows(1)) < {0, 1, 2, 4, 5}
    assert rows(5) == rows(1)  # after the last epoch, the last limit
    # what fit tells Keras of each epoch's length
    assert batching.epoch_batches(lengths, [2, 7], batch_size=2) == (1, 2)
    assert batching.epoch_batches(lengths, [9], batch_size=10) == (1,)  # all 6
    with pytest.raises(ValueError, match="lengths and limits go together"):
        batching.epoch_shuffled(arrays, batch_size=6, seed=0, lengths=lengths)
    with pytest.raises(ValueError, match="keeps 2 rows, fewer than one batch of 3"):
        batching.epoch_shuffled(
            arrays, batch_size=3, seed=0, lengths=lengths, limits=[2, 7]
        )


def capped_reads(dataset, callback, first, last, steps):
    """Each epoch's batches from `first` to `last`, read as Keras reads them:
    one iterator, made after the first epoch begins; the first column only."""
    callback.on_epoch_begin(first)
    iterator = iter(dataset)
    epochs = []
    for epoch in range(first, last + 1):
        callback.on_epoch_begin(epoch)
        epochs.append([next(iterator)[0].numpy().tolist() for _ in range(steps)])
    return epochs


@pytest.mark.parametrize("curriculum", [False, True])
def test_capped_epochs_are_fixed_by_their_number(curriculum):
    # 10 rows in batches of 3 (3 batches a pass, with the curriculum 1 to 3),
    # epochs of 2 batches: most epochs begin inside a pass.
    arrays = (np.arange(10), np.arange(10) * 10)
    order = {}
    if curriculum:
        order = {"lengths": np.arange(10) % 5, "limits": [1, 2, 4]}
    arguments = {"arrays": arrays, "batch_size": 3, "seed": 7, **order}
    stream, callback = batching.epoch_shuffled(**arguments, steps_per_epoch=2)
    assert stream.cardinality() == tf.data.INFINITE_CARDINALITY
    uninterrupted = capped_reads(stream, callback, 0, 6, steps=2)
    for first in range(1, 7):  # a run resumed at epoch `first`
        assert capped_reads(stream, callback, first, 6, 2) == uninterrupted[first:]
    # the stream: pass p over the rows in the order of uncapped epoch p
    dataset, epoch = batching.epoch_shuffled(**arguments)
    passes = []
    for p in range(6):
        epoch.on_epoch_begin(p)
        passes += [batch[0].tolist() for batch in dataset.as_numpy_iterator()]
    assert sum(uninterrupted, []) == passes[:14]


def test_capped_epochs_of_one_repeated_dataset():
    # A stateful language model's batches, in order: epochs of 3 of its 4.
    text = tf.data.Dataset.from_tensor_slices((np.arange(4), np.arange(4)))
    stream, callback = batching.capped_epochs(lambda p: text.repeat(), 3, 4)
    uninterrupted = capped_reads(stream, callback, 0, 4, steps=3)
    assert sum(uninterrupted, []) == [0, 1, 2, 3] * 3 + [0, 1, 2]
    for first in range(1, 5):
        assert capped_reads(stream, callback, first, 4, 3) == uninterrupted[first:]


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"batch_size": 0}, "batch_size must be >= 1; received 0"),
        ({"sequence_length": 0}, "sequence_length must be >= 1; received 0"),
        (
            {"batch_size": 20, "sequence_length": 10},
            "token stream of 100 ids is too short; expected at least 201",
        ),
    ],
)
def test_bad_arguments(kwargs, message):
    arguments = {"batch_size": 2, "sequence_length": 5, **kwargs}
    with pytest.raises(ValueError, match=message) as info:
        batching.tbptt_arrays(np.arange(100), **arguments)
    assert "\n" not in str(info.value)


def test_bad_ids_shape():
    with pytest.raises(ValueError, match="1-D token stream"):
        batching.tbptt_arrays(np.zeros((3, 3)), 2, 1)
