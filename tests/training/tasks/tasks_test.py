import keras
import numpy as np
import pytest
import tensorflow as tf

from tests.training.data.shared_data import SHARED
from tests.training.tiny import TINY, tiny_recipe
from training.core import fitting
from training.core.callbacks import ResetStatesEachEpoch
from training.core.metrics import bracket_prediction_accuracy
from training.data import (
    blimp_sentences,
    corpora,
    dyck_strings,
    files,
    recognition_sets,
    tokenize,
)
from training.data.batching import DataEpoch, curriculum_limits
from training.runs import runs
from training.tasks import ClosingBracketTask, make_task, recipes
from training.tasks import task as task_module
from zoo.cells.dyck_rnn import set_designed_weights
from zoo.dyck_model import dyck_rnn_model

K, M = 2, 4


def test_train_data_comes_with_its_callbacks(text_file):
    dyck_task = make_task(tiny_recipe("dyck"))
    dataset, callbacks = dyck_task.train_data()
    assert [type(c) for c in callbacks] == [DataEpoch]
    inputs, targets, mask = next(iter(dataset))
    assert inputs.shape == targets.shape == mask.shape
    assert inputs.shape[0] == dyck_task.recipe.train.batch_size

    uncapped = ["train.max_steps_per_epoch=null"]
    stateful = make_task(tiny_recipe("language_model", text_file, uncapped))
    [reset] = stateful.train_data()[1]
    assert type(reset) is ResetStatesEachEpoch and reset.every is None
    every = make_task(
        tiny_recipe("language_model", text_file, ["train.reset_every=16"])
    )
    assert every.train_data()[1][0].every == 16
    stateless = make_task(
        tiny_recipe("language_model", text_file, ["train.stateful=false"])
    )
    assert [type(c) for c in stateless.train_data()[1]] == [DataEpoch]


@pytest.mark.parametrize("kind", sorted(TINY))
def test_capped_epochs_read_an_endless_stream_from_where_the_epoch_begins(
    kind, text_file
):
    # train.max_steps_per_epoch=2: epoch 3 starts at the stream's batch 6,
    # whether the run read epochs 0 to 2 first or resumed there.
    recipe = tiny_recipe(kind, text_file, ["train.max_steps_per_epoch=2"])
    dataset, callbacks = make_task(recipe).train_data()
    assert dataset.cardinality() == tf.data.INFINITE_CARDINALITY
    [epoch] = [c for c in callbacks if isinstance(c, DataEpoch)]

    def first_inputs(start, batches):
        epoch.on_epoch_begin(start)
        flat = (tf.nest.flatten(batch)[0] for batch in dataset.take(batches))
        return [x.numpy().tolist() for x in flat]

    assert first_inputs(0, 7)[6] == first_inputs(3, 1)[0]


def test_a_task_reads_its_data_only_when_asked(monkeypatch):
    calls = []
    generate = dyck_strings.dyck_splits
    monkeypatch.setattr(
        dyck_strings,
        "dyck_splits",
        lambda *a, **k: calls.append(1) or generate(*a, **k),
    )
    task = make_task(tiny_recipe("closing_bracket"))
    assert isinstance(task, ClosingBracketTask)
    assert task.build_model().count_params() > 0 and calls == []
    task.validation_data()
    task.train_data()
    assert calls == [1]  # generated once, on first use


@pytest.mark.parametrize(
    "kind", ["closing_bracket", "recognition", "dyck_depth", "acceptability"]
)
def test_stateless_tasks_refuse_a_stateful_model(kind):
    with pytest.raises(ValueError, match="expected stateful=False, received True"):
        make_task(tiny_recipe(kind)).build_model(stateful=True, batch_size=2)


def dyck_arrays(num_sequences, min_length, max_length, seed):
    """Framed 4-bounded Dyck-2 strings from the project's generator."""
    strings = dyck_strings.sample_dyck(
        K,
        M,
        num_sequences=num_sequences,
        min_length=min_length,
        max_length=max_length,
        seed=seed,
    )
    return dyck_strings.frame(strings, K)


