"""Runs a paper's table over seeds and writes it beside the paper's numbers.

    python -m training.reproduce TABLE [--seeds N] [--jobs J] [--only ROW ...]
        [--out DIR] [--results DIR] [--threads T] [--shard I/N]
        [--aggregate-only] [--backend tensorflow|jax]
    python -m training.reproduce --report [FILE] [--results DIR]
    python -m training.reproduce --backfill [--results DIR]

Every row x seed is an ordinary `python -m training.train` run in
`OUT/runs/ROW/seed-N` (so `training.evaluate` and `training.export` work on
each), its output in `train.log` there. Interrupted runs resume, so the same
command continues a killed sweep. `--jobs J` runs J trainings side by side
with `--threads` threads each (default 1). With `--shard I/N`, N processes
sharing one `--out` (on one machine or on several over a shared file system)
each take every N-th run; a run is locked while it trains, so two processes
never train the same run, and whoever finds every run finished writes
`OUT/TABLE.md` and `OUT/TABLE.json` once (shards finishing together take
turns under a lock; or run `--aggregate-only` at the end).

Each finished run's record (`training.results`: recipe, metrics, per-epoch
log, timing and machine; no weights) is copied to `RESULTS/TABLE/ROW/seed-N`
(`--results`, default `results`: run from the repository root, whose
`results/` is committed). A run with a record is not trained again, on this
machine or on another that has the record; a run whose recipe another table
has recorded gets a copy of that record. The table is made from the records:
every row with every recorded seed, whatever `--only` and `--seeds` select.
A finished run in OUT that cannot be read (metrics.json, timing.json or
best.keras) is named in one line, set aside (`NAME.damaged`) and trained
again; with `--aggregate-only` it is left out of the table.

`--backend jax` (default: `KERAS_BACKEND`, else TensorFlow) trains every
run on Keras's JAX backend (`KERAS_BACKEND` of the `training.train`
processes; each run's metrics.json and host.json record it). Records of one
backend are kept apart from the other's: the defaults for JAX are
`--out reproduction/jax/TABLE` and `--results results/jax`, and a results
folder holding the other backend's records of the table is refused.

`--report` regenerates the table sections of FILE (default REPRODUCTION.md)
from the records (`training.results.update_document`); the rest of FILE is
left as it is. `--backfill` adds to the records from before a metric existed
the metrics their recipe and recorded metrics determine (`training.backfill`:
the Dyck generator's floor and each model's excess over it).
"""

import argparse
import dataclasses
import fcntl
import os
import sys
import textwrap
import time
from pathlib import Path

from training import backends, command_line, recipe_files

AGGREGATE_LOCK = ".aggregate.lock"


def _shard(text):
    index, sep, count = text.partition("/")
    if not (sep and index.isdigit() and count.isdigit() and int(count) > 0):
        raise argparse.ArgumentTypeError(f"expected I/N such as 0/2, received {text!r}")
    return int(index), int(count)


def _check_writable(path, option):
    """A folder that is (or can be made) writable, or a one-line `TableError`."""
    from training import table_schema

    path = Path(path)
    if path.exists() and not path.is_dir():
        raise table_schema.TableError(
            f"{option} {str(path)!r} is a file; expected a directory."
        )
    existing = next(
        p for p in (path.absolute(), *path.absolute().parents) if p.exists()
    )
    if not existing.is_dir():
        raise table_schema.TableError(
            f"{option} {str(path)!r} cannot be made: {str(existing)!r} is a file; "
            "expected a directory path."
        )
    if not os.access(existing, os.W_OK | os.X_OK):
        raise table_schema.TableError(
            f"{option} {str(path)!r} cannot be written ({str(existing)!r} is not "
            "writable); expected a writable directory."
        )


@dataclasses.dataclass
class _Sweep:
    """What a reproduce command will do, found before anything is written."""

    table: object  # a training.table_schema.Table
    out: Path
    results: Path
    seeds: int
    planned: list
    mine: list
    candidates: list  # runs without a record: planned, then finished others
    recorded: set
    notes: list
    backend: str = "tensorflow"


