"""Recipe and table files: finding one by name, reading its TOML, writing a recipe.

Experiment recipes live in `training/recipes/` (`RECIPE_DIR`, read by
`training.tasks.recipes.resolve`) and reproduction tables in `training/tables/`
(`TABLE_DIR`, read by `training.reproduction.table_schema.load_table`); either is named
by its file's stem or given as any path ending in `.toml` (`find`). Each
error is one line, of the caller's error class (`RecipeError`,
`TableError`).

`write_recipe` is the inverse of `recipes.resolve`: a resolved recipe
(a Keras Tuner search's best, say) written as a recipe file that resolves
back to it.
"""

import json
import math
import re
import tomllib
from pathlib import Path

# training/recipes/ and training/tables/: folders of TOML files, not packages.
TRAINING_DIR = Path(__file__).parents[1]
RECIPE_DIR = TRAINING_DIR / "recipes"
TABLE_DIR = TRAINING_DIR / "tables"
# The scales a recipe is read at (`training.tasks.recipes.resolve`): here, where a
# command's parser reads them without importing Keras.
SCALES = ("small", "paper")
# The tables of a recipe file that `write_recipe` writes, in order.
RECIPE_SECTIONS = ("task", "model", "train")


def available(folder):
    """The sorted names of the `.toml` files in `folder`."""
    return sorted(path.stem for path in Path(folder).glob("*.toml"))


def find(name, folder, what, error):
    """The path of the `what` file `name`: `folder/NAME.toml`, or `name` itself.

    Args:
        name: A file name in `folder` without `.toml`, or a path ending in
            `.toml`.
        folder: Where the shipped files are (`RECIPE_DIR`, `TABLE_DIR`).
        what: What the file holds, for messages: "recipe" or "table".
        error: The exception class raised, with a one-line message, for a
            path that does not exist or an unknown name.
    """
    if str(name).endswith(".toml"):
        path = Path(name)
        if not path.is_file():
            raise error(f"{what.capitalize()} file {str(path)!r} does not exist.")
        return path
    names = available(folder)
    if name not in names:
        raise error(
            f"Unknown {what} {name!r}; expected one of: {', '.join(names)}, or a "
            "path ending in .toml."
        )
    return Path(folder) / f"{name}.toml"


def read(path, what, error):
    """The TOML content of the `what` file at `path`; a one-line `error` if not TOML."""
    try:
        with open(path, "rb") as file:
            return tomllib.load(file)
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as reason:
        raise error(
            f"{what.capitalize()} file {str(path)!r} is not valid TOML: {reason}."
        ) from None


def _toml_key(key):
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else json.dumps(key)


def _toml_value(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(item) for item in value) + "]"
    if isinstance(value, dict):
        items = (
            f"{_toml_key(k)} = {_toml_value(v)}"
            for k, v in value.items()
            if v is not None
        )
        return "{ " + ", ".join(items) + " }"
    raise ValueError(f"Cannot write {value!r} ({type(value).__name__}) as TOML.")


def _without_none(table):
    return {
        key: _without_none(value) if isinstance(value, dict) else value
        for key, value in table.items()
        if value is not None
    }


def recipe_content(recipe):
    """What the recipe file of a resolved recipe holds, as `tomllib` reads it.

    Its description, source and `RECIPE_SECTIONS` tables (`recipe.tables()`:
    the keys of its kind) with every `None` ("not set", which is the default
    of such a key) left out; `model.options` only when it sets an option.
    """
    tables = recipe.tables()
    content = {key: tables[key] for key in ("description", "source")}
    for section in RECIPE_SECTIONS:
        values = _without_none(tables[section])
        if section == "model" and not values.get("options"):
            values.pop("options", None)
        content[section] = values
    return content


def recipe_toml(recipe):
    """A resolved recipe as the text of a recipe file (`None` values left out)."""
    content = recipe_content(recipe)
    lines = [
        f"description = {_toml_value(content['description'])}",
        f"source = {_toml_value(content['source'])}",
    ]
    for section in RECIPE_SECTIONS:
        lines += ["", f"[{section}]"]
        for key, value in content[section].items():
            if key != "options":
                lines.append(f"{_toml_key(key)} = {_toml_value(value)}")
    options = content["model"].get("options", {})
    if options:
        lines += ["", "[model.options]"]
        lines += [f"{_toml_key(k)} = {_toml_value(v)}" for k, v in options.items()]
    return "\n".join(lines) + "\n"


def write_recipe(recipe, path):
    """Writes `recipe` as a recipe file that `recipes.resolve(path)` reads back.

    The file is read back at once: its content must be `recipe_content`'s
    (what `resolve` merges over the defaults to give the recipe again).

    Raises:
        ValueError: the file would not read back as the same recipe.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(recipe_toml(recipe))
    content, read_back = recipe_content(recipe), read(path, "recipe", ValueError)
    for section in RECIPE_SECTIONS:
        if read_back.get(section) != content[section]:
            raise ValueError(
                f"Recipe file {str(path)!r} does not read back as the recipe's "
                f"[{section}] table."
            )
    return path
