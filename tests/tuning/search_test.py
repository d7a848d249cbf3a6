import json
import shutil

import pytest

import zoo.cells.multi_matrix  # noqa: F401  registers mmlstm
from tests.training import tiny
from training import train as train_cli
from training.runs import runs
from training.tasks import recipes
from tuning import hypermodels, search, search_records, search_space

TINY = ["--recipe", "tiny_dyck_lstm", "--units", "4,8", "--verbose", "0"]


def run(directory, *arguments, project="tiny"):
    argv = [*TINY, "--directory", str(directory), "--project-name", project]
    return search.main([*argv, *arguments])


def trials(project_dir):
    """`{trial_id: trial.json}` of a search's project directory."""
    return {
        path.parent.name: json.loads(path.read_text())
        for path in sorted(project_dir.glob("trial_*/trial.json"))
    }


@pytest.fixture(scope="module")
def searched(tmp_path_factory):
    """A random search run for one trial, then resumed up to two; both
    commands write its record to `directory / "record"`."""
    directory = tmp_path_factory.mktemp("search")
    record = ["--record", str(directory / "record")]
    assert run(directory, "--max-trials", "1", *record) == 0
    first = trials(directory / "tiny")
    assert run(directory, "--max-trials", "2", *record) == 0
    return directory, first


def test_two_trial_search_finishes_and_its_best_recipe_trains(searched, capsys):
    directory, _ = searched
    project = directory / "tiny"
    finished = trials(project)
    assert [t["status"] for t in finished.values()] == ["COMPLETED", "COMPLETED"]
    best = min(finished.values(), key=lambda t: t["score"])
    recipe = recipes.resolve(str(project / search_records.BEST_RECIPE))
    values = best["hyperparameters"]["values"]
    assert recipe.model.units == values["units"]
    assert recipe.model.num_layers == values["num_layers"]
    assert recipe.train.learning_rate == values["learning_rate"]
    assert recipe.task == recipes.resolve("tiny_dyck_lstm").task

    run_dir = directory / "best_run"
    argv = [str(project / search_records.BEST_RECIPE), "--run-dir", str(run_dir)]
    assert train_cli.main([*argv, "--no-export"]) == 0
    assert "wcpa" in runs.read_json(run_dir / runs.METRICS)["valid"]
    assert runs.read_json(run_dir / runs.RECIPE)["model"] == recipe.to_dict()["model"]


def test_resumed_search_keeps_its_trials(searched, capsys):
    directory, first = searched
    project = directory / "tiny"
    # The second command ran one more trial and kept the first as it was.
    assert trials(project)["trial_0"] == first["trial_0"]
    before = trials(project)
    assert run(directory, "--max-trials", "2") == 0
    assert trials(project) == before
    output = capsys.readouterr().out
    assert "Reloading Tuner" in output
    assert "2 trials" in output


def test_overwrite_starts_afresh(searched, tmp_path, capsys):
    directory, _ = searched
    shutil.copytree(directory / "tiny", tmp_path / "tiny")
    assert len(trials(tmp_path / "tiny")) == 2
    assert run(tmp_path, "--max-trials", "1", "--overwrite") == 0
    assert list(trials(tmp_path / "tiny")) == ["trial_0"]
    assert "Reloading" not in capsys.readouterr().out


def test_summary_table_lists_trials_parameters_and_objective(searched, capsys):
    directory, _ = searched
    assert run(directory, "--max-trials", "2") == 0
    output = capsys.readouterr().out
    header = next(line for line in output.splitlines() if line.startswith("| trial"))
    assert [name.strip() for name in header.split("|")[1:-1]] == [
        "trial",
        "status",
        "num_layers",
        "dropout",
        "learning_rate",
        "units",
        "parameters",
        "val_loss",
    ]
    rows = [line for line in output.splitlines() if line.startswith("| ")][1:]
    assert len(rows) == 2
    for row, trial in zip(rows, trials(directory / "tiny").values(), strict=True):
        cells = [cell.strip() for cell in row.split("|")[1:-1]]
        parameters = trial["metrics"]["metrics"]["parameters"]["observations"]
        assert cells[-2] == f"{int(parameters[0]['value'][0]):,}"
        assert cells[-1] == f"{trial['score']:.4g}"
    saved = (directory / "tiny" / search_records.SUMMARY).read_text()
    assert saved.strip() in output
    assert "Train it: python -m training.train" in output


