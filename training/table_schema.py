"""Reproduction tables: the table files and the runs that make a paper's table.

A table is a TOML file in `training/tables/` (or any path ending in `.toml`):

    title = "Multi-matrix report, Table 2 (Dyck part)"
    source = "where the paper's numbers come from"
    seeds = 3                        # default of --seeds

    [[metric]]                       # what each row reports
    key = "test.wcpa"                # a path into the run's metrics.json
    label = "test WCPA (%)"
    factor = 100.0                   # ours are multiplied by it
    better = "higher"                # or "lower"

    [[metric]]                       # or a quantity of its per-epoch log.csv
    key = "history.epoch_of_min_val_loss"   # `training.history` names them
    label = "epochs to converge (best validation loss)"
    better = "lower"

    [[row]]
    name = "dyck_rnn_m4"
    recipe = "dyck2_dyck_rnn"
    scale = "paper"
    overrides = ["task.m=4"]
    paper = { "test.wcpa" = 100.0 }  # a number, or {mean = .., best = ..}
    note = "anything the reader should know about this row"

    [[claim]]                        # an ordering the paper states
    text = "mmLSTM has lower BPC than LSTM"
    metric = "test.bits_per_token"
    better = "ptb_char_mmlstm"       # row names
    worse = "ptb_char_lstm"

Every row x seed is an ordinary training run: the recipe at its scale with
the row's overrides and `train.seed=SEED`, in its own run directory
`OUT/runs/ROW/seed-SEED`. `load_table` reads a table file (found and read
by `training.recipe_files`), `plan` lists its runs and `shard` one
process's share of them; `training.table_runs` trains and records them and
`training.table_summary` summarizes their metrics.
"""

import dataclasses
from pathlib import Path

from training import history, recipe_files, recipes

BETTER = ("higher", "lower")
# A metric key `history.NAME` reads the quantity NAME of `training.history`
# from the run's log.csv instead of a path into its metrics.json.
HISTORY = "history."


class TableError(ValueError):
    """A table file, row or option is wrong; the message is one line."""


@dataclasses.dataclass(frozen=True)
class Metric:
    key: str
    label: str
    factor: float = 1.0
    better: str = "higher"


@dataclasses.dataclass(frozen=True)
class Row:
    name: str
    recipe: str
    scale: str
    overrides: tuple
    paper: dict
    note: str = ""


@dataclasses.dataclass(frozen=True)
class Claim:
    text: str
    metric: str
    better: str
    worse: str


@dataclasses.dataclass(frozen=True)
class Table:
    name: str
    title: str
    source: str
    seeds: int
    metrics: tuple
    rows: tuple
    claims: tuple
    notes: str = ""


@dataclasses.dataclass(frozen=True)
class Run:
    """One row at one seed: where it runs and the resolved recipe it trains."""

    row: Row
    seed: int
    run_dir: Path
    recipe: dict

    @property
    def overrides(self):
        return (*self.row.overrides, f"train.seed={self.seed}")

    def command(self, python="python"):
        """The `training.train` command line that makes this run."""
        return [
            python,
            "-m",
            "training.train",
            self.row.recipe,
            *self.overrides,
            "--scale",
            self.row.scale,
            "--run-dir",
            str(self.run_dir),
            "--no-export",
        ]


def available_tables():
    """The sorted names of the shipped table files."""
    return recipe_files.available(recipe_files.TABLE_DIR)


def _require(table, key, kind, where):
    if key not in table:
        raise TableError(f"{where} has no {key!r}; expected a {kind.__name__}.")
    value = table[key]
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
        raise TableError(
            f"{where}: {key!r} must be a {kind.__name__}; received {value!r}."
        )
    return value


def _check_keys(table, allowed, where):
    unknown = sorted(set(table) - set(allowed))
    if unknown:
        raise TableError(
            f"{where} has unknown key {unknown[0]!r}; expected: "
            f"{', '.join(sorted(allowed))}."
        )


def _metric(entry, where):
    _check_keys(entry, ("key", "label", "factor", "better"), where)
    metric = Metric(
        key=_require(entry, "key", str, where),
        label=entry.get("label", entry.get("key", "")),
        factor=float(entry.get("factor", 1.0)),
        better=entry.get("better", "higher"),
    )
    if metric.better not in BETTER:
        raise TableError(
            f"{where}: better must be 'higher' or 'lower'; received {metric.better!r}."
        )
    quantity = history_quantity(metric.key)
    if quantity is not None:
        try:
            history.parse(quantity)
        except ValueError as error:
            raise TableError(f"{where}: {error}") from None
    return metric


def history_quantity(key):
    """The `training.history` quantity a `history.NAME` key reads, else None."""
    return key[len(HISTORY) :] if key.startswith(HISTORY) else None


def _paper_values(value, key, where):
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return {"mean": float(value)}
    if isinstance(value, dict) and value and set(value) <= {"mean", "best"}:
        return {name: float(number) for name, number in value.items()}
    raise TableError(
        f"{where}: paper value of {key!r} must be a number or a table with "
        f"mean and/or best; received {value!r}."
    )


