import numpy as np
import pytest

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


def test_tbptt_dataset_order_and_remainder():
    ids = np.arange(50)
    batches = list(batching.tbptt_dataset(ids, batch_size=2, sequence_length=6))
    assert len(batches) == 4  # rows of 24
    for (x0, _), (x1, _) in zip(batches, batches[1:], strict=False):
        np.testing.assert_array_equal(x1.numpy()[:, 0], x0.numpy()[:, -1] + 1)
    pieces = batching.tbptt_arrays(ids, 2, 7, drop_remainder=False)
    assert [p[0].shape for p in pieces] == [(2, 7), (2, 7), (2, 7), (2, 3)]
    np.testing.assert_array_equal(pieces[-1][1], pieces[-1][0] + 1)


def test_windows_are_shuffled_shifted_and_cover_the_stream():
    ids = np.arange(41)
    dataset = batching.window_dataset(ids, sequence_length=4, batch_size=2, seed=0)
    epoch1 = np.concatenate([x.numpy() for x, _ in dataset])
    epoch2 = np.concatenate([x.numpy() for x, _ in dataset])
    for x, y in dataset:
        np.testing.assert_array_equal(y.numpy(), x.numpy() + 1)
        np.testing.assert_array_equal(np.diff(x.numpy(), axis=1), 1)
    assert sorted(epoch1[:, 0].tolist()) == list(range(0, 40, 4))
    assert epoch1[:, 0].tolist() != sorted(epoch1[:, 0].tolist())
    assert epoch1[:, 0].tolist() != epoch2[:, 0].tolist()
    overlapping = batching.window_dataset(
        ids, 4, 100, stride=1, shuffle=False, drop_remainder=False
    )
    assert next(iter(overlapping))[0].shape == (37, 4)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"batch_size": 0}, "batch_size must be >= 1, got 0"),
        ({"sequence_length": 0}, "sequence_length must be >= 1, got 0"),
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
        batching.window_dataset(np.zeros((3, 3)), 2, 1)
