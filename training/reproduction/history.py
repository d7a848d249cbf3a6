"""A run's per-epoch history (its `log.csv`) and the quantities read from it.

The history is what Keras's `CSVLogger` wrote into the run directory (and
`training.reproduction.records` copied into the run's record): one row per epoch, the
`epoch` column counting from 0, then `loss`, `val_loss` and whatever else
was logged (`val_wcpa` and `val_mean_ldpa` for the Dyck tasks).
`read_log(path)` reads it as `{column: [value per epoch]}`; `value(history,
name)` computes one of the named quantities below, which a reproduction
table reads with a `[[metric]]` key `history.NAME`
(`training.reproduction.table_schema`). Epochs are counted from 1 here: "epoch 3" is the
model after three passes over the training data (row `epoch = 2`).

- `epochs`: the epochs trained (the rows of the log).
- `epoch_of_min_COLUMN`, `epoch_of_max_COLUMN`: the first epoch at which
  COLUMN is at its lowest (highest). `epoch_of_min_val_loss` is the epoch
  of the model a run keeps (`best.keras`, by validation loss): "epochs to
  converge" under early stopping, which stops `patience` epochs later.
- `first_epoch_COLUMN_below_X`, `first_epoch_COLUMN_at_least_X`: the first
  epoch whose COLUMN is `< X` (`>= X`); None when no epoch is. With
  `val_loss` and the recipe's `train.stop_below_loss` it is the epoch the
  run stopped at: the multi-matrix report's "epochs to converge" for the
  Dyck-RNN ("training stops when the dev loss goes below 1e-5").
- `drops_COLUMN_over_X`: the number of epochs whose COLUMN is more than X
  below the epoch before's.
- `fall_COLUMN`: the total downward variation of COLUMN, the sum over epochs
  of how far it fell from the epoch before (rises count 0): 0 for a curve
  that never falls, and larger the more it oscillates. For `val_wcpa`, a
  measure of the second-order report's "stable" and "monotonic".

A value missing from an epoch ("NA" in the log) is left out; a quantity of
a column the log lacks is None, and `column_of(name)` names the column, so
a caller can say which record lacks it (records from before `val_wcpa` was
logged have none).
"""

import csv
import math
import re
from pathlib import Path

_NUMBER = r"(?P<x>[-+]?(?:\d+\.?\d*|\.\d+)(?:e[-+]?\d+)?)"
PATTERNS = (
    ("epochs", re.compile(r"epochs")),
    ("epoch_of", re.compile(r"epoch_of_(?P<op>min|max)_(?P<column>\w+)")),
    (
        "first_epoch",
        re.compile(rf"first_epoch_(?P<column>\w+?)_(?P<op>below|at_least)_{_NUMBER}"),
    ),
    ("drops", re.compile(rf"drops_(?P<column>\w+?)_over_{_NUMBER}")),
    ("fall", re.compile(r"fall_(?P<column>\w+)")),
)
NAMES = (
    "epochs, epoch_of_min_COLUMN, epoch_of_max_COLUMN, "
    "first_epoch_COLUMN_below_X, first_epoch_COLUMN_at_least_X, "
    "drops_COLUMN_over_X, fall_COLUMN"
)


def parse(name):
    """`(kind, fields)` of a quantity's name; a one-line `ValueError` if unknown."""
    for kind, pattern in PATTERNS:
        match = pattern.fullmatch(name)
        if match:
            fields = match.groupdict()
            if "x" in fields:
                fields["x"] = float(fields["x"])
            return kind, fields
    raise ValueError(
        f"Unknown history quantity {name!r}; expected one of: {NAMES} (COLUMN a "
        "column of log.csv such as val_loss, X a number such as 0.9 or 1e-5)."
    )


def column_of(name):
    """The log column the quantity `name` reads (None for `epochs`)."""
    return parse(name)[1].get("column")


def _number(text):
    try:
        number = float(text)
    except (TypeError, ValueError):
        return None  # "NA": not logged that epoch
    return number if math.isfinite(number) else None


def read_log(path):
    """`{column: [value or None per epoch]}` of a `log.csv`, in epoch order.

    Raises:
        ValueError: the file has no `epoch` column, or its epochs are not
            0, 1, 2, ... (one line, naming the file).
    """
    path = Path(path)
    with open(path, newline="") as handle:
        rows = list(csv.DictReader(handle))
    if rows and "epoch" not in rows[0]:
        raise ValueError(
            f"{str(path)!r} has no epoch column; expected the log.csv "
            "python -m training.train writes."
        )
    epochs = [row["epoch"] for row in rows]
    if epochs != [str(index) for index in range(len(rows))]:
        raise ValueError(
            f"{str(path)!r} holds epochs {', '.join(epochs[:6])}"
            f"{', ...' if len(epochs) > 6 else ''}; expected 0, 1, 2, ... (one "
            "row per epoch, as python -m training.train writes it)."
        )
    columns = list(rows[0]) if rows else ["epoch"]
    return {
        column: [
            int(row["epoch"]) if column == "epoch" else _number(row[column])
            for row in rows
        ]
        for column in columns
    }


def _epochs_of(history, column):
    """`[(epoch from 1, value)]` of the epochs that logged `column`."""
    return [
        (index + 1, value)
        for index, value in enumerate(history[column])
        if value is not None
    ]


def value(history, name):
    """The quantity `name` (see the module's docstring) of a history.

    Args:
        history: `{column: [value per epoch]}`, as `read_log` gives.
        name: e.g. `"epoch_of_min_val_loss"`, `"first_epoch_val_wcpa_at_least_0.9"`.

    Returns:
        A number, or None when the log lacks the column or no epoch meets a
        `first_epoch_...` condition.
    """
    kind, fields = parse(name)
    if kind == "epochs":
        return len(history.get("epoch", []))
    column = fields["column"]
    if column not in history:
        return None
    points = _epochs_of(history, column)
    if kind == "epoch_of":
        if not points:
            return None
        pick = min if fields["op"] == "min" else max
        best = pick(number for _, number in points)
        return next(epoch for epoch, number in points if number == best)
    if kind == "first_epoch":
        if fields["op"] == "below":
            met = [epoch for epoch, number in points if number < fields["x"]]
        else:
            met = [epoch for epoch, number in points if number >= fields["x"]]
        return met[0] if met else None
    falls = [
        before - after
        for (_, before), (_, after) in zip(points, points[1:], strict=False)
    ]
    if kind == "drops":
        return sum(1 for fall in falls if fall > fields["x"])
    return float(sum(fall for fall in falls if fall > 0))
