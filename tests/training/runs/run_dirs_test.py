"""A run directory's owner and state (`training.runs.run_dirs`), on files alone:
no training here (tests/training/runs/probe_run_dirs_test.py trains)."""

import json
import os

import h5py
import pytest

import zoo
from training.core.callbacks import RunBackup
from training.reproduction import records, table_runs
from training.runs import run_dirs, run_files
from training.tasks import recipes

RECIPE = recipes.resolve("tiny_dyck_lstm", "small", ["train.epochs=3"])


def test_the_names_of_other_floors_are_theirs():
    assert run_dirs.CARD == zoo.presets.preset_loader.CARD
    # A run directory is laid out as a preset is: one loader reads both.
    preset = zoo.presets.preset_loader
    assert (run_dirs.BEST, run_dirs.VOCABULARY, run_dirs.RECIPE) == (
        preset.MODEL,
        preset.VOCABULARY,
        preset.CONFIG,
    )
    assert run_dirs.RECORD == records.RECORD
    runner = {table_runs.LOCK, table_runs.LOG, records.TIMING, records.HOST}
    assert set(run_dirs.RUNNER) == runner


def test_a_run_directory_of_any_command_is_owned(tmp_path):
    names = [
        *run_dirs.TRAINED,
        "metrics.json",
        "backup",
        ".train.lock",
        "attempt",
        *run_dirs.RUNNER,
        "saved_model",
        "evaluation-test.json",
        "evaluation-test-dynamic.json",
        "syntax-marvin_linzen_2018",
        "metrics.json.partial-12-ab12cd34",
        "best.partial.keras",
        "saved_model.partial-12-abcdef",
        "best.keras.damaged",
    ]
    for name in names:
        (tmp_path / name).mkdir()
    run_files.record(tmp_path, *names)  # as each command does before it writes
    run_dirs.check_owned(tmp_path)  # passes
    run_dirs.check_owned(tmp_path / "missing")  # a new one passes


@pytest.mark.parametrize(
    "name, message",
    [
        ("card.json", r"is a preset \(it holds card.json\)"),
        ("record.json", r"is a record of results/ \(it holds record.json\)"),
        ("notes.txt", r"holds 'notes.txt', which no command of the project wrote"),
        ("README.md", r"holds 'README.md'"),
    ],
)
def test_a_folder_the_project_did_not_make_is_refused(tmp_path, name, message):
    run_files.record(tmp_path, "recipe.json")
    (tmp_path / "recipe.json").write_text("{}")
    (tmp_path / name).write_text("")
    with pytest.raises(run_dirs.RunError, match=message):
        run_dirs.check_owned(tmp_path)


def test_an_attempt_that_is_a_file_is_refused(tmp_path):
    run_files.record(tmp_path, "attempt")  # as training records it
    (tmp_path / "attempt").write_text("")
    with pytest.raises(run_dirs.RunError, match="holds a file 'attempt'"):
        run_dirs.check_owned(tmp_path)


@pytest.mark.parametrize(
    "files, state",
    [
        ([], run_dirs.NEW),
        (["recipe.json"], run_dirs.UNFINISHED),
        (["recipe.json", "backup/"], run_dirs.INTERRUPTED),
        (["recipe.json", "metrics.json", "backup/"], run_dirs.INTERRUPTED),
        (["recipe.json", "metrics.json"], run_dirs.FINISHED),
        (["metrics.json", "attempt/backup/"], run_dirs.FINISHED),
        (["attempt/metrics.json"], run_dirs.PROMOTING),
    ],
)
def test_the_state_is_read_from_the_files(tmp_path, files, state):
    for name in files:
        path = tmp_path / name.rstrip("/")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.mkdir() if name.endswith("/") else path.write_text("")
    assert run_dirs.state(tmp_path) == state
    if state == run_dirs.FINISHED:
        run_dirs.check_finished(tmp_path)
    else:
        with pytest.raises(run_dirs.RunError, match="is not a finished run"):
            run_dirs.check_finished(tmp_path)


def finished_with_attempt(folder):
    """A finished run ("old" files) with a finished attempt ("new" ones)."""
    # Recorded before they are written, as training, the runner and the
    # commands that derive results do.
    run_files.record(folder, *run_dirs.OWN, "saved_model", "evaluation-test.json")
    attempt = folder / "attempt"
    for where, text in ((folder, "old"), (attempt, "new")):
        (where / "tensorboard").mkdir(parents=True)
        (where / "tensorboard" / "events").write_text(text)
        for name in ("recipe.json", "vocabulary.json", "best.keras", "log.csv"):
            (where / name).write_text(text)
        (where / "metrics.json").write_text(text)
    (folder / "saved_model").mkdir()
    (folder / "evaluation-test.json").write_text("old")
    (folder / "timing.json").write_text("runner")


def assert_promoted(folder):
    assert run_dirs.state(folder) == run_dirs.FINISHED
    for name in ("recipe.json", "vocabulary.json", "best.keras", "log.csv"):
        assert (folder / name).read_text() == "new"
    assert (folder / "metrics.json").read_text() == "new"
    assert (folder / "tensorboard" / "events").read_text() == "new"
    assert (folder / "timing.json").read_text() == "runner"  # not the run's
    assert not (folder / "saved_model").exists()  # the old model's
    assert not (folder / "evaluation-test.json").exists()
    assert not (folder / "attempt").exists()


def test_promote_moves_a_finished_attempt_in(tmp_path):
    finished_with_attempt(tmp_path)
    assert run_dirs.state(tmp_path) == run_dirs.PROMOTING
    run_dirs.promote(tmp_path)
    assert_promoted(tmp_path)


