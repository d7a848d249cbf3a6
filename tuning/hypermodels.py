"""Keras Tuner hypermodels over the zoo's cells, built from training recipes.

A hypermodel turns a trial's hyperparameters into a recipe (`recipe_for`),
builds that recipe's model with the recipe's task, and trains it with the
recipe's optimizer and callbacks (`fit`), so a search trains each model the
way `python -m training.train` would. It searches (`tuning.search_space`
holds the defaults, the checks and the keys a search keeps fixed):

- for every cell: `units` (hidden size), `num_layers`, `learning_rate` and
  `dropout`;
- the cell itself, when more than one is given (`cell`);
- whether the layers are bidirectional (`bidirectional`), for a tagger's or
  a classifier's recipe (whose `model` section has `bidirectional`), when
  asked;
- the options in `CELL_OPTION_CHOICES` — the number of choice matrices `k`
  (`num_choices`, multi-matrix cells), the number of cells `S` (`num_cells`,
  second-order LSTM) and the stack depth (`stack_depth`, stack cells) — and
  any other constructor option of a cell given (`forget_bias`,
  `noise_stddev`, `carry_forward`, ...), each as a hyperparameter
  conditional on `cell`, active only for the cells that take that option;
  an option no searched cell takes is dropped;
- recipe keys (`recipe_choices`, e.g. `task.next_symbol_loss`), for every
  cell alike, except those that decide the data (`DATA_KEYS`): the
  trials share the recipe's data.

The objective is the task's `search_objective` (validation loss, or for
recognition strict accuracy on the validation split's positive strings),
logged by the task's `search_callbacks`. With `seeds_per_trial=N` each trial
trains N models, whose weights are drawn from seeds `train.seed` to
`train.seed + N - 1`, on the same data, and scores their mean: a setting
whose seeds learn or fail by chance is scored by how often it learns.

With `param_budget=P`, `units` is not searched: it is derived for each trial
so that the model has about `P` parameters, and a trial whose model cannot be
within `budget_tolerance` (5%) of `P` fails as a
`keras_tuner.errors.FailedTrialError` (the papers compare cells at matched
parameter counts).
"""

import dataclasses
import json

import keras
import keras_tuner
import numpy as np