def _row(entry, metrics, where):
    _check_keys(entry, ("name", "recipe", "scale", "overrides", "paper", "note"), where)
    name = _require(entry, "name", str, where)
    where = f"{where} ({name})"
    scale = entry.get("scale", "small")
    if scale not in recipes.SCALES:
        raise TableError(
            f"{where}: unknown scale {scale!r}; expected one of: "
            f"{', '.join(recipes.SCALES)}."
        )
    overrides = entry.get("overrides", [])
    if not isinstance(overrides, list) or not all(
        isinstance(text, str) for text in overrides
    ):
        raise TableError(f"{where}: overrides must be a list of strings.")
    paper = entry.get("paper", {})
    keys = {metric.key for metric in metrics}
    for key in paper:
        if key not in keys:
            raise TableError(
                f"{where}: paper value for {key!r}, which is not one of the "
                f"table's metrics ({', '.join(sorted(keys))})."
            )
    return Row(
        name=name,
        recipe=_require(entry, "recipe", str, where),
        scale=scale,
        overrides=tuple(overrides),
        paper={key: _paper_values(value, key, where) for key, value in paper.items()},
        note=entry.get("note", ""),
    )


def load_table(name):
    """Reads the table `name` (a shipped table or a path ending in `.toml`).


    Raises:
        TableError: unknown table, malformed file or entry.
    """
    path = recipe_files.find(name, recipe_files.TABLE_DIR, "table", TableError)
    content = recipe_files.read(path, "table", TableError)
    where = f"Table {path.stem!r}"
    _check_keys(
        content,
        ("title", "source", "seeds", "metric", "row", "claim", "notes"),
        where,
    )
    metrics = tuple(
        _metric(entry, f"{where} metric {index}")
        for index, entry in enumerate(content.get("metric", []))
    )
    if not metrics:
        raise TableError(f"{where} has no [[metric]]; expected at least one.")
    rows = tuple(
        _row(entry, metrics, f"{where} row {index}")
        for index, entry in enumerate(content.get("row", []))
    )
    if not rows:
        raise TableError(f"{where} has no [[row]]; expected at least one.")
    names = [row.name for row in rows]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise TableError(f"{where} has two rows named {duplicates[0]!r}.")
    claims = []
    for index, entry in enumerate(content.get("claim", [])):
        at = f"{where} claim {index}"
        _check_keys(entry, ("text", "metric", "better", "worse"), at)
        claim = Claim(
            text=_require(entry, "text", str, at),
            metric=_require(entry, "metric", str, at),
            better=_require(entry, "better", str, at),
            worse=_require(entry, "worse", str, at),
        )
        for row_name in (claim.better, claim.worse):
            if row_name not in names:
                raise TableError(f"{at} names unknown row {row_name!r}.")
        if claim.metric not in {metric.key for metric in metrics}:
            raise TableError(f"{at} names unknown metric {claim.metric!r}.")
        claims.append(claim)
    seeds = content.get("seeds", 3)
    if not isinstance(seeds, int) or isinstance(seeds, bool) or seeds < 1:
        raise TableError(f"{where}: seeds must be an integer >= 1; received {seeds!r}.")
    return Table(
        name=path.stem,
        title=content.get("title", path.stem),
        source=content.get("source", ""),
        seeds=seeds,
        metrics=metrics,
        rows=rows,
        claims=tuple(claims),
        notes=content.get("notes", ""),
    )


def select_rows(table, only=()):
    """The rows named in `only` (all when empty), in the table's order."""
    names = [row.name for row in table.rows]
    for name in only:
        if name not in names:
            raise TableError(
                f"Table {table.name!r} has no row {name!r}; expected one of: "
                f"{', '.join(names)}."
            )
    return [row for row in table.rows if not only or row.name in only]


def plan(table, out, seeds, only=()):
    """Every run of the table's selected rows at seeds `0 .. seeds - 1`.


    Seed by seed (every row's seed 0, then every row's seed 1, ...), so a
    sweep stopped part-way leaves every row with the same number of seeds,
    which is what a claim's test compares. Each recipe is resolved here, so
    a wrong recipe name or override is a `recipes.RecipeError` before
    anything runs.
    """
    if not isinstance(seeds, int) or seeds < 1:
        raise TableError(f"seeds must be an integer >= 1; received {seeds!r}.")
    rows = select_rows(table, only)
    return [make_run(table, row, seed, out) for seed in range(seeds) for row in rows]


def make_run(table, row, seed, out):
    """The `Run` of `row` at `seed` in `OUT/runs/ROW/seed-SEED`, recipe resolved."""
    run = Run(row, seed, Path(out) / "runs" / row.name / f"seed-{seed}", {})
    try:
        recipe = recipes.resolve(row.recipe, row.scale, run.overrides)
    except recipes.RecipeError as error:
        raise TableError(f"Table {table.name!r} row {row.name!r}: {error}") from None
    return dataclasses.replace(run, recipe=recipe)


def shard(runs, index, count):
    """The runs of shard `index` of `count`: every `count`-th, from `index`."""
    if not 0 <= index < count:
        raise TableError(
            f"shard {index}/{count} does not exist; expected 0 <= I < N in I/N."
        )
    return runs[index::count]


def metric_value(metrics, key):
    """The number at `key` ("split.name") in a run's metrics, or None.

    `history.NAME` keys are not in metrics.json (see `result_value`).
    """
    value = metrics
    for part in key.split("."):
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    return value if isinstance(value, (int, float)) else None


def result_value(result, key):
    """The metric `key` of one run's result, or None.

    `result` is what `training.results.read_record` returns: a `history.NAME`
    key is read from its `history` (the quantities of its log.csv), any
    other from its `metrics` (`metric_value`).
    """
    quantity = history_quantity(key)
    if quantity is not None:
        return (result.get("history") or {}).get(quantity)
    return metric_value(result["metrics"], key)
