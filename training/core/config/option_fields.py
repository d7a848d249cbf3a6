"""A recipe section's fields: a default, a type, a range or choices, checked.

A section is a frozen dataclass whose fields are made with `option(...)`:

    @dataclasses.dataclass(frozen=True)
    class DyckOptions(TaskOptions):
        k: int = option(2, low=1, high=1024)
        train_max_length: int | None = option(None)

The annotation is the type (`int | None`: an int, or null for "not set"; a
float takes an int too; a bool is never a number), `low`/`high` the range
(each end excluded with `low_open`/`high_open`), `choices` the strings it
may be, and `check` a function for a value of more than one type (`"auto"`
or a bool). `check_fields` checks an instance against its fields and
`section_from_table` makes one from a table, each error a one-line
`RecipeError` naming the key.
"""

import dataclasses
import math
import types
import typing


class RecipeError(ValueError):
    """A recipe or override the user gave is wrong; the message is one line."""


@dataclasses.dataclass(frozen=True)
class Range:
    """The values a number may take: `low` and `high` (None: no bound),
    each excluded when `low_open` / `high_open`."""

    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False

    def holds(self, value):
        if self.low is not None and (
            value <= self.low if self.low_open else value < self.low
        ):
            return False
        return self.high is None or (
            value < self.high if self.high_open else value <= self.high
        )

    def describe(self):
        bounds = []
        if self.low is not None:
            bounds.append(f"{'>' if self.low_open else '>='} {self.low}")
        if self.high is not None:
            bounds.append(f"{'<' if self.high_open else '<='} {self.high}")
        return " and ".join(bounds)


def option(
    default,
    *,
    low=None,
    high=None,
    low_open=False,
    high_open=False,
    choices=None,
    check=None,
    required=False,
):
    """A field of a recipe section (see the module's docstring).

    `required`: the default is None and a recipe must set the key
    (`model.cell`). A dict default (`model.options`) is copied for each
    instance.
    """
    bounds = (low, high, low_open, high_open)
    metadata = {
        "range": Range(*bounds) if (low, high) != (None, None) else None,
        "choices": tuple(choices) if choices is not None else None,
        "check": check,
        "required": required,
    }
    if isinstance(default, dict):
        return dataclasses.field(
            default_factory=lambda: dict(default), metadata=metadata
        )
    return dataclasses.field(default=default, metadata=metadata)


def default_of(field):
    """A field's default value (a new dict for `model.options`)."""
    if field.default_factory is not dataclasses.MISSING:
        return field.default_factory()
    return field.default


def field_types(cls):
    """`{field name: (type, optional)}` of a section class, from its annotations."""
    found = {}
    for name, hint in typing.get_type_hints(cls).items():
        if typing.get_origin(hint) is typing.ClassVar:
            continue
        args = typing.get_args(hint)
        union = isinstance(hint, types.UnionType) or typing.get_origin(hint) is (
            typing.Union
        )
        if union and len(args) == 2 and type(None) in args:
            found[name] = (next(a for a in args if a is not type(None)), True)
        elif union:
            found[name] = (None, False)  # several types: the field's `check`
        else:
            found[name] = (hint, False)
    return found


def check_type(name, value, expected, optional):
    """A one-line `RecipeError` unless `value` is of type `expected` (or None)."""
    if value is None and optional:
        return
    number = expected is float and type(value) is int  # an int is a float here
    if type(value) is not expected and not number:
        raise RecipeError(
            f"Recipe key {name!r} must be of type {expected.__name__}"
            f"{' or null' if optional else ''}; received {value!r}."
        )
    if type(value) is float and not math.isfinite(value):
        raise RecipeError(f"{name} must be a finite number; received {value!r}.")


def check_fields(section, instance):
    """Every field of `instance` of its type, in its range, one of its choices.

    `section` names it in messages (`train` -> `train.epochs`).
    """
    types_ = field_types(type(instance))
    for field in dataclasses.fields(instance):
        name, value = f"{section}.{field.name}", getattr(instance, field.name)
        metadata = field.metadata
        if metadata.get("check") is not None:
            metadata["check"](value)
            continue
        expected, optional = types_[field.name]
        check_type(name, value, expected, optional or metadata.get("required"))
        range_ = metadata.get("range")
        if range_ is not None and value is not None and not range_.holds(value):
            raise RecipeError(
                f"{name} must be {range_.describe()}; received {value!r}."
            )
        choices = metadata.get("choices")
        if choices is not None and value not in choices:
            raise RecipeError(
                f"Unknown {name} {value!r}; expected one of: {', '.join(choices)}."
            )


def missing_required(instance):
    """The name of the first required field `instance` leaves unset, or None."""
    for field in dataclasses.fields(instance):
        if field.metadata.get("required") and getattr(instance, field.name) is None:
            return field.name
    return None


def field_names(cls):
    """The names of a section class's fields, in order."""
    return [field.name for field in dataclasses.fields(cls)]


def section_from_table(cls, table, section, where=""):
    """An instance of `cls` from `table`; a `RecipeError` for a key it lacks.

    The values are not checked yet (`check_fields`). `where` says for what
    the keys are valid (`for task.kind 'dyck'`).
    """
    names = field_names(cls)
    for key in table:
        if key not in names:
            valid = ", ".join(f"{section}.{name}" for name in names)
            raise RecipeError(
                f"Unknown recipe key {section + '.' + key!r}{where}; valid keys: "
                f"{valid}."
            )
    return cls(**table)


def section_table(instance, leave_out=()):
    """`{field: value}` of a section instance (dicts copied), in field order."""
    return {
        field.name: _copied(getattr(instance, field.name))
        for field in dataclasses.fields(instance)
        if field.name not in leave_out
    }


def _copied(value):
    return (
        {k: _copied(v) for k, v in value.items()} if isinstance(value, dict) else value
    )


def range_of(cls, name):
    """The `Range` of field `name` of a section class (None: unbounded)."""
    field = next(field for field in dataclasses.fields(cls) if field.name == name)
    return field.metadata.get("range")