import zoo
from training.core import fitting
from training.core.config.model_arguments import ModelArguments
from training.core.config.option_fields import range_of
from training.tasks import make_task
from tuning.search_space import (
    CELL_OPTION_CHOICES,
    as_choices,
    cell_options,
    check_any,
    check_bool,
    check_dropout,
    check_recipe_choices,
    check_size,
    index_of,
    same_type,
)
from zoo.checks import check_number, check_positive_int


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
        recipe: A resolved recipe (`training.tasks.recipes.resolve`).
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
        recipe_choices: `{"section.key": value or values}`: recipe keys to
            search for every cell (not `DATA_KEYS`, nor the keys
            searched by the arguments above). Default: none.
        seeds_per_trial: Models trained per trial, on seeds `train.seed`,
            `train.seed + 1`, ...; the trial scores their mean. Default: 1.
        name, tunable: As in `keras_tuner.HyperModel`.
        **cell_option_choices: A cell option and its value(s), e.g.
            `num_choices=(2, 4)`; overrides `CELL_OPTION_CHOICES`. An option
            of some other registered cell that no searched cell takes is
            dropped (`dropped_options`), so one list of options serves
            searches of different cells.

    Booleans, and values of more than one type (`carry_forward="soft"` or
    `False`), are searched as their JSON text and decoded (`decoded`): Keras
    Tuner 1.4 takes one type per choice and stores booleans as 0 and 1.

    Example:

    >>> recipe = training.tasks.recipes.resolve("dyck2_mlstm")
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
        recipe_choices=None,
        seeds_per_trial=1,
        name=None,
        tunable=True,
        **cell_option_choices,
    ):
        if cells is None:
            cells = (recipe.model.cell,)
        cells = as_choices("cells", cells, check_any)
        for cell in cells:
            zoo.get_cell_class(cell)  # an unknown name is a ValueError
        if len(set(cells)) != len(cells):
            raise ValueError(f"`cells` must not repeat a name; received {cells!r}.")
        self.units = as_choices("units", units, check_size)
        self.num_layers = as_choices("num_layers", num_layers, check_size)
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
        self.dropout = as_choices("dropout", dropout, check_dropout)
        # What the recipe's builder takes (a tagger's and a classifier's take
        # `bidirectional`, the Dyck-RNN's no layers).
        self.model_keys = {field.name for field in dataclasses.fields(recipe.model)}
        if bidirectional is None:
            bidirectional = getattr(recipe.model, "bidirectional", False)
        self.bidirectional = as_choices("bidirectional", bidirectional, check_bool)
        if any(self.bidirectional) and "bidirectional" not in self.model_keys:
            raise ValueError(
                "`bidirectional` reads each string right to left too, which only "
                "a tagger or a classifier may; expected False for task.kind "
                f"{recipe.task.kind!r}, received {bidirectional!r}."
            )
        if param_budget is not None:
            check_positive_int("param_budget", param_budget)
        check_number("budget_tolerance", budget_tolerance, 0, 1, low_open=True)
        check_positive_int("max_units", max_units)
        check_number("max_units", max_units, 1, range_of(ModelArguments, "units").high)
        check_positive_int("seeds_per_trial", seeds_per_trial)
        accepted = set().union(*(cell_options(cell) for cell in cells))
        registered = set().union(*map(cell_options, zoo.available_cells()))
        for option in cell_option_choices:
            if option not in registered:
                raise ValueError(
                    f"`{option}` is not an option of any cell; expected one of: "
                    f"{', '.join(sorted(CELL_OPTION_CHOICES))} or another "
                    "constructor argument of the searched cells "
                    f"({', '.join(cells)})."
                )
        choices = {
            option: values
            for option, values in CELL_OPTION_CHOICES.items()
            if option in accepted
        }
        choices.update(
            (option, values)
            for option, values in cell_option_choices.items()
            if option in accepted
        )
        self.dropped_options = tuple(
            option for option in cell_option_choices if option not in accepted
        )
        self.recipe_choices = check_recipe_choices(recipe, recipe_choices or {})
        super().__init__(name=name, tunable=tunable)
        self.recipe = recipe
        self.cells = cells
        self.param_budget = param_budget
        self.budget_tolerance = budget_tolerance
        self.max_units = max_units
        self.cell_option_choices = {
            option: same_type(as_choices(option, values, check_any))
            for option, values in choices.items()
        }
        self.seeds_per_trial = seeds_per_trial
        searched = {
            "cell": self.cells,
            "bidirectional": self.bidirectional,
            **self.cell_option_choices,
            **self.recipe_choices,
        }
        # Searched as JSON text: Keras Tuner takes one type per choice, and
        # turns booleans into 0 and 1.
        self._encoded = {
            name
            for name, values in searched.items()
            if len({type(v) for v in values}) > 1 or isinstance(values[0], bool)
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
        """The tuner objective: the task's `search_objective`."""
        name, direction = self.task.search_objective
        return keras_tuner.Objective(name, direction=direction)

    def _choice(self, hp, name, values, default, parents=None):
        if len(values) == 1:
            return values[0]
        index = index_of(values, default)
        if name in self._encoded:
            values = [json.dumps(value) for value in values]
        default = values[0 if index is None else index]
        if parents is None:
            return self.decoded(name, hp.Choice(name, list(values), default=default))
        with hp.conditional_scope("cell", list(parents)):
            value = hp.Choice(name, list(values), default=default)
        return self.decoded(name, value)

    def decoded(self, name, value):
        """A value of hyperparameter `name` as the recipe takes it."""
        if name in self._encoded and value is not None:
            return json.loads(value)
        return value

    def recipe_for(self, hp):
        """Returns the recipe of the trial `hp` (declaring its hyperparameters).

        With `param_budget`, `model.units` is the hidden size whose model is
        closest to the budget; `check_budget` says whether it is close enough.
        """
        base = self.recipe.model
        cell = self._choice(hp, "cell", self.cells, base.cell)
        options = {k: v for k, v in base.options.items() if k in cell_options(cell)}
        for option, values in self.cell_option_choices.items():
            parents = [c for c in self.cells if option in cell_options(c)]
            conditional = len(parents) < len(self.cells)
            value = self._choice(
                hp,
                option,
                values,
                base.options.get(option),
                parents if conditional else None,
            )
            if cell in parents:
                options[option] = value
        trial = {
            name: self._choice(hp, name, values, self.recipe.value(name))
            for name, values in self.recipe_choices.items()
        }
        trial.update({"model.cell": cell, "model.options": options})
        for key, values in (
            ("num_layers", self.num_layers),
            ("dropout", self.dropout),
            ("bidirectional", self.bidirectional),
        ):
            if key in self.model_keys:
                trial[f"model.{key}"] = self._choice(
                    hp, key, values, getattr(base, key)
                )
        if isinstance(self.learning_rate, tuple):
            low, high = self.learning_rate
            default = self.recipe.train.learning_rate
            trial["train.learning_rate"] = hp.Float(
                "learning_rate",
                low,
                high,
                sampling="log",
                default=default if low <= default <= high else low,
            )
        else:
            trial["train.learning_rate"] = self.learning_rate
        if self.param_budget is None:
            trial["model.units"] = self._choice(hp, "units", self.units, base.units)
            return self.recipe.with_values(trial)
        recipe = self.recipe.with_values(trial)
        return recipe.with_values({"model.units": self.units_for_budget(recipe)})

    def count_parameters(self, recipe):
        """Returns the number of parameters of `recipe`'s model (cached)."""
        key = json.dumps(dataclasses.asdict(recipe.model), sort_keys=True)
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
            trial = recipe.with_values({"model.units": int(units)})
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
            model = recipe.model
            layers = getattr(model, "num_layers", 1)
            raise keras_tuner.errors.FailedTrialError(
                f"No hidden size puts {model.cell} (num_layers="
                f"{layers}, options {model.options}) within "
                f"{self.budget_tolerance:.0%} of the parameter budget {budget:,}: "
                f"the closest, units={model.units}, has {count:,} parameters "
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
        options = self.recipe.model.options
        for cell in self.cells:
            values = {
                "model.cell": cell,
                "model.units": 1,
                "model.options": {
                    k: v for k, v in options.items() if k in cell_options(cell)
                },
            }
            if "num_layers" in self.model_keys:
                values["model.num_layers"] = min(self.num_layers)
            smallest[cell] = self.count_parameters(self.recipe.with_values(values))
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
        keras.utils.set_random_seed(recipe.train.seed)
        return self._trial_task(recipe).build_model()

    def fit(self, hp, model, *args, **kwargs):
        """Trains `model` as `training.train` trains the trial's recipe.

        Compiles and fits with `training.core.fitting.fit`: the data, epochs and
        callbacks come from the recipe, with the task's `search_callbacks`
        (which log the objective) first; the tuner's keyword arguments
        (`callbacks`, `epochs`, `initial_epoch` from Hyperband, `verbose`,
        ...) go on to `model.fit`. Data arguments (`x`, `y`, `batch_size`,
        `validation_data`, ...) are refused: the trial's data are the
        recipe's. The history also records the model's parameter count as
        `parameters`. With `seeds_per_trial` above 1, `model` is the first
        seed's; a model is built and trained for each further seed, the
        histories come back as a list (Keras Tuner scores their mean), and
        history `i` also logs the objective as `seed_i_OBJECTIVE`, which
        the trial's metrics keep per seed (`seed_scores`).

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
        task = self._trial_task(recipe)
        callbacks = list(kwargs.pop("callbacks", ()))
        verbose = kwargs.pop("verbose", 2)
        objective = self.objective.name
        histories = []
        for index in range(self.seeds_per_trial):
            if index:
                keras.utils.set_random_seed(self.seed_of(recipe, index))
                model = task.build_model()
            history = fitting.fit(
                model,
                task,
                callbacks=[*task.search_callbacks(), *callbacks],
                verbose=verbose,
                **kwargs,
            )
            epochs_run = len(history.history.get("loss", ()))
            history.history["parameters"] = [float(count)] * epochs_run
            if self.seeds_per_trial > 1 and objective in history.history:
                history.history[seed_metric(index, objective)] = list(
                    history.history[objective]
                )
            histories.append(history)
        return histories[0] if len(histories) == 1 else histories

    @staticmethod
    def seed_of(recipe, index):
        """The seed the weights of a trial's model `index` are drawn from."""
        return (recipe.train.seed + index) % 2**32

    def seed_scores(self, trial):
        """`[objective of each seed]` of a finished trial (None where missing)."""
        objective = self.objective.name
        scores = []
        for index in range(self.seeds_per_trial):
            name = seed_metric(index, objective)
            exists = trial.metrics.exists(name)
            scores.append(trial.metrics.get_last_value(name) if exists else None)
        return scores


def seed_metric(index, objective):
    """The name a trial's metrics keep seed `index`'s objective under."""
    return f"seed_{index}_{objective}"
