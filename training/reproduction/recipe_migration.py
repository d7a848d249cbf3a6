"""Recipes of the full form written in their typed form, once (issue 58).

Before recipes were typed, a run's `recipe.json`, a search's settings
(`SEARCH_SETTINGS`) and its `best_recipe.toml` held every key of every task
kind, those of other kinds (and training options the kind does not take)
at their defaults (`recipe_loader.full_form_keys`), which readers left out.
Readers now refuse that form in one line (`recipe_loader.EarlierForm`);
`python -m training.migrate` writes each such file without those keys, read
back first as the reader now reads it and checked to be the recipe the
earlier reader read (`Recipe.run_identity`, by which records are found).
A file already typed is left as it is. A search's settings also gain the
settings earlier searches wrote only where they were not their defaults
(`_later_settings`). Each `migrate_*` returns what it changed, in a few
words, or None.
"""

import json
import re
import tomllib
from pathlib import Path

from training.core import file_schema, recipe_files
from training.core.callbacks import write_atomically
from training.core.config import recipe_loader
from training.runs import runs
from training.tasks import recipes

# A search's settings, in its project and its record (the floor above's
# `tuning.search_records.SETTINGS`): its `recipe` is a saved recipe.
SEARCH_SETTINGS = "zoo_search.json"


def migrate_recipe_form(path):
    """Writes the recipe of the full form at `path` (a `recipe.json`) without
    the keys of other kinds, at their defaults; what it changed."""
    path = Path(path)
    value = runs.read_json(path)
    keys = _full_form_keys(value)
    if not keys:
        return None
    typed = _typed(value, keys)
    _check_typed(typed, value, keys, path)
    runs.write_json(path, typed)
    return f"{path.name}: {_left_out(keys)}"


def migrate_search_settings(folder):
    """Writes a search's settings in `folder` (`SEARCH_SETTINGS`) with its
    recipe in its typed form where it is of the full form, and with the
    settings an earlier search wrote only where they were not their defaults
    (`_later_settings`); what it changed."""
    path = Path(folder) / SEARCH_SETTINGS
    settings = runs.read_json(path) if path.is_file() else None
    if not isinstance(settings, dict):
        return None
    recipe = settings.get("recipe")
    keys = _full_form_keys(recipe)
    done, migrated = [], dict(settings)
    if keys:
        typed = _typed(recipe, keys)
        _check_typed(typed, recipe, keys, path)
        migrated["recipe"] = typed
        done.append(f"its recipe {_left_out(keys)}")
    added = {k: v for k, v in _later_settings(migrated).items() if k not in settings}
    if added:
        migrated.update(added)
        done.append(f"{', '.join(added)} written at the search's values")
    if not done:
        return None
    write_atomically(path, json.dumps(migrated, indent=2) + "\n")
    return f"{path.name}: {'; '.join(done)}"


def _later_settings(settings):
    """The values a search of an earlier format had for the settings it wrote
    only where they were not their defaults (`tuning.search_records.
    LATER_SETTINGS`, the floor above's): whether its layers were
    bidirectional, as the recipe says when the search was not told (as a
    list of choices), no recipe keys searched and one seed a trial."""
    recipe = settings.get("recipe")
    model = recipe.get("model") if isinstance(recipe, dict) else None
    bidirectional = (
        model.get("bidirectional", False) if isinstance(model, dict) else False
    )
    return {
        "bidirectional": [bidirectional],
        "recipe_choices": {},
        "seeds_per_trial": 1,
    }


