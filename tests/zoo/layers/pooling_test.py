import keras
import numpy as np
import pytest
import tensorflow as tf

from zoo.layers.pooling import SequencePooling


def sequences(seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(3, 5, 4)).astype("float32") - 3.0  # all negative, mostly
    mask = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1], [1, 0, 0, 0, 0]], bool)
    return x, mask


def reference(x, mask, mode):
    rows = []
    for row, keep in zip(x, mask, strict=True):
        kept = row[keep]
        rows.append(kept.mean(0) if mode == "mean" else kept.max(0))
    return np.stack(rows)


@pytest.mark.parametrize("mode", ["mean", "max"])
def test_pools_the_unmasked_steps_only(mode):
    x, mask = sequences()
    pooled = SequencePooling(mode)(x, mask=mask)
    np.testing.assert_allclose(pooled, reference(x, mask, mode), rtol=1e-6)
    # Padded steps may hold anything: the pooled vectors stay the same.
    noisy = np.where(mask[..., None], x, 100.0).astype("float32")
    np.testing.assert_allclose(SequencePooling(mode)(noisy, mask=mask), pooled)


@pytest.mark.parametrize("mode", ["mean", "max"])
def test_without_a_mask_every_step_counts_and_an_empty_row_is_zero(mode):
    x, _ = sequences(1)
    pooled = SequencePooling(mode)(x)
    np.testing.assert_allclose(pooled, reference(x, np.ones((3, 5), bool), mode))
    empty = np.zeros((3, 5), bool)
    np.testing.assert_array_equal(SequencePooling(mode)(x, mask=empty), 0.0)


def test_takes_the_mask_of_an_embedding_and_gives_none():
    ids = keras.Input((None,), dtype="int32")
    embedded = keras.layers.Embedding(6, 4, mask_zero=True)(ids)
    pooled = SequencePooling("mean")(embedded)
    model = keras.Model(ids, pooled)
    tokens = np.array([[1, 2, 0, 0]], "int32")
    table = np.asarray(model.layers[1].embeddings)
    np.testing.assert_allclose(model(tokens)[0], table[[1, 2]].mean(0), rtol=1e-6)
    assert SequencePooling("max").compute_mask(embedded, None) is None


def test_gradient_reaches_only_the_maximum():
    x, mask = sequences(2)
    variable = keras.Variable(x)
    with tf.GradientTape() as tape:
        total = keras.ops.sum(SequencePooling("max")(variable, mask=mask))
    gradient = np.asarray(tape.gradient(total, variable))
    masked = np.where(mask[..., None], x, -np.inf)
    expected = (masked == masked.max(axis=1, keepdims=True)).astype("float32")
    np.testing.assert_array_equal(gradient, expected)


def test_save_and_load(tmp_path):
    x, mask = sequences(3)
    inputs = keras.Input((5, 4))
    model = keras.Model(inputs, SequencePooling("max")(inputs))
    path = tmp_path / "pooling.keras"
    model.save(path)
    restored = keras.models.load_model(path)
    (pooling,) = restored.layers[1:]
    assert isinstance(pooling, SequencePooling) and pooling.mode == "max"
    np.testing.assert_array_equal(restored(x), model(x))


def test_invalid_arguments():
    with pytest.raises(ValueError, match="`mode` must be one of 'mean', 'max'"):
        SequencePooling("last")
    with pytest.raises(ValueError, match=r"\(batch, time, features\); received"):
        SequencePooling("mean")(np.zeros((3, 4), "float32"))
