import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import keras
import numpy as np
import pytest
import tensorflow as tf

import zoo
from tests.training.tiny import TEXT, tiny_recipe
from training.core import compile_mode, fitting, sampled_softmax
from training.core.sampled_softmax import (
    LogUniformSampler,
    SampledSoftmaxModel,
    log_uniform_probability,
    sampled_softmax_loss,
)
from training.runs import runs
from training.tasks import make_task, recipes
from training.tasks.task import precision_policy

ROOT = Path(__file__).resolve().parents[3]


class EveryClass(keras.layers.Layer):
    """A sampler that draws every class once, each with an expected count of 1."""

    def __init__(self, num_classes, **kwargs):
        super().__init__(**kwargs)
        self.num_classes = num_classes
        self.built = True

    def sample(self):
        return keras.ops.arange(self.num_classes, dtype="int32")

    def expected_count(self, ids):
        return keras.ops.ones(keras.ops.shape(ids), "float32")


def full_cross_entropy(inputs, kernel, bias, labels):
    logits = inputs @ kernel + (0 if bias is None else bias)
    shifted = logits - logits.max(axis=-1, keepdims=True)
    log_z = np.log(np.exp(shifted).sum(axis=-1))
    return log_z - shifted[np.arange(len(labels)), labels]


def problem(tokens=12, dim=4, classes=7, seed=0):
    rng = np.random.default_rng(seed)
    return (
        rng.normal(size=(tokens, dim)).astype("float32"),
        rng.normal(size=(dim, classes)).astype("float32"),
        rng.normal(size=(classes,)).astype("float32"),
        rng.integers(0, classes, tokens).astype("int32"),
    )


@pytest.mark.parametrize("with_bias", [True, False])
def test_every_class_once_with_counts_of_one_is_the_full_cross_entropy(with_bias):
    # Each token's true class is also sampled: removing that accidental hit
    # leaves the true logit once, so the softmax is the full one.
    inputs, kernel, bias, labels = problem()
    bias = bias if with_bias else None
    classes = kernel.shape[1]
    losses = sampled_softmax_loss(
        inputs,
        kernel,
        bias,
        labels,
        np.arange(classes, dtype="int32"),
        np.ones(len(labels), "float32"),
        np.ones(classes, "float32"),
    )
    expected = full_cross_entropy(inputs, kernel, bias, labels)
    np.testing.assert_allclose(keras.ops.convert_to_numpy(losses), expected, rtol=1e-5)


def test_matches_tensorflows_sampled_softmax_loss():
    # TensorFlow removes one copy of an accidental hit (its default sampler
    # draws without replacement); ours removes every copy. Unique draws here.
    inputs, kernel, bias, labels = problem(tokens=40, classes=9)
    sampler = LogUniformSampler(6, 9, seed=3)
    sampled = np.array([0, 5, 1, 8, 3, 2], "int32")
    assert set(sampled) & set(labels)  # some accidental hits
    true_count = sampler.expected_count(labels)
    sampled_count = sampler.expected_count(sampled)
    ours = sampled_softmax_loss(
        inputs, kernel, bias, labels, sampled, true_count, sampled_count
    )
    theirs = tf.nn.sampled_softmax_loss(
        weights=kernel.T,
        biases=bias,
        labels=labels[:, None].astype("int64"),
        inputs=inputs,
        num_sampled=6,
        num_classes=9,
        sampled_values=(
            sampled.astype("int64"),
            true_count[:, None],
            sampled_count,
        ),
        remove_accidental_hits=True,
    )
    np.testing.assert_allclose(keras.ops.convert_to_numpy(ours), theirs, rtol=1e-5)


def test_every_copy_of_an_accidental_hit_is_left_out():
    inputs, kernel, bias, labels = problem(tokens=1, classes=5)
    counts = np.full(4, 2.0, "float32")
    others = [k for k in range(5) if k != labels[0]][:2]
    twice = np.array([labels[0], others[0], labels[0], others[1]], "int32")
    without = np.array([others[0], others[1]], "int32")
    losses = [
        sampled_softmax_loss(
            inputs, kernel, bias, labels, ids, np.ones(1, "float32"), counts[: len(ids)]
        )
        for ids in (twice, without)
    ]
    np.testing.assert_allclose(*map(keras.ops.convert_to_numpy, losses), rtol=1e-6)


def test_log_uniform_probabilities_are_tensorflows_and_the_draws_follow_them():
    classes, drawn = 20, 6
    probability = keras.ops.convert_to_numpy(
        log_uniform_probability(np.arange(classes), classes)
    )
    np.testing.assert_allclose(probability.sum(), 1.0, rtol=1e-6)
    assert np.all(np.diff(probability) < 0)  # frequent (low) ids first
    _, true_count, _ = tf.random.log_uniform_candidate_sampler(
        np.arange(classes, dtype="int64")[None, :],
        num_true=classes,
        num_sampled=drawn,
        unique=False,
        range_max=classes,
    )
    np.testing.assert_allclose(drawn * probability, true_count[0], rtol=1e-5)
    sampler = LogUniformSampler(100_000, classes, seed=1)
    ids = keras.ops.convert_to_numpy(sampler.sample())
    counts = np.bincount(ids, minlength=classes)
    assert len(counts) == classes
    np.testing.assert_allclose(counts / len(ids), probability, atol=0.004)