@pytest.mark.parametrize("cut_after", range(9))  # promote makes 9 moves here
def test_promote_cut_off_anywhere_finishes_when_called_again(
    tmp_path, monkeypatch, cut_after
):
    finished_with_attempt(tmp_path)
    replace, calls = os.replace, []

    def replace_then_die(*args):
        if len(calls) == cut_after:
            raise KeyboardInterrupt
        calls.append(args)
        replace(*args)

    monkeypatch.setattr(os, "replace", replace_then_die)
    with pytest.raises(KeyboardInterrupt):
        run_dirs.promote(tmp_path)
    monkeypatch.setattr(os, "replace", replace)
    # Never finished with files of both runs: metrics.json is the last move.
    assert run_dirs.state(tmp_path) == run_dirs.PROMOTING
    assert not (tmp_path / "metrics.json").exists()
    run_dirs.promote(tmp_path)
    assert_promoted(tmp_path)


def test_scratch_folders_are_unique_and_never_the_users(tmp_path):
    (tmp_path / "o.partial").mkdir()
    first, second = (run_dirs.scratch_beside(tmp_path / "o") for _ in range(2))
    assert first != second and first.parent == tmp_path
    assert first.name.startswith(f"o.partial-{os.getpid()}-")
    assert run_files.is_temporary(first.name)
    with pytest.raises(run_dirs.RunError, match="Cannot write the target '/proc/x'"):
        run_dirs.scratch_beside("/proc/x")


def test_replace_folder_replaces_only_what_it_may(tmp_path):
    def made(name, text):
        folder = run_dirs.scratch_beside(tmp_path / "o")
        (folder / name).write_text(text)
        return folder

    target = tmp_path / "o"
    mine = lambda folder: (folder / "mine").is_file()  # noqa: E731
    run_dirs.replace_folder(made("mine", "1"), target, mine)
    run_dirs.replace_folder(made("mine", "2"), target, mine)
    assert (target / "mine").read_text() == "2"
    (target / "mine").unlink()
    (target / "theirs").write_text("")
    source = made("mine", "3")
    with pytest.raises(run_dirs.RunError, match="a folder made by something else"):
        run_dirs.replace_folder(source, target, mine)
    assert source.is_dir() and (target / "theirs").is_file()
    (tmp_path / "f").write_text("")
    with pytest.raises(run_dirs.RunError, match="is a file"):
        run_dirs.replace_folder(source, tmp_path / "f", mine)
    (target / "theirs").unlink()  # empty: replaced
    run_dirs.replace_folder(source, target, mine)
    assert sorted(path.name for path in tmp_path.iterdir()) == ["f", "o"]


GOOD = {
    "epoch": 2,
    "batch": 0,
    "weights": "epoch-2.weights.h5",
    "callbacks": [{"best": 0.5}, {"wait": 0.0, "best": 0.5}],
    "seed_generators": [[1, 2]],
    "log_size": 10,
    "facts": {
        "jit_compile": {"used": False, "reason": "r"},
        "steps_per_execution": {"used": 1, "reason": "r"},
    },
}


@pytest.mark.parametrize(
    "change, message",
    [
        ({"epoch": 4}, r"epoch is 4; expected an integer from 0 to 3 \(train.epochs"),
        ({"epoch": -1}, "epoch is -1"),
        ({"epoch": True}, "epoch is True"),
        ({"epoch": "2"}, "epoch is '2'"),
        ({"weights": "../x.h5"}, r"weights is '../x.h5'; expected a file name"),
        ({"weights": None}, "weights is None"),
        ({"callbacks": {}}, r"callbacks is \{\}; expected a list"),
        ({"callbacks": [None]}, r"callbacks\[0\] is None; expected an object"),
        ({"callbacks": [{"best": "x"}]}, r"callbacks\[0\] is \{'best': 'x'\}"),
        ({"seed_generators": [1]}, r"seed_generators is \[1\]; expected a list of"),
        ({"log_size": "abc"}, "log_size is 'abc'; expected null or an integer"),
        ({"log_size": -5}, "log_size is -5"),
        ({"log_size": 11}, r"log_size is 11; expected .* to 10 \(the size of"),
        ({"facts": []}, r"facts is \[\]; expected an object"),
        (
            {"facts": {"jit_compile": {"used": "no", "reason": "r"}}},
            r"facts.jit_compile is .*; expected \{\"used\": true or false",
        ),
        (
            {"facts": {**GOOD["facts"], "steps_per_execution": {"used": 0}}},
            r"facts.steps_per_execution is .*; expected \{\"used\": >= 1",
        ),
        ([], r"the file is \[\]; expected a JSON object"),
    ],
)
def test_a_backup_is_checked_field_by_field(tmp_path, change, message):
    backup = tmp_path / "backup"
    backup.mkdir()
    h5py.File(backup / "epoch-2.weights.h5", "w").close()  # the facts come after
    (tmp_path / "log.csv").write_text("0123456789")
    metadata = {**GOOD, **change} if isinstance(change, dict) else change
    (backup / RunBackup.METADATA).write_text(json.dumps(metadata))
    with pytest.raises(ValueError, match=message) as error:
        run_dirs.read_backup(RECIPE, tmp_path)
    assert str(error.value).startswith(
        f"Backup {str(backup / 'training_metadata.json')!r}: "
    )
    assert f"(delete {str(backup)!r} to start afresh)" in str(error.value)


def test_a_good_backup_reaches_its_weights_check(tmp_path):
    backup = tmp_path / "backup"
    backup.mkdir()
    (backup / "epoch-2.weights.h5").write_bytes(b"")
    (tmp_path / "log.csv").write_text("0123456789")
    (backup / RunBackup.METADATA).write_text(json.dumps(GOOD))
    with pytest.raises(ValueError, match=r"^Backup weights .* \(not an HDF5 file\)"):
        run_dirs.read_backup(RECIPE, tmp_path)
