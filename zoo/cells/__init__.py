"""The zoo's recurrent cells; importing this package registers them all."""

from zoo.cells.multiplicative import (
    MultiplicativeLSTMCell,
    MultiplicativeRNNCell,
    TensorRNNCell,
)

__all__ = [
    "MultiplicativeLSTMCell",
    "MultiplicativeRNNCell",
    "TensorRNNCell",
]
