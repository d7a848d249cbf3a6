"""Run records: the small files of each finished run, kept in the repository.

    RESULTS/TABLE/ROW/seed-N/
        recipe.json    the resolved recipe the run trained (seed included)
        metrics.json   its metrics on every split
        log.csv        its per-epoch history (Keras's CSVLogger), which a
                       table's `history.NAME` metrics read
                       (`training.reproduction.history`)
        timing.json    seconds of training over all attempts, and attempts
        host.json      the machine it trained on: CPU model, its vector
                       instructions (cpu_features) and count, platform,
                       Python, TensorFlow and Keras versions, the Keras
                       backend (and JAX's version on JAX; GPUs where
                       nvidia-smi names any)
        record.json    parameters (counted from best.keras when recorded);
                       `copied_from` when the run is another table's record
                       of the same recipe

No weights and no data: a record is what a table needs, and it outlives the
machine. RESULTS is `results/` in the repository (`--results` of
`training.reproduce`; `results/jax/` for runs on the JAX backend). A
record's backend is its metrics.json's `backend` (`python -m
training.migrate` writes it into a record of an earlier format, which
names none); records of one backend are never counted or
copied for another (`RecordIndex`, `check_backend`). A record is written
into a hidden folder beside its place and renamed into it, so a record
folder is always complete, and two processes recording the same run keep
the first.

`training.reproduce` writes the record of every run it finishes, does not
train a run whose record exists (a table can be completed over several
sessions and machines), copies a record of the same recipe from another table
instead of training it again, and makes its tables from the records alone.
`update_document` regenerates the marked table sections of REPRODUCTION.md
from them, and `regenerate_document` the file (`python -m training.reproduce
--report`).
"""

import importlib.metadata
import json
import os
import platform
import re
import shutil
import subprocess
from pathlib import Path

from training.core import compile_mode, file_schema
from training.core.callbacks import write_atomically
from training.reproduction import history, table_baselines, table_schema, table_summary
from training.runs import runs
from training.tasks import recipes

TIMING = "timing.json"
HOST = "host.json"
RECORD = "record.json"
RECORD_FILES = (runs.RECIPE, runs.METRICS, runs.LOG, TIMING, HOST)
# A seed N is the folder seed-N, N written without leading zeros.
SEED_FOLDER = file_schema.SEED_FOLDER
BEGIN = re.compile(r"<!-- table: (\S+) -->")
END = "<!-- end table -->"


