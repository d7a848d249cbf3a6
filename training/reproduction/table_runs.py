"""A reproduction table's runs in OUT: trained in subprocesses, timed, recorded.

Every run of a table (`training.reproduction.table_schema.Run`) is an ordinary
`python -m training.train` run in `OUT/runs/ROW/seed-N`, its output in
`train.log` there. `Job` trains one in a subprocess holding the run
directory's lock (`LOCK`), so no two processes train the same run, and
counts its time in `timing.json` (also of an attempt whose runner was
killed); `execute` runs a queue of them side by side. A finished run
is recorded (`training.reproduction.records`) once it is read back whole (`damage`
says why not; `record_finished` sets a damaged one aside to be trained
again). `aggregate` writes `OUT/TABLE.md` and `OUT/TABLE.json` from the
records. `python -m training.reproduce` is the command over these.

A SIGINT or SIGTERM to the process running `execute` is passed on to every
run training (`STOPS`), which backs up and stops as at a Ctrl-C; each run
trains in a process group of its own, so a Ctrl-C at the terminal reaches it
once, through the runner (a second one during its backup would cut the
backup short). A runner killed outright (SIGKILL) leaves its runs training,
holding their locks, as before.
"""

import contextlib
import fcntl
import os
import subprocess
import sys
import time
import zipfile
from pathlib import Path

from training.core import compile_mode, file_schema, sigint
from training.core.callbacks import write_atomically
from training.reproduction import records, table_baselines, table_schema, table_summary
from training.runs import run_dirs, run_files, runs

TIMING = records.TIMING
LOCK = ".lock"
LOG = "train.log"
DAMAGED = ".damaged"
STOPS = sigint.STOPS  # passed on to the runs training


def finished(run):
    """Whether the run's training finished (it wrote `metrics.json`)."""
    return (run.run_dir / runs.METRICS).is_file()


def check_run_backend(run, backend):
    """A finished run in OUT trained on another backend is a one-line error."""
    if not finished(run):
        return
    path = run.run_dir / runs.METRICS
    try:
        metrics = runs.read_json(path)
    except (runs.RunError, OSError):
        return  # a damaged run is named and set aside where it is recorded
    trained_on = records.backend_of(metrics, path)
    if trained_on != backend:
        raise table_schema.TableError(
            f"Run directory {str(run.run_dir)!r} was trained on {trained_on}; "
            f"expected {backend} runs only in --out: use another --out for the "
            f"{backend} backend."
        )


def run_key(run):
    """`(row, seed)`: what tells a table's runs and records apart."""
    return run.row.name, run.seed


def same_recipe(run):
    """Whether the run directory holds the recipe the run asks for."""
    try:
        saved = runs.read_recipe(run.run_dir / runs.RECIPE)
        return saved.run_identity() == run.recipe.run_identity()
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
    with open(Path(run_dir) / LOCK, "a") as lock:
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
    directory's last change (the lock file is opened for appending, never
    truncated, so taking the lock to resume does not count the time the
    run lay killed; nor does the manifest, which changes when a command
    records a name). A run another process is training (its
    directory locked) is left alone, and so is a timing file that cannot be
    read (`damage` names it).
    """
    if not locked:
        with _locked(run.run_dir) as held:
            if held:
                _settle(run, locked=True)
        return
    timing = _read_timing(run)
    if timing is None or "started" not in timing:
        return
    if finished(run):
        end = (run.run_dir / runs.METRICS).stat().st_mtime
    else:
        end = max(
            (
                item.stat().st_mtime
                for item in run.run_dir.rglob("*")
                if item.name != run_files.MANIFEST
            ),
            default=timing["started"],
        )
    runs.write_json(
        run.run_dir / TIMING,
        {
            "seconds": timing["seconds"] + max(0.0, end - timing["started"]),
            "attempts": timing.get("attempts", 1),
        },
    )


def damage(run):
    """Why a finished run cannot be counted, in a few words; None if it can."""
    try:
        metrics = runs.read_json(run.run_dir / runs.METRICS)
    except (runs.RunError, OSError):
        return "metrics.json is not valid JSON"
    if not isinstance(metrics, dict) or not metrics:
        return "metrics.json holds no metrics"
    try:
        file_schema.check(metrics, file_schema.METRICS, runs.METRICS)
    except file_schema.FileError as error:
        return str(error).rstrip(".")
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


def record_folder(results_dir, table, run):
    return records.record_dir(results_dir, table.name, run.row.name, run.seed)


def _record(table, run, results_dir):
    """Records a finished run whose lock is held; why not, or None when done."""
    reason = damage(run)
    if reason is None:
        try:
            parameters = _parameters(run)
        except (ValueError, OSError) as error:  # runs.RunError is a ValueError
            reason = f"its model cannot be loaded: {str(error).splitlines()[0]}"
    if reason is None:
        records.write_record(
            run.run_dir, record_folder(results_dir, table, run), parameters
        )
    return reason


def record_finished(table, run, results_dir, retrain, report):
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


class Job:
    """One training subprocess, holding the run directory's lock."""

    def __init__(self, run, threads, backend="tensorflow", xla_cache=None):
        self.run = run
        run.run_dir.mkdir(parents=True, exist_ok=True)
        run_files.record(run.run_dir, *run_dirs.RUNNER)  # before they are written
        self.lock = open(run.run_dir / LOCK, "a")
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
            "KERAS_BACKEND": backend,
        }
        if xla_cache is not None and backend == "tensorflow":
            environment["TF_XLA_FLAGS"] = compile_mode.xla_cache_flags(xla_cache)
        _settle(run, locked=True)  # before anything here is written
        self.log = open(run.run_dir / LOG, "a")
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
        runs.write_json(run.run_dir / records.HOST, records.host(backend))
        # The child inherits the locked file, so the lock outlives this
        # process if it is killed while the child trains on.
        self.process = subprocess.Popen(
            run.command(sys.executable),
            stdout=self.log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=environment,
            pass_fds=(self.lock.fileno(),),
            process_group=0,  # a terminal's Ctrl-C reaches it through `execute`
        )
        self.stopped = False

    def stop(self, signum):
        """Passes `signum` on to the training process, once."""
        if not self.stopped and self.process.poll() is None:
            self.stopped = True
            self.process.send_signal(signum)

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
        return self.process.returncode == 0 and finished(self.run)

    def release(self):
        self.lock.close()


