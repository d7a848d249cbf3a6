"""Keras Tuner's tuners over a hypermodel, and a search from its options to a
best recipe: the work of `python -m tuning.search`.

`make_tuner` is the tuner factory (`TUNER_NAMES`, each with an
`after_trial` hook). `prepare` makes every check of a search (the recipe,
the search space, the project folder DIR/NAME and the record, the parameter
budget), restores Keras Tuner's state from a record where the project has
none, makes the tuner and writes the settings; `Search.run` searches and
then writes the summary, the best recipe and the record
(`tuning.search_records`), returning the lines that report them.

Running the same search again resumes it in DIR/NAME: finished trials are
kept, an interrupted one is run again, and `max_trials` counts the trials
already run; `overwrite` starts afresh. The summary, the trials and the
record are written after each trial too.

With the KERASTUNER_TUNER_ID, KERASTUNER_ORACLE_IP and KERASTUNER_ORACLE_PORT
environment variables set, the same search is one process of a distributed
search (`is_worker`): the chief (a tuner id containing "chief") serves the
oracle and writes the summary, best recipe and record (at the end only),
each worker runs trials.

Nothing here imports Keras when the module is imported: the command reads
its arguments first (`training.cli.command_line`).
"""

import dataclasses
import functools
import json
import os
from pathlib import Path

from training.core.recipe_files import write_recipe
from tuning import search_records as records


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


ZERO_SEED = 2**31 - 1  # what seed 0 is passed as (see `make_tuner`)


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
    train = hypermodel.recipe.train
    seed = train.seed if seed is None else seed
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
            hypermodel, max_epochs=train.epochs, **options
        )
        from zoo import keras_compat

        # The chief's oracle decides; a worker's is a client of it.
        keras_compat.chief_oracle(instance.oracle).max_trials = max_trials
        return instance
    return tuner_class(tuner)(hypermodel, max_trials=max_trials, **options)


def is_worker():
    """Whether this process is a worker of a distributed search (not its chief)."""
    return "KERASTUNER_ORACLE_IP" in os.environ and "chief" not in os.environ.get(
        "KERASTUNER_TUNER_ID", ""
    )


def prepare(
    recipe,
    report,
    overrides=(),
    scale="small",
    tuner="random",
    max_trials=10,
    param_budget=None,
    directory="runs/tuning",
    project_name=None,
    overwrite=False,
    cells=None,
    units="32,64,128,256",
    num_layers="1,2",
    learning_rate="1e-4,1e-2",
    dropout="0,0.1,0.2,0.3",
    bidirectional=None,
    option=(),
    seeds_per_trial=1,
    record=None,
    seed=None,
    executions_per_trial=1,
    max_consecutive_failed_trials=3,
    worker=False,
):
    """Every check of a search, then its tuner: returns the `Search`.

    The arguments are the options of `python -m tuning.search`, as text where
    they list choices (`search_space.from_text`): `recipe` (a name or a .toml
    path) with its `overrides` at `scale`; the search space (`cells`,
    `units`, ..., `option`, `param_budget`, `seeds_per_trial`:
    `RecurrentHyperModel`'s); the tuner (`make_tuner`'s); the project
    folder `directory/project_name` (default: RECIPE-SCALE) and the
    `record` folder. A `worker` of a distributed search joins the chief's
    project: it checks, restores and writes nothing there. `report(line)` is
    told of trials restored from the record and of the cell options no
    searched cell takes. A wrong option, project or record is a one-line
    `ValueError`.
    """
    from training.core import plots
    from training.tasks import recipes
    from tuning import search_space, tuner_files
    from tuning.hypermodels import RecurrentHyperModel

    plots.check_out_dir(directory, "--directory")  # a folder that can be written
    if record is not None and not worker:
        plots.check_out_dir(record, "--record")
    project_name = project_name or f"{Path(recipe).stem}-{scale}"
    resolved = recipes.resolve(recipe, scale, overrides)
    space = search_space.from_text(
        cells, units, num_layers, learning_rate, dropout, bidirectional, option
    )
    hypermodel = RecurrentHyperModel(
        resolved, param_budget=param_budget, seeds_per_trial=seeds_per_trial, **space
    )
    settings = records.search_settings(
        resolved, hypermodel, tuner, seed, executions_per_trial
    )
    project_dir = Path(directory) / project_name
    after_trial = None
    if not worker:  # a worker joins the chief's project
        records.check_project(directory, project_name, settings, overwrite)
        records.check_record(record, settings, overwrite)
        if not overwrite:  # what Keras Tuner reads back, before it does
            tuner_files.check_state(project_dir)
            tuner_files.check_state(Path(record or project_dir) / records.STATE)
        restored = 0 if overwrite else records.restore(project_dir, record, tuner)
        if restored:
            report(f"Restored {restored} trials' state from {record}.")

        def after_trial(instance):
            """Records the trials so far: a record to commit after each."""
            records.write_progress(instance, hypermodel, project_dir, finished=False)
            (project_dir / records.BEST_RECIPE).unlink(missing_ok=True)
            records.record(project_dir, record)

    hypermodel.check_budget_feasible()
    instance = make_tuner(
        hypermodel,
        tuner,
        max_trials,
        directory,
        project_name,
        overwrite=overwrite,
        seed=seed,
        executions_per_trial=executions_per_trial,
        max_consecutive_failed_trials=max_consecutive_failed_trials,
        after_trial=after_trial,
    )
    if not worker:
        project_dir.mkdir(parents=True, exist_ok=True)
        text = json.dumps(settings, indent=2) + "\n"
        (project_dir / records.SETTINGS).write_text(text)
    if hypermodel.dropped_options:
        dropped = ", ".join(hypermodel.dropped_options)
        report(f"Not searched (no searched cell takes them): {dropped}.")
    return Search(hypermodel, instance, project_dir, record, worker)


