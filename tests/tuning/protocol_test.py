import shutil

import pytest

from tests.training import tiny
from tuning import protocol, protocol_runs, search, search_records


def test_every_row_of_a_protocol_gets_the_same_search():
    stack = protocol_runs.PROTOCOLS["stack_d2"]
    assert list(stack.rows) == [
        "stack_rnn",
        "diffstk_rnn",
        "diffstk_mrnn",
        "diffstk_mirnn",
        "diffstk_lstm",
        "diffstk_mlstm",
        "lstm",
        "gru",
    ]
    parser = search.build_parser()
    parsed = {
        row: vars(
            parser.parse_intermixed_args(protocol_runs.row_arguments("stack_d2", row))
        )
        for row in stack.rows
    }
    differ = {"cells", "project_name", "record"}
    for row, args in parsed.items():
        assert args["cells"] == stack.rows[row] and args["project_name"] == row
        assert args["record"] == f"results/tuning/stack_d2/{row}"
        assert args["scale"] == "paper"
        same = {k: v for k, v in args.items() if k not in differ}
        assert same == {k: v for k, v in parsed["gru"].items() if k not in differ}
    assert parsed["gru"]["max_trials"] == stack.max_trials
    assert parsed["gru"]["seeds_per_trial"] == stack.seeds_per_trial


def test_the_palindrome_protocol_is_the_d2_search_on_palindromes():
    d2, palindrome = (
        vars(
            search.build_parser().parse_intermixed_args(
                protocol_runs.row_arguments(name, "diffstk_lstm")
            )
        )
        for name in ("stack_d2", "stack_palindrome")
    )
    assert palindrome.pop("recipe") == "recognition_palindrome_diffstk_rnn_paper"
    assert d2.pop("recipe") == "recognition_d2_diffstk_rnn_paper"
    assert palindrome.pop("record") == "results/tuning/stack_palindrome/diffstk_lstm"
    assert palindrome.pop("directory") == "runs/tuning/stack_palindrome"
    d2.pop("record"), d2.pop("directory")
    assert palindrome == d2


def test_the_dyck_protocol_searches_the_reports_lstm_from_its_size_up():
    args = vars(
        search.build_parser().parse_intermixed_args(
            protocol_runs.row_arguments("dyck_m4", "lstm")
        )
    )
    assert (args["recipe"], args["scale"], args["cells"]) == (
        "dyck2_lstm",
        "paper",
        "lstm",
    )
    assert args["units"].split(",")[0] == "12"  # the report's 3m at m = 4
    assert args["record"] == "results/tuning/dyck_m4/lstm"
    assert not any(option.startswith("train.batch_size") for option in args["option"])


def test_dry_run_prints_one_command_per_row(capsys):
    assert protocol.main(["stack_d2", "--dry-run", "--rows", "lstm,gru"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 2
    assert all(line.startswith("python -m tuning.search --recipe") for line in lines)
    assert "--cells gru" in lines[1]


def test_unknown_row_is_refused(capsys):
    with pytest.raises(SystemExit) as exit_info:
        protocol.main(["stack_d2", "--rows", "gru,nope"])
    assert exit_info.value.code == 2
    assert "unknown row(s) nope" in capsys.readouterr().err


@pytest.mark.processes
def test_a_protocol_row_searches_records_and_resumes(tmp_path, capfd):
    argv = ["stack_d2", *tiny.TINY["recognition"], "train.epochs=1", "--rows", "gru"]
    argv += ["--max-trials", "1", "--seeds-per-trial", "1", "--verbose", "0"]
    argv += ["--directory", str(tmp_path / "runs"), "--record", str(tmp_path / "rec")]
    assert protocol.main(argv) == 0
    record = tmp_path / "rec" / "stack_d2" / "gru"
    names = sorted(p.name for p in record.iterdir())
    assert names == sorted([*search_records.RECORD_FILES, search_records.STATE])
    header = (record / search_records.SUMMARY).read_text().splitlines()[0]
    # The GRU takes none of the cell options: only the shared ones remain.
    assert [name.strip() for name in header.split("|")[1:-1]] == [
        "trial",
        "status",
        "task.next_symbol_loss",
        "learning_rate",
        "parameters",
        "val_strict_positives",
    ]
    first = (record / search_records.TRIALS).read_text()
    capfd.readouterr()
    assert protocol.main(argv) == 0  # resumed: nothing left to run
    assert "Reloading Tuner" in capfd.readouterr().out
    assert (record / search_records.TRIALS).read_text() == first
    # A fresh clone: no runs/, only the committed record.
    shutil.rmtree(tmp_path / "runs")
    assert protocol.main(argv) == 0
    assert "Restored 1 trials' state from" in capfd.readouterr().out
    assert (record / search_records.TRIALS).read_text() == first