def _line(table, run):
    metric = table.metrics[0]
    metrics = runs.read_json(run.run_dir / runs.METRICS)
    value = table_schema.metric_value(metrics, metric.key)
    shown = "missing" if value is None else f"{value * metric.factor:.4f}"
    timing = _read_timing(run)
    seconds = "" if timing is None else f" ({timing['seconds']:.0f} s)"
    return f"{run.row.name} seed {run.seed}: {metric.key} {shown}{seconds}"


def execute(
    table,
    pending,
    jobs,
    threads,
    results_dir,
    report=print,
    backend="tensorflow",
    xla_cache=None,
):
    """Trains `pending` runs, `jobs` at a time, recording each in `results_dir`.

    The runs train on the Keras `backend` (their `KERAS_BACKEND`). On
    TensorFlow, with `xla_cache` (a folder), they keep their compiled XLA
    programs there and load those that an earlier run compiled
    (`compile_mode.xla_cache_flags`).

    A run whose directory another process has locked is left to it. A
    SIGINT or SIGTERM (`STOPS`, in the main thread) is passed on to the runs
    training and starts no other; once they have stopped, each said in a
    line, `execute` raises `KeyboardInterrupt`.

    Returns:
        The runs that failed (or finished unreadable).
    """
    queue = list(pending)
    active, failed, stops = [], [], []

    def stop(signum, frame):
        stops.append(signum)
        for job in active:
            job.stop(signum)

    with sigint.handling(STOPS, stop):
        while (queue and not stops) or active:
            while queue and not stops and len(active) < jobs:
                run = queue.pop(0)
                if finished(run):
                    continue
                try:
                    active.append(Job(run, threads, backend, xla_cache))
                except BlockingIOError:
                    report(
                        f"{run.row.name} seed {run.seed}: trained by another process"
                    )
            for job in active if stops else ():  # one started as the signal came
                job.stop(stops[0])
            time.sleep(0.2)
            for job in [job for job in active if job.process.poll() is not None]:
                active.remove(job)
                _settled(table, job, results_dir, report, failed)
    if stops:
        raise KeyboardInterrupt
    return failed


def _settled(table, job, results_dir, report, failed):
    """Records the ended `job`'s run, or says why not (adding it to `failed`)."""
    name = f"{job.run.row.name} seed {job.run.seed}"
    try:
        if not job.finish():
            failed.append(job.run)
            if job.stopped:
                report(f"{name}: stopped; the same command resumes it")
            else:
                report(
                    f"{name}: failed (exit {job.process.returncode}); see "
                    f"{job.run.run_dir / LOG}"
                )
            return
        reason = _record(table, job.run, results_dir)
        if reason is not None:
            failed.append(job.run)
            report(f"{name}: finished but not recorded ({reason})")
            return
    finally:
        job.release()
    report(_line(table, job.run))


def aggregate(table, results_dir, out, seeds):
    """Writes OUT/TABLE.md and OUT/TABLE.json from the table's records.

    Every row with every recorded seed; `seeds` (0 .. seeds - 1) is what each
    row should have, the rest is listed as missing.

    Raises:
        TableError: no record at all (nothing to write), or a damaged one.
    """
    found = records.read_table_records(results_dir, table)
    if not found:
        raise nothing_to_aggregate(table, results_dir, out)
    rules = table_baselines.rule_results(table)
    summary = table_summary.summarize(table, found, seeds, rules=rules)
    summary["runs"] = found
    out = Path(out)
    runs.write_json(out / f"{table.name}.json", summary)
    text = table_summary.markdown(table, summary)
    write_atomically(out / f"{table.name}.md", text)
    return summary, text


def nothing_to_aggregate(table, results_dir, out):
    """The `TableError` of a table with neither a record nor a finished run."""
    return table_schema.TableError(
        f"Nothing to aggregate: table {table.name!r} has no record in "
        f"{str(Path(results_dir) / table.name)!r} and no finished run in "
        f"{str(Path(out) / 'runs')!r}; expected trained runs (run it without "
        "--aggregate-only first)."
    )


def discover(table, out, planned):
    """Finished runs in OUT of the table's rows that `planned` leaves out.

    Returns the runs whose directory holds the recipe their row asks for, and
    a line for each that holds another.
    """
    keys = {run_key(run) for run in planned}
    found, notes = [], []
    for row in table.rows:
        folder = Path(out) / "runs" / row.name
        if not folder.is_dir():
            continue
        for run_dir in sorted(folder.iterdir()):
            match = records.SEED_FOLDER.fullmatch(run_dir.name)
            if not match or (row.name, int(match.group(1))) in keys:
                continue
            if not (run_dir / runs.METRICS).is_file():
                continue
            run = table_schema.make_run(table, row, int(match.group(1)), out)
            if same_recipe(run):
                found.append(run)
            else:
                notes.append(
                    f"{run_dir}: holds another recipe than row {row.name!r} now "
                    "asks for; not counted"
                )
    return found, notes
