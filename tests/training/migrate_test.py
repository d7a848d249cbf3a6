"""`python -m training.migrate` on hand-made folders of an earlier format: it
converts each in place (one line saying what changed, nothing else touched),
and the library refuses the unmigrated file in one line that names it and the
command."""

import json
from pathlib import Path

import h5py
import keras
import pytest

import zoo
from tests.training.tiny import RECIPE_OF, TINY
from training import migrate, train
from training.core import file_schema, recipe_files
from training.core.callbacks import RunBackup, seed_generators
from training.reproduction import records
from training.reproduction.format_migration import BACKUP_FACTS
from training.runs import run_dirs, run_files, runs
from training.tasks import make_task, recipes
from tuning import search_records
from tuning.hypermodels import RecurrentHyperModel

TOKENS = ["<unk>", "<eos>", "the", "cat"]


def refused_until_migrated(main, argv, path, capsys, folder=None):
    """A command `main(argv)` reading the unmigrated file `path` exits 2 with
    one line naming it and `python -m training.migrate FOLDER` (`folder`, by
    default the file's); then the folder is migrated. Returns what the
    migration printed."""
    folder = Path(path).parent if folder is None else folder
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    error = capsys.readouterr().err
    assert exit_info.value.code == 2 and error.count("\n") == 1
    assert f"{str(path)!r} names no" in error
    assert f"python -m training.migrate {str(folder)!r} brings it up to date" in error
    migrate.main([str(folder)])
    return capsys.readouterr().out


def earlier_run(folder, kind):
    """A run directory's recipe.json (of `kind`'s tiny recipe) and a
    vocabulary.json from before vocabularies named their conventions."""
    recipe = recipes.resolve(RECIPE_OF[kind], "small", TINY[kind])
    folder.mkdir()
    run_files.record(folder, runs.RECIPE, runs.VOCABULARY)  # a manifest's era
    runs.write_json(folder / runs.RECIPE, recipe.to_dict())
    vocabulary = {
        "level": "word",
        "add_eos": True,
        "unk_token": "<unk>",
        "eos_token": "<eos>",
        "tokens": TOKENS,
    }
    (folder / runs.VOCABULARY).write_text(json.dumps(vocabulary))
    return folder


@pytest.mark.parametrize(
    "kind, conventions",
    [("language_model", "ptb"), ("acceptability", "blimp"), ("dyck", None)],
)
def test_a_vocabulary_without_conventions_is_refused_until_migrated(
    tmp_path, capsys, kind, conventions
):
    folder = earlier_run(tmp_path / "run", kind)
    recipe_before = (folder / runs.RECIPE).read_text()
    for read in (
        lambda: zoo.presets.PresetLoader(folder).tokenizer(),
        lambda: runs.load_vocabulary(folder),
    ):
        with pytest.raises(ValueError) as error:
            read()
        message = str(error.value)
        assert "\n" not in message
        assert message.startswith(
            f"{str(folder / runs.VOCABULARY)!r} names no text conventions"
        )
        assert message.endswith(
            f"python -m training.migrate {str(folder)!r} brings it up to date."
        )
    migrate.main([str(folder)])
    # What a reader filled in before: the task's (the recipe corpus's, BLiMP's).
    assert capsys.readouterr().out == (
        f"{folder}: vocabulary.json: conventions {json.dumps(conventions)}\n"
        "1 of 1 folders migrated; the others were current\n"
    )
    vocabulary = runs.load_vocabulary(folder)
    assert vocabulary.conventions == conventions and vocabulary.tokens == TOKENS
    tokenizer = zoo.presets.PresetLoader(folder).tokenizer()
    assert tokenizer.conventions == (conventions or "plain")
    assert (folder / runs.RECIPE).read_text() == recipe_before
    assert sorted(path.name for path in folder.iterdir()) == sorted(
        [runs.RECIPE, runs.VOCABULARY, run_files.MANIFEST]
    )
    # Again: already current, nothing changed.
    migrated = (folder / runs.VOCABULARY).read_text()
    migrate.main([str(folder)])
    assert (
        capsys.readouterr().out == "0 of 1 folders migrated; the others were current\n"
    )
    assert (folder / runs.VOCABULARY).read_text() == migrated


def test_a_vocabulary_that_is_not_one_is_left_as_it_was(tmp_path, capsys):
    folder = earlier_run(tmp_path / "run", "dyck")
    (folder / runs.VOCABULARY).write_text(json.dumps({"level": "word"}))
    with pytest.raises(SystemExit) as status:
        migrate.main([str(folder)])
    error = capsys.readouterr().err
    assert status.value.code == 2 and error.count("\n") == 1
    assert "cannot be read (KeyError: 'tokens')" in error
    assert json.loads((folder / runs.VOCABULARY).read_text()) == {"level": "word"}