def _prepare(args):
    """Every check of a reproduce command, writing nothing."""
    from training import results, runs, table_runs, table_schema

    for name in ("jobs", "threads"):
        if getattr(args, name) < 1:
            raise table_schema.TableError(
                f"--{name} must be >= 1; received {getattr(args, name)}."
            )
    if args.table is None:
        raise table_schema.TableError(
            "No table given; expected one of: "
            f"{', '.join(table_schema.available_tables())}, a path ending in "
            ".toml, or --report."
        )
    backend = args.backend or backends.requested()
    if backend not in backends.SUPPORTED:
        raise table_schema.TableError(
            f"Unknown backend {backend!r}; expected one of: "
            f"{', '.join(backends.SUPPORTED)}."
        )
    if not backends.is_installed(backend):
        raise table_schema.TableError(backends.missing_message(backend))
    table = table_schema.load_table(args.table)
    default_out = Path("reproduction") / table.name
    if backend != "tensorflow":
        default_out = Path("reproduction") / backend / table.name
    out = Path(args.out or default_out)
    _check_writable(out, "--out")
    if (out / "runs").exists() and not (out / "runs").is_dir():
        raise table_schema.TableError(
            f"--out {str(out)!r} holds a file named runs; expected the folder of "
            "the run directories there (or another --out)."
        )
    results_dir = Path(args.results or results.default_results(backend))
    _check_writable(results_dir, "--results")
    seeds = table.seeds if args.seeds is None else args.seeds
    planned = table_schema.plan(table, out, seeds, args.only)
    mine = table_schema.shard(planned, *args.shard)
    found = results.read_table_records(results_dir, table)
    results.check_backend(found, backend, results_dir)
    recorded = {(result["row"], result["seed"]) for result in found}
    discovered, notes = table_runs.discover(table, out, planned)
    candidates = [
        run for run in planned + discovered if table_runs.run_key(run) not in recorded
    ]
    index = results.RecordIndex(results_dir, backend)
    for run in candidates:
        table_runs.check_run_backend(run, backend)
        finished = table_runs.finished(run) and table_runs.same_recipe(run)
        if not finished and index.find(run.recipe) is None:
            runs.check_run_dir(
                run.run_dir,
                run.recipe,
                advice=f"the recipe row {run.row.name!r} asks for: use another "
                "--out, or remove that run directory to redo it",
            )
    if args.aggregate_only and not recorded:
        usable = [
            run
            for run in candidates
            if index.find(run.recipe) is not None
            or (
                table_runs.finished(run)
                and table_runs.same_recipe(run)
                and table_runs.damage(run) is None
            )
        ]
        if not usable:
            raise table_runs.nothing_to_aggregate(table, results_dir, out)
    return _Sweep(
        table,
        out,
        results_dir,
        seeds,
        planned,
        mine,
        candidates,
        recorded,
        notes,
        backend,
    )


def _record_available(sweep, retrain, report=print):
    """Records what is finished in OUT or recorded by another table."""
    from training import results, table_runs

    index = results.RecordIndex(sweep.results, sweep.backend)
    for run in sweep.candidates:
        if table_runs.finished(run) and table_runs.same_recipe(run):
            if table_runs.record_finished(
                sweep.table, run, sweep.results, retrain, report
            ):
                sweep.recorded.add(table_runs.run_key(run))
                continue
        source = index.find(run.recipe)
        if source is not None:
            results.copy_record(
                source,
                table_runs.record_folder(sweep.results, sweep.table, run),
                sweep.results,
            )
            sweep.recorded.add(table_runs.run_key(run))
            origin = source.relative_to(sweep.results).as_posix()
            report(f"{run.row.name} seed {run.seed}: same recipe as {origin}, copied")


