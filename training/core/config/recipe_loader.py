"""Tables -> a checked `Recipe`: the generic loader of recipe files and records.

A recipe is read from tables (a recipe file's TOML, `section.key=value`
overrides, a run's `recipe.json`) in three steps: the tables are merged
(`merge`, `set_key`; `model.options` merges key by key), the task kind picks
the section classes (`kind_class`, from a registry of kinds), and `build`
makes the sections, refusing a key the kind does not take, checks every
value (`option_fields.check_fields`) and then each section's combinations
(`model.check()`, `task.check(recipe)`, `train.check(recipe)`). Every
error is a one-line `RecipeError`.

`Recipe.to_dict()` is what a run directory's `recipe.json` holds: the keys
that apply to the recipe's kind. A recipe of the earlier, full form (every
key of every kind, those of other kinds at their defaults: `full_form_keys`)
is refused in one line naming the file (`EarlierForm`); `python -m
training.migrate` writes its typed form.
"""

import copy
import dataclasses
import json
from pathlib import Path

from training.core.config import size_limits
from training.core.config.model_arguments import ModelArguments
from training.core.config.option_fields import (
    RecipeError,
    check_fields,
    default_of,
    field_names,
    missing_required,
    section_from_table,
    section_table,
)
from training.core.config.task_options import TaskOptions
from training.core.config.train_options import KIND_OPTIONS, TrainOptions

SECTIONS = ("task", "model", "train")
# The recipe's words about itself: text, not settings.
WORDS = ("description", "source")


@dataclasses.dataclass(frozen=True)
class Recipe:
    """A resolved recipe: its name and scale, words, and three sections.

    `task` is the kind's options (`task.kind` names the kind), `model` its
    builder's arguments, `train` the `TrainOptions`. Frozen: a changed
    recipe is a new one (`with_values`), checked as a resolved one is.
    """

    name: str
    scale: str
    description: str
    source: str
    task: TaskOptions
    model: ModelArguments
    train: TrainOptions

    def to_dict(self):
        """The recipe as `recipe.json` holds it: every key that applies to it."""
        skipped = [key for key in KIND_OPTIONS if key not in self.task.train_options]
        return {
            "description": self.description,
            "source": self.source,
            "task": {"kind": self.task.kind, **section_table(self.task)},
            "model": section_table(self.model),
            "train": section_table(self.train, leave_out=skipped),
            "name": self.name,
            "scale": self.scale,
        }

    def run_identity(self):
        """What tells runs of recipes apart: `to_dict()` without the name.

        The name is the recipe file's stem, not what trains: a recipe file
        renamed (`recognition_d2_diffstk_rnn` became
        `recognition_d2_diffstk_rnn_paper` when the tuned settings took its
        name) still names the runs, records and table rows it trained. Every
        word, setting and the scale must match.
        """
        identity = self.to_dict()
        del identity["name"]
        return json.dumps(identity, sort_keys=True)

    def tables(self):
        """`to_dict()` without the name and scale: what a recipe file sets."""
        tables = self.to_dict()
        del tables["name"], tables["scale"]
        return tables

    def keys(self):
        """Every `section.key` this recipe takes (`task.kind` included)."""
        tables = self.tables()
        return [*WORDS, *(f"{s}.{key}" for s in SECTIONS for key in tables[s])]

    def value(self, key):
        """The value of `section.key` (or `description`, `source`)."""
        if key not in self.keys():
            keys = ", ".join(self.keys())
            raise RecipeError(f"Unknown recipe key {key!r}; expected one of: {keys}.")
        section, _, name = key.partition(".")
        return getattr(getattr(self, section), name) if name else getattr(self, key)

    def with_values(self, values):
        """This recipe with `{"section.key": value}` set, checked as `build` checks.

        `model.options` is replaced whole; `model.options.NAME` sets one option.
        """
        tables = self.tables()
        for key, value in values.items():
            if key == "task.kind" and value != self.task.kind:
                raise RecipeError(
                    f"task.kind is {self.task.kind!r} here; expected a recipe of "
                    f"task.kind {value!r} to be resolved as one."
                )
            set_key(tables, key.split("."), copy.deepcopy(value))
        return build(tables, type(self.task), self.name, self.scale)