@pytest.mark.parametrize(
    "beside, version",
    [
        ({"host.json": {"cpu": "Test CPU", "tensorflow": "2.16.1"}}, "2.16.1"),
        ({"card.json": {"versions": {"tensorflow": "2.19.0"}}}, "2.19.0"),
        ({}, None),  # a run directory: no file says which version
    ],
)
def test_metrics_without_a_backend_are_given_tensorflow_and_its_version(
    tmp_path, capsys, beside, version
):
    folder = tmp_path / "record"
    folder.mkdir()
    run_files.record(folder, runs.RECIPE, runs.METRICS, *beside)  # a manifest's era
    recipe = recipes.resolve(RECIPE_OF["dyck"], "small", TINY["dyck"])
    runs.write_json(folder / runs.RECIPE, recipe.to_dict())
    metrics = {"test": {"wcpa": 0.5}, "jit_compile": {"used": False, "reason": "r"}}
    runs.write_json(folder / runs.METRICS, metrics)
    for name, value in beside.items():
        runs.write_json(folder / name, value)
    with pytest.raises(ValueError, match=r"names no backend") as error:
        records.backend_of(metrics, folder / runs.METRICS)
    assert "\n" not in str(error.value)
    migrate.main([str(folder)])
    shown = version or "(version unknown)"
    assert capsys.readouterr().out.startswith(
        f"{folder}: metrics.json: backend tensorflow {shown}\n"
    )
    backend = {"name": "tensorflow", "version": version}
    migrated = runs.read_json(folder / runs.METRICS)
    assert migrated == {**metrics, "backend": backend}
    assert records.backend_of(migrated, folder / runs.METRICS) == "tensorflow"
    file_schema.check(migrated, file_schema.METRICS, folder / runs.METRICS, ValueError)


def interrupted_run(folder, where):
    """A run directory of the tiny Dyck recipe interrupted after its first
    epoch (in `where`: itself, or the attempt of a finished run) with a
    backup from before runs kept their compile mode and steps per call."""
    recipe = recipes.resolve(RECIPE_OF["dyck"], "small", TINY["dyck"])
    trained = folder / where
    trained.mkdir(parents=True, exist_ok=True)
    for each in {folder, trained}:
        runs.write_json(each / runs.RECIPE, recipe.to_dict())
        (each / runs.LOG).write_text("epoch,loss\n0,1.5\n")
    if trained != folder:
        backend = {"name": "tensorflow", "version": "2.21.0"}
        runs.write_json(folder / runs.METRICS, {"test": {}, "backend": backend})
    names = sorted(path.name for path in folder.iterdir())
    runs.write_json(folder / run_files.MANIFEST, {"files": [*names, runs.BACKUP]})
    backup = trained / runs.BACKUP
    backup.mkdir()
    h5py.File(backup / "epoch-1.weights.h5", "w").close()
    metadata = {"epoch": 1, "batch": 0, "weights": "epoch-1.weights.h5"}
    metadata.update(callbacks=[], seed_generators=[], log_size=17)
    (backup / RunBackup.METADATA).write_text(json.dumps(metadata))
    return recipe, backup / RunBackup.METADATA


@pytest.mark.parametrize("where", [".", "attempt"])
def test_a_backup_without_compile_facts_is_refused_until_migrated(
    tmp_path, capsys, where
):
    folder = tmp_path / "run"
    recipe, path = interrupted_run(folder, where)
    before = json.loads(path.read_text())
    argv = [RECIPE_OF["dyck"], *TINY["dyck"], "--run-dir", str(folder)]
    printed = refused_until_migrated(train.main, argv, path, capsys, folder=folder)
    # What a resume took such a backup for: no XLA, one step a call.
    shown = (
        f"{path.relative_to(folder)}: facts jit_compile false, steps_per_execution 1"
    )
    assert printed == (
        f"{folder}: {shown}\n1 of 1 folders migrated; the others were current\n"
    )
    assert json.loads(path.read_text()) == {**before, "facts": BACKUP_FACTS}
    backup = run_dirs.read_backup(recipe, path.parent.parent)
    task = make_task(recipe)
    assert runs.compile_choice(task, backup) == (
        False,
        "a backup from before train.jit_compile: trained without XLA",
    )
    assert runs.steps_choice(task, False, backup) == (
        1,
        "a backup from before train.steps_per_execution: one step a call",
    )
    migrate.main([str(folder)])  # again: current
    assert capsys.readouterr().out.startswith("0 of 1 folders migrated")


