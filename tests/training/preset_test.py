import json
import shlex
import shutil

import numpy as np
import pytest

import zoo
from tests.training.tiny import TINY
from training import evaluate, export, generate, preset
from training.analysis import ldpa
from training.core import card_schema, file_schema
from training.reproduction import preset_builder, preset_readme, table_schema
from training.runs import generation, runs, saved_model
from training.tasks import recipes
from zoo.tokenizer import Tokenizer


def recipe_of(command):
    """The recipe a card's `python -m training.train ...` command resolves."""
    words = shlex.split(command)
    assert words[:3] == ["python", "-m", "training.train"]
    scale = words[words.index("--scale") + 1]
    return recipes.resolve(words[3], scale, words[4 : words.index("--scale")])


@pytest.fixture(scope="module")
def dyck_preset(dyck_run, tmp_path_factory):
    """The tiny Dyck run as a preset, and its card."""
    folder = tmp_path_factory.mktemp("presets") / "tiny_dyck"
    return folder, preset_builder.save_preset(dyck_run, folder)


def test_the_dyck_preset_reproduces_its_card_on_fresh_data():
    value, plan = preset_builder.remeasure("dyck_rnn_m4")
    card = zoo.preset_card("dyck_rnn_m4")
    assert plan == card["remeasure"] and plan["metric"] == "test.wcpa"
    assert plan["data_seed"] != card["seed"] and plan["sequences"] >= 1000
    metrics = runs.read_json(zoo.presets.preset_dir("dyck_rnn_m4") / "metrics.json")
    assert plan["value"] == metrics["test"]["wcpa"]
    assert abs(value - plan["value"]) <= plan["tolerance"]


@pytest.mark.slow
@pytest.mark.parametrize("name", zoo.presets.available())
def test_every_preset_reproduces_its_card(name, monkeypatch):
    from tests.training.data.shared_data import SHARED
    from training.data import files

    if not zoo.preset_card(name)["remeasure"]["fresh_data"]:
        # A language model is re-measured on its corpus's test split.
        recipe = recipes.from_saved(zoo.presets.PresetLoader(name).config())
        corpus = recipe.task.corpus
        if not SHARED.is_dir():
            pytest.skip(f"{SHARED} not found: set ZOO_DATA_DIR to the {corpus} corpus")
        monkeypatch.setenv(files.ENV_VAR, str(SHARED))
    value, plan = preset_builder.remeasure(name)
    assert abs(value - plan["value"]) <= plan["tolerance"], (name, value, plan)


def test_a_saved_preset_is_the_run_with_its_card(dyck_run, dyck_preset):
    folder, card = dyck_preset
    run = runs.load_run(dyck_run)
    loaded = zoo.from_preset(folder)
    assert loaded.card == card == json.loads((folder / "card.json").read_text())
    file_schema.check(card, card_schema.CARD, folder / "card.json")
    ids = np.array([[1, 3, 4, 6, 5, 2]], "int32")
    np.testing.assert_allclose(loaded.model(ids), run.model(ids), atol=1e-6)
    assert loaded.tokenizer.get_config() == run.tokenizer.get_config()
    assert loaded.config == run.recipe.to_dict()
    assert getattr(loaded.model, "optimizer", None) is None  # none shipped
    # The command retrains this recipe, seed included.
    assert recipe_of(card["command"]) == run.recipe
    assert f"train.seed={run.recipe.train.seed}" in card["command"]
    # The card is metadata: the recipe and metrics are the run's files.
    metrics = runs.read_json(dyck_run / "metrics.json")
    assert runs.read_json(folder / "metrics.json") == metrics
    assert "recipe" not in card and "metrics" not in card and card["seed"] == 0
    assert card["parameters"]["total"] == run.model.count_params()
    assert card["size_bytes"] == (folder / "best.keras").stat().st_size
    assert card["remeasure"]["metric"] == "test.wcpa"
    assert card["remeasure"]["value"] == metrics["test"]["wcpa"]
    assert card["name"] == "tiny_dyck" and card["table"] is None
    assert card["description"] == run.recipe.description
    readme = (folder / "README.md").read_text()
    assert card["command"] in readme
    assert f"| test | wcpa | {metrics['test']['wcpa']:.4f} |" in readme
    # A preset is a run directory: what reads runs reads it.
    assert runs.load_run(folder).recipe == run.recipe


@pytest.mark.parametrize("name", ["dyck_rnn_m4", "second_order_lstm_dyck_m4"])
def test_every_route_loads_a_preset_the_same(name, no_data):
    # zoo.from_preset (the model file whole), preset:NAME and the preset's
    # folder as a run directory (the model rebuilt from its config).
    preset = zoo.from_preset(name)
    folder = zoo.presets.preset_dir(name)
    ids = np.array([[1, 3, 4, 6, 5, 3, 5]], "int32")
    expected = np.asarray(preset.model(ids))
    assert isinstance(preset.tokenizer, Tokenizer)
    for route in (f"preset:{name}", folder):
        run = runs.load_run(route)
        np.testing.assert_allclose(run.model(ids), expected, atol=1e-6)
        assert isinstance(run.tokenizer, Tokenizer)
        assert run.tokenizer.get_config() == preset.tokenizer.get_config()
        assert run.tokenizer("(a (b b)") == preset.tokenizer("(a (b b)")
        assert run.recipe == runs.read_recipe(folder / "recipe.json")


