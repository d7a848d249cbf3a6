"""The zoo's recurrent cells; importing this package registers them all."""

from zoo.cells.delta import DeltaRNNCell
from zoo.cells.multiplicative import (
    MultiplicativeLSTMCell,
    MultiplicativeRNNCell,
    TensorRNNCell,
)
from zoo.cells.multiplicative_integration import MILSTMCell, MIRNNCell
from zoo.cells.mut import MUT1Cell, MUT2Cell, MUT3Cell

__all__ = [
    "DeltaRNNCell",
    "MILSTMCell",
    "MIRNNCell",
    "MUT1Cell",
    "MUT2Cell",
    "MUT3Cell",
    "MultiplicativeLSTMCell",
    "MultiplicativeRNNCell",
    "TensorRNNCell",
]
