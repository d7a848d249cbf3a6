"""Probes of run directories (issue 40, "Nothing lost, round three"): a row
per case a probe found on main, each failing there and passing here.

A run directory has an owner and a state (`training.runs.run_dirs`): training
writes only into folders it made, a finished run trained again trains in
`attempt/` and is replaced only when that finishes, a backup is checked
before it is used, exports and presets write into folders of their own, and
an interrupted command ends in one line with exit status 130. The rows that
need other processes (a real Ctrl-C, exports started together) are marked
`processes`.
"""

import csv
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import keras
import numpy as np
import pytest

from tests.training import startup_interrupts
from tests.training.startup_interrupts import (
    ctrl_c_at_its_default,
    started_as_from_a_terminal,
)
from tests.training.tiny import TINY, tiny_recipe
from training import evaluate, export, generate, preset, reproduce, syntax, train
from training.core.callbacks import RunBackup
from training.reproduction import preset_builder, records, table_sweep
from training.runs import evaluation, generation, runs, saved_model

ROOT = Path(__file__).resolve().parents[3]
# Three epochs whose validation loss falls each epoch, so the best model of
# the finished run (epoch 2) differs from that of a re-run cut after epoch 0.
RECIPE = tiny_recipe("dyck", extra=["train.epochs=3"])
KEPT = (runs.BEST, runs.METRICS, runs.LOG)
# Literal, so that the module runs against the code before `training.runs.run_dirs`.
ATTEMPT, METADATA = "attempt", "training_metadata.json"


class Interrupted(Exception):
    pass


class InterruptBefore(keras.callbacks.Callback):
    """Raises `Interrupted` as epoch `epoch` begins (a kill there)."""

    def __init__(self, epoch):
        super().__init__()
        self.epoch = epoch

    def on_epoch_begin(self, epoch, logs=None):
        if epoch == self.epoch:
            raise Interrupted


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """`{"finished": run_dir, "interrupted": run_dir}` of `RECIPE`; the
    interrupted one holds the backup of epoch 2."""
    folder = tmp_path_factory.mktemp("probe")
    runs.train_run(RECIPE, folder / "finished")
    losses = [row["val_loss"] for row in rows(folder / "finished")]
    assert losses == sorted(losses, reverse=True), "the best epoch must be the last"
    with pytest.raises(Interrupted):
        runs.train_run(RECIPE, folder / "interrupted", callbacks=[InterruptBefore(2)])
    return {"finished": folder / "finished", "interrupted": folder / "interrupted"}


def rows(run_dir):
    """The rows of a run's log.csv, `{column: number}` each."""
    with open(run_dir / runs.LOG) as file:
        return [{k: float(v) for k, v in row.items()} for row in csv.DictReader(file)]


def snapshot(run_dir, names=KEPT):
    return {name: (run_dir / name).read_bytes() for name in names}


def weights(path):
    return keras.models.load_model(path, compile=False).get_weights()


def assert_same_weights(a, b):
    for x, y in zip(a, b, strict=True):
        np.testing.assert_array_equal(x, y)


def one_line_exit(capsys, function, code=2):
    """Runs a CLI's `main`; asserts it exits with `code` and one error line."""
    try:
        with pytest.raises(SystemExit) as exit_info:
            function()
    except KeyboardInterrupt:
        pytest.fail("KeyboardInterrupt escaped the command")
    assert exit_info.value.code == code
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "Traceback" not in err[0], err
    return err[0]


class Probe:
    def __init__(self, made, tmp_path, monkeypatch, capsys):
        self.made, self.tmp, self.monkeypatch, self.capsys = (
            made,
            tmp_path,
            monkeypatch,
            capsys,
        )

    def copy(self, which):
        return Path(shutil.copytree(self.made[which], self.tmp / which))


ROWS = []


def row(function):
    ROWS.append(function)
    return function


# 1. Re-running a finished command deleted its model at once.


