"""Runs a paper's table over seeds and writes it beside the paper's numbers.

    python -m training.reproduce TABLE [--seeds N] [--jobs J] [--only ROW ...]
        [--out DIR] [--threads T] [--shard I/N] [--aggregate-only]

Every row x seed is an ordinary `python -m training.train` run in
`OUT/runs/ROW/seed-N` (so `training.evaluate` and `training.export` work on
each), its output in `train.log` there. Finished runs (with `metrics.json`)
are skipped and interrupted ones resume, so the same command continues a
killed sweep. `--jobs J` runs J trainings side by side with `--threads`
threads each (default 1). With `--shard I/N`, N processes sharing one
`--out` (on one machine or on several over a shared file system) each take
every N-th run; a run is locked while it trains, so two processes never train
the same run, and whoever finds every run finished writes `OUT/TABLE.md` and
`OUT/TABLE.json` once (shards finishing together take turns under a lock;
or run `--aggregate-only` at the end).
"""

import argparse
import fcntl
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from training import recipes, reproduction, runs

TIMING = "timing.json"
LOCK = ".lock"
AGGREGATE_LOCK = ".aggregate.lock"
LOG = "train.log"


def _write_json(path, value):
    """Writes `value` as JSON, atomically (a reader never sees half a file)."""
    temporary = Path(f"{path}.tmp-{os.getpid()}")
    temporary.write_text(json.dumps(value, indent=2, sort_keys=True) + "\n")
    os.replace(temporary, path)


def _check_existing(run):
    """A run directory made with another recipe cannot be reused."""
    recipe_path = run.run_dir / runs.RECIPE
    if run.run_dir.exists() and not run.run_dir.is_dir():
        raise reproduction.TableError(
            f"Run directory {str(run.run_dir)!r} is a file; expected a directory."
        )
    if recipe_path.is_file():
        try:
            saved = runs.read_recipe(recipe_path)
        except (ValueError, UnicodeDecodeError):
            raise reproduction.TableError(
                f"{str(recipe_path)!r} is not valid JSON; expected the recipe a "
                "run was trained with (remove that run directory to redo it)."
            ) from None
        if saved != run.recipe:
            raise reproduction.TableError(
                f"Run directory {str(run.run_dir)!r} holds a different recipe than "
                f"row {run.row.name!r} now asks for; expected another --out, or "
                "remove that run directory to redo it."
            )


def _finished(run):
    return (run.run_dir / runs.METRICS).is_file()


def _seconds(run):
    path = run.run_dir / TIMING
    return runs.read_json(path)["seconds"] if path.is_file() else None


def _settle(run, locked=False):
    """Counts the time of an attempt whose runner was killed.

    `timing.json` holds the seconds of finished attempts and, while one is
    under way, its start (wall clock). An attempt that never recorded its
    end counts until `metrics.json` was written, or else until the run
    directory's last change. A run another process is training (its
    directory locked) is left alone.
    """
    path = run.run_dir / TIMING
    if not path.is_file():
        return
    if not locked:
        with open(run.run_dir / LOCK, "w") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return
            return _settle(run, locked=True)
    timing = runs.read_json(path)
    if "started" not in timing:
        return
    if _finished(run):
        end = (run.run_dir / runs.METRICS).stat().st_mtime
    else:
        end = max(
            (item.stat().st_mtime for item in run.run_dir.rglob("*")),
            default=timing["started"],
        )
    _write_json(
        path,
        {
            "seconds": timing["seconds"] + max(0.0, end - timing["started"]),
            "attempts": timing["attempts"],
        },
    )


class _Job:
    """One training subprocess, holding the run directory's lock."""

    def __init__(self, run, threads):
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
        }
        self.log = open(run.run_dir / LOG, "a")
        _settle(run, locked=True)
        path = run.run_dir / TIMING
        timing = runs.read_json(path) if path.is_file() else {"seconds": 0.0}
        self.seconds = timing["seconds"]
        self.attempts = timing.get("attempts", 0) + 1
        self.start = time.monotonic()
        _write_json(
            path,
            {
                "seconds": self.seconds,
                "attempts": self.attempts,
                "started": time.time(),
            },
        )
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
        """Records the time spent and releases the lock; True on success."""
        _write_json(
            self.run.run_dir / TIMING,
            {
                "seconds": self.seconds + time.monotonic() - self.start,
                "attempts": self.attempts,
            },
        )
        self.log.close()
        self.lock.close()
        return self.process.returncode == 0 and _finished(self.run)


def _line(table, run):
    metric = table.metrics[0]
    metrics = runs.read_json(run.run_dir / runs.METRICS)
    value = reproduction.metric_value(metrics, metric.key)
    shown = "missing" if value is None else f"{value * metric.factor:.4f}"
    seconds = _seconds(run)
    timing = "" if seconds is None else f" ({seconds:.0f} s)"
    return f"{run.row.name} seed {run.seed}: {metric.key} {shown}{timing}"


