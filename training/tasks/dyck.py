"""Next-token prediction on m-bounded Dyck-k, evaluated with WCPA and LDPA."""

import dataclasses
import functools
from typing import ClassVar

import keras

from training.core import backends
from training.core import metrics as metrics_lib
from training.core.callbacks import EpochMetrics
from training.core.compiled import compiled
from training.core.config.model_arguments import LanguageModelArguments
from training.core.config.option_fields import RecipeError, option
from training.core.config.task_options import TaskOptions
from training.data import dyck_oracle, dyck_strings
from training.data.tokenize import Vocabulary
from training.tasks.task import Task

# What `DyckTask.validation_callbacks` logs at every epoch's end, as
# `val_NAME` columns of the run's log.csv.
EPOCH_METRICS = ("wcpa", "mean_ldpa")


def bracket_metrics(probabilities, arrays, k):
    """WCPA, LDPA per distance and pooled accuracy of next-token probabilities."""
    accuracy = metrics_lib.bracket_prediction_accuracy(
        probabilities, arrays.close_targets, arrays.distances, k=k
    )
    return {
        "wcpa": accuracy.wcpa,
        "mean_ldpa": accuracy.mean_ldpa,
        "pooled_accuracy": accuracy.pooled,
        "ldpa": {str(d): a for d, a in accuracy.ldpa.items()},
        "ldpa_counts": {str(d): n for d, n in accuracy.counts.items()},
        "sequences": len(arrays.inputs),
    }


def oracle_metrics(oracle, arrays, cross_entropy):
    """The generator's floor on a split and a model's distance above it.

    `oracle_cross_entropy` (nats per token) and `oracle_perplexity`: the
    `DyckOracle`'s over exactly the tokens `cross_entropy` averages (every
    target `arrays.mask` counts, END included); `excess_over_oracle`:
    `cross_entropy` minus the oracle's, in nats per token (0 for a model
    that predicts as the generator draws; below 0 only by chance).
    """
    floor = oracle.cross_entropy(arrays)
    return {
        "oracle_cross_entropy": floor,
        "oracle_perplexity": metrics_lib.perplexity(floor),
        "excess_over_oracle": cross_entropy - floor,
    }


@dataclasses.dataclass(frozen=True)
class DyckOptions(TaskOptions):
    """Dyck-(k, m) strings in Hewitt et al.'s splits, modelled token by token.

    The training and validation strings have `train_min_length` to
    `train_max_length` brackets (END included; None: Hewitt's 8m(m-2)+60,
    END redrawn below the minimum); the test strings are longer
    (`dyck_strings.split_length_ranges`).
    """

    kind: ClassVar[str] = "dyck"
    model_arguments: ClassVar[type] = LanguageModelArguments

    k: int = option(2, low=1, high=1024)
    m: int = option(4, low=1, high=32)
    train_sequences: int = option(10_000, low=1, high=1_000_000)
    dev_sequences: int = option(4_000, low=1, high=1_000_000)
    test_sequences: int = option(10_000, low=1, high=1_000_000)
    train_min_length: int = option(1)
    train_max_length: int | None = option(None)

    def check(self, recipe):
        try:
            dyck_oracle.check_task_lengths(
                self.k, self.m, self.train_min_length, self.train_max_length
            )
        except ValueError as error:
            raise RecipeError(str(error)) from None

    @property
    def language(self):
        """`Dyck-(k, m)`, in words."""
        return f"Dyck-({self.k}, {self.m})"

    def summary(self):
        return f"language model on {self.language}"