@row
def rerun_of_a_finished_run_killed_leaves_its_files_and_resumes(probe):
    run_dir = probe.copy("finished")
    before = snapshot(run_dir)
    with pytest.raises(Interrupted):
        runs.train_run(RECIPE, run_dir, callbacks=[InterruptBefore(1)])
    assert snapshot(run_dir) == before
    assert (run_dir / ATTEMPT / runs.BACKUP).is_dir()
    # The same command again resumes the attempt and moves it in.
    metrics = runs.train_run(RECIPE, run_dir)
    assert metrics == runs.read_json(probe.made["finished"] / runs.METRICS)
    assert not (run_dir / ATTEMPT).exists()
    assert rows(run_dir) == rows(probe.made["finished"])


@row
def preset_after_a_killed_rerun_is_the_finished_model(probe):
    run_dir = probe.copy("finished")
    with pytest.raises(Interrupted):
        runs.train_run(RECIPE, run_dir, callbacks=[InterruptBefore(1)])
    card = preset_builder.save_preset(run_dir, probe.tmp / "preset")
    finished = probe.made["finished"]
    metrics = runs.read_json(finished / runs.METRICS)
    assert card["remeasure"]["value"] == metrics["test"]["wcpa"]
    assert runs.read_json(probe.tmp / "preset" / runs.METRICS) == metrics
    assert_same_weights(
        weights(probe.tmp / "preset" / runs.BEST), weights(finished / runs.BEST)
    )


def refused_folder(folder, match):
    """Training into `folder` is refused in one line; nothing in it changes."""
    before = {path.name: path.read_bytes() for path in folder.iterdir()}
    with pytest.raises(runs.RunError, match=match):
        runs.train_run(RECIPE, folder)
    assert {path.name: path.read_bytes() for path in folder.iterdir()} == before


@row
def a_preset_folder_is_not_trained_into(probe):
    preset_builder.save_preset(probe.made["finished"], probe.tmp / "preset")
    refused_folder(probe.tmp / "preset", r"is a preset \(it holds card.json\)")


@row
def a_results_record_is_not_trained_into(probe):
    record = probe.tmp / "record"
    assert records.write_record(probe.made["finished"], record, parameters=1)
    refused_folder(record, r"is a record of results/")


@row
def a_folder_holding_other_files_is_not_trained_into(probe):
    (probe.tmp / "mine").mkdir()
    (probe.tmp / "mine" / "notes.txt").write_text("mine")
    refused_folder(probe.tmp / "mine", r"holds 'notes.txt', which")


# 2. A user's folder named OUT.partial was deleted.


def leaves_a_users_partial_folder(probe, write):
    """`write(run_dir, OUT)` leaves a folder of the user's named OUT.partial."""
    (probe.tmp / "o.partial").mkdir()
    (probe.tmp / "o.partial" / "keep").write_text("mine")
    write(probe.made["finished"], probe.tmp / "o")
    assert (probe.tmp / "o.partial" / "keep").read_text() == "mine"
    assert sorted(path.name for path in probe.tmp.iterdir()) == ["o", "o.partial"]


def stand_in_export(model, tokenizer, path, **kwargs):
    """What `saved_model.export_model` leaves in `path`, without tracing the
    endpoints (seconds each): these rows test where `export_run` writes and
    what it replaces; tests/training/runs/saved_model_test.py what it writes."""
    (Path(path) / "saved_model.pb").write_bytes(b"stand-in")
    return Path(path)


@row
def export_leaves_a_users_partial_folder(probe):
    probe.monkeypatch.setattr(saved_model, "export_model", stand_in_export)
    leaves_a_users_partial_folder(probe, saved_model.export_run)


@row
def preset_leaves_a_users_partial_folder(probe):
    leaves_a_users_partial_folder(probe, preset_builder.save_preset)


# 3. A malformed backup wiped progress or was taken as finished.


