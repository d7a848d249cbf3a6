"""Text classification: is a sentence of a minimal pair the acceptable one?"""

import dataclasses
import functools
from typing import ClassVar

import numpy as np

import zoo
from training.core import metrics as metrics_lib
from training.core.config.model_arguments import ClassifierArguments
from training.core.config.option_fields import option
from training.core.config.task_options import TaskOptions
from training.data import blimp_sentences
from training.tasks.task import Task, check_stateless


@dataclasses.dataclass(frozen=True)
class AcceptabilityOptions(TaskOptions):
    """BLiMP's minimal-pair suites, read from `data_dir` (or the default's).

    `pairs_per_suite` keeps the first N pairs of each suite (None: all);
    `split_seed` draws the held-out suites.
    """

    kind: ClassVar[str] = "acceptability"
    model_arguments: ClassVar[type] = ClassifierArguments

    data_dir: str | None = option(None)
    pairs_per_suite: int | None = option(None, low=1)
    split_seed: int = option(0, low=0, high=2**32 - 1)

    def summary(self):
        return "acceptability classification of BLiMP's sentences"


class AcceptabilityTask(Task):
    """Classifies BLiMP's sentences as acceptable (1) or not (0).

    The lecture's text classification (`softmax(W_o h_n)`, or a pooled state,
    `model.pooling`) on `training.data.blimp_sentences`'s data: every
    `sentence_good` of a suite labelled 1, every `sentence_bad` 0, with whole
    suites held out for validation and test, so the test is on paradigms
    never trained on. `task.pairs_per_suite` keeps the first pairs of each
    suite; `task.split_seed` draws the held-out suites. Evaluated with
    sentence accuracy and pair accuracy (the good sentence scored more
    acceptable than its bad twin), overall, per phenomenon and per suite.
    """

    options = AcceptabilityOptions
    num_classes = 2
    conventions = blimp_sentences.CONVENTIONS

    def __init__(self, recipe, vocabulary=None):
        super().__init__(recipe, vocabulary)
        self.start_id = None

    def own_vocabulary(self):
        """Built from the training suites' sentences only (reads the suites)."""
        return blimp_sentences.build_vocabulary(
            blimp_sentences.sentences_of(self.pairs("train"))
        )

    @functools.cached_property
    def suites(self):
        """`{suite: [MinimalPair, ...]}`, read on first use."""
        task = self.recipe.task
        return blimp_sentences.load_suites(task.data_dir, task.pairs_per_suite)

    @functools.cached_property
    def suite_splits(self):
        """`{"train", "valid", "test"}` -> the names of that split's suites."""
        return blimp_sentences.split_suites(
            self.suites, seed=self.recipe.task.split_seed
        )

    def pairs(self, split):
        """The `MinimalPair`s of `split`'s suites, suite by suite."""
        return [pair for name in self.suite_splits[split] for pair in self.suites[name]]

    @functools.cached_property
    def arrays(self):
        """Split name -> `AcceptabilityArrays` in the task's vocabulary."""
        return {
            split: blimp_sentences.frame(self.pairs(split), self.vocabulary)
            for split in blimp_sentences.SPLITS
        }

    def _build_model(self, stateful, batch_size):
        """The recipe's classifier (`zoo.classifier`); it is stateless."""
        check_stateless("A classifier", stateful)
        return zoo.classifier(**self._builder_arguments(), num_classes=self.num_classes)

    def _columns(self, split):
        arrays = self.arrays[split]
        return arrays.inputs, arrays.labels

    def make_train_data(self):
        return self._shuffled(self._columns("train"))

    def validation_data(self):
        return self._batched(self._columns("valid"))

    def evaluate(self, model, split):
        """Sentence and pair accuracy, overall, per phenomenon and per suite.

        `accuracy`: the arg-max class right; `pair_accuracy`: the good
        sentence of a pair given a higher probability of being acceptable
        than the bad one; `per_phenomenon` (BLiMP's `linguistics_term`) and
        `per_suite`: both, with the number of sentences.
        """
        arrays = self.arrays[split]
        logits = np.asarray(self._predict(model, arrays.inputs), "float64")
        # log P(acceptable) - log P(unacceptable): a monotone score of P(1).
        score = logits[:, blimp_sentences.ACCEPTABLE] - logits[:, 0]
        right = np.argmax(logits, axis=-1) == arrays.labels
        good = arrays.labels == blimp_sentences.ACCEPTABLE
        pair_right = np.repeat(score[good] > score[~good], 2)  # one per sentence

        def grouped(groups):
            sentences = metrics_lib.accuracy_by_group(right, groups)
            pairs = metrics_lib.accuracy_by_group(pair_right, groups)
            return {
                name: {
                    "accuracy": value,
                    "pair_accuracy": pairs[name][0],
                    "sentences": count,
                }
                for name, (value, count) in sentences.items()
            }

        return {
            "accuracy": float(right.mean()),
            "pair_accuracy": float(pair_right.mean()),
            "per_phenomenon": grouped(arrays.categories),
            "per_suite": grouped(arrays.suites),
            "sentences": len(arrays.labels),
            "pairs": int(good.sum()),
            "suites": len(set(arrays.suites.tolist())),
            "out_of_vocabulary": arrays.num_oov,
        }

    def report(self, metrics, split):
        lines = [
            f"{split}: accuracy {metrics['accuracy']:.4f}, pair accuracy "
            f"{metrics['pair_accuracy']:.4f} ({metrics['sentences']} sentences of "
            f"{metrics['suites']} held-out suites, {metrics['out_of_vocabulary']} "
            "words out of vocabulary)"
        ]
        for title, key in (("phenomenon", "per_phenomenon"), ("suite", "per_suite")):
            width = max(len(title), *(len(name) for name in metrics[key]))
            lines.append(
                f"{title:>{width}}{'accuracy':>10}{'pairs':>10}{'sentences':>11}"
            )
            for name, value in metrics[key].items():
                lines.append(
                    f"{name:>{width}}{value['accuracy']:>10.4f}"
                    f"{value['pair_accuracy']:>10.4f}{value['sentences']:>11}"
                )
        return "\n".join(lines)
