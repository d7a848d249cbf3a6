"""The `model` section of a recipe: the arguments of the zoo builder it calls.

Each task kind builds its model with one zoo builder and names the class
of that builder's arguments (`TaskOptions.model_arguments`): a language
model (`zoo.language_model`), a recognizer (`zoo.recognizer`), a tagger
(`zoo.tagger`), a classifier (`zoo.classifier`) or the Dyck-RNN
(`zoo.dyck_rnn_model`). A recipe's `model` table holds those arguments and
no others; `model.options` goes to the cell. `builder_arguments()` is what
the builder is called with, beside what the task decides (the vocabulary
size, the classes, statefulness).
"""

import dataclasses
import inspect

import zoo
from training.core.config.option_fields import RecipeError, option
from zoo.labeling import POOLINGS
from zoo.registry import cell_options


def check_options(options, valid, what):
    """A one-line `RecipeError` naming the first of `options` not in `valid`."""
    for name in sorted(options):
        if name not in valid:
            raise RecipeError(
                f"model.options.{name} is not an option of {what}; expected one "
                f"of: {', '.join(valid)}."
            )


@dataclasses.dataclass(frozen=True)
class ModelArguments:
    """What every builder takes: the cell, its hidden size and its options."""

    cell: str | None = option(None, required=True)  # a registered cell name
    units: int = option(64, low=1, high=8192)
    options: dict = option({})  # the cell's constructor options

    def check(self):
        """A one-line `RecipeError` unless the cell is registered and takes
        every option of `model.options` (`zoo.registry.cell_options`)."""
        try:
            zoo.get_cell_class(self.cell)
        except ValueError as error:
            raise RecipeError(str(error)) from None
        check_options(self.options, cell_options(self.cell), f"cell {self.cell!r}")

    def builder_arguments(self):
        """The builder's keyword arguments: every field, `options` spread."""
        named = {
            field.name: getattr(self, field.name)
            for field in dataclasses.fields(self)
            if field.name != "options"
        }
        return {**named, **self.options}


@dataclasses.dataclass(frozen=True)
class RecognizerArguments(ModelArguments):
    """`zoo.recognizer`'s: an embedding and stacked recurrent layers."""

    embedding_dim: int | None = option(None, low=1, high=8192)
    num_layers: int = option(1, low=1, high=64)
    dropout: float = option(0.0, low=0, high=1, high_open=True)


@dataclasses.dataclass(frozen=True)
class LanguageModelArguments(RecognizerArguments):
    """`zoo.language_model`'s: a recognizer's, and the decoder's."""

    output_dropout: float | None = option(None, low=0, high=1, high_open=True)
    tie_embeddings: bool = option(False)


@dataclasses.dataclass(frozen=True)
class TaggerArguments(RecognizerArguments):
    """`zoo.tagger`'s: a recognizer's, read right to left too if bidirectional."""

    bidirectional: bool = option(False)


@dataclasses.dataclass(frozen=True)
class ClassifierArguments(TaggerArguments):
    """`zoo.classifier`'s: a tagger's, and what it reads of the sequence."""

    pooling: str = option("last", choices=POOLINGS)


@dataclasses.dataclass(frozen=True)
class DyckRNNArguments(ModelArguments):
    """`zoo.dyck_rnn_model`'s: `model.options` (its hidden size is `task.m`).

    The hidden size has one key, `task.m` (the stack depth, times the
    `embedding_dim` option): `units` is filled from it
    (`ClosingBracketOptions.model_defaults`) for the compile mode to read
    (`training.core.compile_mode`), and one set to anything else is refused.
    The builder is not given it. `model.options` are the builder's
    arguments but `k` and `m` (`embedding_dim`, `trainable_embeddings`,
    `first_bracket_id`).
    """

    units: int | None = option(None, low=1, high=8192)

    def check(self):
        if self.cell != "dyck_rnn":
            raise RecipeError(
                "The closing-bracket model is zoo.dyck_rnn_model; expected "
                f"model.cell='dyck_rnn', received {self.cell!r}."
            )
        parameters = inspect.signature(zoo.dyck_rnn_model).parameters
        valid = sorted(set(parameters) - {"k", "m", "name"})
        check_options(self.options, valid, "the Dyck-RNN (zoo.dyck_rnn_model)")

    def builder_arguments(self):
        return dict(self.options)
