import keras
import keras_tuner
import pytest

import zoo
import zoo.cells.diffstk  # noqa: F401  registers diffstk_*
import zoo.cells.multi_matrix  # noqa: F401  registers mmrnn, mmlstm
import zoo.cells.second_order  # noqa: F401  registers second_order_lstm
import zoo.cells.stack_rnn  # noqa: F401  registers stack_rnn
from tests.training.tiny import LSTM_RECOGNIZER, tiny_recipe
from training.tasks import make_task, recipes
from tuning.hypermodels import RecurrentHyperModel


@pytest.fixture(scope="module")
def recipe():
    return recipes.resolve("tiny_dyck_lstm")


@pytest.fixture(scope="module")
def task(recipe):
    return make_task(recipe)


def declared(hypermodel, **values):
    """The hyperparameters of `hypermodel`'s space, with `values` chosen."""
    hp = keras_tuner.HyperParameters()
    hypermodel.recipe_for(hp)
    hp.values.update(values)
    return hp


def conditions(hp, name):
    (entry,) = [h for h in hp.space if h.name == name]
    return [(c.name, list(c.values)) for c in entry.conditions]


def bottom_cell(model):
    """The cell of `model`'s first recurrent layer."""
    return zoo.model_parts(model).recurrent[0].cell


def test_cell_options_are_conditional_on_the_cells_that_take_them(recipe, task):
    hypermodel = RecurrentHyperModel(
        recipe, cells=["lstm", "mmlstm", "second_order_lstm"], task=task
    )
    hp = declared(hypermodel)
    assert conditions(hp, "num_choices") == [("cell", ["mmlstm"])]
    assert conditions(hp, "num_cells") == [("cell", ["second_order_lstm"])]
    assert conditions(hp, "units") == []
    assert not any(h.name == "stack_depth" for h in hp.space)

    hp = declared(hypermodel, cell="mmlstm", num_choices=8)
    assert hypermodel.recipe_for(hp).model.options == {"num_choices": 8}
    model = hypermodel.build(hp)
    assert bottom_cell(model).num_choices == 8

    hp = declared(hypermodel, cell="lstm", num_choices=8, num_cells=3)
    assert hypermodel.recipe_for(hp).model.options == {}
    cell = bottom_cell(hypermodel.build(hp))
    assert isinstance(cell, keras.layers.LSTMCell)


def test_option_of_every_searched_cell_is_not_conditional(recipe, task):
    hypermodel = RecurrentHyperModel(
        recipe, cells=["mmrnn", "mmlstm"], num_choices=[3, 5], task=task
    )
    hp = declared(hypermodel, cell="mmrnn", num_choices=5)
    assert conditions(hp, "num_choices") == []
    assert hypermodel.recipe_for(hp).model.options == {"num_choices": 5}


def test_recipe_for_sets_the_searched_values(recipe, task):
    hypermodel = RecurrentHyperModel(recipe, units=[4, 12], task=task)
    hp = declared(hypermodel, units=12, num_layers=2, dropout=0.2, learning_rate=3e-3)
    trial = hypermodel.recipe_for(hp)
    assert trial.model.units == 12
    assert trial.model.num_layers == 2
    assert trial.model.dropout == 0.2
    assert trial.train.learning_rate == 3e-3
    assert trial.task == recipe.task
    assert recipe.model.units == 8  # the base recipe is left as it was
    model = hypermodel.build(hp)
    assert [layer.name for layer in model.layers if "lstm" in layer.name] == [
        "lstm_0",
        "lstm_1",
    ]
    assert bottom_cell(model).units == 12


def test_single_values_are_fixed_not_searched(recipe, task):
    hypermodel = RecurrentHyperModel(
        recipe, units=6, num_layers=1, learning_rate=2e-3, dropout=0.1, task=task
    )
    hp = keras_tuner.HyperParameters()
    trial = hypermodel.recipe_for(hp)
    assert hp.space == []
    assert trial.model.units == 6
    assert trial.model.dropout == 0.1
    assert trial.train.learning_rate == 2e-3


