"""Recognition of Dyck-n or palindromes (Mali et al. 2020) with the hybrid loss."""

import dataclasses
import functools
from typing import ClassVar

import numpy as np

import zoo
from training.core import metrics as metrics_lib
from training.core.callbacks import EpochMetrics
from training.core.compiled import compiled
from training.core.config.model_arguments import RecognizerArguments
from training.core.config.option_fields import RecipeError, option
from training.core.config.task_options import TaskOptions
from training.data import dyck_strings, languages, one_edit, recognition_sets
from training.data.batching import curriculum_limits, epoch_batches
from training.data.tokenize import Vocabulary
from training.tasks.task import Task, check_stateless

# `task.step_labels`: the `accept` head's target at each step, the string's
# label or the prefix's membership.
STEP_LABELS = ("string", "prefix")
# Which recognition strings train the next-symbol head (see RecognitionTask).
NEXT_SYMBOL_LOSSES = ("all", "positives")
# `task.monitor`: the validation loss that keeps the best checkpoint and
# drives the learning-rate schedule and early stopping (see RecognitionTask).
MONITORS = ("val_loss", "val_accept_loss")


@dataclasses.dataclass(frozen=True)
class RecognitionOptions(TaskOptions):
    """Mali et al.'s recognition sets of `language` (Dyck-n or a palindrome).

    `split_scale` scales the paper's split sizes; `hard_negatives` says how
    the hard negatives are made; `negatives = "one_edit"` replaces the
    training and validation negatives by negatives one edit from their
    positives (`one_edit.one_edit_training`; the test splits stay);
    `step_labels` and `next_symbol_loss` are the targets and `monitor` the
    validation loss a run is judged by (see `RecognitionTask`). Trains with
    a curriculum too (`train.curriculum`: short strings first).
    """

    kind: ClassVar[str] = "recognition"
    model_arguments: ClassVar[type] = RecognizerArguments
    train_options: ClassVar[frozenset] = frozenset({"curriculum"})

    language: str = option("D2")
    split_scale: float = option(1.0, low=0, high=100, low_open=True)
    step_labels: str = option("string", choices=STEP_LABELS)
    hard_negatives: str = option("swap", choices=recognition_sets.HARD_NEGATIVES)
    next_symbol_loss: str = option("all", choices=NEXT_SYMBOL_LOSSES)
    negatives: str = option("paper", choices=one_edit.NEGATIVES)
    monitor: str = option("val_loss", choices=MONITORS)

    def check(self, recipe):
        try:
            languages.vocabulary_size(self.language)
        except ValueError as error:
            raise RecipeError(str(error)) from None

    def summary(self):
        return f"recognition of {self.language}"


