"""Limits on what several keys of a recipe ask for together.

Each key has its own range (`option(low=..., high=...)`), far above every
committed recipe, but keys each within range can still ask together for a
model no machine holds: `model.units=8192 model.num_layers=64` is 4.3e9
weights in one gate's recurrent kernels alone (17 GB in float32), and
`train.batch_size=65536` with them is 3.4e10 numbers of state for every
step. Issue 62 found such a recipe accepted: it then built (or tried to)
for minutes before the machine ran out of memory. `check(recipe)` refuses
one in one line naming the keys, the estimate and the bound, before anything
is built. The estimates read the recipe's keys alone (no model is built, no
data read), so they count what grows with those keys, not every weight:

- `RECURRENT_WEIGHTS`: `model.num_layers × model.units²` (× 2 for a
  bidirectional model), the recurrent kernel of one gate over the layers (a
  cell has 1 to 4 gates; the embedding and the decoder grow with the
  vocabulary, which the data decide);
- `STEP_STATE`: `train.batch_size × model.num_layers × (model.units +
  stack entries)` (× 2 bidirectional), the numbers of one step's state for
  a batch, which training keeps for every step; a stack cell's stack holds
  `model.options.stack_depth × model.options.stack_width` entries per
  sequence (the cell's defaults where the recipe sets none).

Each bound is 2**28 (268,435,456 numbers, 1 GiB in float32), over 50 times
what any committed recipe at either scale or table row asks for (the
largest, `mlstm_enwik8` at paper scale: 1 × 1900² recurrent weights, 128 ×
1900 numbers of state a step; tests/training/core/config/size_limits_test.py).
A model that needs more is not a recipe's: build it with the zoo's builders.
"""

from training.core.config.option_fields import RecipeError
from zoo.registry import option_default

RECURRENT_WEIGHTS = 2**28
STEP_STATE = 2**28


def cell_option(model, name):
    """`model.options[name]`, else the default of the cell's constructor
    (or of a class above it); 0 where the cell takes no such option or the
    value is not an integer (the cell refuses it when it is built)."""
    value = model.options.get(name)
    if value is None:
        value = option_default(model.cell, name)
    return value if type(value) is int and value > 0 else 0


def estimates(recipe):
    """`{name: (value, how it is counted, bound, what it counts)}` of the
    recipe's sizes."""
    model = recipe.model
    layers = getattr(model, "num_layers", 1)
    directions = 2 if getattr(model, "bidirectional", False) else 1
    units = model.units or 0
    depth, width = (cell_option(model, name) for name in ("stack_depth", "stack_width"))
    stack = depth * max(width, 1)
    twice = " × 2 directions" if directions > 1 else ""
    batch = recipe.train.batch_size
    if stack:
        state_keys = "(model.units + model.options.stack_depth × stack_width)"
        state_values = f"({units} + {depth} × {max(width, 1)})"
    else:
        state_keys, state_values = "model.units", f"{units}"
    return {
        "recurrent_weights": (
            directions * layers * units**2,
            f"model.num_layers × model.units² = {layers} × {units}²{twice}",
            RECURRENT_WEIGHTS,
            "recurrent weights of one gate",
        ),
        "step_state": (
            batch * directions * layers * (units + stack),
            f"train.batch_size × model.num_layers × {state_keys} = "
            f"{batch} × {layers} × {state_values}{twice}",
            STEP_STATE,
            "numbers of state a step keeps for its batch",
        ),
    }


def check(recipe):
    """A one-line `RecipeError` if the recipe's keys ask together for more
    than a bound of this module."""
    for value, counted, bound, what in estimates(recipe).values():
        if value > bound:
            raise RecipeError(
                f"{counted} is {value:,} {what}, above the bound of {bound:,} "
                "(training.core.config.size_limits); expected smaller values of "
                "these keys."
            )
