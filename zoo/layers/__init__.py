"""Non-recurrent pieces of the zoo's models (readouts, memories, heads)."""

from zoo.layers.dyck_readout import DyckReadout
from zoo.layers.pooling import SequencePooling

__all__ = ["DyckReadout", "SequencePooling"]
