"""What a search writes and reads back: its settings, trials, summary and record.

A search of `python -m tuning.search` lives in DIR/NAME (its project
folder): Keras Tuner's files, checkpoints included, and ours. After each
trial and at the end it writes the trials so far as a table
(hyperparameters, parameter count, objective, and each seed's objective
with more than one seed per trial), then "N of M trials", to `SUMMARY` and,
as JSON with `finished`, to `TRIALS` (`write_progress`); at the end the best
trial's recipe goes to `BEST_RECIPE` (`best_recipe`), which `python -m
training.train DIR/NAME/best_recipe.toml` trains. `SETTINGS` holds what a
resumed search must repeat (`search_settings`): a project made with other
settings is refused (`check_project`).

A record (`--record FOLDER`, `record`) is a copy of these small files and of
Keras Tuner's state (FOLDER/keras_tuner: oracle.json and each trial's
trial.json; `tuner_state_files`): what to commit, without the checkpoints.
A search whose project lacks that state (a fresh machine) restores it from
the record first (`restore`) and goes on at the next unfinished trial, with
the trials the search would have drawn; a record made with other settings
is refused (`check_record`).

Nothing here imports Keras when the module is imported: the command reads
its arguments first (`training.cli.command_line`).
"""

import json
from pathlib import Path

BEST_RECIPE, SUMMARY, TRIALS = "best_recipe.toml", "summary.txt", "trials.json"
# Written into every project of a search (`tuning.tuners.prepare`): its
# settings, which mark the folder as a search of ours (only such a folder is
# deleted by --overwrite) and which a resumed search must repeat.
SETTINGS = "zoo_search.json"
# Settings that searches of an earlier format wrote only where they were not
# their defaults (`python -m training.migrate` writes them in).
LATER_SETTINGS = ("bidirectional", "recipe_choices", "seeds_per_trial")
# What `--record` copies: small text files, no weights.
RECORD_FILES = (SUMMARY, TRIALS, BEST_RECIPE, SETTINGS)
# The record's folder of Keras Tuner's state (`tuner_state_files`), from
# which a search on another machine resumes.
STATE = "keras_tuner"
ORACLE = "oracle.json"


def _format(value):
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return str(value)


def trial_rows(tuner, hypermodel):
    """One dict per trial, in trial order: its id, status, hyperparameters
    (`None` where inactive), `units` (derived with a parameter budget),
    `parameters`, the objective and, with more than one seed per trial,
    each seed's objective (`seed_0`, `seed_1`, ...)."""
    objective = tuner.oracle.objective.name
    names = []  # in the order the hypermodel declares them
    for hp in tuner.oracle.get_space().space:
        if not hp.name.startswith("tuner/") and hp.name not in names:
            names.append(hp.name)
    rows = []
    for trial_id, trial in sorted(tuner.oracle.trials.items()):
        recipe = hypermodel.recipe_for(trial.hyperparameters.copy())
        row = {"trial": trial_id, "status": trial.status.lower()}
        values = trial.hyperparameters.values
        row.update({name: hypermodel.decoded(name, values.get(name)) for name in names})
        if hypermodel.param_budget is not None:
            row["units"] = recipe.model.units
        if trial.metrics.exists("parameters"):
            row["parameters"] = int(trial.metrics.get_last_value("parameters"))
        else:
            row["parameters"] = hypermodel.count_parameters(recipe)
        row[objective] = trial.score
        if hypermodel.seeds_per_trial > 1:
            for index, score in enumerate(hypermodel.seed_scores(trial)):
                row[f"seed_{index}"] = score
        rows.append(row)
    return rows


def format_table(rows):
    """The rows of `trial_rows` as a Markdown table; `-` marks a hyperparameter
    that is inactive in a trial (a cell option its cell does not take) and
    the objective of a trial that did not complete."""
    columns = list(rows[0])
    cells = [[_format(row.get(name)) for name in columns] for row in rows]
    widths = [
        max(len(name), *(len(line[i]) for line in cells))
        for i, name in enumerate(columns)
    ]

    def line(texts):
        padded = (text.ljust(width) for text, width in zip(texts, widths, strict=True))
        return "| " + " | ".join(padded) + " |"

    rule = "|" + "|".join("-" * (width + 2) for width in widths) + "|"
    lines = [line(columns), rule, *(line(texts) for texts in cells)]
    return "\n".join(lines)


def best_recipe(tuner, hypermodel, command=None):
    """Returns `(trial, recipe)` of the best completed trial, or `None`."""
    best = tuner.oracle.get_best_trials(1)
    if not best or best[0].status != "COMPLETED":
        return None
    trial = best[0]
    recipe = hypermodel.recipe_for(trial.hyperparameters.copy())
    objective = tuner.oracle.objective.name
    words = {
        "description": (
            f"Best of {len(tuner.oracle.trials)} trials of a Keras Tuner search "
            f"over {recipe.name} at scale {recipe.scale} (trial {trial.trial_id}, "
            f"{objective} {trial.score:.6g}): {recipe.description}"
        )
    }
    if command:
        words["source"] = f"{recipe.source}; searched with: {command}".lstrip("; ")
    return trial, recipe.with_values(words)


