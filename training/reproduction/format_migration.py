"""Brings files the project wrote before a format change up to date, once.

Kept, and safe to run again (a file already in the current format is left
as it is): other branches add presets while one format changes, and their
files are migrated after a merge by running it again
(`python -m training.migrate`).

- Presets of format version 1, from before the zoo's model classes (issue
  58): `best.keras` held a plain functional graph, which
  `keras.saving.load_model` gives back as a `keras.Model` without the zoo's
  loop, grouped steps or parts, and no `preset.json` named the format.
  `migrate_preset` rebuilds the model from the preset's recipe (its class:
  `zoo.LanguageModel`, `zoo.Recognizer`, ...), loads the file's weights into
  it (the weight files of both formats name their layers alike), checks the
  two give the same outputs, and writes the preset's model again
  (`zoo.presets.save_preset`: `best.keras` and `preset.json`, format version
  2), with the card's and README's file size.
- Recipes of the Dyck-RNN (`task.kind` `closing_bracket`) from before its
  hidden size had one key (issue 58): `model.units` was whatever the
  recipe said (4 for every m) while the model had `task.m * embedding_dim`
  units. `migrate_recipe` writes the model's size there, which the recipe
  check now requires (presets' and the records' `recipe.json`).
- Recipes of the full form, from before recipes were typed (issue 58):
  every key of every task kind, those of other kinds (and training options
  the kind does not take) at their defaults, which readers left out
  (`recipe_loader.full_form_keys`). `recipe_migration.migrate_recipe_form`
  writes a run's `recipe.json` without them, `migrate_search_settings` the
  recipe of a search's settings, `migrate_recipe_files` a recipe file
  (`*.toml`: a search's `best_recipe.toml`) without their lines; each is
  read back as the reader now reads it, the same recipe
  (`Recipe.run_identity`), before it is written. Readers now refuse the
  full form (`recipe_loader.EarlierForm`).
- Searches' settings from before they held every setting (issue 58):
  `bidirectional`, `recipe_choices` and `seeds_per_trial` were written only
  where they were not their defaults. `migrate_search_settings` writes them
  in at the values the search had; a resumed search refuses settings
  without them.
- Vocabularies from before they named their text conventions (issue 58):
  `vocabulary.json` without a `conventions` key, which readers filled in
  from the task (the recipe corpus's, BLiMP's, or none). `migrate_vocabulary`
  writes the task's there (`Task.conventions`, what a new run's vocabulary
  records); the library now refuses a vocabulary without the key.
- Metrics from before runs recorded their Keras backend (issue 58):
  `metrics.json` without `backend`, which readers took for TensorFlow (the
  only backend then). `migrate_metrics` writes TensorFlow there, with the
  version the folder's `host.json` (a record's) or `card.json` (a preset's)
  names, else null; the records' readers now refuse metrics without it.
- Backups from before runs kept their compile mode and steps per call
  (`train.jit_compile`, `train.steps_per_execution`): an interrupted run's
  `backup/training_metadata.json` (or its `attempt/`'s) without
  `facts.jit_compile` or `facts.steps_per_execution`, which a resume took
  for a run without XLA, one step a call (what every run did then).
  `migrate_backup` writes those facts there, so the resume ends as the run
  began; `run_dirs.read_backup` now refuses a backup without them.
- Backups from before they kept the states of the model's random
  generators (`seed_generators`: dropout masks, state noise), which a
  resume left as the model was built. `migrate_backup` writes those
  states there (the run's model rebuilt from its recipe and vocabulary,
  seeded as training seeds it: `runs.seeded_model`), so the resume draws
  as it did; `run_dirs.read_backup` now refuses a backup without them.
- Re-runs from before a finished run was trained again in `attempt/`: a
  re-run trained in place, deleting the finished run's `best.keras` and
  `log.csv` but not its `metrics.json`, so one interrupted left that
  `metrics.json` beside its `backup/`; training removed it when it resumed.
  `migrate_rerun` removes it (the metrics of a model no longer there);
  `run_dirs.read_backup` now refuses a backup with `metrics.json` beside it.
- Run directories from before the manifest (`training.runs.run_files`): a
  `runs/` folder that holds files but no `.run_files.json`, whose files
  the first command writing there adopted by name. `migrate_manifest`
  writes the manifest of those names (`ADOPTED`: what training, the export
  of `training.train` and the table runner wrote under fixed names, and
  `saved_model/` when it holds the export's `zoo_export.json`); anything
  else stays unlisted (it may be yours), so training there is refused until
  it is moved away, as before. Every command now refuses such a folder.

Each `migrate_*` returns what it changed, in a few words, or None.
"""

