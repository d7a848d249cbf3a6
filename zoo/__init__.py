"""A Keras 3 model zoo of input-dependent and stack-augmented recurrent cells."""

from zoo import cells
from zoo.cells import *  # noqa: F403
from zoo.registry import available_cells, get_cell, get_cell_class

__all__ = ["available_cells", "get_cell", "get_cell_class", *cells.__all__]
