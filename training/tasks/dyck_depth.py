"""Sequence tagging: the stack depth after every bracket of a Dyck-(k, m) string."""

import dataclasses
import functools
from typing import ClassVar

import numpy as np

import zoo
from training.core import metrics as metrics_lib
from training.core.config.model_arguments import TaggerArguments
from training.data import dyck_strings
from training.tasks.dyck import DyckOptions, DyckTask
from training.tasks.task import check_stateless

LENGTH_BIN = 20  # brackets per length bin of the evaluation


@dataclasses.dataclass(frozen=True)
class DyckDepthOptions(DyckOptions):
    """A Dyck task's strings, each bracket tagged by a tagger (`zoo.tagger`)."""

    kind: ClassVar[str] = "dyck_depth"
    model_arguments: ClassVar[type] = TaggerArguments

    def summary(self):
        return f"stack-depth tagging of {self.language}"


class DyckDepthTask(DyckTask):
    """Tags each bracket of a Dyck-(k, m) string with the stack depth after it.

    The lecture's sequence tagging (`softmax(W_o h_i)` per token, mean
    cross-entropy over the tokens) on an exactly known label: the number of
    brackets open after reading the token, 0 .. m, so `m + 1` classes. A
    left-to-right reader can count it; a right-to-left one too (the brackets
    still to be closed), so a bidirectional tagger has the answer twice. The
    strings are `DyckTask`'s (Hewitt et al.'s splits without START and END):
    validation strings as long as the training ones, test strings longer than
    any of them (length generalisation). Evaluated with token accuracy
    overall, per depth and per length bin, and the fraction of strings
    tagged right at every bracket.
    """

    options = DyckDepthOptions

    def __init__(self, recipe, vocabulary=None):
        super().__init__(recipe, vocabulary)
        # No START and no END: the tags are of the brackets alone.
        self.start_id = self.end_id = None
        self.num_classes = self.m + 1

    @functools.cached_property
    def arrays(self):
        """`{"train", "valid", "test"}` -> `DepthArrays`, generated on first use."""
        return self._framed(dyck_strings.frame_depths)

    def validation_callbacks(self):
        """None: WCPA is of next-token predictions, which a tagger makes none of."""
        return []

    def _build_model(self, stateful, batch_size):
        """The recipe's tagger (`zoo.tagger`); it is stateless."""
        check_stateless("A tagger", stateful)
        return zoo.tagger(**self._builder_arguments(), num_classes=self.num_classes)

    def _columns(self, split):
        arrays = self.arrays[split]
        return arrays.inputs, arrays.depths, arrays.mask

    def evaluate(self, model, split):
        """Token accuracy overall, per depth and per length; string accuracy.

        `accuracy`: the arg-max tag right, over every bracket;
        `string_accuracy`: every bracket of a string right; `per_depth`: token
        accuracy per true depth; `per_length`: both per bin of
        `LENGTH_BIN` brackets of string length; `beyond_training`: both over
        the strings longer than every training string (None when there are
        none); `longest_training` is that length.
        """
        arrays = self.arrays[split]
        logits = self._predict(model, arrays.inputs)
        real = arrays.mask > 0
        right = np.argmax(logits, axis=-1) == arrays.depths
        strings = np.all(right | ~real, axis=1)  # [strings]
        longest = int(self.arrays["train"].lengths.max())
        per_depth = metrics_lib.accuracy_by_group(right[real], arrays.depths[real])
        bins = (arrays.lengths - 1) // LENGTH_BIN
        string_bins = metrics_lib.accuracy_by_group(strings, bins)
        token_bins = metrics_lib.accuracy_by_group(
            right[real], np.broadcast_to(bins[:, None], right.shape)[real]
        )
        beyond = arrays.lengths > longest
        return {
            "accuracy": float(right[real].mean()),
            "string_accuracy": float(strings.mean()),
            "per_depth": {
                str(depth): {"accuracy": value, "tokens": count}
                for depth, (value, count) in per_depth.items()
            },
            "per_length": {
                f"{b * LENGTH_BIN + 1}-{(b + 1) * LENGTH_BIN}": {
                    "accuracy": token_bins[b][0],
                    "string_accuracy": value,
                    "strings": count,
                }
                for b, (value, count) in string_bins.items()
            },
            "beyond_training": (
                {
                    "accuracy": float(right[real & beyond[:, None]].mean()),
                    "string_accuracy": float(strings[beyond].mean()),
                    "strings": int(beyond.sum()),
                }
                if beyond.any()
                else None
            ),
            "longest_training": longest,
            "sequences": len(arrays.inputs),
            "tokens": int(real.sum()),
        }

    def report(self, metrics, split):
        beyond = metrics["beyond_training"]
        beyond = (
            ""
            if beyond is None
            else (
                f"; beyond the longest training string ({metrics['longest_training']}"
                f" brackets): {beyond['accuracy']:.4f} on {beyond['strings']} strings"
            )
        )
        lines = [
            f"{split}: token accuracy {metrics['accuracy']:.4f}, strings all right "
            f"{metrics['string_accuracy']:.4f} ({metrics['sequences']} sequences, "
            f"{metrics['tokens']} brackets, Dyck-({self.k}, {self.m}){beyond})",
            f"{'depth':>10}{'accuracy':>10}{'brackets':>10}",
        ]
        for depth, value in metrics["per_depth"].items():
            lines.append(f"{depth:>10}{value['accuracy']:>10.4f}{value['tokens']:>10}")
        lines.append(f"{'length':>10}{'accuracy':>10}{'strings':>10}{'all right':>11}")
        for name, value in metrics["per_length"].items():
            lines.append(
                f"{name:>10}{value['accuracy']:>10.4f}{value['strings']:>10}"
                f"{value['string_accuracy']:>11.4f}"
            )
        return "\n".join(lines)
