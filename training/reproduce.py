"""Runs a paper's table over seeds and writes it beside the paper's numbers.

    python -m training.reproduce TABLE [--seeds N] [--jobs J] [--only ROW ...]
        [--out DIR] [--results DIR] [--threads T] [--shard I/N]
        [--aggregate-only] [--backend tensorflow|jax]
    python -m training.reproduce --report [FILE] [--results DIR]
    python -m training.reproduce --backfill [--results DIR]

Every row x seed is a `python -m training.train` run, recorded in RESULTS; the
same command resumes a killed sweep. Behind it, in `training.reproduction`:
`table_sweep` (how runs are shared, recorded, set aside and kept apart by
backend), `summary_page` and `records.report_document` (--report), `backfill`.
"""

import sys
import time

from training.cli import command_line
from training.core import backends, recipe_files

EXAMPLES = (
    (
        "python -m training.reproduce mm_dyck --seeds 3 --jobs 2",
        "the table mm_dyck over 3 seeds, two trainings at a time",
    ),
    (
        "python -m training.reproduce --report",
        "REPRODUCTION.md, docs/reproduction/ and the figures from results/",
    ),
)


def main(argv=None):
    prog, notes = "python -m training.reproduce", command_line.table_list()
    parser = command_line.parser(prog, __doc__, EXAMPLES, notes=notes)
    add = parser.add_argument
    add("table", nargs="?", help="a table in training/tables or a .toml path")
    add("--seeds", type=int)
    add("--jobs", type=int, default=1)
    add("--threads", type=int, default=1)
    add("--only", action="append", default=[], metavar="ROW")
    add("--out")
    add(
        "--results",
        help="the run records (default: results, the repository's from its root; "
        "results/jax for --backend jax)",
    )
    add(
        "--backend",
        choices=backends.SUPPORTED,
        help="the Keras backend the runs train on (default: KERAS_BACKEND, else "
        "tensorflow)",
    )
    add("--shard", type=command_line.shard, default=(0, 1), metavar="I/N")
    add("--aggregate-only", action="store_true")
    add(
        "--report",
        nargs="?",
        const="",
        metavar="FILE",
        help="REPRODUCTION.md, its pages and figures again; FILE: its sections",
    )
    add(
        "--backfill",
        action="store_true",
        help="add the metrics a record's recipe and metrics determine (the Dyck "
        "oracle) to the records that lack them",
    )
    args = parser.parse_args(argv)
    started = time.time()
    try:  # refused before Keras is imported (seconds)
        if args.backfill and (args.table is not None or args.report is not None):
            raise ValueError(
                "--backfill changes the records only; expected no TABLE and no "
                "--report."
            )
        if args.report is not None and args.table is not None:
            raise ValueError(
                "--report regenerates every table section of its file; expected "
                f"no TABLE, received {args.table!r}."
            )
        if args.table is not None:
            recipe_files.find(args.table, recipe_files.TABLE_DIR, "table", ValueError)
    except ValueError as error:
        parser.exit(2, f"{prog}: error: {error}\n")
    command_line.start_tensorflow()
    from training.reproduction import backfill, records, table_schema, table_sweep
    from training.reproduction import summary_page as summary
    from training.runs import runs
    from training.tasks import recipes

    results_dir = args.results or records.default_results("tensorflow")
    try:
        if args.backfill:
            changed = backfill.backfill(results_dir)
            print(f"{results_dir}: {len(changed)} records backfilled")
            return 0
        if args.report is not None:
            print(summary.report(args.report, results_dir))
            return 0
        options = ("out", "seeds", "only", "shard", "jobs", "threads", "backend")
        sweep = table_sweep.prepare(
            args.table,
            results_dir=args.results,
            aggregate_only=args.aggregate_only,
            **{name: getattr(args, name) for name in options},
        )
        return table_sweep.run(sweep, started, print)
    except KeyboardInterrupt:  # each run keeps its backup; records are whole
        resumes = "the same command resumes the table (finished runs are kept)"
        parser.exit(130, f"{prog}: interrupted; {resumes}\n")
    except (table_schema.TableError, recipes.RecipeError, runs.RunError) as error:
        parser.exit(2, f"{prog}: error: {error}\n")
    except OSError as error:
        expected = "expected writable --out and --results directories"
        parser.exit(2, f"{prog}: error: cannot write ({error}); {expected}.\n")


if __name__ == "__main__":
    sys.exit(command_line.run(main))
