"""Experiment recipes: one TOML file per experiment of the papers.

A recipe file has four tables: `task` (what data and metrics; its `kind`
is one of `KINDS`), `model` (the zoo builder's arguments; `model.options`
goes to the cell), `train` (optimizer, epochs, callbacks) and `small`, which
holds the same tables again with the values that shrink the experiment from
the paper's scale to minutes on 2 CPU cores. `resolve` merges the recipe,
the scale and the user's `section.key=value` overrides into a
`training.core.config.recipe_loader.Recipe` of the kind's sections, refusing any
key the kind does not take and checking every value and combination before
any data is built; `from_saved` reads a run's `recipe.json` back. A recipe
file (or `recipe.json`) of the earlier, full form (every key of every kind)
is refused in one line naming `python -m training.migrate`, which writes
its typed form (`recipe_loader.EarlierForm`). Which keys a kind takes,
their defaults and ranges, are its section classes' (`training.core.config`,
`training.tasks`).
"""

from training.core import recipe_files
from training.core.config import recipe_loader
from training.core.config.option_fields import RecipeError, field_names
from training.core.config.recipe_loader import Recipe, parse_override  # noqa: F401
from training.tasks import TASKS

SCALES = recipe_files.SCALES
# The task kinds: each kind's `task` section class, from the task registry.
KINDS = {kind: task.options for kind, task in TASKS.items()}


def available_recipes():
    """Returns the sorted names of the recipe files."""
    return recipe_files.available(recipe_files.RECIPE_DIR)


def resolve(name, scale="small", overrides=()):
    """Returns the `Recipe` `name` at `scale` with `overrides` applied.

    `name` is a recipe in `training/recipes/` or a path to a `.toml` file;
    each override is `section.key=value` (`model.options={...}` replaces
    the cell's options, `model.options.NAME=value` sets one).

    Raises:
        RecipeError: unknown recipe, scale or key, a malformed override, or
            a value or combination the recipe's sections refuse.
    """
    path = recipe_files.find(name, recipe_files.RECIPE_DIR, "recipe", RecipeError)
    if scale not in SCALES:
        raise RecipeError(f"Unknown scale {scale!r}; expected one of: small, paper.")
    content = recipe_files.read(path, "recipe", RecipeError)
    try:
        return from_content(content, path.stem, scale, overrides)
    except recipe_loader.EarlierForm as earlier:
        raise RecipeError(earlier.line(path)) from None


def from_content(content, name, scale, overrides=()):
    """The `Recipe` of a recipe file's tables `content` (its TOML, read) at
    `scale` with `overrides` applied, as `resolve` reads the file `name`.

    Raises:
        RecipeError: as `resolve`; an `EarlierForm` for the full form.
    """
    tables = {}
    recipe_loader.merge(tables, content)
    if scale == "small":
        small = content.get("small", {})
        if not isinstance(small, dict):
            raise RecipeError("Recipe key 'small' must be a table.")
        recipe_loader.merge(tables, small)
    recipe_loader.check_typed(tables, KINDS)
    for text in overrides:
        recipe_loader.set_key(tables, *parse_override(text))
    options = recipe_loader.kind_class(tables, KINDS, name)
    return recipe_loader.build(tables, options, name, scale)


def from_saved(value):
    """The `Recipe` of a run's saved `recipe.json` (`recipe_loader.from_saved`)."""
    return recipe_loader.from_saved(value, KINDS)


def task_keys():
    """Every key of the `task` section of some kind (`task.kind` aside)."""
    return sorted(
        {field for options in KINDS.values() for field in field_names(options)}
    )