def refused_backup(probe, change, match):
    """Changes the interrupted run's backup metadata with `change` (or the
    backup with `change(backup_dir)`); training must refuse it in one line
    and leave every file of the run as it was."""
    run_dir = probe.copy("interrupted")
    backup = run_dir / runs.BACKUP
    path = backup / METADATA
    if isinstance(change, dict):
        path.write_text(json.dumps({**json.loads(path.read_text()), **change}))
    else:
        change(backup)
    names = [runs.LOG, runs.BEST, runs.RECIPE, runs.VOCABULARY]
    before = snapshot(run_dir, names)
    listing = sorted(str(p.relative_to(run_dir)) for p in run_dir.rglob("*"))
    with pytest.raises(ValueError, match=match) as error:
        runs.train_run(RECIPE, run_dir)
    assert "\n" not in str(error.value)
    assert snapshot(run_dir, names) == before
    assert sorted(str(p.relative_to(run_dir)) for p in run_dir.rglob("*")) == listing


def backup_as_file(backup):
    shutil.rmtree(backup)
    backup.write_text("not a folder")


@row
def a_backup_that_is_a_file_is_refused(probe):
    refused_backup(probe, backup_as_file, r"^Backup '.*backup' is a file; expected")


@row
def a_backup_beyond_the_last_epoch_is_refused(probe):
    match = r"training_metadata.json': epoch is 999; expected an integer from 0 to 3"
    refused_backup(probe, {"epoch": 999}, match)


@row
def a_backup_log_size_of_text_is_refused(probe):
    refused_backup(probe, {"log_size": "abc"}, r"log_size is 'abc'; expected null or")


@row
def a_backup_log_size_below_zero_is_refused(probe):
    refused_backup(probe, {"log_size": -5}, r"log_size is -5; expected null or an")


def null_callback_state(backup):
    """The backup's last callback state made null, the others kept."""
    path = backup / METADATA
    metadata = json.loads(path.read_text())
    assert len(metadata["callbacks"]) >= 2
    metadata["callbacks"][-1] = None
    path.write_text(json.dumps(metadata))


@row
def a_backup_callback_state_of_null_is_refused(probe):
    match = r"callbacks\[\d+\] is None; expected an object"
    refused_backup(probe, null_callback_state, match)


# 5. Exports to one target at once shared OUT.partial.


@row
def an_export_overtaken_by_another_succeeds_whole(probe):
    target = probe.tmp / "o"
    write = stand_in_export
    inner = []

    def export_meanwhile(*args, **kwargs):
        path = write(*args, **kwargs)
        if not inner:  # a second export to the same target, while this one writes
            inner.append(None)
            inner[0] = saved_model.export_run(probe.made["finished"], target)
        return path

    probe.monkeypatch.setattr(saved_model, "export_model", export_meanwhile)
    assert saved_model.export_run(probe.made["finished"], target) == target
    assert inner == [target]
    assert (target / "saved_model.pb").is_file()
    assert (target / saved_model.MARKER).is_file()
    assert sorted(path.name for path in probe.tmp.iterdir()) == ["o"]


# 8. Ctrl-C printed a traceback; `preset:NAME` became a folder's name;
# an export beside an unwritable folder was a TensorFlow traceback.


@row
def interrupted_commands_end_in_one_line_with_130(probe):
    def interrupt(*args, **kwargs):
        raise KeyboardInterrupt

    finished = str(probe.made["finished"])
    commands = [
        (runs, "train_run", train.main, ["tiny_dyck_lstm", "--run-dir", "r"]),
        (saved_model, "export_run", export.main, [finished, "o"]),
        (preset_builder, "save_preset", preset.main, [finished, "p"]),
        (evaluation, "evaluate_run", evaluate.main, [finished]),
        (generation, "sample", generate.main, [finished, "--prompt", "("]),
        (table_sweep, "prepare", reproduce.main, ["mm_dyck", "--out", "out"]),
    ]
    probe.monkeypatch.chdir(probe.tmp)
    for module, name, main, argv in commands:
        probe.monkeypatch.setattr(module, name, interrupt)
        line = one_line_exit(probe.capsys, lambda: main(argv), code=130)  # noqa: B023
        assert "interrupted" in line, line