def test_a_run_directory_without_a_manifest_is_refused_until_migrated(tmp_path, capsys):
    folder = tmp_path / "run"
    folder.mkdir()
    recipe = recipes.resolve(RECIPE_OF["dyck"], "small", TINY["dyck"])
    runs.write_json(folder / runs.RECIPE, recipe.to_dict())
    backend = {"name": "tensorflow", "version": "2.21.0"}
    runs.write_json(folder / runs.METRICS, {"test": {}, "backend": backend})
    for name in (runs.BEST, runs.LOG, "train.log", "evaluation-test.json"):
        (folder / name).write_text("x")
    (folder / "saved_model").mkdir()
    (folder / "saved_model" / "zoo_export.json").write_text("{}")
    before = {path.name for path in folder.iterdir()}
    argv = [RECIPE_OF["dyck"], *TINY["dyck"], "--run-dir", str(folder)]
    printed = refused_until_migrated(train.main, argv, folder, capsys, folder=folder)
    # The names that version wrote under fixed names; evaluation-test.json
    # may be yours: it stays unlisted, and training there refused, as before.
    adopted = ["best.keras", "log.csv", "metrics.json", "recipe.json"]
    adopted = sorted([*adopted, "saved_model", "train.log"])
    assert printed == (
        f"{folder}: .run_files.json: lists {', '.join(adopted)}; not listed (not "
        "the project's by name): evaluation-test.json\n"
        "1 of 1 folders migrated; the others were current\n"
    )
    assert {path.name for path in folder.iterdir()} == {*before, ".run_files.json"}
    assert run_files.owned(folder) == set(adopted)
    with pytest.raises(run_dirs.RunError, match="holds 'evaluation-test.json'"):
        run_dirs.check_owned(folder)
    (folder / "evaluation-test.json").unlink()
    run_dirs.check_owned(folder)
    migrate.main([str(folder)])  # again: current
    assert capsys.readouterr().out.startswith("0 of 1 folders migrated")


def test_new_and_foreign_folders_are_not_taken_for_earlier_runs(tmp_path, capsys):
    new, mine = tmp_path / "new", tmp_path / "mine"
    new.mkdir()
    mine.mkdir()
    (mine / "notes.txt").write_text("mine\n")
    assert run_files.owned(new) == set() == run_files.owned(mine)
    run_dirs.check_owned(new)
    with pytest.raises(run_dirs.RunError, match="holds 'notes.txt', which no"):
        run_dirs.check_owned(mine)
    migrate.main([str(new), str(mine)])  # nothing of a run: no manifest written
    assert capsys.readouterr().out == (
        "0 of 2 folders migrated; the others were current\n"
    )
    assert list(new.iterdir()) == [] and list(mine.iterdir()) == [mine / "notes.txt"]


def test_metrics_beside_a_backup_are_refused_until_migrated(tmp_path, capsys):
    # A re-run of an earlier version trained a finished run again in place
    # (deleting its best.keras and log.csv, keeping its metrics.json) and was
    # interrupted; training removed that metrics.json when it resumed.
    folder = tmp_path / "run"
    recipe, path = interrupted_run(folder, ".")
    metadata = {**json.loads(path.read_text()), "facts": BACKUP_FACTS}
    path.write_text(json.dumps(metadata))
    backend = {"name": "tensorflow", "version": "2.21.0"}
    run_files.record(folder, runs.METRICS)
    runs.write_json(folder / runs.METRICS, {"test": {}, "backend": backend})
    stale = folder / runs.METRICS
    argv = [RECIPE_OF["dyck"], *TINY["dyck"], "--run-dir", str(folder)]
    printed = refused_until_migrated(train.main, argv, stale, capsys, folder=folder)
    assert printed == (
        f"{folder}: metrics.json removed (the metrics of the run an interrupted "
        "re-run replaced)\n1 of 1 folders migrated; the others were current\n"
    )
    assert not stale.exists() and run_dirs.state(folder) == run_dirs.INTERRUPTED
    assert run_dirs.read_backup(recipe, folder) == metadata
    migrate.main([str(folder)])  # again: current
    assert capsys.readouterr().out.startswith("0 of 1 folders migrated")


