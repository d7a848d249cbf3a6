import contextlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import keras
import numpy as np
import pytest
import tensorflow as tf

import zoo
from training.data import blimp_sentences, dyck_strings
from training.runs import runs
from training.runs.saved_model import UNK_HINT, export_model, export_run
from zoo.tokenizer import Tokenizer


@pytest.fixture(scope="module")
def dyck_saved(dyck_run, tmp_path_factory):
    """The SavedModel of the shared `dyck_run`, exported once for the tests
    that only read it."""
    return export_run(dyck_run, tmp_path_factory.mktemp("dyck") / "saved_model")


def test_export_serves_the_runs_model(dyck_run, dyck_saved):
    loaded = tf.saved_model.load(str(dyck_saved))
    ids = np.array([[1, 3, 4, 6, 5], [1, 4, 3, 5, 6]], "int32")
    expected = runs.load_run(dyck_run).model(ids)
    np.testing.assert_allclose(loaded.serve(tf.constant(ids)), expected, atol=1e-5)


def test_serve_refuses_ids_outside_the_vocabulary_and_takes_zero_steps(
    dyck_run, dyck_saved
):
    loaded = tf.saved_model.load(str(dyck_saved))
    size = len(runs.load_vocabulary(dyck_run))
    # A negative id was looked up wrapped around, silently.
    for ids in ([[1, -1, 3]], [[1, size, 3]]):
        with pytest.raises(
            tf.errors.InvalidArgumentError, match=rf"token ids must be in \[0, {size}\)"
        ):
            loaded.serve(tf.constant(ids, tf.int32))
    logits = loaded.serve(tf.constant([[1, 3]], tf.int32)).shape[-1]
    for batch in (2, 0):
        empty = loaded.serve(tf.zeros((batch, 0), tf.int32))
        assert empty.shape == (batch, 0, logits)


