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
    key = "history.epoch_of_min_val_loss"   # `training.reproduction.history` names them
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
by `training.core.recipe_files`), `plan` lists its runs and `shard` one
process's share of them; `training.reproduction.table_runs` trains and records them and
`training.reproduction.table_summary` summarizes their metrics.
"""

import dataclasses
from pathlib import Path

from training.core import card_schema, file_schema, recipe_files
from training.reproduction import history
from training.tasks import recipes

BETTER = ("higher", "lower")
# A metric key `history.NAME` reads the quantity NAME of `training.reproduction.history`
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
    recipe: object  # a `training.tasks.recipes.Recipe`, resolved by `make_run`

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


# The longest list of seeds a table or --seeds asks for: only a mistake
# reaches it (the tables run 2 to 5).
MAX_SEEDS = 1000

# A table file (`file_schema` checks it; `load_table` then the names in it).
SCHEMA = file_schema.Table(
    {
        "title": file_schema.Text(),
        "source": file_schema.Text(),
        "notes": file_schema.Text(),
        "seeds": file_schema.Number(1, MAX_SEEDS, integer=True),
        "metric": file_schema.ListOf(
            file_schema.Table(
                {
                    "key": file_schema.Text(),
                    "label": file_schema.Text(),
                    "factor": file_schema.Number(),
                    "better": file_schema.Text(BETTER),
                },
                required=("key",),
            ),
            nonempty=True,
        ),
        "row": file_schema.ListOf(
            file_schema.Table(
                {
                    "name": file_schema.Name(),
                    "recipe": file_schema.Text(),
                    "scale": file_schema.Text(recipes.SCALES),
                    "overrides": file_schema.ListOf(file_schema.Text()),
                    "paper": file_schema.Table(others=card_schema.PAPER_VALUE),
                    "note": file_schema.Text(),
                },
                required=("name", "recipe"),
            ),
            nonempty=True,
        ),
        "claim": file_schema.ListOf(
            file_schema.Table(
                dict.fromkeys(
                    ("text", "metric", "better", "worse"), file_schema.Text()
                ),
                required=("text", "metric", "better", "worse"),
            )
        ),
    },
    required=("metric", "row"),
)


def _metric(entry, where):
    metric = Metric(
        key=entry["key"],
        label=entry.get("label", entry["key"]),
        factor=float(entry.get("factor", 1.0)),
        better=entry.get("better", "higher"),
    )
    quantity = history_quantity(metric.key)
    if quantity is not None:
        try:
            history.parse(quantity)
        except ValueError as error:
            raise TableError(f"{where}: {error}") from None
    return metric


def history_quantity(key):
    """The `training.reproduction.history` quantity a `history.NAME` key
    reads, else None."""
    return key[len(HISTORY) :] if key.startswith(HISTORY) else None


def _paper_values(value):
    if isinstance(value, dict):
        return {name: float(number) for name, number in value.items()}
    return {"mean": float(value)}


def _row(entry, metrics, where):
    name = entry["name"]
    where = f"{where} ({name})"
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
        recipe=entry["recipe"],
        scale=entry.get("scale", "small"),
        overrides=tuple(entry.get("overrides", [])),
        paper={key: _paper_values(value) for key, value in paper.items()},
        note=entry.get("note", ""),
    )


def load_table(name):
    """Reads the table `name` (a shipped table or a path ending in `.toml`).

    The file is checked against `SCHEMA` (row names are folder names: no
    path separator, no `..`), then the names it uses (metrics, rows).

    Raises:
        TableError: unknown table, malformed file or entry (one line naming
            the file and the field).
    """
    path = recipe_files.find(name, recipe_files.TABLE_DIR, "table", TableError)
    if not file_schema.is_name(path.stem):
        raise TableError(
            f"Table file {str(path)!r}: its name {path.stem!r} names the table's "
            f"folders; expected {file_schema.Name.expected}."
        )
    content = recipe_files.read(path, "table", TableError)
    content = file_schema.check(content, SCHEMA, path, TableError)
    where = f"Table {path.stem!r}"
    metrics = tuple(
        _metric(entry, f"{where} metric {index}")
        for index, entry in enumerate(content["metric"])
    )
    rows = tuple(
        _row(entry, metrics, f"{where} row {index}")
        for index, entry in enumerate(content["row"])
    )
    names = [row.name for row in rows]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise TableError(f"{where} has two rows named {duplicates[0]!r}.")
    claims = []
    for index, entry in enumerate(content.get("claim", [])):
        at = f"{where} claim {index}"
        claim = Claim(**entry)
        for row_name in (claim.better, claim.worse):
            if row_name not in names:
                raise TableError(f"{at} names unknown row {row_name!r}.")
        if claim.metric not in {metric.key for metric in metrics}:
            raise TableError(f"{at} names unknown metric {claim.metric!r}.")
        claims.append(claim)
    return Table(
        name=path.stem,
        title=content.get("title", path.stem),
        source=content.get("source", ""),
        seeds=content.get("seeds", 3),
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
    if not isinstance(seeds, int) or not 1 <= seeds <= MAX_SEEDS:
        raise TableError(
            f"seeds must be an integer >= 1 and <= {MAX_SEEDS}; received {seeds!r}."
        )
    rows = select_rows(table, only)
    return [make_run(table, row, seed, out) for seed in range(seeds) for row in rows]


def make_run(table, row, seed, out):
    """The `Run` of `row` at `seed` in `OUT/runs/ROW/seed-SEED`, recipe resolved."""
    run = Run(row, seed, Path(out) / "runs" / row.name / f"seed-{seed}", None)
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

    `result` is what `training.reproduction.records.read_record` returns: a
    `history.NAME` key is read from its `history` (the quantities of its
    log.csv), any other from its `metrics` (`metric_value`).
    """
    quantity = history_quantity(key)
    if quantity is not None:
        return (result.get("history") or {}).get(quantity)
    return metric_value(result["metrics"], key)
