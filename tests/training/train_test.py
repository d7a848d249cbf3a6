import json
import subprocess
import sys
import textwrap

import keras
import numpy as np
import pytest
import tensorflow as tf

from training import recipes, runs
from training.data import dyck
from training.evaluate import evaluate_run
from training.export import export_run
from training.generate import generate
from training.tasks import build_model, epoch_shuffled
from training.train import main, train

TINY = {
    "dyck": [
        "task.train_sequences=48",
        "task.dev_sequences=16",
        "task.test_sequences=16",
        "model.units=8",
        "model.embedding_dim=8",
        "train.epochs=2",
        "train.batch_size=16",
    ],
    "dyck_closing": [
        "task.train_sequences=48",
        "task.dev_sequences=16",
        "task.test_sequences=16",
        "train.epochs=2",
    ],
    "recognition": [
        "task.split_scale=0.01",
        "model.units=4",
        "model.embedding_dim=4",
        "model.options.stack_depth=8",
        "train.epochs=2",
    ],
    "language_model": [
        "model.units=8",
        "model.embedding_dim=8",
        "task.sequence_length=10",
        "train.epochs=2",
        "train.batch_size=4",
    ],
}
RECIPE_OF = {
    "dyck": "dyck2_mlstm",
    "dyck_closing": "dyck2_dyck_rnn",
    "recognition": "recognition_d2_diffstk_rnn",
    "language_model": "ptb_word_lstm",
}
TEXT = "the cat sat on the mat\nthe dog sat on the log\n" * 200


@pytest.fixture
def text_file(tmp_path):
    path = tmp_path / "corpus.txt"
    path.write_text(TEXT)
    return path


def tiny_recipe(kind, text_file=None, extra=()):
    overrides = list(TINY[kind]) + list(extra)
    if kind == "language_model":
        overrides.append(f"task.corpus=file:{text_file}")
    return recipes.resolve(RECIPE_OF[kind], "small", overrides)


@pytest.mark.parametrize("name", recipes.available_recipes())
def test_every_recipe_resolves_and_builds_its_model(name):
    for scale in recipes.SCALES:
        recipe = recipes.resolve(name, scale)
        assert recipe["name"] == name and recipe["scale"] == scale
    recipe = recipes.resolve(name, "small")
    model = build_model(recipe, vocab_size=dyck.vocabulary_size(2))
    assert isinstance(model, keras.Model) and model.count_params() > 0


def test_options_override_merges_or_replaces():
    merged = recipes.resolve(
        "recognition_d2_diffstk_rnn", "paper", ["model.options.noise_stddev=0.1"]
    )
    assert merged["model"]["options"] == {"stack_depth": 64, "noise_stddev": 0.1}
    replaced = recipes.resolve(
        "recognition_d2_diffstk_rnn", "small", ["model.cell=lstm", "model.options={}"]
    )
    assert replaced["model"]["options"] == {}
    small = recipes.resolve("recognition_d2_diffstk_rnn", "small")
    assert small["model"]["options"] == {"stack_depth": 64, "carry_forward": False}


def test_small_scale_overrides_the_paper_scale():
    paper = recipes.resolve("ptb_char_lstm", "paper")
    small = recipes.resolve("ptb_char_lstm", "small", ["train.epochs=3"])
    assert paper["model"]["units"] == 991 and small["model"]["units"] == 128
    assert paper["train"]["epochs"] == 200 and small["train"]["epochs"] == 3


@pytest.mark.parametrize("kind", sorted(TINY))
def test_tiny_run_trains_checkpoints_evaluates_exports_and_reloads(
    kind, tmp_path, text_file
):
    recipe = tiny_recipe(kind, text_file)
    run_dir = tmp_path / "run"
    task, metrics = train(recipe, run_dir, verbose=0)
    for name in ("recipe.json", "vocabulary.json", "best.keras", "metrics.json"):
        assert (run_dir / name).is_file()
    assert len((run_dir / "log.csv").read_text().splitlines()) == 3  # header + 2
    assert runs.read_json(run_dir / "metrics.json") == json.loads(json.dumps(metrics))
    assert set(metrics) == set(task.splits)
    _, evaluated = evaluate_run(run_dir, "test")
    assert evaluated == metrics["test"]

    saved = export_run(run_dir, tmp_path / "saved_model")
    _, _, _, model = runs.load_run(run_dir)
    loaded = tf.saved_model.load(str(saved))
    ids = np.array([[1, 3, 4, 6, 5], [1, 4, 3, 5, 6]], "int32")
    expected = model(ids)
    served = loaded.serve(tf.constant(ids))
    for key in expected if isinstance(expected, dict) else [None]:
        want = expected[key] if key else expected
        got = served[key] if key else served
        np.testing.assert_allclose(got, want, atol=1e-5)


def test_epoch_shuffle_depends_on_the_epoch_alone():
    arrays = (np.arange(20), np.arange(20) * 10)
    dataset, callback = epoch_shuffled(arrays, batch_size=20, seed=7)

    def order(epoch):
        callback.on_epoch_begin(epoch)
        ((inputs, targets),) = list(dataset.as_numpy_iterator())
        np.testing.assert_array_equal(targets, inputs * 10)  # rows stay aligned
        return inputs.tolist()

    first, second = order(0), order(1)
    assert sorted(first) == list(range(20)) and first != second
    assert order(0) == first and order(1) == second