@dataclasses.dataclass
class Search:
    """A prepared search (`prepare`): its hypermodel, its tuner, the project
    folder, the record folder (or None) and whether this process is a worker."""

    hypermodel: object
    tuner: object
    project_dir: Path
    record: object
    worker: bool

    def run(self, verbose, command):
        """Searches (op determinism on); the chief then writes the summary, the
        best recipe (its `source` names `command`) and the record.

        Returns:
            `(lines, status)`: what to report, and the exit status: 1 when no
            trial completed or Keras Tuner stopped the search after
            consecutive failed trials, else 0. A `KeyboardInterrupt` leaves
            what the finished trials wrote, for the same command to resume.
        """
        import tensorflow as tf

        tf.config.experimental.enable_op_determinism()
        tuner, hypermodel, project_dir = self.tuner, self.hypermodel, self.project_dir
        stopped = None
        try:
            tuner.search(verbose=verbose)
        except RuntimeError as error:  # Keras Tuner's consecutive-failures stop
            if "consecutive failures" not in str(error):
                raise
            stopped = str(error).splitlines()[0]
        if self.worker:
            return [
                f"Tuner {tuner.tuner_id}: no trials left; the chief writes the summary."
            ], 0
        summary = records.write_progress(
            tuner, hypermodel, project_dir, finished=not stopped
        )
        lines = [
            f"\nSearch {project_dir}: {len(tuner.oracle.trials)} trials\n",
            summary,
        ]
        best = records.best_recipe(tuner, hypermodel, command)
        if stopped:
            lines.append(f"\nSearch stopped: {stopped}.")
        if best is None:
            (project_dir / records.BEST_RECIPE).unlink(missing_ok=True)
        else:
            path = write_recipe(best[1], project_dir / records.BEST_RECIPE)
        records.record(project_dir, self.record)
        if self.record:
            lines.append(f"Record: {self.record}")
        if best is None:
            lines.append("No trial completed, so there is no best recipe.")
            return lines, 1
        trial, recipe = best
        objective = tuner.oracle.objective.name
        lines += [
            f"\nBest trial {trial.trial_id}: {objective} {trial.score:.4f}, "
            f"{recipe.model.cell} with units={recipe.model.units}, "
            f"{hypermodel.count_parameters(recipe):,} parameters.",
            f"Best recipe: {path}",
            f"Train it: python -m training.train {path} --scale {recipe.scale} "
            f"--run-dir {project_dir / 'best_run'}",
        ]
        return lines, 1 if stopped else 0