def test_choice_defaults_to_the_recipe_value(recipe, task):
    hypermodel = RecurrentHyperModel(recipe, units=[4, 8, 16], task=task)
    hp = keras_tuner.HyperParameters()
    trial = hypermodel.recipe_for(hp)
    assert trial.model.units == recipe.model.units == 8
    assert trial.train.learning_rate == recipe.train.learning_rate


@pytest.mark.parametrize(
    "cell, num_layers, options",
    [
        ("lstm", 1, {}),
        ("lstm", 2, {}),
        ("mmlstm", 1, {"num_choices": 4}),
        ("second_order_lstm", 2, {"num_cells": 3}),
        ("diffstk_rnn", 1, {"stack_depth": 16}),
    ],
)
def test_param_budget_derives_the_closest_units(
    recipe, task, cell, num_layers, options
):
    budget = 6000
    hypermodel = RecurrentHyperModel(
        recipe, cells=[cell], num_layers=num_layers, param_budget=budget, task=task
    )
    hp = declared(hypermodel, **options)
    assert not any(h.name == "units" for h in hp.space)
    trial = hypermodel.recipe_for(hp)
    count = hypermodel.check_budget(trial)
    assert abs(count - budget) <= 0.05 * budget
    assert hypermodel.build(hp).count_params() == count
    # No other hidden size is closer to the budget.
    for units in (trial.model.units - 1, trial.model.units + 1):
        other = trial.with_values({"model.units": units})
        assert abs(hypermodel.count_parameters(other) - budget) >= abs(count - budget)


def test_unreachable_budget_fails_the_trial_not_the_build(recipe, task):
    hypermodel = RecurrentHyperModel(
        recipe, cells=["mmlstm"], num_choices=8, param_budget=100, task=task
    )
    hp = declared(hypermodel)
    model = hypermodel.build(hp)  # building (also done to explore the space) works
    assert bottom_cell(model).units == 1
    with pytest.raises(keras_tuner.errors.FailedTrialError, match="budget 100"):
        hypermodel.fit(hp, model)


def test_fit_trains_the_recipe_and_records_the_parameter_count(recipe, task):
    # 2 epochs, not Keras's default of 1: the count shows the recipe's is used
    recipe = recipe.with_values({"train.epochs": 2})
    task = task.with_recipe(recipe)
    hypermodel = RecurrentHyperModel(recipe, units=4, num_layers=1, task=task)
    hp = declared(hypermodel)
    model = hypermodel.build(hp)
    history = hypermodel.fit(hp, model, verbose=0)
    assert len(history.history["val_loss"]) == 2
    assert history.history["parameters"] == [float(model.count_params())] * 2
    steps = recipe.train.max_steps_per_epoch
    assert int(model.optimizer.iterations) == 2 * steps


def test_fit_passes_the_tuners_arguments_on_and_refuses_data(recipe, task):
    hypermodel = RecurrentHyperModel(recipe, units=4, num_layers=1, task=task)
    hp = declared(hypermodel)
    model = hypermodel.build(hp)
    seen = []
    callback = keras.callbacks.LambdaCallback(on_epoch_end=lambda e, _: seen.append(e))
    history = hypermodel.fit(hp, model, epochs=1, verbose=0, callbacks=[callback])
    assert len(history.history["val_loss"]) == 1 and seen == [0]
    trial_rate = hypermodel.recipe_for(hp).train.learning_rate
    assert float(model.optimizer.learning_rate) == pytest.approx(trial_rate)
    with pytest.raises(ValueError, match="expected no positional arguments"):
        hypermodel.fit(hp, model, [[1, 2]], verbose=0)
    with pytest.raises(ValueError, match="data decide batch_size"):
        hypermodel.fit(hp, model, batch_size=8, verbose=0)