def test_a_run_directory_loads_as_a_preset(dyck_run):
    run = runs.load_run(dyck_run)
    loaded = zoo.from_preset(dyck_run)
    ids = np.array([[1, 3, 4, 6, 5, 2]], "int32")
    np.testing.assert_allclose(loaded.model(ids), run.model(ids), atol=1e-6)
    assert loaded.tokenizer.get_config() == run.tokenizer.get_config()
    assert loaded.config == run.recipe.to_dict() and loaded.card is None
    assert run.vocabulary is run.task.vocabulary  # training's, for its data


def test_a_damaged_preset_is_one_line_in_the_commands(dyck_preset, tmp_path, capsys):
    folder, _ = dyck_preset
    broken = tmp_path / "broken"
    shutil.copytree(folder, broken)
    (broken / "best.keras").unlink()
    old = tmp_path / "old_card"  # a card from before cards were metadata only
    shutil.copytree(folder, old)
    card = json.loads((old / "card.json").read_text())
    card["recipe"] = runs.read_json(old / "recipe.json")
    (old / "card.json").write_text(json.dumps(card))
    cases = [
        (evaluate.main, [f"preset:{broken}"], "has no best.keras"),
        (generate.main, [f"preset:{broken}", "--prompt", "(a"], "has no best.keras"),
        (preset.main, ["--remeasure", str(old)], "has unknown key 'recipe'"),
    ]
    for main, argv, message in cases:
        with pytest.raises(SystemExit) as exit_:
            main(argv)
        error = capsys.readouterr().err
        assert exit_.value.code == 2 and message in error and error.count("\n") == 1


@pytest.mark.parametrize("name", zoo.presets.available())
def test_every_built_in_card_is_metadata_beside_the_files_it_describes(name):
    folder = zoo.presets.preset_dir(name)
    card = file_schema.check(
        zoo.preset_card(name), card_schema.CARD, folder / "card.json"
    )
    assert not {"recipe", "metrics"} & set(card)
    recipe = runs.read_recipe(folder / "recipe.json")
    metrics = runs.read_json(folder / "metrics.json")
    file_schema.check(metrics, file_schema.METRICS, folder / "metrics.json")
    plan = card["remeasure"]
    assert table_schema.metric_value(metrics, plan["metric"]) == plan["value"]
    assert card["seed"] == recipe.train.seed
    assert card["cell"] == recipe.model.cell


@pytest.mark.parametrize(
    "change, message",
    [
        (
            {"recipe": {}},
            "the file has unknown key 'recipe'; expected: baseline, cell, ",
        ),
        ({"metrics": {}}, "the file has unknown key 'metrics'"),
        ({"command": None, "remeasure": None}, "remeasure must be an object"),
        ({"versions": {"keras": 3}}, "versions.keras must be a string"),
    ],
)
def test_the_card_schema_refuses_copies_in_one_line(change, message):
    card = {**zoo.preset_card("dyck_rnn_m4"), **change}
    with pytest.raises(file_schema.FileError) as error:
        file_schema.check(card, card_schema.CARD, "card.json")
    assert str(error.value).startswith("'card.json': ")
    assert message in str(error.value) and "\n" not in str(error.value)


def test_the_card_schema_refuses_a_card_without_its_command():
    card = zoo.preset_card("dyck_rnn_m4")
    del card["command"]  # metadata every card holds
    with pytest.raises(file_schema.FileError, match="the file has no 'command'"):
        file_schema.check(card, card_schema.CARD, "card.json")


def test_a_preset_of_a_table_row_checks_the_row_and_keeps_its_command(
    dyck_run, tmp_path
):
    table = tmp_path / "tiny.toml"
    overrides = json.dumps(TINY["dyck"])
    table.write_text(
        f'title = "tiny"\n[[metric]]\nkey = "test.wcpa"\nlabel = "WCPA"\n'
        f'[[row]]\nname = "tiny_mlstm"\nrecipe = "dyck2_mlstm"\n'
        f'overrides = {overrides}\npaper = {{ "test.wcpa" = 100.0 }}\n'
        f'[[row]]\nname = "other"\nrecipe = "dyck2_mlstm"\n'
        f"overrides = {json.dumps([*TINY['dyck'], 'task.m=6'])}\n"
    )
    card = preset_builder.save_preset(
        dyck_run, tmp_path / "p", table=str(table), row="tiny_mlstm", tolerance=0.1
    )
    assert card["table"]["row"] == "tiny_mlstm"
    # The row, not the recipe file's own description (of another cell).
    assert card["description"] == "tiny, row tiny_mlstm"
    assert card["table"]["paper"] == {"test.wcpa": {"mean": 100.0}}
    assert card["command"] == shlex.join(
        ["python", "-m", "training.train", "dyck2_mlstm", *TINY["dyck"]]
        + ["train.seed=0", "--scale", "small"]
    )
    assert card["remeasure"]["tolerance"] == 0.1
    with pytest.raises(recipes.RecipeError, match="task.m is 4 in the run, 6 there"):
        preset_builder.save_preset(
            dyck_run, tmp_path / "q", table=str(table), row="other"
        )
    assert not (tmp_path / "q").exists()


