"""Every CLI refuses bad input with one line on stderr, exit status 2, no
traceback, and writes nothing (issue 11)."""

import dataclasses
import hashlib
import json
import math
import shutil

import pytest

from tests.training.tiny import TINY
from training import evaluate, export, generate, reproduce, train
from training.core import fitting
from training.core.callbacks import RunBackup
from training.runs import runs
from tuning import search

CLIS = {
    "train": train.main,
    "evaluate": evaluate.main,
    "export": export.main,
    "generate": generate.main,
    "search": search.main,
    "reproduce": reproduce.main,
}
DYCK = ["dyck2_mlstm", *TINY["dyck"]]  # the recipe of the `dyck_run` fixture
SEARCH = ["--recipe", "tiny_dyck_lstm", "--units", "4", "--verbose", "0"]


@pytest.fixture(scope="module")
def other_runs(tmp_path_factory, tiny_runs):
    """Finished tiny runs of a Dyck-RNN, a recognizer and a tagger (the shared
    `tiny_runs`: each case checks it left them as they were), and a tiny
    search."""
    folder = tmp_path_factory.mktemp("other_runs")
    for kind in ("closing_bracket", "recognition", "dyck_depth"):
        shutil.copytree(tiny_runs(kind)[1], folder / kind)
    searches = folder / "searches"
    argv = [*SEARCH, "--directory", str(searches), "--project-name", "tiny"]
    assert search.main([*argv, "--max-trials", "1"]) == 0
    return folder


@pytest.fixture
def world(tmp_path, dyck_run, other_runs):
    """The paths the cases name: runs, broken copies, files and folders."""
    paths = {"tmp": tmp_path, "file": tmp_path / "file.txt"}
    paths["file"].write_text("not a folder\n")
    for name in ("dyck", "truncated", "badrecipe", "badvocab", "badbackup"):
        paths[name] = tmp_path / name
        shutil.copytree(dyck_run, paths[name])
    best = paths["truncated"] / runs.BEST
    best.write_bytes(best.read_bytes()[:1000])
    (paths["badrecipe"] / runs.RECIPE).write_text('{"task": ')
    (paths["badvocab"] / runs.VOCABULARY).write_text("[1, 2")
    (paths["badbackup"] / runs.METRICS).unlink()  # interrupted: none yet
    backup = paths["badbackup"] / runs.BACKUP
    backup.mkdir()
    (backup / "epoch-1.weights.h5").write_bytes(b"\0" * 64)
    metadata = {"epoch": 1, "weights": "epoch-1.weights.h5", "callbacks": []}
    metadata["log_size"] = (paths["badbackup"] / runs.LOG).stat().st_size
    (backup / "training_metadata.json").write_text(json.dumps(metadata))
    paths["foreign"] = tmp_path / "work" / "mydata"
    paths["foreign"].mkdir(parents=True)
    (paths["foreign"] / "notes.txt").write_text("mine\n")
    paths["bracket"] = other_runs / "closing_bracket"
    paths["recognizer"] = other_runs / "recognition"
    paths["tagger"] = other_runs / "dyck_depth"
    paths["searches"] = other_runs / "searches"
    return paths


def snapshot(*roots):
    """Every path under `roots` with the sha256 of each file's content."""
    return {
        str(path): path.is_dir() or hashlib.sha256(path.read_bytes()).hexdigest()
        for root in roots
        for path in sorted(root.rglob("*"))
    }


