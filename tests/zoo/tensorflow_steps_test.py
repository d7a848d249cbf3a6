"""Groups of training steps in one XLA call (zoo/tensorflow_steps.py)."""

import keras
import numpy as np
import pytest
import tensorflow as tf

import zoo
from zoo.recognizer_training import hybrid_recognition_loss, recognition_targets
from zoo.tensorflow_steps import groups_steps

pytestmark = pytest.mark.skipif(
    keras.backend.backend() != "tensorflow", reason="the grouping is TensorFlow's"
)

VOCAB, UNITS, BATCH, TIME = 6, 4, 4, 7


def dataset(batches=8, lengths=None, seed=0):
    """Recognizer batches; `lengths` pads each batch to its own length."""
    rng = np.random.default_rng(seed)
    ids = rng.integers(1, VOCAB, (batches * BATCH, TIME)).astype("int32")
    targets = recognition_targets(ids, rng.integers(0, 2, batches * BATCH))
    data = tf.data.Dataset.from_tensor_slices((ids, targets)).batch(BATCH)
    if lengths is not None:
        trimmed = [
            tf.data.Dataset.from_tensors(
                (x[:, :length], {k: v[:, :length] for k, v in y.items()})
            )
            for (x, y), length in zip(data, lengths, strict=False)
        ]
        data = trimmed[0]
        for more in trimmed[1:]:
            data = data.concatenate(more)
    return data


def trained(grouped, data, steps_per_execution=4, jit_compile=True, epochs=2):
    keras.utils.set_random_seed(0)
    model = zoo.recognizer("lstm", vocab_size=VOCAB, units=UNITS)
    if not grouped:  # Keras's own train function
        model.make_train_function = keras.Model.make_train_function.__get__(model)
    model.compile(
        keras.optimizers.Adam(1e-2),
        jit_compile=jit_compile,
        steps_per_execution=steps_per_execution,
        **hybrid_recognition_loss(),
    )
    # Each trace of the step, kept in `model.traced` (the instance's
    # `train_step` is what the train functions call)
    model.traced, step = [], model.train_step
    model.train_step = lambda batch: model.traced.append(1) or step(batch)
    # The dataset is the order; shuffle=True (the default) would warn.
    history = model.fit(data, epochs=epochs, shuffle=False, verbose=0)
    return model, history.history["loss"]


# Groups of 4 over one dataset that takes every path: two whole groups of
# one length each (7, then 5: the group is compiled for each), a group whose
# batches differ in length (its steps run one call each), and a last group
# the data end inside (one batch); over two epochs, the second starting
# where a group was cut short.
LENGTHS = [7, 7, 7, 7, 5, 5, 5, 5, 7, 7, 5, 7, 7]


def test_training_equals_keras_grouped_steps():
    # Keras's reference trains its groups in the graph: the steps and their
    # order are what is compared, and XLA's compiles of Keras's own step
    # (one for each length) would double the test's time.
    data = dataset(len(LENGTHS), LENGTHS)
    keras_model, keras_losses = trained(False, data, jit_compile=False)
    zoo_model, zoo_losses = trained(True, data)
    np.testing.assert_allclose(zoo_losses, keras_losses, rtol=1e-6)
    for want, got in zip(
        keras_model.get_weights(), zoo_model.get_weights(), strict=True
    ):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert int(zoo_model.optimizer.iterations) == 2 * len(LENGTHS)
    function = zoo_model.train_function
    assert function.group.experimental_get_tracing_count() >= 1
    assert function.one_step.experimental_get_tracing_count() >= 1


def test_a_group_runs_as_one_compiled_call():
    model, _ = trained(True, dataset(8), epochs=1)
    assert groups_steps(model)
    function = model.train_function
    assert function.group.experimental_get_tracing_count() >= 1  # two groups of 4
    assert function.one_step.experimental_get_tracing_count() == 0  # no step alone
    # the group program holds the step once, traced once (its loss trackers
    # are built before the first trace)
    assert len(model.traced) == 1
    assert int(model.optimizer.iterations) == 8


@pytest.mark.parametrize(
    "settings",
    [{"steps_per_execution": 1}, {"jit_compile": False}],
    ids=["one_step", "graph"],
)
def test_keras_runs_its_own_steps_otherwise(settings):
    # The choice is made when the train function is made (the first thing
    # `fit` does); making it is enough to see which one `fit` would run, and
    # spares an XLA compile that the test does not look at.
    model = zoo.recognizer("lstm", vocab_size=VOCAB, units=UNITS)
    arguments = {"jit_compile": True, "steps_per_execution": 4, **settings}
    model.compile(keras.optimizers.Adam(1e-2), **arguments, **hybrid_recognition_loss())
    function = model.make_train_function()
    assert not groups_steps(model)
    assert function is model.train_function
    assert model.train_function.__module__.startswith("keras")


def test_train_on_batch_and_other_backends_are_keras_own():
    model = zoo.recognizer("lstm", vocab_size=VOCAB, units=UNITS)
    model.compile(
        "adam", jit_compile=True, steps_per_execution=4, **hybrid_recognition_loss()
    )
    x, y = next(iter(dataset(1)))
    before = model.optimizer.iterations.numpy()
    model.train_on_batch(x, y)
    assert model.optimizer.iterations.numpy() == before + 1