@pytest.mark.parametrize(
    "arguments, message",
    [
        ({"cells": ["nope"]}, "Unknown cell 'nope'"),
        ({"cells": ["lstm", "lstm"]}, "`cells` must not repeat"),
        ({"cells": []}, "`cells` must be a value or a non-empty list"),
        ({"units": [8, 0]}, "`units` must be a positive integer; received 0"),
        ({"num_layers": 1.5}, "`num_layers` must be a positive integer"),
        ({"learning_rate": (1e-2, 1e-4)}, "0 < low < high"),
        ({"learning_rate": -1.0}, r"`learning_rate` must be in \(0"),
        ({"dropout": [0.0, 1.0]}, r"`dropout` must be in \[0, 1\)"),
        ({"param_budget": 0}, "`param_budget` must be a positive integer"),
        ({"budget_tolerance": 0}, r"`budget_tolerance` must be in \(0"),
        ({"nope": [8, 16]}, "`nope` is not an option of any cell"),
        ({"seeds_per_trial": 0}, "`seeds_per_trial` must be a positive integer"),
        (
            {"recipe_choices": {"train.learning_rate": [1e-3, 1e-2]}},
            "searched with `learning_rate`",
        ),
        ({"recipe_choices": {"task.nope": [1, 2]}}, "`task.nope` is not a recipe key"),
        ({"recipe_choices": {"epochs": [1, 2]}}, "`epochs` is not a recipe key"),
        (
            {"recipe_choices": {"task.m": [2, 4]}},
            "`task.m` decides the task's data",
        ),
        (
            {"recipe_choices": {"train.precision": ["float32", "float64"]}},
            "Unknown train.precision 'float64'",
        ),
        (
            {"recipe_choices": {"task.next_symbol_loss": ["all", "positives"]}},
            "`task.next_symbol_loss` is not a recipe key of task.kind 'dyck'",
        ),
        ({"bidirectional": "yes"}, "`bidirectional` must be True or False"),
        ({"bidirectional": [False, True]}, "expected False for task.kind 'dyck'"),
    ],
)
def test_invalid_arguments(recipe, arguments, message):
    with pytest.raises(ValueError, match=message):
        RecurrentHyperModel(recipe, **arguments)


@pytest.mark.parametrize("kind", ["dyck_depth", "acceptability"])
def test_a_search_covers_taggers_and_classifiers_both_ways(kind):
    recipe = tiny_recipe(kind, extra=["model.bidirectional=false"])
    hypermodel = RecurrentHyperModel(
        recipe,
        cells=["lstm", "stack_rnn"],
        units=4,
        num_layers=[1, 2],
        bidirectional=[False, True],
        stack_depth=4,
    )
    hp = declared(hypermodel, cell="stack_rnn", num_layers=2, bidirectional="true")
    trial = hypermodel.recipe_for(hp)
    assert trial.model.bidirectional is True
    assert trial.model.options == {"stack_depth": 4}
    model = hypermodel.build(hp)
    layer = zoo.model_parts(model).recurrent[1]
    assert isinstance(layer, keras.layers.Bidirectional)
    assert layer.forward_layer.cell.stack_depth == 4
    # The task's fit path (head, metrics, data) is the same for every cell
    # and depth: trained on a one-layer bidirectional LSTM trial, whose graph
    # traces in a fraction of the two-layer stack RNN's.
    hp = declared(hypermodel, cell="lstm", num_layers=1, bidirectional="true")
    model = hypermodel.build(hp)
    assert isinstance(zoo.model_parts(model).recurrent[0], keras.layers.Bidirectional)
    history = hypermodel.fit(hp, model, epochs=1, verbose=0)
    assert history.history["parameters"] == [float(model.count_params())]
    # Not searched: the recipe's own value.
    fixed = RecurrentHyperModel(recipe, units=4, num_layers=1)
    trial = fixed.recipe_for(keras_tuner.HyperParameters())
    assert trial.model.bidirectional is False