CASES = [
    # training.train
    ("train", ["nope"], "Unknown recipe 'nope'"),
    ("train", ["tiny_dyck_lstm", "train.nope=1"], "Unknown recipe key 'train.nope'"),
    ("train", ["tiny_dyck_lstm", "train.epochs=x"], "must be of type int"),
    ("train", ["tiny_dyck_lstm", "--scale", "small", "train.nope=1"], "train.nope"),
    ("train", ["tiny_dyck_lstm", "train.learning_rate=NaN"], "must be a finite"),
    ("train", ["tiny_dyck_lstm", "train.learning_rate=-0.1"], "must be > 0"),
    ("train", ["tiny_dyck_lstm", "train.batch_size=0"], "batch_size must be >= 1"),
    ("train", ["tiny_dyck_lstm", "train.epochs=0"], "epochs must be >= 1"),
    ("train", ["tiny_dyck_lstm", "train.epochs=-1"], "epochs must be >= 1"),
    # optional keys are type-checked, and nothing is written before every check
    ("train", ["tiny_dyck_lstm", "train.clipvalue=nan", "--run-dir", "{tmp}/r"],
     "'train.clipvalue' must be of type float or null"),
    ("train", ["tiny_dyck_lstm", "train.clipvalue=[1]", "--run-dir", "{tmp}/r"],
     "'train.clipvalue' must be of type float or null"),
    ("train", ["tiny_dyck_lstm", "train.stop_below_loss=true", "--run-dir",
               "{tmp}/r"], "'train.stop_below_loss' must be of type float"),
    ("train", ["tiny_dyck_lstm", "train.final_learning_rate=Infinity",
               "--run-dir", "{tmp}/r"], "final_learning_rate must be a finite"),
    ("train", ["tiny_dyck_lstm", "train.reduce_lr_patience=1",
               "train.reduce_lr_factor=2", "--run-dir", "{tmp}/r"],
     "reduce_lr_factor must be > 0 and < 1"),
    ("train", ["tiny_dyck_lstm", "model.options.nope=1", "--run-dir", "{tmp}/r"],
     "model.options.nope is not an option of cell 'lstm'"),
    ("train", ["tiny_dyck_lstm", "--run-dir", "{file}"], "is a file"),
    ("train", ["dyck_depth_lstm", "model.pooling=max", "--run-dir", "{tmp}/r"],
     "Unknown recipe key 'model.pooling' for task.kind 'dyck_depth'"),
    ("train", ["tiny_dyck_lstm", "model.bidirectional=true", "--run-dir", "{tmp}/r"],
     "Unknown recipe key 'model.bidirectional' for task.kind 'dyck'"),
    ("train", ["tiny_dyck_lstm", "--run-dir", "{dyck}"], "holds a different recipe"),
    ("train", [*DYCK, "--run-dir", "{badbackup}"], "Backup weights"),
    (
        "train",
        ["ptb_word_lstm", "task.corpus=file:{tmp}/none.txt", "--run-dir", "{tmp}/r"],
        "no such file",
    ),
    # training.evaluate
    ("evaluate", ["{tmp}/none"], "does not exist"),
    ("evaluate", ["{truncated}"], "best.keras' cannot be read"),
    ("evaluate", ["{badrecipe}"], "recipe.json' cannot be read"),
    ("evaluate", ["{badvocab}"], "vocabulary.json' cannot be read"),
    ("evaluate", ["{dyck}", "--split", "nope"], "Unknown split 'nope'"),
    ("evaluate", ["{dyck}", "--dynamic", "--learning-rate", "nan"],
     "`--learning-rate` must be a finite number; received nan."),
    ("evaluate", ["{dyck}", "--dynamic", "--learning-rate", "inf"],
     "`--learning-rate` must be a finite number; received inf."),
    ("evaluate", ["{dyck}", "--dynamic", "--learning-rate", "-1"],
     "`--learning-rate` must be in [0, inf); received -1.0."),
    ("evaluate", ["{dyck}", "--dynamic", "--decay", "nan"],
     "`--decay` must be a finite number"),
    ("evaluate", ["{dyck}", "--dynamic", "--decay", "1.5"],
     "`--decay` must be in [0, 1]; received 1.5."),
    # training.export
    ("export", ["{truncated}", "{tmp}/out"], "best.keras' cannot be read"),
    ("export", ["{dyck}", "{file}"], "is a file"),
    ("export", ["{dyck}", "{foreign}"], "not an earlier export"),
    # training.generate
    ("generate", ["{bracket}", "--prompt", "(a"], "trains a DyckRNN, which does not"),
    ("generate", ["{recognizer}", "--prompt", "(a"], "trains a Recognizer, which"),
    ("generate", ["{tagger}", "--prompt", "(a"], "trains a Tagger, which does not"),
    ("generate", ["{truncated}", "--prompt", "(a"], "best.keras' cannot be read"),
    ("generate", ["{dyck}", "--prompt", "(a", "--length", "-1"], "`length` must"),
    ("generate", ["{dyck}", "--prompt", "(a", "--temperature", "inf"],
     "`temperature` must be a finite number"),
    ("generate", ["{dyck}", "--prompt", "(a", "--temperature", "nan"],
     "`temperature` must be a finite number"),
    # tuning.search
    ("search", [*SEARCH, "--directory", "{tmp}/work", "--project-name", "mydata",
                "--overwrite"], "is not a search of python -m tuning.search"),
    ("search", [*SEARCH, "--directory", "{tmp}/work", "--project-name", ".",
                "--overwrite"], "is not a folder inside --directory"),
    ("search", [*SEARCH, "--directory", "{tmp}/work", "--project-name", "../x"],
     "is not a folder inside --directory"),
    ("search", [*SEARCH, "--directory", "{searches}", "--project-name", "tiny",
                "--cells", "gru", "--max-trials", "3"], "cells differ"),
    ("search", [*SEARCH, "--directory", "{searches}", "--project-name", "tiny",
                "train.learning_rate=0.05"], "recipe differ"),
    ("search", [*SEARCH, "--directory", "{tmp}/s", "--param-budget", "50"],
     "below the smallest model"),
    ("search", [*SEARCH, "--directory", "{tmp}/s", "--max-trials", "0"],
     "`max_trials` must be"),
    ("search", [*SEARCH, "--directory", "{tmp}/s", "--cells", "nope"], "Unknown cell"),
    ("search", [*SEARCH, "--directory", "{tmp}/s", "--max-trials", "1",
                "train.nope=1"], "train.nope"),
    # training.reproduce (takes no overrides)
    ("reproduce", ["nope", "--out", "{tmp}/o"], "nope"),
    ("reproduce", ["mm_dyck", "--jobs", "0", "--out", "{tmp}/o"], "--jobs must be"),
]  # fmt: skip