def fitted(model, sampler, inputs, targets, jit_compile):
    if sampler is not None:
        model = SampledSoftmaxModel(model, sampler)
    # As the fit path does: a test before may have left op determinism on,
    # under which Keras runs the graph instead of XLA (with a warning).
    compile_mode.configure_determinism(jit_compile)
    model.compile(
        optimizer=keras.optimizers.Adam(0.01),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        jit_compile=jit_compile,
    )
    if jit_compile is True:
        assert model.jit_compile  # not refused (op determinism left on)
    history = model.fit(inputs, targets, batch_size=4, epochs=2, shuffle=False)
    return history.history["loss"], model.get_weights()


@pytest.mark.parametrize(
    "tied, jit_compile, precision",
    [
        (False, False, "float32"),
        (False, True, "float32"),
        (True, False, "mixed_bfloat16"),  # two independent paths in one case
    ],
)
def test_every_class_once_trains_as_the_full_softmax(tied, jit_compile, precision):
    # Sampling every class once with counts of 1 is the full softmax: the
    # sampled training path (features, decoder weights, stateful state)
    # must then train exactly as the ordinary model does.
    vocab = 11
    rng = np.random.default_rng(0)
    ids = rng.integers(0, vocab, (8, 7)).astype("int32")
    inputs, targets = ids[:, :-1], ids[:, 1:]
    results = []
    for sampler in (None, EveryClass(vocab)):
        keras.utils.set_random_seed(0)
        with precision_policy(precision):
            model = zoo.language_model(
                "lstm",
                vocab,
                units=6,
                embedding_dim=5 if tied else 4,
                tie_embeddings=tied,
                stateful=True,
                batch_size=4,
            )
        results.append(fitted(model, sampler, inputs, targets, jit_compile))
    (full_loss, full_weights), (sampled_loss, sampled_weights) = results
    np.testing.assert_allclose(sampled_loss, full_loss, rtol=1e-5)
    for got, expected in zip(sampled_weights, full_weights, strict=True):
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-6)


def test_decoder_of_refuses_a_model_that_is_not_a_language_model():
    inputs = keras.Input((3,))
    model = keras.Model(inputs, keras.layers.Dense(2, name="head")(inputs))
    with pytest.raises(ValueError, match=r"^A sampled softmax .* received model"):
        sampled_softmax.decoder_of(model)


@pytest.mark.parametrize("value", [0, -2, True])
def test_sampler_refuses_a_count_that_is_not_positive(value):
    with pytest.raises(ValueError, match="num_sampled` must be a positive integer"):
        LogUniformSampler(value, 10)


@pytest.mark.parametrize(
    "kind, extra, message",
    [
        ("language_model", ["train.sampled_softmax=-1"], "must be >= 0"),
        ("language_model", ["train.sampled_softmax=true"], "must be of type int"),
        ("language_model", ["train.sampled_softmax=2.5"], "must be of type int"),
        ("dyck", ["train.sampled_softmax=4"], "task.kind 'dyck' does not take; exp"),
        (
            "language_model",
            ["train.sampled_softmax=4", "train.distribute=mirrored"],
            "train.distribute='mirrored'",
        ),
    ],
)
def test_bad_settings_are_one_line(kind, extra, message, text_file):
    with pytest.raises(recipes.RecipeError, match=message) as error:
        tiny_recipe(kind, text_file, extra)
    assert "\n" not in str(error.value)


def test_as_many_samples_as_the_vocabulary_is_one_line(text_file):
    recipe = tiny_recipe("language_model", text_file, ["train.sampled_softmax=9"])
    with pytest.raises(ValueError, match=r"9-token vocabulary; expected fewer than 9"):
        make_task(recipe)


def logged(run_dir):
    with open(run_dir / runs.LOG) as file:
        return [{k: float(v) for k, v in row.items()} for row in csv.DictReader(file)]


def full_validation_loss(task, path):
    """The full softmax's loss of the model at `path` on the validation data,
    computed as `fit` computes `val_loss` (stateful, state zeroed first)."""
    model = task.build_model()
    model.load_weights(path)
    model.compile(**task.compile_arguments())
    zoo.reset_states(model)
    return model.evaluate(task.validation_data(), verbose=0)


# The sampled run the two tests below read: 3 sampled classes, epochs of 30
# of the text's 62 batches (a resumed epoch 1 begins inside a pass over it).
SAMPLED = ["train.sampled_softmax=3", "train.epochs=3", "train.learning_rate=0.01"]
SAMPLED += ["train.max_steps_per_epoch=30"]


