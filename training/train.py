"""Trains a zoo model from a recipe with `model.fit`.

    python -m training.train [RECIPE] [section.key=value ...] [--scale small|paper]
        [--run-dir DIR] [--no-export]

With no arguments it runs the default recipe at small scale: the Dyck-RNN on
generated 4-bounded Dyck-2, printing the WCPA/LDPA table and exporting a
SavedModel. Running the same command again resumes an interrupted run from
its last finished epoch. The library function behind it is
`training.runs.train_run`.
"""

import argparse
import sys
from pathlib import Path

from training import fitting, recipes, runs
from training.saved_model import export_run, summary
from training.tasks import make_task

DEFAULT_RECIPE = "dyck2_dyck_rnn"


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m training.train", description=__doc__.splitlines()[0]
    )
    parser.add_argument("recipe", nargs="?", default=DEFAULT_RECIPE)
    parser.add_argument("overrides", nargs="*", metavar="section.key=value")
    parser.add_argument("--scale", default="small", choices=recipes.SCALES)
    parser.add_argument("--run-dir", default=None)
    parser.add_argument("--no-export", action="store_true")
    args = parser.parse_intermixed_args(argv)  # overrides may follow options
    run_dir = args.run_dir or f"runs/{args.recipe}-{args.scale}"
    try:
        return _train_and_export(args, run_dir)
    except KeyboardInterrupt:  # the backup of the last whole epoch stays
        parser.exit(
            130,
            f"{parser.prog}: interrupted; the same command resumes the run in "
            f"{run_dir}\n",
        )
    except (ValueError, OSError) as error:
        parser.exit(2, f"{parser.prog}: error: {error}\n")


def _train_and_export(args, run_dir):
    recipe = recipes.resolve(args.recipe, args.scale, args.overrides)
    verbose = 1 if sys.stdout.isatty() else 2  # a bar, or one line per epoch
    metrics = runs.train_run(recipe, run_dir, verbose=verbose)
    run_dir = Path(run_dir)
    if not fitting.is_chief(recipe["train"]):
        print("worker finished; the chief wrote the run directory")
        return 0
    task = make_task(recipe, vocabulary=runs.load_vocabulary(run_dir))
    for split in task.splits:
        print(task.report(metrics[split], split))
    jit = metrics[runs.JIT_COMPILE]
    print(f"XLA: {'on' if jit['used'] else 'off'} ({jit['reason']})")
    steps = metrics[runs.STEPS_PER_EXECUTION]
    print(f"steps per execution: {steps['used']} ({steps['reason']})")
    if metrics[runs.GROUPED_STEPS]["used"]:
        print(f"grouped steps: {metrics[runs.GROUPED_STEPS]['reason']}")
    backend = metrics[runs.BACKEND]
    if backend["name"] != "tensorflow":
        print(f"Keras backend: {backend['name']} {backend['version']}")
    print(f"run directory: {run_dir}")
    if not args.no_export:
        print(summary(export_run(run_dir, run_dir / "saved_model")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
