"""The Dyck-RNN's task: the closing bracket's type where the next token closes."""

import dataclasses
from typing import ClassVar

import keras

import zoo
from training.core.config.model_arguments import DyckRNNArguments
from training.core.config.option_fields import RecipeError
from training.data import dyck_strings
from training.tasks.dyck import DyckOptions, DyckTask, bracket_metrics
from training.tasks.task import check_stateless


@dataclasses.dataclass(frozen=True)
class ClosingBracketOptions(DyckOptions):
    """A Dyck task's strings, read by the Dyck-RNN (`zoo.dyck_rnn_model`)."""

    kind: ClassVar[str] = "closing_bracket"
    model_arguments: ClassVar[type] = DyckRNNArguments

    def summary(self):
        return f"closing-bracket prediction on {self.language}"

    def model_defaults(self, model):
        """The Dyck-RNN's hidden size: `task.m` slots of `embedding_dim`."""
        return {"units": self.m * model.options.get("embedding_dim", 1)}

    def check(self, recipe):
        super().check(recipe)
        (expected,) = self.model_defaults(recipe.model).values()
        if recipe.model.units != expected:
            raise RecipeError(
                f"model.units is the Dyck-RNN's hidden size, task.m * embedding_dim "
                f"= {expected} here; received model.units={recipe.model.units}: set "
                "task.m (the stack depth) alone."
            )


class ClosingBracketTask(DyckTask):
    """The Dyck-RNN's task: which bracket closes, where the next token closes.

    The model (`zoo.dyck_rnn_model`) gives, after each token, probabilities
    over the k closing brackets; it is trained on the positions whose next
    token is a closing bracket and evaluated with WCPA/LDPA at every position
    with a non-empty stack, as the language models are.
    """

    options = ClosingBracketOptions

    def compile_arguments(self):
        return {"loss": keras.losses.SparseCategoricalCrossentropy()}

    def _build_model(self, stateful, batch_size):
        """The Dyck-RNN of `zoo.dyck_rnn_model`; it is stateless."""
        check_stateless("The Dyck-RNN", stateful)
        return zoo.dyck_rnn_model(
            self.k, self.m, **self.recipe.model.builder_arguments()
        )

    def _columns(self, split):
        arrays = self.arrays[split]
        return arrays.inputs, arrays.close_labels, arrays.close_weights

    def next_token_probabilities(self, outputs):
        """The k closing-bracket probabilities in the Dyck token layout.

        `dyck_strings.closing_as_next_token` in `keras.ops`: zero but for the
        closing brackets.
        """
        first_close = dyck_strings.close_id(0, self.k)
        after = dyck_strings.vocabulary_size(self.k) - first_close - self.k
        return keras.ops.pad(outputs, [[0, 0], [0, 0], [first_close, after]])

    def evaluate(self, model, split):
        arrays = self.arrays[split]
        closing = self._predict(model, arrays.inputs)
        probabilities = dyck_strings.closing_as_next_token(closing, self.k)
        return bracket_metrics(probabilities, arrays, self.k)
