import json
import os
import shutil

import keras
import numpy as np
import pytest

from tests.training.tiny import TINY, tiny_recipe
from training.runs import runs
from training.tasks import make_task


@pytest.mark.parametrize("kind", sorted(TINY))
def test_tiny_run_trains_checkpoints_evaluates_and_reloads(kind, tiny_runs):
    recipe, run_dir, metrics = tiny_runs(kind)  # runs.train_run's return
    for name in ("recipe.json", "vocabulary.json", "best.keras", "metrics.json"):
        assert (run_dir / name).is_file()
    assert len((run_dir / "log.csv").read_text().splitlines()) == 3  # header + 2
    assert runs.read_json(run_dir / "metrics.json") == json.loads(json.dumps(metrics))
    splits = make_task(recipe, runs.load_vocabulary(run_dir)).splits
    assert set(metrics) == {*splits, *runs.EXECUTION, runs.BACKEND}
    assert metrics[runs.BACKEND]["name"] == keras.backend.backend()
    assert metrics[runs.JIT_COMPILE]["used"] in (True, False)
    assert metrics[runs.JIT_COMPILE]["reason"] == "train.jit_compile=false"
    assert metrics[runs.STEPS_PER_EXECUTION] == {
        "used": 1,
        "reason": "auto: one step a call without XLA",
    }

    run = runs.load_run(run_dir)
    assert run.recipe == recipe and type(run.task) is type(make_task(recipe))
    best = keras.models.load_model(run_dir / "best.keras")
    for rebuilt, saved in zip(run.model.get_weights(), best.get_weights(), strict=True):
        np.testing.assert_array_equal(rebuilt, saved)
    outputs = run.model(np.array([[1, 3, 4, 6, 5], [1, 4, 3, 5, 6]], "int32"))
    assert isinstance(outputs, dict) == (kind == "recognition")


def test_load_run_reads_no_data(dyck_run, language_model_run, no_data):
    for run_dir in (dyck_run, language_model_run):
        run = runs.load_run(run_dir)
        assert run.model.count_params() > 0
        assert run.task.build_model(stateful=True, batch_size=2).count_params() > 0


class FirstWeights(keras.callbacks.Callback):
    """Keeps the weights the model has when training begins (before any step)."""

    def on_train_begin(self, logs=None):
        self.weights = self.model.get_weights()


def test_initial_model_has_the_weights_training_started_from(
    tmp_path, text_file, request
):
    # A stateful second-order LSTM language model with output dropout: the
    # data read for the vocabulary, the dropout's seed and the cells' kernels
    # all come between seeding and the first step.
    recipe = tiny_recipe(
        "language_model",
        text_file,
        [
            "model.cell=second_order_lstm",
            'model.options={"num_cells": 2}',
            "train.epochs=1",
            "train.max_steps_per_epoch=1",
            "train.seed=3",
        ],
    )
    assert recipe.train.stateful and recipe.model.output_dropout > 0
    first = FirstWeights()
    runs.train_run(recipe, tmp_path / "run", callbacks=[first])
    request.getfixturevalue("no_data")  # rebuilt from the run, not the data
    initial = runs.initial_model(tmp_path / "run").get_weights()
    trained = runs.load_run(tmp_path / "run").model.get_weights()
    assert len(initial) == len(first.weights) == len(trained)
    for rebuilt, started in zip(initial, first.weights, strict=True):
        np.testing.assert_array_equal(rebuilt, started)
    assert any(not np.array_equal(a, b) for a, b in zip(initial, trained, strict=True))

    other = tmp_path / "other-seed"  # the same run but for its seed: no training
    other.mkdir()
    runs.write_json(
        other / runs.RECIPE, recipe.with_values({"train.seed": 4}).to_dict()
    )
    (other / runs.VOCABULARY).write_text(
        (tmp_path / "run" / runs.VOCABULARY).read_text()
    )
    for a, b in zip(initial, runs.initial_model(other).get_weights(), strict=True):
        if a.ndim == 2:  # embeddings and kernels are drawn; biases are set
            assert not np.array_equal(a, b)


def test_resumed_run_ends_like_an_uninterrupted_one(tmp_path, tiny_runs):
    # Without XLA (op determinism on); resume_test kills compiled runs. The
    # uninterrupted run is the shared tiny Dyck run (two epochs).
    recipe, finished, uninterrupted = tiny_runs("dyck")
    assert recipe.train.epochs == 2 and recipe.train.jit_compile is False

    class Kill(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            raise RuntimeError("killed")

    with pytest.raises(RuntimeError, match="killed"):
        runs.train_run(recipe, tmp_path / "b", callbacks=[Kill()])
    assert len((tmp_path / "b" / "log.csv").read_text().splitlines()) == 2
    resumed = runs.train_run(recipe, tmp_path / "b")
    assert resumed == uninterrupted
    logs = [(folder / "log.csv").read_text() for folder in (finished, tmp_path / "b")]
    assert logs[0] == logs[1]
    weights = [
        keras.models.load_model(folder / "best.keras").get_weights()
        for folder in (finished, tmp_path / "b")
    ]
    for a, b in zip(*weights, strict=True):
        np.testing.assert_array_equal(a, b)


def test_a_run_directory_holds_one_recipe(tmp_path, tiny_runs):
    recipe, finished, first = tiny_runs("closing_bracket")
    shutil.copytree(finished, tmp_path / "run")
    again = runs.train_run(recipe, tmp_path / "run")
    assert again == first  # a finished run trains again, from the start
    assert len((tmp_path / "run" / "log.csv").read_text().splitlines()) == 3
    other = tiny_recipe("closing_bracket", extra=["train.epochs=3"])
    with pytest.raises(runs.RunError, match="holds a different recipe"):
        runs.train_run(other, tmp_path / "run")
    with pytest.raises(runs.RunError, match="does not exist"):
        runs.load_run(tmp_path / "missing")


def test_a_run_saved_before_a_recipe_key_existed_is_the_same_recipe(tmp_path, dyck_run):
    # A key added to the defaults later (here train.precision) takes the
    # behaviour older runs had, so their recipe.json still matches.
    recipe = tiny_recipe("dyck")  # the recipe of `dyck_run`
    run_dir = tmp_path / "run"
    shutil.copytree(dyck_run, run_dir)
    assert runs.read_json(run_dir / "recipe.json") == recipe.to_dict()
    saved = runs.read_json(run_dir / "recipe.json")
    del saved["train"]["precision"]
    runs.write_json(run_dir / "recipe.json", saved)
    assert runs.load_run(run_dir).recipe == recipe
    runs.train_run(recipe, run_dir)  # not refused as a different recipe
    assert runs.read_json(run_dir / "recipe.json") == recipe.to_dict()


def test_a_locked_run_directory_names_its_holder_until_released(tmp_path):
    with runs.lock_run_dir(tmp_path) as lock:
        assert lock.read_text().startswith(f"process {os.getpid()} on ")
        with pytest.raises(runs.RunError, match=f"is locked by process {os.getpid()}"):
            with runs.lock_run_dir(tmp_path):
                pass
    assert lock.read_text() == ""  # released: the next holder takes it
    with runs.lock_run_dir(tmp_path):
        pass
