import pytest

from training import analyze
from training.analysis import curves


def record(results, row, seed, log):
    folder = results / "so_dyck" / row / f"seed-{seed}"
    folder.mkdir(parents=True)
    (folder / "log.csv").write_text(log)
    return folder


NEW = (
    "epoch,loss,val_loss,val_mean_ldpa,val_wcpa\n"
    "0,1,1,0.2,0.0\n1,1,1,0.5,NA\n2,1,1,0.9,0.8\n"
)
OLD = "epoch,loss,val_loss\n0,1,1\n1,1,1\n"  # from before val_wcpa was logged


def test_curves_are_read_by_row_and_records_without_the_column_named(tmp_path):
    folders = [
        record(tmp_path, "lstm_m4", 0, NEW),
        record(tmp_path, "lstm_m4", 1, OLD),
        record(tmp_path, "second_order_lstm_m4", 0, NEW),
    ]
    found, lacking = curves.read_curves(folders, ["a", "b", "c"], "val_wcpa")
    assert found == {
        "a": ("lstm_m4", [1, 3], [0.0, 0.8]),  # epoch 2 logged no value
        "c": ("second_order_lstm_m4", [1, 3], [0.0, 0.8]),
    }
    assert lacking == [folders[1]]
    rows = curves.table_rows(found, "val_wcpa")
    assert rows[0] == {"run": "a", "row": "lstm_m4", "epoch": 1, "val_wcpa": 0.0}
    assert curves.plot(found, tmp_path / "c.png", "val_wcpa").is_file()


def test_the_cli_leaves_out_old_records_with_one_line_each(tmp_path, capsys):
    new = record(tmp_path, "lstm_m4", 0, NEW)
    old = record(tmp_path, "second_order_lstm_m4", 0, OLD)
    out = tmp_path / "out"
    assert analyze.main(["curves", str(new), str(old), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert f"{old}: no per-epoch val_wcpa in this record" in printed
    assert "lstm_m4-seed-0: 2 epochs, val_wcpa 0 -> 0.8" in printed
    assert (out / "curves.png").is_file()
    assert (out / "curves.csv").read_text().startswith("run,row,epoch,val_wcpa")


def test_the_cli_with_only_old_records_is_one_line_and_status_2(tmp_path, capsys):
    old = record(tmp_path, "lstm_m4", 0, OLD)
    out = tmp_path / "out"
    with pytest.raises(SystemExit) as exit_info:
        analyze.main(["curves", str(old), "--out", str(out)])
    assert exit_info.value.code == 2
    error = capsys.readouterr().err.strip()
    assert "no per-epoch val_wcpa in any of these records" in error
    assert "\n" not in error
    assert not out.exists()


def test_a_folder_without_a_log_is_one_line(tmp_path):
    with pytest.raises(ValueError, match="has no log.csv"):
        curves.read_curves([tmp_path], ["x"], "val_wcpa")
