"""What a search may search: the cells' options, the recipe keys, the checks.

`RecurrentHyperModel` (`tuning.hypermodels`) takes each search argument as
one value or a list of choices; these are the checks it runs on them, the
cell options a search tries by default (`CELL_OPTION_CHOICES`), the recipe
keys it may not search (`DATA_KEYS`, `OWN_ARGUMENTS`), and the text that
lists choices on a command line (`comma_values`: `32,64`; `parse_options`:
`NAME=V1,V2`), read as `training.tasks.recipes` reads a `section.key=value`
override.
"""

import functools
import inspect
import json

import zoo
from training.core.config.model_arguments import RecognizerArguments
from training.core.config.option_fields import range_of
from training.tasks import recipes
from zoo.checks import check_number, check_positive_int

# The architecture knobs that exist only for some cells: a cell constructor
# option and the values a search tries by default.
CELL_OPTION_CHOICES = {
    "num_choices": (2, 4, 8),  # k, multi-matrix cells (mmrnn, mmlstm)
    "num_cells": (2, 3, 4),  # S, second-order LSTM
    "stack_depth": (8, 16, 32, 64),  # stack cells (stack_rnn, diffstk_*)
}


@functools.cache
def cell_options(cell):
    """Returns the constructor options of the cell registered as `cell`.

    Read from the cell's `get_config()` (every constructor argument, by the
    zoo's rules), or from the constructors' signatures where the cell cannot
    be made with `units=1` alone.
    """
    cell_class = zoo.get_cell_class(cell)
    try:
        return frozenset(cell_class(1).get_config())
    except (TypeError, ValueError):
        names = set()
        for cls in cell_class.__mro__:
            if "__init__" in vars(cls):
                names |= set(inspect.signature(cls.__init__).parameters)
        return frozenset(names - {"self", "args", "kwargs"})


def as_choices(name, value, check):
    """A value or a non-empty sequence of values, each passing `check`."""
    values = tuple(value) if isinstance(value, (list, tuple)) else (value,)
    if not values:
        raise ValueError(f"`{name}` must be a value or a non-empty list of values.")
    for item in values:
        check(name, item)
    return values


def check_size(name, value):
    """`units` or `num_layers`: an integer in the range of its recipe key."""
    check_positive_int(name, value)
    range_ = range_of(RecognizerArguments, name)
    check_number(name, value, range_.low, range_.high)


def check_dropout(name, value):
    check_number(name, value, 0, 1, high_open=True)


def check_bool(name, value):
    if not isinstance(value, bool):
        raise ValueError(f"`{name}` must be True or False; received {value!r}.")


def check_any(name, value):
    if value is None:
        raise ValueError(f"`{name}` must not be None.")


def same_type(values):
    """`values` as floats where they mix ints and floats, else as they are."""
    numbers = all(
        isinstance(v, (int, float)) and not isinstance(v, bool) for v in values
    )
    if numbers and any(isinstance(v, float) for v in values):
        return tuple(float(v) for v in values)
    return values


def index_of(values, value):
    """The position of `value` in `values` (`False` is not `0`), or None."""
    for index, item in enumerate(values):
        if type(item) is type(value) and item == value:
            return index
    return None


# The keys that decide a task's data (what is generated or read, how it is
# split, and a language model's batch rows): the trials of a search share one
# task's data (`training.tasks.task.Task.with_recipe`), so a search keeps
# these fixed.
DATA_KEYS = frozenset(
    [("train", "seed"), ("train", "batch_size"), ("train", "stateful")]
    + [
        ("task", key)
        for key in recipes.task_keys()
        if key not in ("step_labels", "next_symbol_loss")  # targets, not data
    ]
)

# Recipe keys a search has its own argument for, not searched as recipe keys.
OWN_ARGUMENTS = {
    "model.cell": "cells",
    "model.units": "units",
    "model.num_layers": "num_layers",
    "model.dropout": "dropout",
    "model.bidirectional": "bidirectional",
    "model.options": "a cell option's own name",
    "train.learning_rate": "learning_rate",
}


def check_recipe_choices(recipe, recipe_choices):
    """Each value of each searched recipe key, checked as `resolve` checks it."""
    checked = {}
    for name, value in recipe_choices.items():
        section, dot, key = name.partition(".")
        if name in OWN_ARGUMENTS:
            raise ValueError(
                f"`{name}` is searched with `{OWN_ARGUMENTS[name]}`; expected "
                "another recipe key."
            )
        if not dot or section not in ("task", "model", "train") or key == "kind":
            raise ValueError(
                f"`{name}` is not a recipe key; expected section.key, e.g. "
                "task.next_symbol_loss."
            )
        keys = [key for key in recipe.keys() if "." in key and key != "task.kind"]
        if name not in keys:
            raise ValueError(
                f"`{name}` is not a recipe key of task.kind {recipe.task.kind!r}; "
                f"expected one of: {', '.join(keys)}."
            )
        if (section, key) in DATA_KEYS:
            raise ValueError(
                f"`{name}` decides the task's data, which every trial of a search "
                "shares; expected a key of the model, the loss or the training."
            )
        values = same_type(as_choices(name, value, check_any))
        for item in values:
            recipe.with_values({name: item})  # a RecipeError (ValueError): one line
        checked[name] = values
    return checked


def comma_values(text, name, convert=json.loads):
    """Comma-separated `text` as one value, or a list of values if several."""
    try:
        found = [convert(item) for item in text.split(",") if item.strip()]
    except ValueError:  # json.JSONDecodeError is a ValueError
        raise ValueError(
            f"`{name}` must be comma-separated values; received {text!r}."
        ) from None
    return found[0] if len(found) == 1 else found


def json_or_text(text):
    """A JSON value (`0.1`, `false`, `"soft"`), else the text itself (`soft`)."""
    try:
        return json.loads(text)
    except ValueError:
        return text.strip()


def parse_options(texts):
    """`--option` texts -> `(cell options, recipe keys)`, each `{name: values}`.

    A name with a dot is a recipe key (`task.next_symbol_loss`), any other a
    cell option; values are JSON where they parse (`0.1`, `false`), else text.
    """
    options, recipe_keys = {}, {}
    for text in texts:
        name, sep, found = text.partition("=")
        if not sep or not name or not found:
            raise ValueError(f"--option {text!r} must look like NAME=VALUE,VALUE.")
        target = recipe_keys if "." in name else options
        target[name] = comma_values(found, name, json_or_text)
    return options, recipe_keys


def from_text(cells, units, num_layers, learning_rate, dropout, bidirectional, options):
    """`RecurrentHyperModel`'s search arguments from their command-line text:
    `cells` (`"mlstm,mmlstm"` or None), `units`, `num_layers`,
    `learning_rate` (`LOW,HIGH` or one rate), `dropout`, `bidirectional` (or
    None) as comma-separated values, `options` as `NAME=V1,V2` texts."""
    rate = comma_values(learning_rate, "learning_rate", float)
    cell_option_choices, recipe_choices = parse_options(options)
    return dict(
        cells=cells.split(",") if cells else None,
        units=comma_values(units, "units"),
        num_layers=comma_values(num_layers, "num_layers"),
        learning_rate=tuple(rate) if isinstance(rate, list) else rate,
        dropout=comma_values(dropout, "dropout", float),
        bidirectional=None
        if bidirectional is None
        else comma_values(bidirectional, "bidirectional"),
        recipe_choices=recipe_choices,
        **cell_option_choices,
    )
