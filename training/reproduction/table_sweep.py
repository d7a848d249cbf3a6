"""A reproduction table's sweep: what `python -m training.reproduce TABLE` does.

`prepare` makes every check of a sweep before anything is written (the
options, the table, the folders, the records' backend, the run directories'
owners) and returns the `Sweep`; `run` records what is finished, trains what
is missing (`training.reproduction.table_runs`) and writes the table once every run is
recorded, reporting each step through a `report(line)` it is given.

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

Each finished run's record (`training.reproduction.records`: recipe, metrics, per-epoch
log, timing and machine; no weights) is copied to `RESULTS/TABLE/ROW/seed-N`
(`--results`, default `results`: run from the repository root, whose
`results/` is committed). A run with a record is not trained again, on this
machine or on another that has the record; a run whose recipe another table
has recorded gets a copy of that record. The table is made from the records:
every row with every recorded seed, whatever `--only` and `--seeds` select.
On TensorFlow the runs keep their compiled XLA programs in `OUT/xla-cache`
and load those an earlier run of OUT compiled, so the seeds after the
first skip most of their compiling (the same numbers bitwise; the folder
can be deleted at any time).
A finished run in OUT that cannot be read (metrics.json, timing.json or
best.keras) is named in one line, set aside (`NAME.damaged`) and trained
again; with `--aggregate-only` it is left out of the table.

`--backend jax` (default: `KERAS_BACKEND`, else TensorFlow) trains every
run on Keras's JAX backend (`KERAS_BACKEND` of the `training.train`
processes; each run's metrics.json and host.json record it). Records of one
backend are kept apart from the other's: the defaults for JAX are
`--out reproduction/jax/TABLE` and `--results results/jax`, and a results
folder holding the other backend's records of the table is refused.
"""

import dataclasses
import fcntl
import os
from pathlib import Path

from training.core import backends
from training.reproduction import records, table_runs, table_schema
from training.runs import runs

AGGREGATE_LOCK = ".aggregate.lock"
# The runs' compiled XLA programs, shared by every run of OUT
# (`training.core.compile_mode.xla_cache_flags`); deleting it costs only time.
XLA_CACHE = "xla-cache"


def check_writable(path, option):
    """A folder that is (or can be made) writable, or a one-line `TableError`."""
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
class Sweep:
    """What a reproduce command will do, found before anything is written."""

    table: object  # a training.reproduction.table_schema.Table
    out: Path
    results: Path
    seeds: int
    planned: list
    mine: list
    candidates: list  # runs without a record: planned, then finished others
    recorded: set
    notes: list
    backend: str = "tensorflow"
    jobs: int = 1
    threads: int = 1
    aggregate_only: bool = False


def prepare(
    table,
    out=None,
    results_dir=None,
    seeds=None,
    only=(),
    shard=(0, 1),
    jobs=1,
    threads=1,
    backend=None,
    aggregate_only=False,
):
    """Every check of a sweep of `table` (a name or a .toml path), writing
    nothing; returns the `Sweep`.

    The arguments are the options of `python -m training.reproduce`:
    `out` defaults to `reproduction/TABLE` (`reproduction/BACKEND/TABLE`
    off TensorFlow), `results_dir` to `records.default_results(backend)`,
    `seeds` to the table's, `backend` to `KERAS_BACKEND`'s; `only` names
    rows, `shard` is `(index, count)`. A wrong one is a one-line
    `TableError` (or `RunError`, a run directory another recipe owns).
    """
    for name, value in (("jobs", jobs), ("threads", threads)):
        if value < 1:
            raise table_schema.TableError(f"--{name} must be >= 1; received {value}.")
    if table is None:
        raise table_schema.TableError(
            "No table given; expected one of: "
            f"{', '.join(table_schema.available_tables())}, a path ending in "
            ".toml, or --report."
        )
    backend = backend or backends.requested()
    if backend not in backends.SUPPORTED:
        raise table_schema.TableError(
            f"Unknown backend {backend!r}; expected one of: "
            f"{', '.join(backends.SUPPORTED)}."
        )
    if not backends.is_installed(backend):
        raise table_schema.TableError(backends.missing_message(backend))
    table = table_schema.load_table(table)
    default_out = Path("reproduction") / table.name
    if backend != "tensorflow":
        default_out = Path("reproduction") / backend / table.name
    out = Path(out or default_out)
    check_writable(out, "--out")
    if (out / "runs").exists() and not (out / "runs").is_dir():
        raise table_schema.TableError(
            f"--out {str(out)!r} holds a file named runs; expected the folder of "
            "the run directories there (or another --out)."
        )
    results_dir = Path(results_dir or records.default_results(backend))
    check_writable(results_dir, "--results")
    seeds = table.seeds if seeds is None else seeds
    planned = table_schema.plan(table, out, seeds, only)
    mine = table_schema.shard(planned, *shard)
    found = records.read_table_records(results_dir, table)
    records.check_backend(found, backend, results_dir)
    recorded = {(result["row"], result["seed"]) for result in found}
    discovered, notes = table_runs.discover(table, out, planned)
    candidates = [
        run for run in planned + discovered if table_runs.run_key(run) not in recorded
    ]
    index = records.RecordIndex(results_dir, backend)
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
    if aggregate_only and not recorded:
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
    return Sweep(
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
        jobs,
        threads,
        aggregate_only,
    )


