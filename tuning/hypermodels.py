"""Keras Tuner hypermodels over the zoo's cells, built from training recipes.

A hypermodel turns a trial's hyperparameters into a recipe (`recipe_for`),
builds that recipe's model with the recipe's task, and trains it with the
recipe's optimizer and callbacks (`fit`), so a search trains each model the
way `python -m training.train` would. It searches:

- for every cell: `units` (hidden size), `num_layers`, `learning_rate` and
  `dropout`;
- the cell itself, when more than one is given (`cell`);
- whether the layers are bidirectional (`bidirectional`), for a tagger's or
  a classifier's recipe (`training.recipes.LABELING_KINDS`), when asked;
- the options in `CELL_OPTION_CHOICES` — the number of choice matrices `k`
  (`num_choices`, multi-matrix cells), the number of cells `S` (`num_cells`,
  second-order LSTM) and the stack depth (`stack_depth`, stack cells) — each
  as a hyperparameter conditional on `cell`, active only for the cells that
  take that option.

With `param_budget=P`, `units` is not searched: it is derived for each trial
so that the model has about `P` parameters, and a trial whose model cannot be
within `budget_tolerance` (5%) of `P` fails as a
`keras_tuner.errors.FailedTrialError` (the papers compare cells at matched
parameter counts).
"""

import copy
import functools
import inspect
import json

import keras
import keras_tuner
import numpy as np

import zoo
from training import fitting, recipes
from training.tasks import make_task
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


def _choices(name, value, check):
    """A value or a non-empty sequence of values, each passing `check`."""
    values = tuple(value) if isinstance(value, (list, tuple)) else (value,)
    if not values:
        raise ValueError(f"`{name}` must be a value or a non-empty list of values.")
    for item in values:
        check(name, item)
    return values


def _check_size(name, value):
    """`units` or `num_layers`: an integer in the range of its recipe key."""
    check_positive_int(name, value)
    check_number(name, value, *recipes.RANGES["model", name][:2])


def _check_dropout(name, value):
    check_number(name, value, 0, 1, high_open=True)


def _check_bool(name, value):
    if not isinstance(value, bool):
        raise ValueError(f"`{name}` must be True or False; received {value!r}.")


def _check_any(name, value):
    if value is None:
        raise ValueError(f"`{name}` must not be None.")


