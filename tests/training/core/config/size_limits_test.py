import pytest

from training.core.config import size_limits
from training.core.config.option_fields import RecipeError
from training.reproduction import table_schema
from training.tasks import recipes

# Each bound is at least this many times what any committed recipe asks for.
MARGIN = 50


def committed():
    """`(where, recipe)` of every recipe at every scale and every table row."""
    for name in recipes.available_recipes():
        for scale in recipes.SCALES:
            yield f"{name} ({scale})", recipes.resolve(name, scale)
    for name in table_schema.available_tables():
        table = table_schema.load_table(name)
        for run in table_schema.plan(table, "unused", seeds=1):
            yield f"table {name}: {run.recipe.name}", run.recipe


def test_every_committed_recipe_and_row_is_far_below_each_bound():
    largest = {}
    for where, recipe in committed():
        for key, (value, _, bound, _) in size_limits.estimates(recipe).items():
            assert value * MARGIN <= bound, (where, key, value)
            largest[key] = max(largest.get(key, 0), value)
    # What the module's docstring names as the largest (mlstm_enwik8, paper).
    assert largest == {"recurrent_weights": 1900**2, "step_state": 128 * 1900}


@pytest.mark.parametrize(
    "recipe, overrides, message",
    [
        (
            "tiny_dyck_lstm",
            ["model.units=8192", "model.num_layers=8"],
            "model.num_layers × model.units² = 8 × 8192² is 536,870,912 recurrent "
            "weights of one gate, above the bound of 268,435,456",
        ),
        (
            "dyck_depth_lstm",
            ["model.units=8192", "model.num_layers=4", "model.bidirectional=true"],
            "= 4 × 8192² × 2 directions is 536,870,912",
        ),
        (
            "tiny_dyck_lstm",
            ["model.units=8192", "train.batch_size=65536"],
            "train.batch_size × model.num_layers × model.units = 65536 × 1 × 8192 "
            "is 536,870,912 numbers of state a step keeps for its batch",
        ),
        (
            "recognition_d2_diffstk_rnn",
            ["model.options.stack_depth=10000000"],
            "(model.units + model.options.stack_depth × stack_width) = "
            "32 × 1 × (8 + 10000000 × 5) is 1,600,000,256",
        ),
    ],
)
def test_a_combination_above_a_bound_is_one_line(recipe, overrides, message):
    with pytest.raises(RecipeError) as raised:
        recipes.resolve(recipe, "small", overrides)
    assert message in str(raised.value) and "\n" not in str(raised.value)


def test_each_key_at_its_own_limit_alone_passes():
    recipe = recipes.resolve("tiny_dyck_lstm", "small", ["model.units=8192"])
    assert recipe.model.units == 8192
    recipe = recipes.resolve("tiny_dyck_lstm", "small", ["model.num_layers=64"])
    assert recipe.model.num_layers == 64