class StatesAtStart(keras.callbacks.Callback):
    """Keeps the states of the model's random generators when training
    begins (after any restore) and stops training before epoch `stop`."""

    def __init__(self, stop):
        super().__init__()
        self.stop, self.states = stop, None

    def on_train_begin(self, logs=None):
        self.states = [g.state.numpy().tolist() for g in seed_generators(self.model)]

    def on_epoch_begin(self, epoch, logs=None):
        if epoch == self.stop:
            raise KeyboardInterrupt


def test_a_backup_without_seed_states_is_refused_until_migrated(tmp_path, capsys):
    # A resume of such a backup left the generators as training began with
    # them: the migration writes those states, which the backup restores.
    overrides = [*TINY["dyck_depth"], "model.dropout=0.3"]  # draws every step
    recipe = recipes.resolve(RECIPE_OF["dyck_depth"], "small", overrides)
    folder, start = tmp_path / "run", StatesAtStart(stop=1)
    with pytest.raises(KeyboardInterrupt):
        runs.train_run(recipe, folder, callbacks=[start])
    path = folder / runs.BACKUP / RunBackup.METADATA
    metadata = json.loads(path.read_text())
    assert len(start.states) == 4 and metadata["seed_generators"] != start.states
    del metadata["seed_generators"]
    path.write_text(json.dumps(metadata))
    argv = [RECIPE_OF["dyck_depth"], *overrides, "--run-dir", str(folder)]
    printed = refused_until_migrated(train.main, argv, path, capsys, folder=folder)
    assert printed == (
        f"{folder}: backup/training_metadata.json: the states of 4 seed generators, "
        "as built\n1 of 1 folders migrated; the others were current\n"
    )
    migrated = json.loads(path.read_text())
    assert migrated == {**metadata, "seed_generators": start.states}
    assert run_dirs.read_backup(recipe, folder) == migrated


# Keys of other kinds at their defaults, as a Dyck recipe of the full form
# (from before recipes were typed) held them beside its own.
FULL_FORM = {
    "task": {"corpus": "ptb", "level": "char", "data_dir": None, "split_seed": 0},
    "model": {"bidirectional": False, "pooling": "last"},
    "train": {"stateful": False, "sampled_softmax": 0, "reset_every": None},
}
LEFT_OUT = "typed, without {} and 6 more (other kinds' keys, at their defaults)"


def full_form(recipe):
    """`recipe.to_dict()` with the keys of other kinds `FULL_FORM`."""
    saved = recipe.to_dict()
    for section, keys in FULL_FORM.items():
        saved[section] = {**saved[section], **keys}
    return saved


def test_a_full_form_recipe_json_is_refused_until_migrated(tmp_path, capsys):
    recipe = recipes.resolve(RECIPE_OF["dyck"], "small", TINY["dyck"])
    folder = tmp_path / "run"
    folder.mkdir()
    run_files.record(folder, runs.RECIPE)
    path = folder / runs.RECIPE
    runs.write_json(path, full_form(recipe))
    with pytest.raises(runs.RunError) as error:
        runs.read_recipe(path)
    assert "\n" not in str(error.value)
    assert str(error.value).startswith(
        f"{str(path)!r} names no typed recipe: it holds task.corpus, "
        "task.data_dir, task.level and 6 more, which task.kind 'dyck' does not take"
    )
    argv = [RECIPE_OF["dyck"], *TINY["dyck"], "--run-dir", str(folder)]
    printed = refused_until_migrated(train.main, argv, path, capsys)
    shown = LEFT_OUT.format("task.corpus, task.data_dir, task.level")
    assert printed == (
        f"{folder}: recipe.json: {shown}\n"
        "1 of 1 folders migrated; the others were current\n"
    )
    # The typed form: the keys of its kind, the same recipe (a record's row).
    assert runs.read_json(path) == recipe.to_dict()
    assert runs.read_recipe(path).run_identity() == recipe.run_identity()
    migrated = path.read_text()
    migrate.main([str(folder)])  # again: current
    assert capsys.readouterr().out.startswith("0 of 1 folders migrated")
    assert path.read_text() == migrated


def test_a_full_form_recipe_with_a_key_of_another_kind_set_is_left_as_it_was(
    tmp_path, capsys
):
    recipe = recipes.resolve(RECIPE_OF["dyck"], "small", TINY["dyck"])
    folder = tmp_path / "run"
    folder.mkdir()
    run_files.record(folder, runs.RECIPE)
    saved = full_form(recipe)
    saved["task"]["corpus"] = "wikitext2"  # not a default: not the full form's
    runs.write_json(folder / runs.RECIPE, saved)
    before = (folder / runs.RECIPE).read_text()
    with pytest.raises(SystemExit) as status:
        migrate.main([str(folder)])
    error = capsys.readouterr().err
    assert status.value.code == 2 and error.count("\n") == 1
    assert "Unknown recipe key 'task.corpus' for task.kind 'dyck'" in error
    assert error.endswith(": left as it was.\n")
    assert (folder / runs.RECIPE).read_text() == before


