"""Keras Tuner hypermodels over the zoo's cells and the search command."""

from tuning.hypermodels import (
    CELL_OPTION_CHOICES,
    HYPERMODELS,
    MultiMatrixHyperModel,
    RecurrentHyperModel,
    SecondOrderHyperModel,
    StackHyperModel,
    cell_options,
)

__all__ = [
    "CELL_OPTION_CHOICES",
    "HYPERMODELS",
    "MultiMatrixHyperModel",
    "RecurrentHyperModel",
    "SecondOrderHyperModel",
    "StackHyperModel",
    "cell_options",
]