@row
def training_into_preset_name_makes_no_such_folder(probe):
    probe.monkeypatch.chdir(probe.tmp)
    argv = ["tiny_dyck_lstm", "--run-dir", "preset:dyck_rnn_m4", "--no-export"]
    line = one_line_exit(probe.capsys, lambda: train.main(argv))
    assert "'preset:dyck_rnn_m4' names a preset, which training never" in line
    assert list(probe.tmp.iterdir()) == []


@row
def syntax_of_a_preset_without_out_makes_no_such_folder(probe):
    suite = probe.tmp / "suite.jsonl"
    pair = {"sentence_good": "the cat sat.", "sentence_bad": "the cat sat sat."}
    suite.write_text(json.dumps(pair) + "\n")
    probe.monkeypatch.chdir(probe.tmp)
    argv = ["preset:mlstm_ptb_char", "--suite", str(suite)]
    line = one_line_exit(probe.capsys, lambda: syntax.main(argv))
    assert "is a preset, which is read-only; expected --out DIR" in line
    assert [path.name for path in probe.tmp.iterdir()] == ["suite.jsonl"]


@row
def export_beside_an_unwritable_folder_is_one_line(probe):
    argv = [str(probe.made["finished"]), "/proc/x"]
    line = one_line_exit(probe.capsys, lambda: export.main(argv))
    assert "Cannot write the export target '/proc/x'" in line


# Issue 62 ("Nothing lost, round four"), numbered by its defects.
# 1. A re-run deleted a user's files whose names looked like results.


@row
def a_rerun_never_removes_files_it_did_not_write(probe):
    run_dir = probe.copy("finished")
    (run_dir / "syntax-notes.txt").write_text("notes")
    (run_dir / "evaluation-by-hand.json").write_text('{"mine": 1}')
    before = sorted(path.name for path in run_dir.iterdir())
    match = r"holds 'evaluation-by-hand.json' and 1 more, which no command"
    with pytest.raises(runs.RunError, match=match) as error:
        runs.train_run(RECIPE, run_dir)
    assert "\n" not in str(error.value)
    assert sorted(path.name for path in run_dir.iterdir()) == before
    assert (run_dir / "syntax-notes.txt").read_text() == "notes"


@row
def evaluate_never_overwrites_a_file_it_did_not_write(probe):
    run_dir = probe.copy("finished")
    (run_dir / "evaluation-test.json").write_text('{"mine": 1}')
    argv = [str(run_dir)]
    line = one_line_exit(probe.capsys, lambda: evaluate.main(argv))
    assert "evaluation-test.json' is not a file python -m training.evaluate" in line
    assert (run_dir / "evaluation-test.json").read_text() == '{"mine": 1}'


# 3. Planted links sent training outside the run directory.


def refused_link(probe, which, name):
    """`name` in a copy of the `which` run is a link to a copy of itself
    outside; training refuses it in one line and changes nothing there."""
    run_dir = probe.copy(which)
    outside = probe.tmp / "outside"
    outside.mkdir()
    if (run_dir / name).is_dir():
        shutil.move(run_dir / name, outside / name)
    else:
        (outside / name).mkdir()
    (run_dir / name).symlink_to(outside / name)
    before = {str(p): p.stat().st_mtime_ns for p in outside.rglob("*")}
    with pytest.raises(ValueError, match=r"is a symbolic link \(to ") as error:
        runs.train_run(RECIPE, run_dir)
    assert f"{name}' is a symbolic link" in str(error.value)
    assert {str(p): p.stat().st_mtime_ns for p in outside.rglob("*")} == before
    assert sorted(p.name for p in outside.iterdir()) == [name]


