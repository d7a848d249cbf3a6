"""Runs a tuning protocol: one search per row, with one search space and budget.

    python -m tuning.protocol NAME [section.key=value ...] [--rows a,b]
        [--max-trials N] [--seeds-per-trial S] [--directory DIR]
        [--record FOLDER] [--threads T] [--dry-run]

Each row's search runs in DIR/NAME/ROW and copies its record to
FOLDER/NAME/ROW after every trial; the rows run one after another, each a
`python -m tuning.search` process with `--threads` TensorFlow threads.
Running the same command again resumes. Recipe overrides after NAME apply to
every row (a smoke run: `train.epochs=1`); a resumed search must be given the
same ones. The protocols and how their rows run: `tuning.protocol_runs`.
"""

import functools
import shlex
import sys

from training.cli import command_line
from training.core import out_dirs
from tuning import protocol_runs

EXAMPLES = (
    (
        "python -m tuning.protocol stack_d2 --dry-run",
        "each row's python -m tuning.search command, run nothing",
    ),
    (
        "python -m tuning.protocol stack_d2 --rows lstm,gru train.epochs=1",
        "a smoke run of two rows, one epoch a trial",
    ),
)


def build_parser():
    parser = command_line.parser("python -m tuning.protocol", __doc__, EXAMPLES)
    parser.add_argument("name", choices=sorted(protocol_runs.PROTOCOLS))
    parser.add_argument("overrides", nargs="*", metavar="section.key=value")
    parser.add_argument("--rows", default=None, help="default: every row")
    parser.add_argument("--max-trials", type=int, default=None)
    parser.add_argument("--seeds-per-trial", type=int, default=None)
    parser.add_argument("--directory", default="runs/tuning")
    parser.add_argument("--record", default="results/tuning")
    parser.add_argument(
        "--threads", type=int, default=1, help="TensorFlow threads of each search"
    )
    parser.add_argument("--verbose", type=int, default=2, choices=(0, 1, 2))
    parser.add_argument(
        "--dry-run", action="store_true", help="print each row's command and stop"
    )
    return parser


def main(argv=None):
    parser = build_parser()
    args = parser.parse_intermixed_args(argv)
    rows = None if args.rows is None else args.rows.split(",")
    try:
        commands = protocol_runs.search_commands(
            args.name,
            rows,
            args.overrides,
            args.max_trials,
            args.seeds_per_trial,
            args.directory,
            args.record,
            args.verbose,
        )
    except ValueError as error:
        parser.exit(2, f"{parser.prog}: error: {error}\n")
    for option in ("threads", "max_trials", "seeds_per_trial"):
        value = getattr(args, option)
        if value is not None and value < 1:
            name = "--" + option.replace("_", "-")
            error = f"{name} must be >= 1; received {value}."
            parser.exit(2, f"{parser.prog}: error: {error}\n")
    try:  # before any search starts
        out_dirs.check_out_dir(args.directory, "--directory")
        out_dirs.check_out_dir(args.record, "--record")
    except ValueError as error:
        parser.exit(2, f"{parser.prog}: error: {error}\n")
    if args.dry_run:
        for arguments in commands.values():
            print(shlex.join(["python", "-m", "tuning.search", *arguments]))
        return 0
    report = functools.partial(print, flush=True)
    try:
        return protocol_runs.run_rows(
            args.name, commands, args.threads, args.record, report
        )
    except KeyboardInterrupt:  # before a row's search started
        parser.exit(130, f"{parser.prog}: interrupted; the same command resumes\n")


if __name__ == "__main__":
    sys.exit(command_line.run(main))
