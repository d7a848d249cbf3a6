"""The files the project reads back, each checked against its schema before use.

Later commands read back what earlier ones wrote: a run's `recipe.json` and
`metrics.json`, a record's `record.json`, `timing.json` and `host.json`, a
preset's `card.json`, a search's settings, a reproduction table's TOML.
Each is checked here before anything uses it, so a damaged or hand-edited
file is one line naming the file, the field and what was expected, instead
of a traceback or a wrong number later:

    'results/t/r/seed-0/record.json': parameters must be an integer >= 0 or
    null; received 'lots'.

A schema is made of a few pieces: `Number`, `Text`, `Name`, `Flag`,
`ListOf`, `Table`, `Either`, `Measures` (a file's metrics) and `Recipe` (a
saved recipe, read and checked as every recipe that is resolved is).
`check(value, schema, path, error)` returns the value (a recipe as a
`training.core.config.recipe_loader.Recipe`) or raises `error` with that line.
The schemas of the files are at the end; a preset's card's is
`training.core.card_schema.CARD`. A piece of a schema raises `Mismatch`
where a value fails it, naming the field with `at`.
"""

import dataclasses
import math
import re

from training.core.config.recipe_loader import SECTIONS, EarlierForm
from training.core.recipe_files import SCALES


class FileError(ValueError):
    """A file read back does not match its schema; the message is one line."""


class Mismatch(Exception):
    """Where a value fails its piece, and what was expected there."""

    def __init__(self, where, expected, value=None, message=None):
        super().__init__(where)
        self.where, self.expected, self.value, self.message = (
            where,
            expected,
            value,
            message,
        )


def _shown(value):
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def at(where, key):
    """The field `key` of `where`: `a.b`, or `a['x.y']` for a key with a dot."""
    if isinstance(key, int):
        return f"{where}[{key}]"
    if not re.fullmatch(r"[A-Za-z0-9_-]+", key):
        return f"{where}[{key!r}]"
    return f"{where}.{key}" if where else key


def _bounds(low, high, low_open=False):
    parts = []
    if low is not None:
        parts.append(f"{'>' if low_open else '>='} {low}")
    if high is not None:
        parts.append(f"<= {high}")
    return " and ".join(parts)


# The largest magnitude of any number read back: far above every measure and
# count written, low enough that a table's sums of squares stay finite.
MAX_MAGNITUDE = 1e30


@dataclasses.dataclass(frozen=True)
class Number:
    """A finite number (never a bool), an integer if `integer`, in range."""

    low: float = None
    high: float = None
    integer: bool = False
    low_open: bool = False
    nullable: bool = False

    @property
    def expected(self):
        text = "an integer" if self.integer else "a finite number"
        bounds = _bounds(self.low, self.high, self.low_open)
        return f"{text}{' ' + bounds if bounds else ''}" + (
            " or null" if self.nullable else ""
        )

    def check(self, value, where):
        if value is None and self.nullable:
            return value
        number = not isinstance(value, bool) and (
            isinstance(value, int)
            or (not self.integer and isinstance(value, float) and math.isfinite(value))
        )
        if number and self.low is not None:
            number = value > self.low if self.low_open else value >= self.low
        if number and self.high is not None:
            number = value <= self.high
        if not number:
            raise Mismatch(where, self.expected, value)
        if abs(value) > MAX_MAGNITUDE:
            expected = self.expected.removesuffix(" or null")
            raise Mismatch(where, f"{expected} of magnitude <= 1e30", value)
        return value


@dataclasses.dataclass(frozen=True)
class Text:
    """A string, one of `choices` when given."""

    choices: tuple = ()
    nullable: bool = False

    @property
    def expected(self):
        text = (
            f"one of {', '.join(map(repr, self.choices))}"
            if self.choices
            else "a string"
        )
        return text + (" or null" if self.nullable else "")

    def check(self, value, where):
        if value is None and self.nullable:
            return value
        if not isinstance(value, str) or (self.choices and value not in self.choices):
            raise Mismatch(where, self.expected, value)
        return value