def test_resumed_run_ends_like_an_uninterrupted_one(tmp_path):
    recipe = tiny_recipe("dyck", extra=["train.epochs=3"])
    _, uninterrupted = train(recipe, tmp_path / "a", verbose=0)

    class Kill(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            raise RuntimeError("killed")

    with pytest.raises(RuntimeError, match="killed"):
        train(recipe, tmp_path / "b", verbose=0, extra_callbacks=[Kill()])
    assert len((tmp_path / "b" / "log.csv").read_text().splitlines()) == 2
    _, resumed = train(recipe, tmp_path / "b", verbose=0)
    assert resumed == uninterrupted
    logs = [(tmp_path / d / "log.csv").read_text() for d in ("a", "b")]
    assert logs[0] == logs[1]
    weights = [
        keras.models.load_model(tmp_path / d / "best.keras").get_weights()
        for d in ("a", "b")
    ]
    for a, b in zip(*weights, strict=True):
        np.testing.assert_array_equal(a, b)


def test_exported_model_answers_in_a_fresh_process(tmp_path):
    recipe = tiny_recipe("dyck")
    train(recipe, tmp_path / "run", verbose=0)
    saved = export_run(tmp_path / "run", tmp_path / "saved_model")
    texts = ["(a (b b) a)", "(a a)", "(b (a (b b) a) b) (a a)"]
    script = textwrap.dedent(
        f"""
        import json, sys
        assert "keras" not in sys.modules
        import tensorflow as tf
        import tensorflow_text  # registers the tokenizer's ops
        model = tf.saved_model.load({str(saved)!r})
        out = model.serve_text(tf.constant({texts!r}))
        print(json.dumps({{k: v.numpy().tolist() for k, v in out.items()}}))
        try:
            model.serve_text(tf.constant([1, 2]))
        except (TypeError, ValueError) as error:
            print("rejected:", "tf.string" in str(error))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.strip().splitlines()
    assert lines[-1] == "rejected: True"
    served = json.loads(lines[-2])

    _, vocabulary, _, model = runs.load_run(tmp_path / "run")
    ids = [vocabulary.encode(text).ids for text in texts]
    assert served["lengths"] == [len(i) for i in ids]
    for row, string in enumerate(ids):
        inputs = np.array([[dyck.START_ID, *string]], "int32")
        log_probabilities = np.asarray(keras.ops.log_softmax(model(inputs)))[0]
        np.testing.assert_allclose(
            np.asarray(served["log_probabilities"][row])[: len(string) + 1],
            log_probabilities,
            atol=1e-5,
        )
        picked = log_probabilities[np.arange(len(string)), string].sum()
        np.testing.assert_allclose(served["log_likelihood"][row], picked, atol=1e-5)


def test_generation_is_deterministic_for_a_seed(tmp_path, text_file):
    train(tiny_recipe("language_model", text_file), tmp_path / "run", verbose=0)
    text_file.unlink()  # sampling needs the run, not the corpus
    first = generate(tmp_path / "run", "the cat", 12, temperature=1.5, seed=3)
    again = generate(tmp_path / "run", "the cat", 12, temperature=1.5, seed=3)
    other = generate(tmp_path / "run", "the cat", 12, temperature=1.5, seed=4)
    assert first == again and first != other
    assert first.startswith("the cat ") and len(first.split()) == 14
    greedy = generate(tmp_path / "run", "the cat", 5, top_k=1, seed=0)
    assert greedy == generate(tmp_path / "run", "the cat", 5, top_k=1, seed=9)


@pytest.mark.parametrize(
    "argv, message",
    [
        (["no_such_recipe"], "Unknown recipe 'no_such_recipe'; expected one of: "),
        (["dyck2_mlstm", "train.nope=1"], "Unknown recipe key 'train.nope'"),
        (["dyck2_mlstm", "model.cell=nope"], "Unknown cell 'nope'; expected one of"),
        (["dyck2_mlstm", "train.epochs=many"], "must be of type int"),
        (["dyck2_mlstm", "epochs"], "must look like section.key=value"),
        (["dyck2_mlstm", "--scale", "huge"], "invalid choice: 'huge'"),
        (["dyck2_mlstm", "model.options=3"], "model.options must be a JSON object"),
        (
            ["recognition_d2_diffstk_rnn", "task.step_labels=all"],
            "task.step_labels must be 'string' or 'prefix'",
        ),
    ],
)
def test_cli_errors_are_one_line_with_status_2(argv, message, tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main([*argv, "--run-dir", str(tmp_path / "run")])
    assert exit_info.value.code == 2
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert message in error and "Traceback" not in error


def test_a_run_directory_holds_one_recipe(tmp_path):
    _, first = train(tiny_recipe("dyck_closing"), tmp_path / "run", verbose=0)
    _, again = train(tiny_recipe("dyck_closing"), tmp_path / "run", verbose=0)
    assert again == first  # a finished run trains again, from the start
    assert len((tmp_path / "run" / "log.csv").read_text().splitlines()) == 3
    other = tiny_recipe("dyck_closing", extra=["train.epochs=3"])
    with pytest.raises(runs.RunError, match="holds a different recipe"):
        train(other, tmp_path / "run", verbose=0)
    with pytest.raises(runs.RunError, match="does not exist"):
        evaluate_run(tmp_path / "missing")
