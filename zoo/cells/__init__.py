"""The zoo's recurrent cells; importing this package registers them all."""

from zoo.cells.delta import DeltaRNNCell
from zoo.cells.diffstk import (
    DiffStkLSTMCell,
    DiffStkMIRNNCell,
    DiffStkMLSTMCell,
    DiffStkMRNNCell,
    DiffStkRNNCell,
)
from zoo.cells.dyck_rnn import DyckRNNCell, set_designed_weights
from zoo.cells.minimal import MinGRU, MinGRUCell, MinLSTM, MinLSTMCell
from zoo.cells.multi_matrix import (
    MultiMatrixLSTMCell,
    MultiMatrixRNNCell,
    key_mixed_transition,
)
from zoo.cells.multiplicative import (
    MultiplicativeLSTMCell,
    MultiplicativeRNNCell,
    TensorRNNCell,
)
from zoo.cells.multiplicative_integration import MILSTMCell, MIRNNCell
from zoo.cells.mut import MUT1Cell, MUT2Cell, MUT3Cell
from zoo.cells.second_order import (
    SecondOrderLSTMCell,
    assignment_from_embedding,
    assignment_inputs,
    second_order_cells,
    set_temperature,
)
from zoo.cells.stack_cell import trace_stack
from zoo.cells.stack_rnn import StackRNNCell

__all__ = [
    "DeltaRNNCell",
    "DiffStkLSTMCell",
    "DiffStkMIRNNCell",
    "DiffStkMLSTMCell",
    "DiffStkMRNNCell",
    "DiffStkRNNCell",
    "DyckRNNCell",
    "MILSTMCell",
    "MIRNNCell",
    "MUT1Cell",
    "MUT2Cell",
    "MUT3Cell",
    "MinGRU",
    "MinGRUCell",
    "MinLSTM",
    "MinLSTMCell",
    "MultiMatrixLSTMCell",
    "MultiMatrixRNNCell",
    "MultiplicativeLSTMCell",
    "MultiplicativeRNNCell",
    "SecondOrderLSTMCell",
    "StackRNNCell",
    "TensorRNNCell",
    "assignment_from_embedding",
    "assignment_inputs",
    "key_mixed_transition",
    "second_order_cells",
    "set_designed_weights",
    "set_temperature",
    "trace_stack",
]