@pytest.mark.parametrize(
    "cli, argv, message", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)]
)
def test_bad_input_is_one_line_exit_2_nothing_written(
    world, capsys, cli, argv, message
):
    argv = [item.format(**world) for item in argv]
    untouched = [
        world[name] for name in ("searches", "bracket", "recognizer", "tagger")
    ]
    before = snapshot(world["tmp"], *untouched)
    with pytest.raises(SystemExit) as exit_info:
        CLIS[cli](argv)
    error = capsys.readouterr().err
    assert exit_info.value.code == 2, error
    assert message in error
    assert len(error.strip().splitlines()) == 1, error
    assert "Traceback" not in error
    assert snapshot(world["tmp"], *untouched) == before


def test_missing_minimal_pair_suites_are_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("ZOO_DATA_DIR", raising=False)
    (tmp_path / "none").mkdir()  # a folder without suites (no folder: probe_files_test)
    argv = ["blimp_acceptability_lstm", f"task.data_dir={tmp_path / 'none'}"]
    with pytest.raises(SystemExit) as exit_info:
        train.main([*argv, "--run-dir", str(tmp_path / "run")])
    error = capsys.readouterr().err
    assert exit_info.value.code == 2
    assert "No minimal-pair suites (blimp/*.jsonl) found in data_dir=" in error
    assert "set task.data_dir or ZOO_DATA_DIR" in error
    assert len(error.strip().splitlines()) == 1 and not (tmp_path / "run").exists()


def test_unreadable_backup_is_found_before_anything_is_written(world):
    assert RunBackup.read_metadata(world["dyck"] / runs.BACKUP) is None
    with pytest.raises(ValueError, match="not an HDF5 file"):
        RunBackup.read_metadata(world["badbackup"] / runs.BACKUP)


def test_diverged_run_exits_2_and_exports_nothing(tmp_path, capsys, monkeypatch):
    # An optimizer with a NaN learning rate (which the recipe check refuses,
    # so it is made past the recipe) makes the loss NaN after the first
    # step: TerminateOnNaN stops the run.
    make_optimizer = fitting.make_optimizer
    monkeypatch.setattr(
        fitting,
        "make_optimizer",
        lambda train, steps: make_optimizer(
            dataclasses.replace(train, learning_rate=math.nan), steps
        ),
    )
    run_dir = tmp_path / "run"
    argv = ["tiny_dyck_lstm"]
    with pytest.raises(SystemExit) as exit_info:
        train.main([*argv, "--run-dir", str(run_dir)])
    error = capsys.readouterr().err
    assert exit_info.value.code == 2
    assert "Training diverged" in error and len(error.strip().splitlines()) == 1
    assert not (run_dir / runs.METRICS).exists()
    assert not (run_dir / "saved_model").exists()
