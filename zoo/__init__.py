"""A Keras 3 model zoo of input-dependent and stack-augmented recurrent cells."""

from zoo import cells
from zoo.cells import *  # noqa: F403
from zoo.models import (
    default_jit_compile,
    language_model,
    recurrent_layer,
    reset_states,
)
from zoo.registry import available_cells, get_cell, get_cell_class

__all__ = [
    "available_cells",
    "default_jit_compile",
    "get_cell",
    "get_cell_class",
    "language_model",
    "recurrent_layer",
    "reset_states",
    *cells.__all__,
]
