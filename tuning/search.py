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
`--overwrite` starts afresh. After each trial and at the end it writes
the trials so far as a table (hyperparameters, parameter count, objective,
and each seed's objective with `--seeds-per-trial`), then "N of M trials",
to DIR/NAME/summary.txt and, as JSON with `finished`, to
DIR/NAME/trials.json; at the end it prints the table and writes the best
trial's recipe to DIR/NAME/best_recipe.toml, which `python -m
training.train DIR/NAME/best_recipe.toml` trains. `--record FOLDER` copies
these, the search's settings and Keras Tuner's state (FOLDER/keras_tuner:
oracle.json and each trial's trial.json) to FOLDER after every trial: the
small files to commit (DIR also holds Keras Tuner's checkpoints). A search
whose DIR/NAME lacks that state (a fresh machine) restores it from FOLDER
first and goes on at the next unfinished trial, with the trials the
search would have drawn; a FOLDER made with other settings is refused.

With the KERASTUNER_TUNER_ID, KERASTUNER_ORACLE_IP and KERASTUNER_ORACLE_PORT
environment variables set, the same command is one process of a distributed
search: the chief (a tuner id containing "chief") serves the oracle and
writes the summary, best recipe and record (at the end only), each worker
runs trials.
"""

import functools
import json
import os
import sys
from pathlib import Path

from training import command_line, recipe_files
from training.recipe_files import write_recipe


class _AfterTrial:
    """Keras Tuner's tuners with one more hook: `after_trial(tuner)` runs once
    each trial has ended and Keras Tuner has saved its state (after
    `on_trial_end`, the method Keras Tuner's own tuners override)."""

    def __init__(self, *args, after_trial=None, **kwargs):
        self.after_trial = after_trial
        super().__init__(*args, **kwargs)

    def on_trial_end(self, trial):
        super().on_trial_end(trial)
        if self.after_trial is not None:
            self.after_trial(self)


# Keras Tuner's tuners by name (`--tuner`); `tuner_class` makes each.
TUNER_NAMES = ("random", "bayesian", "hyperband")


@functools.cache
def tuner_class(name):
    """Keras Tuner's tuner `name` with the `after_trial` hook of `_AfterTrial`."""
    import keras_tuner

    tuner = {
        "random": keras_tuner.RandomSearch,
        "bayesian": keras_tuner.BayesianOptimization,
        "hyperband": keras_tuner.Hyperband,
    }[name]
    return type(tuner.__name__, (_AfterTrial, tuner), {})


BEST_RECIPE, SUMMARY, TRIALS = "best_recipe.toml", "summary.txt", "trials.json"
# Written into every project of `main`: its settings, which mark the folder as
# a search of ours (only such a folder is deleted by --overwrite) and which a
# resumed search must repeat.
SETTINGS = "zoo_search.json"
ZERO_SEED = 2**31 - 1  # what seed 0 is passed as (see `make_tuner`)
# What `--record` copies: small text files, no weights.
RECORD_FILES = (SUMMARY, TRIALS, BEST_RECIPE, SETTINGS)
# The record's folder of Keras Tuner's state (`tuner_state_files`), from
# which a search on another machine resumes.
STATE = "keras_tuner"
ORACLE = "oracle.json"


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
    after_trial=None,
):
    """Returns a Keras Tuner tuner of kind `tuner` over `hypermodel`.

    An existing project in `directory/project_name` is resumed unless
    `overwrite`. Hyperband trains each model for up to the recipe's
    `train.epochs` and stops after `max_trials` trials, like the others.
    `seed` defaults to the recipe's `train.seed`. `after_trial(tuner)`, if
    given, runs after each trial, once Keras Tuner has saved its state.
    """
    if tuner not in TUNER_NAMES:
        raise ValueError(
            f"Unknown tuner {tuner!r}; expected one of: {', '.join(TUNER_NAMES)}."
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
        after_trial=after_trial,
    )
    if tuner == "hyperband":
        instance = tuner_class("hyperband")(
            hypermodel, max_epochs=train["epochs"], **options
        )
        from zoo import keras_compat

        # The chief's oracle decides; a worker's is a client of it.
        keras_compat.chief_oracle(instance.oracle).max_trials = max_trials
        return instance
    return tuner_class(tuner)(hypermodel, max_trials=max_trials, **options)


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


EXAMPLES = (
    (
        "python -m tuning.search --recipe dyck2_mlstm --cells mlstm,mmlstm "
        "--max-trials 4 train.epochs=3",
        "four trials over two cells, into runs/tuning/dyck2_mlstm-small (the same "
        "command resumes)",
    ),
    (
        "python -m tuning.search --recipe dyck2_mlstm --cells mlstm,mmlstm "
        "--option num_choices=2,4 --param-budget 10000 --project-name dyck2-10k",
        "every model at 10,000 parameters (within 5%), num_choices searched too",
    ),
)


def build_parser():
    parser = command_line.parser("python -m tuning.search", __doc__, EXAMPLES)
    parser.add_argument("--recipe", required=True, help="recipe name or .toml path")
    parser.add_argument("overrides", nargs="*", metavar="section.key=value")
    parser.add_argument("--scale", default="small", choices=recipe_files.SCALES)
    parser.add_argument("--tuner", default="random", choices=TUNER_NAMES)
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


def _read_settings(marker):
    """The settings a search wrote to `marker`; a one-line `ValueError` if
    they are not valid JSON."""
    from training import file_schema

    try:
        saved = json.loads(marker.read_text())
    except (ValueError, UnicodeDecodeError):
        raise ValueError(
            f"{str(marker)!r} is not valid JSON; expected the settings "
            "python -m tuning.search wrote (or --overwrite)."
        ) from None
    return file_schema.check(saved, file_schema.SEARCH_SETTINGS, marker)


def _differing(saved, settings):
    return sorted(k for k in {*saved, *settings} if saved.get(k) != settings.get(k))


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
    from training.callbacks import write_atomically

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
    from training.callbacks import write_atomically

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
    try:  # an unknown recipe is refused before Keras is imported (seconds)
        recipe_files.find(args.recipe, recipe_files.RECIPE_DIR, "recipe", ValueError)
    except ValueError as error:
        parser.exit(2, f"{parser.prog}: error: {error}\n")
    command_line.start_tensorflow()
    from training import plots, recipes
    from tuning.hypermodels import RecurrentHyperModel

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
        project_dir = Path(args.directory) / project_name
        after_trial = None
        if not worker:  # a worker joins the chief's project
            check_project(args.directory, project_name, settings, args.overwrite)
            check_record(args.record, settings, args.overwrite)
            restored = 0
            if not args.overwrite:
                restored = restore(project_dir, args.record, args.tuner)
            if restored:
                print(f"Restored {restored} trials' state from {args.record}.")

            def after_trial(tuner):
                """Records the trials so far: a record to commit after each."""
                write_progress(tuner, hypermodel, project_dir, finished=False)
                (project_dir / BEST_RECIPE).unlink(missing_ok=True)
                record(project_dir, args.record)

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
            after_trial=after_trial,
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
        where = (
            f" (or, elsewhere, from the record {args.record})" if args.record else ""
        )
        print(
            f"\nInterrupted; the same command resumes the search in "
            f"{project_dir}{where}."
        )
        return 130
    except RuntimeError as error:  # Keras Tuner's consecutive-failures stop
        if "consecutive failures" not in str(error):
            raise
        stopped = str(error).splitlines()[0]
    if worker:
        print(f"Tuner {tuner.tuner_id}: no trials left; the chief writes the summary.")
        return 0

    summary = write_progress(tuner, hypermodel, project_dir, finished=not stopped)
    print(f"\nSearch {project_dir}: {len(tuner.oracle.trials)} trials\n")
    print(summary)
    objective = tuner.oracle.objective.name
    command = " ".join(["python -m tuning.search", *(argv or sys.argv[1:])])
    best = best_recipe(tuner, hypermodel, command)
    if stopped:
        print(f"\nSearch stopped: {stopped}.")
    if best is None:
        (project_dir / BEST_RECIPE).unlink(missing_ok=True)
    else:
        path = write_recipe(best[1], project_dir / BEST_RECIPE)
    record(project_dir, args.record)
    if args.record:
        print(f"Record: {args.record}")
    if best is None:
        print("No trial completed, so there is no best recipe.")
        return 1
    trial, recipe = best
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