@pytest.fixture(scope="module")
def sampled_run(tmp_path_factory):
    """`(recipe, run directory, metrics)` of the tiny sampled language-model
    run, trained once (its corpus beside it)."""
    folder = tmp_path_factory.mktemp("sampled")
    corpus = folder / "corpus.txt"
    corpus.write_text(TEXT)
    recipe = tiny_recipe("language_model", corpus, SAMPLED)
    return recipe, folder / "run", runs.train_run(recipe, folder / "run")


def test_a_sampled_run_lowers_and_logs_the_full_validation_loss(sampled_run):
    recipe, run_dir, metrics = sampled_run
    task = make_task(recipe)
    keras.utils.set_random_seed(recipe.train.seed)
    untrained = task.build_model()
    untrained.compile(**task.compile_arguments())
    before = untrained.evaluate(task.validation_data(), verbose=0)
    rows = logged(run_dir)
    best = min(row["val_loss"] for row in rows)
    assert best < before - 0.3  # the sampled training lowers the full loss
    # val_loss is the full cross-entropy of the model kept (not the sampled one)
    np.testing.assert_allclose(
        full_validation_loss(task, run_dir / runs.BEST), best, rtol=1e-5
    )
    assert metrics["valid"]["cross_entropy"] < before - 0.3
    # best.keras is the ordinary language model, full decoder and all
    saved = keras.models.load_model(run_dir / runs.BEST)
    assert type(saved) is zoo.LanguageModel  # not a SampledSoftmaxModel
    assert saved.decoder.kernel.shape == (8, task.vocab_size)
    layers = [(type(layer), layer.name) for layer in saved.layers[1:]]
    assert layers == [(type(layer), layer.name) for layer in untrained.layers[1:]]
    reloaded = runs.load_run(run_dir).model
    for a, b in zip(saved.get_weights(), reloaded.get_weights(), strict=True):
        np.testing.assert_array_equal(a, b)


def test_a_resumed_sampled_run_ends_like_an_uninterrupted_one(sampled_run, tmp_path):
    # The sampler's seed state is in the backup: the epochs after the resume
    # draw the classes the uninterrupted run drew, and the dropout masks
    # (output dropout 0.25). The resumed epoch 1 begins inside a pass over
    # the text (`SAMPLED`).
    recipe, run_dir, uninterrupted = sampled_run
    assert recipe.model.output_dropout > 0

    class Kill(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            if epoch == 1:
                raise RuntimeError("killed")

    with pytest.raises(RuntimeError, match="killed"):
        runs.train_run(recipe, tmp_path / "b", callbacks=[Kill()])
    assert runs.train_run(recipe, tmp_path / "b") == uninterrupted
    logs = [(path / runs.LOG).read_text() for path in (run_dir, tmp_path / "b")]
    assert logs[0] == logs[1]


def test_fit_trains_the_sampled_view_and_keeps_the_models_weights(text_file):
    recipe = tiny_recipe(
        "language_model",
        text_file,
        ["train.sampled_softmax=4", "train.max_steps_per_epoch=3"],
    )
    task = make_task(recipe)
    model = task.build_model()
    before = [w.copy() for w in model.get_weights()]
    fitting.fit(model, task, epochs=1)
    after = model.get_weights()  # the task's model itself was trained
    assert any(not np.array_equal(a, b) for a, b in zip(before, after, strict=True))


JAX_DRIVER = """
import json, sys
import keras, numpy as np
import zoo
from tests.training.core import sampled_softmax_test as t

vocab = 11
ids = np.random.default_rng(0).integers(0, vocab, (8, 7)).astype("int32")
results = []
for sampler in (None, t.EveryClass(vocab)):
    keras.utils.set_random_seed(0)
    model = zoo.language_model("lstm", vocab, 6, 4, stateful=True, batch_size=4)
    results.append(t.fitted(model, sampler, ids[:, :-1], ids[:, 1:], "auto"))
(full, _), (every, _) = results
keras.utils.set_random_seed(0)
model = zoo.language_model("lstm", vocab, 6, 4)
sampled = t.SampledSoftmaxModel(model, t.LogUniformSampler(3, vocab, seed=0))
sampled.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
history = sampled.fit(ids[:, :-1], ids[:, 1:], epochs=2, verbose=0,
                      validation_data=(ids[:, :-1], ids[:, 1:]))
json.dump({"full": full, "every": every, "val_loss": history.history["val_loss"],
           "state": np.asarray(sampled.sampler.seed_generator.state).tolist()},
          open(sys.argv[1], "w"))
"""


@pytest.mark.processes
def test_trains_on_jax(tmp_path):
    out = tmp_path / "jax.json"
    result = subprocess.run(
        [sys.executable, "-c", JAX_DRIVER, str(out)],
        cwd=ROOT,
        env={**os.environ, "KERAS_BACKEND": "jax", "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    found = json.loads(out.read_text())
    np.testing.assert_allclose(found["every"], found["full"], rtol=1e-5)
    assert all(np.isfinite(found["val_loss"]))
    assert found["state"][1] == 2  # one draw a step, one step an epoch