def _gpus():
    if not shutil.which("nvidia-smi"):
        return []
    try:
        listed = subprocess.run(
            ["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    return [line.strip() for line in listed.splitlines() if line.strip()]


def host(backend="tensorflow"):
    """The machine this process runs on, as `host.json` holds it.

    `backend` is the Keras backend the run trains on (`KERAS_BACKEND` of
    its process); its package's version is listed beside TensorFlow's.
    """
    cpus = (
        len(os.sched_getaffinity(0))
        if hasattr(os, "sched_getaffinity")
        else os.cpu_count()
    )
    info = {
        "cpu": compile_mode.cpu_name(),
        "cpu_features": compile_mode.cpu_features(),
        "cpus": cpus,
        "platform": platform.platform(),
        "python": platform.python_version(),
        "backend": backend,
    }
    for package in dict.fromkeys(("tensorflow", "keras", backend)):
        try:
            info[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            pass
    gpus = _gpus()
    if gpus:
        info["gpus"] = gpus
    return info


def describe_host(info):
    """One line naming a `host.json`'s machine, or None without one."""
    if not isinstance(info, dict) or not info.get("cpu"):
        return None
    text = str(info["cpu"])
    details = [f"{info['cpus']} CPUs"] if info.get("cpus") else []
    if isinstance(info.get("cpu_features"), list) and info["cpu_features"]:
        details.append(" ".join(map(str, info["cpu_features"])))
    if details:
        text += f" ({', '.join(details)})"
    if info.get("gpus"):
        text += f", GPU {', '.join(map(str, info['gpus']))}"
    return text


def record_dir(results, table_name, row_name, seed):
    """Where the record of one row x seed of a table lives."""
    return Path(results) / table_name / row_name / f"seed-{seed}"


def _publish(target, files, record):
    """Writes a record folder at `target` at once; False if one is there."""
    target = Path(target)
    if target.exists():
        return False
    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = target.parent / f".{target.name}.tmp-{os.getpid()}"
    shutil.rmtree(temporary, ignore_errors=True)  # this process's leftover
    temporary.mkdir()
    for name, path in files.items():
        shutil.copyfile(path, temporary / name)
    runs.write_json(temporary / RECORD, record)
    try:
        os.rename(temporary, target)
    except OSError:
        shutil.rmtree(temporary, ignore_errors=True)
        if not target.is_dir():
            raise
        return False  # another process recorded it first
    return True


def write_record(run_dir, target, parameters):
    """Copies a finished run's record files from `run_dir` to `target`.

    Returns False (and writes nothing) when `target` already exists.
    """
    run_dir = Path(run_dir)
    files = {
        name: run_dir / name for name in RECORD_FILES if (run_dir / name).is_file()
    }
    return _publish(target, files, {"parameters": parameters})


def copy_record(source, target, results):
    """Copies the record at `source` to `target` (the same run in another table)."""
    source = Path(source)
    record = _read(source, RECORD, file_schema.RECORD)
    origin = record.get("copied_from") or source.relative_to(results).as_posix()
    files = {name: source / name for name in RECORD_FILES if (source / name).is_file()}
    return _publish(target, files, {**record, "copied_from": origin})


def backend_of(metrics, path):
    """The Keras backend the metrics.json at `path`, `metrics`, says trained
    its run; a one-line `TableError` where it names none (a file of an
    earlier format)."""
    backend = metrics.get("backend") if isinstance(metrics, dict) else None
    if isinstance(backend, dict) and isinstance(backend.get("name"), str):
        return backend["name"]
    raise table_schema.TableError(
        f"{str(path)!r} names no backend (metrics of an earlier format); "
        f"expected a 'backend' key: python -m training.migrate "
        f"{str(Path(path).parent)!r} brings it up to date."
    )


def _record_backend(folder):
    path = Path(folder) / runs.METRICS
    try:
        return backend_of(runs.read_json(path), path)
    except (runs.RunError, OSError):
        return None  # a damaged record is refused where it is used


def check_backend(found, backend, results):
    """A one-line `TableError` if a record in `found` is of another backend.

    `found` are `read_table_records` results: a table's records and the
    runs to add must be of one backend, or its numbers compare two.
    """
    for result in found:
        if result["backend"] != backend:
            raise table_schema.TableError(
                f"--results {str(results)!r} holds {result['backend']} records "
                f"({result['record']}); expected {backend} records only: use "
                f"another --results for the {backend} backend (its default is "
                f"{default_results(backend)})."
            )


def default_results(backend):
    """Where `training.reproduce` records runs of `backend` by default."""
    return "results" if backend == "tensorflow" else f"results/{backend}"


class RecordIndex:
    """Finds a record of a resolved recipe anywhere under `results`.

    Only records of `backend` (`backend_of` their metrics) are found.
    """

    def __init__(self, results, backend="tensorflow"):
        self.results = Path(results)
        self.backend = backend
        self._paths = None

    def find(self, recipe):
        """The record folder of a run of `recipe` (seed included), or None."""
        if self._paths is None:
            self._paths = {}
            pattern = f"*/*/seed-*/{runs.RECIPE}"
            for path in sorted(self.results.glob(pattern)):
                if not (path.parent / RECORD).is_file():
                    continue
                if _record_backend(path.parent) != self.backend:
                    continue
                try:
                    key = runs.read_recipe(path).run_identity()
                except (runs.RunError, OSError):
                    continue  # a damaged record is refused where it is used
                self._paths.setdefault(key, path.parent)
        return self._paths.get(recipe.run_identity())


def _read(folder, name, schema, required=True):
    """The content of the record file `folder/name`, checked against `schema`."""
    path = Path(folder) / name
    if not path.is_file():
        if not required:
            return None
        raise table_schema.TableError(
            f"Record {str(folder)!r} has no {name}; expected the files "
            "python -m training.reproduce copied there (remove that folder to "
            "run it again)."
        )
    try:
        content = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise table_schema.TableError(
            f"Record file {str(path)!r} is not valid JSON; expected the file "
            "python -m training.reproduce copied there (restore it from git, or "
            "remove that folder to run it again)."
        ) from None
    return file_schema.check(content, schema, path, table_schema.TableError)


def _history(folder, quantities):
    """`({quantity: value}, [what the log lacks])` of a record's log.csv."""
    if not quantities:
        return {}, []
    path = Path(folder) / runs.LOG
    if not path.is_file():
        return dict.fromkeys(quantities), [runs.LOG]
    try:
        log = history.read_log(path)
    except (ValueError, OSError) as error:  # a log that is not the run's
        raise table_schema.TableError(f"Record {str(folder)!r}: {error}") from None
    lacks = sorted(
        {
            column
            for name in quantities
            if (column := history.column_of(name)) is not None and column not in log
        }
    )
    return {name: history.value(log, name) for name in quantities}, lacks


def read_record(folder, run, results, quantities=()):
    """The result of `run` (a `table_schema.Run`) from its record `folder`.

    `quantities` are `training.reproduction.history` names to read from its log.csv:
    the result's `history` holds their values (None where the log lacks
    their column) and `history_lacks` the columns (or the log.csv) the
    record lacks.

    Raises:
        TableError: a file is missing, not JSON or not of its schema
            (`training.core.file_schema`: a metric that is NaN or a string, a
            parameter count that is not a number, ...), or the record holds
            another recipe than `run` asks for (the table changed since).
    """
    folder = Path(folder)
    recipe = _read(folder, runs.RECIPE, file_schema.Recipe(recipes.from_saved))
    metrics = _read(folder, runs.METRICS, file_schema.METRICS)
    timing = _read(folder, TIMING, file_schema.TIMING, required=False) or {}
    record = _read(folder, RECORD, file_schema.RECORD)
    host = _read(folder, HOST, file_schema.HOST, required=False)
    if recipe.run_identity() != run.recipe.run_identity():
        raise table_schema.TableError(
            f"Record {str(folder)!r} holds a different recipe than row "
            f"{run.row.name!r} now asks for; expected another --results, or move "
            "that record away to run the row again."
        )
    seconds = timing.get("seconds")
    quantities, lacks = _history(folder, quantities)
    return {
        "row": run.row.name,
        "seed": run.seed,
        "record": folder.relative_to(results).as_posix(),
        "seconds": seconds,
        "parameters": record.get("parameters"),
        "host": describe_host(host),
        "copied_from": record.get("copied_from"),
        "backend": backend_of(metrics, folder / runs.METRICS),
        "metrics": metrics,
        "history": quantities,
        "history_lacks": lacks,
    }


def read_table_records(results, table):
    """Every record of `table` under `results`, in the table's row order.

    Raises:
        TableError: a folder that is no row of the table or no seed, or a
            damaged or out-of-date record (`read_record`).
    """
    folder = Path(results) / table.name
    if not folder.is_dir():
        return []
    rows = {row.name: row for row in table.rows}
    quantities = [
        quantity
        for metric in table.metrics
        if (quantity := table_schema.history_quantity(metric.key)) is not None
    ]
    found = []
    for row_dir in sorted(folder.iterdir()):
        if row_dir.name not in rows or not row_dir.is_dir():
            raise table_schema.TableError(
                f"Record folder {str(row_dir)!r} is not a row of table "
                f"{table.name!r}; expected one of: {', '.join(rows)}."
            )
        for seed_dir in sorted(row_dir.iterdir()):
            if seed_dir.name.startswith("."):
                continue  # a record being written
            match = SEED_FOLDER.fullmatch(seed_dir.name)
            if not match or not seed_dir.is_dir():
                raise table_schema.TableError(
                    f"Record folder {str(seed_dir)!r} is not a seed; expected "
                    "folders named seed-N (N a whole number without leading "
                    "zeros: seed-1, not seed-01)."
                )
            run = table_schema.make_run(
                table, rows[row_dir.name], int(match.group(1)), "unused"
            )
            found.append(read_record(seed_dir, run, results, quantities))
            _check_sections(found[-1]["metrics"], table, seed_dir)
    order = list(rows)
    return sorted(
        found, key=lambda result: (order.index(result["row"]), result["seed"])
    )


def _check_sections(metrics, table, folder):
    """A one-line `TableError` when a record's metrics.json lacks the `test`
    section and the table reports a test metric: the record would drop out
    unseen. (Other splits may be missing from some rows' records: a row
    whose task has no `hard` split shows "–" there.)"""
    for metric in table.metrics:
        split = metric.key.partition(".")[0]
        if split == "test" and not isinstance(metrics.get(split), dict):
            raise table_schema.TableError(
                f"Record {str(folder)!r}: {runs.METRICS} has no {split!r} section; "
                f"expected the measures of every split table {table.name!r} "
                f"reports ({metric.key}): restore the record, or remove its folder "
                "to run it again."
            )


def update_document(text, results, name="REPRODUCTION.md", summaries=None):
    """Regenerates the table sections of a Markdown document from the records.

    A section is the lines between `<!-- table: NAME -->` and
    `<!-- end table -->` (each on a line of its own); it becomes
    `table_summary.markdown` of table NAME summarized from its records under
    `results`. Everything outside the sections is left as it is. With a list
    `summaries`, each section's `(table, summary)` is appended to it.

    Returns:
        The new text and the names of the tables regenerated.

    Raises:
        TableError: an unknown table, a section without its end line, or a
            damaged record.
    """
    lines = text.split("\n")
    updated, names, index = [], [], 0
    while index < len(lines):
        line = lines[index]
        updated.append(line)
        index += 1
        if line == END:
            raise table_schema.TableError(
                f"{name} line {index}: {END!r} without a '<!-- table: NAME -->' "
                "line before it."
            )
        match = BEGIN.fullmatch(line)
        if not match:
            continue
        end = index
        while end < len(lines) and lines[end] != END:
            if BEGIN.fullmatch(lines[end]):
                end = len(lines)
                break
            end += 1
        if end == len(lines):
            raise table_schema.TableError(
                f"{name} line {index}: {line!r} has no {END!r} line after it "
                "(before the next section); expected one closing each section."
            )
        table = table_schema.load_table(match.group(1))
        summary = table_summary.summarize(
            table,
            read_table_records(results, table),
            rules=table_baselines.rule_results(table),
        )
        if summaries is not None:
            summaries.append((table, summary))
        updated += table_summary.markdown(table, summary).rstrip("\n").split("\n")
        updated.append(END)
        names.append(table.name)
        index = end + 1
    return "\n".join(updated), names


def regenerate_document(document, results_dir):
    """Regenerates the table sections of the file `document` from the records
    in `results_dir` (`update_document`), writing it only if they changed.

    Returns:
        The names of the tables regenerated and whether the file changed.
    """
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
    updated, names = update_document(text, results_dir, name=str(path))
    if updated != text:
        write_atomically(path, updated)
    return names, updated != text


def report_document(document, results_dir):
    """`regenerate_document`, and the line `--report` prints: which table
    sections were regenerated from where, and whether the file changed."""
    names, changed = regenerate_document(document, results_dir)
    state, tables = "changed" if changed else "unchanged", ", ".join(names)
    where = f"{len(names)} table sections from {results_dir} ({state})"
    return f"{document}: {where}: {tables or 'none'}"