import json
import re
from pathlib import Path

import keras
import numpy as np

import zoo
from training.core.callbacks import (
    RunBackup,
    check_metadata,
    seed_generators,
    write_atomically,
)
from training.data.tokenize import Vocabulary
from training.runs import run_dirs, run_files, runs, saved_model
from training.tasks import make_task

# What a resume took a backup without them for: every run then compiled
# without XLA and ran one step a call.
BACKUP_FACTS = {
    runs.JIT_COMPILE: {
        "used": False,
        "reason": "a backup from before train.jit_compile: trained without XLA",
    },
    runs.STEPS_PER_EXECUTION: {
        "used": 1,
        "reason": "a backup from before train.steps_per_execution: one step a call",
    },
}
# The names training and the table runner wrote into a run directory
# before the manifest (their locks among them), and the export of
# `training.train` (a folder that holds `saved_model.MARKER`).
ADOPTED = (
    "recipe.json",
    "vocabulary.json",
    "best.keras",
    "log.csv",
    "tensorboard",
    "metrics.json",
    "backup",
    "attempt",
    ".train.lock",
    ".lock",
    "train.log",
    "timing.json",
    "host.json",
)
EXPORT = "saved_model"
IDS = np.array([[1, 3, 4, 4, 3, 2], [3, 4, 3, 4, 0, 0]], "int32")


def is_preset(folder):
    """Whether `folder` holds a preset's model (a run directory's has no format)."""
    loader = zoo.presets.preset_loader
    folder = Path(folder)
    return (folder / runs.BEST).is_file() and any(
        (folder / name).is_file() for name in (loader.CARD, loader.PRESET)
    )


def migrate_preset(folder):
    """Writes the preset in `folder` in the current format; what it changed.

    A one-line `ValueError` when the rebuilt model's outputs differ from the
    file's, and then nothing is written.
    """
    folder = Path(folder)
    marker = folder / zoo.presets.preset_loader.PRESET
    current = zoo.presets.preset_loader.FORMAT_VERSION
    if marker.is_file() and runs.read_json(marker).get("format_version") == current:
        return None
    done = f"{runs.BEST} and {marker.name} in format version {current}"
    path = folder / runs.BEST
    loaded = keras.saving.load_model(path, compile=False, safe_mode=True)
    if isinstance(loaded, zoo.ZooModel):  # a model file migrated, its marker not
        zoo.presets.save_preset(loaded, folder)
        _write_size(folder)
        return done
    model = _rebuilt(folder)
    ids = IDS % _vocabulary_size(model)
    for old, new in zip(
        keras.tree.flatten(loaded(ids)), keras.tree.flatten(model(ids)), strict=True
    ):
        if not np.allclose(np.asarray(old), np.asarray(new), atol=1e-6):
            raise ValueError(
                f"{str(path)!r}: the model rebuilt from recipe.json does not give "
                "the file's outputs; expected the same model: left as it was."
            )
    zoo.presets.save_preset(model, folder)
    _write_size(folder)
    return done


