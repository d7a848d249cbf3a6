"""A run directory's owner and state: what training may write there, and when.

A run directory is made by `training.runs.runs.train_run` (`python -m
training.train`) and holds only what the project wrote there, as its
manifest records (`training.runs.run_files`): the run's own files, results
the other commands derive from its model (`saved_model/`,
`evaluation-*.json`, `syntax-*/`), the table runner's files (`RUNNER`) and
temporaries. Training refuses every other folder in one line
(`check_owned`): a preset (it holds `card.json`), a record of `results/`
(`record.json`), a folder holding anything its manifest does not list, or
a symbolic link anywhere inside.

Its state (`state`), read from which files exist:

- `NEW`: nothing of a run yet (a new or empty folder);
- `UNFINISHED`: a recipe but no backup and no metrics (killed before its
  first epoch ended): trained again from the start, in place;
- `INTERRUPTED`: a backup (`backup/`): resumed from it, in place;
- `FINISHED`: `metrics.json` and no backup: `metrics.json`, `best.keras`
  and `log.csv` describe one model. Trained again, it trains in its
  `attempt/` folder (resumed there when killed) and the finished attempt
  is moved over the old run by `promote`, so a killed re-run leaves the
  finished run as it was;
- `PROMOTING`: `attempt/metrics.json`: an attempt finished and `promote`
  was cut off; the next training finishes the move.

A preset or card is made only from a `FINISHED` run (`check_finished`).
`lock_run_dir` holds a run directory for one process; `scratch_beside` and
`replace_folder` write a folder beside its target and move it into place,
for exports and presets. `write_json` and `read_json` write a run's JSON
files atomically and read them back, each failure one line.
"""

import contextlib
import errno
import fcntl
import glob
import json
import math
import os
import re
import secrets
import shutil
import socket
import tempfile
from pathlib import Path

from training.core.callbacks import RunBackup, backup_field_error, write_atomically
from training.runs import run_files

RECIPE, VOCABULARY, BEST, METRICS = (
    "recipe.json",
    "vocabulary.json",
    "best.keras",
    "metrics.json",
)
BACKUP, LOG, TENSORBOARD = "backup", "log.csv", "tensorboard"
TRAIN_LOCK = ".train.lock"
# The keys of metrics.json (and of a backup's facts) that record the compile
# mode and the steps per call of the train function.
JIT_COMPILE, STEPS_PER_EXECUTION = "jit_compile", "steps_per_execution"
ATTEMPT = "attempt"
# What marks a folder the project made as something else than a run: a
# preset (`zoo.presets.preset_loader.CARD`) and a record of results/
# (`training.reproduction.records.RECORD`;
# tests/training/runs/probe_run_dirs_test.py ties them).
CARD, RECORD = "card.json", "record.json"
# What training writes, moved over the old run by `promote` (metrics.json last).
TRAINED = (RECIPE, VOCABULARY, BEST, LOG, TENSORBOARD)
# What the table runner (`training.reproduction.table_runs`, a floor above) keeps beside
# the run it trains (its lock, the output, timing and host).
RUNNER = (".lock", "train.log", "timing.json", "host.json")
# A run's own names: every other name its manifest lists is a result derived
# from its model (`saved_model/`, `evaluation-*.json`, `syntax-*/`), which
# goes with the model when a re-run replaces it (`promote`).
TRAINING = (*TRAINED, METRICS, BACKUP, TRAIN_LOCK, ATTEMPT)  # training's names
OWN = (*TRAINING, *RUNNER)

NEW, UNFINISHED, INTERRUPTED, FINISHED, PROMOTING = (
    "new",
    "unfinished",
    "interrupted",
    "finished",
    "promoting",
)


class RunError(ValueError):
    """A run directory is missing or incomplete; the message is one line."""


def write_json(path, value):
    """Writes `value` as JSON at `path`, atomically (a reader never sees half a
    file); a one-line `RunError`, and nothing written, if it holds a NaN or an
    infinity (which JSON cannot hold)."""
    try:
        text = json.dumps(value, indent=2, sort_keys=True, allow_nan=False)
    except ValueError:
        where, number = _first_non_finite(value)
        raise RunError(
            f"Not writing {str(path)!r}: {where} is {number}, which JSON cannot "
            "hold; expected finite numbers."
        ) from None
    write_atomically(path, text + "\n")


def _first_non_finite(value, where=""):
    """`(where, number)` of the first NaN or infinity in `value`, or None."""
    if isinstance(value, float) and not math.isfinite(value):
        return where or "the value", value
    if isinstance(value, dict):
        items = ((f"{where}.{key}".lstrip("."), item) for key, item in value.items())
    elif isinstance(value, (list, tuple)):
        items = ((f"{where}[{index}]", item) for index, item in enumerate(value))
    else:
        return None
    for inner, item in items:
        found = _first_non_finite(item, inner)
        if found:
            return found
    return None


