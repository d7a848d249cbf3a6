"""Searches a recipe's architecture with Keras Tuner.

    python -m tuning.search --recipe NAME [section.key=value ...]
        [--tuner random|bayesian|hyperband] [--max-trials N] [--param-budget P]
        [--directory DIR] [--project-name NAME] [--overwrite] [--scale small|paper]
        [--cells a,b] [--units 32,64] [--num-layers 1,2] [--learning-rate LOW,HIGH]
        [--dropout 0,0.2] [--bidirectional false,true] [--option NAME=V1,V2 ...]
        [--seeds-per-trial N] [--record FOLDER]

`--option NAME=V1,V2` searches a cell option (conditional on the cells that
take it; dropped where no searched cell does) or, when NAME has a dot, a
recipe key `section.key` (every cell alike). Running the same command again
resumes the search in DIR/NAME: finished trials are kept, an interrupted one
is run again, and `--max-trials` counts the trials already run;
`--overwrite` starts afresh. At the end it prints a table of the trials
(hyperparameters, parameter count, objective, and each seed's objective with
`--seeds-per-trial`) and writes it to DIR/NAME/summary.txt and, as JSON,
DIR/NAME/trials.json, and the best trial's recipe to
DIR/NAME/best_recipe.toml, which `python -m training.train
DIR/NAME/best_recipe.toml` trains. `--record FOLDER` copies these and the
search's settings to FOLDER: the small files to commit (DIR also holds
Keras Tuner's checkpoints).

With the KERASTUNER_TUNER_ID, KERASTUNER_ORACLE_IP and KERASTUNER_ORACLE_PORT
environment variables set, the same command is one process of a distributed
search: the chief (a tuner id containing "chief") serves the oracle and
writes the summary and best recipe, each worker runs trials.
"""

import argparse
import json
import os
import sys
from pathlib import Path

import keras_tuner

from training import file_schema, plots, recipes
from training.callbacks import write_atomically
from training.recipe_files import write_recipe
from tuning.hypermodels import RecurrentHyperModel

TUNERS = {
    "random": keras_tuner.RandomSearch,
    "bayesian": keras_tuner.BayesianOptimization,
    "hyperband": keras_tuner.Hyperband,
}
BEST_RECIPE, SUMMARY, TRIALS = "best_recipe.toml", "summary.txt", "trials.json"
# Written into every project of `main`: its settings, which mark the folder as
# a search of ours (only such a folder is deleted by --overwrite) and which a
# resumed search must repeat.
SETTINGS = "zoo_search.json"
ZERO_SEED = 2**31 - 1  # what seed 0 is passed as (see `make_tuner`)
# What `--record` copies: small text files, no weights.
RECORD_FILES = (SUMMARY, TRIALS, BEST_RECIPE, SETTINGS)


def make_tuner(
    hypermodel,
    tuner="random",
    max_trials=10,
    directory="runs/tuning",
    project_name="search",
    overwrite=False,
    seed=None,
    executions_per_trial=1,
    max_consecutive_failed_trials=3,
):
    """Returns a Keras Tuner tuner of kind `tuner` over `hypermodel`.

    An existing project in `directory/project_name` is resumed unless
    `overwrite`. Hyperband trains each model for up to the recipe's
    `train.epochs` and stops after `max_trials` trials, like the others.
    `seed` defaults to the recipe's `train.seed`.
    """
    if tuner not in TUNERS:
        raise ValueError(
            f"Unknown tuner {tuner!r}; expected one of: {', '.join(TUNERS)}."
        )
    if max_trials is not None:
        max_trials = int(max_trials)
        if max_trials < 1:
            raise ValueError(
                f"`max_trials` must be a positive integer; received {max_trials!r}."
            )
    train = hypermodel.recipe["train"]
    seed = train["seed"] if seed is None else seed
    options = dict(
        objective=hypermodel.objective,
        directory=str(directory),
        project_name=project_name,
        overwrite=overwrite,
        # Keras Tuner reads a seed of 0 as "no seed" and draws one at random.
        seed=seed if seed != 0 else ZERO_SEED,
        executions_per_trial=executions_per_trial,
        max_consecutive_failed_trials=max_consecutive_failed_trials,
    )
    if tuner == "hyperband":
        instance = keras_tuner.Hyperband(
            hypermodel, max_epochs=train["epochs"], **options
        )
        # The chief's oracle decides; a worker's is a client of it.
        oracle = getattr(instance.oracle, "_oracle", instance.oracle)
        oracle.max_trials = max_trials
        return instance
    return TUNERS[tuner](hypermodel, max_trials=max_trials, **options)


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
            row["units"] = recipe["model"]["units"]
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
    recipe["description"] = (
        f"Best of {len(tuner.oracle.trials)} trials of a Keras Tuner search over "
        f"{recipe['name']} at scale {recipe['scale']} (trial {trial.trial_id}, "
        f"{objective} {trial.score:.6g}): {recipe['description']}"
    )
    if command:
        recipe["source"] = f"{recipe['source']}; searched with: {command}".lstrip("; ")
    return trial, recipe


