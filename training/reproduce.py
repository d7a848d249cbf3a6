"""Runs a paper's table over seeds and writes it beside the paper's numbers.

    python -m training.reproduce TABLE [--seeds N] [--jobs J] [--only ROW ...]
        [--out DIR] [--results DIR] [--threads T] [--shard I/N]
        [--aggregate-only] [--backend tensorflow|jax]
    python -m training.reproduce --report [FILE] [--results DIR]

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
left as it is.
"""

import argparse
import contextlib
import dataclasses
import fcntl
import os
import subprocess
import sys
import time
import zipfile
from pathlib import Path

from training import backends, recipes, reproduction, results, runs
from training.callbacks import write_atomically

TIMING = results.TIMING
LOCK = ".lock"
AGGREGATE_LOCK = ".aggregate.lock"
LOG = "train.log"
DAMAGED = ".damaged"


def _finished(run):
    return (run.run_dir / runs.METRICS).is_file()


def _check_run_backend(run, backend):
    """A finished run in OUT trained on another backend is a one-line error."""
    if not _finished(run):
        return
    try:
        trained_on = results.backend_of(runs.read_json(run.run_dir / runs.METRICS))
    except (runs.RunError, OSError):
        return  # a damaged run is named and set aside where it is recorded
    if trained_on != backend:
        raise reproduction.TableError(
            f"Run directory {str(run.run_dir)!r} was trained on {trained_on}; "
            f"expected {backend} runs only in --out: use another --out for the "
            f"{backend} backend."
        )


def _key(run):
    return run.row.name, run.seed


def _same_recipe(run):
    """Whether the run directory holds the recipe the run asks for."""
    try:
        return runs.read_recipe(run.run_dir / runs.RECIPE) == run.recipe
    except (runs.RunError, OSError, AttributeError, TypeError):
        return False


def _read_timing(run):
    """The run's `timing.json`, or None when it is missing or not the runner's."""
    try:
        timing = runs.read_json(run.run_dir / TIMING)
    except (runs.RunError, OSError):
        return None
    seconds = timing.get("seconds") if isinstance(timing, dict) else None
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)):
        return None
    return timing