def test_a_search_of_the_full_form_is_refused_until_migrated(tmp_path, capsys):
    # A search's settings and best_recipe.toml held the full form too.
    recipe = recipes.resolve(RECIPE_OF["dyck"], "small", TINY["dyck"])
    project = tmp_path / "search" / "lstm"
    project.mkdir(parents=True)
    settings = search_records.search_settings(
        recipe, RecurrentHyperModel(recipe), "random", 0, 1
    )
    marker = project / search_records.SETTINGS
    marker.write_text(json.dumps({**settings, "recipe": full_form(recipe)}))
    with pytest.raises(ValueError) as error:
        search_records.check_project(tmp_path / "search", "lstm", settings, False)
    message = str(error.value)
    assert "\n" not in message
    assert message.startswith(
        f"{str(marker)!r} names no typed recipe: it holds task.corpus, task.level, "
        "task.data_dir and 6 more, which task.kind 'dyck' does not take"
    )
    assert message.endswith(
        f"python -m training.migrate {str(project)!r} brings it up to date."
    )
    toml = project / search_records.BEST_RECIPE
    typed_text = recipe_files.recipe_toml(recipe)
    full_text = typed_text
    for section, keys in FULL_FORM.items():
        lines = "".join(
            f"{key} = {json.dumps(value)}\n"  # TOML's spelling of these values
            for key, value in keys.items()
            if value is not None  # TOML has no null: left out, as None is
        )
        full_text = full_text.replace(f"[{section}]\n", f"[{section}]\n{lines}")
    toml.write_text(full_text)
    printed = refused_until_migrated(train.main, [str(toml)], toml, capsys)
    settings_shown = LEFT_OUT.format("task.corpus, task.level, task.data_dir")
    toml_shown = LEFT_OUT.format("task.corpus, task.level, task.split_seed")
    toml_shown = toml_shown.replace("6 more", "4 more")
    assert printed == (
        f"{project}: {search_records.SETTINGS}: its recipe {settings_shown}; "
        f"{search_records.BEST_RECIPE}: {toml_shown}\n"
        "1 of 1 folders migrated; the others were current\n"
    )
    assert toml.read_text() == typed_text  # its other lines as they were
    assert recipes.resolve(str(toml)).run_identity() == recipe.run_identity()
    saved = json.loads(marker.read_text())
    assert saved == {**settings, "recipe": recipe.to_dict()}
    search_records.check_project(tmp_path / "search", "lstm", settings, False)
    migrate.main([str(project)])  # again: current
    assert capsys.readouterr().out.startswith("0 of 1 folders migrated")


def test_a_search_without_the_settings_at_their_defaults_is_refused_until_migrated(
    tmp_path, capsys
):
    # Searches wrote `bidirectional`, `recipe_choices` and `seeds_per_trial`
    # only where they were not their defaults.
    recipe = recipes.resolve(RECIPE_OF["dyck_depth"], "small", TINY["dyck_depth"])
    settings = search_records.search_settings(
        recipe, RecurrentHyperModel(recipe), "random", 0, 1
    )
    earlier = {
        key: value
        for key, value in settings.items()
        if key not in search_records.LATER_SETTINGS
    }
    project = tmp_path / "search" / "lstm"
    project.mkdir(parents=True)
    marker = project / search_records.SETTINGS
    marker.write_text(json.dumps(earlier, indent=2) + "\n")
    with pytest.raises(ValueError) as error:
        search_records.check_project(tmp_path / "search", "lstm", settings, False)
    assert str(error.value) == (
        f"{str(marker)!r} lacks bidirectional, recipe_choices, seeds_per_trial (the "
        "settings of a search of an earlier format, which wrote them only where "
        "they were not their defaults): python -m training.migrate "
        f"{str(project)!r} brings it up to date."
    )
    migrate.main([str(project)])
    assert capsys.readouterr().out == (
        f"{project}: {search_records.SETTINGS}: bidirectional, recipe_choices, "
        "seeds_per_trial written at the search's values\n"
        "1 of 1 folders migrated; the others were current\n"
    )
    assert json.loads(marker.read_text()) == settings  # what the search writes now
    search_records.check_project(tmp_path / "search", "lstm", settings, False)