@row
def a_backup_link_is_refused(probe):
    refused_link(probe, "interrupted", runs.BACKUP)


@row
def an_attempt_link_in_a_finished_run_is_refused(probe):
    refused_link(probe, "finished", ATTEMPT)


@row
def an_export_target_that_is_a_link_is_refused(probe):
    probe.monkeypatch.setattr(saved_model, "export_model", stand_in_export)
    (probe.tmp / "elsewhere").mkdir()
    (probe.tmp / "elsewhere" / saved_model.MARKER).write_text("{}")
    (probe.tmp / "o").symlink_to(probe.tmp / "elsewhere")
    with pytest.raises(ValueError, match=r"export target '.*o' is a symbolic link"):
        saved_model.export_run(probe.made["finished"], probe.tmp / "o")
    assert (probe.tmp / "o").is_symlink()
    assert sorted(p.name for p in probe.tmp.iterdir()) == ["elsewhere", "o"]


# 7. A backup that claimed the last epoch marked a cut-off run finished.


@row
def a_backup_claiming_more_epochs_than_its_log_is_refused(probe):
    match = r"epoch is 3; expected 2, the epochs whose rows log.csv holds"
    refused_backup(probe, {"epoch": 3}, match)


# 9. Ctrl-C during a preset or export write could be swallowed by Python (it
# came in a __del__ or a gc callback, as JAX's), and the command exited 0.


class DroppedCtrlC:
    """Its `__del__` receives a Ctrl-C: Python prints and drops the
    `KeyboardInterrupt` raised there, as in JAX's gc callback."""

    def __del__(self):
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.2)  # the handler runs here, inside __del__


def dropped_ctrl_c_while(module, name, probe):
    original = getattr(module, name)

    def writing(*args, **kwargs):
        result = original(*args, **kwargs)
        DroppedCtrlC()  # made and deleted at once
        return result

    probe.monkeypatch.setattr(module, name, writing)


@row
def a_dropped_ctrl_c_during_a_preset_write_leaves_no_preset(probe):
    dropped_ctrl_c_while(preset_builder, "_write_run_files", probe)
    argv = [str(probe.made["finished"]), str(probe.tmp / "p")]
    with ctrl_c_at_its_default():
        line = one_line_exit(probe.capsys, lambda: preset.main(argv), code=130)
    assert "interrupted" in line
    assert list(probe.tmp.iterdir()) == []


@row
def a_dropped_ctrl_c_during_an_export_leaves_no_export(probe):
    probe.monkeypatch.setattr(saved_model, "export_model", stand_in_export)
    dropped_ctrl_c_while(saved_model, "export_model", probe)
    argv = [str(probe.made["finished"]), str(probe.tmp / "o")]
    with ctrl_c_at_its_default():
        line = one_line_exit(probe.capsys, lambda: export.main(argv), code=130)
    assert "interrupted" in line
    assert list(probe.tmp.iterdir()) == []


@row
def analyze_and_syntax_interrupted_are_one_line(probe):
    from training import analyze
    from training.analysis import targeted_syntax

    def interrupt(*args, **kwargs):
        raise KeyboardInterrupt

    import training.analysis as analysis

    finished = str(probe.made["finished"])
    probe.monkeypatch.setattr(analysis, "analyze", interrupt)
    probe.monkeypatch.setattr(targeted_syntax, "evaluate_syntax", interrupt)
    commands = [
        (analyze.main, ["ldpa", finished, "--out", str(probe.tmp / "a")]),
        (syntax.main, [finished, "--suite", "s.jsonl", "--out", str(probe.tmp / "s")]),
    ]
    for main, argv in commands:
        line = one_line_exit(probe.capsys, lambda: main(argv), code=130)  # noqa: B023
        assert "interrupted" in line, line
    assert list(probe.tmp.iterdir()) == []


# Issue 62, case 10 (minor): what a killed export left beside its target
# stayed there for good; an unfinished run was exported without a word.