@dataclasses.dataclass(frozen=True)
class Name:
    """A name that is used as a folder's: no path separator, no `..`."""

    expected = (
        "a folder name (not empty, no '/' or '\\', no '..', not starting with '.')"
    )

    def check(self, value, where):
        if not isinstance(value, str) or not is_name(value):
            raise Mismatch(where, self.expected, value)
        return value


def is_name(text):
    """Whether `text` can name a folder inside another (`Name`)."""
    return bool(text) and not (
        "/" in text
        or "\\" in text
        or ".." in text
        or text.startswith(".")
        or "\0" in text
    )


@dataclasses.dataclass(frozen=True)
class Flag:
    """true or false."""

    expected = "true or false"

    def check(self, value, where):
        if not isinstance(value, bool):
            raise Mismatch(where, self.expected, value)
        return value


@dataclasses.dataclass(frozen=True)
class ListOf:
    """A list of `item`s (at least one if `nonempty`)."""

    item: object
    nonempty: bool = False

    @property
    def expected(self):
        return f"a {'non-empty ' if self.nonempty else ''}list"

    def check(self, value, where):
        if not isinstance(value, list) or (self.nonempty and not value):
            raise Mismatch(where, self.expected, value)
        return [self.item.check(item, at(where, i)) for i, item in enumerate(value)]


@dataclasses.dataclass(frozen=True)
class Table:
    """An object (a JSON object, a TOML table) of `fields`.

    `required` names the fields it must have; a key that is no field is
    refused, unless `others` (the piece every other key's value is) is given.
    """

    fields: dict = dataclasses.field(default_factory=dict)
    required: tuple = ()
    others: object = None
    nonempty: bool = False

    expected = "an object (a table of keys and values)"

    def check(self, value, where):
        if not isinstance(value, dict) or (self.nonempty and not value):
            raise Mismatch(where, self.expected, value)
        known = ", ".join(sorted(self.fields))
        for key in value:
            if key not in self.fields and self.others is None:
                raise Mismatch(
                    where,
                    None,
                    message=f"{where or 'the file'} has unknown key {key!r}; "
                    f"expected: {known}",
                )
        for key in self.required:
            if key not in value:
                raise Mismatch(
                    where,
                    None,
                    message=f"{where or 'the file'} has no {key!r}; expected "
                    f"{self.fields[key].expected}",
                )
        checked = {}
        for key, item in value.items():
            piece = self.fields.get(key, self.others)
            checked[key] = piece.check(item, at(where, key))
        return checked


class Either:
    """The first of `pieces` that the value matches."""

    def __init__(self, *pieces, expected=None):
        self.pieces = pieces
        self.expected = expected or " or ".join(p.expected for p in pieces)

    def check(self, value, where):
        for piece in self.pieces:
            try:
                return piece.check(value, where)
            except Mismatch:
                continue
        raise Mismatch(where, self.expected, value)


class Null:
    """null (JSON), None (Python)."""

    expected = "null"

    def check(self, value, where):
        if value is not None:
            raise Mismatch(where, self.expected, value)
        return value


PROPORTIONS = (
    "accuracy wcpa pooled_accuracy strict strict_accept strict_positives "
    "next_symbol_positives mean_ldpa"
).split()
MEASURE_RANGES = {  # by name; any other measure is within MAX_MAGNITUDE
    **dict.fromkeys(PROPORTIONS, (0, 1)),
    **dict.fromkeys(("cross_entropy", "oracle_cross_entropy", "bits_per_token"), (0,)),
    **dict.fromkeys(("perplexity", "oracle_perplexity", "word_perplexity"), (1,)),
}


class Measures:
    """Measured values: numbers in range (`MEASURE_RANGES`), null or tables."""

    expected = "a finite number, null or a table of them"

    def check(self, value, where, name=None):
        if isinstance(value, dict):
            return {
                key: self.check(item, at(where, key), key)
                for key, item in value.items()
            }
        return Number(*MEASURE_RANGES.get(name, ()), nullable=True).check(value, where)