def record_available(sweep, retrain, report):
    """Records what is finished in OUT or recorded by another table."""
    index = records.RecordIndex(sweep.results, sweep.backend)
    for run in sweep.candidates:
        if table_runs.finished(run) and table_runs.same_recipe(run):
            if table_runs.record_finished(
                sweep.table, run, sweep.results, retrain, report
            ):
                sweep.recorded.add(table_runs.run_key(run))
                continue
        source = index.find(run.recipe)
        if source is not None:
            records.copy_record(
                source,
                table_runs.record_folder(sweep.results, sweep.table, run),
                sweep.results,
            )
            sweep.recorded.add(table_runs.run_key(run))
            origin = source.relative_to(sweep.results).as_posix()
            report(f"{run.row.name} seed {run.seed}: same recipe as {origin}, copied")


def run(sweep, started, report):
    """Records what is available, trains what is missing and writes the table
    (`OUT/TABLE.md` and `OUT/TABLE.json`) once every planned run is recorded,
    or with `aggregate_only` from the records there are; passes each line of
    progress to `report`. `started` is when the command began (`time.time()`):
    a table written since then by another shard is left as it is.

    Returns:
        The exit status: 1 if a run failed (the same command retries it), else 0.
    """
    table, out = sweep.table, sweep.out
    for note in sweep.notes:
        report(note)
    record_available(sweep, not sweep.aggregate_only, report)
    failed = []
    if not sweep.aggregate_only:
        pending = [
            run for run in sweep.mine if table_runs.run_key(run) not in sweep.recorded
        ]
        report(
            f"{table.name}: {len(sweep.planned)} runs ({len(sweep.mine)} in this "
            f"shard), {len(sweep.mine) - len(pending)} finished, {len(pending)} to "
            f"train, {sweep.jobs} at a time"
        )
        failed = table_runs.execute(
            table,
            pending,
            sweep.jobs,
            sweep.threads,
            sweep.results,
            report=report,
            backend=sweep.backend,
            xla_cache=out / XLA_CACHE,
        )
        if failed:
            report(f"{len(failed)} runs failed; rerun the same command to retry them")
    missing = [
        run
        for run in sweep.planned
        if not table_runs.record_folder(sweep.results, table, run).is_dir()
    ]
    if missing and not sweep.aggregate_only:
        report(
            f"{len(missing)} of {len(sweep.planned)} runs not finished yet; the "
            "table is written when all are (or with --aggregate-only)"
        )
        return 1 if failed else 0
    if not records.read_table_records(sweep.results, table):
        raise table_runs.nothing_to_aggregate(
            table, sweep.results, out
        )  # nothing written
    out.mkdir(parents=True, exist_ok=True)
    # Shards that finish together take turns; one that finds the aggregate
    # written since it started leaves it (the other saw every run finished).
    with open(out / AGGREGATE_LOCK, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        written = out / f"{table.name}.json"
        if not sweep.aggregate_only and written.exists():
            if written.stat().st_mtime >= started:
                report(f"{written} already written by another shard")
                return 0
        _, text = table_runs.aggregate(table, sweep.results, out, sweep.seeds)
    report(text)
    report(f"written: {out / (table.name + '.md')}, {out / (table.name + '.json')}")
    return 0
