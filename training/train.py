"""Trains a zoo model from a recipe with `model.fit`.

    python -m training.train [RECIPE] [section.key=value ...] [--scale small|paper]
        [--run-dir DIR] [--no-export]

With no arguments it runs the default recipe at small scale: the Dyck-RNN on
generated 4-bounded Dyck-2, printing the WCPA/LDPA table and exporting a
SavedModel. Running the
same command again resumes an interrupted run from its last finished epoch.
"""

import argparse
import sys
from pathlib import Path

import keras
import tensorflow as tf

import zoo
from training import recipes, runs
from training.tasks import make_task

DEFAULT_RECIPE = "dyck2_dyck_rnn"


def optimizer_for(train, steps_per_epoch):
    learning_rate = train["learning_rate"]
    if train["final_learning_rate"] is not None:
        # Linear decay over the whole run (Krause et al. 2016).
        learning_rate = keras.optimizers.schedules.PolynomialDecay(
            learning_rate,
            decay_steps=max(1, train["epochs"] * steps_per_epoch),
            end_learning_rate=train["final_learning_rate"],
            power=1.0,
        )
    return keras.optimizers.Adam(learning_rate, global_clipnorm=train["clipnorm"])


def run_directory_callbacks(run_dir, monitor):
    """The callbacks that write into a run directory: backup, best model, logs."""
    return [
        keras.callbacks.BackupAndRestore(str(run_dir / "backup")),
        keras.callbacks.ModelCheckpoint(
            str(run_dir / runs.BEST), monitor=monitor, save_best_only=True
        ),
        keras.callbacks.CSVLogger(str(run_dir / "log.csv"), append=True),
        keras.callbacks.TensorBoard(str(run_dir / "tensorboard"), write_graph=False),
    ]


def schedule_callbacks(recipe, task):
    """The callbacks that steer training: stopping, learning rate, temperature."""
    train = recipe["train"]
    callbacks = [
        keras.callbacks.EarlyStopping(
            monitor=task.monitor, patience=train["early_stopping_patience"]
        ),
        keras.callbacks.TerminateOnNaN(),
        *task.callbacks(),
    ]
    if train["reduce_lr_patience"] is not None:
        if train["final_learning_rate"] is not None:
            raise recipes.RecipeError(
                "train.reduce_lr_patience and train.final_learning_rate both set; "
                "expected one learning-rate schedule."
            )
        callbacks.append(
            keras.callbacks.ReduceLROnPlateau(
                monitor=task.monitor,
                factor=train["reduce_lr_factor"],
                patience=train["reduce_lr_patience"],
            )
        )
    if train["temperature_factor"] is not None:
        from training.callbacks import TemperatureAnnealing

        callbacks.append(
            TemperatureAnnealing(train["temperature_factor"], train["temperature_min"])
        )
    return callbacks


def train(recipe, run_dir, verbose=None, extra_callbacks=()):
    """Trains `recipe` in `run_dir`; returns the metrics it writes.

    A run directory that already holds this recipe resumes from its backup;
    one that holds another recipe is an error.
    """
    if verbose is None:
        verbose = 1 if sys.stdout.isatty() else 2  # a bar, or one line per epoch
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    recipe_path = run_dir / runs.RECIPE
    if recipe_path.exists() and runs.read_json(recipe_path) != recipe:
        raise runs.RunError(
            f"Run directory {str(run_dir)!r} holds a different recipe; expected a "
            "new --run-dir or the same recipe and overrides."
        )
    runs.write_json(recipe_path, recipe)
    if not (run_dir / "backup").exists():  # a new or finished run starts afresh
        (run_dir / "log.csv").unlink(missing_ok=True)
    train_options = recipe["train"]
    keras.utils.set_random_seed(train_options["seed"])
    tf.config.experimental.enable_op_determinism()

    task = make_task(recipe)
    (run_dir / runs.VOCABULARY).write_text(task.vocabulary.to_json())
    train_data = task.train_data()
    steps = train_options["max_steps_per_epoch"]
    steps_per_epoch = int(train_data.cardinality()) if steps is None else steps
    if steps is not None:
        train_data = train_data.repeat()
    model = task.build_model()
    model.compile(
        optimizer=optimizer_for(train_options, steps_per_epoch),
        **task.compile_arguments(),
        jit_compile=zoo.default_jit_compile(),
    )
    model.fit(
        train_data,
        validation_data=task.validation_data(),
        epochs=train_options["epochs"],
        steps_per_epoch=steps,
        shuffle=False,  # the task's dataset shuffles, by epoch (see tasks.py)
        callbacks=[
            *run_directory_callbacks(run_dir, task.monitor),
            *schedule_callbacks(recipe, task),
            *extra_callbacks,
        ],
        verbose=verbose,
    )
    best = task.build_model(stateful=False)
    best.load_weights(run_dir / runs.BEST)
    metrics = {split: task.evaluate(best, split) for split in task.splits}
    runs.write_json(run_dir / runs.METRICS, metrics)
    return task, metrics


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m training.train", description=__doc__.splitlines()[0]
    )
    parser.add_argument("recipe", nargs="?", default=DEFAULT_RECIPE)
    parser.add_argument("overrides", nargs="*", metavar="section.key=value")
    parser.add_argument("--scale", default="small", choices=recipes.SCALES)
    parser.add_argument("--run-dir", default=None)
    parser.add_argument("--no-export", action="store_true")
    args = parser.parse_args(argv)
    try:
        recipe = recipes.resolve(args.recipe, args.scale, args.overrides)
        run_dir = Path(args.run_dir or f"runs/{args.recipe}-{args.scale}")
        task, metrics = train(recipe, run_dir)
    except (ValueError, FileNotFoundError) as error:
        parser.exit(2, f"{parser.prog}: error: {error}\n")
    for split, values in metrics.items():
        print(task.report(values, split))
    print(f"run directory: {run_dir}")
    if not args.no_export:
        from training.export import export_run

        path = export_run(run_dir, run_dir / "saved_model")
        print(f"SavedModel: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