def migrate_recipe(path):
    """Gives a Dyck-RNN recipe at `path` its true `model.units`; what it changed."""
    path = Path(path)
    recipe = runs.read_json(path)
    task, model = recipe.get("task", {}), recipe.get("model", {})
    if task.get("kind") != "closing_bracket":
        return None
    units = task["m"] * (model.get("options") or {}).get("embedding_dim", 1)
    if model.get("units") == units:
        return None
    done = f"{path.name}: model.units {model.get('units')} -> {units}"
    model["units"] = units
    runs.write_json(path, recipe)
    _rewrite_readme(path.parent, r"(- Cell: `dyck_rnn`, )\d+( units)", units)
    return done


def migrate_vocabulary(folder):
    """Names the text conventions in `folder`'s `vocabulary.json` where it
    names none: its task's (`Task.conventions`), which readers used for it
    until then, so the folder's text reads as before; what it changed.

    The recipe is read first (`runs.read_recipe`, run `migrate_recipe`
    before) and the vocabulary checked before it is written (atomically).
    """
    path = Path(folder) / runs.VOCABULARY
    config = runs.read_json(path)
    if not isinstance(config, dict) or "conventions" in config:
        return None
    recipe = runs.read_recipe(Path(folder) / runs.RECIPE)
    try:
        vocabulary = Vocabulary.from_config({**config, "conventions": None})
    except (KeyError, TypeError, ValueError) as error:
        raise ValueError(
            f"{str(path)!r} cannot be read ({type(error).__name__}: {error}); "
            "expected the vocabulary python -m training.train wrote: left as it was."
        ) from None
    vocabulary.conventions = make_task(recipe, vocabulary=vocabulary).conventions
    vocabulary.tokenizer()  # a one-line ValueError for conventions it cannot read
    write_atomically(path, vocabulary.to_json())
    return f"{path.name}: conventions {json.dumps(vocabulary.conventions)}"


def migrate_metrics(folder):
    """Names TensorFlow as the backend of `folder`'s `metrics.json` where it
    names none; what it changed."""
    folder = Path(folder)
    path = folder / runs.METRICS
    metrics = runs.read_json(path)
    if not isinstance(metrics, dict) or runs.BACKEND in metrics:
        return None
    versions = {}
    if (folder / "host.json").is_file():
        versions = runs.read_json(folder / "host.json")
    elif (folder / zoo.presets.preset_loader.CARD).is_file():
        versions = runs.read_json(folder / zoo.presets.preset_loader.CARD)
        versions = versions.get("versions") if isinstance(versions, dict) else {}
    version = versions.get("tensorflow") if isinstance(versions, dict) else None
    backend = {"name": "tensorflow", "version": version}
    runs.write_json(path, {**metrics, runs.BACKEND: backend})
    return f"{path.name}: backend tensorflow {version or '(version unknown)'}"


def migrate_backup(folder):
    """Writes what an interrupted run's backup in `folder` (or its
    attempt's) lacks into its metadata: the facts `BACKUP_FACTS` and the
    states of the model's random generators as built; what it changed.

    The metadata is checked (`check_metadata`) before it is written
    (atomically); nothing else in the backup changes.
    """
    folder = Path(folder)
    done = []
    for backup in (folder / runs.BACKUP, folder / run_dirs.ATTEMPT / runs.BACKUP):
        path = backup / RunBackup.METADATA
        if not path.is_file():
            continue
        metadata = runs.read_json(path)
        check_metadata(metadata, path, log_path=backup.parent / runs.LOG)
        facts = metadata.get("facts") or {}
        missing = {key: fact for key, fact in BACKUP_FACTS.items() if key not in facts}
        written = []
        if missing:
            facts_written = (
                f"{key} {json.dumps(f['used'])}" for key, f in missing.items()
            )
            written.append(f"facts {', '.join(facts_written)}")
        if metadata.get("seed_generators") is None:
            states = _initial_seed_states(backup.parent)
            metadata = {**metadata, "seed_generators": states}
            written.append(f"the states of {len(states)} seed generators, as built")
        if not written:
            continue
        metadata = {**metadata, "facts": {**facts, **missing}}
        check_metadata(metadata, path, log_path=backup.parent / runs.LOG)
        write_atomically(path, json.dumps(metadata))
        done.append(f"{path.relative_to(folder)}: {', '.join(written)}")
    return "; ".join(done) or None