def wcpa(model, arrays):
    """WCPA and the number of distances of the Dyck-RNN, by the project's metric."""
    closing = np.asarray(model.predict(arrays.inputs, verbose=0))
    accuracy = bracket_prediction_accuracy(
        dyck_strings.closing_as_next_token(closing, K),
        arrays.close_targets,
        arrays.distances,
        k=K,
    )
    return accuracy.wcpa, len(accuracy.ldpa)


def test_dyck_rnn_designed_weights_predict_every_closing_bracket():
    model = dyck_rnn_model(K, M)
    assert set_designed_weights(model) == 2
    assert wcpa(model, dyck_arrays(16, 30, 60, seed=0))[0] == 1.0


def test_dyck_rnn_trains_to_full_worst_case_accuracy():
    keras.utils.set_random_seed(0)
    train = dyck_arrays(256, 10, 40, seed=0)
    model = dyck_rnn_model(K, M)
    model.compile(keras.optimizers.Adam(0.2), "sparse_categorical_crossentropy")
    assert wcpa(model, train)[0] < 1.0
    model.fit(
        train.inputs,
        train.close_labels,
        sample_weight=train.close_weights,
        batch_size=32,
        epochs=30,
        verbose=0,
    )
    # Held-out strings twice as long: more and longer closing distances.
    score, num_distances = wcpa(model, dyck_arrays(64, 41, 80, seed=1))
    assert num_distances > 15
    assert score == 1.0


def test_train_cutoff_cuts_only_the_training_lines(tmp_path):
    text = "".join(f"line number {i} is long enough to be cut\n" for i in range(40))
    path = tmp_path / "lines.txt"
    path.write_text(text)
    cut = make_task(
        tiny_recipe("language_model", path, ["task.level=char", "task.train_cutoff=6"])
    )
    whole = make_task(tiny_recipe("language_model", path, ["task.level=char"]))
    expected = corpora.cut_lines(whole.corpus.train, 6, "char")
    assert max(len(line) for line in expected.split("\n")) == 6
    np.testing.assert_array_equal(
        cut.encoded["train"].ids,
        whole.vocabulary.encode(expected, on_oov="unk", split="train").ids,
    )
    assert len(cut.encoded["train"].ids) < len(whole.encoded["train"].ids) / 3
    for split in ("valid", "test"):
        np.testing.assert_array_equal(cut.encoded[split].ids, whole.encoded[split].ids)


@pytest.mark.parametrize("kind", ["dyck", "closing_bracket"])
def test_dyck_runs_log_validation_wcpa_every_epoch_as_evaluate_measures_it(
    tmp_path, kind
):
    import csv

    from training.runs import runs
    from training.tasks import recipes

    # Big enough that the mean LDPA moves off 0 within the epochs (seed 0).
    recipe = recipes.resolve(
        {"dyck": "dyck2_mlstm", "closing_bracket": "dyck2_dyck_rnn"}[kind],
        "small",
        [
            "task.train_sequences=300",
            "task.dev_sequences=50",
            "task.test_sequences=20",
            "train.epochs=5",
            "train.jit_compile=false",
            *(
                ["model.units=16", "train.learning_rate=0.01"]
                if kind == "dyck"
                else ["train.learning_rate=0.3", "train.batch_size=64"]
            ),
        ],
    )
    metrics = runs.train_run(recipe, tmp_path)
    with open(tmp_path / runs.LOG) as handle:
        log = list(csv.DictReader(handle))
    assert len(log) == 5
    ldpa = [float(row["val_mean_ldpa"]) for row in log]
    assert max(ldpa) > 0, "the test would pass with every value 0"
    assert all(0 <= float(row["val_wcpa"]) <= 1 for row in log)
    # The best model (lowest val_loss) is the one metrics.json evaluates.
    best = min(log, key=lambda row: float(row["val_loss"]))
    assert float(best["val_mean_ldpa"]) == metrics["valid"]["mean_ldpa"]
    assert float(best["val_wcpa"]) == metrics["valid"]["wcpa"]