@pytest.mark.processes
def test_exported_model_answers_in_a_fresh_process(dyck_run, tmp_path):
    saved = export_run(dyck_run, tmp_path / "saved_model")
    texts = ["(a (b b) a)", "(a a)", "(b (a (b b) a) b) (a a)"]
    script = textwrap.dedent(
        f"""
        import json, sys
        assert "keras" not in sys.modules
        import tensorflow as tf  # only: the tokenizer is TensorFlow's own ops
        model = tf.saved_model.load({str(saved)!r})
        assert "tensorflow_text" not in sys.modules
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

    _, _, task, model = runs.load_run(dyck_run)
    ids = [task.vocabulary.encode(text).ids for text in texts]
    assert served["lengths"] == [len(i) for i in ids]
    for row, string in enumerate(ids):
        inputs = np.array([[dyck_strings.START_ID, *string]], "int32")
        log_probabilities = np.asarray(keras.ops.log_softmax(model(inputs)))[0]
        np.testing.assert_allclose(
            np.asarray(served["log_probabilities"][row])[: len(string) + 1],
            log_probabilities,
            atol=1e-5,
        )
        picked = log_probabilities[np.arange(len(string)), string].sum()
        np.testing.assert_allclose(served["log_likelihood"][row], picked, atol=1e-5)


@pytest.mark.processes
def test_export_cli_needs_no_data(language_model_run, tmp_path):
    # The run's corpus file is gone and no data directory is set.
    env = {k: v for k, v in os.environ.items() if k != "ZOO_DATA_DIR"}
    out = tmp_path / "saved_model"
    done = subprocess.run(
        [sys.executable, "-m", "training.export", str(language_model_run), str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == f"SavedModel: {out}"
    loaded = tf.saved_model.load(str(out))
    assert loaded.serve_text(tf.constant(["the cat"]))["lengths"].numpy().tolist() == [
        3
    ]


@pytest.fixture(scope="module")
def exported(tmp_path_factory, tiny_runs):
    """`exported(kind)`: the recipe, run directory and SavedModel of the shared
    tiny run of `kind` (`tiny_runs`), exported once for the tests that read it."""
    folder = tmp_path_factory.mktemp("exported")
    made = {}

    def exported(kind):
        if kind not in made:
            recipe, run_dir, _ = tiny_runs(kind)
            made[kind] = recipe, run_dir, export_run(run_dir, folder / kind)
        return made[kind]

    return exported


@pytest.mark.parametrize(
    "kind", ["language_model", "recognition", "dyck_depth", "acceptability"]
)
def test_serve_text_takes_an_empty_batch(kind, tmp_path, language_model_run, exported):
    if kind == "language_model":  # its corpus deleted: exported from the run alone
        saved = export_run(language_model_run, tmp_path / "saved")
    else:
        saved = exported(kind)[2]
    loaded = tf.saved_model.load(str(saved))
    empty = loaded.serve_text(tf.constant([], tf.string))
    assert all(value.shape[0] == 0 for value in empty.values())
    one = loaded.serve_text(tf.constant([""]))
    assert all(value.shape[0] == 1 for value in one.values())


def test_export_replaces_only_an_earlier_export(dyck_run, dyck_saved, tmp_path):
    out = tmp_path / "out"
    shutil.copytree(dyck_saved, out)  # an export of ours, as export_run writes it
    (out / "stale.txt").write_text("from before\n")
    export_run(dyck_run, out)  # an earlier export of ours: replaced whole
    assert (out / "saved_model.pb").exists() and not (out / "stale.txt").exists()
    assert not (tmp_path / "out.partial").exists()


def test_a_tagger_serves_a_label_per_bracket(exported):
    _, run_dir, saved = exported("dyck_depth")
    model = runs.load_run(run_dir).model
    loaded = tf.saved_model.load(str(saved))
    out = loaded.serve_text(tf.constant(["(a (b b) a)", "(b", ""]))
    ids = np.array([[3, 4, 6, 5], [4, 0, 0, 0], [0, 0, 0, 0]], "int32")
    logits = np.asarray(model(ids))
    expected = np.where(ids > 0, logits.argmax(-1), -1)
    np.testing.assert_array_equal(out["labels"], expected)
    np.testing.assert_array_equal(out["lengths"], [4, 1, 0])
    np.testing.assert_allclose(
        out["probabilities"][:2, :1], tf.nn.softmax(logits)[:2, :1], atol=1e-5
    )
    np.testing.assert_allclose(loaded.serve(tf.constant(ids)), logits, atol=1e-5)


def test_a_classifier_takes_raw_text_and_serves_a_label_per_sentence(exported):
    recipe, run_dir, saved = exported("acceptability")
    run = runs.load_run(run_dir)
    loaded = tf.saved_model.load(str(saved))
    sentences = ["The cat sees the dog.", "the CAT see the dog ."]
    pairs = [blimp_sentences.load_suites(recipe.task.data_dir)["agreement_1"][0]]
    ids = blimp_sentences.frame(pairs, run.task.vocabulary).inputs  # the same sentences
    logits = np.asarray(run.model(ids))
    out = loaded.serve_text(tf.constant(sentences))
    np.testing.assert_array_equal(out["label"], logits.argmax(-1))
    np.testing.assert_allclose(out["probabilities"], tf.nn.softmax(logits), atol=1e-5)
    np.testing.assert_array_equal(out["lengths"], [6, 6])
    served = loaded.serve(tf.constant(ids))
    assert served.shape == (2, 2)  # no time axis to cut
    np.testing.assert_allclose(served, logits, atol=1e-5)


def documented_snippet(marker):
    """The Python block of docs/evaluation.md that holds `marker`."""
    page = (Path(__file__).resolve().parents[3] / "docs" / "evaluation.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", page, re.DOTALL)
    (block,) = [block for block in blocks if marker in block]
    return block


def test_the_documented_snippet_reads_each_string_of_a_batch_after_its_end(tmp_path):
    # Strings of unequal lengths: `[:, -1]` read the padding of the shorter
    # ones (and the wrong bracket); the snippet gathers each one's last step.
    saved = export_run("preset:dyck_rnn_m4", tmp_path / "dyck_saved_model")
    snippet = documented_snippet("closing_log_probabilities")
    code = snippet.replace('"dyck_saved_model"', repr(str(saved)))
    namespace, printed = {}, io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(code, namespace)  # noqa: S102 (the documented snippet, as written)
    expected = [
        line[2:].split("   ")[0] for line in snippet.splitlines() if line[:2] == "# "
    ]
    assert [line.rstrip() for line in printed.getvalue().splitlines()] == expected
    model = namespace["model"]
    for row, text in enumerate(["(a (b (b", "(b (a", "(a (b b) (b"]):
        alone = model.serve_text(tf.constant([text]))["closing_log_probabilities"]
        np.testing.assert_allclose(
            namespace["after_last"][row], alone[0, -1], atol=1e-6
        )
    assert np.argmax(namespace["after_last"], -1).tolist() == [1, 0, 1]


def test_serve_text_names_a_token_the_vocabulary_lacks(dyck_run, dyck_saved):
    loaded = tf.saved_model.load(str(dyck_saved))
    tokenizer = runs.load_run(dyck_run).task.tokenizer()
    with pytest.raises(tf.errors.InvalidArgumentError) as error:
        loaded.serve_text(tf.constant(["(a a)", "(a (c foo"]))
    assert tokenizer.unknown_message("`(c`, `foo`") in str(error.value)
    assert not hasattr(loaded, "serve_text_unk")  # a Dyck vocabulary has no <unk>


def test_a_character_model_serves_natural_text_in_its_conventions(tmp_path):
    # The PTB character presets' vocabulary on a tiny model: serve_text
    # writes "The company said." as `t h e _ c o m p a n y _ s a i d`.
    vocabulary = json.loads(
        (zoo.presets.preset_dir("mlstm_ptb_char") / "vocabulary.json").read_text()
    )
    tokenizer = Tokenizer.from_vocabulary(vocabulary)
    keras.utils.set_random_seed(0)
    model = zoo.language_model("lstm", vocab_size=51, units=8, embedding_dim=8)
    eos = tokenizer.eos_id
    export_model(model, tokenizer, tmp_path / "saved", start_id=eos)
    loaded = tf.saved_model.load(str(tmp_path / "saved"))
    texts = ["The company said.", "the company said", "xq zzv qqq"]
    out = loaded.serve_text(tf.constant(texts))
    likelihood = out["log_likelihood"].numpy()
    assert likelihood[0] == likelihood[1] != likelihood[2]
    for row, text in enumerate(texts):
        ids = [eos, *tokenizer(text), eos]  # read after <eos>, its <eos> scored
        log_probabilities = keras.ops.log_softmax(model(np.array([ids[:-1]])))[0]
        picked = np.asarray(log_probabilities)[np.arange(len(ids) - 1), ids[1:]]
        np.testing.assert_allclose(likelihood[row], picked.sum(), rtol=1e-5)
    assert out["lengths"].numpy().tolist() == [17, 17, 11]
    with pytest.raises(tf.errors.InvalidArgumentError) as error:
        loaded.serve_text(tf.constant(["Café society"]))
    assert tokenizer.unknown_message("`é`", UNK_HINT) in str(error.value)
    unk = loaded.serve_text_unk(tf.constant(["Café society"]))
    assert unk["lengths"].numpy().tolist() == [
        len(tokenizer("café society", "unk")) + 1
    ]