def test_budgeted_search_keeps_every_trial_within_five_percent(tmp_path):
    budget = 3000
    arguments = ["--max-trials", "2", "--param-budget", str(budget)]
    arguments += ["--cells", "lstm,mmlstm", "--option", "num_choices=2,3"]
    assert run(tmp_path, *arguments, "--seed", "3") == 0
    finished = trials(tmp_path / "tiny")
    assert len(finished) == 2
    assert {t["status"] for t in finished.values()} == {"COMPLETED"}
    for trial in finished.values():
        observations = trial["metrics"]["metrics"]["parameters"]["observations"]
        assert abs(observations[0]["value"][0] - budget) <= 0.05 * budget
    recipe = recipes.resolve(str(tmp_path / "tiny" / search_records.BEST_RECIPE))
    assert recipe.model.units not in (4, 8)  # derived, not searched


def test_unreachable_budget_is_a_failed_trial_not_a_crash(tmp_path, capsys):
    # 140 lies between the LSTM's counts at units 1 and 2 (110, 165; 122, 205
    # with two layers), more than 5% from each: every trial fails.
    assert run(tmp_path, "--max-trials", "1", "--param-budget", "140") == 1
    (trial,) = trials(tmp_path / "tiny").values()
    assert trial["status"] == "FAILED"
    assert "parameter budget 140" in trial["message"]
    output = capsys.readouterr().out
    assert "| 0     | failed" in output
    assert "No trial completed" in output


def test_a_search_over_directions_writes_a_bidirectional_best_recipe(tmp_path):
    argv = ["--recipe", "dyck_depth_lstm", *tiny.TINY["dyck_depth"]]
    argv += ["train.epochs=1", "--units", "4", "--num-layers", "1"]
    argv += ["--dropout", "0", "--learning-rate", "0.01", "--verbose", "0"]
    argv += ["--bidirectional", "true", "--directory", str(tmp_path)]
    assert search.main([*argv, "--project-name", "both", "--max-trials", "1"]) == 0
    settings = json.loads((tmp_path / "both" / search_records.SETTINGS).read_text())
    assert settings["bidirectional"] == [True]
    best = recipes.resolve(str(tmp_path / "both" / search_records.BEST_RECIPE))
    assert best.model.bidirectional is True
    assert best.task.kind == "dyck_depth"


def test_hyperband_runs_a_trial(tmp_path):
    arguments = ["--tuner", "hyperband", "--max-trials", "1", "train.epochs=2"]
    assert run(tmp_path, *arguments) == 0
    (trial,) = trials(tmp_path / "tiny").values()
    assert trial["status"] == "COMPLETED"
    assert trial["hyperparameters"]["values"]["tuner/epochs"] == 2
    assert (tmp_path / "tiny" / search_records.BEST_RECIPE).is_file()


def test_bayesian_runs_a_trial(tmp_path):
    arguments = ["--tuner", "bayesian", "--max-trials", "1"]
    assert run(tmp_path, *arguments) == 0
    (trial,) = trials(tmp_path / "tiny").values()
    assert trial["status"] == "COMPLETED"