class GeneratorLogits(keras.layers.Layer):
    """The Dyck generator's next-token log-probabilities, from the inputs alone.

    In `keras.ops`, from each prefix as a model reads it: the brackets read
    (the position), the stack depth (a running sum of opens minus closes)
    and the bracket on top (the last open bracket at the current depth),
    looked up in the `DyckOracle`'s tables. A model with this head predicts
    as the generator draws.
    """

    def __init__(self, oracle, **kwargs):
        super().__init__(**kwargs)
        self.k, self.m, self.length = oracle.k, oracle.m, oracle.max_length
        tables = [oracle.log_open, oracle.log_close, oracle.log_end]
        # -1e9 for "impossible": softmax gives it 0 without the NaN of -inf.
        self.tables = [np.maximum(t, -1e9).reshape(-1) for t in tables]

    def call(self, inputs):
        ops, k = keras.ops, self.k
        first_close = dyck_strings.close_id(0, k)
        is_open = (inputs >= dyck_strings.open_id(0)) & (inputs < first_close)
        is_close = (inputs >= first_close) & (inputs < first_close + k)
        step = ops.cast(is_open, "int32") - ops.cast(is_close, "int32")
        depth = ops.clip(ops.cumsum(step, axis=1), 0, self.m)  # [B, T]
        positions = ops.arange(ops.shape(inputs)[1])
        read = ops.minimum(positions, self.length - 1)[None, :]  # [1, T]
        # The top of the stack at t: the last open s <= t reaching depth[t].
        earlier = positions[None, :] <= positions[:, None]  # [T(t), T(s)]
        same = depth[:, :, None] == depth[:, None, :]  # [B, t, s]
        found = earlier[None] & same & is_open[:, None, :]
        last = ops.argmax(ops.where(found, positions[None, None, :], -1), axis=-1)
        top = ops.take_along_axis(inputs, last, axis=1) - dyck_strings.open_id(
            0
        )  # [B, T]
        index = read * (self.m + 1) + depth
        log_open, log_close, log_end = (ops.take(t, index) for t in self.tables)
        impossible = ops.full_like(log_end, -1e9)[..., None]
        closes = ops.where(
            ops.one_hot(top, k) > 0, log_close[..., None], impossible
        )  # [B, T, k]
        opens = ops.repeat(log_open[..., None], k, axis=-1)
        return ops.concatenate(
            [impossible, impossible, log_end[..., None], opens, closes], axis=-1
        )


@pytest.mark.parametrize(
    "lengths", [[], ["task.train_min_length=30", "task.train_max_length=61"]]
)
def test_a_model_that_predicts_as_the_generator_scores_the_oracle(lengths):
    # Through the ordinary evaluation path (`task.evaluate`: predict, softmax,
    # cross-entropy over the masked targets): the model's cross-entropy is
    # the oracle's (excess 0), and its WCPA and every LDPA are 1.
    task = make_task(tiny_recipe("dyck", extra=lengths))
    for split in ("valid", "test"):
        oracle = task.oracle(split)
        inputs = keras.Input((None,), dtype="int32")
        model = keras.Model(inputs, GeneratorLogits(oracle)(inputs))
        metrics = task.evaluate(model, split)
        assert metrics["cross_entropy"] == pytest.approx(
            metrics["oracle_cross_entropy"], abs=1e-5
        )
        assert abs(metrics["excess_over_oracle"]) < 1e-5
        assert metrics["oracle_perplexity"] == pytest.approx(
            np.exp(oracle.cross_entropy(task.arrays[split]))
        )
        assert metrics["wcpa"] == metrics["mean_ldpa"] == 1.0
        assert "excess 0.0000 nats/token" in task.report(metrics, split)
    # Another model scores above the floor.
    metrics = task.evaluate(task.build_model(), "test")
    assert metrics["excess_over_oracle"] > 0.1
    if lengths:  # the validation strings are of the recipe's range
        valid = [int(row.sum()) for row in task.arrays["valid"].mask]
        assert min(valid) >= 31 and max(valid) <= 61