def search_settings(recipe, hypermodel, tuner, seed, executions_per_trial):
    """What a resumed search must repeat: the recipe and the search space."""
    settings = {
        "recipe": recipe.to_dict(),
        "tuner": tuner,
        "cells": hypermodel.cells,
        "units": hypermodel.units,
        "num_layers": hypermodel.num_layers,
        "learning_rate": hypermodel.learning_rate,
        "dropout": hypermodel.dropout,
        "options": hypermodel.cell_option_choices,
        "param_budget": hypermodel.param_budget,
        "seed": seed,
        "executions_per_trial": executions_per_trial,
        "bidirectional": hypermodel.bidirectional,
        "recipe_choices": hypermodel.recipe_choices,
        "seeds_per_trial": hypermodel.seeds_per_trial,
    }
    return json.loads(json.dumps(settings))  # tuples as lists, as read back


def _read_settings(marker):
    """The settings a search wrote to `marker`; a one-line `ValueError` if
    they are not valid JSON, or hold a recipe of an earlier format (which
    `python -m training.migrate` on the folder brings up to date)."""
    from training.core import file_schema
    from training.tasks import recipes

    try:
        saved = json.loads(marker.read_text())
    except (ValueError, UnicodeDecodeError):
        raise ValueError(
            f"{str(marker)!r} is not valid JSON; expected the settings "
            "python -m tuning.search wrote (or --overwrite)."
        ) from None
    saved = file_schema.check(saved, file_schema.SEARCH_SETTINGS, marker)
    if isinstance(saved.get("recipe"), dict) and isinstance(
        saved["recipe"].get("task"), dict
    ):
        try:
            recipes.recipe_loader.check_typed(saved["recipe"], recipes.KINDS)
        except recipes.recipe_loader.EarlierForm as earlier:
            raise ValueError(earlier.line(marker)) from None
    lacking = [key for key in LATER_SETTINGS if key not in saved]
    if lacking:
        raise ValueError(
            f"{str(marker)!r} lacks {', '.join(lacking)} (the settings of a search "
            "of an earlier format, which wrote them only where they were not "
            f"their defaults): python -m training.migrate {str(marker.parent)!r} "
            "brings it up to date."
        )
    return saved


def _differing(saved, settings):
    differ = {k for k in {*saved, *settings} if saved.get(k) != settings.get(k)}
    if "recipe" in differ and _same_recipe(saved.get("recipe"), settings["recipe"]):
        differ.remove("recipe")
    return sorted(differ)


def _same_recipe(saved, recipe):
    """Whether a saved search's recipe is `recipe` (`Recipe.to_dict()`), the
    recipe file's name aside (`Recipe.run_identity`)."""
    from training.tasks import recipes

    try:
        identity = recipes.from_saved(saved).run_identity()
        return identity == recipes.from_saved(recipe).run_identity()
    except (ValueError, KeyError, TypeError, AttributeError):  # not a recipe
        return False


def check_project(directory, project_name, settings, overwrite):
    """Returns the project folder; a one-line `ValueError` unless it is safe.

    The folder must lie inside `directory`. An existing, non-empty one must
    hold `SETTINGS` (a search of ours) to be resumed or, with `overwrite`,
    deleted; a resumed one must have been made with the same `settings`.
    """
    directory = Path(directory)
    project_dir = directory / project_name
    inside = directory.resolve()
    if inside not in project_dir.resolve().parents:
        raise ValueError(
            f"--project-name {project_name!r} is not a folder inside --directory "
            f"{str(directory)!r}; expected a plain folder name."
        )
    if project_dir.exists() and not project_dir.is_dir():
        raise ValueError(f"Project {str(project_dir)!r} is a file; expected a folder.")
    if not project_dir.is_dir() or not any(project_dir.iterdir()):
        return project_dir
    marker = project_dir / SETTINGS
    if not marker.is_file():
        raise ValueError(
            f"{str(project_dir)!r} is not a search of python -m tuning.search (it "
            f"has no {SETTINGS}); expected a new or empty --project-name, which "
            "--overwrite never deletes."
        )
    if overwrite:
        return project_dir
    differ = _differing(_read_settings(marker), settings)
    if differ:
        raise ValueError(
            f"Search {str(project_dir)!r} was made with other settings "
            f"({', '.join(differ)} differ); expected the same command to resume "
            "it, --overwrite, or a new --project-name."
        )
    return project_dir


def check_record(folder, settings, overwrite):
    """A one-line `ValueError` unless the record in `folder` (if any) was made
    with the same `settings`; `overwrite` replaces any record."""
    if folder is None or overwrite:
        return
    marker = Path(folder) / SETTINGS
    if not marker.is_file():
        return
    differ = _differing(_read_settings(marker), settings)
    if differ:
        raise ValueError(
            f"Record {str(folder)!r} was made with other settings "
            f"({', '.join(differ)} differ); expected the same command to resume "
            "it, --overwrite, or another --record."
        )