def test_retrain_command_gives_back_the_recipe():
    overrides = [
        "task.sequence_length=60",
        'model.options={"num_choices": 3}',
        "model.cell=mmlstm",
        'task.data_dir="123"',  # a string that reads as JSON stays a string
        "train.clipvalue=null",
        "train.seed=7",
    ]
    recipe = recipes.resolve("ptb_char_lstm", "paper", overrides)
    command = preset_builder.retrain_command(recipe)
    assert recipe_of(shlex.join(command)) == recipe
    assert command[-3:] == ["train.seed=7", "--scale", "paper"]


def test_evaluate_reads_a_preset_and_writes_nothing_into_it(dyck_preset, capsys):
    folder, card = dyck_preset
    before = sorted(path.name for path in folder.iterdir())
    assert evaluate.main([f"preset:{folder}", "--split", "test"]) == 0
    wcpa = runs.read_json(folder / "metrics.json")["test"]["wcpa"]
    assert f"test: WCPA {wcpa:.4f}" in capsys.readouterr().out
    assert sorted(path.name for path in folder.iterdir()) == before


def test_generate_and_analyze_read_a_preset(dyck_preset, tmp_path):
    folder, _ = dyck_preset
    text = generation.generate(f"preset:{folder}", "(a", length=4, seed=0)
    assert text.startswith("(a")
    result = ldpa.analyze_ldpa([f"preset:{folder}"], tmp_path / "out", "valid")
    assert len(result) == 1


def test_export_reads_a_built_in_preset_without_data(no_data, tmp_path):
    assert export.main(["preset:dyck_rnn_m4", str(tmp_path / "saved")]) == 0
    marker = json.loads((tmp_path / "saved" / saved_model.MARKER).read_text())
    assert marker["run_dir"] == str(zoo.presets.preset_dir("dyck_rnn_m4").resolve())


@pytest.mark.parametrize(
    "main, more", [(evaluate.main, []), (export.main, ["out"]), (preset.main, ["p"])]
)
def test_an_unknown_preset_is_one_line_listing_the_presets(main, more, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["preset:no_such_preset", *more])
    assert exit_.value.code == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "'no_such_preset'" in error
    assert ", ".join(zoo.presets.available()) in error


def test_refusals_write_nothing(dyck_run, tmp_path, capsys):
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "notes.txt").write_text("mine")
    cases = [
        ([str(dyck_run), str(tmp_path / "taken")], "not a preset"),
        ([str(tmp_path / "nowhere"), str(tmp_path / "p")], "does not exist"),
        ([str(dyck_run), str(tmp_path / "p"), "--metric", "test.nope"], "no number"),
        ([str(dyck_run), str(tmp_path / "p"), "--table", "mm_dyck"], "go together"),
        ([str(dyck_run), str(tmp_path / "p"), "--tolerance", "nan"], "finite"),
    ]
    for argv, message in cases:
        with pytest.raises(SystemExit) as exit_:
            preset.main(argv)
        error = capsys.readouterr().err
        assert exit_.value.code == 2 and message in error and error.count("\n") == 1
    assert not (tmp_path / "p").exists()
    assert [p.name for p in (tmp_path / "taken").iterdir()] == ["notes.txt"]


def test_a_language_model_card_shows_its_trigram_baseline_and_a_sample(
    tiny_runs, tmp_path
):
    from training.data import ngram_baseline
    from training.tasks import make_task

    _, run_dir, _ = tiny_runs("language_model")  # its corpus beside it; only read
    card = preset_builder.save_preset(run_dir, tmp_path / "preset")
    file_schema.check(card, card_schema.CARD, tmp_path / "card.json")
    run = runs.load_run(run_dir)
    task = make_task(run.recipe, vocabulary=run.task.vocabulary)
    assert card["baseline"] == ngram_baseline.ngram_baseline(task, order=3)
    assert card["baseline"]["order"] == 3
    assert card["baseline"]["test"]["tokens"] == len(task.encoded["test"].ids) - 1
    readme = (tmp_path / "preset" / "README.md").read_text()
    bits = card["baseline"]["test"]["bits_per_token"]
    assert "Trivial baseline on the same split: 3-gram" in readme
    assert f"test.bits_per_token {bits:.4f} against" in readme
    # A sample at temperature 0.8, the text `training.generate` draws again.
    sample = card["sample"]
    assert sample["temperature"] == 0.8
    again = generation.generate(
        run_dir, sample["prompt"], sample["length"], temperature=0.8, seed=0
    )
    assert sample == {**task.card_sample, "text": again}
    assert again.startswith(sample["prompt"]) and len(again) > len(sample["prompt"])
    assert sample["text"] in readme
    assert preset_readme.sample_command(card) in readme
