"""Keras Tuner hypermodels over the zoo's cells and the search command."""

from tuning.hypermodels import CELL_OPTION_CHOICES, RecurrentHyperModel, cell_options

__all__ = ["CELL_OPTION_CHOICES", "RecurrentHyperModel", "cell_options"]