@contextlib.contextmanager
def _locked(run_dir):
    """Holds the run directory's lock; yields False if another process has it."""
    with open(Path(run_dir) / LOCK, "w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        yield True


def _settle(run, locked=False):
    """Counts the time of an attempt whose runner was killed.

    `timing.json` holds the seconds of finished attempts and, while one is
    under way, its start (wall clock). An attempt that never recorded its
    end counts until `metrics.json` was written, or else until the run
    directory's last change. A run another process is training (its
    directory locked) is left alone, and so is a timing file that cannot be
    read (`_damage` names it).
    """
    if not locked:
        with _locked(run.run_dir) as held:
            if held:
                _settle(run, locked=True)
        return
    timing = _read_timing(run)
    if timing is None or "started" not in timing:
        return
    if _finished(run):
        end = (run.run_dir / runs.METRICS).stat().st_mtime
    else:
        end = max(
            (item.stat().st_mtime for item in run.run_dir.rglob("*")),
            default=timing["started"],
        )
    runs.write_json(
        run.run_dir / TIMING,
        {
            "seconds": timing["seconds"] + max(0.0, end - timing["started"]),
            "attempts": timing.get("attempts", 1),
        },
    )


def _damage(run):
    """Why a finished run cannot be counted, in a few words; None if it can."""
    try:
        metrics = runs.read_json(run.run_dir / runs.METRICS)
    except (runs.RunError, OSError):
        return "metrics.json is not valid JSON"
    if not isinstance(metrics, dict) or not metrics:
        return "metrics.json holds no metrics"
    if (run.run_dir / TIMING).exists() and _read_timing(run) is None:
        return "timing.json is not the runner's timing"
    try:
        with zipfile.ZipFile(run.run_dir / runs.BEST) as archive:
            if archive.testzip() is not None:
                return "best.keras is damaged"
    except (OSError, zipfile.BadZipFile):
        return "best.keras is missing or not a .keras file"
    return None


def _set_aside(run):
    """Renames a damaged run's results to NAME.damaged, so it trains again."""
    for name in (runs.METRICS, TIMING, runs.BEST):
        path = run.run_dir / name
        if path.exists():
            os.replace(path, path.with_name(name + DAMAGED))


def _parameters(run):
    """The run's parameter count, from its saved model."""
    return int(runs.load_run(run.run_dir).model.count_params())


def _target(results_dir, table, run):
    return results.record_dir(results_dir, table.name, run.row.name, run.seed)


def _record(table, run, results_dir):
    """Records a finished run whose lock is held; why not, or None when done."""
    reason = _damage(run)
    if reason is None:
        try:
            parameters = _parameters(run)
        except (ValueError, OSError) as error:  # runs.RunError is a ValueError
            reason = f"its model cannot be loaded: {str(error).splitlines()[0]}"
    if reason is None:
        results.write_record(run.run_dir, _target(results_dir, table, run), parameters)
    return reason


def _record_finished(table, run, results_dir, retrain, report):
    """Records a run found finished in OUT; True when it is recorded.

    A damaged one is set aside to be trained again when `retrain`, else
    left as it is; either way one line says which.
    """
    name = f"{run.row.name} seed {run.seed}"
    with _locked(run.run_dir) as held:
        if not held:
            report(f"{name}: trained by another process")
            return False
        _settle(run, locked=True)
        reason = _record(table, run, results_dir)
        if reason is None:
            return True
        if retrain:
            _set_aside(run)
            report(f"{name}: damaged ({reason}); set aside, to be trained again")
        else:
            report(
                f"{name}: damaged ({reason}); left out of the table (run without "
                "--aggregate-only to train it again)"
            )
        return False


class _Job:
    """One training subprocess, holding the run directory's lock."""

    def __init__(self, run, threads, backend="tensorflow"):
        self.run = run
        run.run_dir.mkdir(parents=True, exist_ok=True)
        self.lock = open(run.run_dir / LOCK, "w")
        try:
            fcntl.flock(self.lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self.lock.close()
            raise
        environment = {
            **os.environ,
            "TF_NUM_INTRAOP_THREADS": str(threads),
            "TF_NUM_INTEROP_THREADS": str(threads),
            "OMP_NUM_THREADS": str(threads),
            "TF_CPP_MIN_LOG_LEVEL": os.environ.get("TF_CPP_MIN_LOG_LEVEL", "2"),
            "KERAS_BACKEND": backend,
        }
        self.log = open(run.run_dir / LOG, "a")
        _settle(run, locked=True)
        timing = _read_timing(run) or {"seconds": 0.0}
        self.seconds = timing["seconds"]
        self.attempts = timing.get("attempts", 0) + 1
        self.start = time.monotonic()
        runs.write_json(
            run.run_dir / TIMING,
            {
                "seconds": self.seconds,
                "attempts": self.attempts,
                "started": time.time(),
            },
        )
        runs.write_json(run.run_dir / results.HOST, results.host(backend))
        # The child inherits the locked file, so the lock outlives this
        # process if it is killed while the child trains on.
        self.process = subprocess.Popen(
            run.command(sys.executable),
            stdout=self.log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=environment,
            pass_fds=(self.lock.fileno(),),
        )

    def finish(self):
        """Records the time spent; True on success. The lock stays held."""
        runs.write_json(
            self.run.run_dir / TIMING,
            {
                "seconds": self.seconds + time.monotonic() - self.start,
                "attempts": self.attempts,
            },
        )
        self.log.close()
        return self.process.returncode == 0 and _finished(self.run)

    def release(self):
        self.lock.close()


def _line(table, run):
    metric = table.metrics[0]
    metrics = runs.read_json(run.run_dir / runs.METRICS)
    value = reproduction.metric_value(metrics, metric.key)
    shown = "missing" if value is None else f"{value * metric.factor:.4f}"
    timing = _read_timing(run)
    seconds = "" if timing is None else f" ({timing['seconds']:.0f} s)"
    return f"{run.row.name} seed {run.seed}: {metric.key} {shown}{seconds}"


def execute(
    table, pending, jobs, threads, results_dir, report=print, backend="tensorflow"
):
    """Trains `pending` runs, `jobs` at a time, recording each in `results_dir`.

    The runs train on the Keras `backend` (their `KERAS_BACKEND`).

    A run whose directory another process has locked is left to it.

    Returns:
        The runs that failed (or finished unreadable).
    """
    queue = list(pending)
    active, failed = [], []
    while queue or active:
        while queue and len(active) < jobs:
            run = queue.pop(0)
            if _finished(run):
                continue
            try:
                active.append(_Job(run, threads, backend))
            except BlockingIOError:
                report(f"{run.row.name} seed {run.seed}: trained by another process")
        time.sleep(0.2)
        for job in [job for job in active if job.process.poll() is not None]:
            active.remove(job)
            name = f"{job.run.row.name} seed {job.run.seed}"
            try:
                if not job.finish():
                    failed.append(job.run)
                    report(
                        f"{name}: failed (exit {job.process.returncode}); see "
                        f"{job.run.run_dir / LOG}"
                    )
                    continue
                reason = _record(table, job.run, results_dir)
                if reason is not None:
                    failed.append(job.run)
                    report(f"{name}: finished but not recorded ({reason})")
                    continue
            finally:
                job.release()
            report(_line(table, job.run))
    return failed


def aggregate(table, results_dir, out, seeds):
    """Writes OUT/TABLE.md and OUT/TABLE.json from the table's records.

    Every row with every recorded seed; `seeds` (0 .. seeds - 1) is what each
    row should have, the rest is listed as missing.

    Raises:
        TableError: no record at all (nothing to write), or a damaged one.
    """
    found = results.read_table_records(results_dir, table)
    if not found:
        raise _nothing_to_aggregate(table, results_dir, out)
    summary = reproduction.summarize(table, found, seeds)
    summary["runs"] = found
    out = Path(out)
    runs.write_json(out / f"{table.name}.json", summary)
    text = reproduction.markdown(table, summary)
    write_atomically(out / f"{table.name}.md", text)
    return summary, text


def _nothing_to_aggregate(table, results_dir, out):
    return reproduction.TableError(
        f"Nothing to aggregate: table {table.name!r} has no record in "
        f"{str(Path(results_dir) / table.name)!r} and no finished run in "
        f"{str(Path(out) / 'runs')!r}; expected trained runs (run it without "
        "--aggregate-only first)."
    )


def _shard(text):
    index, sep, count = text.partition("/")
    if not (sep and index.isdigit() and count.isdigit() and int(count) > 0):
        raise argparse.ArgumentTypeError(f"expected I/N such as 0/2, received {text!r}")
    return int(index), int(count)


def _check_writable(path, option):
    """A folder that is (or can be made) writable, or a one-line `TableError`."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise reproduction.TableError(
            f"{option} {str(path)!r} is a file; expected a directory."
        )
    existing = next(
        p for p in (path.absolute(), *path.absolute().parents) if p.exists()
    )
    if not existing.is_dir():
        raise reproduction.TableError(
            f"{option} {str(path)!r} cannot be made: {str(existing)!r} is a file; "
            "expected a directory path."
        )
    if not os.access(existing, os.W_OK | os.X_OK):
        raise reproduction.TableError(
            f"{option} {str(path)!r} cannot be written ({str(existing)!r} is not "
            "writable); expected a writable directory."
        )


def _discover(table, out, planned):
    """Finished runs in OUT of the table's rows that `planned` leaves out.

    Returns the runs whose directory holds the recipe their row asks for, and
    a line for each that holds another.
    """
    keys = {_key(run) for run in planned}
    found, notes = [], []
    for row in table.rows:
        folder = Path(out) / "runs" / row.name
        if not folder.is_dir():
            continue
        for run_dir in sorted(folder.iterdir()):
            match = results.SEED_FOLDER.fullmatch(run_dir.name)
            if not match or (row.name, int(match.group(1))) in keys:
                continue
            if not (run_dir / runs.METRICS).is_file():
                continue
            run = reproduction.make_run(table, row, int(match.group(1)), out)
            if _same_recipe(run):
                found.append(run)
            else:
                notes.append(
                    f"{run_dir}: holds another recipe than row {row.name!r} now "
                    "asks for; not counted"
                )
    return found, notes


@dataclasses.dataclass
class _Sweep:
    """What a reproduce command will do, found before anything is written."""

    table: reproduction.Table
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
    for name in ("jobs", "threads"):
        if getattr(args, name) < 1:
            raise reproduction.TableError(
                f"--{name} must be >= 1; received {getattr(args, name)}."
            )
    if args.table is None:
        raise reproduction.TableError(
            "No table given; expected one of: "
            f"{', '.join(reproduction.available_tables())}, a path ending in "
            ".toml, or --report."
        )
    backend = args.backend or backends.requested()
    if backend not in backends.SUPPORTED:
        raise reproduction.TableError(
            f"Unknown backend {backend!r}; expected one of: "
            f"{', '.join(backends.SUPPORTED)}."
        )
    if not backends.is_installed(backend):
        raise reproduction.TableError(backends.missing_message(backend))
    table = reproduction.load_table(args.table)
    default_out = Path("reproduction") / table.name
    if backend != "tensorflow":
        default_out = Path("reproduction") / backend / table.name
    out = Path(args.out or default_out)
    _check_writable(out, "--out")
    if (out / "runs").exists() and not (out / "runs").is_dir():
        raise reproduction.TableError(
            f"--out {str(out)!r} holds a file named runs; expected the folder of "
            "the run directories there (or another --out)."
        )
    results_dir = Path(args.results or results.default_results(backend))
    _check_writable(results_dir, "--results")
    seeds = table.seeds if args.seeds is None else args.seeds
    planned = reproduction.plan(table, out, seeds, args.only)
    mine = reproduction.shard(planned, *args.shard)
    found = results.read_table_records(results_dir, table)
    results.check_backend(found, backend, results_dir)
    recorded = {(result["row"], result["seed"]) for result in found}
    discovered, notes = _discover(table, out, planned)
    candidates = [run for run in planned + discovered if _key(run) not in recorded]
    index = results.RecordIndex(results_dir, backend)
    for run in candidates:
        _check_run_backend(run, backend)
        finished = _finished(run) and _same_recipe(run)
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
            or (_finished(run) and _same_recipe(run) and _damage(run) is None)
        ]
        if not usable:
            raise _nothing_to_aggregate(table, results_dir, out)
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
    index = results.RecordIndex(sweep.results, sweep.backend)
    for run in sweep.candidates:
        if _finished(run) and _same_recipe(run):
            if _record_finished(sweep.table, run, sweep.results, retrain, report):
                sweep.recorded.add(_key(run))
                continue
        source = index.find(run.recipe)
        if source is not None:
            results.copy_record(
                source, _target(sweep.results, sweep.table, run), sweep.results
            )
            sweep.recorded.add(_key(run))
            origin = source.relative_to(sweep.results).as_posix()
            report(f"{run.row.name} seed {run.seed}: same recipe as {origin}, copied")


def _sweep(args, sweep, started):
    """Trains what is missing and writes the table; returns the exit status."""
    table, out = sweep.table, sweep.out
    for note in sweep.notes:
        print(note)
    _record_available(sweep, retrain=not args.aggregate_only)
    failed = []
    if not args.aggregate_only:
        pending = [run for run in sweep.mine if _key(run) not in sweep.recorded]
        print(
            f"{table.name}: {len(sweep.planned)} runs ({len(sweep.mine)} in this "
            f"shard), {len(sweep.mine) - len(pending)} finished, {len(pending)} to "
            f"train, {args.jobs} at a time"
        )
        failed = execute(
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
        run for run in sweep.planned if not _target(sweep.results, table, run).is_dir()
    ]
    if missing and not args.aggregate_only:
        print(
            f"{len(missing)} of {len(sweep.planned)} runs not finished yet; the "
            "table is written when all are (or with --aggregate-only)"
        )
        return 1 if failed else 0
    if not results.read_table_records(sweep.results, table):
        raise _nothing_to_aggregate(table, sweep.results, out)  # nothing written
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
        _, text = aggregate(table, sweep.results, out, sweep.seeds)
    print(text)
    print(f"written: {out / (table.name + '.md')}, {out / (table.name + '.json')}")
    return 0


def regenerate(document, results_dir):
    """Regenerates the table sections of `document` from `results_dir`.

    Returns:
        The names of the tables regenerated and whether the file changed.
    """
    path = Path(document)
    if not path.is_file():
        raise reproduction.TableError(
            f"--report {str(path)!r} is not a file; expected the Markdown document "
            "whose table sections to regenerate (REPRODUCTION.md)."
        )
    if not Path(results_dir).is_dir():
        raise reproduction.TableError(
            f"--results {str(results_dir)!r} is not a directory; expected the run "
            "records (results/ in the repository root)."
        )
    text = path.read_text()
    updated, names = results.update_document(text, results_dir, name=str(path))
    if updated != text:
        write_atomically(path, updated)
    return names, updated != text


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m training.reproduce", description=__doc__.splitlines()[0]
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
    args = parser.parse_args(argv)
    started = time.time()
    try:
        if args.report is not None:
            if args.table is not None:
                raise reproduction.TableError(
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
    except (reproduction.TableError, recipes.RecipeError, runs.RunError) as error:
        parser.exit(2, f"{parser.prog}: error: {error}\n")
    except OSError as error:
        parser.exit(
            2,
            f"{parser.prog}: error: cannot write ({error}); expected writable "
            "--out and --results directories.\n",
        )


if __name__ == "__main__":
    sys.exit(main())