def test_other_tasks_log_no_validation_metrics_per_epoch(text_file):
    for kind in ("recognition", "language_model", "dyck_depth"):
        assert make_task(tiny_recipe(kind, text_file)).validation_callbacks() == []


def wikitext_task(data_dir, level):
    return make_task(
        recipes.resolve(
            "ptb_char_lstm",
            "small",
            [
                *TINY["language_model"],
                "task.corpus=wikitext2",
                f"task.level={level}",
                f"task.data_dir={data_dir}",
            ],
        )
    )


def test_byte_level_wikitext_reports_word_perplexity(tmp_path, monkeypatch):
    monkeypatch.setenv(files.ACCEPT_MODIFIED_VAR, "1")  # not the real corpus
    (tmp_path / "wikitext-2").mkdir()
    text = " \n = Caf\u00e9 = \n The cat sat on the mat . \n \n" * 20
    for split in ("train", "valid", "test"):
        (tmp_path / "wikitext-2" / f"wiki.{split}.tokens").write_text(text)
    task = wikitext_task(tmp_path, "byte")
    metrics = task.evaluate(task.build_model(stateful=False), "test")
    # 10 words and 4 <eos> a repeat, as the word-level corpus counts them.
    assert metrics["words"] == tokenize.count_words(text) == 20 * 14
    symbols = len(text.encode("utf-8"))
    assert metrics["word_perplexity"] == pytest.approx(
        2 ** (metrics["bits_per_token"] * symbols / metrics["words"])
    )
    # The same in nats: the byte perplexity to the power of bytes per word.
    assert metrics["word_perplexity"] == pytest.approx(
        metrics["perplexity"] ** (symbols / 280)
    )
    report = task.report(metrics, "test")
    assert report.endswith(
        f"; word perplexity {metrics['word_perplexity']:.2f} (280 words)"
    )
    words = wikitext_task(tmp_path, "word")
    word_metrics = words.evaluate(words.build_model(stateful=False), "test")
    assert "word_perplexity" not in word_metrics
    assert "word perplexity" not in words.report(word_metrics, "test")


def test_character_text_of_unknown_words_reports_no_word_perplexity(text_file):
    task = make_task(tiny_recipe("language_model", text_file, ["task.level=char"]))
    assert "word_perplexity" not in task.evaluate(task.build_model(), "test")


def test_evaluation_temperature_is_set_on_the_loaded_model(tmp_path):
    from training.runs.runs import load_best

    task = make_task(
        tiny_recipe(
            "dyck",
            extra=[
                "model.cell=second_order_lstm",
                'model.options={"num_cells": 2}',
                "train.eval_temperature=0.01",
            ],
        )
    )
    model = task.build_model()
    model.save(tmp_path / "best.keras")
    loaded = load_best(task, tmp_path / "best.keras")
    (cell,) = [layer.cell for layer in loaded.layers if hasattr(layer, "cell")]
    temperature = keras.ops.convert_to_numpy(cell.temperature.value)
    assert float(temperature) == pytest.approx(0.01)


def test_recognition_evaluation_reports_strict_and_final_step_accuracy():
    task = make_task(tiny_recipe("recognition"))
    model = task.build_model()
    metrics = task.evaluate(model, "test")
    assert {"accuracy", "strict_accept", "strict", "strings"} <= set(metrics)
    # strict adds the next-symbol check to the accept-only criterion
    assert metrics["strict"] <= metrics["strict_accept"]
    for value in metrics["per_length"].values():
        assert value["strict"] <= value["strict_accept"]
        assert set(value) == {"accuracy", "strict_accept", "strict", "strings"}
    report = task.report(metrics, "test")
    assert report.startswith("test: strict ") and "final-step accuracy" in report