@dataclasses.dataclass
class Recipe:
    """A resolved recipe as a run saved it, read by `load`.

    `load` (`training.tasks.recipes.from_saved`) turns the checked shape into a
    `training.core.config.recipe_loader.Recipe`, refusing what `resolve` refuses
    in one line (a `ValueError`); keys added since the run was trained
    take their defaults. A recipe of an earlier format (`EarlierForm`) is
    refused naming the file and `python -m training.migrate` (`check`).
    """

    load: object

    expected = "a recipe (the resolved recipe python -m training.train saves)"

    def check(self, value, where):
        shape = Table(
            {
                "name": Text(),
                "scale": Text(SCALES),
                "description": Text(),
                "source": Text(),
                **{section: Table(others=_ANY) for section in SECTIONS},
            },
            required=("name", "scale", "description", "source", *SECTIONS),
        )
        try:
            return self.load(shape.check(value, where))
        except EarlierForm:  # `check` names the file and the migration
            raise
        except ValueError as error:
            prefix = f"{where}: " if where else ""
            raise Mismatch(
                where, None, message=f"{prefix}{error}".rstrip(".")
            ) from None


class _Any:
    expected = "anything"

    def check(self, value, where):
        return value


_ANY = ANY = _Any()  # ANY: a value a schema leaves to its reader


def check(value, schema, path, error=FileError):
    """`value` (read from the file at `path`) if it matches `schema`.

    Returns:
        The value as the schema gives it back (a `Recipe` with its defaults).

    Raises:
        `error`: one line naming the file, the field and what was expected.
    """
    try:
        return schema.check(value, "")
    except EarlierForm as earlier:  # a recipe of an earlier format
        raise error(earlier.line(path)) from None
    except Mismatch as mismatch:
        if mismatch.message is not None:
            detail = mismatch.message
        else:
            field = mismatch.where or "the file's content"
            detail = (
                f"{field} must be {mismatch.expected}; received "
                f"{_shown(mismatch.value)}"
            )
        raise error(f"{str(path)!r}: {detail}.") from None


# The files' schemas.

# A run's metrics.json (a preset's too): the measures of each split, and how
# the run executed (`training.runs.runs.train_run`).
METRICS = Table(
    {
        "jit_compile": Table({"used": Flag(), "reason": Text()}, ("used", "reason")),
        "steps_per_execution": Table(
            {"used": Number(1, integer=True), "reason": Text()}, ("used", "reason")
        ),
        # The version null: unknown (`backends.describe`, a migrated record).
        "backend": Table(
            {"name": Text(), "version": Text(nullable=True)}, ("name", "version")
        ),
        "grouped_steps": Table({"used": Flag(), "reason": Text()}, ("used", "reason")),
    },
    others=Measures(),
)

SEED_FOLDER = re.compile(r"seed-(0|[1-9][0-9]*)")


class _RecordPath:
    expected = "a record's place TABLE/ROW/seed-N"

    def check(self, value, where):
        parts = value.split("/") if isinstance(value, str) else []
        if not (
            len(parts) == 3
            and all(map(is_name, parts))
            and SEED_FOLDER.fullmatch(parts[2])
        ):
            raise Mismatch(where, self.expected, value)
        return value


# A record's record.json, timing.json and host.json (`training.reproduction.records`).
RECORD = Table(
    {
        "parameters": Number(0, integer=True, nullable=True),
        "copied_from": _RecordPath(),
        # metrics added to the record later, and by what
        # (training.reproduction.backfill)
        "backfilled": Table(
            {"by": Text(), "keys": ListOf(Text(), nonempty=True)},
            required=("by", "keys"),
        ),
    },
    required=("parameters",),
)
TIMING = Table(
    {
        "seconds": Number(0),
        "attempts": Number(1, integer=True),
        "started": Number(0),
    },
    required=("seconds",),
)
HOST = Table(
    {
        "cpu": Text(nullable=True),
        "cpus": Number(1, integer=True, nullable=True),
        "cpu_features": ListOf(Text()),
        "gpus": ListOf(Text()),
    },
    others=Text(),  # platform, Python and package versions
)

# A search's settings (`tuning.search`): compared key by key when resumed.
SEARCH_SETTINGS = Table(others=_ANY)