def migrate_recipe_files(folder):
    """Writes each recipe file (`*.toml`) of the full form in `folder` without
    the lines of the keys of other kinds, at their defaults (in its tables
    and its `small` table); what it changed. Any other TOML file is left as
    it is."""
    done = []
    for path in sorted(Path(folder).glob("*.toml")):
        content = recipe_files.read(path, "recipe", ValueError)
        task, small = content.get("task"), content.get("small")
        kind = task.get("kind") if isinstance(task, dict) else None
        if not (isinstance(kind, str) and kind in recipes.KINDS):
            continue  # not a recipe file
        small = small if isinstance(small, dict) else {}
        lines = {"": _full_form_keys(content), "small.": _full_form_keys(small, kind)}
        keys = [where + key for where, found in lines.items() for key in found]
        if not keys:
            continue
        text = _without_lines(path.read_text(encoding="utf-8"), keys)
        typed = _typed(content, lines[""])
        if lines["small."]:
            typed["small"] = _typed(small, lines["small."])
        if tomllib.loads(text) != typed:
            raise ValueError(
                f"{str(path)!r}: its keys of other kinds cannot be left out line "
                "by line; expected one key a line, as python -m tuning.search "
                "writes: left as it was."
            )
        try:
            for scale in recipe_files.SCALES:  # each as `resolve` merges it
                merged = {}
                recipe_loader.merge(merged, content)
                if scale == "small":
                    recipe_loader.merge(merged, small)
                earlier = _earlier(merged, _full_form_keys(merged), path.stem, scale)
                recipe = recipes.from_content(typed, path.stem, scale)
                _same_identity(recipe, earlier)
        except ValueError as error:
            raise ValueError(f"{str(path)!r}: {error}: left as it was.") from None
        write_atomically(path, text)
        done.append(f"{path.name}: {_left_out(keys)}")
    return "; ".join(done) or None


def _full_form_keys(value, kind=None):
    """The full form's `section.key`s in the recipe `value` (none if it is no
    recipe of a known kind), of the kind `kind` if it names none."""
    if not isinstance(value, dict):
        return []
    task = value.get("task")
    kind = task.get("kind", kind) if isinstance(task, dict) else kind
    if not (isinstance(kind, str) and kind in recipes.KINDS):
        return []
    kinds = recipes.KINDS
    return recipe_loader.full_form_keys(value, kinds[kind], kinds)


def _typed(value, keys):
    """The tables `value` without the `section.key`s `keys`."""
    typed = dict(value)
    for key in keys:
        section, name = key.split(".")
        typed[section] = {k: v for k, v in typed[section].items() if k != name}
    return typed


def _earlier(value, keys, name=None, scale=None):
    """The recipe the reader of the full form read from the tables `value`
    (of a saved recipe, or a recipe file's merged at `scale`): built without
    the full form's `keys`."""
    name = value["name"] if name is None else name
    scale = value["scale"] if scale is None else scale
    words = (*recipe_loader.WORDS, *recipe_loader.SECTIONS)
    tables = _typed({key: value[key] for key in words if key in value}, keys)
    cls = recipe_loader.kind_class(tables, recipes.KINDS, name)
    return recipe_loader.build(tables, cls, name, scale)


def _check_typed(typed, value, keys, path):
    """A one-line `ValueError` unless the saved recipe `typed` reads back
    (as `runs.read_recipe` reads it) as the recipe of the full form `value`
    read without its `keys` (`_earlier`)."""
    schema = file_schema.Recipe(recipes.from_saved)
    try:
        recipe = file_schema.check(typed, schema, path, ValueError)
    except ValueError as error:
        raise ValueError(f"{str(error).rstrip('.')}: left as it was.") from None
    try:
        _same_identity(recipe, _earlier(value, keys))
    except ValueError as error:
        raise ValueError(f"{str(path)!r}: {error}: left as it was.") from None


def _same_identity(recipe, earlier):
    """A `ValueError` unless `recipe` is `earlier` (`Recipe.run_identity`)."""
    if recipe.run_identity() != earlier.run_identity():
        raise ValueError(
            "its typed form is not the recipe it held (Recipe.run_identity "
            "differs); expected the same"
        )


def _left_out(keys):
    shown = ", ".join(keys[:3]) + (f" and {len(keys) - 3} more" if keys[3:] else "")
    return f"typed, without {shown} (other kinds' keys, at their defaults)"


def _without_lines(text, keys):
    """The TOML `text` without the lines setting `keys` (`[small.]section.key`)."""
    table, kept = "", []
    for line in text.splitlines(keepends=True):
        header = re.fullmatch(r"\s*\[([\w.]+)\]\s*", line)
        table = header[1] if header else table
        key = re.match(r"\s*([A-Za-z0-9_-]+)\s*=", line)
        if not header and key and f"{table}.{key[1]}" in keys:
            continue
        kept.append(line)
    return "".join(kept)