def test_recognition_runs_evaluate_the_hard_splits_at_the_tests_lengths():
    task = make_task(tiny_recipe("recognition", extra=["train.jit_compile=false"]))
    assert task.splits[-2:] == ("hard", "hard_long")
    for name, paper in (("hard", "test"), ("hard_long", "long_160")):
        arrays = task.arrays[name]
        _, low, high = recognition_sets.MALI_SPLITS["small"][paper]
        assert low <= arrays.lengths.min() and arrays.lengths.max() <= high
        assert arrays.labels.sum() == len(arrays.labels) // 2  # balanced
    # Right everywhere on the hard strings too: accept = membership, next legal.
    arrays = task.arrays["hard"]
    outputs = {
        "accept": arrays.prefix_labels[..., None],
        "next_symbol": arrays.legal_next.astype("float32"),
    }
    metrics = task.evaluate(FixedOutputs(outputs), "hard")
    assert metrics["strict"] == 1.0 and metrics["strings"] == len(arrays.labels)


@pytest.mark.parametrize("jit", [True, False])
def test_a_split_is_predicted_batch_by_batch_as_model_predict_predicts_it(jit):
    # 300 rows: two batches of PREDICT_BATCH (256), the second partial.
    extra = [f"train.jit_compile={str(jit).lower()}"]
    task = make_task(tiny_recipe("recognition", extra=extra))
    keras.utils.set_random_seed(0)
    model = task.build_model()
    inputs = np.random.default_rng(0).integers(1, 6, size=(300, 70))
    predicted = task._predict(model, inputs)
    assert model.jit_compile is jit
    whole = model.predict(inputs, batch_size=task_module.PREDICT_BATCH, verbose=0)
    for key, value in predicted.items():
        assert value.shape == (300, 70, whole[key].shape[-1])
        np.testing.assert_allclose(value, whole[key], rtol=1e-6, atol=1e-6)


class FixedOutputs:
    """A stand-in model whose predictions of one split are given (for metric
    tests): each `predict_on_batch` answers the split's next rows."""

    jit_compile = False

    def __init__(self, outputs):
        self.outputs = outputs
        self.row = 0

    def predict_on_batch(self, inputs):
        rows = slice(self.row, self.row + len(inputs))
        self.row += len(inputs)
        return {k: v[rows, : inputs.shape[1]] for k, v in self.outputs.items()}


def test_strict_on_positives_counts_positive_strings_alone():
    task = make_task(tiny_recipe("recognition", extra=["train.jit_compile=false"]))
    arrays = task.arrays["test"]
    # Right everywhere: accept = the prefix's membership, next = a legal symbol.
    next_symbol = arrays.legal_next.astype("float32")
    outputs = {"accept": arrays.prefix_labels[..., None], "next_symbol": next_symbol}
    perfect = task.evaluate(FixedOutputs(outputs), "test")
    assert perfect["strict"] == perfect["strict_positives"] == 1.0
    # One positive string with an illegal next symbol at its first step.
    wrong = int(np.flatnonzero(arrays.labels == 1)[0])
    illegal = int(np.flatnonzero(~arrays.legal_next[wrong, 0])[0])
    next_symbol = next_symbol.copy()
    next_symbol[wrong, 0] = 0.0
    next_symbol[wrong, 0, illegal] = 1.0
    outputs["next_symbol"] = next_symbol
    metrics = task.evaluate(FixedOutputs(outputs), "test")
    positives = int((arrays.labels == 1).sum())
    assert metrics["positives"] == positives
    assert metrics["strict_positives"] == pytest.approx((positives - 1) / positives)
    assert metrics["strict"] == pytest.approx(1 - 1 / len(arrays.labels))
    assert "strict on positives" in task.report(metrics, "test")


