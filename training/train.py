"""Trains a zoo model from a recipe with `model.fit`.

    python -m training.train [RECIPE] [section.key=value ...] [--scale small|paper]
        [--run-dir DIR] [--no-export]

With no arguments it runs the default recipe at small scale: the Dyck-RNN on
generated 4-bounded Dyck-2, printing the WCPA/LDPA table and exporting a
SavedModel. Running the same command again resumes an interrupted run from
its last finished epoch. The library function behind it is
`training.runs.runs.train_run`.
"""

import sys
from pathlib import Path

from training.cli import command_line
from training.core import recipe_files

DEFAULT_RECIPE = "dyck2_dyck_rnn"
# How overrides are written; each example line is one that works with the
# default recipe (tests/training/cli/command_line_test.py resolves them).
OVERRIDES = """overrides:
  section.key=value sets one key of the recipe's task, model or train table
  (model.options.NAME=value a cell option). The value is read as JSON, else
  as text, and every key is checked before any data is made. For example:
    train.epochs=5 train.learning_rate=0.05
    task.m=6 model.units=6"""
EXAMPLES = (
    (
        "python -m training.train",
        f"the default recipe ({DEFAULT_RECIPE}) at small scale, into "
        f"runs/{DEFAULT_RECIPE}-small",
    ),
    (
        "python -m training.train dyck2_lstm task.m=6 train.epochs=5",
        "a recipe with two keys overridden",
    ),
    (
        "python -m training.train ptb_char_lstm --scale paper --run-dir runs/ptb",
        "the paper's sizes (the corpus is downloaded once: docs/data.md)",
    ),
)


def build_parser():
    parser = command_line.parser(
        "python -m training.train",
        __doc__,
        EXAMPLES,
        notes=f"{command_line.recipe_list(DEFAULT_RECIPE)}\n\n{OVERRIDES}",
    )
    parser.add_argument(
        "recipe",
        nargs="?",
        default=DEFAULT_RECIPE,
        help=f"a recipe listed below or a .toml file (default: {DEFAULT_RECIPE})",
    )
    parser.add_argument(
        "overrides",
        nargs="*",
        metavar="section.key=value",
        help="recipe keys to change (see overrides below)",
    )
    parser.add_argument(
        "--scale",
        default="small",
        choices=recipe_files.SCALES,
        help="small: minutes on 2 CPU cores (default); paper: the paper's sizes",
    )
    parser.add_argument("--run-dir", default=None, help="default: runs/RECIPE-SCALE")
    parser.add_argument(
        "--no-export", action="store_true", help="write no SavedModel at the end"
    )
    return parser


def main(argv=None):
    parser = build_parser()
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
    # An unknown recipe is refused before Keras is imported (seconds).
    recipe_files.find(args.recipe, recipe_files.RECIPE_DIR, "recipe", ValueError)
    command_line.start_tensorflow()
    from training.core import fitting
    from training.runs import evaluation, runs, saved_model
    from training.tasks import recipes

    recipe = recipes.resolve(args.recipe, args.scale, args.overrides)
    verbose = 1 if sys.stdout.isatty() else 2  # a bar, or one line per epoch
    metrics = runs.train_run(recipe, run_dir, verbose=verbose)
    if not fitting.is_chief(recipe.train):
        print("worker finished; the chief wrote the run directory")
        return 0
    run_dir = Path(run_dir)
    print("\n".join(evaluation.training_report(recipe, run_dir, metrics)))
    print(f"run directory: {run_dir}")
    if not args.no_export:
        path = saved_model.export_run(run_dir, run_dir / "saved_model")
        print(saved_model.summary(path))
    return 0


if __name__ == "__main__":
    sys.exit(command_line.run(main))