@pytest.mark.parametrize(
    "arguments, message",
    [
        (["--recipe", "nope"], "Unknown recipe 'nope'"),
        (["--recipe", "tiny_dyck_lstm", "--units", "4,x"], "`units` must be comma"),
        (["--recipe", "tiny_dyck_lstm", "--option", "k"], "must look like NAME=V"),
        (["--recipe", "tiny_dyck_lstm", "--cells", "lstm,nope"], "Unknown cell"),
        (["--recipe", "tiny_dyck_lstm", "--max-trials", "0"], "`max_trials` must be"),
        (
            ["--recipe", "tiny_dyck_lstm", "--bidirectional", "false,true"],
            "expected False for task.kind 'dyck'",
        ),
    ],
)
def test_invalid_arguments(tmp_path, capsys, arguments, message):
    with pytest.raises(SystemExit) as exit_info:
        search.main([*arguments, "--directory", str(tmp_path)])
    assert exit_info.value.code == 2
    error = capsys.readouterr().err
    assert message in error
    assert len(error.strip().splitlines()) == 1


def test_worker_refuses_overwrite(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("KERASTUNER_TUNER_ID", "tuner1")
    monkeypatch.setenv("KERASTUNER_ORACLE_IP", "127.0.0.1")
    monkeypatch.setenv("KERASTUNER_ORACLE_PORT", "1")
    with pytest.raises(SystemExit):
        run(tmp_path, "--overwrite")
    assert "--overwrite is for the chief" in capsys.readouterr().err


def files(folder):
    """`{relative path: text}` of every file under `folder`."""
    return {
        str(path.relative_to(folder)): path.read_text()
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


def test_a_killed_search_resumes_from_its_record_alone(
    searched, tmp_path, monkeypatch, capsys
):
    # For comparison: the same search of two trials, not killed (resumed in
    # its own project folder).
    whole_dir = searched[0]
    whole = whole_dir / "record"
    # Killed in the second trial, as a session's end kills the protocol.
    fit, calls = hypermodels.RecurrentHyperModel.fit, []

    def fit_then_interrupt(self, *args, **kwargs):
        calls.append(None)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return fit(self, *args, **kwargs)

    monkeypatch.setattr(hypermodels.RecurrentHyperModel, "fit", fit_then_interrupt)
    record = tmp_path / "record"
    argv = ["--max-trials", "2", "--record", str(record)]
    assert run(tmp_path / "killed", *argv) == 130
    monkeypatch.undo()
    # The record holds the first trial, marked partial, and the JSON state
    # Keras Tuner resumes from; no checkpoint, no best recipe yet.
    partial = json.loads((record / search_records.TRIALS).read_text())
    assert partial["finished"] is False and partial["max_trials"] == 2
    assert [row["status"] for row in partial["trials"]] == ["completed"]
    summary = (record / search_records.SUMMARY).read_text()
    assert summary.rstrip().endswith(
        "1 of 2 trials; not finished: the same command resumes it."
    )
    assert sorted(files(record)) == [
        "keras_tuner/oracle.json",
        "keras_tuner/trial_0/trial.json",
        "keras_tuner/tuner0.json",
        search_records.SUMMARY,
        search_records.TRIALS,
        search_records.SETTINGS,
    ]
    # A fresh machine: Keras Tuner's directory is gone, checkpoints and all.
    shutil.rmtree(tmp_path / "killed")
    capsys.readouterr()
    assert run(tmp_path / "killed", *argv) == 0
    output = capsys.readouterr().out
    assert "Restored 1 trials' state from" in output and "Reloading Tuner" in output
    # Two searches of one seed draw the same trials: the killed search drew
    # its first trial afresh, the resumed one its second from the record.
    assert trials(tmp_path / "killed" / "tiny") == trials(whole_dir / "tiny")
    resumed, expected = files(record), files(whole)
    assert resumed.keys() == expected.keys()
    for name in (
        search_records.SUMMARY,
        search_records.TRIALS,
        search_records.SETTINGS,
    ):
        assert resumed[name] == expected[name]
    assert json.loads(resumed[search_records.TRIALS])["finished"] is True
    assert expected[search_records.SUMMARY].rstrip().endswith("2 of 2 trials.")
    best, uninterrupted = (
        recipes.resolve(str(folder / search_records.BEST_RECIPE))
        for folder in (record, whole)
    )
    # The same recipe, but for the command in `source` (its folders differ).
    assert best.with_values({"source": ""}) == uninterrupted.with_values({"source": ""})


def test_a_record_of_other_settings_is_refused(tmp_path, capsys):
    record = tmp_path / "record"
    record.mkdir()
    other = {"tuner": "bayesian", "bidirectional": [False], "recipe_choices": {}}
    other["seeds_per_trial"] = 1  # every key a search writes: these are current
    (record / search_records.SETTINGS).write_text(json.dumps(other))
    with pytest.raises(SystemExit) as exit_info:
        run(tmp_path / "runs", "--record", str(record))
    assert exit_info.value.code == 2
    error = capsys.readouterr().err
    assert f"Record {str(record)!r} was made with other settings" in error
    assert len(error.strip().splitlines()) == 1


def test_restore_refuses_a_record_it_cannot_resume(tmp_path):
    record = tmp_path / "record"
    (record / search_records.STATE).mkdir(parents=True)
    (record / search_records.TRIALS).write_text("{}")
    with pytest.raises(ValueError, match="has trials but no Keras Tuner state"):
        search_records.restore(tmp_path / "project", record, "random")
    (record / search_records.STATE / search_records.ORACLE).write_text("{}")
    with pytest.raises(ValueError, match="resumes only with its checkpoints"):
        search_records.restore(tmp_path / "project", record, "hyperband")
    assert not (tmp_path / "project").exists()


def test_parse_options_routes_recipe_keys_and_reads_text_values():
    options, recipe_keys = search_space.parse_options(
        ["carry_forward=soft,false", "noise_stddev=0,0.1", "task.step_labels=string"]
    )
    assert options == {"carry_forward": ["soft", False], "noise_stddev": [0, 0.1]}
    assert recipe_keys == {"task.step_labels": "string"}


RECOGNITION = [
    "--recipe",
    "recognition_d2_diffstk_rnn",
    *tiny.TINY["recognition"],
    "train.epochs=1",
    "--units",
    "4",
    "--num-layers",
    "1",
    "--dropout",
    "0",
    "--verbose",
    "0",
]


def test_a_recognition_search_over_seeds_writes_its_record(tmp_path, capsys):
    argv = [*RECOGNITION, "--directory", str(tmp_path / "runs")]
    argv += ["--project-name", "d2", "--max-trials", "1", "--seeds-per-trial", "2"]
    argv += ["--option", "carry_forward=soft,false", "--option", "forget_bias=0,1"]
    argv += ["--option", "task.next_symbol_loss=all,positives"]
    record = tmp_path / "record"
    assert search.main([*argv, "--record", str(record)]) == 0
    output = capsys.readouterr().out
    assert "Not searched (no searched cell takes them): forget_bias." in output
    names = sorted(p.name for p in record.iterdir())
    assert names == sorted([*search_records.RECORD_FILES, search_records.STATE])
    saved = json.loads((record / search_records.TRIALS).read_text())
    assert (saved["objective"], saved["direction"]) == ("val_strict_positives", "max")
    (row,) = saved["trials"]
    assert row["status"] == "completed"
    assert row["carry_forward"] in ("soft", False)
    assert row["val_strict_positives"] == pytest.approx(
        (row["seed_0"] + row["seed_1"]) / 2
    )
    best = recipes.resolve(str(record / search_records.BEST_RECIPE))
    assert best.model.options["carry_forward"] == row["carry_forward"]
    assert best.task.next_symbol_loss == row["task.next_symbol_loss"]
    header = (record / search_records.SUMMARY).read_text().splitlines()[0]
    assert "task.next_symbol_loss" in header and "seed_1" in header
    # Resuming with another number of seeds per trial is refused.
    with pytest.raises(SystemExit) as exit_info:
        search.main([*argv[:-2], "--seeds-per-trial", "1"])
    assert exit_info.value.code == 2
    assert "seeds_per_trial differ" in capsys.readouterr().err