def test_an_option_no_searched_cell_takes_is_dropped(recipe, task):
    hypermodel = RecurrentHyperModel(
        recipe,
        stack_depth=[8, 16],
        forget_bias=[0, 1],
        unit_forget_bias=[False, True],
        task=task,
    )
    assert hypermodel.dropped_options == ("stack_depth", "forget_bias")
    hp = declared(hypermodel, unit_forget_bias="false")  # booleans as JSON text
    (entry,) = [h for h in hp.space if "bias" in h.name or "stack" in h.name]
    assert (entry.name, list(entry.values)) == ("unit_forget_bias", ["false", "true"])
    assert hypermodel.recipe_for(hp).model.options == {"unit_forget_bias": False}
    assert bottom_cell(hypermodel.build(hp)).unit_forget_bias is False


def test_values_of_several_types_are_searched_as_json_text():
    recipe = tiny_recipe("recognition")
    hypermodel = RecurrentHyperModel(
        recipe,
        cells=["stack_rnn", "diffstk_rnn"],
        units=4,
        num_layers=1,
        dropout=0.0,
        carry_forward=["soft", "hard", False],
        noise_stddev=[0, 0.1],
    )
    hp = declared(hypermodel, cell="diffstk_rnn", carry_forward="false")
    (entry,) = [h for h in hp.space if h.name == "carry_forward"]
    assert list(entry.values) == ['"soft"', '"hard"', "false"]
    assert conditions(hp, "carry_forward") == [("cell", ["diffstk_rnn"])]
    (noise,) = [h for h in hp.space if h.name == "noise_stddev"]
    assert list(noise.values) == [0.0, 0.1]  # one type: searched as they are
    options = hypermodel.recipe_for(hp).model.options
    assert options["carry_forward"] is False
    assert hypermodel.decoded("carry_forward", '"hard"') == "hard"
    cell = bottom_cell(hypermodel.build(hp))
    assert cell.carry_forward is False


def test_recipe_keys_are_searched_for_every_cell():
    recipe = tiny_recipe("recognition")
    hypermodel = RecurrentHyperModel(
        recipe,
        cells=["lstm", "diffstk_rnn"],
        units=4,
        num_layers=1,
        dropout=0.0,
        stack_depth=8,
        recipe_choices={"task.next_symbol_loss": ["all", "positives"]},
    )
    hp = declared(hypermodel, cell="lstm", **{"task.next_symbol_loss": "all"})
    assert conditions(hp, "task.next_symbol_loss") == []
    assert recipe.task.next_symbol_loss == "positives"
    trial = hypermodel.recipe_for(hp)
    assert trial.task.next_symbol_loss == "all"
    assert hypermodel.recipe_for(declared(hypermodel)).task == recipe.task


def test_recognition_is_scored_by_strict_accuracy_over_several_seeds():
    # An LSTM recognizer: the task and the seeds are what is tested.
    recipe = tiny_recipe("recognition", extra=["train.epochs=1", *LSTM_RECOGNIZER])
    hypermodel = RecurrentHyperModel(
        recipe, units=4, num_layers=1, dropout=0.0, seeds_per_trial=2
    )
    objective = hypermodel.objective
    assert (objective.name, objective.direction) == ("val_strict_positives", "max")
    hp = declared(hypermodel)
    model = hypermodel.build(hp)
    first = [w.copy() for w in model.get_weights()]
    histories = hypermodel.fit(hp, model, verbose=0)
    assert len(histories) == 2
    for index, history in enumerate(histories):
        logs = history.history
        assert len(logs["val_strict_positives"]) == 1
        assert (
            logs[f"seed_{index}_val_strict_positives"] == (logs["val_strict_positives"])
        )
    # The second seed's model started from other weights.
    keras.utils.set_random_seed(hypermodel.seed_of(recipe, 1))
    second = hypermodel.task.build_model().get_weights()
    assert any((a != b).any() for a, b in zip(first, second, strict=True))
    assert histories[0].history["loss"] != histories[1].history["loss"]