def tuner_state_files(folder):
    """Keras Tuner's state in `folder`, as paths relative to it: each trial's
    `trial_*/trial.json`, then `oracle.json`, then the tuners' files
    (`tuner0.json`, whose presence makes Keras Tuner reload). Small JSON files,
    all a search needs to resume: a finished trial's checkpoint is only
    read by `get_best_models` and by Hyperband's later rounds."""
    folder = Path(folder)
    trials = sorted(folder.glob("trial_*/trial.json"))
    tuners = sorted(
        path
        for path in folder.glob("*.json")
        if path.name not in (ORACLE, *RECORD_FILES)
    )
    oracle = [folder / ORACLE] if (folder / ORACLE).is_file() else []
    return [path.relative_to(folder) for path in (*trials, *oracle, *tuners)]


def _copy_files(source, target, relatives):
    from training.core.callbacks import write_atomically

    for relative in relatives:
        (target / relative).parent.mkdir(parents=True, exist_ok=True)
        write_atomically(target / relative, (source / relative).read_text())


def record(project_dir, folder):
    """Copies a search's small files (`RECORD_FILES`) to `folder`, if given,
    and Keras Tuner's state (`tuner_state_files`) to `folder/STATE`.

    What a search leaves to commit: the summary, the trials as JSON, the
    best recipe, the settings and the state a search resumes from, without
    Keras Tuner's checkpoints. A file the search has not written (no best
    recipe yet, a trial of a search since overwritten) is removed from
    `folder`. The trials are written before the oracle that lists them.
    """
    from training.core.callbacks import write_atomically

    if folder is None:
        return
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    for name in RECORD_FILES:
        source = project_dir / name
        if source.is_file():
            write_atomically(folder / name, source.read_text())
        else:
            (folder / name).unlink(missing_ok=True)
    state = folder / STATE
    relatives = tuner_state_files(project_dir)
    _copy_files(project_dir, state, relatives)
    kept = {state / relative for relative in relatives}
    for path in sorted(state.rglob("*"), reverse=True):  # files before folders
        if path.is_file() and path not in kept:
            path.unlink()
        elif path.is_dir() and not any(path.iterdir()):
            path.rmdir()


def restore(project_dir, folder, tuner):
    """Copies Keras Tuner's state from the record in `folder` to `project_dir`
    where the project has none (a fresh machine); returns the number of
    trials restored, 0 where nothing was copied.

    The restored search goes on as it would have on the machine that wrote
    the record: a random search's oracle keeps the seed state of its
    draws, so the next trial has the hyperparameters it would have had.

    Raises:
        ValueError: the record holds a Hyperband search (its later rounds
            start from earlier trials' checkpoints, which no record keeps),
            or trials without Keras Tuner's state (a record written before
            records kept it), which a search would silently replace.
    """
    if folder is None or (project_dir / ORACLE).is_file():
        return 0
    folder = Path(folder)
    state = folder / STATE
    if not (state / ORACLE).is_file():
        if (folder / TRIALS).is_file():
            raise ValueError(
                f"Record {str(folder)!r} has trials but no Keras Tuner state "
                f"({STATE}/) to resume from, and {str(project_dir)!r} has none; "
                "expected the --directory that holds the search, or --overwrite "
                "to search afresh and replace the record."
            )
        return 0
    if tuner == "hyperband":
        raise ValueError(
            f"Record {str(folder)!r} holds a Hyperband search, which resumes only "
            f"with its checkpoints; expected {str(project_dir)!r} as it was, or "
            "--overwrite."
        )
    relatives = tuner_state_files(state)
    _copy_files(state, project_dir, relatives)
    return sum(relative.name == "trial.json" for relative in relatives)


def write_progress(tuner, hypermodel, project_dir, finished):
    """Writes the trials so far to `project_dir`: `SUMMARY` (the table, then
    "N of M trials") and `TRIALS` (their rows, with `max_trials` and whether
    the search has `finished`). Returns the summary's text."""
    rows = trial_rows(tuner, hypermodel)
    oracle = tuner.oracle
    ended = len(oracle.end_order)
    of = f" of {oracle.max_trials}" if oracle.max_trials else ""
    progress = f"{ended}{of} trials"
    progress += "." if finished else "; not finished: the same command resumes it."
    table = format_table(rows) if rows else "(no trials)"
    summary = f"{table}\n\n{progress}"
    (project_dir / SUMMARY).write_text(summary + "\n")
    trials_record = {
        "objective": oracle.objective.name,
        "direction": oracle.objective.direction,
        "seeds_per_trial": hypermodel.seeds_per_trial,
        "max_trials": oracle.max_trials,
        "finished": finished,
        "trials": rows,
    }
    (project_dir / TRIALS).write_text(json.dumps(trials_record, indent=2) + "\n")
    return summary