def _initial_seed_states(folder):
    """The states of the random generators of the model a run in `folder`
    starts from: what a resume from a backup without them drew from."""
    recipe = runs.read_recipe(Path(folder) / runs.RECIPE)
    model = runs.seeded_model(recipe, runs.load_vocabulary(folder))
    return [
        keras.ops.convert_to_numpy(generator.state.value).tolist()
        for generator in seed_generators(model)
    ]


def migrate_rerun(folder):
    """Removes the `metrics.json` an interrupted re-run of an earlier version
    left beside its `backup/` in `folder` (its model's `best.keras` was
    deleted when the re-run began); what it changed."""
    folder = Path(folder)
    path = folder / runs.METRICS
    if not ((folder / runs.BACKUP).is_dir() and path.is_file()):
        return None
    path.unlink()
    return (
        f"{path.name} removed (the metrics of the run an interrupted re-run replaced)"
    )


def migrate_manifest(folder):
    """Writes the manifest of a run directory from before the manifest in
    `folder`, listing the names that version wrote there (`ADOPTED`, and
    `saved_model/` holding an export); what it changed. A preset, a record
    and a new or empty folder get none."""
    folder = Path(folder)
    names = {path.name for path in folder.iterdir()}
    if (
        run_files.MANIFEST in names
        or {run_dirs.CARD, zoo.presets.preset_loader.PRESET, run_dirs.RECORD} & names
        or all(run_files.is_temporary(name) for name in names)  # new or empty
    ):
        return None
    run_files.check_no_links(folder)
    adopted = names & set(ADOPTED)
    if (folder / EXPORT / saved_model.MARKER).is_file():
        adopted.add(EXPORT)
    if not adopted or not run_files.adopt(folder, adopted):  # not a run's folder
        return None
    unlisted = sorted(names - adopted - {run_files.MANIFEST})
    left = f"; not listed (not the project's by name): {', '.join(unlisted)}"
    return f"{run_files.MANIFEST}: lists {', '.join(sorted(adopted))}" + (
        left if unlisted else ""
    )


def _write_size(folder):
    """The card's and README's size of `best.keras`, as it now is."""
    size = (folder / runs.BEST).stat().st_size
    card_path = folder / zoo.presets.preset_loader.CARD
    if card_path.is_file():
        card = runs.read_json(card_path)
        card["size_bytes"] = size
        runs.write_json(card_path, card)
    _rewrite_readme(folder, r"(Model file: `best\.keras`, )[\d,]+( bytes)", f"{size:,}")


def _rewrite_readme(folder, pattern, value):
    """Puts `value` between the two groups of `pattern` in a preset's README."""
    readme = folder / zoo.presets.preset_loader.README
    if readme.is_file():
        text = re.sub(
            pattern,
            lambda match: f"{match[1]}{value}{match[2]}",
            readme.read_text(encoding="utf-8"),
        )
        readme.write_text(text, encoding="utf-8")


def _rebuilt(folder):
    """The model of `folder`'s recipe in float32, the file's weights loaded.

    As `runs.load_run` rebuilds it, without the format check a preset of
    format version 1 fails.
    """
    recipe = runs.read_recipe(folder / runs.RECIPE)
    recipe = recipe.with_values({"train.precision": "float32"})
    task = make_task(recipe, vocabulary=runs.load_vocabulary(folder))
    model = task.build_model(stateful=False)
    zoo.presets.load_weights(model, folder / runs.BEST)
    return runs.for_evaluation(task, model)


def _vocabulary_size(model):
    parts = zoo.model_parts(model)
    if parts.embedding is not None:
        return parts.embedding.input_dim
    return getattr(model, "vocab_size", None) or 7
