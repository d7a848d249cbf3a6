import pytest

from training.reproduction import history


def write_log(path, columns, rows):
    lines = [",".join(["epoch", *columns])]
    lines += [",".join([str(epoch), *map(str, row)]) for epoch, row in enumerate(rows)]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture
def log(tmp_path):
    # An oscillating val_wcpa (0, .5, .2, .9, .9, .6, 1.0) and val_loss whose
    # best (lowest) is at epoch 5, then 2 epochs without a gain.
    return history.read_log(
        write_log(
            tmp_path / "log.csv",
            ["loss", "val_loss", "val_wcpa"],
            [
                (0.9, 0.80, 0.0),
                (0.7, 0.50, 0.5),
                (0.6, 0.40, 0.2),
                (0.5, 0.30, 0.9),
                (0.4, 0.25, 0.9),
                (0.3, 0.26, 0.6),
                (0.2, 0.27, 1.0),
            ],
        )
    )


@pytest.mark.parametrize(
    "name, expected",
    [
        ("epochs", 7),
        ("epoch_of_min_val_loss", 5),
        ("epoch_of_max_val_wcpa", 7),
        ("epoch_of_max_loss", 1),
        ("first_epoch_val_loss_below_0.3", 5),  # strictly below
        ("first_epoch_val_loss_below_1e-5", None),  # never
        ("first_epoch_val_wcpa_at_least_0.9", 4),  # at least: 0.9 counts
        ("first_epoch_val_wcpa_at_least_1", 7),
        ("drops_val_wcpa_over_0.1", 2),  # .5 -> .2 and .9 -> .6
        ("drops_val_wcpa_over_0.35", 0),  # each falls by 0.3
        ("fall_val_wcpa", pytest.approx(0.6)),
        ("fall_loss", pytest.approx(0.7)),  # falling all the way: 0.9 - 0.2
        ("epoch_of_max_val_ldpa", None),  # a column the log lacks
        ("fall_val_ldpa", None),
    ],
)
def test_quantities_of_a_synthetic_log(log, name, expected):
    assert history.value(log, name) == expected


def test_fall_of_a_monotonic_curve_is_zero_and_grows_with_oscillation(tmp_path):
    def fall(values):
        path = write_log(tmp_path / "l.csv", ["val_wcpa"], [(v,) for v in values])
        return history.value(history.read_log(path), "fall_val_wcpa")

    assert fall([0, 0.2, 0.5, 1.0]) == 0.0  # rises count 0
    assert fall([0, 1.0, 0, 1.0]) == 1.0
    assert fall([0, 1.0, 0, 1.0, 0, 1.0]) == 2.0


def test_epochs_not_logged_are_left_out(tmp_path):
    path = write_log(tmp_path / "l.csv", ["val_wcpa"], [("NA",), (0.5,), (0.2,)])
    log = history.read_log(path)
    assert log["val_wcpa"] == [None, 0.5, 0.2]
    assert history.value(log, "epoch_of_max_val_wcpa") == 2
    assert history.value(log, "fall_val_wcpa") == pytest.approx(0.3)
    assert history.value(log, "epochs") == 3


def test_column_of_names_what_a_quantity_reads():
    assert history.column_of("first_epoch_val_wcpa_at_least_0.9") == "val_wcpa"
    assert history.column_of("drops_val_mean_ldpa_over_0.05") == "val_mean_ldpa"
    assert history.column_of("epochs") is None


@pytest.mark.parametrize(
    "name", ["epoch", "best_epoch", "first_epoch_val_loss_below", "fall_", "drops_x"]
)
def test_unknown_quantities_are_one_line(name):
    with pytest.raises(ValueError, match="Unknown history quantity") as error:
        history.parse(name)
    assert "\n" not in str(error.value)


def test_a_log_whose_epochs_do_not_count_up_is_one_line(tmp_path):
    path = tmp_path / "log.csv"
    path.write_text("epoch,loss\n0,1.0\n1,0.5\n1,0.5\n")
    with pytest.raises(ValueError, match="expected 0, 1, 2") as error:
        history.read_log(path)
    assert "\n" not in str(error.value)


def test_an_empty_log_has_no_epochs(tmp_path):
    path = tmp_path / "log.csv"
    path.write_text("")
    assert history.value(history.read_log(path), "epochs") == 0
