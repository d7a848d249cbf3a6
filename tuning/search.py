"""Searches a recipe's architecture with Keras Tuner.

    python -m tuning.search --recipe NAME [section.key=value ...]
        [--tuner random|bayesian|hyperband] [--max-trials N] [--param-budget P]
        [--directory DIR] [--project-name NAME] [--overwrite] [--scale small|paper]
        [--cells a,b] [--units 32,64] [--num-layers 1,2] [--learning-rate LOW,HIGH]
        [--dropout 0,0.2] [--bidirectional false,true] [--option NAME=V1,V2 ...]
        [--seeds-per-trial N] [--record FOLDER]

The library behind it: `tuning.tuners` (resuming, distributed searches) and
`tuning.search_records` (the summary, trials, best recipe and record).
"""

import sys

from training.cli import command_line
from training.core import recipe_files
from tuning import tuners

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
    add = parser.add_argument
    add("--recipe", required=True, help="recipe name or .toml path")
    add("overrides", nargs="*", metavar="section.key=value")
    add("--scale", default="small", choices=recipe_files.SCALES)
    add("--tuner", default="random", choices=tuners.TUNER_NAMES)
    add("--max-trials", type=int, default=10)
    add(
        "--param-budget",
        type=int,
        help="derive the hidden size so every model has P parameters (within 5%%)",
    )
    add("--directory", default="runs/tuning")
    add("--project-name", help="default: RECIPE-SCALE")
    add("--overwrite", action="store_true", help="start afresh")
    add("--cells", help="default: the recipe's cell")
    add("--units", default="32,64,128,256")
    add("--num-layers", default="1,2")
    add("--learning-rate", default="1e-4,1e-2", help="LOW,HIGH or LR")
    add("--dropout", default="0,0.1,0.2,0.3")
    add(
        "--bidirectional",
        help="false, true or false,true (taggers and classifiers; default: the "
        "recipe's model.bidirectional)",
    )
    add(
        "--option",
        action="append",
        default=[],
        metavar="NAME=V1,V2",
        help="a cell option to search (default: num_choices=2,4,8, num_cells=2,3,4, "
        "stack_depth=8,16,32,64 for the cells that take them), or with a dot a "
        "recipe key section.key",
    )
    add(
        "--seeds-per-trial",
        type=int,
        default=1,
        help="models per trial, on seeds train.seed, train.seed + 1, ...; the trial "
        "scores their mean",
    )
    add(
        "--record",
        metavar="FOLDER",
        help="copy the summary, trials.json, best recipe and settings there",
    )
    add("--seed", type=int, help="default: train.seed")
    add("--executions-per-trial", type=int, default=1)
    add("--max-consecutive-failed-trials", type=int, default=3)
    add("--verbose", type=int, choices=(0, 1, 2))
    return parser


def main(argv=None):
    parser = build_parser()
    args = parser.parse_intermixed_args(argv)  # overrides may follow options
    worker = tuners.is_worker()
    if worker and args.overwrite:
        joins = "(KERASTUNER_TUNER_ID without 'chief') joins the chief's search"
        error = f"--overwrite is for the chief; a worker {joins}."
        parser.exit(2, f"{parser.prog}: error: {error}\n")
    options = {name: value for name, value in vars(args).items() if name != "verbose"}
    try:  # an unknown recipe is refused before Keras is imported (seconds)
        recipe_files.find(args.recipe, recipe_files.RECIPE_DIR, "recipe", ValueError)
        command_line.start_tensorflow()
        search = tuners.prepare(**options, worker=worker, report=print)
    except (ValueError, OSError) as error:
        parser.exit(2, f"{parser.prog}: error: {error}\n")
    command = " ".join(["python -m tuning.search", *(argv or sys.argv[1:])])
    default = 1 if sys.stdout.isatty() else 2  # a bar, or one line per epoch
    verbose = default if args.verbose is None else args.verbose
    try:
        lines, status = search.run(verbose, command)
    except KeyboardInterrupt:
        resume = f"the same command resumes the search in {search.project_dir}"
        if args.record:
            resume += f" (or, elsewhere, from the record {args.record})"
        print(f"\nInterrupted; {resume}.")
        return 130
    print("\n".join(lines))
    return status


if __name__ == "__main__":
    sys.exit(command_line.run(main))