def merge(base, update, where=""):
    """Merges the tables `update` into `base`; `model.options` key by key.

    A key outside the recipe's shape (`description`, `source` and the
    sections) is a `RecipeError`, as is a value that is not a table where a
    table goes; the keys of each section are checked by `build`.
    """
    for key, value in update.items():
        if key == "small" and not where:
            continue
        name = where + key
        if not where and key not in (*WORDS, *SECTIONS):
            raise RecipeError(
                f"Unknown recipe key {name!r}; valid keys: {', '.join(WORDS)}, "
                f"{', '.join(s + '.KEY' for s in SECTIONS)}."
            )
        table = (not where and key in SECTIONS) or name == "model.options"
        if table and not isinstance(value, dict):
            raise RecipeError(f"Recipe key {name!r} must be a table.")
        if name == "model.options":
            base[key] = {**base.get(key, {}), **copy.deepcopy(value)}
        elif table:
            merge(base.setdefault(key, {}), value, f"{name}.")
        else:
            base[key] = copy.deepcopy(value)  # its type is checked by `build`


def set_key(tables, path, value):
    """Sets the key at `path` (`["train", "seed"]`) of `tables` to `value`.

    `["model", "options"]` replaces the whole table (a JSON object);
    anything else merges as a recipe file's table would (`merge`).
    """
    if path == ["model", "options"]:
        if not isinstance(value, dict):
            raise RecipeError(
                f"model.options must be a JSON object; received {value!r}."
            )
        tables.setdefault("model", {})["options"] = value
        return
    update = value
    for key in reversed(path):
        update = {key: update}
    merge(tables, update)


def parse_override(text):
    """Parses `a.b=value` into (["a", "b"], value); values are JSON or strings."""
    key, sep, raw = text.partition("=")
    if not sep or not key:
        raise RecipeError(f"Override {text!r} must look like section.key=value.")
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        value = raw
    return key.split("."), value


def kind_class(tables, kinds, name):
    """The options class of the kind `tables` names, from the registry `kinds`."""
    kind = tables.get("task", {}).get("kind")
    if kind is None:
        raise RecipeError(f"Recipe {name!r} does not set task.kind.")
    if type(kind) is not str:
        raise RecipeError(
            f"Recipe key 'task.kind' must be of type str; received {kind!r}."
        )
    if kind not in kinds:
        raise RecipeError(
            f"Unknown task.kind {kind!r}; expected one of: {', '.join(kinds)}."
        )
    return kinds[kind]


def build(tables, options_class, name, scale):
    """The checked `Recipe` of merged `tables` of the kind `options_class`.

    Keys a section does not take, required keys not set, values of the
    wrong type, out of range or not a choice, a training option the kind
    does not train with (`KIND_OPTIONS`) set, and combinations a section
    refuses are each a one-line `RecipeError`.
    """
    kind = options_class.kind
    where = f" for task.kind {kind!r}"
    task = {k: v for k, v in tables.get("task", {}).items() if k != "kind"}
    recipe = Recipe(
        name=name,
        scale=scale,
        description=tables.get("description", ""),
        source=tables.get("source", ""),
        task=section_from_table(options_class, copy.deepcopy(task), "task", where),
        model=section_from_table(
            options_class.model_arguments,
            copy.deepcopy(tables.get("model", {})),
            "model",
            where,
        ),
        train=section_from_table(
            TrainOptions, copy.deepcopy(tables.get("train", {})), "train"
        ),
    )
    follows = recipe.task.model_defaults(recipe.model)
    unset = {key: v for key, v in follows.items() if getattr(recipe.model, key) is None}
    recipe = dataclasses.replace(
        recipe, model=dataclasses.replace(recipe.model, **unset)
    )
    for section in ("task", "model"):
        missing = missing_required(getattr(recipe, section))
        if missing is not None:
            raise RecipeError(f"Recipe {name!r} does not set {section}.{missing}.")
    for key in WORDS:
        value = getattr(recipe, key)
        if type(value) is not str:
            raise RecipeError(
                f"Recipe key {key!r} must be of type str; received {value!r}."
            )
    for section in SECTIONS:
        check_fields(section, getattr(recipe, section))
    _check_kind_options(recipe)
    recipe.model.check()
    recipe.task.check(recipe)
    recipe.train.check(recipe)
    size_limits.check(recipe)  # what the keys ask for together
    return recipe