def test_next_symbol_on_positives_ignores_the_accept_output():
    task = make_task(tiny_recipe("recognition", extra=["train.jit_compile=false"]))
    arrays = task.arrays["test"]
    # Every next symbol legal, every accept output wrong: only the readings
    # that look at the next symbol alone count the positive strings right.
    wrong_accept = 1.0 - arrays.prefix_labels[..., None]
    outputs = {
        "accept": wrong_accept,
        "next_symbol": arrays.legal_next.astype("float32"),
    }
    metrics = task.evaluate(FixedOutputs(outputs), "test")
    assert metrics["next_symbol_positives"] == 1.0
    assert metrics["strict_positives"] == metrics["strict"] == 0.0
    assert "next symbol legal on positives 1.0000" in task.report(metrics, "test")


@pytest.mark.parametrize(
    "step_labels, next_symbol_loss, accept, next_weight",
    [
        # Mali et al.'s loss: the string's label at every step, the next
        # symbol of every string.
        ("string", "all", [[1, 1, 1, 1], [0, 0, 0, 0]], [[1, 1, 1, 1]] * 2),
        # The recipes': the prefix's membership, the positives' next symbols.
        ("prefix", "positives", [[0, 0, 0, 1], [0, 0, 0, 0]], [[1] * 4, [0] * 4]),
    ],
)
def test_recognition_targets_follow_step_labels_and_next_symbol_loss(
    step_labels, next_symbol_loss, accept, next_weight
):
    extra = [
        "task.language=palindrome",
        f"task.step_labels={step_labels}",
        f"task.next_symbol_loss={next_symbol_loss}",
        "train.batch_size=2",
    ]
    task = make_task(tiny_recipe("recognition", extra=extra))
    a, b, c = 3, 4, 5
    split = recognition_sets.RecognitionSplit(
        strings=[[a, c, a], [a, c, b]],  # a palindrome and a hard negative
        labels=np.array([1, 0]),
        is_hard=np.array([False, True]),
        min_length=3,
        max_length=3,
    )
    task.arrays = {"train": recognition_sets.frame(split, "palindrome")}
    dataset, _ = task.train_data()
    inputs, targets, weights = next(iter(dataset))
    order = np.argsort(inputs.numpy()[:, 3])  # the palindrome first
    assert inputs.numpy()[order].tolist() == [[1, a, c, a], [1, a, c, b]]
    assert targets["next_symbol"].numpy()[order].tolist() == [
        [a, c, a, dyck_strings.END_ID],
        [a, c, b, dyck_strings.END_ID],
    ]
    assert targets["accept"].numpy()[order][..., 0].tolist() == accept
    assert weights["next_symbol"].numpy()[order].tolist() == next_weight
    assert weights["accept"].numpy().tolist() == [[1, 1, 1, 1]] * 2


def test_a_recognition_run_keeps_the_model_of_its_monitors_lowest_value(
    tmp_path, monkeypatch
):
    # `task.monitor` picks the validation loss the best checkpoint, the
    # learning-rate schedule and early stopping watch; Keras cannot tell a
    # one-output loss's direction by itself, so a run says "min" to it.
    monitor = "val_accept_loss"  # the recipe's; other tasks watch "val_loss"
    recipe = tiny_recipe(
        "recognition", extra=[f"task.monitor={monitor}", "train.epochs=3"]
    )
    task = make_task(recipe)
    assert task.monitor == monitor
    watched = []  # what each callback of the run that watches a value watches

    def spied(make):
        def made(*args, **kwargs):
            callbacks = make(*args, **kwargs)
            watched.extend(
                (type(c).__name__, c.monitor, c.mode)
                for c in callbacks
                if hasattr(c, "monitor") and hasattr(c, "mode")
            )
            return callbacks

        return made

    monkeypatch.setattr(
        runs, "run_directory_callbacks", spied(runs.run_directory_callbacks)
    )
    monkeypatch.setattr(
        fitting, "schedule_callbacks", spied(fitting.schedule_callbacks)
    )
    runs.train_run(recipe, tmp_path / "run")
    assert sorted(watched) == [
        ("AtomicModelCheckpoint", monitor, "min"),
        ("EarlyStopping", monitor, "min"),
        ("ReduceLROnPlateau", monitor, "min"),
    ]
    log = np.genfromtxt(tmp_path / "run" / runs.LOG, delimiter=",", names=True)
    best = int(np.argmin(log[monitor]))
    model = task.training_model(runs.load_run(tmp_path / "run").model)
    model.compile(**task.compile_arguments())
    kept = model.evaluate(task.validation_data(), return_dict=True, verbose=0)
    assert kept[monitor.removeprefix("val_")] == pytest.approx(
        log[monitor][best], rel=1e-4
    )