def read_json(path):
    """The JSON value in `path`; a one-line `RunError` naming it if it is not JSON."""
    try:
        return json.loads(Path(path).read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise RunError(
            f"{str(path)!r} is not valid JSON ({error}); expected the file "
            "python -m training.train wrote."
        ) from None


@contextlib.contextmanager
def lock_run_dir(run_dir, name=TRAIN_LOCK):
    """Holds an exclusive lock on the existing folder `run_dir` while the block runs.

    The lock is an `fcntl.flock` on the file `name` in `run_dir`, which
    names its holder (process id and host) while it is held. It is
    released when the block ends or the process dies, however it dies; a
    lock file left behind blocks no one.

    Raises:
        RunError: another process holds the lock (the message names it).
    """
    path = Path(run_dir) / name
    with open(path, "a+") as file:
        try:
            fcntl.flock(file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            file.seek(0)
            holder = file.read().strip() or "another process"
            raise RunError(
                f"Run directory {str(run_dir)!r} is locked by {holder} (which holds "
                f"{str(path)!r}); expected one process per run directory: wait "
                "for it to finish or use another --run-dir."
            ) from None
        try:
            file.truncate(0)
            file.write(f"process {os.getpid()} on {socket.gethostname()}\n")
            file.flush()
            yield path
        finally:
            file.truncate(0)  # released: it names no one


def check_owned(run_dir):
    """A one-line `RunError` unless `run_dir` is new, empty or a run directory.

    Refuses a preset (`card.json`), a record of results/ (`record.json`),
    a folder holding anything its manifest does not list
    (`run_files.foreign`), a symbolic link anywhere inside
    (`run_files.check_no_links`) and an `attempt` that is not a folder.
    Reads only.
    """
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        return
    names = sorted(path.name for path in run_dir.iterdir())
    where = f"Run directory {str(run_dir)!r}"
    if CARD in names:
        raise RunError(
            f"{where} is a preset (it holds {CARD}); expected a run directory: "
            "train into a new --run-dir (python -m training.preset makes a "
            "preset of the finished run)."
        )
    if RECORD in names:
        raise RunError(
            f"{where} is a record of results/ (it holds {RECORD}); expected a "
            "run directory: train into a new --run-dir."
        )
    try:
        run_files.check_no_links(run_dir)
        foreign = run_files.foreign(run_dir)
    except ValueError as error:
        raise RunError(str(error)) from None
    if foreign:
        more = f" and {len(foreign) - 1} more" if len(foreign) > 1 else ""
        raise RunError(
            f"{where} holds {foreign[0]!r}{more}, which no command of the project "
            f"wrote there (its {run_files.MANIFEST} does not list it); expected a "
            "new or empty folder or a run directory: move it away, as a re-run "
            "never removes it (or use another --run-dir)."
        )
    attempt = run_dir / ATTEMPT
    if attempt.exists() and not attempt.is_dir():
        raise RunError(
            f"{where} holds a file {ATTEMPT!r}; expected the folder a re-run "
            "trains in (move the file away)."
        )


def state(run_dir):
    """The run directory's state: `NEW`, `UNFINISHED`, `INTERRUPTED`,
    `FINISHED` or `PROMOTING` (see the module's docstring)."""
    run_dir = Path(run_dir)
    if (run_dir / ATTEMPT / METRICS).is_file():
        return PROMOTING
    if (run_dir / BACKUP).exists():
        return INTERRUPTED
    if (run_dir / METRICS).is_file():
        return FINISHED
    if (run_dir / RECIPE).exists():
        return UNFINISHED
    return NEW


def why_unfinished(run_dir):
    """Why the run in `run_dir` is not `FINISHED` (a clause), or None."""
    found = state(run_dir)
    if found == FINISHED:
        return None
    return {
        INTERRUPTED: "its training was interrupted (it holds backup/)",
        PROMOTING: "a re-run finished but was not yet moved in (attempt/)",
    }.get(found, "it has no metrics.json")


def check_finished(run_dir):
    """A one-line `RunError` unless the run in `run_dir` is `FINISHED`.

    Then its `metrics.json` and `best.keras` describe the same model.
    """
    why = why_unfinished(run_dir)
    if why is not None:
        raise RunError(
            f"Run directory {str(run_dir)!r} is not a finished run: {why}; "
            "expected a run whose training ended (run its training command "
            "again to finish it)."
        )


def stamp(run_dir):
    """What changes when a finished run's model is replaced (`promote`): the
    identity of its `metrics.json` and `best.keras`. Equal stamps before and
    after reading a run mean the two read files belong together."""
    found = []
    for name in (METRICS, BEST):
        status = (Path(run_dir) / name).stat()
        found.append((status.st_ino, status.st_mtime_ns, status.st_size))
    return tuple(found)


def read_backup(recipe, folder):
    """The checked backup metadata of a run of `recipe` in `folder`, or None.

    `RunBackup.read_metadata` checks every field (its epoch at most
    `train.epochs`, its `log_size` within `log.csv`); the facts the run
    keeps (`compile_choice`, `steps_choice`) are checked here. A backup of
    an earlier format, without them, is refused in one line naming it and
    `python -m training.migrate`, which writes what it was trained with
    (and so is one without the states of the model's random generators);
    so is a backup with `metrics.json` beside it (an interrupted re-run of
    an earlier version), which training never leaves now.
    """
    path, stale = Path(folder) / BACKUP, Path(folder) / METRICS
    if path.is_dir() and stale.exists():
        raise RunError(
            f"{str(stale)!r} names no model of this run directory: it lies beside "
            f"{BACKUP}/, as a re-run of an earlier version left the finished run's "
            "metrics when it was interrupted (it had deleted that run's best.keras); "
            "expected metrics.json only once training ends: python -m "
            f"training.migrate {str(_run_dir_of(stale.parent))!r} brings it up to date."
        )
    metadata = RunBackup.read_metadata(
        path, epochs=recipe.train.epochs, log_path=Path(folder) / LOG
    )
    if metadata is None:
        return None
    if metadata.get("seed_generators") is None:
        raise _earlier_backup(path / RunBackup.METADATA, "seed_generators")
    facts = metadata.get("facts") or {}  # an object: checked there
    for key, used in ((JIT_COMPILE, "true or false"), (STEPS_PER_EXECUTION, ">= 1")):
        entry = facts.get(key)
        if entry is None:
            raise _earlier_backup(path / RunBackup.METADATA, f"facts.{key}")
        value = entry.get("used") if isinstance(entry, dict) else None
        good = (
            isinstance(value, bool)
            if key == JIT_COMPILE
            else (isinstance(value, int) and not isinstance(value, bool) and value >= 1)
        )
        if not (good and isinstance(entry.get("reason"), str)):
            expected = f'{{"used": {used}, "reason": text}}'
            where = path / RunBackup.METADATA
            raise backup_field_error(where, f"facts.{key}", entry, expected)
    _check_epochs_logged(metadata, path, Path(folder) / LOG)
    return metadata


def _earlier_backup(path, field):
    """The one-line `RunError` of a backup's metadata at `path` from before
    `field` was kept: `python -m training.migrate` brings it up to date."""
    run_dir = _run_dir_of(path.parent.parent)  # of NAME/[attempt/]backup/
    return RunError(
        f"{str(path)!r} names no {field} (a backup of an earlier format); expected "
        f"the backup this version writes: python -m training.migrate "
        f"{str(run_dir)!r} brings it up to date."
    )


def _run_dir_of(folder):
    """The run directory that trains in `folder`: itself, or its attempt's."""
    return folder.parent if folder.name == ATTEMPT else folder


def _check_epochs_logged(metadata, path, log):
    """A backup of epoch N holds a `log_size` of log.csv's header and N rows
    (its `log_size` is checked to lie within the file already): a one-line
    error when the two disagree, which neither training wrote."""
    size = (metadata or {}).get("log_size")
    if not size or not log.is_file():
        return
    with open(log, "rb") as file:
        rows = file.read(size).count(b"\n") - 1  # the header's line
    if rows != metadata["epoch"]:
        expected = f"{rows}, the epochs whose rows log.csv holds"
        where = path / RunBackup.METADATA
        raise backup_field_error(where, "epoch", metadata["epoch"], expected)


def attempt_dir(run_dir):
    """The folder a finished run is trained again in."""
    return Path(run_dir) / ATTEMPT


def promote(run_dir):
    """Moves a finished attempt over the run in `run_dir`; its lock held.

    `metrics.json` goes first (so the run is not `FINISHED` while its files
    are mixed) and the attempt's comes in last; the old run's files and the
    results derived from its model (listed names not in `OWN`) are set aside
    in the attempt folder, which is deleted at the end. Cut off anywhere, it
    finishes when called again (`PROMOTING`). Only names the run's manifest
    lists are moved or removed (`run_files`).
    """
    run_dir = Path(run_dir)
    attempt = attempt_dir(run_dir)
    replaced = attempt / "replaced"
    (run_dir / METRICS).unlink(missing_ok=True)
    replaced.mkdir(exist_ok=True)
    derived = sorted(run_files.owned(run_dir) - set(OWN))
    for name in derived:
        if (run_dir / name).exists():
            _set_aside(run_dir / name, replaced / name)
    run_files.forget(run_dir, *derived)
    for name in TRAINED:
        new, old = attempt / name, run_dir / name
        if not new.exists():  # moved in already
            continue
        if old.is_dir():
            _set_aside(old, replaced / name)
        os.replace(new, old)
    os.replace(attempt / METRICS, run_dir / METRICS)
    shutil.rmtree(attempt)


def _set_aside(path, to):
    if to.is_dir():
        shutil.rmtree(to)
    os.replace(path, to)


def scratch_beside(target, kind="target"):
    """A new, empty folder beside `target` that only this process uses.

    Named `TARGET.partial-PID-RANDOM`; a folder the user named
    `TARGET.partial` is never touched. A one-line `RunError` when the folder
    holding `target` cannot be written.
    """
    target = Path(target)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        return Path(
            tempfile.mkdtemp(
                prefix=f"{target.name}.partial-{os.getpid()}-", dir=target.parent
            )
        )
    except OSError as error:
        raise RunError(
            f"Cannot write the {kind} {str(target)!r} ({error.strerror or error}); "
            "expected a folder you can write."
        ) from None


def _leftover_name(target):
    """What `scratch_beside` and `replace_folder` name their folders beside
    `target`: `TARGET.partial-PID-RANDOM` (`tempfile.mkdtemp`'s 8 characters)
    and `TARGET.replaced-PID-HEX` (8 hexadecimal digits); the PID is group 1."""
    return re.compile(
        rf"{re.escape(target.name)}\.(?:partial|replaced)-([0-9]+)-[0-9a-z_]{{8}}"
    )


def _runs(pid):
    """Whether the process `pid` still runs on this machine."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's
        return True
    return True


def remove_leftovers(target):
    """Removes the folders beside `target` that `scratch_beside` and
    `replace_folder` made for it in processes that no longer run (an export
    or preset killed before it cleaned up: a half-written `.partial-`, an
    earlier export set aside as `.replaced-`).

    Only folders named exactly as they name them for `target`, and not
    links; those of a process still running on this machine (one writing
    into `target` now) are left. Returns the names removed.
    """
    target = Path(target)
    name = _leftover_name(target)
    removed = []
    for path in sorted(target.parent.glob(f"{glob.escape(target.name)}.*")):
        found = name.fullmatch(path.name)
        if found is None or path.is_symlink() or not path.is_dir():
            continue
        pid = int(found.group(1))
        if pid == os.getpid() or _runs(pid):
            continue
        shutil.rmtree(path, ignore_errors=True)
        removed.append(path.name)
    return removed


def replace_folder(source, target, replaceable, kind="target"):
    """Moves the folder `source` to `target`; returns `target`.

    An existing `target` must be empty or `replaceable(target)` (a
    `RunError` otherwise, and `source` is left); it is moved aside first
    and deleted after. Processes moving into one `target` at once each
    succeed, one after another: whoever moves last leaves its folder. Once
    `source` is in place, the folders a killed process left beside `target`
    go (`remove_leftovers`): until then they hold what they held.
    """
    moved = _move_into(Path(source), Path(target), replaceable, kind)
    remove_leftovers(moved)
    return moved


def _move_into(source, target, replaceable, kind):
    for _ in range(100):
        try:
            os.rename(source, target)  # onto nothing or an empty folder
            return target
        except OSError as error:
            if error.errno not in (errno.ENOTEMPTY, errno.EEXIST, errno.ENOTDIR):
                raise
        if not target.is_dir() or not replaceable(target):
            raise RunError(
                f"The {kind} {str(target)!r} is {_what(target)}; expected a new "
                "or empty folder or an earlier one."
            )
        aside = target.with_name(
            f"{target.name}.replaced-{os.getpid()}-{secrets.token_hex(4)}"
        )
        try:
            os.rename(target, aside)
        except FileNotFoundError:  # another process moved it first
            continue
        try:
            os.rename(source, target)
        except OSError as error:
            if error.errno not in (errno.ENOTEMPTY, errno.EEXIST):
                raise
            continue  # another process moved its own in between
        finally:
            shutil.rmtree(aside, ignore_errors=True)
        return target
    raise RunError(f"The {kind} {str(target)!r} kept changing; expected one writer.")


def _what(path):
    return "a file" if not path.is_dir() else "a folder made by something else"