class DyckTask(Task):
    """Next-token prediction on Dyck-(k, m), evaluated with WCPA and LDPA."""

    options = DyckOptions
    # Padding is never a target and START only begins a string: a model that
    # has not learnt so may still give them weight.
    never_generated = (dyck_strings.PAD_ID, dyck_strings.START_ID)

    def __init__(self, recipe, vocabulary=None):
        self.k, self.m = recipe.task.k, recipe.task.m
        super().__init__(recipe, vocabulary)
        self.start_id = dyck_strings.START_ID
        self.end_id = dyck_strings.END_ID

    def own_vocabulary(self):
        return Vocabulary(dyck_strings.token_names(self.k), unk_token=None)

    def _framed(self, frame):
        """`{"train", "valid", "test"}` -> `frame(strings, k)` of the splits.

        The splits are Hewitt et al.'s (`dyck_strings.dyck_splits`) at the recipe's
        sizes and training lengths, generated from `train.seed` here.
        """
        task = self.recipe.task
        strings = dyck_strings.dyck_splits(
            self.k,
            self.m,
            train=task.train_sequences,
            dev=task.dev_sequences,
            test=task.test_sequences,
            unit="sequences",
            train_min_length=task.train_min_length,
            train_max_length=task.train_max_length,
            seed=self.recipe.train.seed,
        )
        return {
            "train": frame(strings["train"], self.k),
            "valid": frame(strings["dev"], self.k),
            "test": frame(strings["test"], self.k),
        }

    @functools.cached_property
    def arrays(self):
        """`{"train", "valid", "test"}` -> `DyckArrays`, generated on first use."""
        return self._framed(dyck_strings.frame)

    def _columns(self, split):
        arrays = self.arrays[split]
        return arrays.inputs, arrays.targets, arrays.mask

    def oracle(self, split):
        """The generator's next-token distribution on `split` (`DyckOracle`).

        The floor of the split's perplexity: `dyck_oracle`'s exact
        conditional for the split's length range (`dyck_strings.split_length_ranges`
        at the recipe's `task.train_min_length` and `task.train_max_length`).
        """
        task = self.recipe.task
        oracles = dyck_oracle.split_oracles(
            self.k, self.m, task.train_min_length, task.train_max_length
        )
        return oracles["dev" if split == "valid" else split]

    def make_train_data(self):
        return self._shuffled(self._columns("train"))

    def validation_data(self):
        return self._batched(self._columns("valid"))

    def validation_callbacks(self):
        """Logs the validation split's WCPA and mean LDPA at every epoch's end.

        As `val_wcpa` and `val_mean_ldpa` (`EPOCH_METRICS`), measured as
        `evaluate` measures them (`metrics.bracket_prediction_counts`, in
        `backends.widest_float()`) on the model as it is at the epoch's end: a
        second-order LSTM at its training temperature, as `val_loss` is.
        One compiled call over the whole split, as the validation step's.
        """
        return [EpochMetrics(self._validation_bracket_accuracy)]

    def next_token_probabilities(self, outputs):
        """The model's outputs as next-token probabilities (`keras.ops`)."""
        return keras.ops.softmax(outputs)

    def _validation_bracket_accuracy(self, model):
        arrays = self.arrays["valid"]
        num_distances = int(arrays.distances.max(initial=0)) + 1
        # As `evaluate` scores: float64 where the backend has it.
        dtype = backends.widest_float()

        def counts(inputs, close_targets, distances):
            outputs = model(inputs, training=False)
            probabilities = self.next_token_probabilities(outputs)
            return metrics_lib.bracket_prediction_counts(
                keras.ops.cast(probabilities, dtype),
                close_targets,
                distances,
                k=self.k,
                num_distances=num_distances,
            )

        score = compiled(model, counts, jit_compile=model.jit_compile is True)

        def measure():
            correct, total = score(
                arrays.inputs, arrays.close_targets, arrays.distances
            )
            accuracy = metrics_lib.summarize_bracket_counts(correct, total)
            return {name: getattr(accuracy, name) for name in EPOCH_METRICS}

        return measure

    def evaluate(self, model, split):
        arrays = self.arrays[split]
        logits = self._predict(model, arrays.inputs)
        probabilities = keras.ops.convert_to_numpy(keras.ops.softmax(logits))
        entropy = metrics_lib.cross_entropy(probabilities, arrays.targets, arrays.mask)
        return {
            **bracket_metrics(probabilities, arrays, self.k),
            "cross_entropy": entropy,
            "perplexity": metrics_lib.perplexity(entropy),
            "bits_per_token": metrics_lib.bits_per_character(entropy),
            **oracle_metrics(self.oracle(split), arrays, entropy),
        }

    def report(self, metrics, split):
        entropy = (
            f", cross-entropy {metrics['cross_entropy']:.4f} nats/token"
            if "cross_entropy" in metrics
            else ""
        )
        lines = [
            f"{split}: WCPA {metrics['wcpa']:.4f}, mean LDPA "
            f"{metrics['mean_ldpa']:.4f}, pooled {metrics['pooled_accuracy']:.4f}"
            f"{entropy} ({metrics['sequences']} sequences, "
            f"Dyck-({self.k}, {self.m}))",
        ]
        # The Dyck-RNN's metrics (`ClosingBracketTask`, which predicts closing
        # brackets only) have no cross-entropy, so no generator floor.
        if "oracle_perplexity" in metrics:
            lines.append(
                f"perplexity {metrics['perplexity']:.4f}, the generator's "
                f"{metrics['oracle_perplexity']:.4f} (its floor): excess "
                f"{metrics['excess_over_oracle']:.4f} nats/token"
            )
        lines.append(f"{'distance':>10}{'LDPA':>10}{'positions':>11}")
        for distance, value in metrics["ldpa"].items():
            count = metrics["ldpa_counts"][distance]
            lines.append(f"{distance:>10}{value:>10.4f}{count:>11}")
        return "\n".join(lines)