class RecurrentHyperModel(keras_tuner.HyperModel):
    """Searches a recipe's model: cell, hidden size, layers, learning rate, dropout.

    Each search argument is either one value (fixed, not searched) or a list
    of choices (`hp.Choice`); `learning_rate` is one value or a `(low, high)`
    range sampled log-uniformly. A choice list's default is the recipe's own
    value where the list holds it. Cell options (`CELL_OPTION_CHOICES`, or
    those given as keyword arguments) are conditional on `cell` when only
    some of the searched cells take them. Everything not searched comes from
    `recipe`, and options in the recipe's `model.options` go to each cell
    that takes them.

    Args:
        recipe: A resolved recipe (`training.recipes.resolve`).
        cells: Registry names of the cells to search. Default: the recipe's.
        units: Hidden size(s); ignored with `param_budget`.
            Default: `(32, 64, 128, 256)`.
        num_layers: Number(s) of recurrent layers. Default: `(1, 2)`.
        learning_rate: A learning rate or a `(low, high)` log range.
            Default: `(1e-4, 1e-2)`.
        dropout: Dropout rate(s). Default: `(0.0, 0.1, 0.2, 0.3)`.
        bidirectional: `True`, `False`, both as a list, or `None` (the
            recipe's `model.bidirectional`, not searched). Only a tagger's or
            a classifier's recipe may be bidirectional. Default: `None`.
        param_budget: Positive integer or `None`: derive `units` so that the
            model has this many parameters. Default: `None`.
        budget_tolerance: Relative distance from `param_budget` a model may
            have. Default: `0.05` (5%).
        max_units: Largest hidden size a budget may give. Default: 4096.
        task: The recipe's task (`training.tasks.make_task(recipe)`), to share
            its data; made when first needed if `None` (making it reads no
            data, only training does).
        name, tunable: As in `keras_tuner.HyperModel`.
        **cell_option_choices: A cell option and its value(s), e.g.
            `num_choices=(2, 4)`; overrides `CELL_OPTION_CHOICES`.

    Example:

    >>> recipe = training.recipes.resolve("dyck2_mlstm")
    >>> hypermodel = RecurrentHyperModel(recipe, cells=["mlstm", "mmlstm"])
    >>> tuner = keras_tuner.RandomSearch(hypermodel, objective="val_loss",
    ...                                  max_trials=10)
    >>> tuner.search()  # the data come from the recipe
    """

    def __init__(
        self,
        recipe,
        cells=None,
        units=(32, 64, 128, 256),
        num_layers=(1, 2),
        learning_rate=(1e-4, 1e-2),
        dropout=(0.0, 0.1, 0.2, 0.3),
        bidirectional=None,
        param_budget=None,
        budget_tolerance=0.05,
        max_units=4096,
        task=None,
        name=None,
        tunable=True,
        **cell_option_choices,
    ):
        if cells is None:
            cells = (recipe["model"]["cell"],)
        cells = _choices("cells", cells, _check_any)
        for cell in cells:
            zoo.get_cell_class(cell)  # an unknown name is a ValueError
        if len(set(cells)) != len(cells):
            raise ValueError(f"`cells` must not repeat a name; received {cells!r}.")
        self.units = _choices("units", units, _check_size)
        self.num_layers = _choices("num_layers", num_layers, _check_size)
        if isinstance(learning_rate, (list, tuple)):
            if len(learning_rate) != 2 or not 0 < learning_rate[0] < learning_rate[1]:
                raise ValueError(
                    "`learning_rate` must be a positive number or a (low, high) "
                    f"range with 0 < low < high; received {learning_rate!r}."
                )
            for value in learning_rate:
                check_number("learning_rate", value, 0, low_open=True)
            learning_rate = tuple(learning_rate)
        else:
            check_number("learning_rate", learning_rate, 0, low_open=True)
        self.learning_rate = learning_rate
        self.dropout = _choices("dropout", dropout, _check_dropout)
        if bidirectional is None:
            bidirectional = recipe["model"]["bidirectional"]
        self.bidirectional = _choices("bidirectional", bidirectional, _check_bool)
        kind = recipe["task"]["kind"]
        if any(self.bidirectional) and kind not in recipes.LABELING_KINDS:
            raise ValueError(
                "`bidirectional` reads each string right to left too, which only "
                "a tagger or a classifier may; expected False for task.kind "
                f"{kind!r}, received {bidirectional!r}."
            )
        if param_budget is not None:
            check_positive_int("param_budget", param_budget)
        check_number("budget_tolerance", budget_tolerance, 0, 1, low_open=True)
        check_positive_int("max_units", max_units)
        check_number("max_units", max_units, 1, recipes.RANGES["model", "units"].high)
        accepted = set().union(*(cell_options(cell) for cell in cells))
        for option in cell_option_choices:
            if option not in accepted:
                raise ValueError(
                    f"`{option}` is not an option of any searched cell "
                    f"({', '.join(cells)}); expected one of: "
                    f"{', '.join(sorted(CELL_OPTION_CHOICES))} or another "
                    "constructor argument of those cells."
                )
        choices = {
            option: values
            for option, values in CELL_OPTION_CHOICES.items()
            if option in accepted
        }
        choices.update(cell_option_choices)
        super().__init__(name=name, tunable=tunable)
        self.recipe = copy.deepcopy(recipe)
        self.cells = cells
        self.param_budget = param_budget
        self.budget_tolerance = budget_tolerance
        self.max_units = max_units
        self.cell_option_choices = {
            option: _choices(option, values, _check_any)
            for option, values in choices.items()
        }
        self._task = task
        self._parameter_counts = {}

    @property
    def task(self):
        """The recipe's task: data, loss and model builder."""
        if self._task is None:
            self._task = make_task(self.recipe)
        return self._task

    @property
    def objective(self):
        """The tuner objective: the task's monitored metric, minimized."""
        return keras_tuner.Objective(self.task.monitor, direction="min")

    def _choice(self, hp, name, values, default, parents=None):
        if len(values) == 1:
            return values[0]
        default = default if default in values else values[0]
        if parents is None:
            return hp.Choice(name, list(values), default=default)
        with hp.conditional_scope("cell", list(parents)):
            return hp.Choice(name, list(values), default=default)

    def recipe_for(self, hp):
        """Returns the recipe of the trial `hp` (declaring its hyperparameters).

        With `param_budget`, `model.units` is the hidden size whose model is
        closest to the budget; `check_budget` says whether it is close enough.
        """
        base = self.recipe["model"]
        cell = self._choice(hp, "cell", self.cells, base["cell"])
        options = {
            key: value
            for key, value in base["options"].items()
            if key in cell_options(cell)
        }
        for option, values in self.cell_option_choices.items():
            parents = [c for c in self.cells if option in cell_options(c)]
            conditional = len(parents) < len(self.cells)
            value = self._choice(
                hp,
                option,
                values,
                base["options"].get(option),
                parents if conditional else None,
            )
            if cell in parents:
                options[option] = value
        recipe = copy.deepcopy(self.recipe)
        model, train = recipe["model"], recipe["train"]
        model["cell"], model["options"] = cell, options
        model["num_layers"] = self._choice(
            hp, "num_layers", self.num_layers, base["num_layers"]
        )
        model["dropout"] = self._choice(hp, "dropout", self.dropout, base["dropout"])
        model["bidirectional"] = self._choice(
            hp, "bidirectional", self.bidirectional, base["bidirectional"]
        )
        if isinstance(self.learning_rate, tuple):
            low, high = self.learning_rate
            default = train["learning_rate"]
            train["learning_rate"] = hp.Float(
                "learning_rate",
                low,
                high,
                sampling="log",
                default=default if low <= default <= high else low,
            )
        else:
            train["learning_rate"] = self.learning_rate
        if self.param_budget is None:
            model["units"] = self._choice(hp, "units", self.units, base["units"])
        else:
            model["units"] = self.units_for_budget(recipe)
        return recipe

    def count_parameters(self, recipe):
        """Returns the number of parameters of `recipe`'s model (cached)."""
        key = json.dumps(recipe["model"], sort_keys=True)
        if key not in self._parameter_counts:
            model = self._trial_task(recipe).build_model()
            self._parameter_counts[key] = int(model.count_params())
        return self._parameter_counts[key]

    def units_for_budget(self, recipe):
        """Returns the hidden size whose model is closest to `param_budget`.

        The count is quadratic in the hidden size for every zoo cell: three
        small models fix the quadratic, its root is the first guess, and a
        galloping search over real counts from there finds the neighbours
        around the budget (two more models when the guess is right).
        """
        budget = self.param_budget

        def count(units):
            trial = copy.deepcopy(recipe)
            trial["model"]["units"] = int(units)
            return self.count_parameters(trial)

        probes = (4, 8, 16)
        a, b, c = np.polyfit(probes, [count(u) for u in probes], 2)
        roots = [r.real for r in np.roots([a, b, c - budget]) if abs(r.imag) < 1e-9]
        guess = min([r for r in roots if r > 0], default=1.0)
        start = int(min(max(np.floor(guess), 1), self.max_units))
        # The largest units whose count is within the budget (0 if none is).
        if count(start) <= budget:
            low, step = start, 1
            while low + step <= self.max_units and count(low + step) <= budget:
                low, step = low + step, step * 2
            high = min(low + step, self.max_units + 1)
        else:
            high, step = start, 1
            while high - step >= 1 and count(high - step) > budget:
                high, step = high - step, step * 2
            low = max(high - step, 0)
        while high - low > 1:
            middle = (low + high) // 2
            if count(middle) <= budget:
                low = middle
            else:
                high = middle
        candidates = [u for u in (low, low + 1) if 1 <= u <= self.max_units]
        return min(candidates, key=lambda u: abs(count(u) - budget))

    def check_budget(self, recipe):
        """Returns the parameter count of `recipe`'s model.

        Raises:
            keras_tuner.errors.FailedTrialError: with a `param_budget`, the
                count is further than `budget_tolerance` from it.
        """
        count = self.count_parameters(recipe)
        budget = self.param_budget
        if budget is not None and abs(count - budget) > self.budget_tolerance * budget:
            model = recipe["model"]
            raise keras_tuner.errors.FailedTrialError(
                f"No hidden size puts {model['cell']} (num_layers="
                f"{model['num_layers']}, options {model['options']}) within "
                f"{self.budget_tolerance:.0%} of the parameter budget {budget:,}: "
                f"the closest, units={model['units']}, has {count:,} parameters "
                f"({(count - budget) / budget:+.1%})."
            )
        return count

    def check_budget_feasible(self):
        """A one-line `ValueError` if no searched cell fits `param_budget`.

        The smallest model of each cell (units=1, the fewest layers) is
        counted: when every one of them is already further above the budget
        than `budget_tolerance`, no trial can succeed.
        """
        budget = self.param_budget
        if budget is None:
            return
        smallest = {}
        for cell in self.cells:
            recipe = copy.deepcopy(self.recipe)
            options = recipe["model"]["options"]
            recipe["model"].update(
                cell=cell,
                units=1,
                num_layers=min(self.num_layers),
                options={k: v for k, v in options.items() if k in cell_options(cell)},
            )
            smallest[cell] = self.count_parameters(recipe)
        if min(smallest.values()) > (1 + self.budget_tolerance) * budget:
            counts = ", ".join(f"{cell} {n:,}" for cell, n in smallest.items())
            raise ValueError(
                f"The parameter budget {budget:,} is below the smallest model of "
                f"every searched cell (units=1: {counts}); expected a larger "
                "budget."
            )

    def _trial_task(self, recipe):
        return self.task.with_recipe(recipe)

    def build(self, hp):
        """The trial's model, uncompiled: `fit` compiles and trains it."""
        recipe = self.recipe_for(hp)
        keras.utils.set_random_seed(recipe["train"]["seed"])
        return self._trial_task(recipe).build_model()

    def fit(self, hp, model, *args, **kwargs):
        """Trains `model` as `training.train` trains the trial's recipe.

        Compiles and fits with `training.fitting.fit`: the data, epochs and
        callbacks come from the recipe; the tuner's keyword arguments
        (`callbacks`, `epochs`, `initial_epoch` from Hyperband, `verbose`,
        ...) go on to `model.fit`. Data arguments (`x`, `y`, `batch_size`,
        `validation_data`, ...) are refused: the trial's data are the
        recipe's. The history also records the model's parameter count as
        `parameters`.

        Raises:
            ValueError: positional arguments or data arguments were given
                (e.g. `tuner.search(x, y)`).
            keras_tuner.errors.FailedTrialError: the model misses the budget.
        """
        if args:
            raise ValueError(
                "RecurrentHyperModel trains on its recipe's data; expected no "
                f"positional arguments to search/fit, received {len(args)}."
            )
        recipe = self.recipe_for(hp)
        count = self.check_budget(recipe)
        history = fitting.fit(
            model,
            self._trial_task(recipe),
            callbacks=kwargs.pop("callbacks", ()),
            verbose=kwargs.pop("verbose", 2),
            **kwargs,
        )
        epochs_run = len(history.history.get("loss", ()))
        history.history["parameters"] = [float(count)] * epochs_run
        return history