def _check_kind_options(recipe):
    """Refuses a training option of `KIND_OPTIONS` the kind does not take."""
    defaults = {
        field.name: default_of(field) for field in dataclasses.fields(recipe.train)
    }
    for key, what in KIND_OPTIONS.items():
        value = getattr(recipe.train, key)
        if key not in recipe.task.train_options and value != defaults[key]:
            shown = json.dumps(defaults[key])
            raise RecipeError(
                f"train.{key} {what}, which task.kind {recipe.task.kind!r} does not "
                f"take; expected {shown} (the default), received {json.dumps(value)}."
            )


class EarlierForm(RecipeError):
    """A recipe in the full form of an earlier format: `keys` (`section.key`)
    of other task kinds than its `kind`, each at its default. `line(path)`
    is the one-line error naming the file and the command that migrates it."""

    def __init__(self, kind, keys):
        self.kind, self.keys = kind, keys
        shown = ", ".join(keys[:3]) + (f" and {len(keys) - 3} more" if keys[3:] else "")
        super().__init__(
            f"it holds {shown}, which task.kind {kind!r} does not take, at their "
            "defaults (a recipe of an earlier format, with every key of every "
            "task kind); expected the keys of its kind alone"
        )

    def line(self, path):
        return (
            f"{str(path)!r} names no typed recipe: {self}: python -m "
            f"training.migrate {str(Path(path).parent)!r} brings it up to date."
        )


def from_saved(value, kinds):
    """The `Recipe` a run saved (`recipe.json`).

    `value` has the shape of a saved recipe (a name, a scale, the words and
    the three section tables). A key added since the run was trained takes
    its default (the behaviour the run had). An `EarlierForm` for a recipe
    of the full form (`check_typed`).
    """
    cls = kind_class(value, kinds, value["name"])
    tables = {key: value[key] for key in (*WORDS, *SECTIONS)}
    check_typed(tables, kinds)
    return build(tables, cls, value["name"], value["scale"])


def check_typed(tables, kinds):
    """An `EarlierForm` if `tables` (of a kind of the registry `kinds`) are
    of the full form (`full_form_keys`)."""
    kind = tables.get("task", {}).get("kind")
    if isinstance(kind, str) and kind in kinds:
        keys = full_form_keys(tables, kinds[kind], kinds)
        if keys:
            raise EarlierForm(kind, keys)


def full_form_keys(tables, cls, kinds):
    """The `section.key`s of `tables` that the kind `cls` does not take and
    that hold their defaults of other kinds (or of training options the
    kind does not take, `KIND_OPTIONS`): what the full form of an earlier
    format holds beside its kind's keys (`python -m training.migrate` leaves
    them out). A key with another value is not one: `build` refuses it.
    """
    defaults = {
        "task": _defaults(kinds.values()),
        "model": _defaults(kind.model_arguments for kind in kinds.values()),
        "train": {
            key: default_of(field)
            for field in dataclasses.fields(TrainOptions)
            if (key := field.name) in KIND_OPTIONS and key not in cls.train_options
        },
    }
    takes = {
        "task": {"kind", *field_names(cls)},
        "model": set(field_names(cls.model_arguments)),
        "train": set(field_names(TrainOptions)) - set(defaults["train"]),
    }
    return [
        f"{section}.{key}"
        for section in SECTIONS
        if isinstance(tables.get(section), dict)
        for key, item in tables[section].items()
        if key not in takes[section]
        and key in defaults[section]
        and _same(item, defaults[section][key])
    ]


def _same(value, default):
    """Whether a saved value is the default (`false` is not `0`)."""
    return value == default and isinstance(value, bool) == isinstance(default, bool)


def _defaults(classes):
    """`{field: default}` of every field of the section classes `classes`."""
    found = {}
    for cls in classes:
        for field in dataclasses.fields(cls):
            found.setdefault(field.name, default_of(field))
    return found