def ended_pid():
    """The process id of a process that has ended."""
    process = subprocess.Popen([sys.executable, "-c", ""])
    process.wait()
    return process.pid


@row
def an_export_removes_what_a_killed_one_left_beside_its_target(probe):
    probe.monkeypatch.setattr(saved_model, "export_model", stand_in_export)
    ended, live = ended_pid(), os.getppid()
    left = [f"o.partial-{ended}-ab_cd123", f"o.replaced-{ended}-0123abcd"]
    kept = ["o.partial", f"o.partial-{live}-ab_cd123"]  # yours; a live export's
    kept += [f"p.partial-{ended}-ab_cd123", f"o.partial-{ended}-ab_cd123.x"]
    for name in left + kept:
        (probe.tmp / name).mkdir()
        (probe.tmp / name / "saved_model.pb").write_bytes(b"left")
    (probe.tmp / f"o.replaced-{ended}-fedcba98").write_text("a file of yours")
    kept.append(f"o.replaced-{ended}-fedcba98")
    saved_model.export_run(probe.made["finished"], probe.tmp / "o")
    assert sorted(path.name for path in probe.tmp.iterdir()) == sorted(["o", *kept])


@row
def an_unfinished_run_is_exported_with_a_line_saying_so(probe):
    probe.monkeypatch.setattr(saved_model, "export_model", stand_in_export)
    probe.capsys.readouterr()
    assert export.main([str(probe.made["interrupted"]), str(probe.tmp / "o")]) == 0
    err = probe.capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith("python -m training.export: warning: "), err
    assert "is not a finished run: its training was interrupted" in err[0], err
    assert (probe.tmp / "o" / saved_model.MARKER).is_file()
    assert export.main([str(probe.made["finished"]), str(probe.tmp / "p")]) == 0
    assert probe.capsys.readouterr().err == ""


@pytest.mark.parametrize("probe_row", ROWS, ids=lambda function: function.__name__)
def test_probe(probe_row, made, tmp_path, monkeypatch, capsys):
    probe_row(Probe(made, tmp_path, monkeypatch, capsys))


# The rows that need processes of their own.

ENV = {**os.environ, "PYTHONPATH": str(ROOT), "TF_CPP_MIN_LOG_LEVEL": "3"}


@pytest.mark.processes
def test_probe_ctrl_c_ends_training_in_one_line_and_the_run_resumes(tmp_path):
    run_dir = tmp_path / "run"
    command = [sys.executable, "-m", "training.train", "tiny_dyck_lstm"]
    command += ["train.epochs=100000", "train.early_stopping_patience=100000"]
    command += ["--run-dir", str(run_dir), "--no-export"]
    process = started_as_from_a_terminal(command, ENV)
    try:
        deadline = time.monotonic() + 240
        metadata = run_dir / runs.BACKUP / METADATA
        while not metadata.is_file():
            assert process.poll() is None and time.monotonic() < deadline
            time.sleep(0.2)
        process.send_signal(signal.SIGINT)
        # It ends in seconds. Before training.core.interrupts, 1 Ctrl-C in 6
        # was dropped by Python (raised inside JAX's gc callback) and the run
        # went on: this wait timed out under load.
        _, err = process.communicate(timeout=300)
    finally:
        process.kill()
        process.wait()
    lines_ = [line for line in err.decode().splitlines() if line.strip()]
    assert process.returncode == 130, err.decode()[-2000:]
    assert not any("Traceback" in line for line in lines_), err.decode()[-2000:]
    assert lines_[-1].startswith("python -m training.train: interrupted; the same")
    epoch = RunBackup.read_metadata(run_dir / runs.BACKUP)["epoch"]
    assert epoch >= 1  # resumable: the backup of the last whole epoch


