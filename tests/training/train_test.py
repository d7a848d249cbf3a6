import os
import signal
import subprocess
import sys
import time

import pytest

from tests.training.tiny import TINY
from training.runs import runs
from training.train import main


def test_cli_prints_the_table_and_exports(tmp_path, capsys):
    run_dir = tmp_path / "run"
    assert (
        main(["dyck2_dyck_rnn", *TINY["closing_bracket"], "--run-dir", str(run_dir)])
        == 0
    )
    out = capsys.readouterr().out.splitlines()
    metrics = runs.read_json(run_dir / "metrics.json")
    table = [line for line in out if line.startswith("valid: ")]
    assert table[0].startswith(f"valid: WCPA {metrics['valid']['wcpa']:.4f}, mean LDPA")
    assert f"run directory: {run_dir}" in out
    assert out[-1] == f"SavedModel: {run_dir / 'saved_model'}"
    assert (run_dir / "saved_model" / "saved_model.pb").is_file()


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
            "Unknown task.step_labels 'all'; expected one of: string, prefix",
        ),
    ],
)
def test_cli_errors_are_one_line_with_status_2(argv, message, tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main([*argv, "--run-dir", str(tmp_path / "run")])
    assert exit_info.value.code == 2
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert message in error and "Traceback" not in error


def test_a_refused_value_writes_nothing_and_the_corrected_command_runs(
    tmp_path, capsys
):
    run_dir = tmp_path / "run"
    argv = ["tiny_dyck_lstm", "--run-dir", str(run_dir), "--no-export"]
    # Refused by the recipe check and by the model's builder: neither may leave
    # a recipe.json that refuses the corrected command as "a different recipe".
    for bad in ("train.stop_below_loss=true", "model.options.nope=1"):
        with pytest.raises(SystemExit) as exit_info:
            main([*argv, bad])
        assert exit_info.value.code == 2
        assert not run_dir.exists()
    assert "nope" in capsys.readouterr().err
    assert main([*argv, "train.stop_below_loss=0.1"]) == 0
    assert (run_dir / runs.METRICS).is_file()


@pytest.mark.processes
def test_a_second_training_into_a_locked_run_directory_exits_2(tmp_path):
    run_dir = tmp_path / "run"
    command = [sys.executable, "-m", "training.train", "tiny_dyck_lstm"]
    command += ["train.epochs=100000", "train.early_stopping_patience=100000"]
    command += ["--run-dir", str(run_dir), "--no-export"]
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    first = subprocess.Popen(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env
    )
    try:
        lock, deadline = run_dir / runs.TRAIN_LOCK, time.monotonic() + 240
        log = run_dir / runs.LOG
        while not (lock.is_file() and f"process {first.pid} " in lock.read_text()):
            assert first.poll() is None and time.monotonic() < deadline
            time.sleep(0.2)
        while not (log.is_file() and log.read_text()):  # it has written its log
            assert first.poll() is None and time.monotonic() < deadline
            time.sleep(0.2)
        # Stopped, it holds its lock (and trains nothing) while the second
        # starts: the same for the second as a first that trains meanwhile.
        first.send_signal(signal.SIGSTOP)
        second = subprocess.run(
            command, capture_output=True, text=True, timeout=240, env=env
        )
        assert first.poll() is None  # alive, holding its lock: the two overlapped
    finally:
        first.kill()
        first.wait()
    errors = [line for line in second.stderr.splitlines() if "error:" in line]
    assert second.returncode == 2, second.stderr[-2000:]
    assert len(errors) == 1 and f"is locked by process {first.pid} on " in errors[0]
    header = (run_dir / runs.LOG).read_text().splitlines()[0]
    assert (run_dir / runs.LOG).read_text().count(header) == 1  # one writer
