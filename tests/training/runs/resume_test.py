"""A run SIGKILLed anywhere (or interrupted in its process) resumes to exactly
the files of an uninterrupted run."""

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import keras
import numpy as np
import pytest

from tests.training.tiny import LSTM_RECOGNIZER, RECIPE_OF, TINY, tiny_recipe
from training.core.callbacks import RunBackup
from training.runs import run_files, runs
from training.tasks import recipes

ROOT = Path(__file__).resolve().parents[3]
# With these the validation loss goes up in epoch 1 (1.165, 1.218, 0.942), so
# a resume that forgot ModelCheckpoint's best or EarlyStopping's counter would
# save epoch 1 as the best model or train on. (max_steps_per_epoch=null: an
# epoch is the whole training set; capped epochs are tested below.)
OVERRIDES = [
    "train.max_steps_per_epoch=null",
    "train.learning_rate=2.0",
    "train.clipnorm=100.0",
    "train.seed=2",
    "train.jit_compile=true",  # exact resume under XLA (op determinism off)
    # 3 steps an epoch in calls of 2 (the last partial): "batch E" below is
    # the end of the first call of epoch E
    "train.steps_per_execution=2",
]

# Trains the recipe in RUN_DIR and SIGKILLs itself at a point: "batch E" at
# the end of the first batch of epoch E, "backup E" halfway through writing
# the backup weights at the end of epoch E.
DRIVER = """
import os, signal, sys
import keras
from training.tasks import recipes
from training.runs import runs

run_dir, where, epoch = sys.argv[1], sys.argv[2], int(sys.argv[3])
recipe = recipes.resolve(sys.argv[4], "small", sys.argv[5:])

def kill():
    os.kill(os.getpid(), signal.SIGKILL)

class KillInEpoch(keras.callbacks.Callback):
    def on_epoch_begin(self, index, logs=None):
        self.epoch = index

    def on_train_batch_end(self, batch, logs=None):
        if where == "batch" and self.epoch == epoch:
            kill()

save_weights = keras.Model.save_weights

def save_half_then_die(model, path, *args, **kwargs):
    save_weights(model, path, *args, **kwargs)
    if where == "backup" and "backup" in str(path) and callback.epoch == epoch:
        size = os.path.getsize(path)
        with open(path, "r+b") as file:
            file.truncate(size // 2)
        kill()

keras.Model.save_weights = save_half_then_die
callback = KillInEpoch()
runs.train_run(recipe, run_dir, callbacks=[callback])
raise SystemExit("not killed")
"""


def killed_run(run_dir, where, epoch, overrides, name="tiny_dyck_lstm"):
    arguments = [str(run_dir), where, str(epoch), name, *overrides]
    result = subprocess.run(
        [sys.executable, "-c", DRIVER, *arguments],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), "TF_CPP_MIN_LOG_LEVEL": "3"},
        capture_output=True,
        text=True,
    )
    assert result.returncode == -signal.SIGKILL, result.stderr[-2000:]


def assert_same_run(run_dir, clean_dir):
    for name in (runs.METRICS, runs.LOG, runs.RECIPE):
        assert (run_dir / name).read_text() == (clean_dir / name).read_text(), name
    resumed = runs.load_run(run_dir).model.get_weights()
    clean = runs.load_run(clean_dir).model.get_weights()
    for got, expected in zip(resumed, clean, strict=True):
        np.testing.assert_array_equal(got, expected)
    assert not (run_dir / runs.BACKUP).exists()


def assert_kills_resume_to_clean(tmp_path, kills, overrides, name="tiny_dyck_lstm"):
    """Trains the run uninterrupted, then killed at each `(where, epoch)` of
    `kills` and resumed after each; both must end the same."""
    recipe = recipes.resolve(name, "small", overrides)
    runs.train_run(recipe, tmp_path / "clean")
    run_dir = tmp_path / "killed"
    for where, epoch in kills:
        killed_run(run_dir, where, epoch, overrides, name)
    runs.train_run(recipe, run_dir)
    assert_same_run(run_dir, tmp_path / "clean")


@pytest.mark.processes
def test_resume_after_kills_matches_uninterrupted_run_and_keeps_its_stopping_state(
    tmp_path,
):
    # Epoch 1 is worse than epoch 0: the clean run keeps epoch 0's model and
    # stops (patience 1), after its last epoch, 1; a resume in epoch 1 must do
    # the same. Killed in the first epoch, while writing the first backup,
    # and in the last epoch.
    overrides = [*OVERRIDES, "train.epochs=3", "train.early_stopping_patience=1"]
    recipe = recipes.resolve("tiny_dyck_lstm", "small", overrides)
    runs.train_run(recipe, tmp_path / "clean")
    assert len((tmp_path / "clean" / runs.LOG).read_text().splitlines()) == 3
    run_dir = tmp_path / "killed"
    for where, epoch in (("batch", 0), ("backup", 0), ("batch", 1)):
        killed_run(run_dir, where, epoch, overrides)
    runs.train_run(recipe, run_dir)
    assert_same_run(run_dir, tmp_path / "clean")