@pytest.mark.processes
def test_probe_exports_started_together_each_end_whole(made, tmp_path):
    target = tmp_path / "o"
    command = [sys.executable, "-m", "training.export", str(made["finished"])]
    processes = [
        subprocess.Popen(
            [*command, str(target)],
            cwd=ROOT,
            env=ENV,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        for _ in range(2)  # a third would race the same way
    ]
    for process in processes:
        _, err = process.communicate(timeout=300)
        text = err.decode()
        assert "Traceback" not in text, text[-2000:]
        assert process.returncode in (0, 2), text[-2000:]
    assert any(process.returncode == 0 for process in processes)
    assert (target / saved_model.MARKER).is_file()
    assert sorted(path.name for path in tmp_path.iterdir()) == ["o"]


@pytest.mark.processes
@pytest.mark.parametrize("backend", ["tensorflow", "jax"])
def test_probe_ctrl_c_at_start_up_is_one_line(backend, tmp_path):
    # Issue 62: 4 of 16 timed Ctrl-Cs at start-up crashed (SIGSEGV, SIGABRT)
    # or printed a traceback. A few moments here (from the package's import to
    # the backend's); `python -m tests.training.startup_interrupts` tries 20.
    for delay in (0.5, 1.5, 4.0):
        status, lines = startup_interrupts.interrupt_at(
            backend, delay, tmp_path / f"{delay}"
        )
        assert startup_interrupts.one_line_130(status, lines), (delay, status, lines)


def children(pid):
    """The process ids of `pid`'s children (Linux's /proc)."""
    try:
        return [
            int(child)
            for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        ]
    except FileNotFoundError:  # it has ended
        return []


def running(pid):
    """Whether the process `pid` runs (not ended, not a zombie)."""
    try:
        status = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return status.rsplit(")", 1)[1].split()[0] != "Z"


def interrupt_alone(process, started, timeout=240):
    """Waits until `started()`, sends SIGINT to `process` alone and waits for
    it; returns its `(stdout, stderr)` and the children it had when
    signalled. Whatever of them still runs then is killed."""
    found = []
    try:
        deadline = time.monotonic() + timeout
        while not started():
            assert process.poll() is None and time.monotonic() < deadline
            time.sleep(0.1)
        found = children(process.pid)
        os.kill(process.pid, signal.SIGINT)
        out, err = process.communicate(timeout=120)
    finally:
        for pid in [process.pid, *found]:
            if running(pid):
                os.kill(pid, signal.SIGKILL)
        process.wait()
    return out, err, found


@pytest.mark.processes
def test_probe_sigint_to_the_protocol_driver_alone_stops_its_search(tmp_path):
    # Issue 62, case 9: `kill -INT` to the tuning.protocol driver alone was
    # ignored: the driver waited on, and its search trained on.
    command = [sys.executable, "-m", "tuning.protocol", "stack_d2", "--rows", "gru"]
    command += [*TINY["recognition"], "train.epochs=100000"]
    command += ["train.early_stopping_patience=100000", "--verbose", "0"]
    command += ["--max-trials", "1", "--seeds-per-trial", "1"]
    command += [
        "--directory",
        str(tmp_path / "runs"),
        "--record",
        str(tmp_path / "rec"),
    ]
    with ctrl_c_at_its_default():
        driver = subprocess.Popen(
            command, cwd=ROOT, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
    project = tmp_path / "runs" / "stack_d2" / "gru"
    # Once the search's trial has begun.
    out, err, searches = interrupt_alone(driver, lambda: list(project.glob("trial_*")))
    assert len(searches) == 1, searches
    assert driver.returncode == 130, err.decode()[-2000:]
    assert not running(searches[0])
    assert err.decode().strip() == "", err.decode()[-2000:]  # no traceback
    said = [line for line in out.decode().splitlines() if line.strip()]
    # The search's line, then the driver's one line.
    assert said[-2].startswith("Interrupted; the same command resumes"), said
    assert said[-1] == "Stopped in row gru; the same command resumes.", said