def test_a_recognition_monitor_that_is_not_a_loss_is_refused_in_one_line():
    with pytest.raises(recipes.RecipeError) as error:
        tiny_recipe("recognition", extra=["task.monitor=val_strict"])
    assert "\n" not in str(error.value)
    assert "val_accept_loss" in str(error.value)


def test_search_callbacks_log_strict_accuracy_on_the_validation_split():
    task = make_task(tiny_recipe("recognition"))
    assert task.search_objective == ("val_strict_positives", "max")
    model = task.build_model()
    (callback,) = task.search_callbacks()
    callback.set_model(model)
    callback.on_train_begin()
    logs = {}
    callback.on_epoch_end(0, logs)
    metrics = task.evaluate(model, "valid")
    for name in ("strict", "strict_positives", "next_symbol_positives"):
        assert logs[f"val_{name}"] == pytest.approx(metrics[name])


def test_curriculum_feeds_short_strings_first():
    extra = ["train.curriculum=true", "train.epochs=4"]
    task = make_task(tiny_recipe("recognition", extra=extra))
    lengths = task.arrays["train"].lengths
    limits = curriculum_limits(lengths, epochs=4)
    assert limits[0] < lengths.max() and list(limits[1:]) == [lengths.max()] * 3
    dataset, (shuffle,) = task.train_data()

    batch = task.recipe.train.batch_size

    def strings(epoch):
        shuffle.on_epoch_begin(epoch)
        return sum(len(inputs) for inputs, _, _ in dataset)

    def full_batches(count):  # the rest wait for another epoch's order
        return count - count % batch

    eligible = int((lengths <= limits[0]).sum())
    assert strings(0) == full_batches(eligible) and eligible < len(lengths)
    assert strings(1) == strings(3) == full_batches(len(lengths))


def test_hard_negatives_follow_the_recipe(monkeypatch):
    seen = []
    real = recognition_sets.mali_splits
    monkeypatch.setattr(
        recognition_sets,
        "mali_splits",
        lambda *a, **k: seen.append(k["hard_negatives"]) or real(*a, **k),
    )
    assert make_task(
        tiny_recipe("recognition", extra=["task.hard_negatives=edit"])
    ).arrays
    assert seen == ["edit"]


class FixedLogits:
    """A stand-in tagger or classifier whose logits of one split are given;
    each `predict_on_batch` answers the split's next rows."""

    jit_compile = False

    def __init__(self, logits):
        self.logits = logits
        self.row = 0

    def predict_on_batch(self, inputs):
        rows = slice(self.row, self.row + len(inputs))
        self.row += len(inputs)
        if self.logits.ndim == 2:  # a classifier's: no time axis
            return self.logits[rows]
        return self.logits[rows, : inputs.shape[1]]