@pytest.mark.processes
def test_resume_of_a_curriculum_run_matches_uninterrupted_run(tmp_path):
    # Epochs of 12, 13, then 15 batches (fitting.fit_epoch_lengths: a fit call
    # for each length): killed in the second epoch's call and in the last
    # call's second epoch, then resumed in grouped XLA calls (auto: up to 12).
    # An LSTM recognizer at half the tiny split scale: the curriculum is
    # what is tested, and XLA compiles its step in each process.
    overrides = [
        *TINY["recognition"],
        *LSTM_RECOGNIZER,
        "task.split_scale=0.005",
        "train.jit_compile=true",
        "train.curriculum=true",
        "train.epochs=6",
        "train.batch_size=2",
    ]
    kills = (("batch", 1), ("backup", 2), ("batch", 4))
    assert_kills_resume_to_clean(tmp_path, kills, overrides, RECIPE_OF["recognition"])


@pytest.mark.processes
def test_resume_after_kills_with_dropout_in_capped_epochs_matches(tmp_path):
    # The tiny language model with dropout on the embedding and the output,
    # in epochs of 8 of its 22 batches, compiled with XLA in calls of 4
    # steps: killed in the second epoch, while writing the backup of the
    # third (which wraps to the text's start), and in the last.
    overrides = [
        *TINY["language_model"],
        f"task.corpus=file:{varied_text(tmp_path)}",
        "model.dropout=0.25",
        "train.max_steps_per_epoch=8",
        "train.jit_compile=true",
        "train.steps_per_execution=4",
        "train.epochs=4",
    ]
    kills = (("batch", 1), ("backup", 2), ("batch", 3))
    name = RECIPE_OF["language_model"]
    assert_kills_resume_to_clean(tmp_path, kills, overrides, name)


@pytest.mark.parametrize("content", [b"", b"not hdf5"])
def test_unreadable_backup_is_one_line(tmp_path, content):
    recipe = recipes.resolve("tiny_dyck_lstm", "small", ["train.epochs=2"])
    run_files.record(tmp_path, runs.BACKUP)  # as training records it
    backup = tmp_path / runs.BACKUP
    backup.mkdir()
    (backup / "epoch-1.weights.h5").write_bytes(content)
    (backup / "training_metadata.json").write_text(
        json.dumps({"epoch": 1, "weights": "epoch-1.weights.h5", "callbacks": []})
    )
    with pytest.raises(ValueError, match=r"^Backup weights .* cannot be read .*afresh"):
        runs.train_run(recipe, tmp_path)


# In-process interruptions: an error raised in the middle of an epoch leaves
# the run directory as a kill there does (the backup of the epoch before).


class Interrupted(Exception):
    pass


class Interrupt(keras.callbacks.Callback):
    """Raises `Interrupted` at the end of batch `batch` (or the group holding
    it) of epoch `epoch`, before that epoch's backup."""

    def __init__(self, epoch, batch=0):
        super().__init__()
        self.at = (epoch, batch)
        self.epoch = None

    def on_epoch_begin(self, epoch, logs=None):
        self.epoch = epoch

    def on_train_batch_end(self, batch, logs=None):
        if self.epoch == self.at[0] and batch >= self.at[1]:
            raise Interrupted


def interrupted_and_resumed(recipe, folder, epoch, batch=0):
    """Trains `recipe` uninterrupted, then interrupted in `epoch` and resumed;
    asserts both end with the same files and weights."""
    runs.train_run(recipe, folder / "clean")
    run_dir = folder / "interrupted"
    with pytest.raises(Interrupted):
        runs.train_run(recipe, run_dir, callbacks=[Interrupt(epoch, batch)])
    assert RunBackup.read_metadata(run_dir / runs.BACKUP)["epoch"] == epoch
    runs.train_run(recipe, run_dir)
    assert_same_run(run_dir, folder / "clean")


def varied_text(folder, words=1000):
    """A corpus file of random sentences, so no two batches read alike."""
    rng = np.random.default_rng(0)
    vocabulary = "the a cat dog bird sat ran saw on under by mat log tree".split()
    lines, count = [], 0
    while count < words:
        length = int(rng.integers(3, 10))
        lines.append(" ".join(rng.choice(vocabulary, length)))
        count += length + 1
    path = folder / "corpus.txt"
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("kind", ["language_model", "dyck"])
def test_a_resumed_run_reads_the_batches_and_draws_the_masks_of_an_uninterrupted_one(
    kind, tmp_path
):
    # Epochs of a few batches of a longer stream: the stateful language
    # model's 22 batches (in order) in epochs of 8, the tiny Dyck task's 3
    # (shuffled) in epochs of 2. Epoch 2 starts inside a pass over the data,
    # which the uninterrupted run reached by reading epochs 0 and 1. The
    # language model has dropout on the embedding and before the decoder:
    # each Dropout layer draws its masks from a seed generator whose state no
    # weight file holds (one run for both: a resume that lost either the
    # place in the data or the generators' state ends with other weights).
    if kind == "language_model":
        overrides = ["model.dropout=0.25", "train.max_steps_per_epoch=8"]
        recipe = tiny_recipe(kind, varied_text(tmp_path), overrides)
        assert recipe.model.output_dropout > 0
        batch = 3  # after masks drawn in epoch 2 itself
    else:
        recipe = recipes.resolve("tiny_dyck_lstm", "small", [])
        batch = 0
    recipe = recipe.with_values({"train.epochs": 3})
    interrupted_and_resumed(recipe, tmp_path, epoch=2, batch=batch)
