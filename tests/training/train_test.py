import pytest

from tests.training.tiny import TINY
from training import runs
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