def test_depth_tagging_is_scored_per_depth_and_per_length():
    task = make_task(tiny_recipe("dyck_depth"))
    assert task.num_classes == task.m + 1 == 5
    arrays = task.arrays["test"]
    logits = np.eye(task.num_classes, dtype="float32")[arrays.depths]
    perfect = task.evaluate(FixedLogits(logits), "test")
    assert perfect["accuracy"] == perfect["string_accuracy"] == 1.0
    assert set(perfect["per_depth"]) == {"0", "1", "2", "3", "4"}
    longest = int(task.arrays["train"].lengths.max())
    assert perfect["longest_training"] == longest
    # The test strings are all longer than every training string.
    assert perfect["beyond_training"]["strings"] == len(arrays.inputs)
    assert sum(v["strings"] for v in perfect["per_length"].values()) == 16
    # Wrong wherever the stack is full: depth m only.
    deepest = arrays.depths == task.m
    logits = np.eye(task.num_classes, dtype="float32")[
        np.where(deepest, task.m - 1, arrays.depths)
    ]
    metrics = task.evaluate(FixedLogits(logits), "test")
    assert metrics["per_depth"]["4"] == {"accuracy": 0.0, "tokens": int(deepest.sum())}
    assert all(metrics["per_depth"][d]["accuracy"] == 1.0 for d in "0123")
    real = arrays.mask > 0
    assert metrics["accuracy"] == pytest.approx(1 - deepest.sum() / real.sum())
    assert metrics["string_accuracy"] == pytest.approx(1 - deepest.any(1).mean())
    report = task.report(metrics, "test")
    assert report.startswith("test: token accuracy ") and "beyond the longest" in report


def test_acceptability_is_scored_per_sentence_pair_phenomenon_and_suite():
    task = make_task(tiny_recipe("acceptability"))
    # Its words' conventions, the task's, recorded in the vocabulary.
    assert task.vocabulary.conventions == task.tokenizer().conventions == "blimp"
    assert task.conventions == "blimp"
    arrays = task.arrays["test"]
    assert sorted(set(arrays.suites)) == ["agreement_3", "anaphora_3", "ellipsis_1"]
    good = arrays.labels == 1
    logits = np.zeros((len(good), 2), "float32")
    suite = arrays.suites
    # agreement_3 right; anaphora_3 "acceptable" always, the good one more so;
    # ellipsis_1 wrong both ways.
    logits[:, 1] = np.where(suite == "agreement_3", np.where(good, 1.0, -1.0), 0.0)
    logits[:, 1] += np.where(suite == "anaphora_3", np.where(good, 3.0, 2.0), 0.0)
    logits[:, 1] += np.where(suite == "ellipsis_1", np.where(good, -1.0, 1.0), 0.0)
    metrics = task.evaluate(FixedLogits(logits), "test")
    assert metrics["accuracy"] == pytest.approx(0.5)
    assert metrics["pair_accuracy"] == pytest.approx(2 / 3)
    assert metrics["per_suite"]["anaphora_3"] == {
        "accuracy": 0.5,
        "pair_accuracy": 1.0,
        "sentences": 16,
    }
    assert metrics["per_phenomenon"]["ellipsis"]["pair_accuracy"] == 0.0
    assert metrics["per_phenomenon"]["agreement"]["accuracy"] == 1.0
    assert (metrics["sentences"], metrics["pairs"], metrics["suites"]) == (48, 24, 3)
    assert metrics["out_of_vocabulary"] == arrays.num_oov
    report = task.report(metrics, "test")
    assert "pair accuracy 0.6667 (48 sentences of 3 held-out suites" in report
    assert "anaphora_3    0.5000    1.0000" in report


def test_acceptability_on_blimp_holds_out_whole_suites():
    if not (SHARED / blimp_sentences.SUITE_FOLDER).is_dir():
        pytest.skip(
            f"{SHARED / blimp_sentences.SUITE_FOLDER} not found: set ZOO_DATA_DIR to "
            "the folder holding BLiMP's suites (blimp/*.jsonl)"
        )
    recipe = tiny_recipe("acceptability", extra=[f"task.data_dir={SHARED}"])
    task = make_task(recipe)  # tiny: a few pairs of every suite
    assert len(task.suite_splits["test"]) == 13
    train = set(task.arrays["train"].suites)
    assert not train & set(task.arrays["test"].suites)
    assert not train & set(task.arrays["valid"].suites)
    assert task.vocabulary.tokens[:2] == ["<pad>", "<unk>"]
    assert task.arrays["train"].num_oov == 0 < task.arrays["test"].num_oov