class RecognitionTask(Task):
    """Recognition of Dyck-n or palindromes with Mali et al.'s hybrid loss.

    `task.step_labels` sets the `accept` head's per-step target (the string's
    label, or the prefix's membership); `task.next_symbol_loss` which strings
    train the `next_symbol` head: `"all"`, or `"positives"` (a negative's
    continuation is not a sample of the language; with it in the loss no
    stack cell learned to use its stack, see docs/stack-training.md).
    `task.monitor` is the validation loss that keeps the best checkpoint and
    drives the learning-rate schedule and early stopping: the hybrid loss
    (`"val_loss"`, the default), or the `accept` head's alone
    (`"val_accept_loss"`), the head the recognition metrics read; the
    next-symbol term keeps an entropy no model removes, so its noise can
    hide the accept head's gains from the sum.

    A hyperparameter search maximizes strict accuracy on the validation
    split's positive strings (`search_objective`), logged at every epoch's
    end by `search_callbacks`: the reading of the paper's accuracy under
    which a model without a working stack scores near 0 (REPRODUCTION.md,
    "The metric"), comparable between trials whose losses differ.
    """

    options = RecognitionOptions
    search_objective = ("val_strict_positives", "max")
    # "train" for the tables' train columns; "test_mixed": their captions' test;
    # "hard", "hard_long": negatives one edit from a positive (`one_edit`)
    splits = (
        "train",
        "valid",
        "test",
        "test_mixed",
        "long_120",
        "long_160",
        *one_edit.HARD_SPLITS,
    )

    def __init__(self, recipe, vocabulary=None):
        self.language = recipe.task.language
        super().__init__(recipe, vocabulary)
        self.start_id = dyck_strings.START_ID

    @property
    def monitor(self):
        return self.recipe.task.monitor

    def own_vocabulary(self):
        return Vocabulary(languages.token_names(self.language), unk_token=None)

    @functools.cached_property
    def arrays(self):
        """Split name -> `RecognitionArrays`, generated on first use."""
        task, seed = self.recipe.task, self.recipe.train.seed
        splits = recognition_sets.mali_splits(
            self.language,
            seed=seed,
            scale=task.split_scale,
            hard_negatives=task.hard_negatives,
        )
        splits.update(
            one_edit.hard_splits(self.language, seed=seed, scale=task.split_scale)
        )
        if task.negatives == "one_edit":
            splits = one_edit.one_edit_training(splits, self.language, seed)
        return {
            name: recognition_sets.frame(split, self.language)
            for name, split in splits.items()
        }

    def compile_arguments(self):
        return zoo.hybrid_recognition_loss()

    def _build_model(self, stateful, batch_size):
        """The recipe's recognizer (`zoo.recognizer`); it is stateless."""
        check_stateless("A recognizer", stateful)
        return zoo.recognizer(**self._builder_arguments())

    def _columns(self, split):
        arrays = self.arrays[split]
        if self.recipe.task.step_labels == "prefix":
            accept = arrays.prefix_labels  # is the prefix read so far a string?
        else:  # Mali et al.'s loss: the string's label at every step
            accept = np.broadcast_to(arrays.labels[:, None], arrays.mask.shape)
        next_mask = arrays.mask
        if self.recipe.task.next_symbol_loss == "positives":
            # A negative string is no sample of the language: its next
            # symbols are noise for a model of the language's strings.
            next_mask = arrays.mask * arrays.labels[:, None].astype(np.float32)
        return (
            arrays.inputs,
            arrays.targets,
            accept[..., None].astype("float32"),
            arrays.mask,
            next_mask,
        )

    @staticmethod
    def _as_dicts(inputs, next_symbol, accept, mask, next_mask):
        targets = {"next_symbol": next_symbol, "accept": accept}
        return inputs, targets, {"next_symbol": next_mask, "accept": mask}

    def _curriculum(self):
        """`epoch_shuffled`'s `lengths` and `limits` with `train.curriculum`, or {}."""
        if not self.recipe.train.curriculum:
            return {}
        lengths = self.arrays["train"].lengths
        limits = curriculum_limits(lengths, self.recipe.train.epochs)
        return {"lengths": lengths, "limits": limits}

    def make_train_data(self):
        columns = self._columns("train")
        dataset, callbacks = self._shuffled(columns, **self._curriculum())
        return dataset.map(self._as_dicts), callbacks

    def epoch_steps(self):
        """Each epoch's batches with `train.curriculum` (`batching.epoch_batches`)."""
        order = self._curriculum()
        if not order:
            return None
        return epoch_batches(**order, batch_size=self.recipe.train.batch_size)

    def validation_data(self):
        return self._batched(self._columns("valid")).map(self._as_dicts)

    def search_callbacks(self):
        """Logs strict accuracy on the validation split at every epoch's end.

        As `val_strict`, `val_strict_positives` and
        `val_next_symbol_positives`, measured as `evaluate` measures them,
        on the model as it is at the epoch's end: one compiled call over the
        whole split.
        """
        return [EpochMetrics(self._validation_strict)]

    def _validation_strict(self, model):
        arrays = self.arrays["valid"]
        predict = compiled(
            model,
            lambda inputs: model(inputs, training=False),
            jit_compile=model.jit_compile is True,
        )

        def measure():
            outputs = predict(arrays.inputs)
            readings = metrics_lib.strict_readings(
                outputs["accept"][..., 0], outputs["next_symbol"], arrays
            )
            measured = {"strict": readings["strict"].overall}
            for name in ("strict_positives", "next_symbol_positives"):
                if readings[name] is not None:
                    measured[name] = readings[name]
            return measured

        return measure

    def evaluate(self, model, split):
        """Final-step and strict (all-steps) accuracy, overall and per length bin.

        `accuracy`: the `accept` output at the last step
        (`metrics.recognition_accuracy`); `strict_accept`: `accept` right at
        every step for the prefix's membership; `strict`: that and, on
        positive strings, a legal arg-max `next_symbol` at every step
        (`metrics.strict_recognition_accuracy`); `strict_positives`: `strict`
        over the positive strings alone (`positives` of them);
        `next_symbol_positives`: its next-symbol half alone
        (`metrics.strict_readings`). Mali et al.'s tables correspond to
        `strict` (see docs/training.md). The splits "hard" and "hard_long"
        have negatives one edit from a positive (`training.data.one_edit`).
        """
        arrays = self.arrays[split]
        outputs = self._predict(model, arrays.inputs)
        return metrics_lib.recognition_metrics(
            arrays, outputs["accept"][..., 0], outputs["next_symbol"]
        )

    def report(self, metrics, split):
        positives = metrics.get("strict_positives")
        on_positives = (
            ""
            if positives is None
            else (
                f", strict on positives {positives:.4f} "
                f"({metrics['positives']} strings)"
            )
        )
        if metrics.get("next_symbol_positives") is not None:
            on_positives += (
                f", next symbol legal on positives "
                f"{metrics['next_symbol_positives']:.4f}"
            )
        lines = [
            f"{split}: strict {metrics['strict']:.4f}, strict accept-only "
            f"{metrics['strict_accept']:.4f}, final-step accuracy "
            f"{metrics['accuracy']:.4f} ({metrics['strings']} strings, "
            f"{self.language}){on_positives}",
            f"{'length':>10}{'strict':>10}{'accept':>10}{'final':>10}{'strings':>9}",
        ]
        for bin_name, value in metrics["per_length"].items():
            lines.append(
                f"{bin_name:>10}{value['strict']:>10.4f}"
                f"{value['strict_accept']:>10.4f}{value['accuracy']:>10.4f}"
                f"{value['strings']:>9}"
            )
        return "\n".join(lines)