def execute(table, pending, jobs, threads, report=print):
    """Trains `pending` runs, `jobs` at a time; returns the runs that failed.

    A run whose directory another process has locked is left to it.
    """
    queue = list(pending)
    active, failed = [], []
    while queue or active:
        while queue and len(active) < jobs:
            run = queue.pop(0)
            if _finished(run):
                continue
            try:
                active.append(_Job(run, threads))
            except BlockingIOError:
                report(f"{run.row.name} seed {run.seed}: trained by another process")
        time.sleep(0.2)
        for job in [job for job in active if job.process.poll() is not None]:
            active.remove(job)
            if job.finish():
                report(_line(table, job.run))
            else:
                failed.append(job.run)
                report(
                    f"{job.run.row.name} seed {job.run.seed}: failed (exit "
                    f"{job.process.returncode}); see {job.run.run_dir / LOG}"
                )
    return failed


def _parameters(run):
    """The run's parameter count, from its saved model."""
    _, _, _, model = runs.load_run(run.run_dir)
    return int(model.count_params())


def aggregate(table, planned, out):
    """Writes OUT/TABLE.md and OUT/TABLE.json from the finished runs."""
    results, counted = [], {}
    for run in planned:
        if not _finished(run):
            continue
        _settle(run)
        if run.row.name not in counted:
            counted[run.row.name] = _parameters(run)
        results.append(
            {
                "row": run.row.name,
                "seed": run.seed,
                "run_dir": str(run.run_dir),
                "seconds": _seconds(run),
                "parameters": counted[run.row.name],
                "metrics": runs.read_json(run.run_dir / runs.METRICS),
            }
        )
    summary = reproduction.summarize(table, results)
    summary["runs"] = results
    summary["missing"] = [
        f"{run.row.name} seed {run.seed}" for run in planned if not _finished(run)
    ]
    out = Path(out)
    _write_json(out / f"{table.name}.json", summary)
    text = reproduction.markdown(table, summary)
    temporary = out / f"{table.name}.md.tmp-{os.getpid()}"
    temporary.write_text(text)
    os.replace(temporary, out / f"{table.name}.md")
    return summary, text


def _shard(text):
    index, sep, count = text.partition("/")
    if not (sep and index.isdigit() and count.isdigit() and int(count) > 0):
        raise argparse.ArgumentTypeError(f"expected I/N such as 0/2, received {text!r}")
    return int(index), int(count)


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m training.reproduce", description=__doc__.splitlines()[0]
    )
    parser.add_argument("table", help="a table in training/tables or a .toml path")
    parser.add_argument("--seeds", type=int, default=None)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--only", action="append", default=[], metavar="ROW")
    parser.add_argument("--out", default=None)
    parser.add_argument("--shard", type=_shard, default=(0, 1), metavar="I/N")
    parser.add_argument("--aggregate-only", action="store_true")
    args = parser.parse_args(argv)
    started = time.time()
    try:
        for name in ("jobs", "threads"):
            if getattr(args, name) < 1:
                raise reproduction.TableError(
                    f"--{name} must be >= 1; received {getattr(args, name)}."
                )
        table = reproduction.load_table(args.table)
        out = Path(args.out or f"reproduction/{table.name}")
        if out.exists() and not out.is_dir():
            raise reproduction.TableError(
                f"--out {str(out)!r} is a file; expected a directory."
            )
        seeds = table.seeds if args.seeds is None else args.seeds
        planned = reproduction.plan(table, out, seeds, args.only)
        mine = reproduction.shard(planned, *args.shard)
        for run in planned:
            _check_existing(run)
            if not args.aggregate_only:
                _settle(run)
    except (reproduction.TableError, recipes.RecipeError) as error:
        parser.exit(2, f"{parser.prog}: error: {error}\n")
    if not args.aggregate_only:
        done = [run for run in mine if _finished(run)]
        pending = [run for run in mine if not _finished(run)]
        print(
            f"{table.name}: {len(planned)} runs ({len(mine)} in this shard), "
            f"{len(done)} finished, {len(pending)} to train, {args.jobs} at a time"
        )
        failed = execute(table, pending, args.jobs, args.threads)
        if failed:
            print(f"{len(failed)} runs failed; rerun the same command to retry them")
    missing = [run for run in planned if not _finished(run)]
    if missing and not args.aggregate_only:
        print(
            f"{len(missing)} of {len(planned)} runs not finished yet; the table is "
            "written when all are (or with --aggregate-only)"
        )
        return 1 if failed else 0
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
        _, text = aggregate(table, planned, out)
    print(text)
    print(f"written: {out / (table.name + '.md')}, {out / (table.name + '.json')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