def _sweep(args, sweep, started):
    """Trains what is missing and writes the table; returns the exit status."""
    from training import results, table_runs

    table, out = sweep.table, sweep.out
    for note in sweep.notes:
        print(note)
    _record_available(sweep, retrain=not args.aggregate_only)
    failed = []
    if not args.aggregate_only:
        pending = [
            run for run in sweep.mine if table_runs.run_key(run) not in sweep.recorded
        ]
        print(
            f"{table.name}: {len(sweep.planned)} runs ({len(sweep.mine)} in this "
            f"shard), {len(sweep.mine) - len(pending)} finished, {len(pending)} to "
            f"train, {args.jobs} at a time"
        )
        failed = table_runs.execute(
            table,
            pending,
            args.jobs,
            args.threads,
            sweep.results,
            backend=sweep.backend,
        )
        if failed:
            print(f"{len(failed)} runs failed; rerun the same command to retry them")
    missing = [
        run
        for run in sweep.planned
        if not table_runs.record_folder(sweep.results, table, run).is_dir()
    ]
    if missing and not args.aggregate_only:
        print(
            f"{len(missing)} of {len(sweep.planned)} runs not finished yet; the "
            "table is written when all are (or with --aggregate-only)"
        )
        return 1 if failed else 0
    if not results.read_table_records(sweep.results, table):
        raise table_runs.nothing_to_aggregate(
            table, sweep.results, out
        )  # nothing written
    out.mkdir(parents=True, exist_ok=True)
    # Shards that finish together take turns; one that finds the aggregate
    # written since it started leaves it (the other saw every run finished).
    with open(out / AGGREGATE_LOCK, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        written = out / f"{table.name}.json"
        if not args.aggregate_only and written.exists():
            if written.stat().st_mtime >= started:
                print(f"{written} already written by another shard")
                return 0
        _, text = table_runs.aggregate(table, sweep.results, out, sweep.seeds)
    print(text)
    print(f"written: {out / (table.name + '.md')}, {out / (table.name + '.json')}")
    return 0


def regenerate(document, results_dir):
    """Regenerates the table sections of `document` from `results_dir`.

    Returns:
        The names of the tables regenerated and whether the file changed.
    """
    from training import results, table_schema
    from training.callbacks import write_atomically

    path = Path(document)
    if not path.is_file():
        raise table_schema.TableError(
            f"--report {str(path)!r} is not a file; expected the Markdown document "
            "whose table sections to regenerate (REPRODUCTION.md)."
        )
    if not Path(results_dir).is_dir():
        raise table_schema.TableError(
            f"--results {str(results_dir)!r} is not a directory; expected the run "
            "records (results/ in the repository root)."
        )
    text = path.read_text()
    updated, names = results.update_document(text, results_dir, name=str(path))
    if updated != text:
        write_atomically(path, updated)
    return names, updated != text


EXAMPLES = (
    (
        "python -m training.reproduce mm_dyck --seeds 3 --jobs 2",
        "the table mm_dyck over 3 seeds, two trainings at a time",
    ),
    (
        "python -m training.reproduce --report",
        "REPRODUCTION.md's table sections again from the records in results/",
    ),
)


def main(argv=None):
    parser = command_line.parser(
        "python -m training.reproduce",
        __doc__,
        EXAMPLES,
        notes=textwrap.fill(
            "tables (training/tables/NAME.toml): "
            + ", ".join(recipe_files.available(recipe_files.TABLE_DIR)),
            79,
            subsequent_indent="  ",
        ),
    )
    parser.add_argument(
        "table", nargs="?", help="a table in training/tables or a .toml path"
    )
    parser.add_argument("--seeds", type=int, default=None)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--only", action="append", default=[], metavar="ROW")
    parser.add_argument("--out", default=None)
    parser.add_argument(
        "--results",
        default=None,
        help="the run records (default: results, the repository's from its root; "
        "results/jax for --backend jax)",
    )
    parser.add_argument(
        "--backend",
        choices=backends.SUPPORTED,
        default=None,
        help="the Keras backend the runs train on (default: KERAS_BACKEND, else "
        "tensorflow)",
    )
    parser.add_argument("--shard", type=_shard, default=(0, 1), metavar="I/N")
    parser.add_argument("--aggregate-only", action="store_true")
    parser.add_argument(
        "--report",
        nargs="?",
        const="REPRODUCTION.md",
        default=None,
        metavar="FILE",
        help="regenerate FILE's table sections (default REPRODUCTION.md) from "
        "the records",
    )
    parser.add_argument(
        "--backfill",
        action="store_true",
        help="add the metrics a record's recipe and metrics determine (the Dyck "
        "oracle) to the records that lack them",
    )
    args = parser.parse_args(argv)
    started = time.time()
    if args.table is not None and args.report is None and not args.backfill:
        try:  # an unknown table is refused before Keras is imported (seconds)
            recipe_files.find(args.table, recipe_files.TABLE_DIR, "table", ValueError)
        except ValueError as error:
            parser.exit(2, f"{parser.prog}: error: {error}\n")
    command_line.start_tensorflow()
    from training import backfill, recipes, results, runs, table_schema

    try:
        if args.backfill:
            if args.table is not None or args.report is not None:
                raise table_schema.TableError(
                    "--backfill changes the records only; expected no TABLE and "
                    "no --report."
                )
            args.results = args.results or results.default_results("tensorflow")
            changed = backfill.backfill(args.results)
            print(f"{args.results}: {len(changed)} records backfilled")
            return 0
        if args.report is not None:
            if args.table is not None:
                raise table_schema.TableError(
                    "--report regenerates every table section of its file; "
                    f"expected no TABLE, received {args.table!r}."
                )
            args.results = args.results or results.default_results("tensorflow")
            names, changed = regenerate(args.report, args.results)
            state = "changed" if changed else "unchanged"
            print(
                f"{args.report}: {len(names)} table sections from "
                f"{args.results} ({state}): {', '.join(names) or 'none'}"
            )
            return 0
        sweep = _prepare(args)
        return _sweep(args, sweep, started)
    except KeyboardInterrupt:  # each run keeps its backup; records are whole
        parser.exit(
            130,
            f"{parser.prog}: interrupted; the same command resumes the table "
            "(finished runs are kept)\n",
        )
    except (table_schema.TableError, recipes.RecipeError, runs.RunError) as error:
        parser.exit(2, f"{parser.prog}: error: {error}\n")
    except OSError as error:
        parser.exit(
            2,
            f"{parser.prog}: error: cannot write ({error}); expected writable "
            "--out and --results directories.\n",
        )


if __name__ == "__main__":
    sys.exit(main())