def _values(text, name, convert=json.loads):
    try:
        values = [convert(item) for item in text.split(",") if item.strip()]
    except ValueError:  # json.JSONDecodeError is a ValueError
        raise ValueError(
            f"`{name}` must be comma-separated values; received {text!r}."
        ) from None
    return values[0] if len(values) == 1 else values


def _json_or_text(text):
    """A JSON value (`0.1`, `false`, `"soft"`), else the text itself (`soft`)."""
    try:
        return json.loads(text)
    except ValueError:
        return text.strip()


def parse_options(texts):
    """`--option` texts -> `(cell options, recipe keys)`, each `{name: values}`.

    A name with a dot is a recipe key (`task.next_symbol_loss`), any other a
    cell option; values are JSON where they parse (`0.1`, `false`), else text.
    """
    options, recipe_keys = {}, {}
    for text in texts:
        name, sep, values = text.partition("=")
        if not sep or not name or not values:
            raise ValueError(f"--option {text!r} must look like NAME=VALUE,VALUE.")
        target = recipe_keys if "." in name else options
        target[name] = _values(values, name, _json_or_text)
    return options, recipe_keys


def build_parser():
    parser = argparse.ArgumentParser(
        prog="python -m tuning.search", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--recipe", required=True, help="recipe name or .toml path")
    parser.add_argument("overrides", nargs="*", metavar="section.key=value")
    parser.add_argument("--scale", default="small", choices=recipes.SCALES)
    parser.add_argument("--tuner", default="random", choices=list(TUNERS))
    parser.add_argument("--max-trials", type=int, default=10)
    parser.add_argument(
        "--param-budget",
        type=int,
        default=None,
        help="derive the hidden size so every model has P parameters (within 5%%)",
    )
    parser.add_argument("--directory", default="runs/tuning")
    parser.add_argument("--project-name", default=None, help="default: RECIPE-SCALE")
    parser.add_argument("--overwrite", action="store_true", help="start afresh")
    parser.add_argument("--cells", default=None, help="default: the recipe's cell")
    parser.add_argument("--units", default="32,64,128,256")
    parser.add_argument("--num-layers", default="1,2")
    parser.add_argument("--learning-rate", default="1e-4,1e-2", help="LOW,HIGH or LR")
    parser.add_argument("--dropout", default="0,0.1,0.2,0.3")
    parser.add_argument(
        "--bidirectional",
        default=None,
        help="false, true or false,true (taggers and classifiers; default: the "
        "recipe's model.bidirectional)",
    )
    parser.add_argument(
        "--option",
        action="append",
        default=[],
        metavar="NAME=V1,V2",
        help="a cell option to search (default: num_choices=2,4,8, num_cells=2,3,4, "
        "stack_depth=8,16,32,64 for the cells that take them), or with a dot a "
        "recipe key section.key",
    )
    parser.add_argument(
        "--seeds-per-trial",
        type=int,
        default=1,
        help="models per trial, on seeds train.seed, train.seed + 1, ...; the trial "
        "scores their mean",
    )
    parser.add_argument(
        "--record",
        default=None,
        metavar="FOLDER",
        help="copy the summary, trials.json, best recipe and settings there",
    )
    parser.add_argument("--seed", type=int, default=None, help="default: train.seed")
    parser.add_argument("--executions-per-trial", type=int, default=1)
    parser.add_argument("--max-consecutive-failed-trials", type=int, default=3)
    parser.add_argument("--verbose", type=int, default=None, choices=(0, 1, 2))
    return parser


def search_settings(args, recipe, hypermodel):
    """What a resumed search must repeat: the recipe and the search space."""
    settings = {
        "recipe": recipe,
        "tuner": args.tuner,
        "cells": hypermodel.cells,
        "units": hypermodel.units,
        "num_layers": hypermodel.num_layers,
        "learning_rate": hypermodel.learning_rate,
        "dropout": hypermodel.dropout,
        "options": hypermodel.cell_option_choices,
        "param_budget": hypermodel.param_budget,
        "seed": args.seed,
        "executions_per_trial": args.executions_per_trial,
    }
    # Set only where used, so that searches made before these existed resume.
    if getattr(args, "bidirectional", None) is not None:
        settings["bidirectional"] = hypermodel.bidirectional
    if hypermodel.recipe_choices:
        settings["recipe_choices"] = hypermodel.recipe_choices
    if hypermodel.seeds_per_trial > 1:
        settings["seeds_per_trial"] = hypermodel.seeds_per_trial
    return json.loads(json.dumps(settings))  # tuples as lists, as read back


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
    try:
        saved = json.loads(marker.read_text())
    except (ValueError, UnicodeDecodeError):
        raise ValueError(
            f"{str(marker)!r} is not valid JSON; expected the settings "
            "python -m tuning.search wrote (or --overwrite)."
        ) from None
    saved = file_schema.check(saved, file_schema.SEARCH_SETTINGS, marker)
    differ = sorted(k for k in {*saved, *settings} if saved.get(k) != settings.get(k))
    if differ:
        raise ValueError(
            f"Search {str(project_dir)!r} was made with other settings "
            f"({', '.join(differ)} differ); expected the same command to resume "
            "it, --overwrite, or a new --project-name."
        )
    return project_dir


def record(project_dir, folder):
    """Copies a search's small files (`RECORD_FILES`) to `folder`, if given.

    What a search leaves to commit: the summary, the trials as JSON, the
    best recipe and the settings, without Keras Tuner's checkpoints. A file
    the search has not written (no best recipe yet) is removed from `folder`.
    """
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
    print(f"Record: {folder}")


def is_worker():
    """Whether this process is a worker of a distributed search (not its chief)."""
    return "KERASTUNER_ORACLE_IP" in os.environ and "chief" not in os.environ.get(
        "KERASTUNER_TUNER_ID", ""
    )


def main(argv=None):
    parser = build_parser()
    args = parser.parse_intermixed_args(argv)  # overrides may follow options
    worker = is_worker()
    if worker and args.overwrite:
        parser.exit(
            2,
            f"{parser.prog}: error: --overwrite is for the chief; a worker "
            "(KERASTUNER_TUNER_ID without 'chief') joins the chief's search.\n",
        )
    verbose = args.verbose
    if verbose is None:
        verbose = 1 if sys.stdout.isatty() else 2
    project_name = args.project_name or f"{Path(args.recipe).stem}-{args.scale}"
    try:
        plots.check_out_dir(args.directory, "--directory")  # not a file
        recipe = recipes.resolve(args.recipe, args.scale, args.overrides)
        learning_rate = _values(args.learning_rate, "learning_rate", float)
        cell_option_choices, recipe_choices = parse_options(args.option)
        hypermodel = RecurrentHyperModel(
            recipe,
            cells=args.cells.split(",") if args.cells else None,
            units=_values(args.units, "units"),
            num_layers=_values(args.num_layers, "num_layers"),
            learning_rate=tuple(learning_rate)
            if isinstance(learning_rate, list)
            else learning_rate,
            dropout=_values(args.dropout, "dropout", float),
            bidirectional=None
            if args.bidirectional is None
            else _values(args.bidirectional, "bidirectional"),
            param_budget=args.param_budget,
            recipe_choices=recipe_choices,
            seeds_per_trial=args.seeds_per_trial,
            **cell_option_choices,
        )
        settings = search_settings(args, recipe, hypermodel)
        if not worker:  # a worker joins the chief's project
            project_dir = check_project(
                args.directory, project_name, settings, args.overwrite
            )
        hypermodel.check_budget_feasible()
        tuner = make_tuner(
            hypermodel,
            args.tuner,
            args.max_trials,
            args.directory,
            project_name,
            overwrite=args.overwrite,
            seed=args.seed,
            executions_per_trial=args.executions_per_trial,
            max_consecutive_failed_trials=args.max_consecutive_failed_trials,
        )
        if not worker:
            project_dir.mkdir(parents=True, exist_ok=True)
            (project_dir / SETTINGS).write_text(json.dumps(settings, indent=2) + "\n")
    except (ValueError, OSError) as error:
        parser.exit(2, f"{parser.prog}: error: {error}\n")
    if hypermodel.dropped_options:
        print(
            f"Not searched (no searched cell takes them): "
            f"{', '.join(hypermodel.dropped_options)}."
        )

    import tensorflow as tf

    tf.config.experimental.enable_op_determinism()
    stopped = None
    try:
        tuner.search(verbose=verbose)
    except KeyboardInterrupt:
        print(
            f"\nInterrupted; the same command resumes the search in "
            f"{Path(args.directory) / project_name}."
        )
        return 130
    except RuntimeError as error:  # Keras Tuner's consecutive-failures stop
        if "consecutive failures" not in str(error):
            raise
        stopped = str(error).splitlines()[0]
    if worker:
        print(f"Tuner {tuner.tuner_id}: no trials left; the chief writes the summary.")
        return 0

    project_dir = Path(args.directory) / project_name
    rows = trial_rows(tuner, hypermodel)
    table = format_table(rows) if rows else "(no trials)"
    (project_dir / SUMMARY).write_text(table + "\n")
    objective = tuner.oracle.objective.name
    trials_record = {
        "objective": objective,
        "direction": tuner.oracle.objective.direction,
        "seeds_per_trial": hypermodel.seeds_per_trial,
        "trials": rows,
    }
    (project_dir / TRIALS).write_text(json.dumps(trials_record, indent=2) + "\n")
    print(f"\nSearch {project_dir}: {len(rows)} trials\n")
    print(table)
    command = " ".join(["python -m tuning.search", *(argv or sys.argv[1:])])
    best = best_recipe(tuner, hypermodel, command)
    if stopped:
        print(f"\nSearch stopped: {stopped}.")
    if best is None:
        (project_dir / BEST_RECIPE).unlink(missing_ok=True)
        record(project_dir, args.record)
        print("No trial completed, so there is no best recipe.")
        return 1
    trial, recipe = best
    path = write_recipe(recipe, project_dir / BEST_RECIPE)
    record(project_dir, args.record)
    print(
        f"\nBest trial {trial.trial_id}: {objective} {trial.score:.4f}, "
        f"{recipe['model']['cell']} with units={recipe['model']['units']}, "
        f"{hypermodel.count_parameters(recipe):,} parameters."
    )
    print(f"Best recipe: {path}")
    print(
        f"Train it: python -m training.train {path} --scale {recipe['scale']} "
        f"--run-dir {project_dir / 'best_run'}"
    )
    return 1 if stopped else 0


if __name__ == "__main__":
    sys.exit(main())
